"""Guards that follow the experiment's path across functions and modules.

A module that the entry reaches only through imports behind a CUDA check (`if x.is_cuda:` with a
fallback, or inside a function this file calls only there) runs only with CUDA on that path: its
findings are guarded for that entry. Reached without a check from another entry, they are not.
"""

import json

KERNELS = """\
try:
    import triton
except ImportError:
    raise RuntimeError("triton import failed")


@triton.jit
def dtw_kernel(x):
    pass
"""

TIMING = """\
import warnings


def dtw_cuda(x):
    from .kernels import dtw_kernel
    dtw_kernel[(1,)](x)
    return x


def dtw(x):
    if x.is_cuda:
        try:
            return dtw_cuda(x)
        except RuntimeError:
            warnings.warn("falling back to the CPU")
    return x
"""


def make_tree(root):
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "kernels.py").write_text(KERNELS)
    (root / "pkg" / "timing.py").write_text(TIMING)
    (root / "transcribe.py").write_text("from pkg.timing import dtw\n\nprint(dtw(1))\n")
    (root / "bench_kernels.py").write_text("from pkg.kernels import dtw_kernel\n\nprint(dtw_kernel)\n")


def scan(dualtrack, root, entry):
    out = dualtrack("scan", root, "--entry", entry, "--format", "json", "--fail-on", "never")
    assert out.returncode == 0, out.stderr
    return {(f["file"], f["line"], f["code"]): f for f in json.loads(out.stdout)["findings"]}


def test_module_reached_only_behind_a_check_is_guarded_on_that_path(dualtrack, tmp_path):
    make_tree(tmp_path)
    found = scan(dualtrack, tmp_path, "transcribe.py")
    required = found[("pkg/kernels.py", 2, "DT210")]
    kernel = found[("pkg/kernels.py", 7, "DT207")]
    for f in (required, kernel):
        assert f["reachable"] is True
        assert f["guarded"] is True and f["severity"] == "portable", f
    # The function that imports it is itself called only under `if x.is_cuda:`.
    assert all(f["guarded"] for (file, _, _), f in found.items() if file == "pkg/timing.py")


def test_an_unchecked_import_from_another_entry_keeps_it_unguarded(dualtrack, tmp_path):
    make_tree(tmp_path)
    found = scan(dualtrack, tmp_path, "bench_kernels.py")
    assert found[("pkg/kernels.py", 2, "DT210")]["guarded"] is False
    assert found[("pkg/kernels.py", 2, "DT210")]["severity"] == "blocker"
    assert found[("pkg/kernels.py", 7, "DT207")]["guarded"] is False


def test_audit_of_the_checked_path_predicts_mac_ready(dualtrack, tmp_path):
    make_tree(tmp_path)
    out = dualtrack("audit", tmp_path, "--entry", "transcribe.py", "--format", "json",
                    "-o", tmp_path / "r" / "report.html")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert [e["verdict"] for e in doc["experiments"]] == ["mac-ready"]


def make_suite(root):
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "kernels.py").write_text(KERNELS)
    (root / "pkg" / "timing.py").write_text(TIMING)
    (root / "tests").mkdir()
    (root / "tests" / "test_cpu.py").write_text(
        "from pkg.timing import dtw\n\n\ndef test_dtw():\n    assert dtw(1) == 1\n")
    # One member of the suite calls the kernel module directly: it needs CUDA.
    (root / "tests" / "test_kernels.py").write_text(
        "from pkg.kernels import dtw_kernel\n\n\ndef test_kernel():\n    dtw_kernel[(1,)](1)\n")


def test_a_folder_entry_is_a_test_suite(dualtrack, tmp_path):
    make_suite(tmp_path)
    found = scan(dualtrack, tmp_path, "tests")
    assert any(f == "tests/test_kernels.py" for f, _, _ in found)
    # The suite: one member must be deselected on the Mac, the rest runs there.
    out = dualtrack("audit", tmp_path, "--entry", "tests", "--entry", "tests/test_cpu.py",
                    "--format", "json", "-o", tmp_path / "r" / "report.html")
    assert out.returncode == 0, out.stderr
    verdicts = {e["entry"]: e["verdict"] for e in json.loads(out.stdout)["experiments"]}
    assert verdicts == {"tests": "dev-only", "tests/test_cpu.py": "mac-ready"}


def test_an_entry_that_is_neither_file_nor_folder_is_refused(dualtrack, tmp_path):
    make_suite(tmp_path)
    out = dualtrack("audit", tmp_path, "--entry", "nope", "--format", "json")
    assert out.returncode == 2
    assert "no such file or folder" in out.stderr and "nope" in out.stderr


OPTIONAL_MLP = """\
import torch.nn as nn

fused_mlp_func = None
try:
    from flash_attn.ops.fused_dense import fused_mlp_func
except ImportError:
    pass


class FFN(nn.Module):
    def __init__(self, dim, fused_if_available=True):
        super().__init__()
        self.fused_mlp_func = fused_mlp_func if fused_if_available else None
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        if self.fused_mlp_func is not None:
            return self.fused_mlp_func(x, self.fc.weight)
        return self.fc(x)


def always_fused(x, w):
    return fused_mlp_func(x, w)
"""


def test_an_optional_import_handed_on_as_a_value_runs_nothing(dualtrack, tmp_path):
    # VAR's blocks keep the optional flash-attn function in an attribute and call it only behind
    # `is not None`: the hand-off runs nothing of the library, the unchecked call does.
    (tmp_path / "blocks.py").write_text(OPTIONAL_MLP)
    (tmp_path / "train.py").write_text(
        "import torch\nfrom blocks import FFN\n\nprint(FFN(4)(torch.randn(2, 4)))\n")
    found = scan(dualtrack, tmp_path, "train.py")
    assert found[("blocks.py", 13, "DT202")]["guarded"] is True
    assert found[("blocks.py", 23, "DT202")]["guarded"] is False
    out = dualtrack("audit", tmp_path, "--entry", "train.py", "--format", "json")
    report = json.loads(out.stdout)
    report = report["experiments"][0]["report"] if "experiments" in report else report
    assert report["verdict"] == "mac-ready"
