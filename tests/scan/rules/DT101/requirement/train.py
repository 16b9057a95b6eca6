import torch

import utils


def train(args, model):
    utils.log_setup(args)
    torch.zeros(1).cuda()  # expect: DT101
    utils.init_distributed_mode(args)
    model = model.cuda()  # expect-guarded: DT101
    return model


def benchmark(model, num_gpu):
    assert num_gpu <= torch.cuda.device_count()  # a setting checked against the machine
    model.cuda()  # expect: DT101
    assert torch.cuda.is_available(), "Only cuda supported"
    model.cuda()  # expect-guarded: DT101
