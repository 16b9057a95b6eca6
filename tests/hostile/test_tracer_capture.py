"""Class 7: the tracer does not change the user's program. dualtrack.capture() records what it can
and notes what it cannot, never raising into the script; a project's own `dualtrack` module stays
the project's; a project's own dispatch and torch-function modes see the operators they see without
dualtrack; a name that is not valid Unicode still makes a bundle show and compare read; and a
dualtrack killed outright leaves no training process running."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from hostile_util import dt  # noqa: F401 (a fixture)

pytest.importorskip("torch")

PY = sys.executable
RUN_TIMEOUT = 180


def _write(proj: Path, files: dict) -> None:
    proj.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        path = proj / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def _run(dt, proj: Path, out: Path, *args, steps=1):
    r = dt("run", "--track", "cpu", "--no-env", "--seed", "0", "--steps", str(steps), "-o", out,
           *args, "--", PY, "train.py", cwd=proj, timeout=RUN_TIMEOUT)
    manifest = json.loads((out / "manifest.json").read_text())
    return r, manifest


def _finished(r, manifest):
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-3000:])
    assert "script done" in r.stdout, (r.stdout[-2000:], r.stderr[-3000:])
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert manifest["status"] == "ok"


def _show(dt, bundle: Path) -> dict:
    text = dt("show", bundle)
    assert text.returncode == 0, text.stderr
    shown = dt("show", bundle, "--format", "json")
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)


# ---- capture(): what it records, what it notes --------------------------------------------------

CAPTURES = """
    import fractions
    import numpy as np
    import torch
    import dualtrack

    calls = [
        ("c64", torch.tensor([1 + 2j, 3 - 4j], dtype=torch.complex64)),
        ("c128", torch.tensor([1 + 2j], dtype=torch.complex128).conj()),
        ("c1", torch.tensor(0.5 + 1j)),
        ("meta", torch.empty(3, device="meta")),
        ("meta1", torch.empty((), device="meta")),
        ("np_i64", np.int64(7)),
        ("np_f32", np.float32(0.25)),
        ("np_bool", np.bool_(True)),
        ("np_arr", np.arange(4, dtype=np.int32)),
        ("np_obj", np.array(["a"], dtype=object)),
        ("big", 2**63 + 1),
        ("exact", 2**60),
        ("huge", 10**400),
        ("third", fractions.Fraction(1, 3)),
        ("cx", 1 + 2j),
        ("flag", True),
        ("text", "not a number"),
        ("none", None),
    ]
    for name, value in calls:
        dualtrack.capture(name, value)  # Never raises: the script goes on as without dualtrack.
    print("script done")
"""


def test_capture_records_what_it_can_and_notes_what_it_cannot(dt, tmp_path):
    proj = tmp_path / "proj"
    _write(proj, {"train.py": CAPTURES})
    r, m = _run(dt, proj, tmp_path / "out")
    _finished(r, m)
    shown = _show(dt, tmp_path / "out")
    tensors = {t["name"]: (t["dtype"], t["shape"]) for t in shown["tensors"]}
    metrics = {x["name"]: x["value"] for x in shown["metrics"]}

    # Complex tensors are kept: complex64 as itself, complex128 (which safetensors lacks) as its
    # float64 (real, imaginary) pairs, a conjugate view with its values resolved.
    assert tensors["capture/c64/step1"] == ("C64", [2])
    assert tensors["capture/c128/step1"] == ("F64", [1, 2])
    assert tensors["capture/c1/step1"] == ("C64", [])
    assert "c1" not in metrics  # metrics.jsonl holds real numbers.
    # A complex Python number: a 0-d complex tensor.
    assert tensors["capture/cx/step1"] == ("F64", [2])
    # NumPy scalars are numbers, a NumPy array a tensor.
    assert metrics["np_i64"] == 7 and metrics["np_f32"] == 0.25
    assert tensors["capture/np_arr/step1"] == ("I32", [4])
    assert metrics["third"] == pytest.approx(1 / 3)
    assert metrics["exact"] == 2**60
    # Past float64's exact integers: the nearest float64, noted; past its range: not recorded.
    assert metrics["big"] == float(2**63 + 1)
    assert "huge" not in metrics
    for absent in ("meta", "meta1", "np_obj", "np_bool", "flag", "text", "none"):
        assert not any(f"/{absent}/" in t for t in tensors) and absent not in metrics, absent

    problems = "\n".join(m["problems"])
    for needle in ("capture/meta/step1: a meta tensor", "capture/meta1/step1: a meta tensor",
                   "'big': the integer is written as 9.223372036854776e+18",
                   "'huge': not recorded: a 1329-bit integer", "'np_obj': not recorded",
                   "'np_bool': not recorded", "'flag': not recorded", "'text': not recorded",
                   "'none': not recorded"):
        assert needle in problems, (needle, problems)
    # Nothing else went wrong, and `run` says there was something it could not record.
    assert len(m["problems"]) == 9, m["problems"]
    assert "with 9 problems" in r.stderr, r.stderr[-1000:]


def test_capture_outside_dualtrack_run_takes_every_value_silently(tmp_path):
    (tmp_path / "train.py").write_text(textwrap.dedent(CAPTURES))
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT / "python"))
    env.pop("DUALTRACK_RUN", None)
    p = subprocess.run([PY, "train.py"], cwd=tmp_path, capture_output=True, text=True, env=env,
                       timeout=RUN_TIMEOUT)
    assert p.returncode == 0 and "script done" in p.stdout, p.stderr[-2000:]


# ---- a project's own `dualtrack` ----------------------------------------------------------------

MODEL_STEP = """
    import torch
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.ones(3, 4)).pow(2).sum().backward()
    opt.step()
