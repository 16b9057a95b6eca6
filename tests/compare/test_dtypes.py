"""The dtypes past the common floats: complex64 / complex128 (safetensors, npy, npz, torch.save),
the float8 FNUZ and E8M0 formats, and the packed sub-byte floats F4 and F6. Every code is checked
against PyTorch's decoding, every statistic against NumPy (complex128 for complex pairs)."""

import json
import math

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

import lowp
from helpers import close, reference_complex_stats
from test_statistics import by_name, check_against_numpy, compare_json

FLOAT8 = {  # torch dtype name → (safetensors name, default rtol: half an ULP at 1.0)
    "float8_e4m3fnuz": ("F8_E4M3FNUZ", 6.25e-2),
    "float8_e5m2fnuz": ("F8_E5M2FNUZ", 1.25e-1),
    "float8_e8m0fnu": ("F8_E8M0", 0.5),
}
SUB_BYTE = {  # safetensors name → (dualtrack's dtype name, bits, default rtol)
    "F4": ("float4_e2m1fn", 4, 0.25),
    "F6_E2M3": ("float6_e2m3fn", 6, 6.25e-2),
    "F6_E3M2": ("float6_e3m2fn", 6, 0.125),
}


def header(path):
    raw = open(path, "rb").read()
    n = int.from_bytes(raw[:8], "little")
    return json.loads(raw[8 : 8 + n])


def assert_decodes(t, ref):
    """The tensor compared with torch's float64 values of the same codes: all equal, NaN where
    torch has NaN."""
    nans = int(np.isnan(ref).sum())
    assert t["equal"] == ref.size - nans, t
    assert (t["nan_a"], t["nan_b"], t["nan_mismatch"]) == (nans, nans, 0)
    assert t["max_abs"] == 0.0 and t["finite_pairs"] == ref.size - nans


@pytest.mark.parametrize("name", list(FLOAT8))
def test_float8_every_code_equals_torch(dualtrack, tmp_path, name):
    dtype = getattr(torch, name)
    x = torch.arange(256, dtype=torch.uint8).view(dtype)
    ref = x.to(torch.float32).double().numpy()  # torch's value of each of the 256 codes
    assert int(np.isnan(ref).sum()) == 1  # 0x80 (FNUZ) or 0xff (E8M0)
    save_file({"x": x}, tmp_path / "a.safetensors")
    assert header(tmp_path / "a.safetensors")["x"]["dtype"] == FLOAT8[name][0]
    torch.save({"x": x}, tmp_path / "a.pt")  # _rebuild_tensor_v3, an untyped storage
    np.save(tmp_path / "x.npy", ref)
    for src in ["a.safetensors", "a.pt"]:
        r, rep = compare_json(dualtrack, tmp_path / src, tmp_path / "x.npy", "--atol", "0", "--rtol", "0")
        t = rep["tensors"][0]
        assert (t["dtype_a"], t["dtype_b"]) == (name, "float64")
        assert_decodes(t, ref)
        assert t["n_outside"] == 1 and r.returncode == 1  # The NaN pair, without --equal-nan.
        r, rep = compare_json(dualtrack, tmp_path / src, tmp_path / "x.npy", "--equal-nan")
        assert rep["tensors"][0]["status"] == "pass" and r.returncode == 0


def test_float8_statistics_and_default_tolerances(dualtrack, tmp_path):
    x = torch.randn(3000, generator=torch.Generator().manual_seed(11))
    y = x * 1.07
    x[5] = y[9] = float("nan")  # FNUZ NaN: code 0x80 (E8M0: 0xff)
    a, b = {}, {}
    for name in FLOAT8:
        d = getattr(torch, name)
        src_a, src_b = (y.abs(), x.abs()) if name == "float8_e8m0fnu" else (y, x)  # E8M0 is unsigned.
        a[name], b[name] = src_a.to(d), src_b.to(d)
    torch.save(a, tmp_path / "a.pt")
    save_file(b, tmp_path / "b.safetensors")
    r, rep = compare_json(dualtrack, tmp_path / "a.pt", tmp_path / "b.safetensors")
    t = by_name(rep)
    for name, (_, rtol) in FLOAT8.items():
        assert (t[name]["rtol"], t[name]["atol"]) == (rtol, 1e-5)
        va, vb = a[name].double().numpy(), b[name].double().numpy()
        check_against_numpy(t[name], va, vb, 1e-5, rtol, None)  # max_ulp: null for 8-bit floats
        assert t[name]["nan_a"] == 1 and t[name]["nan_b"] == 1 and t[name]["nan_mismatch"] == 2


