"""Bad and hostile inputs: a clear error naming the file and the problem (exit 2), never a crash,
a hang or executed pickle code."""

import json
import struct
import subprocess
import sys
import zipfile
import zlib

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from helpers import npy_bytes, write_zip


def assert_refused(r, *needles):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert r.stdout == ""
    assert r.stderr.startswith("dualtrack compare: error: "), r.stderr
    for n in needles:
        assert n in r.stderr, (n, r.stderr)


def hostile_pickle(marker):
    cmd = f"touch {marker}".encode()
    # GLOBAL os.system, the command as a tuple, REDUCE: what a malicious data.pkl does.
    return b"\x80\x02cos\nsystem\nq\x00X" + struct.pack("<I", len(cmd)) + cmd + b"q\x01\x85q\x02Rq\x03."


def with_data_pkl(src, dst, payload):
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = payload if info.filename.endswith("/data.pkl") else zin.read(info.filename)
            zout.writestr(info.filename, data)


def test_hostile_pickle_is_refused_and_nothing_runs(dualtrack, tmp_path):
    torch.save({"w": torch.ones(3)}, tmp_path / "good.pt")
    proof = tmp_path / "python-ran-it"
    with_data_pkl(tmp_path / "good.pt", tmp_path / "proof.pt", hostile_pickle(proof))
    # The payload is live: PyTorch's unrestricted loader runs it.
    subprocess.run(
        [sys.executable, "-c", f"import torch; torch.load({str(tmp_path / 'proof.pt')!r}, weights_only=False)"],
        capture_output=True,
    )
    assert proof.exists()
    marker = tmp_path / "dualtrack-ran-it"
    with_data_pkl(tmp_path / "good.pt", tmp_path / "evil.pt", hostile_pickle(marker))
    r = dualtrack("compare", tmp_path / "evil.pt", tmp_path / "good.pt")
    assert_refused(r, "evil.pt", "refused global 'os.system'", "nothing was executed")
    assert not marker.exists()


def test_reduce_payload_from_pickle_module_names_its_global(dualtrack, tmp_path):
    class Evil:
        def __reduce__(self):
            import os

            return (os.system, ("true",))

    import pickle

    torch.save({"w": torch.ones(3)}, tmp_path / "good.pt")
    with_data_pkl(tmp_path / "good.pt", tmp_path / "evil.pt", pickle.dumps({"w": Evil()}, protocol=2))
    r = dualtrack("compare", tmp_path / "evil.pt", tmp_path / "good.pt")
    assert_refused(r, "refused global 'posix.system'")
    with_data_pkl(tmp_path / "good.pt", tmp_path / "evil4.pt", pickle.dumps({"w": Evil()}, protocol=4))
    r = dualtrack("compare", tmp_path / "evil4.pt", tmp_path / "good.pt")
    assert_refused(r, "refused global 'posix.system'")


def test_other_pickle_abuse(dualtrack, tmp_path):
    torch.save({"w": torch.ones(3)}, tmp_path / "good.pt")
    cases = {
        b"\x80\x02cbuiltins\neval\nq\x00.": "refused global 'builtins.eval'",
        b"\x80\x02}q\x00(X\x01\x00\x00\x00a": "truncated",
        b"\x80\x02(i__main__\nX\n.": "unsupported pickle opcode 0x69",
        b"\x80\x02ccollections\nOrderedDict\nq\x00h\x07.": "unknown memo entry",
        b"\x80\x02u.": "no MARK",
    }
    for i, (payload, needle) in enumerate(cases.items()):
        with_data_pkl(tmp_path / "good.pt", tmp_path / f"bad{i}.pt", payload)
        assert_refused(dualtrack("compare", tmp_path / f"bad{i}.pt", tmp_path / "good.pt"), needle)


