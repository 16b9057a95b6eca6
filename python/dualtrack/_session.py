"""The tracing session of one `dualtrack run`: operator table, automatic captures, bundle files.

Activated by the bootstrap sitecustomize when $DUALTRACK_RUN holds the run's options (JSON written
by the C++ side). Everything here is written into the bundle directory the C++ side created.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import numbers
import os
import signal
import sys
import time
import traceback
import warnings
from typing import TYPE_CHECKING, Any, NoReturn

from . import _cost, _messages, _where
from ._atomic import write_atomic
from ._text import dumps as _dumps
from ._text import has_lone_surrogate, valid_text

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Iterator
    from types import FrameType, TracebackType

    # ParamSpec and Concatenate are Python 3.10's; the package runs on 3.9, and annotations here
    # are never evaluated, so the checker alone needs them.
    from typing import Concatenate, ParamSpec, TextIO, TypeVar

    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from ._where import Location

    _P = ParamSpec("_P")
    _R = TypeVar("_R")

_current: Session | None = None


def current() -> Session | None:
    return _current


def _guarded(
    method: Callable[Concatenate[Session, _P], _R],
) -> Callable[Concatenate[Session, _P], _R | None]:
    """Wraps a hook the user's own code calls (forward, backward, optimizer.step()): a tracer
    failure (a full disk, a deleted bundle folder, a folder where a bundle file should be) is
    recorded in tracer_errors, so the manifest says the evidence is incomplete, and never raised
    into the user's training step."""
    import functools

    @functools.wraps(method)
    def wrapper(self: Session, /, *args: _P.args, **kwargs: _P.kwargs) -> _R | None:
        try:
            return method(self, *args, **kwargs)
        except Exception as e:  # noqa: BLE001 - anything the tracer does wrong stays here
            self.paused = False
            self.note_error(f"{method.__name__}: {type(e).__name__}: {e}")
            return None

    return wrapper


