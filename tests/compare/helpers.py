"""Reference statistics in float64 with NumPy, and writers for hand-made (hostile) archives."""

import json
import math
import struct
import zlib

import numpy as np


def ordered(bits, width):
    sign = np.uint64(1) << np.uint64(width - 1)
    bits = bits.astype(np.uint64)
    mag = (bits & (sign - np.uint64(1))).astype(np.int64)
    return np.where((bits & sign) != 0, -mag, mag)


def ulp_bits(x, ulp_dtype):
    """Bit patterns of float64 values rounded to ulp_dtype ('float64', 'float32', 'float16', 'bfloat16')."""
    if ulp_dtype == "float64":
        return x.astype(np.float64).view(np.uint64), 64
    if ulp_dtype == "float32":
        return x.astype(np.float32).view(np.uint32), 32
    if ulp_dtype == "float16":
        return x.astype(np.float16).view(np.uint16), 16
    if ulp_dtype == "bfloat16":
        b = x.astype(np.float32).view(np.uint32).astype(np.uint64)
        return (b + 0x7FFF + ((b >> 16) & 1)) >> 16, 16
    raise ValueError(ulp_dtype)


def _error_stats(fin, e, ab, atol, rtol, rule):
    """The statistics of the errors e = |a - b| and magnitudes |b| of the finite pairs (`fin` marks
    them among all), the same for real and complex pairs."""
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(ab > 0, e / ab, np.where(e > 0, np.inf, 0.0))
    if rule == "allclose":
        outside = e > atol + rtol * ab
    else:
        outside = (e > atol) & (rel > rtol)
    nz = e[e > 0]
    decades = np.floor(np.log10(nz)).astype(int) if nz.size else np.array([], dtype=int)
    if not e.size:
        need_atol = 0.0
    elif rule == "either":  # Under Polygraphy's rule, atol alone must cover the largest error.
        need_atol = float(e.max())
    else:
        need_atol = max(0.0, float((e - rtol * ab).max()))
    return {
        "finite_pairs": int(fin.sum()),
        "max_abs": float(e.max()) if e.size else 0.0,
        "max_abs_flat": int(np.flatnonzero(fin)[np.argmax(e)]) if e.size else 0,
        "mean_abs": float(e.mean()) if e.size else 0.0,
        "rmse": float(np.sqrt(np.mean(e * e))) if e.size else 0.0,
        "max_rel": float(rel.max()) if e.size else 0.0,
        "mean_rel": float(rel[ab > 0].mean()) if (ab > 0).any() else 0.0,
        "n_outside": int(outside.sum()) + int((~fin).sum()),
        "min_passing_atol": need_atol,
        "histogram_zero": int((e == 0).sum()),
        "histogram": {int(k): int(v) for k, v in zip(*np.unique(decades, return_counts=True))},
    }


def reference_stats(a, b, atol, rtol, ulp_dtype=None, rule="allclose"):
    """Every statistic dualtrack reports, computed in float64 over the finite pairs."""
    a = np.asarray(a, dtype=np.float64).ravel(order="C")
    b = np.asarray(b, dtype=np.float64).ravel(order="C")
    fin = np.isfinite(a) & np.isfinite(b)
    fa, fb = a[fin], b[fin]
    out = _error_stats(fin, np.abs(fa - fb), np.abs(fb), atol, rtol, rule)
    out.update({
        "equal": int((a == b).sum()),
        "nan_a": int(np.isnan(a).sum()),
        "nan_b": int(np.isnan(b).sum()),
        "inf_a": int(np.isinf(a).sum()),
        "inf_b": int(np.isinf(b).sum()),
        "nan_mismatch": int((np.isnan(a) != np.isnan(b)).sum()),
        "stats_a": side(fa),
        "stats_b": side(fb),
    })
    na, nb = np.linalg.norm(fa), np.linalg.norm(fb)
    out["cosine"] = float(np.dot(fa, fb) / (na * nb)) if na > 0 and nb > 0 else None
    sa, sb = fa.std(), fb.std()
    out["pearson"] = (
        float(np.mean((fa - fa.mean()) * (fb - fb.mean())) / (sa * sb)) if sa > 0 and sb > 0 else None
    )
    if ulp_dtype:
        xa, w = ulp_bits(fa, ulp_dtype)
        xb, _ = ulp_bits(fb, ulp_dtype)
        diff = np.abs(ordered(xa, w) - ordered(xb, w))
        out["max_ulp"] = int(diff.max()) if diff.size else 0
    return out


