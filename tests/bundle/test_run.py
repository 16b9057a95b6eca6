"""`dualtrack run` and `dualtrack show` end to end: the real binary, real PyTorch, real scripts."""

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file

from conftest import REPO_ROOT

PY = sys.executable


def manifest(bundle: Path) -> dict:
    return json.loads((bundle / "manifest.json").read_text())


def ops(bundle: Path) -> list:
    return [json.loads(l) for l in (bundle / "ops.jsonl").read_text().splitlines() if l.strip()]


def metrics(bundle: Path) -> list:
    return [json.loads(l) for l in (bundle / "metrics.jsonl").read_text().splitlines() if l.strip()]


@pytest.fixture(scope="module")
def cpu_bundle(tmp_path_factory, dualtrack_bin, example_dir):
    out = tmp_path_factory.mktemp("cpu") / "runs" / "cpu"
    proc = subprocess.run(
        [str(dualtrack_bin), "run", "--track", "cpu", "--no-env", "--steps", "2", "-o", str(out),
         "--", PY, str(example_dir / "train.py"), "--device", "cpu", "--steps", "2"],
        capture_output=True, text=True, timeout=300)
    return out, proc


def test_cpu_track_writes_ok_bundle_with_logs(cpu_bundle):
    out, proc = cpu_bundle
    assert proc.returncode == 0, proc.stderr
    m = manifest(out)
    assert m["schema"] == "dualtrack.bundle/1"
    assert m["status"] == "ok" and m["exit_code"] == 0 and m["exception"] is None
    assert m["track"] == "cpu"
    assert m["command"][1].endswith("train.py")
    assert m["torch_version"] == torch.__version__
    assert m["peak_rss_bytes"] > 50 * 2**20
    assert m["wall_s"] > 0
    assert [s["step"] for s in m["steps"]] == [1, 2] and all(s["wall_s"] > 0 for s in m["steps"])
    assert "PYTORCH_ENABLE_MPS_FALLBACK" in m["env_vars"]
    # The output was both shown and logged.
    assert "step 1 loss" in proc.stdout
    assert (out / "stdout.log").read_text() == proc.stdout
    assert "train acc" in (out / "stderr.log").read_text()


def test_ops_table_lists_conv_matmul_and_optimizer_with_user_locations(cpu_bundle, example_dir):
    out, _ = cpu_bundle
    rows = ops(out)
    names = {r["op"] for r in rows}
    assert "aten::convolution" in names
    assert names & {"aten::addmm", "aten::mm", "aten::matmul", "aten::bmm"}
    assert names & {"aten::_fused_adamw_", "aten::addcdiv_", "aten::_foreach_addcdiv_"}
    by = {r["op"]: r for r in rows}
    conv = by["aten::convolution"]
    assert conv["location"]["file"] == "model.py"
    assert conv["device"] == "cpu" and conv["dtypes"] == ["float32"] and conv["count"] >= 2
    src = (example_dir / "model.py").read_text().splitlines()
    assert "self.layers(x)" in src[conv["location"]["line"] - 1]
    opt = next(r for r in rows if r["op"] in ("aten::_fused_adamw_", "aten::addcdiv_",
                                               "aten::_foreach_addcdiv_"))
    train = (example_dir / "train.py").read_text().splitlines()
    assert opt["location"]["file"] == "train.py"
    assert "optimizer.step()" in train[opt["location"]["line"] - 1]
    # multi_margin_loss is the planted op with no MPS kernel; on the CPU it runs fine.
    assert by["aten::multi_margin_loss"]["status"] == "ok"
    for r in rows:
        assert set(r) >= {"op", "overload", "device", "dtypes", "count", "location", "status",
                          "error"}


def test_float64_use_recorded_at_metrics_py(cpu_bundle):
    out, _ = cpu_bundle
    f64 = manifest(out)["float64"]
    assert any(f["file"] == "utils/metrics.py" and f["op"] == "aten::_to_copy" for f in f64)


def test_captured_loss_equals_printed_loss(cpu_bundle):
    out, proc = cpu_bundle
    printed = {int(m.group(1)): float(m.group(2))
               for m in re.finditer(r"step (\d+) loss (\S+)", proc.stdout)}
    assert set(printed) == {1, 2}
    tensors = load_file(str(out / "tensors.safetensors"))
    for step, value in printed.items():
        assert tensors[f"loss/step{step}"].item() == value
    logged = {m["step"]: m["value"] for m in metrics(out) if m["name"] == "loss"}
    assert logged == printed


