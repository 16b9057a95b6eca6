"""Every statistic of `dualtrack compare`, checked against NumPy in float64, over files written by
the real libraries (torch.save, safetensors, numpy.save / savez / savez_compressed)."""

import json

import numpy as np
import pytest
import torch
from safetensors.numpy import save_file as np_save_file
from safetensors.torch import save_file as torch_save_file

from helpers import close, reference_stats

DEFAULTS = {  # torch.testing.assert_close: (rtol, atol)
    "float64": (1e-7, 1e-7),
    "float32": (1.3e-6, 1e-5),
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
}


def compare_json(dualtrack, a, b, *extra):
    r = dualtrack("compare", a, b, "--format", "json", *extra)
    assert r.returncode in (0, 1), r.stderr
    return r, json.loads(r.stdout)


def by_name(report):
    return {t["name"]: t for t in report["tensors"]}


def check_against_numpy(t, a, b, atol, rtol, ulp_dtype, rule="allclose"):
    ref = reference_stats(a, b, atol, rtol, ulp_dtype, rule)
    assert t["finite_pairs"] == ref["finite_pairs"]
    for key in ["max_abs", "mean_abs", "rmse", "max_rel", "mean_rel", "min_passing_atol"]:
        got = float("inf") if key == "max_rel" and t["max_rel_infinite"] else t[key]
        assert close(got, ref[key], rel=1e-9), (key, got, ref[key])
    for key in ["n_outside", "equal", "nan_a", "nan_b", "inf_a", "inf_b", "nan_mismatch"]:
        assert t[key] == ref[key], (key, t[key], ref[key])
    assert close(t["cosine"], ref["cosine"], rel=1e-9)
    assert close(t["pearson"], ref["pearson"], rel=1e-7)
    flat = np.ravel_multi_index(tuple(t["max_abs_index"]), np.shape(a)) if np.ndim(a) else 0
    with np.errstate(invalid="ignore"):
        e = np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).ravel()
    e[~np.isfinite(e)] = -1
    assert e[flat] == ref["max_abs"]
    for s in ["stats_a", "stats_b"]:
        for k in ["min", "max", "mean"]:
            assert close(t[s][k], ref[s][k], rel=1e-12, abs_=1e-15), (s, k)
        assert close(t[s]["std"], ref[s]["std"], rel=1e-9, abs_=1e-15), (s, "std")
    hist = t["histogram"]
    got = {edge: count for edge, count in zip(hist["log10_edges"], hist["counts"]) if count}
    assert got == ref["histogram"]
    assert hist["zero"] == ref["histogram_zero"]
    if ulp_dtype:
        assert t["max_ulp"] == ref["max_ulp"]
    else:
        assert t["max_ulp"] is None
    assert t["frac_outside"] == pytest.approx(ref["n_outside"] / np.size(a))