class Session:
    def __init__(self, cfg: dict[str, Any]) -> None:
        import torch

        self.torch = torch
        self.dir = cfg["bundle"]
        self.max_steps = int(cfg.get("steps", 1))
        self.cfg = cfg
        self.pid = os.getpid()
        self.step = 1
        # Rows and records are JSON objects on their way to the bundle.
        self.ops: dict[tuple[object, ...], dict[str, Any]] = {}
        self.float64: list[dict[str, Any]] = []
        self.fallback_names: set[str] = set()
        self.redirects: dict[tuple[str, str | None, int | None], dict[str, Any]] = {}
        self.tensors: dict[str, torch.Tensor] = {}
        self.steps: list[dict[str, Any]] = []
        self.step_start: float | None = None
        self.root: torch.nn.Module | None = None
        self.root_params = 0
        self.param_names: dict[int, str] = {}
        self.depth = 0
        # True from optimizer.step() until the next forward pass: a capture() then belongs to the
        # step that just finished (training loops log after the step), not to the next one.
        self.between_steps = False
        self.output_taken = 0
        self.loss_taken = 0
        self.paused = False
        self.exception: dict[str, Any] | None = None
        self.terminated = False  # SIGTERM arrived: exit without further measurement
        self.tracer_errors: list[str] = []
        self.peak_device: int | None = None
        self.tensors_written = 0
        # Names that are not valid Unicode (a lone surrogate), and the names they are written under.
        self.renamed: dict[str, str] = {}
        self._unseen = _unseen_by_modes(torch)
        # The cost facts of the steps <= --steps (cost.jsonl, steps[] tracer_s and memory).
        self.cost = _cost.CostRecorder(torch, self.note_error)
        self.metrics = open(os.path.join(self.dir, "metrics.jsonl"), "a", encoding="utf-8")

    def note_error(self, text: str) -> None:
        # Bounded: a failure on every step must not grow without end.
        if len(self.tracer_errors) < 100 and text not in self.tracer_errors:
            self.tracer_errors.append(text[:1000])

    @contextlib.contextmanager
    def own_work(self) -> Iterator[None]:
        """The tracer's own tensor work (copies of captured tensors, reading a loss, writing the
        bundle): left out of the operator table, and unseen by the user's own dispatch and
        torch-function modes, which count the same operators as without dualtrack."""
        was = self.paused
        self.paused = True
        # Inside a step window, the tracer's own work is part of its overhead (steps[].tracer_s).
        start = time.perf_counter() if not was and self.cost.open else None
        try:
            with self._unseen():
                yield
        finally:
            self.paused = was
            if start is not None:
                self.cost.tracer_s += time.perf_counter() - start

    def valid_name(self, name: str) -> str:
        """`name` as the bundle records it: itself, or, when it is not valid Unicode (a lone
        surrogate, which no strict UTF-8 reader accepts), with each lone surrogate written as its
        code (`\\udc80`), noted once per name so the run does not look complete."""
        safe = self.renamed.get(name)
        if safe is None:
            safe = valid_text(name)
            self.renamed[name] = safe
            if has_lone_surrogate(name):
                self.note_error(
                    f"the name '{safe}' is not valid Unicode (it holds a lone surrogate): "
                    "recorded with each lone surrogate written as its code"
                )
        return safe

    # ---- capture -------------------------------------------------------------------------------
    def capturing(self) -> bool:
        return self.step <= self.max_steps

    def capture_step(self, step: int | None = None) -> int:
        """The step a capture() belongs to: the one given, else the step that optimizer.step() just
        finished until the next forward pass begins, else the step under way."""
        if step is not None:
            return step
        return self.step - 1 if self.between_steps else self.step

    def _store(self, name: str, t: torch.Tensor) -> None:
        from ._safetensors import to_storable

        name = valid_text(name)  # Its parts were made valid (and noted) by the callers.
        try:
            with self.own_work():
                if t.is_meta:
                    self.note_error(f"cannot capture {name}: a meta tensor holds no values")
                    return
                self.tensors[name] = to_storable(t)
        except Exception as e:  # noqa: BLE001 - out of memory, an odd tensor: evidence incomplete
            self.note_error(f"cannot capture {name}: {type(e).__name__}: {e}")

    def _tensor_metric(self, name: str, t: torch.Tensor, step: int | None = None) -> None:
        """A one-element real tensor's value also goes to metrics.jsonl (a complex one, a number
        metrics.jsonl cannot hold, stays a tensor; a meta one has no value)."""
        try:
            with self.own_work():
                if t.is_meta or t.is_complex() or t.numel() != 1:
                    return
                value = float(t.detach().to("cpu").reshape(()).item())
        except Exception as e:  # noqa: BLE001 - a sparse or fake tensor: evidence incomplete
            self.note_error(f"metrics.jsonl: cannot read {name}: {type(e).__name__}: {e}")
            return
        self.metric(name, value, step)

    def metric(self, name: str, value: float, step: int | None = None) -> None:
        try:
            self.metrics.write(
                _dumps(
                    {
                        "step": self.step if step is None else step,
                        "name": name,
                        "value": _json_number(value),
                    }
                )
                + "\n"
            )
            self.metrics.flush()
        except (OSError, ValueError) as e:  # a full disk or a closed file: evidence incomplete
            self.note_error(f"metrics.jsonl: {e}")

    def capture(self, name: str, value: object, step: int | None = None) -> None:
        """dualtrack.capture(): records what it can and notes what it cannot; it never raises into
        the user's code (a script behaves the same under `dualtrack run` as without it)."""
        try:
            self._capture(name, value, step)
        except Exception as e:  # noqa: BLE001 - the tracer's failure stays the tracer's
            self.note_error(f"capture {valid_text(str(name))!r}: {type(e).__name__}: {e}")

    def _capture(self, name: object, value: object, step: int | None) -> None:
        at = self.capture_step(step)
        if at > self.max_steps:
            return
        torch = self.torch
        name = self.valid_name(str(name))
        numpy: Any = sys.modules.get("numpy")  # Only an array of an imported NumPy can be here.
        if numpy is not None and isinstance(value, numpy.ndarray):
            array: Any = value
            try:
                with self.own_work():
                    value = torch.from_numpy(numpy.array(array, copy=True))
            except Exception as e:  # noqa: BLE001 - an object or string array: no tensor of it
                self.note_error(
                    f"capture {name!r}: not recorded: a NumPy array of {array.dtype} "
                    f"({type(e).__name__}: {e})"
                )
                return
        if isinstance(value, torch.Tensor):
            self._store(f"capture/{name}/step{at}", value)
            self._tensor_metric(name, value, at)
        elif isinstance(value, numbers.Real) and not isinstance(value, bool):
            # int, float, NumPy's integer and floating scalars, Fraction.
            self._number(name, value, at)
        elif isinstance(value, numbers.Complex) and not isinstance(value, bool):
            # metrics.jsonl holds real numbers: a complex one is kept as a 0-d complex tensor.
            with self.own_work():
                t = torch.tensor(complex(value), dtype=torch.complex128)
            self._store(f"capture/{name}/step{at}", t)
        else:
            self.note_error(
                f"capture {name!r}: not recorded: expected a tensor or a number, "
                f"got {type(value).__name__}"
            )

    def _number(self, name: str, value: numbers.Real, at: int) -> None:
        """A real number into metrics.jsonl, as float64; an integer float64 cannot hold exactly
        is written rounded (noted), one beyond its range not at all (noted)."""
        try:
            number = float(value)
        except OverflowError:
            bits = value.bit_length() if isinstance(value, int) else None
            size = f"a {bits}-bit integer" if bits is not None else "a number"
            self.note_error(f"capture {name!r}: not recorded: {size} is beyond float64's range")
            return
        if isinstance(value, numbers.Integral) and number == number and int(number) != int(value):
            self.note_error(
                f"capture {name!r}: the integer is written as {number!r}, the nearest float64 "
                "(metrics.jsonl holds float64 values)"
            )
        self.metric(name, number, at)

    def _store_tree(self, prefix: str, value: object) -> None:
        torch = self.torch
        if isinstance(value, torch.Tensor):
            self._store(prefix, value)
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                self._store_tree(f"{prefix}/{i}", v)
        elif isinstance(value, dict):
            for k, v in value.items():
                self._store_tree(f"{prefix}/{self.valid_name(str(k))}", v)

    # ---- hooks ---------------------------------------------------------------------------------
    def _count_params(self, module: torch.nn.Module) -> int:
        return sum(1 for _ in module.parameters())

    @_guarded
    def on_forward_pre(self, module: torch.nn.Module, args: tuple[Any, ...]) -> None:
        if self.depth == 0:
            self.between_steps = False
        if self.depth == 0 and self.step_start is None:
            self.step_start = time.perf_counter()
            if self.capturing():
                self.cost.open_window(self.step)
        self.depth += 1

    @_guarded
    def on_forward(self, module: torch.nn.Module, args: tuple[Any, ...], output: object) -> None:
        self.depth = max(0, self.depth - 1)
        if self.depth != 0 or self.paused:
            return
        n = self._count_params(module)
        if n == 0:
            return
        if n > self.root_params:
            self.root, self.root_params = module, n
            self.param_names = {
                id(p): self.valid_name(name) for name, p in module.named_parameters()
            }
        if self.capturing() and self.output_taken < self.step and module is self.root:
            self.output_taken = self.step
            self._store_tree(f"output/step{self.step}", output)

    @_guarded
    def on_backward(self, tensors: object) -> None:
        if not self.capturing() or self.paused:
            return
        torch = self.torch
        loss = tensors[0] if isinstance(tensors, (list, tuple)) and tensors else tensors
        if self.loss_taken < self.step and isinstance(loss, torch.Tensor):
            self.loss_taken = self.step
            self._store(f"loss/step{self.step}", loss)
            self._tensor_metric("loss", loss)

    @_guarded
    def after_backward(self) -> None:
        if not self.capturing() or self.root is None:
            return
        for name, p in self.root.named_parameters():
            if p.grad is not None:
                self._store(f"grad/step{self.step}/{self.valid_name(name)}", p.grad)

    @_guarded
    def after_optimizer_step(self, optimizer: torch.optim.Optimizer) -> None:
        now = time.perf_counter()
        with self._unseen():  # The user's own modes must not see the memory summary's reads.
            extra = self.cost.close_window(optimizer)
        if self.capturing():
            for g, group in enumerate(optimizer.param_groups):
                for i, p in enumerate(group["params"]):
                    name = self.param_names.get(id(p), f"group{g}.{i}")
                    self._store(f"param/step{self.step}/{name}", p)
        start = self.step_start if self.step_start is not None else now
        if len(self.steps) < 100000:
            self.steps.append({"step": self.step, "wall_s": round(now - start, 6), **extra})
        self._sample_device_memory()
        finished = self.step
        self.step += 1
        self.step_start = None
        self.between_steps = True
        if finished <= self.max_steps:
            self.flush(final=False)
        if finished == self.max_steps and self._device_peak():
            with self.own_work():
                self._write_info(final=False)

    def _device_peak(self) -> bool:
        """The device's measured peak, once, after the last captured step (outside its wall time),
        unless the run's options say `"peak": false`; whether it was measured now."""
        if self.cfg.get("peak", True) is False:
            self.cost.peak_done = True
            return False
        return self.cost.take_device_peak(self.own_work)

    def finish(self) -> None:
        """At exit: the device's peak when the run ended before its last captured step (but
        after one, without an exception or SIGTERM), then the final flush."""
        try:
            ended_well = self.exception is None and not self.terminated
            if os.getpid() == self.pid and self.step > 1 and ended_well:
                self._device_peak()
        except Exception as e:  # noqa: BLE001 - the final flush must still happen
            self.note_error(f"device peak: {type(e).__name__}: {e}")
        self.flush(final=True)

    def _sample_device_memory(self) -> None:
        torch = self.torch
        try:
            value = None
            if self.cfg.get("redirect_cuda") is None and torch.cuda.is_available():
                value = torch.cuda.max_memory_allocated()
            elif getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
                value = torch.mps.driver_allocated_memory()
            if value is not None:
                self.peak_device = max(self.peak_device or 0, int(value))
        except Exception as e:  # device queries are best-effort evidence
            self.tracer_errors.append(f"device memory: {e}")

    def record_redirect(self, what: str, target: str, loc: Location | None) -> None:
        key = (what, loc["file"] if loc else None, loc["line"] if loc else None)
        row = self.redirects.get(key)
        if row is None:
            row = {
                "what": what,
                "to": target,
                "file": key[1],
                "line": key[2],
                "function": loc["function"] if loc else None,
                "count": 0,
            }
            self.redirects[key] = row
        row["count"] += 1

    # ---- output --------------------------------------------------------------------------------
    def flush(self, final: bool) -> None:
        if os.getpid() != self.pid:
            return
        try:
            with self.own_work():
                self._flush(final)
        except Exception as e:  # noqa: BLE001 - called from optimizer.step() and atexit
            self.note_error(f"cannot write the bundle: {type(e).__name__}: {e}")
            try:  # Record at least why, if tracer.json can still be written.
                self._write_info(final)
            except Exception:  # noqa: BLE001
                pass

    def _flush(self, final: bool) -> None:
        rows = []
        for row in self.ops.values():
            if (
                row["status"] == "ok"
                and row["name"] in self.fallback_names
                and row["device"] == "mps"
            ):
                row["status"] = "fallback"
            rows.append({k: v for k, v in row.items() if k != "name"})
        _write_text(os.path.join(self.dir, "ops.jsonl"), "".join(_dumps(r) + "\n" for r in rows))
        table = self.cost.table
        if table.changed:
            text = "".join(_dumps(r) + "\n" for r in table.json_rows())
            _write_text(os.path.join(self.dir, "cost.jsonl"), text)
            table.changed = False
        if self.tensors and len(self.tensors) != self.tensors_written:
            from . import _safetensors

            _safetensors.save(
                self.tensors,
                os.path.join(self.dir, "tensors.safetensors"),
                {"format": "pt", "producer": "dualtrack"},
            )
            self.tensors_written = len(self.tensors)
        self._write_info(final)
        self.metrics.flush()

    def _write_info(self, final: bool) -> None:
        torch = self.torch
        info = {
            "schema": "dualtrack.tracer/1",
            "final": final,
            "torch_version": torch.__version__,
            "python": sys.version.split()[0],
            "steps_requested": self.max_steps,
            "steps_completed": self.step - 1,
            "steps": self.steps,
            "peak_device_bytes": self.peak_device,
            "redirects": list(self.redirects.values()),
            "float64": self.float64,
            "fallback_warnings": sorted(self.fallback_names),
            "seed": self.cfg.get("seed"),
            "deterministic": bool(self.cfg.get("deterministic")),
            "mps_available": bool(
                getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()
            ),
            "exception": self.exception,
            "cost_rows": len(self.cost.table.rows),
            "cost_truncated": self.cost.table.truncated,
            "device_peak": self.cost.device_peak,
            "tracer_errors": self.tracer_errors,
        }
        _write_text(os.path.join(self.dir, "tracer.json"), _dumps(info, indent=1) + "\n")