def test_gradients_and_params_have_parameter_shapes(cpu_bundle, example_dir):
    out, _ = cpu_bundle
    sys.path.insert(0, str(example_dir))
    try:
        from model import TinyHybrid
    finally:
        sys.path.remove(str(example_dir))
    model = TinyHybrid(num_classes=10, portable=False)
    shapes = {n: tuple(p.shape) for n, p in model.named_parameters()}
    with safe_open(str(out / "tensors.safetensors"), "pt") as f:
        keys = set(f.keys())
        for step in (1, 2):
            for name, shape in shapes.items():
                assert tuple(f.get_slice(f"grad/step{step}/{name}").get_shape()) == shape
                assert tuple(f.get_slice(f"param/step{step}/{name}").get_shape()) == shape
        assert tuple(f.get_slice("output/step1").get_shape()) == (16, 10)
    assert not any(k.endswith("step3") or "/step3/" in k for k in keys)


def test_show_summarises_the_bundle(cpu_bundle, dualtrack):
    out, _ = cpu_bundle
    p = dualtrack("show", out)
    assert p.returncode == 0, p.stderr
    assert "status      ok" in p.stdout
    assert "aten::" in p.stdout and "model.py:" in p.stdout
    assert "utils/metrics.py:15" in p.stdout
    assert "loss/step1" in p.stdout and "loss: step 1 =" in p.stdout
    j = json.loads(dualtrack("show", out, "--format", "json").stdout)
    assert j["schema"] == "dualtrack.show/1"
    assert j["manifest"]["status"] == "ok"
    assert j["ops_summary"]["rows"] == len(ops(out))
    assert any(t["name"] == "loss/step2" and t["dtype"] == "F32" for t in j["tensors"])


def test_redirect_cuda_runs_untouched_cuda_script(tmp_path, dualtrack, example_dir):
    out = tmp_path / "redirect"
    p = dualtrack("run", "--track", "cpu", "--redirect-cuda", "cpu", "--no-env", "-o", out, "--",
                  PY, example_dir / "train.py", "--steps", "2")
    assert p.returncode == 0, p.stderr
    assert "step 2 loss" in p.stdout
    m = manifest(out)
    assert m["status"] == "ok" and m["redirect_cuda"] == "cpu"
    red = {(r["what"], r["file"]) for r in m["redirects"]}
    assert ("Module.cuda()", "train.py") in red
    assert ("torch.cuda.is_available()", "train.py") in red
    assert any(w.startswith(".to(") and f == "train.py" for w, f in red)
    assert any(f == "utils/timing.py" for _, f in red)
    train = (example_dir / "train.py").read_text().splitlines()
    cuda_row = next(r for r in m["redirects"] if r["what"] == "Module.cuda()")
    assert ".cuda()" in train[cuda_row["line"] - 1]
    assert all(r["to"] == "cpu" and r["count"] >= 1 for r in m["redirects"])
    assert {r["device"] for r in ops(out) if r["device"]} == {"cpu"}
    assert "Module.cuda() -> cpu  train.py:" in dualtrack("show", out).stdout


FAILING = """
import torch
import torch.nn as nn

def step(model, opt, i):
    loss = model(torch.ones(2, 4)).sum()
    loss.backward()
    if i == 2:
        raise RuntimeError("boom at step 2")
    opt.step()

model = nn.Linear(4, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in (1, 2, 3):
    step(model, opt, i)
"""


def test_script_raising_mid_step_leaves_failed_bundle(tmp_path, dualtrack):
    script = tmp_path / "fail.py"
    script.write_text(FAILING)
    out = tmp_path / "b"
    p = dualtrack("run", "--track", "cpu", "--no-env", "-o", out, "--", PY, script)
    assert p.returncode == 1
    assert "boom at step 2" in p.stderr  # the user's traceback still prints
    m = manifest(out)
    assert m["status"] == "failed" and m["exit_code"] == 1
    e = m["exception"]
    assert e["type"] == "RuntimeError" and e["message"] == "boom at step 2"
    assert e["file"] == "fail.py" and e["line"] == 9 and e["function"] == "step"
    assert e["step"] == 2
    assert [s["step"] for s in m["steps"]] == [1]
    assert load_file(str(out / "tensors.safetensors"))["loss/step1"].shape == ()
    assert "RuntimeError: boom at step 2" in dualtrack("show", out).stdout