def perturbed(rng, shape, dtype):
    base = torch.from_numpy(rng.standard_normal(shape)).to(dtype)
    noise = torch.from_numpy(rng.standard_normal(shape) * 1e-3).to(dtype)
    other = (base.double() * (1 + noise.double())).to(dtype)
    other.view(-1)[::7] = base.view(-1)[::7]  # Some exactly equal elements.
    return base, other


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
@pytest.mark.parametrize("writer", ["safetensors", "torch"])
def test_float_statistics_match_numpy(dualtrack, tmp_path, dtype, writer):
    rng = np.random.default_rng(1)
    tdt = getattr(torch, dtype)
    a, b = perturbed(rng, (37, 53), tdt)
    c, d = perturbed(rng, (5000,), tdt)
    if writer == "safetensors":
        torch_save_file({"x": a, "y": c}, tmp_path / "a.safetensors")
        torch_save_file({"x": b, "y": d}, tmp_path / "b.safetensors")
        pa, pb = tmp_path / "a.safetensors", tmp_path / "b.safetensors"
    else:
        torch.save({"x": a, "nested": {"y": [c]}}, tmp_path / "a.pt")
        torch.save({"x": b, "nested": {"y": [d]}}, tmp_path / "b.pt")
        pa, pb = tmp_path / "a.pt", tmp_path / "b.pt"
    r, rep = compare_json(dualtrack, pa, pb)
    t = by_name(rep)
    rtol, atol = DEFAULTS[dtype]
    yname = "y" if writer == "safetensors" else "nested.y.0"
    for name, x, y in [("x", a, b), (yname, c, d)]:
        tt = t[name]
        assert tt["dtype_a"] == dtype and tt["atol"] == atol and tt["rtol"] == rtol
        check_against_numpy(tt, x.double().numpy(), y.double().numpy(), atol, rtol, dtype)
    assert rep["verdict"] == ("fail" if rep["n_fail"] else "pass")
    assert r.returncode == (1 if rep["n_fail"] else 0)


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8", "bool"])
def test_integer_and_bool_statistics_match_numpy(dualtrack, tmp_path, dtype):
    rng = np.random.default_rng(2)
    if dtype == "bool":
        a = rng.random(1000) > 0.5
        b = a.copy()
        b[::9] = ~b[::9]
    else:
        info = np.iinfo(dtype)
        a = rng.integers(max(info.min, -100), min(info.max, 100), size=(10, 100)).astype(dtype)
        b = a.copy()
        b[3, ::5] += 1
    np_save_file({"v": a}, str(tmp_path / "a.safetensors"))
    np.save(tmp_path / "v.npy", b)
    r, rep = compare_json(dualtrack, tmp_path / "a.safetensors", tmp_path / "v.npy")
    t = by_name(rep)["v"]
    assert t["atol"] == 0 and t["rtol"] == 0
    check_against_numpy(t, a, b, 0.0, 0.0, None)
    assert t["status"] == "fail" and r.returncode == 1
    r, rep = compare_json(dualtrack, tmp_path / "a.safetensors", tmp_path / "a.safetensors")
    assert rep["verdict"] == "pass" and r.returncode == 0


def test_mixed_dtypes_take_the_larger_tolerance_and_coarser_ulp(dualtrack, tmp_path):
    rng = np.random.default_rng(3)
    ref = rng.standard_normal(4096)
    test = ref.astype(np.float32)
    np.save(tmp_path / "t.npy", test)
    np.save(tmp_path / "r.npy", ref)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    np.savez(tmp_path / "a" / "m.npz", t=test)
    np.savez(tmp_path / "b" / "m.npz", t=ref)
    _, rep = compare_json(dualtrack, tmp_path / "a" / "m.npz", tmp_path / "b" / "m.npz")
    t = by_name(rep)["t"]
    assert (t["dtype_a"], t["dtype_b"]) == ("float32", "float64")
    assert (t["rtol"], t["atol"]) == (1.3e-6, 1e-5)
    check_against_numpy(t, test, ref, 1e-5, 1.3e-6, "float32")
    assert t["max_ulp"] == 0  # Rounding the float64 reference to float32 gives the same values.
    assert t["status"] == "pass"


def test_nan_and_inf_counts_and_positions(dualtrack, tmp_path):
    a = np.linspace(-1, 1, 64)
    b = a.copy()
    a[[1, 2, 3]] = np.nan
    b[[2, 3, 4]] = np.nan
    a[10], b[10] = np.inf, np.inf
    a[11], b[11] = -np.inf, 1.0
    b[12] = np.inf
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    _, rep = compare_json(dualtrack, tmp_path / "a.npy", tmp_path / "b.npy")
    t = rep["tensors"][0]
    check_against_numpy(t, a, b, 1e-7, 1e-7, "float64")
    assert (t["nan_a"], t["nan_b"], t["nan_mismatch"]) == (3, 3, 2)
    assert (t["posinf_a"], t["neginf_a"], t["posinf_b"], t["neginf_b"]) == (1, 1, 2, 0)
    assert t["n_outside"] == 7
    _, rep = compare_json(dualtrack, tmp_path / "a.npy", tmp_path / "b.npy", "--equal-nan", "--inf-equal")
    assert rep["tensors"][0]["n_outside"] == 4  # Two NaN pairs and one inf pair now pass.


