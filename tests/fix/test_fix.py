"""`dualtrack fix`: the bundled example rewritten, compiled, run and proven unchanged.

Real PyTorch runs the original and the fixed training step; the fixed code picks CUDA, else MPS,
else the CPU when it runs, so on this CPU-only machine the fixed example trains with its default
options where the original stops at its first CUDA call.
"""

import json
import py_compile
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# Rules whose findings `fix` rewrites without --unsafe-fixes.
SAFE = {"DT101", "DT102", "DT103", "DT104", "DT105", "DT106", "DT107", "DT108", "DT112", "DT115", "DT205"}


@pytest.fixture
def project(example_dir, tmp_path):
    dest = tmp_path / "cuda-research"
    shutil.copytree(example_dir, dest, ignore=shutil.ignore_patterns("__pycache__", "runs"))
    return dest


def snapshot(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def notebook_code(path):
    cells = json.loads(path.read_text())["cells"]
    return "\n".join("".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                     for c in cells if c["cell_type"] == "code")


def test_the_default_prints_a_diff_and_writes_nothing(dualtrack, project):
    before = snapshot(project)
    out = dualtrack("fix", project)
    assert out.returncode == 1, out.stderr
    assert "--- a/train.py\n+++ b/train.py\n" in out.stdout
    assert '-    parser.add_argument("--device", default="cuda",' in out.stdout
    assert '+    parser.add_argument("--device", default=_dualtrack_device(),' in out.stdout
    assert "+def _dualtrack_device(index=None):" in out.stdout
    assert "would fix" in out.stderr
    assert snapshot(project) == before


def test_apply_compiles_leaves_no_safe_finding_and_a_second_fix_changes_nothing(dualtrack, project):
    before = snapshot(project)
    out = dualtrack("fix", project, "--apply")
    assert out.returncode == 0, out.stderr
    after = snapshot(project)
    changed = sorted(name for name in after if after[name] != before.get(name))
    assert changed == ["notebooks/explore.ipynb", "scripts/benchmark_cuda.py", "train.py"]
    for name in changed:
        if name.endswith(".py"):
            py_compile.compile(str(project / name), doraise=True)
        else:
            compile(notebook_code(project / name), name, "exec")
    # Comments and docstrings are where they were.
    train = (project / "train.py").read_text()
    assert train.count("#") == before["train.py"].decode().count("#") + 1  # The helper's own note.
    again = dualtrack("fix", project)
    assert again.returncode == 0 and again.stdout == "", again.stdout
    scan = dualtrack("scan", project, "--format", "json", "--fail-on", "never")
    left = [f for f in json.loads(scan.stdout)["findings"]
            if f["code"] in SAFE and not f["guarded"] and f["severity"] == "fixable"
            and f["file"].endswith((".py", ".ipynb"))]
    assert left == [], left


def test_the_fixed_example_trains_on_this_cpu_with_its_defaults(dualtrack, project):
    cmd = [sys.executable, "train.py", "--steps", "1"]
    original = subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=300)
    assert original.returncode != 0  # --device defaults to "cuda": no CUDA here.
    assert dualtrack("fix", project, "--apply").returncode == 0
    fixed = subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=300)
    assert fixed.returncode == 0, fixed.stderr[-2000:]


def test_verify_proves_the_safe_fixes_bitwise_and_then_writes(dualtrack, project):
    before = snapshot(project)
    out = dualtrack("fix", project, "--verify", "--apply", "--steps", "2", "--",
                    sys.executable, "train.py", "--steps", "2", cwd=project)
    assert out.returncode == 0, out.stderr
    assert "verified: the fixed project is bitwise equal to the original on the CPU" in out.stderr
    assert "pins the device" not in out.stderr
    assert snapshot(project) != before


def test_verify_warns_when_the_command_pins_the_device_away_from_the_rewrite(dualtrack, project):
    # `--device cpu` never runs the device choice the fix rewrote: say so beside "verified".
    out = dualtrack("fix", project, "--verify", "--steps", "1", "--",
                    sys.executable, "train.py", "--steps", "1", "--device", "cpu", cwd=project)
    assert "warning: the command pins the device (--device cpu)" in out.stderr, out.stderr


MODEL64 = """\
import torch

torch.manual_seed(0)
model = torch.nn.Linear(3, 1).double().cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 3, dtype=torch.float64).cuda()
loss = model(x).pow(2).mean()
loss.backward()
opt.step()
print(float(loss))
"""


def test_verify_refuses_a_rewrite_that_changes_results(dualtrack, tmp_path):
    (tmp_path / "train.py").write_text(MODEL64)
    out = dualtrack("fix", tmp_path, "--unsafe-fixes", "--verify", "--apply", "--",
                    sys.executable, "train.py", cwd=tmp_path)
    assert out.returncode == 1, out.stderr
    assert "not verified" in out.stderr and "nothing written" in out.stderr
    assert (tmp_path / "train.py").read_text() == MODEL64
    # The safe fixes alone (.cuda() -> .to(device)) are proven.
    safe = dualtrack("fix", tmp_path, "--verify", "--", sys.executable, "train.py", cwd=tmp_path)
    assert safe.returncode == 0, safe.stderr
    assert "verified" in safe.stderr


def test_select_fixes_only_those_rules(dualtrack, project):
    out = dualtrack("fix", project, "--select", "DT103")
    assert out.returncode == 1, out.stderr
    changed = [line for line in out.stdout.splitlines() if line.startswith("-") and not line.startswith("---")]
    assert changed and all("synchronize" in line for line in changed), changed


@pytest.mark.parametrize("args, message", [
    (["--verify"], "--verify needs the command"),
    (["--", "python", "train.py"], "only for --verify"),
    (["--diff", "--apply"], "excludes"),
])
def test_usage_errors(dualtrack, project, args, message):
    out = dualtrack("fix", project, *args)
    assert out.returncode == 2
    assert message in out.stderr


def test_a_missing_path_is_an_input_error(dualtrack, tmp_path):
    out = dualtrack("fix", tmp_path / "nope")
    assert out.returncode == 2
    assert "nope" in out.stderr


def test_feature_probes_leave_nothing_to_fix(dualtrack):
    # Field case feature-probe-expression: every CUDA call stands behind its own probe.
    field = Path(__file__).resolve().parents[1] / "scan" / "fixtures" / "field" / "feature-probe-expression"
    r = dualtrack("fix", field)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "" and "would fix 0 findings" in r.stderr
