#!/usr/bin/env python3
"""Calibrates the cost prediction on what this machine measures (docs/benchmarks.md, "Cost
prediction"): each model's training step is traced on the CPU by `dualtrack run` (which also
measures the CPU's peak matmul rate, copy bandwidth and per-operator cost), and the roofline
prediction from those peaks is set against the measured step.

    python3 bench/cost/calibrate.py --dualtrack build/dualtrack [--runs 3] \
        [--write data/devices/calibration.json]

Two ratios per model, medians over --runs runs:
  operators: measured operator time (Σ time_s of the costed step) / predicted operator time
             (roofline + per-operator cost): the error of the cost model itself;
  step:      measured step without the tracer's work / predicted step (operators + the framework
             time measured outside them).
The operators ratio is the error band the reports apply to every prediction.
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = [
    (
        "example (conv stem + transformer)",
        [os.path.join(ROOT, "examples/cuda-research/train.py"), "--device", "cpu"],
    ),
    ("ResNet-18, batch 16, 32x32", [os.path.join(HERE, "models/resnet.py")]),
    ("GPT 4x256, batch 8, context 128", [os.path.join(HERE, "models/gpt.py")]),
    ("UNet 32-64-128, batch 4, 64x64", [os.path.join(HERE, "models/unet.py")]),
]
STEPS = 4


def one_run(dualtrack: str, script: list[str], out: str) -> dict:
    cmd = [
        dualtrack,
        "run",
        "--track",
        "cpu",
        "--steps",
        str(STEPS),
        "-q",
        "--force",
        "-o",
        out,
        "--",
        sys.executable,
        *script,
        "--steps",
        str(STEPS),
    ]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    show = subprocess.run(
        [dualtrack, "show", out, "--format", "json"], check=True, capture_output=True, text=True
    )
    cost = json.loads(show.stdout)["cost"]
    mine = next(p for p in cost["predictions"] if p["measured_profile"])
    return {
        "step": cost["step"],
        "flops": cost["flops"],
        "bytes": cost["bytes"],
        "calls": cost["calls"],
        "measured_ops_s": cost["op_time_s"],
        "predicted_ops_s": mine["operators_s"],
        "measured_step_s": cost["untraced_s"],
        "predicted_step_s": mine["step_s"],
        "bound": mine["bound"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--dualtrack", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--write", help="calibration.json to write (data/devices/calibration.json)")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, script in MODELS:
            runs = [one_run(a.dualtrack, script, os.path.join(tmp, "b")) for _ in range(a.runs)]
            med = {
                k: statistics.median(r[k] for r in runs)
                for k in (
                    "measured_ops_s",
                    "predicted_ops_s",
                    "measured_step_s",
                    "predicted_step_s",
                    "flops",
                    "bytes",
                    "calls",
                )
            }
            ops_ratios = [r["measured_ops_s"] / r["predicted_ops_s"] for r in runs]
            step_ratios = [r["measured_step_s"] / r["predicted_step_s"] for r in runs]
            rows.append(
                {
                    "name": name,
                    **med,
                    "bound": runs[-1]["bound"],
                    "ops_ratio": statistics.median(ops_ratios),
                    "ops_ratio_range": [min(ops_ratios), max(ops_ratios)],
                    "step_ratio": statistics.median(step_ratios),
                }
            )
    print(
        "| model | GFLOP | MB moved | calls | predicted ops | measured ops | "
        "measured/predicted (ops) | predicted step | measured step | "
        "measured/predicted (step) | bound |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        print(
            f"| {r['name']} | {r['flops'] / 1e9:.2f} | {r['bytes'] / 1e6:.1f} | {r['calls']:.0f} | "
            f"{r['predicted_ops_s'] * 1e3:.1f} ms | {r['measured_ops_s'] * 1e3:.1f} ms | "
            f"{r['ops_ratio']:.2f} ({r['ops_ratio_range'][0]:.2f}–{r['ops_ratio_range'][1]:.2f}) | "
            f"{r['predicted_step_s'] * 1e3:.1f} ms | {r['measured_step_s'] * 1e3:.1f} ms | "
            f"{r['step_ratio']:.2f} | {r['bound']} |"
        )
    if a.write:
        doc = {
            "schema": "dualtrack.calibration/1",
            "date": datetime.date.today().isoformat(),
            "where": f"{platform.machine()} CPU, {os.cpu_count()} cores, torch {_torch_version()}",
            "method": "measured operator time / roofline prediction from the CPU's own measured "
            f"peaks, traced step {STEPS}, median of {a.runs} runs (bench/cost/calibrate.py)",
            "models": [
                {
                    "name": r["name"],
                    "predicted_s": r["predicted_ops_s"],
                    "measured_s": r["measured_ops_s"],
                    "step_predicted_s": r["predicted_step_s"],
                    "step_measured_s": r["measured_step_s"],
                }
                for r in rows
            ],
        }
        with open(a.write, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")


def _torch_version() -> str:
    try:
        import torch

        return torch.__version__
    except ImportError:
        return "?"


if __name__ == "__main__":
    main()
