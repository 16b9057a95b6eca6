#!/usr/bin/env python3
"""Loads the installed torch's native_functions.yaml with dualtrack and with PyYAML's C loader.

dualtrack is timed end to end as a process (`coverage --yaml FILE --op relu`: start-up, read,
parse, classify, look up, print), so its number is an upper bound on the load itself. PyYAML is
timed in-process (`yaml.load(f, Loader=yaml.CSafeLoader)`, no interpreter start-up), which favours
it. Bar: dualtrack median <= 50 ms.

    python3 bench/coverage/bench_yaml.py [--bin build/dualtrack] [--runs 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
from pathlib import Path

import torchgen
import yaml

REPO = Path(__file__).resolve().parents[2]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=str(REPO / "build" / "dualtrack"))
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    path = Path(torchgen.__file__).parent / "packaged/ATen/native/native_functions.yaml"
    n_lines = path.read_text().count("\n")

    dt_times, py_times = [], []
    for _ in range(args.runs):  # Interleaved so that noise on the shared machine hits both.
        t0 = time.perf_counter()
        subprocess.run(
            [args.bin, "coverage", "--yaml", str(path), "--op", "relu"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        dt_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        with path.open() as f:
            yaml.load(f, Loader=yaml.CSafeLoader)
        py_times.append(time.perf_counter() - t0)

    dt_ms, py_ms = statistics.median(dt_times) * 1e3, statistics.median(py_times) * 1e3
    print(f"file: {path} ({n_lines} lines)")
    print(
        f"dualtrack coverage --yaml (process, parse + classify): median {dt_ms:.1f} ms "
        f"(min {min(dt_times) * 1e3:.1f}, max {max(dt_times) * 1e3:.1f}) over {args.runs} runs"
    )
    print(
        f"PyYAML CSafeLoader (in-process load only):             median {py_ms:.1f} ms "
        f"(min {min(py_times) * 1e3:.1f}, max {max(py_times) * 1e3:.1f})"
    )
    print(
        f"ratio: dualtrack is {py_ms / dt_ms:.1f}x faster; bar <= 50 ms: "
        f"{'PASS' if dt_ms <= 50 else 'FAIL'}"
    )
    return 0 if dt_ms <= 50 else 1


if __name__ == "__main__":
    raise SystemExit(main())
