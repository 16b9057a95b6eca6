#!/usr/bin/env python3
"""Train TinyHybrid on the fixed 64-image slice in data/.

On the cluster everything runs with device="cuda": the model is moved with
.cuda(), --amp uses torch.cuda.amp and --distributed talks NCCL. Typical uses:

    python train.py --amp                      # one GPU
    scripts/launch.sh                          # two GPUs, torchrun + DDP
    python train.py --portable                 # CUDA, else MPS, else CPU
    python train.py --device cpu --steps 2     # smoke test
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import sys
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import portable
from model import TinyHybrid
from utils.metrics import RunningMean, accuracy
from utils.timing import StepTimer

log = logging.getLogger("tinyhybrid")
HERE = Path(__file__).resolve().parent
# Weight of the auxiliary multi-class hinge loss that sharpens the decision margins.
MARGIN_WEIGHT = 0.1


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="Train TinyHybrid on the fixed data slice.")
    parser.add_argument("--device", default="cuda",
                        help="torch device of the default code path (default: cuda)")
    parser.add_argument("--steps", type=int, default=100, help="optimizer steps (default: 100)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--weight-decay", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, default=HERE / "data",
                        help="folder with train_images.npy and train_labels.npy")
    parser.add_argument("--amp", action="store_true", help="mixed precision")
    parser.add_argument("--distributed", action="store_true",
                        help="DistributedDataParallel; start with torchrun")
    parser.add_argument("--portable", action="store_true",
                        help="device-agnostic variant: best available device, torch.autocast, "
                             "no custom kernels, gloo")
    return parser.parse_args(argv)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def load_slice(data_dir: Path) -> TensorDataset:
    images = np.load(data_dir / "train_images.npy")
    labels = np.load(data_dir / "train_labels.npy")
    if images.shape[0] != labels.shape[0]:
        raise ValueError(f"{data_dir}: {images.shape[0]} images but {labels.shape[0]} labels")
    return TensorDataset(torch.from_numpy(images), torch.from_numpy(labels))


def make_loader(dataset, batch_size: int, seed: int, device: torch.device,
                distributed: bool) -> DataLoader:
    generator = torch.Generator().manual_seed(seed)
    sampler = DistributedSampler(dataset, seed=seed) if distributed else None
    return DataLoader(dataset, batch_size=batch_size, shuffle=sampler is None, sampler=sampler,
                      generator=generator, drop_last=True, pin_memory=device.type == "cuda")


def build(device="cuda", portable_model: bool = False) -> torch.nn.Module:
    """Create the model on `device`.

    The GPU path uses .cuda() rather than .to(device) because under torchrun that
    places each replica on the GPU picked by torch.cuda.set_device().
    """
    model = TinyHybrid(num_classes=10, portable=portable_model)
    device = torch.device(device)
    if torch.cuda.is_available() and device.type == "cuda":
        model = model.cuda()
    else:
        model = model.to(device)
    return model


def setup_distributed(args) -> torch.device:
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if args.portable:
        portable.init_distributed()
        device = portable.pick_device(args.device)
        if device.type == "cuda":
            device = torch.device("cuda", local_rank)
            torch.cuda.set_device(device)
        return device
    dist.init_process_group(backend="nccl")
    torch.cuda.set_device(local_rank)
    return torch.device("cuda", local_rank)


def main(argv=None) -> None:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    torch.backends.cudnn.benchmark = True
    seed_everything(args.seed)

    if args.distributed:
        device = setup_distributed(args)
    elif args.portable:
        device = portable.pick_device(args.device)
    else:
        device = torch.device(args.device)
    rank = dist.get_rank() if args.distributed else 0

    dataset = load_slice(args.data)
    loader = make_loader(dataset, args.batch_size, args.seed, device, args.distributed)
    if len(loader) == 0:
        raise SystemExit(f"--batch-size {args.batch_size} is larger than the {len(dataset)} samples")

    model = build(device, portable_model=args.portable)
    if args.distributed:
        model = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)

    if args.portable:
        autocast = lambda: portable.autocast(device, args.amp)  # noqa: E731
        scaler = portable.grad_scaler(device, args.amp)
        acc_dtype = torch.float32
        margin_loss = portable.multi_margin_loss
        timer = StepTimer(device, sync=portable.synchronize)
    else:
        use_amp = args.amp and device.type == "cuda"
        if args.amp and not use_amp:
            log.warning("--amp ignored on %s (see docs on cuda setup)", device)
        autocast = torch.cuda.amp.autocast if use_amp else nullcontext
        scaler = torch.cuda.amp.GradScaler() if use_amp else None
        acc_dtype = torch.float64
        margin_loss = F.multi_margin_loss
        timer = StepTimer(device)

    model.train()
    train_acc = RunningMean()
    step = 0
    epoch = 0
    while step < args.steps:
        if args.distributed:
            loader.sampler.set_epoch(epoch)
        for images, labels in loader:
            step += 1
            timer.start()
            images = images.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            with autocast():
                logits = model(images)
                loss = F.cross_entropy(logits, labels) + MARGIN_WEIGHT * margin_loss(logits, labels)
            optimizer.zero_grad(set_to_none=True)
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            else:
                loss.backward()
                optimizer.step()
            train_acc.update(accuracy(logits.detach(), labels, dtype=acc_dtype), labels.shape[0])
            timer.stop()
            if rank == 0:
                print(f"step {step} loss {loss.item()!r}", flush=True)
            if step >= args.steps:
                break
        epoch += 1

    if rank == 0:
        log.info("train acc %.4f, %.1f ms/step on %s", train_acc.mean, timer.mean_ms(), device)
        print(f"done steps={step}", flush=True)
    if args.distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
