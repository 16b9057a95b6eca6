import time

import torch


def timed(fn, *args):
    torch.cuda.synchronize()  # expect: DT103
    start = time.perf_counter()
    out = fn(*args)
    torch.cuda.synchronize()  # expect: DT103
    return out, time.perf_counter() - start


def timed_portable(fn, *args):
    if torch.cuda.is_available():
        torch.cuda.synchronize()  # expect-guarded: DT103
    # torch.cuda.synchronize() is not needed on CPU
    torch.accelerator.synchronize()
    return fn(*args)