def test_float4_every_code_and_the_nibble_order_equal_torch(dualtrack, tmp_path):
    rng = np.random.default_rng(12)
    codes = rng.permutation(np.repeat(np.arange(16, dtype=np.uint8), 8))  # 128 elements
    x = lowp.float4_x2(codes)  # torch's own packing: element 2k in the low nibble of byte k
    assert list(x.shape) == [64]
    save_file({"x": x}, tmp_path / "a.safetensors")
    h = header(tmp_path / "a.safetensors")["x"]
    assert (h["dtype"], h["shape"], h["data_offsets"]) == ("F4", [128], [0, 64])  # shape counts nibbles
    ref = lowp.decode(codes, "F4")
    assert sorted(set(np.abs(ref))) == [0, 0.5, 1, 1.5, 2, 3, 4, 6]
    # The check can tell the nibble orders apart: swapping each pair changes the values.
    assert not np.array_equal(ref, lowp.decode(codes.reshape(-1, 2)[:, ::-1].ravel(), "F4"))
    np.save(tmp_path / "x.npy", ref)
    r, rep = compare_json(dualtrack, tmp_path / "a.safetensors", tmp_path / "x.npy", "--atol", "0", "--rtol", "0")
    t = rep["tensors"][0]
    assert (t["dtype_a"], t["shape"]) == ("float4_e2m1fn", [128])
    assert_decodes(t, ref)
    assert t["status"] == "pass" and r.returncode == 0


@pytest.mark.parametrize("dtype", ["F6_E2M3", "F6_E3M2"])
def test_float6_every_code_equals_torch_reference(dualtrack, tmp_path, dtype):
    rng = np.random.default_rng(13)
    codes = rng.permutation(np.repeat(np.arange(64, dtype=np.uint8), 4))  # 256 elements, 192 bytes
    lowp.write_safetensors(tmp_path / "a.safetensors", {"x": (dtype, [16, 16], lowp.pack_bits(codes, 6))})
    ref = lowp.decode(codes, dtype)
    assert np.nanmax(np.abs(ref)) == (7.5 if dtype == "F6_E2M3" else 28.0)
    np.save(tmp_path / "x.npy", ref.reshape(16, 16))
    r, rep = compare_json(dualtrack, tmp_path / "a.safetensors", tmp_path / "x.npy", "--atol", "0", "--rtol", "0")
    t = rep["tensors"][0]
    assert t["dtype_a"] == SUB_BYTE[dtype][0]
    assert_decodes(t, ref)
    assert r.returncode == 0


