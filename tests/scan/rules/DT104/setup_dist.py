import os

import torch

local_rank = int(os.environ.get("LOCAL_RANK", 0))
torch.cuda.set_device(local_rank)  # expect: DT104
print("GPU:", torch.cuda.get_device_name(0))  # expect: DT104
major, minor = torch.cuda.get_device_capability()  # expect: DT104
current = torch.cuda.current_device()  # expect: DT104

if torch.cuda.is_available():
    props = torch.cuda.get_device_properties(0)  # expect-guarded: DT104

n = torch.cuda.device_count()
print("set_device is not called on a Mac")
