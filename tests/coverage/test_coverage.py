"""`dualtrack coverage` from outside: the example's CPU bundle, the tables, errors, and the probe."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT

FIXTURE = REPO_ROOT / "tests" / "coverage" / "fixtures" / "cpu-bundle"
TABLE = REPO_ROOT / "data" / "coverage" / "ops.tsv"


def installed_yaml() -> Path:
    import torchgen

    return Path(torchgen.__file__).parent / "packaged" / "ATen" / "native" / "native_functions.yaml"


def table_column(path: Path, version: str) -> dict:
    versions, rows = [], {}
    for line in path.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        cols = line.split("\t")
        if cols[0] == "op":
            versions = cols[1:]
            continue
        letter = cols[1][versions.index(version)]
        if letter != "-":
            rows[cols[0]] = letter
    return rows


def test_example_bundle_lists_the_planted_operator_with_its_line(dualtrack):
    r = dualtrack("coverage", FIXTURE, "--torch", "2.13", "--macos", "14")
    assert r.returncode == 1, r.stderr  # Fallbacks and failures are findings.
    lines = r.stdout.splitlines()
    mm = [l for l in lines if "aten::multi_margin_loss " in l]
    assert len(mm) == 1
    assert "cpu-fallback" in mm[0] and "train.py:167 in main" in mm[0]
    f64 = [l for l in lines if "aten::_to_copy" in l and "utils/metrics.py:15" in l]
    assert f64 and f64[0].lstrip().startswith("FAIL")
    assert "doesn't support float64" in r.stdout
    assert "Summary: " in r.stdout and "2 fallback, 3 fail" in r.stdout
    # Most severe first: the failures precede the fallbacks, which precede the natives.
    first_native = next(i for i, l in enumerate(lines) if l.lstrip().startswith("native"))
    assert lines.index(mm[0]) < first_native


def test_json_follows_the_contract(dualtrack):
    r = dualtrack("coverage", FIXTURE, "--torch", "2.13", "--format", "json")
    assert r.returncode == 1
    j = json.loads(r.stdout)
    assert j["schema"] == "dualtrack.coverage/1"
    assert j["torch"] == "2.13.0" and j["macos"] == 14 and j["evidence"] == "predicted"
    assert set(j["summary"]) >= {"native", "composite", "fallback", "fail"}
    assert set(j["upgrade"]) >= {"version", "removes"}
    ops = {(o["op"], o["location"]["file"], o["location"]["line"]): o for o in j["ops"]}
    mm = ops[("aten::multi_margin_loss", "train.py", 167)]
    assert mm["class"] == "cpu-fallback" and mm["native_since"] is None
    assert ops[("aten::multi_margin_loss_backward", "train.py", 174)]["class"] == "cpu-fallback"
    mean = ops[("aten::mean", "utils/metrics.py", 16)]
    assert mean["fails"] and "float64 is not supported on MPS" in mean["dtype_issues"][0]
    for o in j["ops"]:
        assert o["class"] in {"native", "composite", "cpu-fallback", "always-cpu", "unknown"}


def test_older_release_advises_the_upgrade(dualtrack):
    r = dualtrack("coverage", FIXTURE, "--torch", "2.0", "--format", "json")
    j = json.loads(r.stdout)
    assert j["torch"] == "2.0.1"
    assert j["upgrade"] == {"version": "2.1.2", "removes": 3, "remaining": 2, "complete": False}
    text = dualtrack("coverage", FIXTURE, "--torch", "2.0").stdout
    assert "Upgrade to PyTorch >= 2.1.2 removes 3 fallbacks; 2 remain" in text


def test_bfloat16_needs_macos_14(dualtrack, tmp_path):
    ops = tmp_path / "ops.jsonl"
    ops.write_text(json.dumps({"op": "aten::relu", "overload": "default", "device": "cuda",
                               "dtypes": ["bfloat16"], "count": 1,
                               "location": {"file": "m.py", "line": 3, "function": "f"},
                               "status": "ok", "error": None}) + "\n")
    assert dualtrack("coverage", ops, "--macos", "14").returncode == 0
    r = dualtrack("coverage", ops, "--macos", "13", "--format", "json")
    assert r.returncode == 1
    assert "MPS BFloat16 is only supported on MacOS 14 or newer" in r.stdout


def test_cuda_variants_map_to_what_mps_runs(dualtrack, tmp_path):
    rows = [("aten::cudnn_batch_norm", "aten::_batch_norm_with_update"),
            ("aten::cudnn_convolution", "aten::_mps_convolution"),
            ("aten::_scaled_dot_product_efficient_attention",
             "aten::_scaled_dot_product_attention_math_for_mps")]
    ops = tmp_path / "ops.jsonl"
    ops.write_text("".join(json.dumps({"op": op, "overload": "default", "device": "cuda",
                                       "dtypes": ["float32"], "count": 1, "location": None,
                                       "status": "ok"}) + "\n" for op, _ in rows))
    j = json.loads(dualtrack("coverage", ops, "--torch", "2.13", "--format", "json").stdout)
    got = {o["op"]: o for o in j["ops"]}
    for op, mps in rows:
        assert got[op]["mps_op"] == mps
        assert got[op]["class"] == "native"


def test_markdown_and_bare_ops_jsonl(dualtrack):
    r = dualtrack("coverage", FIXTURE / "ops.jsonl", "--format", "markdown")
    assert r.returncode == 1
    assert "| cpu-fallback | `aten::multi_margin_loss` | 2 |" in r.stdout


def test_unknown_release_lists_the_known_ones(dualtrack):
    r = dualtrack("coverage", FIXTURE, "--torch", "1.13")
    assert r.returncode == 2 and r.stdout == ""
    assert "unknown PyTorch release '1.13'" in r.stderr
    assert "2.0.1" in r.stderr and "2.13.0" in r.stderr


def test_malformed_yaml_is_an_error_with_file_and_line(dualtrack, tmp_path):
    bad = tmp_path / "native_functions.yaml"
    bad.write_text("- func: a(Tensor x) -> Tensor\n  dispatch:\n    CPU a_cpu\n")
    r = dualtrack("coverage", "--yaml", bad, "--op", "a")
    assert r.returncode == 2
    assert f"{bad}:3:" in r.stderr and "DispatchKey: kernel" in r.stderr


def test_malformed_ops_jsonl_and_manifest(dualtrack, tmp_path):
    bundle = tmp_path / "b"
    shutil.copytree(FIXTURE, bundle)
    with (bundle / "ops.jsonl").open("a") as f:
        f.write("{not json\n")
    r = dualtrack("coverage", bundle)
    assert r.returncode == 2 and "ops.jsonl:" in r.stderr and "invalid JSON" in r.stderr
    (bundle / "ops.jsonl").write_text('{"op": 3}\n')
    r = dualtrack("coverage", bundle)
    assert r.returncode == 2 and "ops.jsonl:1:" in r.stderr
    (bundle / "manifest.json").write_text('{"schema": "something/else"}')
    assert dualtrack("coverage", bundle).returncode == 2
    assert dualtrack("coverage", tmp_path / "nowhere").returncode == 2


def test_op_lookup_across_releases(dualtrack):
    r = dualtrack("coverage", "--op", "aten::_fused_adam_", "--format", "json")
    assert r.returncode == 0
    j = json.loads(r.stdout)
    classes = next(o for o in j["ops"] if o["op"] == "aten::_fused_adam_")["classes"]
    assert classes["2.0.1"] == "cpu-fallback" and classes["2.13.0"] == "native"
    text = dualtrack("coverage", "--op", "multi_margin_loss").stdout
    assert "aten::multi_margin_loss\n" in text and "cpu-fallback" in text
    r = dualtrack("coverage", "--op", "no_such_operator_xyz")
    assert r.returncode == 2 and "no operator" in r.stderr


def test_shipped_table_is_reproducible_from_the_installed_yaml(dualtrack, tmp_path):
    out = tmp_path / "t.tsv"
    r = dualtrack("coverage", "--yaml", installed_yaml(), "--torch", "2.13.0", "--write-table", out)
    assert r.returncode == 0, r.stderr
    assert table_column(out, "2.13.0") == table_column(TABLE, "2.13.0")


def test_prediction_straight_from_a_yaml(dualtrack):
    r = dualtrack("coverage", FIXTURE, "--yaml", installed_yaml(), "--torch", "2.13.0", "--format", "json")
    j = json.loads(r.stdout)
    assert any(o["op"] == "aten::multi_margin_loss" and o["class"] == "cpu-fallback" for o in j["ops"])


def test_probe_refuses_a_torch_without_mps(dualtrack):
    r = dualtrack("coverage", "--probe", "--python", sys.executable)
    assert r.returncode == 2
    assert "built without MPS" in r.stderr and "Mac" in r.stderr


def test_probe_python_side_with_a_fake_dispatcher():
    from dualtrack import probe

    kernels = {
        "aten::relu": {"MPS", "CPU"},
        "aten::multi_margin_loss": {"CPU", "CUDA"},
        "aten::mean": {"CompositeExplicitAutograd"},
        "aten::dropout": {"CompositeImplicitAutograd"},
        "aten::embedding_renorm_": {"MPS", "CPU"},
        "aten::linalg_svd": {"MPS", "CompositeImplicitAutograd"},
    }

    def has_kernel(name, key):
        if name not in kernels:
            raise RuntimeError(f"operator {name} does not exist")
        return key in kernels[name]

    def dump(name):
        if name == "aten::embedding_renorm_":
            return "MPS: registered at aten/src/ATen/mps/MPSFallback.mm:90 [kernel]\n"
        return "MPS: registered at RegisterMPS.cpp:1 [kernel]\n"

    names = list(kernels) + ["aten::Bool.Tensor", "prim::device"]
    text = probe.build_table(names, "2.13.0", has_kernel, dump, {"linalg_svd"})
    rows = dict(l.split("\t") for l in text.splitlines() if l and not l.startswith("#"))
    assert rows.pop("op") == "2.13.0"
    assert rows == {"relu": "N", "multi_margin_loss": "F", "mean": "E", "dropout": "C",
                    "embedding_renorm_": "A", "linalg_svd": "N"}
    # Without the dump, the always-CPU list decides.
    text = probe.build_table(["aten::linalg_svd"], "2.13.0", has_kernel, None, {"linalg_svd"})
    assert "linalg_svd\tA" in text


def test_probe_module_runs_as_a_script(repo_root, tmp_path):
    out = subprocess.run([sys.executable, "-m", "dualtrack.probe", "--allow-no-mps"],
                         env={"PYTHONPATH": str(repo_root / "python"), "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    table = tmp_path / "probe.tsv"
    table.write_text(out.stdout)
    rows = table_column(table, out.stdout.split("\nop\t", 1)[1].split("\n", 1)[0])
    assert rows["multi_margin_loss"] == "F"
    assert len(rows) > 2000


def test_probe_writes_the_table_the_interpreter_prints(dualtrack, tmp_path):
    # A stand-in interpreter that answers like `python -m dualtrack.probe` on a Mac would.
    fake = tmp_path / "fakepython"
    fake.write_text("#!/bin/sh\nprintf '# t\\nop\\t2.13.0\\nmulti_margin_loss\\tN\\nrelu\\tN\\n'\n")
    fake.chmod(0o755)
    out = tmp_path / "measured.tsv"
    r = dualtrack("coverage", "--probe", "--python", fake, "--out", out)
    assert r.returncode == 0, r.stderr
    assert "2 overloads" in r.stdout
    r = dualtrack("coverage", FIXTURE, "--table", out, "--format", "json")
    j = json.loads(r.stdout)
    mm = next(o for o in j["ops"] if o["op"] == "aten::multi_margin_loss")
    assert mm["class"] == "native"
    # A broken answer is an error, and nothing is written.
    fake.write_text("#!/bin/sh\necho 'not a table'\n")
    bad = tmp_path / "bad.tsv"
    r = dualtrack("coverage", "--probe", "--python", fake, "--out", bad)
    assert r.returncode == 2 and not bad.exists()


def test_mps_bundle_is_measured_evidence(dualtrack, tmp_path):
    bundle = tmp_path / "mps"
    shutil.copytree(FIXTURE, bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["track"] = "mps"
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    rows = [json.loads(l) for l in (bundle / "ops.jsonl").read_text().splitlines()]
    for row in rows:
        if row["op"] == "aten::gelu":
            row["status"] = "fallback"  # What the tracer saw on the Mac overrides the tables.
    (bundle / "ops.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    j = json.loads(dualtrack("coverage", bundle, "--torch", "2.13", "--format", "json").stdout)
    assert j["evidence"] == "measured" and j["track"] == "mps"
    gelu = [o for o in j["ops"] if o["op"] == "aten::gelu"]
    assert gelu and all(o["class"] == "cpu-fallback" and o["measured_status"] == "fallback" for o in gelu)
