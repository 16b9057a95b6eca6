"""Benchmark of `dualtrack compare` (docs/benchmarks.md, section compare).

Measured in the same run on the same files under /tmp:
  ceiling   a plain multi-threaded read of the same bytes in the same process
            (build/dualtrack_compare_bench, bench/compare/compare_bench.cc)
  stats     every statistic of `dualtrack compare` (same binary, same threads)
  allclose  numpy.allclose on the same two arrays (memory-mapped .npy, like dualtrack)
  np-stats  a NumPy script computing the same statistics in float64 (chunked, 8 Mi elements)
Bars: stats >= 80 % of the ceiling's throughput; >= 5x faster than numpy.allclose; anonymous
(heap) memory independent of tensor size (peak RssAnon for two sizes).

Usage: python3 bench/compare/bench.py [--build build] [--rounds 5] [--mib 512]
"""

import argparse
import json
import os
import statistics
import struct
import subprocess
import time
from pathlib import Path

import numpy as np

TMP = Path("/tmp/dualtrack-bench-compare")


def make_f32(path_a, path_b, n):
    if path_a.exists() and path_b.exists():
        return
    rng = np.random.default_rng(0)
    a = np.lib.format.open_memmap(path_a, mode="w+", dtype=np.float32, shape=(n,))
    b = np.lib.format.open_memmap(path_b, mode="w+", dtype=np.float32, shape=(n,))
    step = 1 << 24
    for i in range(0, n, step):
        x = rng.standard_normal(min(step, n - i), dtype=np.float32)
        a[i : i + x.size] = x
        b[i : i + x.size] = x * (1 + rng.standard_normal(x.size, dtype=np.float32) * 1e-6)
    a.flush()
    b.flush()
    del a, b


