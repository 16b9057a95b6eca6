"""The tracer never breaks the user's run: real script shapes, each run unmodified under
`dualtrack run --redirect-cuda cpu` with real PyTorch. Each case checks the script finished as it
does without dualtrack, that the tracer recorded its operators and redirects at the user's own
lines, and that the tracer reported no error of its own. A failure raised by dualtrack's own code
is a `tracer-error` outcome, evidence about dualtrack and never about the project."""

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")

PY = sys.executable

# One training step of a CUDA script: the shape every case wraps.
STEP = """
def train_step(model, opt, x):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    return loss
"""


def _source(text: str) -> str:
    # STEP is written flush left; the body a case appends to it is indented with the test.
    if text.startswith(STEP):
        return STEP + textwrap.dedent(text[len(STEP):])
    return textwrap.dedent(text)


def _run(dualtrack, tmp_path: Path, files: dict, *, args=(), env=None, redirect=True):
    proj = tmp_path / "proj"
    proj.mkdir(exist_ok=True)
    for name, text in files.items():
        path = proj / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_source(text))
    cmd = ["run", "--track", "cpu", "--no-env", "-o", str(tmp_path / "bundle")]
    if redirect:
        cmd += ["--redirect-cuda", "cpu"]
    r = dualtrack(*cmd, "--", PY, "train.py", *args, cwd=proj, env=env, timeout=240)
    bundle = tmp_path / "bundle"
    manifest = json.loads((bundle / "manifest.json").read_text())
    rows = [json.loads(l) for l in (bundle / "ops.jsonl").read_text().splitlines() if l.strip()]
    return r, manifest, rows


def _clean(r, manifest):
    """The run finished as the script does alone, and the tracer noted no error of its own."""
    assert r.returncode == 0, r.stderr[-3000:]
    assert "script done" in r.stdout, (r.stdout[-2000:], r.stderr[-2000:])
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert manifest["outcome"] == "finished"
    assert manifest["problems"] == [], manifest["problems"]


def _user_files(rows):
    return {(o["location"] or {}).get("file") for o in rows}


def test_module_level_cuda_calls_and_autocast_context(dualtrack, tmp_path):
    # The reported crash: `ctx = autocast(...)` at module level, a stack one frame deep.
    r, m, rows = _run(dualtrack, tmp_path, {"train.py": """
        import torch
        torch.cuda.manual_seed(0)
        torch.backends.cuda.matmul.allow_tf32 = True
        ctx = torch.amp.autocast(device_type='cuda', dtype=torch.bfloat16)
        scaler = torch.cuda.amp.GradScaler()
        device = 'cuda' if torch.cuda.is_available() else 'cpu'
        model = torch.nn.Linear(4, 2).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x = torch.randn(8, 4, device=device)
        with ctx:
            loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        print("script done")
    """})
    _clean(r, m)
    where = {x["what"]: x["line"] for x in m["redirects"]}
    assert where["autocast(cuda)"] == 5 and where["Module.cuda()"] == 8
    assert where["GradScaler(cuda)"] == 6 and where["torch.cuda.synchronize()"] == 15
    assert any(o["op"] == "aten::addmm" for o in rows)
    assert _user_files(rows) <= {"train.py", None}


def test_config_executed_by_exec_and_main_block(dualtrack, tmp_path):
    # nanoGPT's configurator: a file exec'd into the script's globals, then `if __name__`.
    r, m, rows = _run(dualtrack, tmp_path, {
        "configurator.py": "device = 'cuda'\nlr = 0.05\n",
        "train.py": STEP + """
        import torch
        device = 'cpu'
        exec(open('configurator.py').read())
        def main():
            model = torch.nn.Linear(4, 2).to(device)
            opt = torch.optim.SGD(model.parameters(), lr=lr)
            train_step(model, opt, torch.randn(8, 4, device=device))
        if __name__ == '__main__':
            main()
            print("script done")
        """})
    _clean(r, m)
    assert {x["what"] for x in m["redirects"]} >= {"Module.to(cuda)", "device='cuda'"}
    mm = [o for o in rows if o["op"] == "aten::addmm"]
    assert mm and mm[0]["location"]["file"] == "train.py"


def test_training_in_a_thread_and_tensor_hooks_called_from_the_autograd_engine(dualtrack,
                                                                              tmp_path):
    # Hooks run from C++ (the autograd engine) with no Python caller above them; a thread's
    # stack starts in threading.py.
    r, m, rows = _run(dualtrack, tmp_path, {"train.py": STEP + """
        import threading
        import torch
        model = torch.nn.Linear(4, 2).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model.weight.register_hook(lambda g: g.cuda() * 1.0)
        def worker():
            train_step(model, opt, torch.randn(8, 4).cuda())
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        print("script done")
    """})
    _clean(r, m)
    assert m["steps_completed"] == 1
    assert [x["line"] for x in m["redirects"] if x["what"] == ".cuda()"]


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_dataloader_workers(dualtrack, tmp_path, method):
    r, m, rows = _run(dualtrack, tmp_path, {"train.py": STEP + f"""
        import torch
        from torch.utils.data import DataLoader, TensorDataset
        def main():
            data = TensorDataset(torch.randn(16, 4))
            loader = DataLoader(data, batch_size=8, num_workers=2,
                                multiprocessing_context="{method}")
            model = torch.nn.Linear(4, 2).cuda()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for (x,) in loader:
                train_step(model, opt, x.cuda(non_blocking=True))
            print("script done")
        if __name__ == "__main__":
            main()
    """})
    _clean(r, m)
    assert m["steps_completed"] == 2
    # Only the main process writes the bundle: one pid claimed it.
    assert int((tmp_path / "bundle" / "tracer.pid").read_text()) > 0


