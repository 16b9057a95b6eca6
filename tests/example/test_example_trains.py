"""The bundled example project trains on the CPU, deterministically, and its fixtures are intact."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cuda-research"
TRAIN = EXAMPLE / "train.py"
STEP_LINE = re.compile(r"^step (\d+) loss (\S+)$", re.MULTILINE)


def run_script(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTORCH_ENABLE_MPS_FALLBACK", None)
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def train(*args: str) -> list[float]:
    """Run train.py, check it succeeded, and return the printed per-step losses."""
    proc = run_script(str(TRAIN.relative_to(ROOT)), *args)
    assert proc.returncode == 0, f"train.py {' '.join(args)} failed:\n{proc.stderr[-4000:]}"
    steps = STEP_LINE.findall(proc.stdout)
    assert [int(i) for i, _ in steps] == list(range(1, len(steps) + 1)), proc.stdout
    assert proc.stdout.rstrip().splitlines()[-1] == f"done steps={len(steps)}", proc.stdout
    return [float(loss) for _, loss in steps]


@pytest.fixture(scope="module")
def seed0_losses() -> list[float]:
    return train("--device", "cpu", "--steps", "2", "--seed", "0")


def test_cpu_run_prints_two_finite_losses(seed0_losses):
    assert len(seed0_losses) == 2
    assert all(math.isfinite(loss) and loss > 0 for loss in seed0_losses)


def test_same_seed_gives_identical_losses(seed0_losses):
    assert train("--device", "cpu", "--steps", "2", "--seed", "0") == seed0_losses


def test_different_seed_gives_different_losses(seed0_losses):
    other = train("--device", "cpu", "--steps", "2", "--seed", "1")
    assert len(other) == 2
    assert other != seed0_losses


def test_portable_variant_trains():
    losses = train("--portable", "--steps", "2")
    assert len(losses) == 2
    assert all(math.isfinite(loss) for loss in losses)


def test_dualtrack_table_names_the_run():
    tomllib = pytest.importorskip("tomllib")
    with open(EXAMPLE / "pyproject.toml", "rb") as f:
        table = tomllib.load(f)["tool"]["dualtrack"]
    assert table["run"] == "train.py --device cpu --steps 2"
    assert all((EXAMPLE / entry).is_file() for entry in table["entry"])
    assert table["exclude"] == []


def test_notebook_is_nbformat4():
    nb = json.loads((EXAMPLE / "notebooks" / "explore.ipynb").read_text(encoding="utf-8"))
    assert nb["nbformat"] == 4
    assert isinstance(nb["metadata"], dict)
    kinds = [cell["cell_type"] for cell in nb["cells"]]
    assert "markdown" in kinds and "code" in kinds
    for cell in nb["cells"]:
        assert cell["cell_type"] in {"markdown", "code", "raw"}
        assert isinstance(cell["source"], (str, list))
        if cell["cell_type"] == "code":
            assert isinstance(cell["outputs"], list)
            assert "execution_count" in cell
    code = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "x.cuda()" in code and "torch.cuda.get_device_name(0)" in code


def test_data_slice_has_documented_shapes():
    images = np.load(EXAMPLE / "data" / "train_images.npy", allow_pickle=False)
    labels = np.load(EXAMPLE / "data" / "train_labels.npy", allow_pickle=False)
    assert images.shape == (64, 3, 16, 16) and images.dtype == np.float32
    assert labels.shape == (64,) and labels.dtype == np.int64
    assert np.isfinite(images).all()
    assert set(labels.tolist()) == set(range(10))


def test_preprocess_regenerates_identical_files(tmp_path):
    proc = run_script(str((EXAMPLE / "preprocess.py").relative_to(ROOT)), "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    for name in ("train_images.npy", "train_labels.npy"):
        assert (tmp_path / name).read_bytes() == (EXAMPLE / "data" / name).read_bytes(), name
