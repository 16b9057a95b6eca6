"""The JSON documents the stages exchange have JSON Schemas (docs/schemas/); real outputs of the
binary and the examples in docs/json-contracts.md are validated against them."""

import json
import re
import shutil

import jsonschema
import pytest
import torch
from safetensors.torch import save_file

from conftest import REPO_ROOT

SCHEMAS = REPO_ROOT / "docs" / "schemas"
CONTRACTS = REPO_ROOT / "docs" / "json-contracts.md"


def registry():
    from referencing import Registry, Resource

    resources = []
    for path in SCHEMAS.glob("*.schema.json"):
        schema = json.loads(path.read_text())
        resources.append((schema["$id"], Resource.from_contents(schema)))
    return Registry().with_resources(resources)


def validator(name):
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, registry=registry())


def valid(name, doc):
    errors = sorted(validator(name).iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])


def contract_example(schema_id):
    """The JSON block under the heading of docs/json-contracts.md that names `schema_id`."""
    text = CONTRACTS.read_text()
    heading = next(m for m in re.finditer(r"^## .*$", text, re.M) if f"`{schema_id}`" in m.group(0))
    block = re.search(r"```json\n(.*?)```", text[heading.end():], re.S)
    return json.loads(block.group(1))


@pytest.mark.parametrize("name,schema_id", [("scan", "dualtrack.scan/1"),
                                            ("findings-baseline", "dualtrack.findings-baseline/1"),
                                            ("compare", "dualtrack.compare/1")])
def test_contract_examples_are_valid_documents(name, schema_id):
    doc = contract_example(schema_id)
    assert doc["schema"] == schema_id
    valid(name, doc)


def test_scan_outputs_match_the_schema(dualtrack, tmp_path):
    valid("scan", json.loads((REPO_ROOT / "tests" / "scan" / "expected" / "cuda-research.json").read_text()))
    example = tmp_path / "ex"
    shutil.copytree(REPO_ROOT / "examples" / "cuda-research", example)
    baseline = tmp_path / "accepted.json"
    assert dualtrack("scan", example, "--write-baseline", baseline).returncode == 0
    valid("findings-baseline", json.loads(baseline.read_text()))
    (example / "nb.ipynb").write_text(json.dumps({
        "cells": [{"cell_type": "code", "source": ["import torch\n", "x = torch.ones(1).cuda()  # noqa: DT999\n"],
                   "metadata": {}, "outputs": [], "execution_count": None}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    (example / "blob.py").write_bytes(b"\x00\x01binary")
    (example / "new.py").write_text("import torch\ny = torch.zeros(1).cuda()\n")
    r = dualtrack("scan", example, "--format", "json", "--fail-on", "never", "--baseline", baseline)
    doc = json.loads(r.stdout)
    assert doc["baseline"]["matched"] > 0 and doc["skipped"] and doc["findings"]
    assert any(f["cell"] == 1 for f in doc["findings"])
    valid("scan", doc)
    # Several entries: reached_by is a count.
    r = dualtrack("scan", example, "--format", "json", "--fail-on", "never", "--entry", ".")
    doc = json.loads(r.stdout)
    assert any(isinstance(f["reached_by"], int) for f in doc["findings"])
    valid("scan", doc)


def test_compare_outputs_match_the_schema(dualtrack, tmp_path):
    torch.manual_seed(0)
    a = {"w": torch.randn(4, 3), "i": torch.arange(5), "c": torch.randn(3, dtype=torch.complex64),
         "nan": torch.tensor([1.0, float("nan"), float("inf")]), "only_a": torch.ones(2)}
    b = {k: (v + 1e-3 if v.is_floating_point() else v) for k, v in a.items() if k != "only_a"}
    b["only_b"] = torch.zeros(2)
    b["i"] = torch.arange(6)  # A shape mismatch.
    save_file(a, str(tmp_path / "a.safetensors"))
    save_file(b, str(tmp_path / "b.safetensors"))
    r = dualtrack("compare", tmp_path / "a.safetensors", tmp_path / "b.safetensors", "--format", "json")
    doc = json.loads(r.stdout)
    assert {t["status"] for t in doc["tensors"]} >= {"fail", "missing_a", "missing_b", "shape_mismatch"}
    valid("compare", doc)
    # Metric series of two bundles.
    for side, loss in (("ba", [2.5, 2.1, float("nan")]), ("bb", [2.5, 2.0, 1.9])):
        d = tmp_path / side
        d.mkdir()
        (d / "metrics.jsonl").write_text("".join(
            json.dumps({"step": i + 1, "name": "loss", "value": v if v == v else "NaN"}) + "\n"
            for i, v in enumerate(loss)))
    doc = json.loads(dualtrack("compare", tmp_path / "ba", tmp_path / "bb", "--format", "json").stdout)
    assert doc["metrics"] and doc["metrics"][0]["steps"]
    valid("compare", doc)


TRAIN = """
import torch
model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    loss = model(torch.randn(4, 3).double().float()).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_every_stage_document_matches_its_schema(dualtrack, tmp_path, example_dir):
    import sys

    env = json.loads(dualtrack("env", "--format", "json").stdout)
    valid("env", env)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x.bin").write_bytes(b"123")
    r = dualtrack("freeze", "--data", tmp_path / "data", "-o", tmp_path / "freeze.json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    valid("freeze-baseline", json.loads((tmp_path / "freeze.json").read_text()))
    script = tmp_path / "t.py"
    script.write_text(TRAIN)
    r = dualtrack("run", "--track", "cpu", "--steps", "2", "-o", tmp_path / "bundle", "--",
                  sys.executable, script, timeout=300)
    assert r.returncode == 0, r.stderr
    valid("bundle-manifest", json.loads((tmp_path / "bundle" / "manifest.json").read_text()))
    r = dualtrack("coverage", tmp_path / "bundle", "--format", "json")
    valid("coverage", json.loads(r.stdout))
    out = tmp_path / "report" / "report.html"
    r = dualtrack("audit", example_dir, "--trust-project-run", "-o", out, "--format", "json",
                  cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr
    audit = json.loads(r.stdout)
    valid("audit", audit)
    assert len(audit["experiments"]) >= 2
    # report.json is the project's page; report.<experiment>.json the experiments' reports.
    valid("project-report", json.loads((tmp_path / "report" / "report.json").read_text()))
    for report in (tmp_path / "report").glob("report.*.json"):
        valid("report", json.loads(report.read_text()))
    assert len(list((tmp_path / "report").glob("report.*.json"))) == len(audit["experiments"])