def test_legacy_torch_save_is_rejected(dualtrack, tmp_path):
    torch.save({"w": torch.ones(3)}, tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
    torch.save({"w": torch.ones(3)}, tmp_path / "good.pt")
    r = dualtrack("compare", tmp_path / "legacy.pt", tmp_path / "good.pt")
    assert_refused(r, "legacy.pt", "legacy (non-zip) torch.save format")


def test_torch_archive_with_missing_storage_or_view_past_storage(dualtrack, tmp_path):
    torch.save({"w": torch.ones(3)}, tmp_path / "good.pt")
    with zipfile.ZipFile(tmp_path / "good.pt") as z:
        names = z.namelist()
        pkl = next(n for n in names if n.endswith("data.pkl"))
        data = z.read(pkl)
        with zipfile.ZipFile(tmp_path / "nostorage.pt", "w") as out:
            for n in names:
                if "/data/" not in n:
                    out.writestr(n, z.read(n))
    assert_refused(dualtrack("compare", tmp_path / "nostorage.pt", tmp_path / "good.pt"), "is missing")
    # Claim shape (300,) over a 3-element storage.
    bigger = data.replace(b"K\x03\x85", b"M\x2c\x01\x85", 1)
    assert bigger != data
    with_data_pkl(tmp_path / "good.pt", tmp_path / "past.pt", bigger)
    assert_refused(dualtrack("compare", tmp_path / "past.pt", tmp_path / "good.pt"), "reaches past the end")


def safetensors_raw(header, data=b""):
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + data


@pytest.mark.parametrize(
    "raw,needle",
    [
        (struct.pack("<Q", 10_000) + b"{}", "header length 10000 is longer than the file"),
        (b"\x01\x00", "shorter than the 8-byte header"),
        (safetensors_raw({"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, b"\0" * 8),
         "lie outside the data"),
        (safetensors_raw({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                          "y": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, b"\0" * 12), "overlap"),
        (safetensors_raw({"x": {"dtype": "F7", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 8),
         "unknown or unsupported dtype 'F7'"),
        (safetensors_raw({"x": {"dtype": "F32", "shape": [2**40, 2**40], "data_offsets": [0, 8]}}, b"\0" * 8),
         "shape product overflows"),
        (safetensors_raw({"x": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8),
         "but the shape and dtype need 12"),
        (struct.pack("<Q", 5) + b"{nope", "not valid JSON"),
    ],
)
def test_malformed_safetensors(dualtrack, tmp_path, raw, needle):
    (tmp_path / "bad.safetensors").write_bytes(raw)
    save_file({"x": torch.ones(2)}, tmp_path / "good.safetensors")
    assert_refused(dualtrack("compare", tmp_path / "bad.safetensors", tmp_path / "good.safetensors"),
                   "bad.safetensors", needle)


def test_malformed_npy(dualtrack, tmp_path):
    good = npy_bytes(np.arange(10, dtype=np.float64))
    np.save(tmp_path / "good.npy", np.arange(10, dtype=np.float64))
    cases = {
        "truncated": (good[:-8], "truncated: the data needs 80 bytes, 72 present"),
        "magic": (b"NOTNUMPY" + good[8:], "bad magic"),
        "hlen": (good[:8] + b"\xff\xff" + good[10:40], "longer than the file"),
        # complex256 (np.clongdouble where long double has 80 bits; written by hand for macOS).
        "complex": (npy_bytes(np.zeros(2, np.complex128)).replace(b"'<c16'", b"'<c32'"),
                    "unknown or unsupported dtype '<c32'"),
        "complex_truncated": (npy_bytes(np.zeros(2, np.complex64))[:-4], "truncated: the data needs 16 bytes, 12 present"),
        "object": (npy_bytes(np.array([1, "a"], dtype=object)), "unknown or unsupported dtype '|O'"),
        "overflow": (good.replace(b"(10,)", b"(99999999999999999999,)".ljust(5)), "overflow"),
        "structured": (npy_bytes(np.zeros(2, dtype=[("a", "<f4")])), "structured"),
    }
    for name, (raw, needle) in cases.items():
        (tmp_path / f"{name}.npy").write_bytes(raw)
        assert_refused(dualtrack("compare", tmp_path / f"{name}.npy", tmp_path / "good.npy"), f"{name}.npy", needle)


def test_zip_bombs_truncation_and_overlap_in_npz(dualtrack, tmp_path):
    np.savez(tmp_path / "good.npz", x=np.zeros(10))
    payload = npy_bytes(np.zeros(10))
    # Declares 4 GB from a few compressed bytes: refused before anything is inflated.
    write_zip(tmp_path / "bomb.npz", [("x.npy", payload, 8, 4_000_000_000)])
    assert_refused(dualtrack("compare", tmp_path / "bomb.npz", tmp_path / "good.npz"), "zip bomb")
    # A real high-ratio member whose header claims more data than the member declares.
    big = npy_bytes(np.zeros(5_000_000))
    write_zip(tmp_path / "lying.npz", [("x.npy", big, 8, 1000)])
    assert_refused(dualtrack("compare", tmp_path / "lying.npz", tmp_path / "good.npz"), "does not match the header")
    # Deflate stream cut short.
    z = zlib.compress(payload)[2:-4]
    write_zip(tmp_path / "cut.npz", [("x.npy", payload, 8, None)])
    raw = bytearray((tmp_path / "cut.npz").read_bytes())
    start = raw.index(z)
    raw[start + len(z) // 2: start + len(z)] = b"\0" * (len(z) - len(z) // 2)
    (tmp_path / "cut.npz").write_bytes(bytes(raw))
    r = dualtrack("compare", tmp_path / "cut.npz", tmp_path / "good.npz")
    assert_refused(r, "cut.npz", "zip member 'x.npy'")
    # The file itself cut in the middle of a member.
    full = (tmp_path / "good.npz").read_bytes()
    (tmp_path / "short.npz").write_bytes(full[: len(full) // 2])
    assert_refused(dualtrack("compare", tmp_path / "short.npz", tmp_path / "good.npz"), "short.npz", "zip:")
    # Two central-directory entries pointing at the same local header.
    write_zip(tmp_path / "two.npz", [("x.npy", payload, 0, None), ("y.npy", payload, 0, None)])
    raw = bytearray((tmp_path / "two.npz").read_bytes())
    second = raw.rindex(b"PK\x01\x02")
    raw[second + 42: second + 46] = struct.pack("<I", 0)
    (tmp_path / "overlap.npz").write_bytes(bytes(raw))
    assert_refused(dualtrack("compare", tmp_path / "overlap.npz", tmp_path / "good.npz"), "overlap")


def test_unknown_inputs(dualtrack, tmp_path):
    (tmp_path / "x.txt").write_text("hello")
    (tmp_path / "empty").mkdir()
    assert_refused(dualtrack("compare", tmp_path / "x.txt", tmp_path / "x.txt"), "unknown tensor file type")
    assert_refused(dualtrack("compare", tmp_path / "nope.pt", tmp_path / "x.txt"), "no such file")
    assert_refused(dualtrack("compare", tmp_path / "empty", tmp_path / "empty"),
                   "neither a dualtrack bundle")  # Nor a checkpoint folder (test_sharded.py).
    r = dualtrack("compare", tmp_path / "x.txt", tmp_path / "x.txt", "--map", "novalue")
    assert r.returncode == 2 and "--map expects OLD=NEW" in r.stderr


def test_deflated_npz_member_with_a_header_shorter_than_its_preamble(dualtrack, tmp_path):
    # Found by fuzz_npz: a version-1 .npy member, deflated, whose header length is 0, so the header
    # ends inside the 12 bytes read to learn the layout. Built here with zipfile and zlib.
    member = b"\x93NUMPY\x01\x00\x00\x00" + np.zeros(4, dtype="<f4").tobytes()
    bad = tmp_path / "short.npz"
    with zipfile.ZipFile(bad, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("a.npy", member)
    good = tmp_path / "good.npz"
    np.savez_compressed(good, a=np.zeros(4, dtype=np.float32))
    assert_refused(dualtrack("compare", bad, good), "short.npz", "npz member 'a.npy'")


@pytest.mark.parametrize("row, needle", [
    ('{"step": 1, "name": "loss", "value": 0.5', "syntax error at byte"),
    ('{"step": 1, "name": "loss", "value": 1e999}', "a number too large"),  # nlohmann's out_of_range.
    ('{"step": 1, "name": "loss", "value": "low"}', "lacks a string name or a numeric value"),
])
def test_malformed_metrics_rows_name_the_file_and_line(dualtrack, tmp_path, row, needle):
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "metrics.jsonl").write_text('{"step": 0, "name": "loss", "value": 1.0}\n' + row + "\n")
    assert_refused(dualtrack("compare", bundle, bundle), "metrics.jsonl:2", needle)
