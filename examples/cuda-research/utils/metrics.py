"""Training metrics."""

from __future__ import annotations

import torch


def accuracy(logits: torch.Tensor, targets: torch.Tensor,
             dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Top-1 accuracy of a batch, on the device of `logits`.

    Accumulated in double precision by default so that the running mean over a
    long run matches the evaluation script digit for digit.
    """
    correct = (logits.argmax(dim=1) == targets).to(dtype)
    return correct.mean()


class RunningMean:
    """Mean of per-batch values, weighted by batch size, kept as a Python float."""

    def __init__(self):
        self.total = 0.0
        self.count = 0

    def update(self, value: torch.Tensor, n: int) -> None:
        self.total += float(value) * n
        self.count += n

    @property
    def mean(self) -> float:
        return self.total / max(self.count, 1)
