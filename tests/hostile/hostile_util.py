"""Helpers of the hostile-input suite (a module, not a conftest.py, so that the suite-wide
`from conftest import REPO_ROOT` of the other folders keeps finding tests/conftest.py): every test
drives the real binary with a timeout, in tmp_path."""

import json
import os
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

TIMEOUT = 30  # seconds; a hang is a failure, never a stuck suite


@pytest.fixture
def dt(dualtrack):
    """dualtrack(*args) with the suite's timeout."""

    def run(*args, **kw):
        kw.setdefault("timeout", TIMEOUT)
        return dualtrack(*args, **kw)

    return run


def write_safetensors(path: Path, tensors: dict) -> None:
    """A minimal safetensors writer (float32 only) so the suite needs no extra package."""
    header, blobs, off = {}, [], 0
    for name, arr in tensors.items():
        raw = np.ascontiguousarray(arr, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def make_bundle(root: Path, track="cpu", metrics=None, ops=None, tensors=None, status="ok") -> Path:
    """A bundle as `dualtrack run` writes it (bundle/1), with chosen metrics.jsonl lines (raw text)."""
    root.mkdir(parents=True, exist_ok=True)
    manifest = {
        "schema": "dualtrack.bundle/1", "track": track, "status": status, "command": ["python", "x.py"],
        "cwd": str(root), "root": str(root), "git_commit": None, "git_dirty": None, "env": None,
        "seed": 0, "deterministic": False, "redirect_cuda": None, "steps_requested": 1,
        "started": "2026-01-01T00:00:00Z", "ended": "2026-01-01T00:00:01Z", "exit_code": 0,
        "signal": None, "exception": None, "steps": [], "wall_s": 1.0, "peak_rss_bytes": 1,
        "peak_device_bytes": None, "redirects": [], "float64": [], "problems": [],
    }
    files = {}
    if ops is not None:
        (root / "ops.jsonl").write_text("".join(json.dumps(o) + "\n" for o in ops))
        files["ops.jsonl"] = (root / "ops.jsonl").stat().st_size
    if metrics is not None:
        (root / "metrics.jsonl").write_text("".join(line + "\n" for line in metrics))
        files["metrics.jsonl"] = (root / "metrics.jsonl").stat().st_size
    if tensors is not None:
        write_safetensors(root / "tensors.safetensors", tensors)
        files["tensors.safetensors"] = (root / "tensors.safetensors").stat().st_size
    manifest["files"] = files
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return root


def op_row(op="aten::add", overload="Tensor", device="cpu", count=1, status="ok"):
    return {"op": op, "overload": overload, "device": device, "dtypes": ["float32"], "count": count,
            "location": None, "status": status, "error": None}


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def assert_clear_error(r, needle: str):
    """Exit 2 with a message naming `needle` (usually the file), and no crash signal."""
    assert r.returncode == 2, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    assert needle in r.stderr, r.stderr
    assert "internal error" not in r.stderr, r.stderr
