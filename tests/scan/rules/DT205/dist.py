import torch
import torch.distributed as dist

dist.init_process_group(backend="nccl")  # expect: DT205
dist.init_process_group("nccl", init_method="env://")  # expect: DT205
backend = "nccl" if torch.cuda.is_available() else "gloo"  # expect-guarded: DT205
dist.init_process_group(backend="gloo")
print("nccl is NVIDIA only")