def test_fortran_order_and_big_endian_npy_match_c_order(dualtrack, tmp_path):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((7, 11, 3))
    b = a + rng.standard_normal(a.shape) * 1e-9
    np.save(tmp_path / "a.npy", np.asfortranarray(a))
    np.save(tmp_path / "b.npy", b.astype(">f8"))
    _, rep = compare_json(dualtrack, tmp_path / "a.npy", tmp_path / "b.npy")
    t = rep["tensors"][0]
    assert t["shape"] == [7, 11, 3]
    check_against_numpy(t, a, b, 1e-7, 1e-7, "float64")
    # Both Fortran, compressed: read in storage order, index still reported in C terms.
    np.savez_compressed(tmp_path / "a.npz", a=np.asfortranarray(a))
    np.savez_compressed(tmp_path / "b.npz", a=np.asfortranarray(b).astype(">f8"))
    _, rep = compare_json(dualtrack, tmp_path / "a.npz", tmp_path / "b.npz")
    check_against_numpy(rep["tensors"][0], a, b, 1e-7, 1e-7, "float64")


def test_npz_stored_and_deflated_and_multithreaded_blocks(dualtrack, tmp_path):
    rng = np.random.default_rng(5)
    a = rng.standard_normal(300_001).astype(np.float32)
    b = (a * (1 + rng.standard_normal(a.size) * 1e-6)).astype(np.float32)
    np.savez(tmp_path / "a.npz", big=a, small=a[:5])
    np.savez_compressed(tmp_path / "b.npz", big=b, small=b[:5])
    for threads in ["1", "2", "3"]:
        _, rep = compare_json(dualtrack, tmp_path / "a.npz", tmp_path / "b.npz", "--threads", threads)
        t = by_name(rep)
        check_against_numpy(t["big"], a, b, 1e-5, 1.3e-6, "float32")
        check_against_numpy(t["small"], a[:5], b[:5], 1e-5, 1.3e-6, "float32")
    torch.save({"big": torch.from_numpy(a)}, tmp_path / "a.pt")
    torch_save_file({"big": torch.from_numpy(b)}, tmp_path / "b.safetensors")
    _, rep = compare_json(dualtrack, tmp_path / "a.pt", tmp_path / "b.safetensors")
    check_against_numpy(by_name(rep)["big"], a, b, 1e-5, 1.3e-6, "float32")


def test_non_contiguous_torch_views(dualtrack, tmp_path):
    base = torch.randn(20, 30, dtype=torch.float64)
    views = {"t": base.t(), "s": base[2:9:2, 5:], "e": base.expand(3, 20, 30)[1]}
    torch.save(views, tmp_path / "a.pt")
    ref = {k: (v.contiguous() + 1e-9) for k, v in views.items()}
    torch_save_file(ref, tmp_path / "b.safetensors")
    _, rep = compare_json(dualtrack, tmp_path / "a.pt", tmp_path / "b.safetensors")
    t = by_name(rep)
    for k, v in views.items():
        check_against_numpy(t[k], v.numpy(), ref[k].numpy(), 1e-7, 1e-7, "float64")
        assert t[k]["shape"] == list(v.shape)