def test_exit_code_without_exception_is_failed(tmp_path, dualtrack):
    script = tmp_path / "exit.py"
    script.write_text("import sys\nsys.exit(3)\n")
    out = tmp_path / "b"
    p = dualtrack("run", "--track", "cpu", "--no-env", "-o", out, "--", PY, script)
    assert p.returncode == 1
    m = manifest(out)
    assert m["status"] == "failed" and m["exit_code"] == 3
    assert "3" in m["exception"]["message"]


SLOW = """
import os, sys, time
import torch
x = torch.ones(3) * 2
print("ready", os.getpid(), flush=True)
time.sleep(60)
print("not reached")
"""


def _start(dualtrack_bin, tmp_path, script_text, *extra):
    script = tmp_path / "slow.py"
    script.write_text(script_text)
    out = tmp_path / "b"
    proc = subprocess.Popen([str(dualtrack_bin), "run", "--track", "cpu", "--no-env", *extra,
                             "-o", str(out), "--", PY, str(script)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    log = out / "stdout.log"
    while time.time() < deadline:
        if log.exists() and "ready" in log.read_text():
            return proc, out
        time.sleep(0.1)
    proc.kill()
    pytest.fail("the script never got ready")


def test_sigkill_of_dualtrack_leaves_incomplete_bundle(tmp_path, dualtrack_bin, dualtrack):
    proc, out = _start(dualtrack_bin, tmp_path, SLOW)
    proc.kill()
    proc.wait(10)
    m = manifest(out)
    try:
        assert m["status"] == "incomplete"
        assert m["ended"] is None and m["started"]
        assert m["command"][-1].endswith("slow.py")
        p = dualtrack("show", out)
        assert p.returncode == 0 and "incomplete" in p.stdout
    finally:
        # The child died with dualtrack (tests/hostile/test_tracer_capture.py), or is killed here.
        with contextlib.suppress(ProcessLookupError):
            os.kill(m["child_pid"], signal.SIGKILL)


def test_child_killed_by_signal_is_recorded_killed(tmp_path, dualtrack):
    script = tmp_path / "die.py"
    script.write_text("import os, signal, torch\nprint('x', flush=True)\n"
                      "os.kill(os.getpid(), signal.SIGKILL)\n")
    out = tmp_path / "b"
    p = dualtrack("run", "--track", "cpu", "--no-env", "-o", out, "--", PY, script)
    assert p.returncode == 1
    m = manifest(out)
    assert m["status"] == "killed" and m["signal"] == "SIGKILL" and m["exit_code"] is None
    assert (out / "stdout.log").read_text() == "x\n"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_is_forwarded_and_bundle_finalised(tmp_path, dualtrack_bin, sig):
    proc, out = _start(dualtrack_bin, tmp_path, SLOW)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    # Ctrl-C is the user stopping dualtrack: 130, as a shell reports it.
    assert proc.returncode == (130 if sig == signal.SIGINT else 1), err
    m = manifest(out)
    assert m["status"] == "killed" and m["signal"] == signal.Signals(sig).name
    assert m["outcome"] == "interrupted"
    assert m["ended"] is not None
    assert "not reached" not in (out / "stdout.log").read_text()
    # The tracer still flushed its operator table.
    assert any(r["op"] == "aten::mul" for r in ops(out))


SEEDED = """
import random, numpy, torch, dualtrack
print(random.random(), numpy.random.rand(), torch.rand(1).item(),
      torch.are_deterministic_algorithms_enabled())
x = torch.arange(4.0)
dualtrack.capture("feature", x * 2)
dualtrack.capture("acc", 0.75)
"""


def test_seed_deterministic_and_capture_api(tmp_path, dualtrack):
    import random

    import numpy

    script = tmp_path / "seeded.py"
    script.write_text(SEEDED)
    out = tmp_path / "b0"
    p = dualtrack("run", "--track", "cpu", "--no-env", "--seed", "7", "--deterministic", "-o",
                  out, "--", PY, script)
    assert p.returncode == 0, p.stderr
    random.seed(7)
    numpy.random.seed(7)
    torch.manual_seed(7)
    expected = f"{random.random()} {numpy.random.rand()} {torch.rand(1).item()} True"
    assert p.stdout.strip() == expected
    m = manifest(out)
    assert m["seed"] == 7 and m["deterministic"] is True
    t = load_file(str(out / "tensors.safetensors"))
    assert torch.equal(t["capture/feature/step1"], torch.arange(4.0) * 2)
    assert {"step": 1, "name": "acc", "value": 0.75} in metrics(out)


LOGGED_AFTER_STEP = """
import torch, dualtrack
torch.manual_seed(0)
model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 3), torch.randn(8, 1)
losses = []
for i in range(3):
    dualtrack.capture("lr", opt.param_groups[0]["lr"] * (i + 1), step=i + 1)  # top of the loop
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
    dualtrack.capture("train_loss", loss)          # logged after the step, as loops do
    dualtrack.capture("seen", float(i + 1))
print(" ".join(repr(v) for v in losses))
try:
    dualtrack.capture("bad", 1.0, step=0)
except ValueError as e:
    print("ValueError", e)
"""


def test_capture_after_optimizer_step_belongs_to_that_step(tmp_path, dualtrack):
    # opt.step() advances the step counter; a value logged right after it is still the step's own,
    # the last captured step included (it used to go to the next step, and the last one was lost).
    script = tmp_path / "loop.py"
    script.write_text(LOGGED_AFTER_STEP)
    out = tmp_path / "b"
    p = dualtrack("run", "--track", "cpu", "--no-env", "--steps", "2", "-o", out, "--", PY, script)
    assert p.returncode == 0, p.stderr
    printed = p.stdout.splitlines()
    losses = [float(v) for v in printed[0].split()]
    assert printed[1].startswith("ValueError") and "positive int" in printed[1]
    rows = metrics(out)
    by = {(r["name"], r["step"]): r["value"] for r in rows}
    assert by[("train_loss", 1)] == losses[0] and by[("train_loss", 2)] == losses[1]
    assert by[("loss", 1)] == losses[0] and by[("loss", 2)] == losses[1]  # The automatic capture.
    assert ("train_loss", 3) not in by  # Beyond --steps 2.
    assert by[("seen", 1)] == 1.0 and by[("seen", 2)] == 2.0
    assert by[("lr", 1)] == 0.1 and by[("lr", 2)] == 0.2 and ("lr", 3) not in by  # step= given.
    t = load_file(str(out / "tensors.safetensors"))
    assert {k for k in t if k.startswith("capture/train_loss/")} == {
        "capture/train_loss/step1", "capture/train_loss/step2"}
    assert torch.equal(t["capture/train_loss/step2"], t["loss/step2"])


def test_python_dash_m_forwards_to_the_executable(tmp_path, dualtrack_bin):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "dualtrack").symlink_to(dualtrack_bin)
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT / "python"),
               PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    direct = subprocess.run([str(dualtrack_bin), "--version"], capture_output=True, text=True)
    via = subprocess.run([PY, "-m", "dualtrack", "--version"], capture_output=True, text=True,
                         env=env)
    assert via.returncode == 0 and via.stdout == direct.stdout and via.stdout.strip()
    missing = subprocess.run([PY, "-m", "dualtrack", "scan", str(tmp_path / "nope")],
                             capture_output=True, text=True, env=env)
    assert missing.returncode == 2 and "nope" in missing.stderr


