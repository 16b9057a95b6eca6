"""`dualtrack compare` on two bundles of the example project: a float32 CPU track against a
float64 CPU reference, built from real training steps."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file

from helpers import reference_stats

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def bundles(tmp_path_factory, example_dir):
    root = tmp_path_factory.mktemp("bundles")
    subprocess.run([sys.executable, "-B", str(HERE / "make_bundle.py"), str(example_dir), str(root)],
                   check=True, timeout=120)
    return root / "float32", root / "float64"


def test_bundle_table_and_verdict(dualtrack, bundles):
    a, b = bundles
    r = dualtrack("compare", a, b)
    assert r.returncode in (0, 1), r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"compare {a} (A) against {b} (B, reference); rule allclose, check elementwise"
    table = [l for l in lines if l.startswith(("ok ", "FAIL "))]
    names = {l.split()[1] for l in table}
    assert {"output/step1", "loss/step2", "grad/step1/head.weight", "param/step2/pos_embed"} <= names
    assert all("float32/float64" in l for l in table)
    assert "metrics:" in r.stdout and " loss: 2 steps" in r.stdout
    verdict = lines[-1]
    assert verdict.startswith("PASS: " if r.returncode == 0 else "FAIL: ")
    assert f"of {len(table)} tensors within tolerance" in verdict


def test_bundle_json_matches_numpy(dualtrack, bundles):
    a, b = bundles
    r = dualtrack("compare", a, b, "--format", "json")
    rep = json.loads(r.stdout)
    assert rep["schema"] == "dualtrack.compare/1" and rep["kind_a"] == "bundle"
    ta, tb = load_file(str(a / "tensors.safetensors")), load_file(str(b / "tensors.safetensors"))
    for t in rep["tensors"]:
        assert t["status"] in ("pass", "fail")
        assert (t["atol"], t["rtol"]) == (1e-5, 1.3e-6)  # float32's, the larger of the pair.
        ref = reference_stats(ta[t["name"]], tb[t["name"]], 1e-5, 1.3e-6, "float32")
        assert t["n_outside"] == ref["n_outside"]
        assert t["max_abs"] == pytest.approx(ref["max_abs"], rel=1e-12)
        assert t["max_ulp"] == ref["max_ulp"]
        assert t["status"] == ("pass" if ref["n_outside"] == 0 else "fail")
    metrics = {m["name"]: m for m in rep["metrics"]}
    loss_a = [json.loads(l) for l in (a / "metrics.jsonl").read_text().splitlines()]
    loss_b = [json.loads(l) for l in (b / "metrics.jsonl").read_text().splitlines()]
    final_a = [m["value"] for m in loss_a if m["name"] == "loss"][-1]
    final_b = [m["value"] for m in loss_b if m["name"] == "loss"][-1]
    assert metrics["loss"]["final_a"] == final_a and metrics["loss"]["final_b"] == final_b
    assert metrics["loss"]["final_diff"] == pytest.approx(final_a - final_b, abs=1e-15)
    assert [s["step"] for s in metrics["loss"]["steps"]] == [1, 2]
    assert rep["verdict"] == ("pass" if rep["n_fail"] == 0 and all(
        m["status"] == "pass" for m in rep["metrics"]) else "fail")


def test_bundle_against_itself_passes_with_loose_gradients(dualtrack, bundles, tmp_path):
    a, b = bundles
    r = dualtrack("compare", a, a)
    assert r.returncode == 0 and r.stdout.splitlines()[-1].startswith("PASS: ")
    tol = tmp_path / "tol.toml"
    tol.write_text('[[tensor]]\nname = "*"\natol = 1e-3\nrtol = 1e-3\n\n[metrics]\natol = 1e-4\n')
    r = dualtrack("compare", a, b, "--tolerances", tol)
    assert r.returncode == 0, r.stdout
