import torch.distributed as dist

dist.init_process_group(backend=dist.Backend.NCCL)  # expect: DT205
dist.init_process_group(backend=dist.Backend.GLOO)
