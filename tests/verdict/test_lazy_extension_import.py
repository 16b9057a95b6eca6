"""An extension imported at the top of a module whose kernels run only behind an option that is
off by default (llm-awq's `import awq_inference_engine` beside the pure-PyTorch search): the import
fails on the Mac, but `dualtrack fix` makes it lazy, so the experiment is mac-ready after the
automatic edits. Called on the default path, the kernel still stops it (issue #35)."""

import json
import subprocess
import sys

SETUP = """\
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(name="quant", ext_modules=[CUDAExtension("quant_kernels", ["gemm.cu"])],
      cmdclass={"build_ext": BuildExtension})
"""

QMODULE = """\
import torch
import quant_kernels  # the CUDA kernels


class QLinear(torch.nn.Module):
    def __init__(self, w):
        super().__init__()
        self.w = w

    def forward(self, x):
        return quant_kernels.gemm(x, self.w)


def fake_quant(w):
    return torch.round(w * 8) / 8
"""

ENTRY = """\
import argparse

import torch

from qmodule import (
    QLinear,
    fake_quant,
)

parser = argparse.ArgumentParser()
parser.add_argument("--real", action="store_true")
args = parser.parse_args()
w = fake_quant(torch.randn(4, 4).cuda())
if args.real:
    w = QLinear(w)
print(w)
"""


def make(root, entry=ENTRY):
    (root / "setup.py").write_text(SETUP)
    (root / "gemm.cu").write_text("__global__ void gemm() {}\n")
    (root / "qmodule.py").write_text(QMODULE)
    (root / "main.py").write_text(entry)


def test_an_unused_extension_import_is_an_automatic_edit(dualtrack, audit_main, tmp_path):
    make(tmp_path)
    exp = audit_main(tmp_path)
    reasons = exp["report"]["reasons"]
    assert exp["verdict"] == "mac-ready", reasons
    assert reasons[0].startswith("mac-ready after `dualtrack fix"), reasons
    assert "qmodule.py:2" in reasons[0] and "main.py:13" in reasons[0], reasons[0]
    # The kernel call stays a finding, guarded: it runs only with --real.
    out = dualtrack("scan", tmp_path, "--entry", "main.py", "--format", "json", "--fail-on", "never")
    found = {(f["file"], f["line"]): f for f in json.loads(out.stdout)["findings"]}
    assert found[("qmodule.py", 2)]["in_import"] and not found[("qmodule.py", 2)]["guarded"]
    assert found[("qmodule.py", 11)]["guarded"] and not found[("qmodule.py", 11)]["in_import"]
    assert found[("main.py", 6)]["in_import"]  # The import's continuation line names QLinear.


def test_the_fixed_module_imports_without_the_extension(dualtrack, tmp_path):
    make(tmp_path)
    out = dualtrack("fix", tmp_path, "--apply")
    assert out.returncode == 0, out.stderr
    fixed = (tmp_path / "qmodule.py").read_text()
    assert "try:\n    import quant_kernels" in fixed
    # Python itself: the module imports, the pure-PyTorch part runs, the kernel call says why not.
    code = ("import sys, torch; sys.path.insert(0, sys.argv[1]); import qmodule;"
            "print(qmodule.fake_quant(torch.ones(2)).tolist());"
            "qmodule.QLinear(torch.ones(2))(torch.ones(2))")
    run = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True)
    assert run.stdout.strip() == "[1.0, 1.0]", run.stderr
    assert "NoneType" in run.stderr and "gemm" in run.stderr


def test_a_kernel_on_the_default_path_still_stops_it(dualtrack, audit_main, tmp_path):
    make(tmp_path, ENTRY.replace("if args.real:\n    w = QLinear(w)", "w = QLinear(w)"))
    exp = audit_main(tmp_path)
    assert exp["verdict"] == "cuda-only", exp["report"]["reasons"]


def test_a_module_that_runs_its_own_kernel_calls_keeps_them(dualtrack, audit_main, tmp_path):
    # The same module, run at import (a script's own call): the use is no lazy one.
    make(tmp_path)
    (tmp_path / "qmodule.py").write_text(QMODULE + "\nLAYER = QLinear(torch.ones(2))(torch.ones(2))\n")
    out = dualtrack("scan", tmp_path, "--entry", "main.py", "--format", "json", "--fail-on", "never")
    found = {(f["file"], f["line"]): f for f in json.loads(out.stdout)["findings"]}
    assert not found[("qmodule.py", 11)]["guarded"]
    assert audit_main(tmp_path)["verdict"] != "mac-ready"