def test_rule_either_and_statistic_checks(dualtrack, tmp_path):
    rng = np.random.default_rng(6)
    b = rng.standard_normal(10_000)
    a = b.copy()
    a[:50] += 1.0  # 0.5 % of elements far off, the rest exact.
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    tol = ["--atol", "1e-3", "--rtol", "1e-3"]
    _, rep = compare_json(dualtrack, tmp_path / "a.npy", tmp_path / "b.npy", *tol, "--rule", "either")
    t = rep["tensors"][0]
    check_against_numpy(t, a, b, 1e-3, 1e-3, "float64", rule="either")
    assert t["status"] == "fail"
    results = {}
    for check in ["max", "mean", "median", "p99"]:
        r, rep = compare_json(dualtrack, tmp_path / "a.npy", tmp_path / "b.npy", *tol, "--check", check)
        results[check] = rep["tensors"][0]["status"]
        assert r.returncode == (0 if results[check] == "pass" else 1)
    # max fails; mean of |a-b| - rtol|b| is 0.005 - 0.0008 > 1e-3; the median and p99 are tiny.
    assert results == {"max": "fail", "mean": "fail", "median": "pass", "p99": "pass"}
    _, rep = compare_json(dualtrack, tmp_path / "a.npy", tmp_path / "b.npy", "--atol", "0.01", "--check", "mean")
    assert rep["tensors"][0]["status"] == "pass"


def test_names_only_map_missing_and_shape_mismatch(dualtrack, tmp_path):
    a = {"enc.w": torch.ones(3), "enc.b": torch.zeros(2), "head": torch.ones(4), "extra": torch.ones(1)}
    b = {"encoder.w": torch.ones(3), "encoder.b": torch.zeros(2), "head": torch.ones(2, 2), "new": torch.ones(1)}
    torch_save_file(a, tmp_path / "a.safetensors")
    torch_save_file(b, tmp_path / "b.safetensors")
    r, rep = compare_json(dualtrack, tmp_path / "a.safetensors", tmp_path / "b.safetensors", "--map", "enc.*=encoder.*")
    st = {t["name"]: t["status"] for t in rep["tensors"]}
    assert st == {"encoder.w": "pass", "encoder.b": "pass", "head": "shape_mismatch", "extra": "missing_b",
                  "new": "missing_a"}
    assert rep["verdict"] == "fail" and r.returncode == 1
    assert rep["tensors"][0]["name"] == "head"  # Worst first.
    r, rep = compare_json(dualtrack, tmp_path / "a.safetensors", tmp_path / "b.safetensors",
                          "--map", "enc.*=encoder.*", "--only", "encoder.*")
    assert {t["name"] for t in rep["tensors"]} == {"encoder.w", "encoder.b"}
    assert rep["verdict"] == "pass" and r.returncode == 0
    r = dualtrack("compare", tmp_path / "a.safetensors", tmp_path / "b.safetensors", "--only", "nothing*")
    assert r.returncode == 2 and r.stdout == ""
    assert "--only nothing* selects none of the 4 tensors of A and 4 of B" in r.stderr
    assert "enc.b" in r.stderr  # Names to correct the pattern with.
    torch_save_file({"x": torch.ones(2)}, tmp_path / "c.safetensors")
    torch_save_file({"y": torch.ones(2), "z": torch.ones(1)}, tmp_path / "d.safetensors")
    r, rep = compare_json(dualtrack, tmp_path / "c.safetensors", tmp_path / "d.safetensors")
    assert rep["verdict"] == "fail" and r.returncode == 1
    assert "no tensor name in common (1 only in A, 2 only in B; --map OLD=NEW" in rep["summary"]


