import torch

free, total = torch.cuda.mem_get_info()  # expect: DT107
torch.cuda.set_per_process_memory_fraction(0.5)  # expect: DT107

if torch.cuda.is_available():
    free, total = torch.cuda.mem_get_info(0)  # expect-guarded: DT107

# mem_get_info tells how much memory is free
budget = 8 * 1024**3
