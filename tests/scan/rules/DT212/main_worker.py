import torch
import torch.distributed as dist


def main_worker(args, model):
    if args.distributed:
        model = torch.nn.parallel.DistributedDataParallel(model.cuda())
    else:
        # AllGather (batch shuffle, queue update) only works distributed.
        raise NotImplementedError("Only DistributedDataParallel is supported.")  # expect: DT212
    return model


def gather(x):
    assert dist.is_initialized(), "launch with torchrun"  # expect: DT212
    return x


def consistent(rank, world_size):
    assert rank < world_size  # a consistency check, not a requirement