def test_tolerance_file_overrides_per_tensor(dualtrack, tmp_path):
    b = np.ones(100, dtype=np.float32)
    a = b + np.float32(1e-3)
    np.savez(tmp_path / "a.npz", grad=a, out=a)
    np.savez(tmp_path / "b.npz", grad=b, out=b)
    (tmp_path / "tol.toml").write_text('[default]\natol = 1e-6\n\n[[tensor]]\nname = "gr*"\natol = 1e-2\n')
    _, rep = compare_json(dualtrack, tmp_path / "a.npz", tmp_path / "b.npz", "--tolerances", tmp_path / "tol.toml")
    t = by_name(rep)
    assert (t["grad"]["status"], t["grad"]["atol"]) == ("pass", 1e-2)
    assert (t["out"]["status"], t["out"]["atol"]) == ("fail", 1e-6)
    (tmp_path / "bad.toml").write_text('[[tensor]]\nname = "x"\nrule = "sometimes"\n')
    r = dualtrack("compare", tmp_path / "a.npz", tmp_path / "b.npz", "--tolerances", tmp_path / "bad.toml")
    assert r.returncode == 2 and "bad.toml:1" in r.stderr and "rule must be" in r.stderr


def test_text_and_markdown_outputs(dualtrack, tmp_path):
    b = np.zeros(10)
    a = b.copy()
    a[3] = 0.5
    np.savez(tmp_path / "a.npz", bad=a, good=b)
    np.savez(tmp_path / "b.npz", bad=b, good=b)
    r = dualtrack("compare", tmp_path / "a.npz", tmp_path / "b.npz")
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    header = next(i for i, l in enumerate(lines) if l.startswith("status"))
    assert lines[header + 1].startswith("FAIL") and " bad " in lines[header + 1]
    assert lines[header + 2].startswith("ok") and " good " in lines[header + 2]
    assert lines[-1] == "FAIL: 1 of 2 tensors within tolerance; worst bad (fail), max |a-b| 0.5 at [3], 1 outside"
    out = tmp_path / "report.md"
    r = dualtrack("compare", tmp_path / "a.npz", tmp_path / "b.npz", "--format", "markdown", "-o", out)
    assert r.returncode == 1 and r.stdout == ""
    md = out.read_text()
    assert "| status | tensor |" in md and "| FAIL | bad |" in md and "**FAIL: 1 of 2" in md


def test_passing_tensors_are_listed_largest_error_first(dualtrack, tmp_path):
    b = np.linspace(1.0, 2.0, 64)
    exact, small, smaller = b.copy(), b * (1 + 2e-9), b * (1 + 1e-9)
    small_abs = b.copy()
    small_abs[0] += 1e-12  # One tiny error: still above the exact tensor.
    np.savez(tmp_path / "a.npz", exact=exact, smaller=smaller, zabs=small_abs, small=small)
    np.savez(tmp_path / "b.npz", exact=b, smaller=b, zabs=b, small=b)
    r = dualtrack("compare", tmp_path / "a.npz", tmp_path / "b.npz", "--format", "json")
    assert r.returncode == 0, r.stderr
    names = [t["name"] for t in json.loads(r.stdout)["tensors"]]
    assert names == ["small", "smaller", "zabs", "exact"]


def test_float8_and_uint16_through_torch_save_v3_and_safetensors(dualtrack, tmp_path):
    x = torch.randn(1000, generator=torch.Generator().manual_seed(7))
    y = x * 1.05
    dtypes = {"e4": torch.float8_e4m3fn, "e5": torch.float8_e5m2}
    torch.save({k: y.to(d) for k, d in dtypes.items()} | {"u": torch.arange(7).to(torch.uint16)},
               tmp_path / "a.pt")  # Written with _rebuild_tensor_v3 and untyped storages.
    torch_save_file({k: x.to(d) for k, d in dtypes.items()} | {"u": torch.arange(7).to(torch.uint16)},
                    tmp_path / "b.safetensors")
    _, rep = compare_json(dualtrack, tmp_path / "a.pt", tmp_path / "b.safetensors")
    t = by_name(rep)
    for k, d in dtypes.items():
        rtol = 6.25e-2 if k == "e4" else 1.25e-1
        check_against_numpy(t[k], y.to(d).double().numpy(), x.to(d).double().numpy(), 1e-5, rtol, None)
    assert t["u"]["status"] == "pass" and t["u"]["dtype_a"] == "uint16"
