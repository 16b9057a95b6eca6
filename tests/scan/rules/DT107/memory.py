import torch

free, total = torch.cuda.mem_get_info()  # expect: DT107
torch.cuda.set_per_process_memory_fraction(0.5)  # expect: DT107

if torch.cuda.is_available():
    free, total = torch.cuda.mem_get_info(0)  # expect-guarded: DT107

# mem_get_info tells how much memory is free
budget = 8 * 1024**3

# These raise without CUDA too (AttributeError / KeyError in the CPU and macOS builds).
torch.cuda.reset_peak_memory_stats()  # expect: DT107
print(torch.cuda.memory_summary())  # expect: DT107

# The statistics reads return 0 without CUDA: they run, but say nothing of a Mac's memory
# (torch.mps.current_allocated_memory() does).
used = torch.cuda.max_memory_allocated() / 2**30  # expect: DT107