def side(x):
    if x.size == 0:
        return None
    return {"min": float(x.min()), "max": float(x.max()), "mean": float(x.mean()), "std": float(x.std())}


def write_zip(path, members):
    """A zip written byte by byte: members = [(name, payload, method, declared_size or None)]."""
    out = bytearray()
    central = bytearray()
    for name, payload, method, declared in members:
        raw = payload
        data = raw if method == 0 else zlib.compress(raw)[2:-4]
        size = len(raw) if declared is None else declared
        crc = zlib.crc32(raw)
        off = len(out)
        nb = name.encode()
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0, crc, len(data), size, len(nb), 0)
        out += nb + data
        central += struct.pack(
            "<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, method, 0, 0, crc, len(data), size, len(nb), 0, 0, 0, 0, 0, off
        )
        central += nb
    cd_off = len(out)
    out += central
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central), cd_off, 0)
    with open(path, "wb") as f:
        f.write(out)


def npy_bytes(arr):
    import io

    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


def close(x, y, rel=1e-9, abs_=1e-300):
    if x is None or y is None:
        return x is None and y is None
    return math.isclose(x, y, rel_tol=rel, abs_tol=abs_)


def load_json(text):
    return json.loads(text)


def reference_complex_stats(a, b, atol, rtol, ulp_dtype=None, rule="allclose"):
    """The statistics of a complex pair as dualtrack defines them (torch.isclose's error |a - b|,
    reference magnitude |b|), in complex128: NaN where a component is NaN, infinite where one is
    infinite (under the sign of the first infinite component), side statistics of the moduli."""
    a = np.asarray(a, dtype=np.complex128).ravel(order="C")
    b = np.asarray(b, dtype=np.complex128).ravel(order="C")
    fin = np.isfinite(a) & np.isfinite(b)
    fa, fb = a[fin], b[fin]
    e = np.abs(fa - fb)
    out = _error_stats(fin, e, np.abs(fb), atol, rtol, rule)

    def nan(z):
        return np.isnan(z.real) | np.isnan(z.imag)

    def inf_sign(z):
        inf = ~nan(z) & (np.isinf(z.real) | np.isinf(z.imag))
        first = np.where(np.isinf(z.real), z.real, z.imag)
        return int((inf & (first > 0)).sum()), int((inf & (first < 0)).sum())

    out.update({
        "equal": int((a == b).sum()),
        "nan_a": int(nan(a).sum()),
        "nan_b": int(nan(b).sum()),
        "nan_mismatch": int((nan(a) != nan(b)).sum()),
        "stats_a": side(np.abs(fa)),
        "stats_b": side(np.abs(fb)),
    })
    out["posinf_a"], out["neginf_a"] = inf_sign(a)
    out["posinf_b"], out["neginf_b"] = inf_sign(b)
    na, nb = np.linalg.norm(fa), np.linalg.norm(fb)
    # np.vdot conjugates its first argument: vdot(b, a) = Σ a·conj(b).
    out["cosine"] = float(np.vdot(fb, fa).real / (na * nb)) if na > 0 and nb > 0 else None
    out["pearson"] = None
    if e.size:  # The same of the values centred on their complex means.
        ca, cb = fa - fa.mean(), fb - fb.mean()
        pa, pb = np.linalg.norm(ca), np.linalg.norm(cb)
        if pa > 0 and pb > 0:
            out["pearson"] = float(np.vdot(cb, ca).real / (pa * pb))
    if ulp_dtype:
        diffs = []
        for part in (np.real, np.imag):
            xa, w = ulp_bits(part(fa), ulp_dtype)
            xb, _ = ulp_bits(part(fb), ulp_dtype)
            diffs.append(np.abs(ordered(xa, w) - ordered(xb, w)))
        out["max_ulp"] = int(max(d.max() for d in diffs)) if e.size else 0
    return out
