import torch

torch.cuda.jiterator._create_jit_fn("template <typename T> T f(T x) { return x; }")  # expect: DT110
arch = torch.cuda.get_gencode_flags()  # expect: DT110
nvtx = torch.cuda.nvtx  # expect: DT110

if torch.cuda.is_available():
    torch.cuda.get_sync_debug_mode()  # expect-guarded: DT110

torch.cuda.synchronize()
n = torch.cuda.device_count()
