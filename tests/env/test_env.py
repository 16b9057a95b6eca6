"""`dualtrack env` and `dualtrack freeze` driven from outside, on this host and on recorded hosts."""

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys

import pytest

from conftest import REPO_ROOT



def conclusion(report, cid):
    found = [c for c in report["conclusions"] if c["id"] == cid]
    return found[0] if found else None


@pytest.fixture(scope="module")
def real_env(dualtrack_bin):
    r = subprocess.run([str(dualtrack_bin), "env", "--python", sys.executable, "--format", "json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.skipif(sys.platform != "linux" or shutil.which("nvidia-smi") is not None,
                    reason="asserts the facts of a Linux host without an NVIDIA GPU")
def test_env_on_this_host_reports_the_real_facts(real_env):
    import torch

    assert real_env["schema"] == "dualtrack.env/1"
    assert real_env["host"]["os"] == "Linux"
    assert real_env["host"]["arch"] == platform.machine()
    assert real_env["host"]["cores"] == os.cpu_count()
    assert real_env["host"]["memory_bytes"] > 0
    assert real_env["gpus"] == []
    assert real_env["python"]["version"] == platform.python_version()
    t = real_env["torch"]
    assert t["installed"] is True and t["error"] is None
    assert t["version"] == torch.__version__
    assert t["cuda_version"] == torch.version.cuda
    assert t["cuda_available"] is False and t["cuda_devices"] == []
    assert t["mps_built"] is False and t["mps_available"] is False
    assert conclusion(real_env, "no-gpu") is not None
    assert conclusion(real_env, "mps-not-built") is not None


@pytest.mark.skipif(shutil.which("nvcc") is None or shutil.which("nvidia-smi") is not None,
                    reason="needs nvcc without an NVIDIA driver")
def test_nvcc_without_gpu_proves_nothing(real_env):
    out = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout
    release = out.split("release ")[1].split(",")[0]
    assert real_env["cuda"]["nvcc_version"] == release
    c = conclusion(real_env, "nvcc-without-gpu")
    assert c is not None
    assert f"nvcc {release} is installed" in c["text"]
    assert "no NVIDIA GPU and driver" in c["text"]
    assert "CUDA programs cannot run here" in c["text"]


def test_env_text_has_sections_and_conclusions(dualtrack):
    r = dualtrack("env", "--python", sys.executable)
    assert r.returncode == 0, r.stderr
    for section in ["Host\n", "GPUs\n", "CUDA toolchain\n", "Python\n", "torch\n", "MPS environment\n",
                    "Conclusions\n"]:
        assert section in r.stdout
    assert f"  Architecture  {platform.machine()}\n" in r.stdout


def test_env_without_python_or_torch_is_not_fatal(dualtrack, tmp_path):
    r = dualtrack("env", "--python", str(tmp_path / "no-python"), "--format", "json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["python"]["found"] is False
    assert conclusion(report, "python-missing")["level"] == "blocker"
    # A Python whose `import torch` crashes the interpreter.
    fake = tmp_path / "site" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("import os\nos.abort()\n")
    r = dualtrack("env", "--python", sys.executable, "--format", "json",
                  env={"PYTHONPATH": str(tmp_path / "site")})
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["python"]["found"] is True
    assert report["torch"]["installed"] is True
    assert "signal 6" in report["torch"]["error"]
    assert conclusion(report, "torch-broken") is not None


def test_env_bad_options(dualtrack):
    r = dualtrack("env", "--format", "yaml")
    assert r.returncode == 2
    r = dualtrack("env", "--help")
    assert r.returncode == 0 and "Examples:" in r.stdout


def freeze_example(dualtrack, project, out):
    return dualtrack("freeze", "-o", out, "--data", "data", "--preprocess", "preprocess.py", "--seed", "0",
                     "--seed", "1234", "--python", sys.executable, cwd=project)


def test_freeze_then_check_reports_exactly_the_changed_file(dualtrack, example_dir, tmp_path):
    project = tmp_path / "proj"
    shutil.copytree(example_dir, project)
    r = freeze_example(dualtrack, project, "baseline.json")
    assert r.returncode == 0, r.stderr
    b = json.loads((project / "baseline.json").read_text())
    assert b["schema"] == "dualtrack.baseline/1"
    files = {f["path"]: f for f in b["data"]["files"]}
    assert set(files) == {"data/train_images.npy", "data/train_labels.npy"}
    raw = (project / "data/train_labels.npy").read_bytes()
    assert files["data/train_labels.npy"]["sha256"] == hashlib.sha256(raw).hexdigest()
    assert files["data/train_labels.npy"]["size"] == len(raw)
    pre = b["preprocess"][0]
    content = (project / "preprocess.py").read_bytes()
    assert pre["git_blob"] == hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()
    assert b["seeds"] == [0, 1234]
    assert {"requirements.txt", "environment.yml", "Dockerfile"} <= {x["path"] for x in b["lock_files"]}
    assert any(p["name"] == "torch" for p in b["packages"])
    assert b["env"]["schema"] == "dualtrack.env/1"
    assert not any(k.startswith(("HOME", "PATH")) for k in b["env_vars"])

    r = dualtrack("freeze", "--check", "baseline.json", "--python", sys.executable, cwd=project)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("No differences")

    with open(project / "data/train_images.npy", "r+b") as f:
        f.seek(-1, 2)
        last = f.read(1)
        f.seek(-1, 2)
        f.write(bytes([last[0] ^ 0xFF]))
    r = dualtrack("freeze", "--check", "baseline.json", "--python", sys.executable, "--format", "json",
                  cwd=project)
    assert r.returncode == 1, r.stdout + r.stderr
    diff = json.loads(r.stdout)
    assert diff["data"] == {"changed": ["data/train_images.npy"], "added": [], "missing": []}
    assert diff["packages"] == []


def test_freeze_bad_inputs_are_clear_errors(dualtrack, tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "ok.bin").write_bytes(b"1")
    r = dualtrack("freeze", "--data", "missing", "-o", "b.json", cwd=tmp_path)
    assert r.returncode == 2
    assert "missing: data path does not exist" in r.stderr
    assert not (tmp_path / "b.json").exists()
    os.symlink(tmp_path / "gone", tmp_path / "data" / "dangling")
    r = dualtrack("freeze", "--data", "data", "-o", "b.json", cwd=tmp_path)
    assert r.returncode == 2
    assert "dangling symbolic link" in r.stderr
    assert list(tmp_path.glob("*.json")) == [] and list(tmp_path.glob(".b.json*")) == []
    (tmp_path / "corrupt.json").write_text('{"schema": "dualtrack.baseline/1", "data": {"fi')
    r = dualtrack("freeze", "--check", "corrupt.json", cwd=tmp_path)
    assert r.returncode == 2
    assert "corrupt.json" in r.stderr and "corrupt baseline: invalid JSON" in r.stderr
    (tmp_path / "other.json").write_text('{"schema": "dualtrack.env/1"}')
    r = dualtrack("freeze", "--check", "other.json", cwd=tmp_path)
    assert r.returncode == 2
    assert "expected 'dualtrack.baseline/1'" in r.stderr
    r = dualtrack("freeze", "--check", "other.json", "--data", "data", cwd=tmp_path)
    assert r.returncode == 2
