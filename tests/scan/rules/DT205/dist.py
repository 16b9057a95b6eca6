import os

import torch
import torch.distributed as dist

BACKEND = "nccl"  # expect: DT205
dist.init_process_group(backend=BACKEND)
if int(os.environ.get("WORLD_SIZE", 1)) > 1:
    dist.init_process_group("nccl", init_method="env://")  # expect-guarded: DT205
backend = "nccl" if torch.cuda.is_available() else "gloo"  # expect-guarded: DT205
dist.init_process_group(backend="gloo")
print("nccl is NVIDIA only")