def test_capture_outside_dualtrack_run_is_a_no_op():
    code = "import dualtrack; dualtrack.capture('x', 1.0); print('fine')"
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT / "python"))
    env.pop("DUALTRACK_RUN", None)
    p = subprocess.run([PY, "-c", code], capture_output=True, text=True, env=env)
    assert p.returncode == 0 and p.stdout.strip() == "fine"


def test_python_dash_m_behind_a_shell_launcher_is_traced_once(tmp_path, dualtrack):
    pkg = tmp_path / "proj" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text(
        "import subprocess, sys, torch\n"
        "print(torch.mm(torch.ones(2, 2), torch.ones(2, 2)).sum().item())\n"
        "subprocess.run([sys.executable, '-c', 'import torch; torch.ones(1).exp()'], check=True)\n")
    out = tmp_path / "b"
    p = dualtrack("run", "--track", "cpu", "--no-env", "-o", out, "--", "/bin/sh", "-c",
                  f"cd '{tmp_path / 'proj'}' && '{PY}' -m pkg", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    rows = ops(out)
    mm = next(r for r in rows if r["op"] == "aten::mm")
    assert mm["location"]["file"] == os.path.join("proj", "pkg", "__main__.py")
    # The grandchild Python process was not traced into the same bundle.
    assert not any(r["op"] == "aten::exp" for r in rows)
    assert manifest(out)["status"] == "ok"


def test_run_refuses_non_empty_output_without_force(tmp_path, dualtrack):
    out = tmp_path / "b"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    p = dualtrack("run", "--track", "cpu", "--no-env", "-o", out, "--", PY, "-c", "pass")
    assert p.returncode == 2 and "--force" in p.stderr
    p = dualtrack("run", "--track", "cpu", "--no-env", "--force", "-o", out, "--", PY, "-c", "pass")
    assert p.returncode == 0
    assert (out / "precious.txt").read_text() == "keep me"


@pytest.mark.parametrize("args,needle", [
    (["run", "--track", "cpu", "-o", "X"], "after '--'"),
    (["run", "-o", "X", "--", "python"], "--track"),
    (["run", "--track", "a/b", "-o", "X", "--", "python"], "--track"),
    (["run", "--track", "cpu", "--redirect-cuda", "rocm", "-o", "X", "--", "python"], "rocm"),
    (["run", "--track", "cpu", "-o", "X", "--", "no-such-program-dt"], "not found"),
])
def test_run_usage_errors(tmp_path, dualtrack, args, needle):
    p = dualtrack(*args, cwd=tmp_path)
    assert p.returncode == 2
    assert needle in p.stderr


@pytest.fixture(scope="module")
def good_bundle(tmp_path_factory, dualtrack_bin):
    tmp_path = tmp_path_factory.mktemp("good")
    out = tmp_path / "good"
    script = tmp_path / "s.py"
    script.write_text("import torch\nm = torch.nn.Linear(2, 1)\nl = m(torch.ones(1, 2)).sum()\n"
                      "l.backward()\n")
    p = subprocess.run([str(dualtrack_bin), "run", "--track", "cpu", "--no-env", "-o", str(out),
                        "--", PY, str(script)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return out


@pytest.mark.parametrize("corrupt,needle", [
    (lambda b: (b / "manifest.json").write_text("{not json"), "manifest.json"),
    (lambda b: (b / "manifest.json").write_text('{"schema": "other/1"}'), "schema"),
    (lambda b: (b / "manifest.json").write_bytes(b"\xff\xfe\x00"), "manifest.json"),
    (lambda b: (b / "manifest.json").unlink(), "manifest.json"),
    (lambda b: (b / "ops.jsonl").write_text('{"op": "aten::mm", "count": 1}\n[1,2]\n'),
     "ops.jsonl:2"),
    (lambda b: (b / "ops.jsonl").write_text('{"op": "aten::mm", "count": -1}\n'), "count"),
    (lambda b: (b / "metrics.jsonl").write_text('{"step": 1, "name": "loss", "value": "x"}\n'),
     "metrics.jsonl:1"),
    (lambda b: (b / "tensors.safetensors").write_bytes(
        (b / "tensors.safetensors").read_bytes()[:-4]), "outside"),
    (lambda b: (b / "tensors.safetensors").write_bytes(b"\xff" * 8 + b"{}"), "longer than the file"),
    (lambda b: (b / "tensors.safetensors").write_bytes(b"\x02\x00\x00\x00\x00\x00\x00\x00[]"),
     "not a JSON object"),
    (lambda b: (b / "tensors.safetensors").write_bytes(b"abc"), "shorter"),
])
def test_show_rejects_corrupt_bundles(tmp_path, dualtrack, good_bundle, corrupt, needle):
    import shutil

    b = tmp_path / "copy"
    shutil.copytree(good_bundle, b)
    assert dualtrack("show", b).returncode == 0
    corrupt(b)
    p = dualtrack("show", b)
    assert p.returncode == 2, p.stdout
    assert needle in p.stderr
    assert "dualtrack show: error:" in p.stderr


def test_show_missing_directory(tmp_path, dualtrack):
    p = dualtrack("show", tmp_path / "nope")
    assert p.returncode == 2 and "not a bundle directory" in p.stderr


CUDA_SCRIPT = """
import torch
assert torch.cuda.is_available() and torch.cuda.device_count() == 1
x = torch.zeros(2, 3, device="cuda")
y = torch.randn(2, 3, device=torch.device("cuda:0"))
z = torch.ones(3).cuda()
w = torch.ones(3).to("cuda")
with torch.cuda.amp.autocast():
    m = torch.nn.Linear(3, 3).cuda()
    out = m(y)
scaler = torch.cuda.amp.GradScaler(enabled=False)
torch.cuda.synchronize()
print(x.device, y.device, z.device, w.device, torch.cuda.get_device_name(0))
"""


def test_redirect_covers_factories_amp_and_queries(tmp_path, dualtrack):
    script = tmp_path / "cuda_only.py"
    script.write_text(CUDA_SCRIPT)
    out = tmp_path / "b"
    p = dualtrack("run", "--track", "cpu", "--redirect-cuda", "cpu", "--no-env", "-o", out, "--",
                  PY, script)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("cpu cpu cpu cpu dualtrack redirect to cpu")
    lines = {r["what"]: r["line"] for r in manifest(out)["redirects"]}
    assert lines["torch.cuda.is_available()"] == 3
    assert lines["device='cuda'"] == 4
    assert lines["device=torch.device('cuda:0')"] == 5
    assert lines[".cuda()"] == 6
    assert lines[".to('cuda')"] == 7
    assert lines["autocast(cuda)"] == 8
    assert lines["Module.cuda()"] == 9
    assert lines["GradScaler(cuda)"] == 11
    assert lines["torch.cuda.synchronize()"] == 12


def test_missing_package_could_not_start(tmp_path, dualtrack):
    script = tmp_path / "imp.py"
    script.write_text("import torch\nimport einops_not_installed\n")
    out = tmp_path / "b"
    p = dualtrack("run", "--track", "cpu", "--no-env", "-o", out, "--", PY, script)
    assert p.returncode == 2, p.stderr
    assert "could-not-start: missing Python package einops_not_installed" in p.stderr
    m = manifest(out)
    assert m["status"] == "failed" and m["outcome"] == "could-not-start"
    assert m["missing_package"] == "einops_not_installed"
    assert "ModuleNotFoundError" in m["stderr_tail"]
    assert "outcome     could-not-start: missing Python package" in dualtrack("show", out).stdout
    # A failure of the task itself is not "could not start".
    script.write_text("import torch\nraise RuntimeError('boom')\n")
    p = dualtrack("run", "--track", "cpu", "--no-env", "--force", "-o", out, "--", PY, script)
    assert p.returncode == 1 and manifest(out)["outcome"] == "failed"
    # An import that needs CUDA is evidence about CUDA, kept as a failure.
    script.write_text("raise ImportError('libcudart.so.12: cannot open shared object file')\n")
    p = dualtrack("run", "--track", "cpu", "--no-env", "--force", "-o", out, "--", PY, script)
    assert manifest(out)["outcome"] == "failed"


def test_missing_script_could_not_start(tmp_path, dualtrack):
    out = tmp_path / "b"
    p = dualtrack("run", "--track", "cpu", "--no-env", "-o", out, "--", PY, tmp_path / "no.py")
    assert p.returncode == 2, p.stderr
    m = manifest(out)
    assert m["outcome"] == "could-not-start" and "could not be opened" in m["outcome_reason"]


def test_timeout_stops_the_script(tmp_path, dualtrack):
    script = tmp_path / "slow.py"
    script.write_text(SLOW)
    out = tmp_path / "b"
    t0 = time.time()
    p = dualtrack("run", "--track", "cpu", "--no-env", "--timeout", "2", "-o", out, "--", PY,
                  script, timeout=60)
    assert time.time() - t0 < 30
    assert p.returncode == 1, p.stderr
    m = manifest(out)
    assert m["status"] == "killed" and m["outcome"] == "timed-out" and m["timeout_s"] == 2


def test_the_operator_table_records_the_most_dimensions_an_input_had(tmp_path, dualtrack):
    # MPS takes tensors of at most 16 dimensions: the tracer records each operator's largest input,
    # and coverage turns a 17-dimensional one into the error MPS would raise.
    script = tmp_path / "ndim.py"
    script.write_text("import torch\n"
                      "x = torch.ones([1] * 17)\n"
                      "y = (x * 2).sum()\n"
                      "z = torch.ones(2, 3).relu()\n")
    out = tmp_path / "b"
    p = dualtrack("run", "--track", "cpu", "--no-env", "-o", out, "--", PY, script)
    assert p.returncode == 0, p.stderr
    rows = {r["op"]: r for r in ops(out)}
    assert rows["aten::mul"]["max_ndim"] == 17
    assert rows["aten::relu"]["max_ndim"] == 2
    j = json.loads(dualtrack("coverage", out, "--torch", "2.13", "--format", "json").stdout)
    mul = [o for o in j["ops"] if o["op"] == "aten::mul"]
    assert mul and "dimensions <= 16, but got 17" in json.dumps(mul)
    assert not any("dimensions" in json.dumps(o) for o in j["ops"] if o["op"] == "aten::relu")
