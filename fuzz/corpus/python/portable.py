"""Device-agnostic pieces used by `train.py --portable`.

The default code path of train.py was written for the cluster and assumes CUDA
everywhere. The helpers here do the same jobs without naming a backend, so that
the training step also runs on an Apple Silicon laptop (MPS) or on the CPU.
"""

from __future__ import annotations

import contextlib

import torch
import torch.distributed as dist


def pick_device(preferred: str | None = None) -> torch.device:
    """Best available backend: CUDA, then MPS, then the CPU.

    An explicit `--device cpu` is honoured; any other preference only says that
    an accelerator is wanted.
    """
    if preferred == "cpu":
        return torch.device("cpu")
    name = "cuda" if torch.cuda.is_available() else ("mps" if torch.backends.mps.is_available() else "cpu")
    return torch.device(name)


def autocast(device: torch.device, enabled: bool):
    """Mixed precision through the generic torch.autocast API."""
    if not enabled:
        return contextlib.nullcontext()
    dtype = torch.float16 if device.type in ("cuda", "mps") else torch.bfloat16
    return torch.autocast(device_type=device.type, dtype=dtype)


def grad_scaler(device: torch.device, enabled: bool) -> torch.amp.GradScaler:
    # Loss scaling only matters for float16 on CUDA; elsewhere the scaler is a no-op.
    return torch.amp.GradScaler(device.type, enabled=enabled and device.type == "cuda")


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()
    elif device.type == "mps":
        torch.mps.synchronize()


def init_distributed() -> None:
    """gloo works on every platform PyTorch supports, nccl only on NVIDIA GPUs."""
    dist.init_process_group(backend="gloo")


def multi_margin_loss(logits: torch.Tensor, target: torch.Tensor, margin: float = 1.0) -> torch.Tensor:
    """The multi-class hinge loss of F.multi_margin_loss, built from elementwise operators.

    F.multi_margin_loss has no kernel on every backend; this form runs wherever gather and clamp do.
    """
    correct = logits.gather(1, target.unsqueeze(1))
    hinge = (margin - correct + logits).clamp(min=0)
    hinge = hinge.scatter(1, target.unsqueeze(1), 0.0)
    return hinge.sum(dim=1).div(logits.shape[1]).mean()
