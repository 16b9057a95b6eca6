"""Wall-clock timing of training steps.

CUDA kernels run asynchronously, so a timer that does not wait for the GPU only
measures how fast Python can queue work. StepTimer calls torch.cuda.synchronize()
before reading the clock whenever the model lives on a cuda device.
"""

from __future__ import annotations

import time
from typing import Callable, Optional

import torch


def cuda_sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


class StepTimer:
    """Collects per-step durations; the first `warmup` steps are not counted."""

    def __init__(self, device: torch.device, warmup: int = 1,
                 sync: Optional[Callable[[torch.device], None]] = None):
        self.device = device
        self.warmup = warmup
        self.sync = sync or cuda_sync
        self.durations: list[float] = []
        self._seen = 0
        self._start = 0.0

    def start(self) -> None:
        self.sync(self.device)
        self._start = time.perf_counter()

    def stop(self) -> float:
        self.sync(self.device)
        elapsed = time.perf_counter() - self._start
        self._seen += 1
        if self._seen > self.warmup:
            self.durations.append(elapsed)
        return elapsed

    def mean_ms(self) -> float:
        if not self.durations:
            return float("nan")
        return 1000.0 * sum(self.durations) / len(self.durations)