@pytest.mark.parametrize("dtype", list(SUB_BYTE))
def test_sub_byte_statistics_match_numpy(dualtrack, tmp_path, dtype):
    rng = np.random.default_rng(14)
    n = 3 * 2048 + 4  # Several blocks; a multiple of 4 elements fills whole bytes for both widths.
    scale = 2.0 if dtype != "F6_E3M2" else 8.0
    xb = rng.standard_normal(n) * scale
    xa = xb * (1 + rng.standard_normal(n) * 0.05)
    ca, cb = lowp.encode(xa, dtype), lowp.encode(xb, dtype)
    name, bits, rtol = SUB_BYTE[dtype]
    if dtype == "F4":  # Written by safetensors from torch's packed float4 dtype.
        save_file({"w": lowp.float4_x2(ca)}, tmp_path / "a.safetensors")
        save_file({"w": lowp.float4_x2(cb)}, tmp_path / "b.safetensors")
    else:
        lowp.write_safetensors(tmp_path / "a.safetensors", {"w": (dtype, [n], lowp.pack_bits(ca, bits))})
        lowp.write_safetensors(tmp_path / "b.safetensors", {"w": (dtype, [n], lowp.pack_bits(cb, bits))})
    for threads in ["1", "3"]:
        _, rep = compare_json(dualtrack, tmp_path / "a.safetensors", tmp_path / "b.safetensors", "--threads", threads)
        t = rep["tensors"][0]
        assert (t["dtype_a"], t["rtol"], t["atol"]) == (name, rtol, 1e-5)
        check_against_numpy(t, lowp.decode(ca, dtype), lowp.decode(cb, dtype), 1e-5, rtol, None)


def test_sub_byte_malformed_sizes_are_refused(dualtrack, tmp_path):
    cases = {
        "odd.safetensors": ({"x": ("F6_E2M3", [3], b"\0" * 3)}, "3 elements of F6_E2M3 (6 bits each) is not a whole number of bytes"),
        "nibble.safetensors": ({"x": ("F4", [5], b"\0" * 3)}, "5 elements of F4 (4 bits each) is not a whole number of bytes"),
        "span.safetensors": ({"x": ("F4", [8], b"\0" * 8)}, "data_offsets span 8 bytes but the shape and dtype need 4"),
        "c64.safetensors": ({"x": ("C64", [2], b"\0" * 12)}, "data_offsets span 12 bytes but the shape and dtype need 16"),
    }
    for fname, (tensors, needle) in cases.items():
        lowp.write_safetensors(tmp_path / fname, tensors)
        r = dualtrack("compare", tmp_path / fname, tmp_path / fname)
        assert r.returncode == 2 and r.stdout == "", (fname, r.stderr)
        assert fname in r.stderr and needle in r.stderr, r.stderr


# ---- complex ----------------------------------------------------------------------------------


def complex_pair(rng, shape, dtype):
    n = int(np.prod(shape))
    a = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    b = a * (1 + 1e-6 * (rng.standard_normal(n) + 1j * rng.standard_normal(n)))
    a, b = a.astype(dtype), b.astype(dtype)
    b[::7] = a[::7]  # Some exactly equal elements.
    specials = [  # (a, b)
        (complex(np.nan, 0), complex(0, np.nan)),  # NaN on both sides, in different components
        (complex(np.inf, 1), complex(np.inf, 1)),  # the same infinity
        (complex(1, -np.inf), 1 + 2j),  # an infinity against a finite value
        (complex(-np.inf, np.inf), complex(-np.inf, np.inf)),
        (2 + 0j, 0j),  # an error against a zero reference
        (complex(np.nan, np.nan), 1 + 1j),  # NaN on one side only
        (complex(3, np.inf), complex(np.nan, 1)),
    ]
    for i, (x, y) in enumerate(specials):
        a[3 + 11 * i], b[3 + 11 * i] = x, y
    return a.reshape(shape), b.reshape(shape)