def test_generator_pipeline_and_callbacks_from_c(dualtrack, tmp_path):
    # map() and sorted(key=...) call back into Python from C; a generator resumes in new frames.
    r, m, rows = _run(dualtrack, tmp_path, {"train.py": STEP + """
        import torch
        def batches():
            for _ in range(2):
                yield torch.randn(8, 4).cuda()
        model = torch.nn.Linear(4, 2).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        moved = list(map(lambda t: t.to('cuda'), batches()))
        order = sorted(range(2), key=lambda i: float(moved[i].sum()))
        for i in order:
            train_step(model, opt, moved[i])
        print("script done")
    """})
    _clean(r, m)
    assert m["steps_completed"] == 2


def test_compiled_module(dualtrack, tmp_path):
    r, m, rows = _run(dualtrack, tmp_path, {"train.py": STEP + """
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
        model = model.cuda()
        compiled = torch.compile(model, backend="eager")
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        train_step(compiled, opt, torch.randn(8, 4).cuda())
        print("script done")
    """})
    _clean(r, m)
    assert m["steps_completed"] == 1


def test_script_that_changes_directory_and_sys_path(dualtrack, tmp_path):
    r, m, rows = _run(dualtrack, tmp_path, {
        "lib/models.py": "import torch\ndef make():\n    return torch.nn.Linear(4, 2).cuda()\n",
        "train.py": STEP + """
        import os, sys
        import torch
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
        os.chdir("lib")
        from models import make
        model = make()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        train_step(model, opt, torch.randn(8, 4).cuda())
        print("script done")
        """})
    _clean(r, m)
    where = {(x["what"], x["file"]) for x in m["redirects"]}
    # Locations stay relative to the project, not to the folder the script moved into.
    assert ("Module.cuda()", os.path.join("lib", "models.py")) in where


def test_a_sitecustomize_of_the_users_own_still_runs(dualtrack, tmp_path):
    site = tmp_path / "usersite"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import os\nos.environ['USER_SITE_RAN'] = 'yes'\n")
    r, m, rows = _run(dualtrack, tmp_path, {"train.py": STEP + """
        import os
        import torch
        assert os.environ.get("USER_SITE_RAN") == "yes", "the user's sitecustomize did not run"
        model = torch.nn.Linear(4, 2).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        train_step(model, opt, torch.randn(8, 4).cuda())
        print("script done")
    """}, env={"PYTHONPATH": str(site)})
    _clean(r, m)
    assert m["steps_completed"] == 1 and rows


def test_operators_run_inside_installed_packages_are_located_at_the_users_call(dualtrack,
                                                                              tmp_path):
    # numpy's memmap, then torch.from_numpy inside a helper of an installed package: the location
    # is the user's line, never a file in site-packages.
    r, m, rows = _run(dualtrack, tmp_path, {"train.py": STEP + """
        import numpy as np
        import torch
        from torch.utils.data import default_collate
        arr = np.lib.format.open_memmap("data.npy", mode="w+", dtype=np.float32, shape=(8, 4))
        arr[:] = 1.0
        batch = default_collate([torch.from_numpy(np.asarray(arr[i])) for i in range(8)])
        model = torch.nn.Linear(4, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        train_step(model, opt, batch)
        print("script done")
    """}, redirect=False)
    _clean(r, m)
    files = _user_files(rows)
    assert "train.py" in files
    assert not any(f and ("site-packages" in f or "dist-packages" in f) for f in files), files


def test_an_error_raised_by_dualtrack_itself_is_a_tracer_error_not_evidence(dualtrack, tmp_path):
    # A stand-in for a bug in the tracer: a function whose code is in dualtrack's own file
    # replaces Tensor.cuda, as the redirect does.
    r, m, rows = _run(dualtrack, tmp_path, {"train.py": """
        import torch
        import dualtrack._redirect as own
        ns = {}
        exec(compile("def broken(self, *a, **k):\\n    raise RuntimeError('tracer bug')\\n",
                     own.__file__, "exec"), ns)
        torch.Tensor.cuda = ns["broken"]
        x = torch.randn(8, 4).cuda()
    """})
    assert r.returncode == 1
    assert m["outcome"] == "tracer-error", m["outcome"]
    assert "not the project's" in m["outcome_reason"]
    assert m["exception"]["origin"] == "dualtrack"
    assert "raised by dualtrack's tracer, not by your project" in r.stderr
    # The user's own error stays the project's.
    (tmp_path / "proj" / "train.py").write_text("import torch\ntorch.randn(2).cuda().view(3)\n")
    r = dualtrack("run", "--track", "cpu", "--no-env", "--redirect-cuda", "cpu", "--force", "-o",
                  str(tmp_path / "bundle"), "--", PY, "train.py", cwd=tmp_path / "proj")
    m = json.loads((tmp_path / "bundle" / "manifest.json").read_text())
    assert m["outcome"] == "failed" and m["exception"]["origin"] == "user"
    assert "raised by dualtrack's tracer" not in r.stderr
