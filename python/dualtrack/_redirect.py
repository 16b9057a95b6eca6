"""--redirect-cuda: runs an unmodified CUDA script on another device and records every redirect.

`torch.device("cuda")` objects are left as they are, so the script takes the same branches it takes
on the cluster; they are redirected where they are used (`.to()`, `.cuda()`, factories' `device=`,
`Module.to()`), and `torch.cuda.*` queries made from user code answer as if one GPU were present.
Calls made from inside torch itself still see the real answers, so PyTorch never tries real CUDA.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

import torch
from torch.overrides import TorchFunctionMode

from . import _where

if TYPE_CHECKING:
    from typing import TypeVar

    from ._where import Location

    _M = TypeVar("_M", bound=torch.nn.Module)


def _is_cuda(d: object) -> bool:
    if isinstance(d, str):
        return d == "cuda" or d.startswith("cuda:")
    if isinstance(d, torch.device):
        return d.type == "cuda"
    return False


class Redirector:
    def __init__(
        self,
        target: str,
        record: Callable[[str, str, Location | None], None],
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        self.target = target
        self.device = torch.device(target)
        self._record = record  # record(what, target, location)
        self._on_error = on_error

    def note(self, what: str, depth: int = 2) -> None:
        """Records a redirect; bookkeeping that fails is noted as a tracer error, never raised
        into the user's call (the redirect itself still happens)."""
        try:
            self._record(what, self.target, _where.caller_location(depth))
        except Exception as e:  # noqa: BLE001 - the tracer's failure stays the tracer's
            if self._on_error is not None:
                self._on_error(f"redirect {what}: {type(e).__name__}: {e}")

    def from_user(self) -> bool:
        """Whether the caller of the patched function is user code (not torch)."""
        caller = sys._getframe(1).f_back  # this method's caller is the patched function
        return caller is not None and not _where.is_runtime(caller.f_code.co_filename)

    def install(self) -> None:
        self._patch_methods()
        self._patch_cuda_queries()
        self._patch_amp()
        self._patch_cudnn()
        self.mode = _DeviceArgMode(self)
        self.mode.__enter__()  # type: ignore[no-untyped-call]  # torch leaves it unannotated

    def _patch_methods(self) -> None:
        r = self
        orig_module_to = torch.nn.Module.to

        def tensor_cuda(
            self: torch._C.TensorBase,  # the class torch declares .cuda() on
            device: object = None,
            non_blocking: bool = False,
            memory_format: torch.memory_format = torch.preserve_format,
        ) -> torch.Tensor:
            r.note(".cuda()")
            return self.to(r.device, non_blocking=non_blocking, memory_format=memory_format)

        def module_cuda(self: _M, device: object = None) -> _M:
            r.note("Module.cuda()")
            return orig_module_to(self, r.device)

        def module_to(self: _M, *args: Any, **kwargs: Any) -> _M:
            if args and _is_cuda(args[0]):
                r.note("Module.to(cuda)")
                args = (r.device,) + args[1:]
            if _is_cuda(kwargs.get("device")):
                r.note("Module.to(cuda)")
                kwargs["device"] = r.device
            return orig_module_to(self, *args, **kwargs)

        # Monkey-patching is the point: the script's own calls land here.
        torch.Tensor.cuda = tensor_cuda  # type: ignore[method-assign]
        torch.nn.Module.cuda = module_cuda  # type: ignore[method-assign]
        torch.nn.Module.to = module_to  # type: ignore[method-assign]

    def _patch_cuda_queries(self) -> None:
        r = self
        cuda = torch.cuda
        target = self.target

        def sync() -> None:
            if target == "mps":
                torch.mps.synchronize()

        def allocated(*_a: object, **_k: object) -> int:
            if target == "mps":
                return torch.mps.current_allocated_memory()
            return 0

        props = types.SimpleNamespace(
            name=f"dualtrack redirect to {target}",
            major=0,
            minor=0,
            total_memory=0,
            multi_processor_count=0,
        )
        fakes: dict[str, Callable[..., object]] = {
            "is_available": lambda: True,
            "device_count": lambda: 1,
            "current_device": lambda: 0,
            "set_device": lambda *_a, **_k: None,
            "synchronize": lambda *_a, **_k: sync(),
            "get_device_name": lambda *_a, **_k: props.name,
            "get_device_properties": lambda *_a, **_k: props,
            "get_device_capability": lambda *_a, **_k: (0, 0),
            "is_bf16_supported": lambda *_a, **_k: target != "mps",
            "empty_cache": lambda: torch.mps.empty_cache() if target == "mps" else None,
            "memory_allocated": allocated,
            "max_memory_allocated": allocated,
            "memory_reserved": allocated,
            "max_memory_reserved": allocated,
            "reset_peak_memory_stats": lambda *_a, **_k: None,
            "manual_seed": lambda seed: torch.manual_seed(seed),
            "manual_seed_all": lambda seed: torch.manual_seed(seed),
        }
        for name, fake in fakes.items():
            orig = getattr(cuda, name, None)

            def wrapper(
                *args: Any,
                _name: str = name,
                _fake: Callable[..., object] = fake,
                _orig: Callable[..., object] | None = orig,
                **kwargs: Any,
            ) -> object:
                if _orig is not None and not r.from_user():
                    return _orig(*args, **kwargs)
                r.note(f"torch.cuda.{_name}()")
                return _fake(*args, **kwargs)

            setattr(cuda, name, wrapper)

    def _patch_amp(self) -> None:
        r = self
        from torch.amp import autocast_mode, grad_scaler

        orig_autocast = autocast_mode.autocast.__init__

        def autocast_init(
            self: autocast_mode.autocast, device_type: str, *args: Any, **kwargs: Any
        ) -> None:
            if device_type == "cuda":
                r.note("autocast(cuda)")
                device_type = r.target
                if kwargs.get("dtype") is None and r.target == "cpu":
                    kwargs["dtype"] = torch.bfloat16
            return orig_autocast(self, device_type, *args, **kwargs)

        autocast_mode.autocast.__init__ = autocast_init  # type: ignore[method-assign]

        orig_scaler = grad_scaler.GradScaler.__init__

        def scaler_init(
            self: grad_scaler.GradScaler, device: str = "cuda", *args: Any, **kwargs: Any
        ) -> None:
            if device == "cuda":
                r.note("GradScaler(cuda)")
                device = r.target
            return orig_scaler(self, device, *args, **kwargs)

        grad_scaler.GradScaler.__init__ = scaler_init  # type: ignore[method-assign]

    def _patch_cudnn(self) -> None:
        r = self
        cudnn = torch.backends.cudnn
        base = type(cudnn)

        class RecordingModule(base):  # type: ignore[valid-type, misc]
            def __setattr__(self, name: str, value: object) -> None:
                if not name.startswith("_"):
                    r.note(f"torch.backends.cudnn.{name} = {value!r}")
                super().__setattr__(name, value)

        try:
            cudnn.__class__ = RecordingModule
        except TypeError:  # an older PyTorch whose cudnn module cannot change class
            pass


class _DeviceArgMode(TorchFunctionMode):
    """Rewrites CUDA devices in the arguments of torch functions and tensor methods."""

    def __init__(self, redirector: Redirector) -> None:
        super().__init__()
        self.r = redirector

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Collection[type],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        d = kwargs.get("device")
        if d is not None and _is_cuda(d):
            kwargs = dict(kwargs, device=self.r.device)
            self.r.note(f"device={_describe(d)}", depth=2)
        if len(args) > 1 and _is_cuda(args[1]) and getattr(func, "__name__", "") == "to":
            self.r.note(f".to({_describe(args[1])})", depth=2)
            args = (args[0], self.r.device) + tuple(args[2:])
        return func(*args, **kwargs)


def _describe(d: object) -> str:
    return repr(d) if isinstance(d, str) else f"torch.device({str(d)!r})"
