"""Classes 4 and 5: an output never destroys a file it must not replace, and a failed write is
never reported as success."""

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from hostile_util import TIMEOUT, assert_clear_error, fifo, make_bundle, dt  # noqa: F401 (dt is a fixture)


@pytest.fixture
def npy_pair(tmp_path):
    a, b = tmp_path / "a.npy", tmp_path / "b.npy"
    np.save(a, np.arange(4, dtype=np.float32))
    np.save(b, np.arange(4, dtype=np.float32))
    (tmp_path / "t.py").write_text("import torch\ntorch.cuda.synchronize()\n")  # for scan
    return a, b


def test_compare_refuses_to_write_over_its_own_input(dt, npy_pair):
    a, b = npy_pair
    before = b.read_bytes()
    r = dt("compare", a, b, "-o", b)
    assert_clear_error(r, "inputs")
    assert b.read_bytes() == before


def test_compare_refuses_a_file_inside_a_bundle_it_reads(dt, tmp_path):
    ta = make_bundle(tmp_path / "a", metrics=['{"step": 1, "name": "loss", "value": 1.0}'])
    tb = make_bundle(tmp_path / "b", metrics=['{"step": 1, "name": "loss", "value": 1.0}'])
    before = (ta / "metrics.jsonl").read_bytes()
    r = dt("compare", ta, tb, "-o", ta / "metrics.jsonl")
    assert_clear_error(r, "inputs")
    assert (ta / "metrics.jsonl").read_bytes() == before
    # A new report file beside the bundle's files is fine.
    r = dt("compare", ta, tb, "-o", ta / "compare.txt")
    assert r.returncode == 0, r.stderr
    assert "loss" in (ta / "compare.txt").read_text()


def test_outputs_refuse_symlinks_and_keep_their_targets(dt, npy_pair, tmp_path):
    a, b = npy_pair
    target = tmp_path / "precious.txt"
    target.write_text("precious")
    link = tmp_path / "out.txt"
    os.symlink(target, link)
    for args in (["compare", a, b, "-o", link],
                 ["freeze", "--data-only", "--data", a, "-o", link],
                 ["scan", tmp_path, "--fail-on", "never", "-o", link]):
        r = dt(*args, cwd=tmp_path)
        assert_clear_error(r, "symbolic link")
        assert link.is_symlink() and target.read_text() == "precious"


def test_outputs_refuse_fifos_and_devices(dt, npy_pair, tmp_path):
    a, b = npy_pair
    pipe = fifo(tmp_path / "pipe")
    for out in (pipe, Path("/dev/null")):
        for args in (["compare", a, b, "-o", out], ["freeze", "--data-only", "--data", a, "-o", out],
                     ["scan", tmp_path, "--fail-on", "never", "-o", out]):
            r = dt(*args, cwd=tmp_path)
            assert_clear_error(r, "not a regular file")
    assert stat.S_ISFIFO(os.stat(pipe).st_mode)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_freeze_refuses_its_data_and_preprocess_files_as_output(dt, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "x.bin").write_bytes(b"1234")
    pre = tmp_path / "prep.py"
    pre.write_text("print(1)\n")
    for out in (data / "x.bin", data / "baseline.json", pre):
        r = dt("freeze", "--data-only", "--data", "data", "--preprocess", "prep.py", "-o", out,
               cwd=tmp_path)
        assert r.returncode == 2, r.stderr
        assert "input" in r.stderr
    assert (data / "x.bin").read_bytes() == b"1234"
    assert pre.read_text() == "print(1)\n"
    assert not (data / "baseline.json").exists()


def test_replaced_outputs_keep_their_mode(dt, npy_pair, tmp_path):
    a, b = npy_pair
    out = tmp_path / "secret.json"
    out.write_text("{}")
    os.chmod(out, 0o600)
    r = dt("compare", a, b, "--format", "json", "-o", out)
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    assert json.loads(out.read_text())["verdict"] == "pass"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [
    ["rule", "--all"],
    ["rule", "DT101"],
    ["compare", "A", "B", "--format", "json"],
    ["freeze", "--data-only", "--data", "A"],
    ["scan", ".", "--format", "json", "--fail-on", "never"],
    ["show", "BUNDLE", "--format", "json"],
])
def test_a_full_standard_output_is_an_error(dualtrack_bin, npy_pair, tmp_path, args):
    a, b = npy_pair
    make_bundle(tmp_path / "bundle", metrics=['{"step": 1, "name": "loss", "value": 1.0}'])
    args = [str(a) if x == "A" else str(b) if x == "B" else str(tmp_path / "bundle") if x == "BUNDLE"
            else x for x in args]
    with open("/dev/full", "w") as full:
        r = subprocess.run([str(dualtrack_bin), *args], stdout=full, stderr=subprocess.PIPE, text=True,
                           cwd=tmp_path, timeout=TIMEOUT)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "standard output" in r.stderr


def _run(dt, out, *extra, cwd, script="ok.py"):
    return dt("run", "--track", "cpu", "--no-env", "-o", out, *extra, "--", sys.executable, script,
              cwd=cwd, timeout=120)