def _json_number(value: float) -> float | str:
    """JSON has no NaN or infinity: they are written as the strings the C++ readers accept."""
    if isinstance(value, float) and value != value:
        return "NaN"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def _unseen_by_modes(torch: Any) -> Callable[[], contextlib.AbstractContextManager[Any]]:
    """A context without the torch-function modes and dispatch modes in force (the user's own, the
    operator recorder), for work of the tracer's own; a no-op where this torch lacks the means."""
    try:
        from torch.utils._python_dispatch import _disable_current_modes

        disable_torch_function = torch._C.DisableTorchFunction
    except (ImportError, AttributeError):
        return contextlib.nullcontext

    @contextlib.contextmanager
    def unseen() -> Iterator[None]:
        with disable_torch_function(), _disable_current_modes():
            yield

    return unseen


def _write_text(path: str, text: str) -> None:
    write_atomic(path, [text.encode("utf-8")])


def _make_recorder(session: Session) -> TorchDispatchMode:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    Tensor = torch.Tensor
    ops = session.ops
    cost = session.cost
    perf = time.perf_counter
    on_mps_check = _messages.mps_has_kernel
    getframe = sys._getframe

    def _note_tensors(
        values: Iterable[object],
        dts: list[torch.dtype],
        dev: str | None,
        ndims: list[int] | None = None,
    ) -> str | None:
        """Adds the dtypes of the tensors among `values` (and in lists or tuples among them) to
        dts, and their dimension counts to `ndims` when given (MPS takes at most 16); returns
        `dev`, or the device of the first tensor when `dev` is None."""
        for a in values:
            if isinstance(a, Tensor):
                dts.append(a.dtype)
                if ndims is not None:
                    ndims.append(a.dim())
                if dev is None:
                    dev = a.device.type
            elif isinstance(a, (list, tuple)):
                for b in a:
                    if isinstance(b, Tensor):
                        dts.append(b.dtype)
                        if ndims is not None:
                            ndims.append(b.dim())
                        if dev is None:
                            dev = b.device.type
        return dev

    # torch leaves TorchDispatchMode's methods (__init_subclass__, __init__, __enter__, __exit__)
    # unannotated, hence the no-untyped-call ignores where they are called.
    class Recorder(TorchDispatchMode):  # type: ignore[no-untyped-call]
        """One row per (operator overload, device, dtypes); the stack is walked on a row's first
        call."""

        def __torch_dispatch__(
            self,
            func: torch._ops.OpOverload,
            types: Collection[type],
            args: tuple[Any, ...] = (),
            kwargs: dict[str, Any] | None = None,
        ) -> Any:
            if kwargs is None:
                kwargs = {}
            if session.paused:
                return func(*args, **kwargs)
            t0 = perf()
            dts: list[torch.dtype] = []
            ndims: list[int] = []
            dev = _note_tensors(args, dts, None, ndims)
            dev = _note_tensors(kwargs.values(), dts, dev, ndims)
            try:
                t1 = perf()
                out = func(*args, **kwargs)
                t2 = perf()
            except Exception as e:
                try:
                    _record_failure(func, dev, dts, kwargs, e, ndims)
                except Exception as inner:  # noqa: BLE001 - the user's own error must surface
                    session.note_error(f"operator table: {type(inner).__name__}: {inner}")
                raise
            # The bookkeeping never turns a working operator into an error in the user's code.
            try:
                dev = _note_tensors((out,), dts, dev)
                key = (func, dev, frozenset(dts))
                row = ops.get(key)
                if row is None:
                    row = _new_row(func, dev, dts, getframe(1))
                    ops[key] = row
                    if dev == "mps" and not on_mps_check(row["name"]):
                        row["status"] = "fallback"
                row["count"] += 1
                if ndims and max(ndims) > row["max_ndim"]:
                    row["max_ndim"] = max(ndims)
            except Exception as e:  # noqa: BLE001
                session.note_error(f"operator table: {type(e).__name__}: {e}")
            if cost.open:
                cost.on_call(func, dev, args, kwargs, out, (t0, t1, t2))
            return out

    def _new_row(
        func: torch._ops.OpOverload, dev: str | None, dts: list[torch.dtype], frame: FrameType
    ) -> dict[str, Any]:
        schema = func._schema
        name = _messages.operator_name(schema.name, schema.overload_name)
        dtypes = sorted({str(d).replace("torch.", "") for d in dts})
        loc = _where.frame_location(frame)
        row: dict[str, Any] = {
            "op": schema.name,
            "overload": func._overloadname,
            "device": dev,
            "dtypes": dtypes,
            "count": 0,
            "max_ndim": 0,
            "location": loc,
            "status": "ok",
            "error": None,
            "name": name,
        }
        if any(_messages.is_float64(d) for d in dtypes):
            session.float64.append(
                {
                    "op": schema.name,
                    "overload": func._overloadname,
                    "device": dev,
                    "dtypes": dtypes,
                    "file": loc["file"] if loc else None,
                    "line": loc["line"] if loc else None,
                }
            )
        return row

    def _record_failure(
        func: torch._ops.OpOverload,
        dev: str | None,
        dts: list[torch.dtype],
        kwargs: dict[str, Any],
        exc: Exception,
        ndims: list[int],
    ) -> None:
        key = (func, dev, frozenset(dts), "failed")
        row = ops.get(key)
        if row is None:
            row = _new_row(func, dev, dts, getframe(2))
            ops[key] = row
        row["count"] += 1
        row["max_ndim"] = max([row["max_ndim"], *ndims])
        text = str(exc)
        row["status"] = "failed"
        named = _messages.parse_not_implemented_error(text)
        row["error"] = (text.splitlines() or [""])[0][:500]
        if named:
            row["error_kind"] = "not_implemented_on_mps"
        elif "float64" in text.lower() or "double" in text.lower():
            row["error_kind"] = "dtype"

    return Recorder()  # type: ignore[no-untyped-call]


