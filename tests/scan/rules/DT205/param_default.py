import torch.distributed as dist
import torch.multiprocessing as mp


def _worker(rank, fn, world_size, backend):
    dist.init_process_group(backend=backend, world_size=world_size, rank=rank)
    fn()


def launch(fn, num_gpus, num_machines=1, backend="nccl"):  # expect-guarded: DT205
    # The default is read only where the launch spawns workers: one process never uses it.
    world_size = num_machines * num_gpus
    if world_size > 1:
        mp.spawn(_worker, nprocs=num_gpus, args=(fn, world_size, backend))
    else:
        fn()


def setup(rank, backend="nccl"):  # expect: DT205
    dist.init_process_group(backend=backend, rank=rank)
