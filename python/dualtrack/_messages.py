"""Parsers for PyTorch's MPS fallback messages (texts of aten/src/ATen/mps/MPSFallback.mm).

PyTorch prints the fallback warning once per process (TORCH_WARN_ONCE), so the tracer also asks the
dispatcher; these parsers attribute the messages that do appear to an operator.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# "The operator 'aten::sgn.out' is not currently supported on the MPS backend and will fall back to
# run on the CPU. This may have performance implications."
_FALLBACK_WARNING = re.compile(
    r"The operator '(?P<op>[^']+)' is not currently supported on the MPS backend "
    r"and will fall back to run on the CPU"
)

# "The operator 'aten::multi_margin_loss' is not currently implemented for the MPS device. If you
# want this op to be considered for addition please comment on ..."
_NOT_IMPLEMENTED = re.compile(
    r"The operator '(?P<op>[^']+)' is not currently implemented for the MPS device"
)

# Ops that MPSFallback.mm routes to the CPU explicitly although they have an "MPS" registration.
ALWAYS_CPU_ON_MPS = frozenset(
    {
        "aten::embedding_renorm_",
        "aten::linalg_svd",
        "aten::linalg_svd.U",
        "aten::col2im",
        "aten::upsample_nearest3d.vec",
    }
)

# Dispatch keys whose kernels serve MPS tensors without a fallback.
_MPS_SERVING_KEYS = (
    "MPS",
    "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional",
    "CompositeImplicitAutograd",
)


def parse_fallback_warning(text: str) -> str | None:
    """The operator named by PyTorch's MPS CPU-fallback warning, or None for any other text."""
    m = _FALLBACK_WARNING.search(text)
    return m.group("op") if m else None


def parse_not_implemented_error(text: str) -> str | None:
    """The operator named by PyTorch's "not currently implemented for the MPS device" error."""
    m = _NOT_IMPLEMENTED.search(text)
    return m.group("op") if m else None


def operator_name(schema_name: str, overload: str) -> str:
    """'aten::add' + 'Tensor' -> 'aten::add.Tensor'; the 'default' overload has no suffix."""
    return schema_name if overload in ("", "default") else f"{schema_name}.{overload}"


def mps_has_kernel(full_name: str, has_kernel: Callable[[str, str], bool] | None = None) -> bool:
    """Whether the dispatcher serves `full_name` on MPS without the CPU fallback."""
    if full_name in ALWAYS_CPU_ON_MPS:
        return False
    if has_kernel is None:
        import torch

        has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key
    for key in _MPS_SERVING_KEYS:
        try:
            if has_kernel(full_name, key):
                return True
        except Exception:  # an unknown key or operator on this PyTorch version
            continue
    return False


def is_float64(dtype: object) -> bool:
    """True for the dtypes MPS cannot hold: float64 and complex128."""
    name = str(dtype)
    return name in (
        "torch.float64",
        "torch.double",
        "torch.complex128",
        "torch.cdouble",
        "float64",
        "complex128",
    )
