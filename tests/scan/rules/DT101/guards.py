import sys

import torch


def to_gpu(x):
    if not torch.cuda.is_available():
        return x
    return x.cuda()  # expect-guarded: DT101


def main(model):
    if not torch.cuda.is_available():
        sys.exit("this script needs a GPU")
    model.cuda()  # expect-guarded: DT101 (after the exit, only with CUDA; the exit is DT213)
    use_cuda = torch.cuda.is_available()
    batch = torch.zeros(4)
    batch = batch.cuda() if use_cuda else batch  # expect-guarded: DT101
    return model(batch)