def make_bf16(path_a, path_b, n):
    """safetensors files holding one bf16 tensor 'x' each, written chunk by chunk."""
    if path_a.exists() and path_b.exists():
        return
    rng = np.random.default_rng(1)
    header = json.dumps({"x": {"dtype": "BF16", "shape": [n], "data_offsets": [0, 2 * n]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(path_a, "wb") as fa, open(path_b, "wb") as fb:
        for f in (fa, fb):
            f.write(struct.pack("<Q", len(header)) + header)
        step = 1 << 24
        for i in range(0, n, step):
            x = rng.standard_normal(min(step, n - i), dtype=np.float32)
            y = x * (1 + rng.standard_normal(x.size, dtype=np.float32) * 1e-3)
            fa.write((x.view(np.uint32) >> 16).astype(np.uint16).tobytes())
            fb.write((y.view(np.uint32) >> 16).astype(np.uint16).tobytes())


def dualtrack_bench(binary, a, b, rounds):
    out = subprocess.run(
        [binary, a, b, "--threads", "2", "--rounds", str(rounds)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out)


def numpy_stats(a, b, atol=1e-5, rtol=1.3e-6):
    """The statistics of dualtrack compare, in float64, chunk by chunk."""
    n = a.size
    acc = dict(
        max_abs=0.0,
        idx=0,
        se=0.0,
        sq=0.0,
        maxrel=0.0,
        srel=0.0,
        nrel=0,
        out=0,
        eq=0,
        sa=0.0,
        sb=0.0,
        saa=0.0,
        sbb=0.0,
        sab=0.0,
        mina=np.inf,
        maxa=-np.inf,
        mina_b=np.inf,
        maxb=-np.inf,
        nan_a=0,
        nan_b=0,
        inf_a=0,
        inf_b=0,
        maxex=-np.inf,
        ulp=0,
    )
    hist = np.zeros(80, dtype=np.int64)
    step = 1 << 23
    for i in range(0, n, step):
        x32, y32 = np.asarray(a[i : i + step]), np.asarray(b[i : i + step])
        x, y = x32.astype(np.float64), y32.astype(np.float64)
        acc["nan_a"] += int(np.isnan(x).sum())
        acc["nan_b"] += int(np.isnan(y).sum())
        acc["inf_a"] += int(np.isinf(x).sum())
        acc["inf_b"] += int(np.isinf(y).sum())
        d = x - y
        e = np.abs(d)
        ab = np.abs(y)
        k = int(np.argmax(e))
        if e[k] > acc["max_abs"]:
            acc["max_abs"], acc["idx"] = float(e[k]), i + k
        acc["se"] += float(e.sum())
        acc["sq"] += float(np.dot(d, d))
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(ab > 0, e / ab, 0.0)
        acc["maxrel"] = max(acc["maxrel"], float(rel.max()))
        acc["srel"] += float(rel.sum())
        acc["nrel"] += int((ab > 0).sum())
        ex = e - rtol * ab
        acc["maxex"] = max(acc["maxex"], float(ex.max()))
        acc["out"] += int((ex > atol).sum())
        acc["eq"] += int((x == y).sum())
        acc["sa"] += float(x.sum())
        acc["sb"] += float(y.sum())
        acc["saa"] += float(np.dot(x, x))
        acc["sbb"] += float(np.dot(y, y))
        acc["sab"] += float(np.dot(x, y))
        acc["mina"] = min(acc["mina"], float(x.min()))
        acc["maxa"] = max(acc["maxa"], float(x.max()))
        acc["mina_b"] = min(acc["mina_b"], float(y.min()))
        acc["maxb"] = max(acc["maxb"], float(y.max()))
        nz = e[e > 0]
        dec = np.clip(np.floor(np.log10(nz)).astype(np.int64) + 40, 0, 79)
        hist += np.bincount(dec, minlength=80)
        ia, ib = x32.view(np.int32).astype(np.int64), y32.view(np.int32).astype(np.int64)
        oa = np.where(ia < 0, -(ia & 0x7FFFFFFF), ia)
        ob = np.where(ib < 0, -(ib & 0x7FFFFFFF), ib)
        acc["ulp"] = max(acc["ulp"], int(np.abs(oa - ob).max()))
    ma, mb = acc["sa"] / n, acc["sb"] / n
    cov = acc["sab"] / n - ma * mb
    va, vb = acc["saa"] / n - ma * ma, acc["sbb"] / n - mb * mb
    acc["pearson"] = cov / np.sqrt(va * vb)
    acc["cosine"] = acc["sab"] / np.sqrt(acc["saa"] * acc["sbb"])
    return acc


def median_time(fn, rounds):
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--mib", type=int, default=512)
    args = ap.parse_args()
    binary = str(Path(args.build).resolve() / "dualtrack_compare_bench")
    TMP.mkdir(exist_ok=True)
    n = args.mib * (1 << 20) // 4
    big = (TMP / f"f32_{args.mib}_a.npy", TMP / f"f32_{args.mib}_b.npy")
    small = (TMP / "f32_64_a.npy", TMP / "f32_64_b.npy")
    bf = (TMP / f"bf16_{args.mib}_a.safetensors", TMP / f"bf16_{args.mib}_b.safetensors")
    make_f32(*big, n)
    make_f32(*small, 64 * (1 << 20) // 4)
    make_bf16(*bf, args.mib * (1 << 20) // 2)

    results = {}
    for label, (pa, pb) in {"float32": big, "bfloat16": bf, "float32_64MiB": small}.items():
        rows = dualtrack_bench(binary, pa, pb, args.rounds)
        ceiling = statistics.median(r["ceiling_s"] for r in rows)
        stats = statistics.median(r["stats_s"] for r in rows)
        gib = rows[0]["bytes"] / (1 << 30)
        ceiling_cpu = statistics.median(r["ceiling_cpu_s"] for r in rows)
        stats_cpu = statistics.median(r["stats_cpu_s"] for r in rows)
        results[label] = dict(
            bytes=rows[0]["bytes"],
            ceiling_s=ceiling,
            stats_s=stats,
            ceiling_cpu_s=ceiling_cpu,
            stats_cpu_s=stats_cpu,
            cpu_ratio=ceiling_cpu / stats_cpu,
            ceiling_gib_s=gib / ceiling,
            stats_gib_s=gib / stats,
            ratio=ceiling / stats,
            peak_rss_anon_mib=max(r["peak_rss_anon_bytes"] for r in rows) / 2**20,
        )
    a = np.load(big[0], mmap_mode="r")
    b = np.load(big[1], mmap_mode="r")
    results["numpy_allclose_s"] = median_time(
        lambda: np.allclose(a, b, rtol=1.3e-6, atol=1e-5), args.rounds
    )
    results["numpy_stats_s"] = median_time(lambda: numpy_stats(a, b), max(1, args.rounds // 2))
    f = results["float32"]
    results["speedup_vs_allclose"] = results["numpy_allclose_s"] / f["stats_s"]
    results["speedup_vs_numpy_stats"] = results["numpy_stats_s"] / f["stats_s"]
    results["cores"] = os.cpu_count()
    results["loadavg"] = os.getloadavg()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
