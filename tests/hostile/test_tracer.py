"""Class 7: the tracer never breaks the user's run. A full disk, a script that deletes the bundle
folder, or a folder where a bundle file should be: the script finishes, the failure is recorded
as incomplete evidence, and no temporary is left behind."""

import json
import sys
import textwrap

import pytest

from hostile_util import dt  # noqa: F401 (a fixture)

pytest.importorskip("torch")

PROLOGUE = """
import json, os, shutil, signal, resource
import torch
bundle = json.loads(os.environ["DUALTRACK_RUN"])["bundle"]
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
def step():
    opt.zero_grad()
    loss = model(torch.ones(3, 4)).pow(2).sum()
    loss.backward()
    opt.step()
step()
"""


def _run(dt, tmp_path, body, steps=3):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "train.py").write_text(PROLOGUE + textwrap.dedent(body) + "\nprint('user script done')\n")
    r = dt("run", "--track", "cpu", "--no-env", "--steps", str(steps), "-o", "out", "--",
           sys.executable, "train.py", cwd=proj, timeout=180)
    assert "user script done" in r.stdout, (r.stdout[-2000:], r.stderr[-3000:])
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    return proj / "out", r


def _leftovers(bundle):
    return [p.name for p in bundle.iterdir() if ".tmp" in p.name] if bundle.exists() else []


def test_folder_in_place_of_the_tensor_file(dt, tmp_path):
    bundle, r = _run(dt, tmp_path, """
        os.remove(os.path.join(bundle, "tensors.safetensors"))
        os.mkdir(os.path.join(bundle, "tensors.safetensors"))
        step()
        step()
    """)
    assert r.returncode == 0, r.stderr[-2000:]
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["status"] == "ok"
    assert any("tensors.safetensors" in p or "cannot write the bundle" in p for p in manifest["problems"])
    assert _leftovers(bundle) == []


def test_script_that_deletes_the_bundle_folder(dt, tmp_path):
    bundle, r = _run(dt, tmp_path, """
        shutil.rmtree(bundle)
        step()
        step()
    """)
    # The run cannot write a manifest into a folder that is gone; it says so, and the script ran.
    assert r.returncode in (0, 2), r.stderr[-2000:]


def test_full_disk_inside_the_users_process(dt, tmp_path):
    # RLIMIT_FSIZE makes every write past 1 KiB fail with EFBIG, as a full disk fails with ENOSPC.
    bundle, r = _run(dt, tmp_path, """
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, resource.RLIM_INFINITY))
        step()
        step()
        resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    """)
    assert r.returncode == 0, r.stderr[-2000:]
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["problems"], manifest
    assert _leftovers(bundle) == []


def test_a_failing_operator_table_never_breaks_an_operator(dt, tmp_path):
    bundle, r = _run(dt, tmp_path, """
        import dualtrack._where as where
        def broken(frame):
            raise ZeroDivisionError("tracer bug")
        where.frame_location = broken
        torch.nn.functional.gelu(torch.ones(3))  # a new operator row: its location lookup fails
        step()
    """)
    assert r.returncode == 0, r.stderr[-2000:]
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert any("operator table" in p for p in manifest["problems"]), manifest["problems"]
