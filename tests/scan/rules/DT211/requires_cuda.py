import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def main():
    # The run stops here without CUDA; past the stop, every run still makes a process group.
    assert torch.cuda.is_available(), "CPU training is not allowed."
    n_gpus = torch.cuda.device_count()
    mp.spawn(run, nprocs=n_gpus, args=(n_gpus,))


def run(rank, n_gpus):
    dist.init_process_group(backend="nccl", world_size=n_gpus, rank=rank)  # expect: DT211
    torch.cuda.set_device(rank)


def single():
    if not torch.cuda.is_available():
        raise SystemExit("needs a GPU")
    dist.init_process_group("nccl", world_size=1, rank=0)  # expect: DT211


if __name__ == "__main__":
    main()