def check_complex(t, a, b, atol, rtol, ulp_dtype, rule="allclose"):
    ref = reference_complex_stats(a, b, atol, rtol, ulp_dtype, rule)
    assert t["complex"] is True
    assert t["finite_pairs"] == ref["finite_pairs"]
    for key in ["max_abs", "mean_abs", "rmse", "max_rel", "mean_rel", "min_passing_atol"]:
        got = math.inf if key == "max_rel" and t["max_rel_infinite"] else t[key]
        assert close(got, ref[key], rel=1e-9), (key, got, ref[key])
    for key in ["n_outside", "equal", "nan_a", "nan_b", "nan_mismatch", "posinf_a", "neginf_a", "posinf_b", "neginf_b"]:
        assert t[key] == ref[key], (key, t[key], ref[key])
    assert t["inf_a"] == ref["posinf_a"] + ref["neginf_a"]
    assert close(t["cosine"], ref["cosine"], rel=1e-9)
    assert close(t["pearson"], ref["pearson"], rel=1e-7)
    assert np.ravel_multi_index(tuple(t["max_abs_index"]), np.shape(a)) == ref["max_abs_flat"]
    for s in ["stats_a", "stats_b"]:  # Of the moduli |a|, |b|.
        for k in ["min", "max", "mean"]:
            assert close(t[s][k], ref[s][k], rel=1e-12, abs_=1e-15), (s, k)
        assert close(t[s]["std"], ref[s]["std"], rel=1e-9, abs_=1e-15), (s, "std")
    hist = t["histogram"]
    assert {e: c for e, c in zip(hist["log10_edges"], hist["counts"]) if c} == ref["histogram"]
    assert hist["zero"] == ref["histogram_zero"]
    assert t["max_ulp"] == (ref["max_ulp"] if ulp_dtype else None)
    assert t["frac_outside"] == pytest.approx(ref["n_outside"] / np.size(a))
    return ref


@pytest.mark.parametrize("writer", ["safetensors-pt", "npy", "npy-big-endian", "pt-npz"])
def test_complex64_statistics_match_numpy(dualtrack, tmp_path, writer):
    rng = np.random.default_rng(21)
    a, b = complex_pair(rng, (31, 17), np.complex64)
    pa, pb = tmp_path / "a", tmp_path / "b"
    if writer == "safetensors-pt":
        pa, pb = pa.with_suffix(".safetensors"), pb.with_suffix(".pt")
        save_file({"z": torch.from_numpy(a)}, pa)
        torch.save({"z": torch.from_numpy(b)}, pb)  # torch.ComplexFloatStorage
        assert header(pa)["z"]["dtype"] == "C64"
    elif writer.startswith("npy"):
        order = ">" if writer.endswith("big-endian") else "<"
        pa, pb = tmp_path / "z_a.npy", tmp_path / "z_b.npy"
        np.save(pa, a.astype(order + "c8"))
        np.save(pb, np.asfortranarray(b).astype(order + "c8"))
    else:
        pa, pb = pa.with_suffix(".pt"), pb.with_suffix(".npz")
        torch.save({"z": torch.from_numpy(a)}, pa)
        np.savez_compressed(pb, z=b)  # deflated, inflated in blocks
    r, rep = compare_json(dualtrack, pa, pb)
    t = rep["tensors"][0]
    assert (t["dtype_a"], t["dtype_b"], t["rtol"], t["atol"]) == ("complex64", "complex64", 1.3e-6, 1e-5)
    assert t["shape"] == [31, 17]
    ref = check_complex(t, a, b, 1e-5, 1.3e-6, "float32")
    assert (ref["nan_mismatch"], ref["posinf_a"], ref["neginf_a"]) == (2, 2, 2)  # The specials are there.
    assert t["status"] == "fail" and r.returncode == 1


def test_complex128_npy_pt_views_threads_and_mixed_precision(dualtrack, tmp_path):
    rng = np.random.default_rng(22)
    a, b = complex_pair(rng, (150, 90), np.complex128)  # 13500 elements: several thread ranges
    np.save(tmp_path / "b.npy", b.astype(">c16"))
    torch.save({"z": torch.from_numpy(np.ascontiguousarray(a.T)).t()}, tmp_path / "a.pt")  # A strided view.
    for threads in ["1", "3"]:
        _, rep = compare_json(dualtrack, tmp_path / "a.pt", tmp_path / "b.npy", "--threads", threads)
        t = rep["tensors"][0]
        assert (t["dtype_a"], t["rtol"], t["atol"]) == ("complex128", 1e-7, 1e-7)
        check_complex(t, a, b, 1e-7, 1e-7, "float64")
    # complex64 against a complex128 reference: complex64's tolerances, ULP in float32 units.
    np.save(tmp_path / "a64.npy", a.astype(np.complex64))
    _, rep = compare_json(dualtrack, tmp_path / "a64.npy", tmp_path / "b.npy")
    t = rep["tensors"][0]
    assert (t["dtype_a"], t["dtype_b"], t["rtol"], t["atol"]) == ("complex64", "complex128", 1.3e-6, 1e-5)
    check_complex(t, a.astype(np.complex64), b, 1e-5, 1.3e-6, "float32")


