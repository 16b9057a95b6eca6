"""Class 2: FIFOs and special files never hang a reader; each is a clear error (exit 2) naming it."""

import json
import os
import threading
import time

import numpy as np
import pytest

from hostile_util import assert_clear_error, fifo, make_bundle, op_row, dt  # noqa: F401 (dt is a fixture)


def test_compare_refuses_a_fifo_input(dt, tmp_path):
    np.save(tmp_path / "b.npy", np.zeros(3, np.float32))
    f = fifo(tmp_path / "a.npy")
    r = dt("compare", f, tmp_path / "b.npy")
    assert_clear_error(r, "a.npy")
    assert "FIFO" in r.stderr


def test_compare_refuses_a_fifo_inside_a_bundle(dt, tmp_path):
    a = make_bundle(tmp_path / "a", metrics=['{"step": 1, "name": "loss", "value": 1.0}'])
    b = make_bundle(tmp_path / "b", metrics=['{"step": 1, "name": "loss", "value": 1.0}'])
    fifo(a / "tensors.safetensors")
    r = dt("compare", a, b)
    assert_clear_error(r, "tensors.safetensors")


def test_compare_refuses_a_character_device(dt, tmp_path):
    np.save(tmp_path / "b.npy", np.zeros(3, np.float32))
    link = tmp_path / "zero.npy"
    os.symlink("/dev/zero", link)  # /dev/zero would never end if read
    r = dt("compare", link, tmp_path / "b.npy")
    assert_clear_error(r, "zero.npy")
    assert "character device" in r.stderr


@pytest.mark.parametrize("name", ["manifest.json", "ops.jsonl", "metrics.jsonl"])
def test_show_refuses_a_fifo_bundle_file(dt, tmp_path, name):
    b = make_bundle(tmp_path / "b", metrics=[], ops=[op_row()])
    (b / name).unlink()
    fifo(b / name)
    r = dt("show", b)
    assert_clear_error(r, name)


def test_report_refuses_fifo_inputs(dt, tmp_path):
    f = fifo(tmp_path / "scan.json")
    r = dt("report", "--scan", f, "--format", "json")
    assert_clear_error(r, "scan.json")


def test_coverage_refuses_a_fifo_ops_file(dt, tmp_path):
    b = make_bundle(tmp_path / "b", ops=[op_row()])
    (b / "ops.jsonl").unlink()
    fifo(b / "ops.jsonl")
    r = dt("coverage", b)
    assert_clear_error(r, "ops.jsonl")
    r = dt("coverage", b / "ops.jsonl")
    assert_clear_error(r, "ops.jsonl")


def test_freeze_check_refuses_a_fifo_baseline(dt, tmp_path):
    f = fifo(tmp_path / "baseline.json")
    r = dt("freeze", "--check", f)
    assert_clear_error(r, "baseline.json")


def test_freeze_skips_a_fifo_in_the_data_slice(dt, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.bin").write_bytes(b"x" * 100)
    fifo(data / "pipe")
    r = dt("freeze", "--data-only", "--data", data, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [f["path"] for f in doc["data"]["files"]] == ["data/a.bin"]


def test_scan_with_a_fifo_gitignore_and_fifo_sources_finishes(dt, tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "train.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    fifo(proj / ".gitignore")
    fifo(proj / "model.py")
    r = dt("scan", proj, "--format", "json", "--fail-on", "never")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert any(f["file"] == "train.py" for f in doc["findings"])
    reasons = {s["file"]: s["reason"] for s in doc["skipped"]}
    assert "not applied" in reasons[".gitignore"] and "FIFO" in reasons[".gitignore"]
    assert "FIFO" in reasons["model.py"] or "regular" in reasons["model.py"]


def test_scan_survives_files_swapped_for_fifos_during_the_walk(dt, tmp_path):
    """A file replaced by a FIFO between the walk and the read is skipped, never waited on."""
    proj = tmp_path / "proj"
    proj.mkdir()
    names = [proj / f"m{i}.py" for i in range(300)]
    for p in names:
        p.write_text("import torch\nx = torch.zeros(1).cuda()\n" + "# pad\n" * 50)
    stop = threading.Event()

    def swap():
        while not stop.is_set():
            for p in names[::7]:
                try:
                    p.unlink()
                    os.mkfifo(p)
                except OSError:
                    pass
                try:
                    p.unlink()
                    p.write_text("import torch\n")
                except OSError:
                    pass

    t = threading.Thread(target=swap)
    t.start()
    try:
        for _ in range(5):
            r = dt("scan", proj, "--format", "json", "--fail-on", "never")
            assert r.returncode == 0, r.stderr
            json.loads(r.stdout)
    finally:
        stop.set()
        t.join()


def test_freeze_survives_files_swapped_for_fifos(dt, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    names = [data / f"f{i}.bin" for i in range(200)]
    for p in names:
        p.write_bytes(b"y" * 5000)
    stop = threading.Event()

    def swap():
        while not stop.is_set():
            for p in names[::5]:
                try:
                    p.unlink()
                    os.mkfifo(p)
                    time.sleep(0.0005)
                    p.unlink()
                    p.write_bytes(b"y" * 5000)
                except OSError:
                    pass

    t = threading.Thread(target=swap)
    t.start()
    try:
        for _ in range(5):
            r = dt("freeze", "--data-only", "--data", data, cwd=tmp_path)
            # Either it hashed a consistent slice, or it names the file that changed: never a hang.
            assert r.returncode in (0, 2), r.stderr
            if r.returncode == 2:
                assert "data/f" in r.stderr or "f" in r.stderr
    finally:
        stop.set()
        t.join()
