"""In-process parts of the tracer: PyTorch's MPS message parsers, float64 detection, the
safetensors writer (checked with the real safetensors library) and the MPS kernel query."""

import json

import pytest
import torch
from safetensors.torch import load_file

from dualtrack import _messages, _safetensors, _session

# The exact texts PyTorch builds in aten/src/ATen/mps/MPSFallback.mm (mps_fallback and
# mps_error_fallback), as users see them.
FALLBACK_WARNING = (
    "The operator 'aten::sgn.out' is not currently supported on the MPS backend and will fall back "
    "to run on the CPU. This may have performance implications. (Triggered internally at "
    "/Users/runner/work/pytorch/pytorch/pytorch/aten/src/ATen/mps/MPSFallback.mm:13.)")
NOT_IMPLEMENTED = (
    "The operator 'aten::multi_margin_loss' is not currently implemented for the MPS device. If you "
    "want this op to be considered for addition please comment on "
    "https://github.com/pytorch/pytorch/issues/141287 and mention use-case, that resulted in missing "
    "op as well as commit hash 5bd4a5b3e0b44e5f5ec6a3c2e0b3b6c3b7d5c1a2. As a temporary fix, you can "
    "set the environment variable `PYTORCH_ENABLE_MPS_FALLBACK=1` to use the CPU as a fallback for "
    "this op. WARNING: this will be slower than running natively on MPS.")
# The wording of PyTorch 2.0-2.4, before the issue link changed.
NOT_IMPLEMENTED_OLD = (
    "The operator 'aten::_linalg_eigh.eigenvalues' is not currently implemented for the MPS device. "
    "If you want this op to be added in priority during the prototype phase of this feature, please "
    "comment on https://github.com/pytorch/pytorch/issues/77764.")


def test_fallback_warning_names_the_operator_with_overload():
    assert _messages.parse_fallback_warning(FALLBACK_WARNING) == "aten::sgn.out"


def test_fallback_warning_parser_inside_a_python_warning_line():
    line = f"/x/train.py:10: UserWarning: {FALLBACK_WARNING}\n  y = x.sign()"
    assert _messages.parse_fallback_warning(line) == "aten::sgn.out"


def test_not_implemented_error_names_the_operator():
    assert _messages.parse_not_implemented_error(NOT_IMPLEMENTED) == "aten::multi_margin_loss"
    assert _messages.parse_not_implemented_error(NOT_IMPLEMENTED_OLD) == \
        "aten::_linalg_eigh.eigenvalues"


@pytest.mark.parametrize("text", [
    "", "The operator '' is not", "operator 'aten::x' is not currently supported on the CUDA backend",
    "The operator aten::sgn is not currently supported on the MPS backend and will fall back to run on "
    "the CPU.", "\x00\xff garbage", "The operator 'aten::sgn.out' is not currently implemented for "
    "the CUDA device"])
def test_parsers_reject_other_texts(text):
    assert _messages.parse_fallback_warning(text) is None
    assert _messages.parse_not_implemented_error(text) is None


def test_parsers_do_not_confuse_the_two_messages():
    assert _messages.parse_fallback_warning(NOT_IMPLEMENTED) is None
    assert _messages.parse_not_implemented_error(FALLBACK_WARNING) is None


def test_operator_name_drops_default_overload():
    assert _messages.operator_name("aten::add", "Tensor") == "aten::add.Tensor"
    assert _messages.operator_name("aten::mm", "") == "aten::mm"
    assert _messages.operator_name("aten::mm", "default") == "aten::mm"


def test_mps_kernel_query_uses_dispatcher_keys():
    kernels = {("aten::add.Tensor", "MPS"), ("aten::zeros_like", "CompositeExplicitAutograd")}
    fake = lambda name, key: (name, key) in kernels  # noqa: E731
    assert _messages.mps_has_kernel("aten::add.Tensor", fake)
    assert _messages.mps_has_kernel("aten::zeros_like", fake)
    assert not _messages.mps_has_kernel("aten::multi_margin_loss", fake)
    # Registered for MPS but routed to the CPU by MPSFallback.mm itself.
    assert not _messages.mps_has_kernel("aten::linalg_svd", lambda n, k: True)


def test_mps_kernel_query_against_real_dispatcher():
    # The CPU build registers no MPS kernels but does have composite ones.
    assert _messages.mps_has_kernel("aten::zeros_like")
    assert not _messages.mps_has_kernel("aten::multi_margin_loss")


def test_is_float64():
    assert _messages.is_float64(torch.float64)
    assert _messages.is_float64(torch.complex128)
    assert _messages.is_float64("float64")
    for d in (torch.float32, torch.float16, torch.bfloat16, torch.int64, "float32"):
        assert not _messages.is_float64(d)


def _session_in(tmp_path, steps=1):
    return _session.Session({"bundle": str(tmp_path), "steps": steps})


