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


def validator(name):
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


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
