import torch
from torch.profiler import ProfilerActivity, profile

with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:  # expect: DT114
    torch.randn(64, 64) @ torch.randn(64, 64)

acts = [torch.profiler.ProfilerActivity.CUDA]  # expect: DT114
cpu_only = [ProfilerActivity.CPU]
print(prof.key_averages().table(sort_by="cuda_time_total"))
with torch.autograd.profiler.profile(use_cuda=True) as legacy:  # expect: DT114
    pass