def test_recorder_detects_float64_with_location(tmp_path):
    s = _session_in(tmp_path)
    rec = _session._make_recorder(s)
    with rec:
        a = torch.ones(3)
        b = (a > 0).to(torch.float64)  # float64 created here
        c = b.mean()
        d = a * 2
    assert c.dtype == torch.float64 and d.dtype == torch.float32
    ops = {(r["op"], tuple(r["dtypes"])) for r in s.ops.values()}
    assert ("aten::mul", ("float32",)) in ops
    f64 = {f["op"] for f in s.float64}
    assert {"aten::_to_copy", "aten::mean"} <= f64
    assert "aten::mul" not in f64
    to_copy = next(f for f in s.float64 if f["op"] == "aten::_to_copy")
    assert to_copy["file"].endswith("test_parsers.py")
    assert to_copy["line"] > 0


def test_recorder_counts_calls_and_keeps_first_location(tmp_path):
    s = _session_in(tmp_path)
    rec = _session._make_recorder(s)
    x = torch.randn(4, 4)
    with rec:
        for _ in range(5):
            torch.mm(x, x)
    rows = [r for r in s.ops.values() if r["op"] == "aten::mm"]
    assert len(rows) == 1 and rows[0]["count"] == 5
    assert rows[0]["location"]["function"] == "test_recorder_counts_calls_and_keeps_first_location"


def test_recorder_marks_failed_ops_and_reraises(tmp_path):
    s = _session_in(tmp_path)
    rec = _session._make_recorder(s)
    with rec, pytest.raises(RuntimeError):
        torch.mm(torch.ones(2, 3), torch.ones(2, 3))
    failed = [r for r in s.ops.values() if r["status"] == "failed"]
    assert failed and failed[0]["op"] == "aten::mm"
    assert "mat1 and mat2" in failed[0]["error"]


def test_fallback_warning_marks_mps_rows(tmp_path):
    s = _session_in(tmp_path)
    s.ops["k"] = {"op": "aten::sgn", "overload": "out", "device": "mps", "dtypes": ["float32"],
                  "count": 1, "location": None, "status": "ok", "error": None,
                  "name": "aten::sgn.out"}
    import io
    import warnings

    saved = warnings.showwarning
    try:
        _session._install_warning_hook(s)
        warnings.showwarning(FALLBACK_WARNING, UserWarning, "x.py", 1, file=io.StringIO())
    finally:
        warnings.showwarning = saved
    s.flush(final=True)
    row = json.loads((tmp_path / "ops.jsonl").read_text().splitlines()[0])
    assert row["status"] == "fallback"
    assert "name" not in row


def test_safetensors_writer_is_read_by_the_real_library(tmp_path):
    tensors = {
        "f32": torch.randn(3, 4),
        "f64": torch.randn(2, dtype=torch.float64),
        "bf16": torch.randn(5).to(torch.bfloat16),
        "f16": torch.randn(2, 2).half(),
        "i64": torch.arange(7),
        "bool": torch.tensor([True, False, True]),
        "u8": torch.tensor([1, 255], dtype=torch.uint8),
        "scalar": torch.tensor(2.5),
        "strided": torch.randn(4, 6).t(),
        "empty": torch.zeros(0, 3),
        "c64": torch.randn(3, dtype=torch.complex64),
        "u16": torch.tensor([1, 65535], dtype=torch.uint16),
        "fp8": torch.randn(4).to(torch.float8_e4m3fn),
        "fp8_fnuz": torch.randn(4).to(torch.float8_e5m2fnuz),
    }
    path = tmp_path / "t.safetensors"
    _safetensors.save(tensors, str(path), {"producer": "test"})
    back = load_file(str(path))
    assert set(back) == set(tensors)
    for k, v in tensors.items():
        assert back[k].dtype == v.dtype, k
        assert back[k].shape == v.shape, k
        if v.dtype in (torch.float8_e4m3fn, torch.float8_e5m2fnuz):  # No torch.equal for float8.
            assert torch.equal(back[k].view(torch.uint8), v.view(torch.uint8)), k
        else:
            assert torch.equal(back[k], v), k
    assert not list(tmp_path.glob("*.tmp*"))
    # complex128, which the format lacks, is kept as float64 pairs, not narrowed.
    z = torch.randn(2, 3, dtype=torch.complex128)
    _safetensors.save({"z": z}, str(path))
    back = load_file(str(path))["z"]
    assert back.dtype == torch.float64 and torch.equal(torch.view_as_complex(back), z)


def test_safetensors_writer_header_is_aligned(tmp_path):
    path = tmp_path / "t.safetensors"
    _safetensors.save({"a": torch.ones(3)}, str(path))
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    assert n % 8 == 0
    header = json.loads(raw[8:8 + n])
    assert header["a"] == {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}
