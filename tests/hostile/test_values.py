"""Classes 3, 6 and 8: numbers that break naive code: stride-0 views describing 2^62 elements,
NaN and infinite metrics, op counts near INT64_MAX, seeds out of range."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from hostile_util import TIMEOUT, assert_clear_error, make_bundle, op_row, dt  # noqa: F401 (dt is a fixture)

NAN_METRICS = [
    '{"step": 1, "name": "loss", "value": 2.5}',
    '{"step": 2, "name": "loss", "value": NaN}',          # what Python's json module writes
    '{"step": 3, "name": "loss", "value": "Infinity"}',   # what the tracer now writes
    '{"step": 4, "name": "loss", "value": -Infinity}',
]


def test_stride_zero_view_is_refused_quickly(dt, tmp_path):
    torch = pytest.importorskip("torch")
    big = tmp_path / "big.pt"
    torch.save({"w": torch.zeros(1).expand(2**31, 2**31)}, big)
    assert big.stat().st_size < 4096
    r = dt("compare", big, big)
    assert_clear_error(r, "big.pt")
    assert "expanded" in r.stderr or "stride 0" in r.stderr


def test_small_expanded_views_still_compare(dt, tmp_path):
    torch = pytest.importorskip("torch")
    a, b = tmp_path / "a.pt", tmp_path / "b.pt"
    torch.save({"w": torch.ones(1, 3).expand(1000, 3)}, a)
    torch.save({"w": torch.ones(1000, 3)}, b)
    r = dt("compare", a, b, "--format", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["verdict"] == "pass"


def test_non_finite_metrics_round_trip_through_show(dt, tmp_path):
    b = make_bundle(tmp_path / "b", metrics=NAN_METRICS, ops=[op_row()])
    r = dt("show", b)
    assert r.returncode == 0, r.stderr
    assert "nan (non-finite)" in r.stdout and "inf (non-finite)" in r.stdout
    r = dt("show", b, "--format", "json")
    assert r.returncode == 0, r.stderr
    values = [m["value"] for m in json.loads(r.stdout)["metrics"]]
    assert values == [2.5, "NaN", "Infinity", "-Infinity"]


def test_non_finite_metrics_are_a_reported_difference_in_compare(dt, tmp_path):
    a = make_bundle(tmp_path / "a", metrics=NAN_METRICS)
    b = make_bundle(tmp_path / "b", metrics=[m.replace("NaN", "1.0").replace('"Infinity"', "1.0")
                                             .replace("-Infinity", "1.0") for m in NAN_METRICS])
    r = dt("compare", a, b)
    assert r.returncode == 1, r.stderr
    assert "non-finite" in r.stdout
    r = dt("compare", a, b, "--format", "json", "-o", tmp_path / "cmp.json")
    assert r.returncode == 1, r.stderr
    doc = json.loads((tmp_path / "cmp.json").read_text())
    loss = doc["metrics"][0]
    assert loss["status"] == "fail" and loss["non_finite_a"] == 3 and loss["non_finite_b"] == 0
    assert [s["a"] for s in loss["steps"]] == [2.5, "NaN", "Infinity", "-Infinity"]
    # report reads both the bundle and the comparison back
    r = dt("report", "--track", f"cpu={a}", "--compare", tmp_path / "cmp.json", "--format", "json")
    assert r.returncode in (0, 1), r.stderr


def test_report_reads_a_bundle_with_nan_loss(dt, tmp_path):
    a = make_bundle(tmp_path / "a", metrics=NAN_METRICS, ops=[op_row()])
    r = dt("report", "--track", f"cpu={a}", "--format", "json")
    assert r.returncode in (0, 1), r.stderr
    json.loads(r.stdout)


def test_tracer_writes_nan_loss_as_a_token(dt, tmp_path):
    pytest.importorskip("torch")
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "train.py").write_text(textwrap.dedent("""
        import torch
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loss = model(torch.ones(1, 2)).sum() * float("nan")
        loss.backward()
        opt.step()
    """))
    r = dt("run", "--track", "cpu", "--no-env", "-o", "out", "--", sys.executable, "train.py",
           cwd=proj, timeout=180)
    assert r.returncode == 0, r.stderr
    text = (proj / "out" / "metrics.jsonl").read_text()
    assert '"NaN"' in text
    r = dt("show", proj / "out")
    assert r.returncode == 0, r.stderr
    assert "non-finite" in r.stdout


def test_op_counts_near_int64_max_do_not_overflow(dt, tmp_path):
    big = 2**63 - 1
    b = make_bundle(tmp_path / "b", ops=[op_row(count=big), op_row(op="aten::mul", count=big)])
    r = dt("show", b)
    assert r.returncode == 0, r.stderr
    assert str(big) in r.stdout
    r = dt("coverage", b, "--format", "json")
    assert r.returncode in (0, 1), r.stderr
    json.loads(r.stdout)


@pytest.mark.parametrize("seed", ["-1", "4294967296", "99999999999999999999", "1e3", "0x10"])
def test_seeds_out_of_range_are_refused(dt, tmp_path, seed):
    r = dt("run", "--track", "cpu", "--no-env", "-o", tmp_path / "out", "--seed", seed, "--",
           sys.executable, "-c", "pass")
    assert_clear_error(r, "--seed")
    assert not (tmp_path / "out").exists()
    r = dt("freeze", "--data-only", "--seed", seed, cwd=tmp_path)
    assert_clear_error(r, "--seed")


def test_largest_seed_is_recorded_exactly(dt, tmp_path):
    r = dt("freeze", "--data-only", "--seed", "4294967295", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["seeds"] == [4294967295]


# A manifest field of the wrong type (a number where a string belongs) is a clear input error or
# is read as absent, never a thrown type error reported as an internal error.
@pytest.mark.parametrize("field,value", [("schema", 1), ("schema", None), ("track", 5),
                                         ("torch_version", ["2.13.0"]), ("status", 0)])
def test_manifest_fields_of_the_wrong_type_are_input_errors(dt, tmp_path, field, value):
    b = make_bundle(tmp_path / "b", ops=[op_row()])
    manifest = json.loads((b / "manifest.json").read_text())
    manifest[field] = value
    (b / "manifest.json").write_text(json.dumps(manifest))
    for args in (("coverage", b), ("show", b), ("report", "--track", f"mps={b}")):
        r = dt(*args)
        assert "internal error" not in r.stderr, (args, r.stderr)
        if field == "schema":
            assert_clear_error(r, "manifest.json")


@pytest.mark.parametrize("field,value", [("data_only", "yes"), ("code", {"git": "yes"}),
                                         ("seeds", ["one"])])
def test_baseline_fields_of_the_wrong_type_are_input_errors(dt, tmp_path, field, value):
    base = tmp_path / "baseline.json"
    base.write_text(json.dumps({"schema": "dualtrack.baseline/1", "created": "2026-01-01T00:00:00Z",
                                field: value}))
    assert_clear_error(dt("freeze", "--check", base), "baseline.json")