@pytest.fixture
def project(tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "ok.py").write_text("print('hello')\n")
    (proj / "slow.py").write_text("import time\ntime.sleep(3)\nprint('slow done')\n")
    (proj / "manifest.json").write_text('{"mine": true}\n')
    return proj


def test_run_output_that_normalises_to_an_existing_folder_is_guarded(dt, project):
    r = _run(dt, "newdir/..", cwd=project)
    assert r.returncode == 2, r.stderr
    assert "not empty" in r.stderr
    assert json.loads((project / "manifest.json").read_text()) == {"mine": True}


def test_run_track_dot_dot_is_refused(dt, project):
    r = dt("run", "--track", "..", "--no-env", "--", sys.executable, "ok.py", cwd=project, timeout=60)
    assert r.returncode == 2, r.stderr
    assert json.loads((project / "manifest.json").read_text()) == {"mine": True}


def test_two_concurrent_runs_into_one_folder(dualtrack_bin, project):
    cmd = [str(dualtrack_bin), "run", "--track", "cpu", "--no-env", "-o", "out", "--",
           sys.executable, "slow.py"]
    first = subprocess.Popen(cmd, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 20
    while not (project / "out" / "manifest.json").exists() and time.time() < deadline:
        time.sleep(0.05)
    second = subprocess.run(cmd[:-1] + ["ok.py"] + [], cwd=project, capture_output=True, text=True,
                            timeout=TIMEOUT)
    forced = subprocess.run(cmd[:5] + ["--force"] + cmd[5:-1] + ["ok.py"], cwd=project,
                            capture_output=True, text=True, timeout=TIMEOUT)
    out, err = first.communicate(timeout=120)
    assert second.returncode == 2, second.stderr
    assert forced.returncode == 2, forced.stderr
    assert "another `dualtrack run`" in forced.stderr
    assert first.returncode == 0, err
    manifest = json.loads((project / "out" / "manifest.json").read_text())
    assert manifest["command"][-1] == "slow.py" and manifest["status"] == "ok"
    assert "slow done" in (project / "out" / "stdout.log").read_text()


def _tiny_disk():
    """In the child: every write past 64 bytes fails (EFBIG), as on a full disk (ENOSPC)."""
    import resource
    import signal
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))


@pytest.mark.parametrize("args", [
    ["compare", "A", "B", "--format", "json", "-o", "OUT"],
    ["freeze", "--data-only", "--data", "A", "-o", "OUT"],
    ["scan", ".", "--format", "json", "--fail-on", "never", "-o", "OUT"],
])
def test_a_full_disk_under_an_output_file_is_an_error_and_keeps_the_old_file(dualtrack_bin, npy_pair,
                                                                             tmp_path, args):
    a, b = npy_pair
    out = tmp_path / "out.json"
    out.write_text("old")
    args = [str(a) if x == "A" else str(b) if x == "B" else str(out) if x == "OUT" else x for x in args]
    r = subprocess.run([str(dualtrack_bin), *args], cwd=tmp_path, capture_output=True, text=True,
                       timeout=TIMEOUT, preexec_fn=_tiny_disk)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "cannot write" in r.stderr or "cannot flush" in r.stderr, r.stderr
    assert out.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir() if ".tmp" in p.name] == []


def test_a_full_disk_under_a_streamed_report_is_an_error_and_keeps_the_old_file(dt, dualtrack_bin, tmp_path):
    # report --format json streams its findings into the temporary file: a write that fails part
    # way through a buffer fill must still leave the old file and no temporary.
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "t.py").write_text("import torch\n" + "x = torch.zeros(3).cuda()\n" * 200)
    scan = tmp_path / "scan.json"
    assert dt("scan", proj, "--format", "json", "--fail-on", "never", "-o", scan).returncode == 0
    out = tmp_path / "out.json"
    out.write_text("old")
    r = subprocess.run([str(dualtrack_bin), "report", "--scan", str(scan), "--format", "json", "-o", str(out)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT, preexec_fn=_tiny_disk)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "cannot write" in r.stderr or "cannot flush" in r.stderr, r.stderr
    assert str(out) in r.stderr or "out.json" in r.stderr, r.stderr
    assert out.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir() if ".tmp" in p.name] == []


def test_report_refuses_to_write_over_its_own_evidence(dt, tmp_path):
    b = make_bundle(tmp_path / "b", metrics=['{"step": 1, "name": "loss", "value": 1.0}'])
    before = (b / "manifest.json").read_bytes()
    r = dt("report", "--track", f"cpu={b}", "--format", "json", "-o", b / "manifest.json")
    assert_clear_error(r, "inputs")
    assert (b / "manifest.json").read_bytes() == before
    scan = tmp_path / "scan.json"
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "t.py").write_text("import torch\ntorch.cuda.synchronize()\n")
    assert dt("scan", proj, "--format", "json", "--fail-on", "never", "-o", scan).returncode == 0
    before = scan.read_bytes()
    r = dt("report", "--scan", scan, "--format", "json", "-o", scan)
    assert_clear_error(r, "inputs")
    assert scan.read_bytes() == before
