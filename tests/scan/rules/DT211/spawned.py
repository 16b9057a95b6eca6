import torch.distributed as dist
import torch.multiprocessing as mp


def run(rank, world):
    # Every run is a process group: no single-process path.
    dist.init_process_group(backend="nccl", rank=rank, world_size=world)  # expect: DT211


def main():
    mp.spawn(run, nprocs=2, args=(2,))


def launched(args):
    if args.distributed:
        dist.init_process_group("nccl", init_method="env://")  # expect-guarded: DT205
