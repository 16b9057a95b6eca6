"""Writes .safetensors files with torch alone, so the user's environment needs no extra package.

The format: an 8-byte little-endian header length, a JSON header mapping each name to dtype, shape
and data_offsets (relative to the end of the header), then the raw little-endian bytes.
"""

from __future__ import annotations

import json
import os
import struct
import sys

import torch

_DTYPES = {
    torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
    torch.uint8: "U8", torch.bool: "BOOL",
}


def to_storable(t: torch.Tensor) -> torch.Tensor:
    """A contiguous CPU copy in a dtype safetensors knows (complex and others become float32)."""
    t = t.detach()
    if t.dtype not in _DTYPES:
        t = t.to(torch.float32) if not t.is_complex() else torch.view_as_real(t)
    return t.to("cpu", copy=True).contiguous()


def save(tensors: dict, path: str, metadata: dict | None = None) -> None:
    """Writes `tensors` (name -> CPU tensor) to `path` atomically (temporary file + rename)."""
    header = {}
    blobs = []
    offset = 0
    for name, t in tensors.items():
        t = to_storable(t)
        if t.dtype == torch.bfloat16 or t.dtype == torch.bool:
            raw = t.view(torch.uint8 if t.dtype == torch.bool else torch.int16).numpy().tobytes()
        else:
            raw = t.numpy().tobytes()
        if sys.byteorder != "little" and t.element_size() > 1:
            raise RuntimeError("big-endian hosts are not supported")
        header[name] = {"dtype": _DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # Keeps the data 8-byte aligned, as the reference writer does.
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