def _install_warning_hook(session: Session) -> None:
    orig = warnings.showwarning

    def showwarning(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        try:
            op = _messages.parse_fallback_warning(str(message))
            if op:
                session.fallback_names.add(op)
        except Exception:  # parsing must never break the user's warning output
            pass
        return orig(message, category, filename, lineno, file, line)

    warnings.showwarning = showwarning


def _raised_by_tracer(tb: TracebackType | None) -> bool:
    """Whether the innermost frame of a traceback, where the exception was raised, is dualtrack's
    own code. An error the user's call raises inside torch (also through a redirect, which calls
    torch with the user's arguments) is innermost in torch or in user code."""
    last = None
    while tb is not None:
        last = tb
        tb = tb.tb_next
    return last is not None and _where.is_own_frame(last.tb_frame.f_code.co_filename)


def _install_exception_hook(session: Session) -> None:
    orig = sys.excepthook

    def excepthook(
        etype: type[BaseException], value: BaseException, tb: TracebackType | None
    ) -> None:
        ours = False
        try:
            loc = _where.traceback_location(tb)
            ours = _raised_by_tracer(tb)
            session.exception = {
                "type": etype.__name__,
                "module": etype.__module__,
                # "dualtrack": raised by the tracer's own code, so evidence about dualtrack, not
                # about the project; "user" otherwise.
                "origin": "dualtrack" if ours else "user",
                "message": str(value)[:4000],
                "file": loc["file"] if loc else None,
                "line": loc["line"] if loc else None,
                "function": loc["function"] if loc else None,
                "step": session.step,
                "traceback": traceback.format_exception(etype, value, tb)[-12:],
            }
            _write_text(
                os.path.join(session.dir, "exception.json"),
                _dumps(session.exception, indent=1) + "\n",
            )
        except Exception:  # the user's traceback must still print
            pass
        orig(etype, value, tb)
        if ours:
            print(
                "dualtrack: the error above was raised by dualtrack's tracer, not by your "
                "project; this run's evidence is incomplete. Please report it with the traceback.",
                file=sys.stderr,
            )

    sys.excepthook = excepthook


def _seed(seed: int) -> None:
    import random

    random.seed(seed)
    try:
        import numpy

        numpy.random.seed(seed)
    except ImportError:
        pass
    import torch

    torch.manual_seed(seed)


def install_tracer(session: Session) -> Callable[[], None]:
    """Installs the operator recorder and the capture hooks; returns a function that removes them
    (the benchmark compares traced and untraced steps in one process)."""
    import torch
    import torch.optim.optimizer as optim_mod
    from torch.nn.modules import module as module_mod

    handles = [module_mod.register_module_forward_pre_hook(session.on_forward_pre)]
    try:
        handles.append(
            module_mod.register_module_forward_hook(session.on_forward, always_call=True)
        )
    except TypeError:  # PyTorch < 2.1 has no always_call
        handles.append(module_mod.register_module_forward_hook(session.on_forward))
    handles.append(
        optim_mod.register_optimizer_step_post_hook(
            lambda opt, args, kwargs: session.after_optimizer_step(opt)
        )
    )

    orig_backward = torch.autograd.backward

    def backward(tensors: Any, *args: Any, **kwargs: Any) -> None:
        session.on_backward(tensors)
        result = orig_backward(tensors, *args, **kwargs)
        session.after_backward()
        return result

    torch.autograd.backward = backward
    recorder = _make_recorder(session)
    recorder.__enter__()  # type: ignore[no-untyped-call]  # torch leaves it unannotated

    def uninstall() -> None:
        recorder.__exit__(None, None, None)  # type: ignore[no-untyped-call]  # likewise
        torch.autograd.backward = orig_backward
        for h in handles:
            h.remove()

    return uninstall


def activate(cfg: dict[str, Any]) -> Session:
    """Installs the tracer into this process for the run described by `cfg`."""
    global _current
    import torch

    if cfg.get("root"):
        _where.set_root(cfg["root"])
    session = Session(cfg)
    _current = session
    if cfg.get("seed") is not None:
        _seed(int(cfg["seed"]))
    if cfg.get("deterministic"):
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
    if cfg.get("redirect_cuda"):
        from ._redirect import Redirector

        Redirector(cfg["redirect_cuda"], session.record_redirect, session.note_error).install()

    install_tracer(session)
    _install_warning_hook(session)
    _install_exception_hook(session)

    def on_term(signum: int, frame: FrameType | None) -> NoReturn:
        session.terminated = True
        raise SystemExit(128 + signum)

    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, on_term)

    atexit.register(session.finish)
    session.flush(final=False)
    return session


