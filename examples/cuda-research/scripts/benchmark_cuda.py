#!/usr/bin/env python3
"""Compare CuPy and PyTorch matmul throughput on one GPU.

Written when we were deciding whether to move the preprocessing to CuPy; kept
for reference, nothing imports it.
"""

import argparse
import time

import cupy as cp
import torch


def bench_cupy(n: int, repeats: int) -> float:
    a = cp.random.rand(n, n, dtype=cp.float32)
    b = cp.random.rand(n, n, dtype=cp.float32)
    cp.matmul(a, b)  # warm-up, loads cuBLAS
    cp.cuda.Device().synchronize()
    start = cp.cuda.Event()
    end = cp.cuda.Event()
    start.record()
    for _ in range(repeats):
        cp.matmul(a, b)
    end.record()
    end.synchronize()
    return cp.cuda.get_elapsed_time(start, end) / repeats


def bench_torch(n: int, repeats: int) -> float:
    a = torch.rand(n, n).cuda()
    b = torch.rand(n, n).cuda()
    torch.matmul(a, b)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(repeats):
        torch.matmul(a, b)
    torch.cuda.synchronize()
    return 1000.0 * (time.perf_counter() - t0) / repeats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    flops = 2.0 * args.size ** 3
    for name, fn in (("cupy", bench_cupy), ("torch", bench_torch)):
        ms = fn(args.size, args.repeats)
        print(f"{name:6s} {ms:8.3f} ms  {flops / ms / 1e9:8.1f} TFLOP/s")


if __name__ == "__main__":
    main()
