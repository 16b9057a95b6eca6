#!/usr/bin/env python3
"""Overhead of dualtrack's tracer: one CPU training step traced against untraced, in one process.

Workloads: a ResNet-18 (written here; torchvision is not needed) at batch 8 on 224x224 images,
and a small transformer block. Traced and untraced steps alternate (ABAB...) so that machine noise
hits both; the medians are compared. The traced step is a steady-state step (after the capture
window), the same state a long run spends its time in; the first, capturing step is reported on
its own.

    python3 bench/bundle/bench_trace.py [--reps 7] [--batch 8] [--image 224] [--threads N]
Bar (issue 5): traced / untraced <= 1.5 for the CNN step at batch 8.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
from dualtrack import _session  # noqa: E402


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, 7, 2, 3, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2, 1),
        )
        layers = []
        cin = 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class TransformerBlock(nn.Module):
    def __init__(self, dim=256, heads=8):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


def make_step(model, x, y):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step():
        out = model(x)
        loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def measure(name, step, reps, out_dir):
    step()  # warm-up: allocator, lazy init, AdamW state
    session = _session.Session({"bundle": out_dir, "steps": 1})
    uninstall = _session.install_tracer(session)
    first = timed(step)  # the capturing step: copies loss, outputs, grads and params
    uninstall()
    plain, traced = [], []
    for _ in range(reps):
        plain.append(timed(step))
        uninstall = _session.install_tracer(session)
        traced.append(timed(step))
        uninstall()
    p, t = statistics.median(plain), statistics.median(traced)
    rows = len(session.ops)
    print(
        f"{name:34s} untraced {p * 1e3:8.1f} ms  traced {t * 1e3:8.1f} ms  "
        f"ratio {t / p:5.3f}  capturing step {first * 1e3:8.1f} ms  ({rows} op rows)"
    )
    return t / p


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--image", type=int, default=224)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: PyTorch's default)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, reps {args.reps}")
    with tempfile.TemporaryDirectory(prefix="dualtrack-bench-") as tmp:
        cnn = ResNet18()
        x = torch.randn(args.batch, 3, args.image, args.image)
        y = torch.randint(0, 1000, (args.batch,))
        r_cnn = measure(
            f"ResNet-18 step, batch {args.batch}, {args.image}px",
            make_step(cnn, x, y),
            args.reps,
            tmp,
        )
        block = nn.Sequential(TransformerBlock(), nn.Linear(256, 1000))
        xt = torch.randn(args.batch, 128, 256)
        yt = torch.randint(0, 1000, (args.batch, 128))
        r_tf = measure(
            f"transformer block, batch {args.batch}x128", make_step(block, xt, yt), args.reps, tmp
        )
    ok = r_cnn <= 1.5
    print(
        f"bar traced/untraced <= 1.5 for the CNN step: {'PASS' if ok else 'FAIL'} "
        f"({r_cnn:.3f}); transformer {r_tf:.3f}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
