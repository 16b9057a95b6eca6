"""The facts a cost prediction of the traced step needs, recorded while a step window is open:
operator signatures (cost.jsonl), the tracer's own time, the step's memory, and the device's
measured peak rates. No cost formula lives here: the C++ side turns these facts into FLOPs, bytes
and times.

A step window opens at the first outermost module forward of a step (steps <= --steps) and closes
in the optimizer step post-hook. Everything here is bookkeeping beside the user's call: a failure
is noted in tracer_errors (via `note_error`), never raised into the user's code.
"""

from __future__ import annotations

import os
import platform
import sys
import time
import weakref
from typing import TYPE_CHECKING, Any, Callable

from . import _where

if TYPE_CHECKING:
    from collections.abc import Iterable

    import torch

    from ._where import Location

# At most this many cost.jsonl rows per run; further signatures are not costed (noted once).
MAX_ROWS = 200_000

# (shape, dtype, stride): shape and stride as torch hands them (torch.Size, tuples), no tensor.
Sig = tuple[Any, Any, Any]
# A call's signature: (operator overload, device type, input sigs, output sigs, scalars).
Call = tuple[Any, Any, tuple[Sig, ...], tuple[Sig, ...], tuple[Any, ...]]
# A row's key: (step, signature).
Key = tuple[int, Call]

_perf = time.perf_counter


class CostTable:
    """One row per (step, operator overload, device, signature): [count, summed time, location].
    The key holds shapes, dtypes and scalars, never a tensor."""

    def __init__(self, note_error: Callable[[str], None], limit: int = MAX_ROWS) -> None:
        self.rows: dict[Key, list[Any]] = {}
        # The location of each signature, taken on its first call: the next step's row of the same
        # signature reuses it (a stack walk per row and step would be most of the table's cost).
        self.locations: dict[Call, Location | None] = {}
        self.limit = limit
        self.truncated = False
        self.changed = True  # cost.jsonl is written (empty) on the first flush
        self.note_error = note_error

    def add(self, key: Key, seconds: float, frame: Any) -> None:
        """Counts one call of `key`; the user-code location is taken (a stack walk from `frame`)
        only on a row's first call."""
        row = self.rows.get(key)
        if row is None:
            if len(self.rows) >= self.limit:
                if not self.truncated:
                    self.truncated = True
                    self.note_error(
                        f"cost table: more than {self.limit} distinct operator signatures; "
                        "the rest of the step is not costed"
                    )
                return
            call = key[1]
            if call in self.locations:
                loc = self.locations[call]
            else:
                loc = self.locations[call] = _where.frame_location(frame)
            row = [0, 0.0, loc]
            self.rows[key] = row
        row[0] += 1
        row[1] += seconds
        self.changed = True

    def json_rows(self) -> list[dict[str, Any]]:
        return [_json_row(key, row) for key, row in self.rows.items()]

    def device_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for key, row in self.rows.items():
            dev = key[1][1]
            if isinstance(dev, str):
                counts[dev] = counts.get(dev, 0) + row[0]
        return counts


def _json_row(key: Key, row: list[Any]) -> dict[str, Any]:
    step, (func, dev, ins, outs, scalars) = key
    schema = getattr(func, "_schema", None)
    loc: Location | None = row[2]
    return {
        "step": step,
        "op": schema.name if schema is not None else str(func),
        "overload": getattr(func, "_overloadname", "default"),
        "device": dev,
        "inputs": [_json_sig(s) for s in ins],
        "outputs": [_json_sig(s) for s in outs],
        "scalars": [_json_scalar(v) for v in scalars],
        "count": row[0],
        "time_s": round(row[1], 9),
        "location": loc,
    }


def _json_sig(sig: Sig) -> dict[str, Any]:
    shape, dtype, stride = sig
    return {
        "shape": None if shape is None else [int(d) for d in shape],
        "dtype": str(dtype).replace("torch.", ""),
        "stride": None if stride is None else [int(d) for d in stride],
    }


