"""PyTorch's own reference code for the sub-byte floats, and a hand writer for packed tensors.

torch has no float32 conversion for float4_e2m1fn_x2 (or any float6), but its test suite carries
the bit-level encoder and decoder torchao uses (torch/testing/_internal/common_quantized.py). That
module imports expecttest through common_utils, which is not installed here, so the few functions
needed are compiled straight out of torch's installed source: the reference stays torch's code.
"""

import ast
import json
import os
import struct

import numpy as np
import torch
import torch.testing._internal as torch_internal

_WANTED = {"_n_ones", "_f32_to_floatx_unpacked", "_floatx_unpacked_to_f32", "down_size", "pack_uint4"}
_CONSTANTS = {"EBITS_F32", "MBITS_F32", "F32_EXP_BIAS"}


def _load():
    path = os.path.join(os.path.dirname(torch_internal.__file__), "common_quantized.py")
    with open(path) as f:
        tree = ast.parse(f.read())
    body = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in _WANTED:
            body.append(node)
        elif isinstance(node, ast.Assign):
            names = {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            if names & _CONSTANTS:
                body.append(node)
    ns = {"torch": torch, "Tensor": torch.Tensor}
    exec(compile(ast.Module(body=body, type_ignores=[]), path, "exec"), ns)
    missing = _WANTED - ns.keys()
    assert not missing, f"torch's common_quantized.py no longer defines {missing}"
    return ns


_NS = _load()

# (exponent bits, mantissa bits) of each sub-byte safetensors dtype.
FORMATS = {"F4": (2, 1), "F6_E2M3": (2, 3), "F6_E3M2": (3, 2)}


def decode(codes, dtype):
    """float64 values of unpacked codes (one per uint8), by torch's reference decoder."""
    ebits, mbits = FORMATS[dtype]
    t = torch.as_tensor(np.asarray(codes, dtype=np.uint8))
    return _NS["_floatx_unpacked_to_f32"](t, ebits, mbits).double().numpy()


def encode(values, dtype):
    """Unpacked codes (uint8) of float values rounded to the format, by torch's reference encoder."""
    ebits, mbits = FORMATS[dtype]
    return _NS["_f32_to_floatx_unpacked"](torch.as_tensor(values, dtype=torch.float32), ebits, mbits).numpy()


def float4_x2(codes):
    """A torch.float4_e2m1fn_x2 tensor of the codes, packed by torch's pack_uint4."""
    return _NS["pack_uint4"](torch.as_tensor(np.asarray(codes, dtype=np.uint8))).view(torch.float4_e2m1fn_x2)


def pack_bits(codes, width):
    """Codes packed as an LSB-first little-endian bit stream: element i is bits [w*i, w*i + w)."""
    codes = np.asarray(codes, dtype=np.uint8)
    bits = ((codes[:, None] >> np.arange(width, dtype=np.uint8)) & 1).astype(np.uint8).ravel()
    return np.packbits(bits, bitorder="little").tobytes()


def write_safetensors(path, tensors):
    """A safetensors file written by hand: tensors = {name: (dtype, shape, bytes)}."""
    header, data = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)