def test_complex_rule_either_and_percentiles(dualtrack, tmp_path):
    rng = np.random.default_rng(23)
    a, b = complex_pair(rng, (5000,), np.complex128)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    tol = ["--atol", "1e-7", "--rtol", "5e-7"]
    _, rep = compare_json(dualtrack, tmp_path / "a.npy", tmp_path / "b.npy", *tol, "--rule", "either", "--check", "p99")
    t = rep["tensors"][0]
    check_complex(t, a, b, 1e-7, 5e-7, "float64", rule="either")
    fin = np.isfinite(a) & np.isfinite(b)
    e = np.sort(np.abs(a[fin] - b[fin]))
    for q, key in [(0.5, "median_abs"), (0.99, "p99_abs")]:
        want = e[max(1, math.ceil(q * e.size)) - 1]  # Nearest rank; reported as its bucket's upper edge.
        got = t["percentiles"][key]
        assert want <= got <= want * (1 + 2**-4), (key, got, want)


@pytest.mark.parametrize("equal_nan", [False, True])
def test_complex_outside_count_equals_torch_isclose(dualtrack, tmp_path, equal_nan):
    rng = np.random.default_rng(24)
    a, b = complex_pair(rng, (4000,), np.complex128)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    atol, rtol = 1e-9, 1e-6
    # torch.isclose passes equal infinities (dualtrack needs --inf-equal for that).
    extra = ["--inf-equal"] + (["--equal-nan"] if equal_nan else [])
    _, rep = compare_json(dualtrack, tmp_path / "a.npy", tmp_path / "b.npy", "--atol", str(atol), "--rtol", str(rtol), *extra)
    close_ = torch.isclose(torch.from_numpy(a), torch.from_numpy(b), rtol=rtol, atol=atol, equal_nan=equal_nan)
    t = rep["tensors"][0]
    assert t["n_outside"] == int((~close_).sum())
    assert 0 < t["n_outside"] < a.size  # Both sides of the tolerance are exercised.


def test_complex_against_real_is_reported_not_fatal(dualtrack, tmp_path):
    save_file({"z": torch.ones(4, dtype=torch.complex64), "w": torch.ones(3)}, tmp_path / "a.safetensors")
    save_file({"z": torch.ones(4), "w": torch.ones(3)}, tmp_path / "b.safetensors")
    r, rep = compare_json(dualtrack, tmp_path / "a.safetensors", tmp_path / "b.safetensors")
    t = by_name(rep)
    assert t["z"]["status"] == "dtype_mismatch" and t["w"]["status"] == "pass"
    assert t["z"]["note"] == "a complex64 tensor cannot be compared with a real float32 one"
    assert "note" not in t["w"] and t["w"]["complex"] is False
    assert rep["verdict"] == "fail" and r.returncode == 1
    r = dualtrack("compare", tmp_path / "a.safetensors", tmp_path / "b.safetensors")
    assert "note: z: a complex64 tensor cannot be compared with a real float32 one" in r.stdout


def test_complex_npy_truncated_is_refused(dualtrack, tmp_path):
    np.save(tmp_path / "z.npy", np.ones(8, dtype=np.complex64))
    raw = (tmp_path / "z.npy").read_bytes()
    (tmp_path / "t.npy").write_bytes(raw[:-4])
    r = dualtrack("compare", tmp_path / "t.npy", tmp_path / "z.npy")
    assert r.returncode == 2 and "t.npy" in r.stderr and "truncated: the data needs 64 bytes, 60 present" in r.stderr