def _json_scalar(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return value  # NaN is already the string "NaN" (a NaN key would never match itself)


class StorageTracker:
    """Live bytes of the storages first produced by an operator output in the current window.

    A storage is new when it is not the storage of an input of the same call (views, in-place and
    out= operators return an input's storage). torch 2.x keeps one Python object per storage for
    the storage's whole life, so a weak reference to it says when the memory is really freed,
    also when views outlive their base. Each window has a generation: a storage tracked in an
    earlier window that is freed now does not decrement this window's count."""

    def __init__(self) -> None:
        self.gen = 0
        self.live = 0
        self.peak = 0
        self.tracked: dict[int, tuple[Any, int, int]] = {}

    def reset(self) -> None:
        self.gen += 1
        self.live = 0
        self.peak = 0

    def add(self, outs: list[torch.Tensor], ins: list[torch.Tensor]) -> None:
        tracked = self.tracked
        input_ids: set[int] | None = None
        for t in outs:
            if t.is_meta:
                continue
            s = t.untyped_storage()
            sid = id(s)
            if sid in tracked:
                continue
            if input_ids is None:
                input_ids = _storage_ids(ins)
            if sid in input_ids:
                continue
            n = s.nbytes()
            gen = self.gen

            def freed(_ref: Any, sid: int = sid, n: int = n, gen: int = gen) -> None:
                self.tracked.pop(sid, None)
                if gen == self.gen:
                    self.live -= n

            tracked[sid] = (weakref.ref(s, freed), n, gen)
            self.live += n
            if self.live > self.peak:
                self.peak = self.live

    def in_window(self, sid: int) -> bool:
        entry = self.tracked.get(sid)
        return entry is not None and entry[2] == self.gen


def _storage_ids(tensors: list[torch.Tensor]) -> set[int]:
    ids = set()
    for t in tensors:
        try:
            ids.add(id(t.untyped_storage()))
        except Exception:  # noqa: BLE001 - sparse, nested: no plain storage to share
            pass
    return ids


def _sig(t: torch.Tensor) -> Sig:
    """(shape, dtype, stride); stride None for meta and sparse tensors and where torch has none
    (sparse CSR, nested), shape None where it has none (nested)."""
    if not t.is_meta and not t.is_sparse:
        try:
            return (t.shape, t.dtype, t.stride())
        except Exception:  # noqa: BLE001 - sparse, nested: the slow way below
            pass
    try:
        shape: Any = t.shape
    except Exception:  # noqa: BLE001 - a nested tensor has no single shape
        shape = None
    return (shape, t.dtype, None)


class CostRecorder:
    """The cost facts of the steps <= --steps: the table, the tracer's own time and the memory of
    each window."""

    def __init__(self, torch_mod: Any, note_error: Callable[[str], None]) -> None:
        self.torch = torch_mod
        self.Tensor = torch_mod.Tensor
        self.sym_types = tuple(
            t for t in (getattr(torch_mod, n, None) for n in ("SymInt", "SymFloat", "SymBool")) if t
        )
        self.note_error = note_error
        self.table = CostTable(note_error)
        self.memory = StorageTracker()
        self.open = False
        self.step = 0
        self.tracer_s = 0.0
        self.device_peak: dict[str, Any] | None = None
        self.peak_done = False

    def open_window(self, step: int) -> None:
        try:
            self.step = step
            self.tracer_s = 0.0
            self.memory.reset()
            self.open = True
        except Exception as e:  # noqa: BLE001
            self.note_error(f"cost window: {type(e).__name__}: {e}")

    def on_call(
        self,
        func: Any,
        dev: str | None,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        out: Any,
        times: tuple[float, float, float],
    ) -> None:
        """One successful operator call of the open window; `times` is (entry into the dispatch
        mode, just before the call, just after it)."""
        t0, t1, t2 = times
        try:
            ins: list[torch.Tensor] = []
            scalars: list[Any] = []
            self._gather(args, ins, scalars)
            if kwargs:
                self._gather(kwargs.values(), ins, scalars)
            outs = self._outputs(out)
            call = (
                func,
                dev,
                tuple([_sig(t) for t in ins]),
                tuple([_sig(t) for t in outs]),
                tuple(scalars),
            )
            self.table.add((self.step, call), t2 - t1, sys._getframe(1))
            if outs:
                self.memory.add(outs, ins)
        except Exception as e:  # noqa: BLE001 - the bookkeeping never breaks the user's call
            self.note_error(f"cost table: {type(e).__name__}: {e}")
        self.tracer_s += (_perf() - t0) - (t2 - t1)

    def _gather(self, values: Iterable[Any], ins: list[Any], scalars: list[Any]) -> None:
        """Tensors among `values` (one level into lists and tuples) into `ins`; bools, ints,
        floats and lists of ints into `scalars`; everything else skipped."""
        Tensor = self.Tensor
        for a in values:
            if isinstance(a, Tensor):
                ins.append(a)
            elif a is None:
                continue
            elif isinstance(a, (bool, int)):
                scalars.append(a)
            elif isinstance(a, float):
                scalars.append(a if a == a else "NaN")
            elif isinstance(a, (list, tuple)):
                ints: list[int] | None = []
                for b in a:
                    if isinstance(b, Tensor):
                        ins.append(b)
                        ints = None
                    elif ints is not None:
                        ints = _int_into(b, ints, self.sym_types)
                if ints is not None:
                    scalars.append(tuple(ints))
            elif self.sym_types and isinstance(a, self.sym_types):
                _sym_into(a, scalars)

    def _outputs(self, out: Any) -> list[torch.Tensor]:
        Tensor = self.Tensor
        if isinstance(out, Tensor):
            return [out]
        if isinstance(out, (list, tuple)):
            return [o for o in out if isinstance(o, Tensor)]
        return []

    def close_window(self, optimizer: Any) -> dict[str, Any]:
        """The window's extra `steps[]` fields: tracer_s and memory (left out when they cannot be
        taken); {} when no window was open."""
        if not self.open:
            return {}
        self.open = False
        extra: dict[str, Any] = {"tracer_s": round(max(self.tracer_s, 0.0), 6)}
        try:
            extra["memory"] = self._step_memory(optimizer)
        except Exception as e:  # noqa: BLE001
            self.note_error(f"step memory: {type(e).__name__}: {e}")
        return extra

    def _step_memory(self, optimizer: Any) -> dict[str, int]:
        params = [p for group in optimizer.param_groups for p in group["params"]]
        grads = [p.grad for p in params if getattr(p, "grad", None) is not None]
        state: list[Any] = []
        for entry in optimizer.state.values():
            values = entry.values() if isinstance(entry, dict) else [entry]
            for v in values:
                if isinstance(v, (list, tuple)):
                    state.extend(x for x in v if isinstance(x, self.Tensor))
                elif isinstance(v, self.Tensor):
                    state.append(v)
        base_ids: set[int] = set()
        sizes = [self._bytes(ts, base_ids) for ts in (params, grads, state)]
        base = sum(b for _, b in sizes)
        p, g, s = (total for total, _ in sizes)
        peak = base + self.memory.peak
        return {
            "params": p,
            "grads": g,
            "optimizer_state": s,
            "step_peak": peak,
            "activations": max(0, peak - p - g - s),
        }

    def _bytes(self, tensors: list[Any], base_ids: set[int]) -> tuple[int, int]:
        """(bytes of the distinct storages of `tensors`, bytes of those not produced in this window
        and not yet in `base_ids`: the step's base memory)."""
        total = base = 0
        seen: set[int] = set()
        for t in tensors:
            if not isinstance(t, self.Tensor) or t.is_meta:
                continue
            st = t.untyped_storage()
            sid = id(st)
            if sid in seen:
                continue
            seen.add(sid)
            n = int(st.nbytes())
            total += n
            if sid not in base_ids and not self.memory.in_window(sid):
                base_ids.add(sid)
                base += n
        return total, base

    def majority_device(self) -> str | None:
        counts = {d: n for d, n in self.table.device_counts().items() if d in _PEAK_DEVICES}
        return max(counts, key=lambda d: counts[d]) if counts else None

    def take_device_peak(self, own_work: Callable[[], Any]) -> bool:
        """Measures the peak of the device most of the costed calls ran on, once per run (inside
        `own_work`); whether it was measured now. No costed call: nothing to measure."""
        if self.peak_done:
            return False
        self.peak_done = True
        device = self.majority_device()
        if device is None:
            return False
        torch = self.torch
        try:
            with own_work():
                before = torch.cuda.max_memory_allocated() if device == "cuda" else None
                self.device_peak = measure_device_peak(torch, device)
                # The measurement's buffers are the tracer's: they do not raise the run's peak.
                if before is not None and torch.cuda.max_memory_allocated() > before:
                    torch.cuda.reset_peak_memory_stats()
                if device == "mps":
                    torch.mps.empty_cache()
        except Exception as e:  # noqa: BLE001 - evidence incomplete, the run goes on
            self.note_error(f"device peak: {type(e).__name__}: {e}")
        return True


def _int_into(b: Any, ints: list[int], sym_types: tuple[type, ...]) -> list[int] | None:
    """`ints` with `b` appended when it is an int (or a SymInt with a value), else None."""
    if isinstance(b, int):
        ints.append(b)
        return ints
    if sym_types and isinstance(b, sym_types):
        value: Any = b
        try:
            ints.append(int(value))
            return ints
        except Exception:  # noqa: BLE001 - a symbolic size without a value
            return None
    return None


def _sym_into(a: Any, scalars: list[Any]) -> None:
    name = type(a).__name__
    try:
        if name == "SymBool":
            scalars.append(bool(a))
        elif name == "SymFloat":
            scalars.append(float(a))
        else:
            scalars.append(int(a))
    except Exception:  # noqa: BLE001 - a symbolic value without a value: skipped
        pass


# ---- the device's measured peak ----------------------------------------------------------------
_PEAK_DEVICES = ("cpu", "cuda", "mps")
_PEAK_BUDGET_S = 0.5


def measure_device_peak(torch: Any, device: str) -> dict[str, Any]:
    """Peak rates of `device` as this process sees it (the user's thread settings): best matmul
    rates, best copy bandwidth (read + write) and the per-operator dispatch cost. Deterministic
    values (no random generator is touched); about half a second in all."""
    start = _perf()
    sync = _synchronizer(torch, device)
    peak: dict[str, Any] = {"device": device, "device_name": _device_name(torch, device)}
    peak["threads"] = int(torch.get_num_threads())
    peak["matmul_fp32_flops"] = _matmul_rate(torch, device, torch.float32, sync, 0.15)
    half = torch.bfloat16 if device == "cpu" else torch.float16
    key = "matmul_bf16_flops" if device == "cpu" else "matmul_fp16_flops"
    peak[key] = _matmul_rate(torch, device, half, sync, 0.12)
    peak["copy_bytes_per_s"] = _copy_rate(torch, device, sync, 0.1)
    peak["op_overhead_s"] = _op_overhead(torch, device, sync, 2000)
    peak["measured_s"] = round(_perf() - start, 6)
    return peak


def _synchronizer(torch: Any, device: str) -> Callable[[], None]:
    if device == "cuda":
        return torch.cuda.synchronize  # type: ignore[no-any-return]
    if device == "mps":
        return torch.mps.synchronize  # type: ignore[no-any-return]
    return lambda: None


def _timed(fn: Callable[[], Any], sync: Callable[[], None]) -> float:
    sync()
    t = _perf()
    fn()
    sync()
    return _perf() - t


def _matmul_rate(
    torch: Any, device: str, dtype: Any, sync: Callable[[], None], budget: float
) -> float | None:
    """Best FLOP rate of an n x n by n x n matmul (2 n^3 FLOPs): n = 1024 on a GPU; on the CPU n
    grows from 512 until one product takes at least 5 ms (at most 4096). None where it fails."""
    try:
        end = _perf() + budget
        n = 1024 if device != "cpu" else 512
        product, t = _matmul(torch, device, dtype, n, sync)
        while device == "cpu" and t < 0.005 and n < 4096 and _perf() + 16 * t < end:
            n *= 2
            product, t = _matmul(torch, device, dtype, n, sync)
        best = t
        while _perf() + best < end:
            best = min(best, _timed(product, sync))
        return 2.0 * n**3 / best if best > 0 else None
    except Exception:  # noqa: BLE001 - a dtype the device lacks: no figure
        return None


def _matmul(
    torch: Any, device: str, dtype: Any, n: int, sync: Callable[[], None]
) -> tuple[Callable[[], Any], float]:
    """A product of two n x n matrices of constants (no random generator), and its time after a
    warm-up."""
    a = torch.full((n, n), 0.001, dtype=dtype, device=device)
    b = torch.full((n, n), 0.002, dtype=dtype, device=device)
    c = torch.empty((n, n), dtype=dtype, device=device)

    def product() -> Any:
        return torch.mm(a, b, out=c)

    _timed(product, sync)
    return product, _timed(product, sync)


def _copy_rate(torch: Any, device: str, sync: Callable[[], None], budget: float) -> float | None:
    """Best rate of dst.copy_(src) over 64 MiB float32 tensors, counting the read and the write."""
    try:
        elems = 64 * 2**20 // 4
        src = torch.full((elems,), 1.0, dtype=torch.float32, device=device)
        dst = torch.empty_like(src)
        _timed(lambda: dst.copy_(src), sync)  # warm-up (first touch of the pages)
        best = _timed(lambda: dst.copy_(src), sync)
        end = _perf() + budget
        while _perf() + best < end:
            best = min(best, _timed(lambda: dst.copy_(src), sync))
        return 2.0 * 64 * 2**20 / best if best > 0 else None
    except Exception:  # noqa: BLE001 - out of memory: no figure
        return None


def _op_overhead(torch: Any, device: str, sync: Callable[[], None], calls: int) -> float | None:
    """Mean time of torch.add on one-element tensors: the framework's per-operator cost."""
    try:
        a = torch.ones(1, device=device)
        b = torch.ones(1, device=device)
        torch.add(a, b)
        sync()
        t = _perf()
        for _ in range(calls):
            torch.add(a, b)
        sync()
        return round((_perf() - t) / calls, 9)
    except Exception:  # noqa: BLE001
        return None


def _device_name(torch: Any, device: str) -> str:
    try:
        if device == "cuda":
            return str(torch.cuda.get_device_name())
        if device == "mps":
            return "Apple MPS"
    except Exception:  # noqa: BLE001
        return device
    if os.path.exists("/proc/cpuinfo"):
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                for line in f:
                    if line.lower().startswith(("model name", "hardware")) and ":" in line:
                        return line.split(":", 1)[1].strip()
        except OSError:
            pass
    return platform.processor() or platform.machine()