def _die_with_dualtrack(parent: object) -> None:
    """The traced process does not outlive a killed `dualtrack run` (its pid is `parent`). On Linux
    the direct child already dies with it (a parent-death signal the C++ side sets); elsewhere (no
    such signal on macOS), or behind a launcher (a shell between dualtrack and Python), a daemon
    thread checks twice a second that dualtrack is still there and kills this process if not."""
    if isinstance(parent, bool) or not isinstance(parent, int) or parent <= 0:
        return
    first_parent = os.getppid()
    if sys.platform.startswith("linux") and first_parent == parent:
        return
    import threading

    def gone() -> bool:
        if os.getppid() != first_parent:  # Our parent died: we were handed to another.
            return True
        try:
            os.kill(parent, 0)
        except ProcessLookupError:
            return True
        except OSError:  # EPERM: it exists (as another user's process, after a pid reuse too)
            pass
        return False

    def watch() -> None:
        while not gone():
            time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="dualtrack-parent-watch", daemon=True).start()


def activate_from_environment() -> None:
    """Called by the bootstrap sitecustomize; a broken setup is reported, never fatal to the
    script."""
    raw = os.environ.get("DUALTRACK_RUN")
    if not raw:
        return
    try:
        cfg = json.loads(raw)
    except ValueError as e:
        print(f"dualtrack: ignoring malformed DUALTRACK_RUN: {e}", file=sys.stderr)
        return
    # Only the first Python process of the run is traced (the script itself, also behind a shell
    # wrapper), not the processes it starts (spawned DataLoader workers, subprocesses), which would
    # otherwise write the same bundle. The claim is an exclusively created file.
    try:
        fd = os.open(
            os.path.join(cfg.get("bundle", "."), "tracer.pid"),
            os.O_WRONLY | os.O_CREAT | os.O_EXCL,
            0o644,
        )
    except FileExistsError:
        return
    except OSError as e:
        print(f"dualtrack: tracer not active: cannot write to the bundle: {e}", file=sys.stderr)
        return
    os.write(fd, f"{os.getpid()}\n".encode())
    os.close(fd)
    _die_with_dualtrack(cfg.get("parent_pid"))
    try:
        activate(cfg)
    except Exception as e:
        path = os.path.join(cfg.get("bundle", "."), "tracer.json")
        try:
            _write_text(
                path,
                _dumps(
                    {
                        "schema": "dualtrack.tracer/1",
                        "final": True,
                        "tracer_errors": [f"activation failed: {e!r}"],
                    }
                ),
            )
        except OSError:
            pass
        print(f"dualtrack: tracer not active: {e!r}", file=sys.stderr)