"""


@pytest.mark.parametrize("layout", ["module", "package"])
def test_a_projects_own_dualtrack_module_stays_the_projects(dt, tmp_path, layout):
    own = {"module": "dualtrack.py", "package": "dualtrack/__init__.py"}[layout]
    proj = tmp_path / "proj"
    _write(proj, {
        own: "OWN = 'the project'\ndef capture(*a, **k):\n    return 'project capture'\n",
        "train.py": "import dualtrack\n"
                    "assert dualtrack.OWN == 'the project', dualtrack\n"
                    "assert dualtrack.capture('x', 1.0) == 'project capture'\n"
                    + textwrap.dedent(MODEL_STEP) + "print('script done')\n",
    })
    r, m = _run(dt, proj, tmp_path / "out")
    _finished(r, m)
    # The tracer was active all the same: the step, its operators, its tensors.
    assert m["problems"] == [], m["problems"]
    assert m["steps_completed"] == 1
    ops = (tmp_path / "out" / "ops.jsonl").read_text()
    assert "aten::addmm" in ops
    names = {t["name"] for t in _show(dt, tmp_path / "out")["tensors"]}
    assert "param/step1/weight" in names
    assert not (tmp_path / "out" / "metrics.jsonl").read_text().count('"x"')


def test_import_dualtrack_otherwise_is_the_running_tracer(dt, tmp_path):
    proj = tmp_path / "proj"
    _write(proj, {"train.py": """
        import dualtrack, dualtrack._session as session
        from dualtrack import capture
        assert session.current() is not None, "capture() would not reach the run's session"
        assert capture is dualtrack.capture
        dualtrack.capture("acc", 0.5)
        print("script done")
    """})
    r, m = _run(dt, proj, tmp_path / "out")
    _finished(r, m)
    assert m["problems"] == []
    metrics = {x["name"]: x["value"] for x in _show(dt, tmp_path / "out")["metrics"]}
    assert metrics == {"acc": 0.5}


# ---- a project's own modes ----------------------------------------------------------------------

MODES = """
    import json, sys
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode
    import dualtrack

    class Ops(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seen = []
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.seen.append(str(func))
            return func(*args, **(kwargs or {}))

    class Functions(TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.seen = []
        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.seen.append(getattr(func, "__name__", str(func)))
            return func(*args, **(kwargs or {}))

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with Functions() as functions, Ops() as ops:
        for step in range(3):
            opt.zero_grad()
            loss = model(torch.ones(2, 4)).pow(2).mean()
            dualtrack.capture("loss_seen", loss)
            loss.backward()
            opt.step()
            dualtrack.capture("acc", 0.5)
    print(json.dumps({"ops": ops.seen, "functions": functions.seen}))
    print("script done")
"""


def test_a_projects_own_modes_see_the_operators_they_see_without_dualtrack(dt, tmp_path):
    proj = tmp_path / "proj"
    _write(proj, {"train.py": MODES})
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT / "python"))
    env.pop("DUALTRACK_RUN", None)
    alone = subprocess.run([PY, "train.py"], cwd=proj, capture_output=True, text=True, env=env,
                           timeout=RUN_TIMEOUT)
    assert alone.returncode == 0, alone.stderr[-2000:]
    expected = json.loads(alone.stdout.splitlines()[0])

    r, m = _run(dt, proj, tmp_path / "out", steps=2)
    _finished(r, m)
    traced = json.loads(r.stdout.splitlines()[0])
    assert len(traced["ops"]) == len(expected["ops"]), (traced["ops"], expected["ops"])
    assert traced == expected
    # The tracer still recorded the steps and what the script captured.
    assert m["problems"] == [] and m["steps_completed"] == 3
    names = {t["name"] for t in _show(dt, tmp_path / "out")["tensors"]}
    assert {"capture/loss_seen/step1", "capture/loss_seen/step2", "loss/step2"} <= names


# ---- names that are not valid Unicode -----------------------------------------------------------

SURROGATES = """
    import torch
    import dualtrack

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Linear(4, 2)
            self.register_parameter("w\\udc80", torch.nn.Parameter(torch.ones(2)))
            self.add_module("m\\udc81", torch.nn.Linear(2, 2))
        def forward(self, x):
            y = getattr(self, "m\\udc81")(self.body(x)) + getattr(self, "w\\udc80")
            return {"out\\udc82": y, "plain": y.sum()}

    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    out = model(torch.ones(3, 4))
    loss = out["out\\udc82"].pow(2).mean()
    loss.backward()
    opt.step()
    dualtrack.capture("t\\udc83", torch.arange(3.0))
    dualtrack.capture("n\\udc84", 1.5)
    dualtrack.capture("pair\\ud83d\\ude00", 2.5)  # A surrogate pair is a character: kept as one.
    print("script done")
"""


def test_names_that_are_not_valid_unicode_make_a_bundle_show_and_compare_read(dt, tmp_path):
    proj = tmp_path / "proj"
    _write(proj, {"train.py": SURROGATES})
    runs = []
    for out in ("a", "b"):
        r, m = _run(dt, proj, tmp_path / out)
        _finished(r, m)
        runs.append(m)
    shown = _show(dt, tmp_path / "a")
    names = {t["name"] for t in shown["tensors"]}
    # Each lone surrogate is written as its code, as Python's backslashreplace spells it.
    for name in ("param/step1/w\\udc80", "grad/step1/w\\udc80", "param/step1/m\\udc81.weight",
                 "output/step1/out\\udc82", "capture/t\\udc83/step1"):
        assert name in names, (name, sorted(names))
    metrics = {x["name"]: x["value"] for x in shown["metrics"]}
    assert metrics["n\\udc84"] == 1.5 and metrics["pair\U0001F600"] == 2.5
    # The renaming is noted, once per name, and run says so.
    problems = runs[0]["problems"]
    for part in ("w\\udc80", "m\\udc81.weight", "out\\udc82", "t\\udc83", "n\\udc84"):
        assert any(f"'{part}' is not valid Unicode" in p for p in problems), (part, problems)
    assert not any("pair" in p for p in problems), problems

    c = dt("compare", tmp_path / "a", tmp_path / "b", "--format", "json")
    assert c.returncode == 0, (c.stdout[-2000:], c.stderr[-2000:])
    compared = c.stdout
    assert "w\\\\udc80" in compared and "t\\\\udc83" in compared
    text = dt("compare", tmp_path / "a", tmp_path / "b")
    assert text.returncode == 0 and "capture/t\\udc83/step1" in text.stdout, text.stderr


def test_an_exception_message_that_is_not_valid_unicode_is_recorded(dt, tmp_path):
    proj = tmp_path / "proj"
    _write(proj, {"train.py": """
        import torch
        torch.ones(2).sum()
        raise ValueError("cannot open data\\udcff.bin")
    """})
    r, m = _run(dt, proj, tmp_path / "out")
    assert r.returncode == 1, r.stderr[-2000:]
    assert m["status"] == "failed"
    assert m["exception"]["type"] == "ValueError"
    assert m["exception"]["message"] == "cannot open data\\udcff.bin"
    assert not any("exception.json" in p for p in m["problems"]), m["problems"]
    _show(dt, tmp_path / "out")


# ---- a dualtrack killed outright ----------------------------------------------------------------

SLOW = """
    import os, sys, time
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    print("ready", flush=True)
    time.sleep(300)
"""


def _running(pid: int) -> bool:
    """Whether `pid` is a process that still runs (a zombie waiting for a reaper does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True,
                           text=True).stdout.strip()
    return bool(state) and not state.startswith("Z")


@pytest.mark.parametrize("launch", ["direct", "shell", "detached"])
def test_a_killed_dualtrack_leaves_no_training_running(dualtrack_bin, tmp_path, launch):
    proj = tmp_path / "proj"
    _write(proj, {"slow.py": SLOW})
    pid_file = tmp_path / "child.pid"
    script = f"'{PY}' slow.py '{pid_file}'"
    command = {
        "direct": [PY, "slow.py", str(pid_file)],
        # A launcher between dualtrack and Python, which waits for it.
        "shell": ["/bin/sh", "-c", f"{script}; echo after"],
        # Python handed to init at once (its launcher's subshell exits): its parent never dies,
        # only dualtrack does. What the bootstrap watches for where no parent-death signal exists.
        "detached": ["/bin/sh", "-c", f"({script} &); exec sleep 300"],
    }[launch]
    proc = subprocess.Popen([str(dualtrack_bin), "run", "--track", "cpu", "--no-env", "-o",
                             str(tmp_path / "out"), "--", *command], cwd=proj,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    child = None
    try:
        deadline = time.time() + 60
        while not pid_file.exists() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.1)
        assert pid_file.exists(), proc.stderr.read().decode(errors="replace") if proc.poll() else ""
        child = int(pid_file.read_text())
        assert _running(child)
        proc.kill()
        proc.wait(10)
        deadline = time.time() + 10
        while _running(child) and time.time() < deadline:
            time.sleep(0.1)
        assert not _running(child), f"the training process {child} outlived dualtrack"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        if child is not None and _running(child):
            os.kill(child, signal.SIGKILL)
