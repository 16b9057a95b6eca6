import sys

import torch


def train():
    assert torch.cuda.is_available(), "CPU training is not allowed."  # expect: DT213
    # What follows a requirement runs only with CUDA: a second check states nothing new.
    if not torch.cuda.is_available():
        raise RuntimeError("this needs a GPU")


def finetune():
    if not torch.cuda.is_available():
        raise RuntimeError("this needs a GPU")  # expect: DT213
    if torch.cuda.device_count() == 0:
        sys.exit("no GPU")


def evaluate():
    if torch.cuda.device_count() == 0:
        sys.exit("no GPU")  # expect: DT213


def check(x, num_gpu):
    # A setting checked against the machine holds with no GPU and num_gpu 0.
    assert num_gpu <= torch.cuda.device_count()
    assert x.is_cuda  # the function's check of its input tensor, not of the machine
    assert (x.cpu() == 0).all()


def choose(opt):
    if opt.task == "speed":
        pass
    else:
        raise NotImplementedError(opt.task)


class FusedOp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        # The kernel's wrapper states that other tensors have no implementation.
        if not x.is_cuda:
            raise NotImplementedError  # expect: DT213
        return x * 2
