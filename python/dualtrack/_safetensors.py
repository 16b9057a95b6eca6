"""Writes .safetensors files with torch alone, so the user's environment needs no extra package.

The format: an 8-byte little-endian header length, a JSON header mapping each name to dtype, shape
and data_offsets (relative to the end of the header), then the raw little-endian bytes.
"""

from __future__ import annotations

import struct
import sys

import torch

from ._atomic import write_atomic
from ._text import dumps

_DTYPES = {
    torch.float64: "F64",
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.int16: "I16",
    torch.int8: "I8",
    torch.uint8: "U8",
    torch.bool: "BOOL",
    torch.complex64: "C64",
}
# Dtypes that older torch releases lack: kept under their own names where this torch has them.
for _attr, _name in (
    ("uint16", "U16"),
    ("uint32", "U32"),
    ("uint64", "U64"),
    ("float8_e4m3fn", "F8_E4M3"),
    ("float8_e5m2", "F8_E5M2"),
    ("float8_e4m3fnuz", "F8_E4M3FNUZ"),
    ("float8_e5m2fnuz", "F8_E5M2FNUZ"),
    ("float8_e8m0fnu", "F8_E8M0"),
):
    if hasattr(torch, _attr):
        _DTYPES[getattr(torch, _attr)] = _name


def to_storable(t: torch.Tensor) -> torch.Tensor:
    """A contiguous CPU copy in a dtype safetensors knows: complex128, which the format lacks, as
    float64 pairs (torch.view_as_real), other dtypes it lacks as float32."""
    # A conjugate or negative view holds its values unresolved: resolved, its bytes are the values.
    t = t.detach().resolve_conj().resolve_neg()
    if t.dtype not in _DTYPES:
        t = torch.view_as_real(t) if t.is_complex() else t.to(torch.float32)
    return t.to("cpu", copy=True).contiguous()


def _raw_bytes(t: torch.Tensor) -> bytes:
    """The little-endian bytes of a contiguous CPU tensor, through uint8 (numpy lacks bfloat16 and
    the float8 dtypes)."""
    flat = t.reshape(-1)
    if flat.is_complex():
        flat = torch.view_as_real(flat).reshape(-1)
    return flat.view(torch.uint8).numpy().tobytes()


def save(
    tensors: dict[str, torch.Tensor], path: str, metadata: dict[str, str] | None = None
) -> None:
    """Writes `tensors` (name -> CPU tensor) to `path` atomically (temporary file + rename)."""
    header = {}
    blobs = []
    offset = 0
    for name, t in tensors.items():
        t = to_storable(t)
        raw = _raw_bytes(t)
        if sys.byteorder != "little" and t.element_size() > 1:
            raise RuntimeError("big-endian hosts are not supported")
        header[name] = {
            "dtype": _DTYPES[t.dtype],
            "shape": list(t.shape),
            "data_offsets": [offset, offset + len(raw)],
        }
        blobs.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # Keeps the data 8-byte aligned, as the reference writer does.
    write_atomic(path, [struct.pack("<Q", len(text)), text, *blobs])
