"""`dualtrack audit` per experiment, runs that cannot start, evidence that is what it claims, and the
field cases of tests/verdict/fixtures/field end to end."""

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

FIELD = Path(__file__).resolve().parent / "fixtures" / "field"
PY = sys.executable


def _report(path: Path) -> dict:
    return json.loads(path.read_text())


def test_run_that_cannot_import_a_package_exits_2_naming_it(dualtrack, tmp_path):
    out = tmp_path / "out" / "report.html"
    keep = tmp_path / "runs"
    r = dualtrack("audit", FIELD / "run-missing-package", "--run", "train.py", "--python", PY,
                  "--keep-run", keep, "-o", out, cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "could not start" in r.stderr
    assert "missing Python package einops_not_installed" in r.stderr
    assert "--python" in r.stderr
    # The script's own stderr is not lost with the bundle: its tail is printed, the bundle kept.
    assert "ModuleNotFoundError" in r.stderr
    m = json.loads((keep / "train" / "manifest.json").read_text())
    assert m["outcome"] == "could-not-start"
    assert m["missing_package"] == "einops_not_installed"
    assert "ModuleNotFoundError" in m["stderr_tail"]
    # The verdict is written, and the run is missing evidence, never CUDA evidence.
    doc = _report(out.with_suffix(".json"))
    assert not (doc["verdict"] == "cuda-only" and doc["evidence_level"] == "measured")
    assert doc["verdict"] != "cuda-only"
    assert "einops_not_installed" in doc["evidence"]["missing"]["run"]
    assert doc["evidence"]["tracks"] == []


def test_missing_script_could_not_start(dualtrack, tmp_path):
    project = tmp_path / "p"
    project.mkdir()
    (project / "train.py").write_text("import torch\nif __name__ == '__main__':\n    pass\n")
    r = dualtrack("audit", project, "--run", "nowhere.py", "--python", PY,
                  "-o", tmp_path / "out" / "r.html", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "could not be opened" in r.stderr and "nowhere.py" in r.stderr


def test_audit_of_the_example_is_a_table_of_experiments(dualtrack, example_dir, tmp_path):
    out = tmp_path / "portable" / "report.html"
    r = dualtrack("audit", example_dir, "--run", "train.py --device cpu --steps 2 --portable",
                  "--python", PY, "-o", out, cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "experiments:" in r.stdout
    assert "training" in r.stdout and "preprocessing" in r.stdout
    doc = _report(out.with_suffix(".json"))
    rows = {e["name"]: e for e in doc["experiments"]}
    assert set(rows) == {"training", "preprocessing"}
    assert rows["training"]["run"].endswith("--portable")
    assert rows["preprocessing"]["report"] == "report.preprocessing.html"
    assert (out.parent / "report.preprocessing.html").exists()
    assert (out.parent / "report.preprocessing.json").exists()
    # report.json is the project's: its verdict is the worst experiment's, never the first one's.
    assert doc["schema"] == "dualtrack.project-report/1"
    assert doc["project"] == "cuda-research"
    rank = {"cuda-only": 0, "dev-only": 1, "mac-ready": 2}
    worst = min(rows.values(), key=lambda e: rank[e["verdict"]])
    assert doc["verdict"] == worst["verdict"] and doc["worst_experiment"] == worst["name"]
    # Every experiment has its own page, the first included; each links back to the project's.
    assert rows["training"]["report"] == "report.training.html"
    exp = _report(out.parent / "report.training.json")
    assert exp["experiment"] == "training"
    assert 'href="report.html"' in (out.parent / "report.training.html").read_text()
    # The project page's links are relative and resolve beside it.
    page = out.read_text()
    for name in rows.values():
        assert f'href="{name["report"]}"' in page
        assert (out.parent / name["report"]).exists()
    assert "file://" not in page
    # The next step names the real entry on the Mac, never a placeholder.
    doc = exp
    actions = [s["action"] for s in doc["next_steps"]]
    assert any("python train.py --device mps" in a for a in actions), actions
    assert not any("<entry" in a for a in actions), actions
    assert len(doc["next_steps"]) <= 21
    # The Markdown and HTML reports carry the same table.
    assert "| experiment | entry | verdict |" in out.with_suffix(".md").read_text()
    assert "(report.training.md)" in out.with_suffix(".md").read_text()
    assert 'id="experiments"' in out.read_text()
    # Source links of an experiment's page are relative to the report, so a copied folder works.
    training = (out.parent / "report.training.html").read_text()
    assert 'href="file://' not in training
    assert 'href="../' in training


def test_audit_format_json_select_and_ignore(dualtrack, example_dir, tmp_path):
    r = dualtrack("audit", example_dir, "--entry", "train.py", "--select", "DT1,DT2",
                  "--ignore", "DT106", "--format", "json", "-o", tmp_path / "r" / "r.html",
                  cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["schema"] == "dualtrack.audit/1"
    assert [e["name"] for e in doc["experiments"]] == ["training"]
    findings = doc["experiments"][0]["report"]["evidence"]["scan"]["findings"]
    assert findings, "the example has device and library findings"
    assert all(f["code"][:3] in ("DT1", "DT2") for f in findings)
    assert not any(f["code"] == "DT106" for f in findings)


def test_audit_entry_is_repeatable_and_picks_no_tests(dualtrack, tmp_path):
    project = tmp_path / "p"
    (project / "tests").mkdir(parents=True)
    main = "import torch\nif __name__ == '__main__':\n    print(torch.ones(1))\n"
    (project / "infer.py").write_text(main)
    (project / "train.py").write_text(main)
    (project / "test_model.py").write_text(main)
    (project / "tests" / "train_smoke.py").write_text(main)
    (project / "check.py").write_text("import unittest\nif __name__ == '__main__':\n"
                                      "    unittest.main()\n")
    r = dualtrack("audit", project, "--format", "json", "-o", tmp_path / "o" / "r.html",
                  cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    names = [e["entry"] for e in json.loads(r.stdout)["experiments"]]
    assert names == ["infer.py", "train.py"]
    # Pure PyTorch, nothing in the way: predicted mac-ready, with what to measure on a Mac.
    for e in json.loads(r.stdout)["experiments"]:
        assert e["verdict"] == "mac-ready" and e["evidence_level"] == "predicted", e
    r = dualtrack("audit", project, "--entry", "train.py", "--entry", "infer.py", "--format",
                  "json", "-o", tmp_path / "o2" / "r.html", cwd=tmp_path)
    assert [e["entry"] for e in json.loads(r.stdout)["experiments"]] == ["train.py", "infer.py"]


SLOW = """
import time, torch
print(torch.ones(2).sum(), flush=True)
print("ready", flush=True)
time.sleep(120)
"""


def test_ctrl_c_stops_the_run_writes_no_verdict_and_exits_130(dualtrack_bin, tmp_path):
    project = tmp_path / "p"
    project.mkdir()
    (project / "train.py").write_text(SLOW)
    keep = tmp_path / "runs"
    out = tmp_path / "out" / "r.html"
    proc = subprocess.Popen([str(dualtrack_bin), "audit", str(project), "--run", "train.py",
                             "--python", PY, "--keep-run", str(keep), "-o", str(out)],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    log = keep / "train" / "stdout.log"
    deadline = time.time() + 120
    while time.time() < deadline and not (log.exists() and "ready" in log.read_text()):
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert not out.exists() and not out.with_suffix(".json").exists()


def test_audit_timeout_leaves_the_run_missing(dualtrack, tmp_path):
    project = tmp_path / "p"
    project.mkdir()
    (project / "train.py").write_text(SLOW)
    out = tmp_path / "out" / "r.html"
    r = dualtrack("audit", project, "--run", "train.py", "--python", PY, "--timeout", "3",
                  "-o", out, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = _report(out.with_suffix(".json"))
    assert doc["evidence"]["missing"]["run"].startswith("timed-out")
    assert doc["verdict"] != "cuda-only"


def test_mps_labelled_run_on_a_cpu_host_is_never_mps_evidence(dualtrack, tmp_path):
    script = tmp_path / "s.py"
    script.write_text("import torch\nx = torch.ones(3) * 2\nprint(x.sum())\n")
    bundle = tmp_path / "mps"
    r = dualtrack("run", "--track", "mps", "--no-env", "-o", bundle, "--", PY, script)
    assert r.returncode == 0, r.stderr
    m = json.loads((bundle / "manifest.json").read_text())
    if m.get("mps_available"):
        pytest.skip("this host has MPS")
    assert "warning" in r.stderr and "not MPS evidence" in r.stderr
    assert "device_warning" in m
    out = tmp_path / "r.json"
    r = dualtrack("report", "--track", f"mps={bundle}", "-o", out)
    assert r.returncode == 0, r.stderr
    doc = _report(out)
    track = doc["evidence"]["tracks"][0]
    assert track["label"] == "mps" and track["device"] == "cpu"
    item = {c["id"]: c for c in doc["checklist"]}["real-input-step"]
    assert item["status"] == "missing"
    assert "not MPS evidence" in item["evidence"]
    assert doc["evidence_level"] == "predicted"


def test_run_records_the_data_slice_digest_as_freeze_does(dualtrack, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.bin").write_bytes(b"\x00\x01" * 1000)
    (data / "b.txt").write_text("slice\n")
    baseline = tmp_path / "baseline.json"
    r = dualtrack("freeze", "--data-only", "--data", "data", "-o", baseline, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    digest = json.loads(baseline.read_text())["data"]["digest"]
    script = tmp_path / "s.py"
    script.write_text("import torch\nprint(torch.ones(1))\n")
    r = dualtrack("run", "--track", "cpu", "--no-env", "--data", "data", "-o", tmp_path / "b1",
                  "--", PY, script, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    m = json.loads((tmp_path / "b1" / "manifest.json").read_text())
    assert m["data_digest"] == digest and m["data"]["source"] == "hashed"
    r = dualtrack("run", "--track", "cpu", "--no-env", "--baseline", baseline, "-o",
                  tmp_path / "b2", "--", PY, script, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    m = json.loads((tmp_path / "b2" / "manifest.json").read_text())
    assert m["data_digest"] == digest and m["data"]["source"] == "baseline"
    # Files that differ from the baseline's slice are refused before the run.
    (data / "b.txt").write_text("changed\n")
    r = dualtrack("run", "--track", "cpu", "--no-env", "--data", "data", "--baseline", baseline,
                  "-o", tmp_path / "b3", "--", PY, script, cwd=tmp_path)
    assert r.returncode == 2 and "differ from the baseline" in r.stderr


# ---- The field cases end to end (scan + verdict). The one marked needs the scanner's work on the
# construct; src/verdict/field_test.cc checks the verdict logic on the findings every EXPECT.md
# describes, independently of the scanner.

SCANNER = "needs the scanner's findings for this construct (scan-accuracy work)"


def _field_verdict(dualtrack, tmp_path, case, entry):
    r = dualtrack("audit", FIELD / case, "--entry", entry, "--format", "json",
                  "-o", tmp_path / case / "r.html", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    return doc["experiments"][0]["report"]


@pytest.mark.parametrize("case,entry,verdict", [
    ("jit-extension", "train.py", "cuda-only"),
    ("compiled-extension-package", "train.py", "cuda-only"),
    ("submodule-extension", "train.py", "cuda-only"),
    ("triton-kernel", "model.py", "cuda-only"),
    ("hf-int8-fp16", "finetune.py", "dev-only"),
    ("../../../scan/fixtures/field/jit-extension-package", "train.py", "cuda-only"),
    ("../../../scan/fixtures/field/subproject-extension", "train.py", "cuda-only"),
])
def test_field_verdicts(dualtrack, tmp_path, case, entry, verdict):
    report = _field_verdict(dualtrack, tmp_path, case, entry)
    assert report["verdict"] == verdict, report["reasons"]
    assert report["evidence_level"] == "predicted"


def test_field_qlora_is_not_mac_ready(dualtrack, tmp_path):
    report = _field_verdict(dualtrack, tmp_path, "hf-bitsandbytes-4bit", "train.py")
    assert report["verdict"] != "mac-ready", report["reasons"]


def test_field_guarded_plugin_does_not_stop(dualtrack, tmp_path):
    report = _field_verdict(dualtrack, tmp_path, "guarded-jit-extension", "gen.py")
    stops = {s["id"]: s for s in report["stop_conditions"]}
    assert stops["blocker-on-path"]["state"] != "holds", stops["blocker-on-path"]


def test_field_nccl_fallback_does_not_stop(dualtrack, tmp_path):
    report = _field_verdict(dualtrack, tmp_path, "nccl-with-fallback", "comm.py")
    stops = {s["id"]: s for s in report["stop_conditions"]}
    assert stops["multi-gpu"]["state"] != "holds", stops["multi-gpu"]


# ---- Judged after the safe automatic edits (issue #35): a hard-wired device is not a reason
# against the Mac; the first line says how the experiment gets there.

@pytest.mark.parametrize("case,entry,how", [
    ("launch-mode-dataflow", "train.py", "mac-ready with the device option"),
    ("launch-mode-dataflow", "finetune.py", "mac-ready as written"),
    ("dist-early-return", "main.py", "mac-ready with the device option"),
    ("option-gated-module", "main.py", "mac-ready as written"),
    ("feature-probe-expression", "train.py", "mac-ready as written"),
])
def test_field_mac_ready(dualtrack, tmp_path, case, entry, how):
    report = _field_verdict(dualtrack, tmp_path, case, entry)
    assert report["verdict"] == "mac-ready", report["reasons"]
    assert report["evidence_level"] == "predicted"
    assert report["reasons"][0].startswith(how), report["reasons"]
    stops = {s["id"]: s for s in report["stop_conditions"]}
    assert stops["multi-gpu"]["state"] != "holds", stops["multi-gpu"]


def test_field_mechanical_only_is_mac_ready_after_fix(dualtrack, tmp_path):
    import shutil
    project = tmp_path / "project"
    shutil.copytree(FIELD / "mechanical-only", project)
    report = _field_verdict(dualtrack, tmp_path, "mechanical-only", "train.py")
    first = report["reasons"][0]
    assert report["verdict"] == "mac-ready", report["reasons"]
    # Seven CUDA lines; torch.cuda.amp's two disable themselves without CUDA (portable): five edits.
    assert first.startswith("mac-ready after `dualtrack fix ") and "(5 automatic edit(s)" in first, first
    assert report["automatic_edits"] == 5
    assert "dualtrack fix " in report["next_steps"][0]["action"], report["next_steps"][0]
    # After the edits: the same verdict, with no edit left to make.
    r = dualtrack("fix", project, "--apply", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = dualtrack("audit", project, "--entry", "train.py", "--format", "json",
                  "-o", tmp_path / "after" / "r.html", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    after = json.loads(r.stdout)["experiments"][0]["report"]
    assert after["verdict"] == "mac-ready", after["reasons"]
    assert after["automatic_edits"] == 0 and after["reasons"][0].startswith("mac-ready as written")


def test_field_option_gated_module_names_what_stays_on_cuda(dualtrack, tmp_path):
    report = _field_verdict(dualtrack, tmp_path, "option-gated-module", "main.py")
    assert any("net_tcnn.py:1" in r for r in report["reasons"]), report["reasons"]


SCAN_FIELD = Path(__file__).resolve().parents[1] / "scan" / "fixtures" / "field"


def test_field_notebook_is_an_experiment(dualtrack, tmp_path):
    """../shared/field/notebook-entry: `--entry demo.ipynb` judges the notebook, its cells in
    order; locations name the cell and the line in it."""
    project = tmp_path / "nb"
    shutil.copytree(SCAN_FIELD / "notebook-entry", project)
    r = dualtrack("audit", project, "--entry", "demo.ipynb", "--format", "json",
                  "-o", tmp_path / "out" / "r.html", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)["experiments"][0]["report"]
    assert report["verdict"] == "mac-ready", report["reasons"]
    assert report["automatic_edits"] == 2, report["reasons"]
    first = report["reasons"][0]
    assert first.startswith("mac-ready after `dualtrack fix ") and "demo.ipynb:cell 3:2" in first, first
    assert "dualtrack fix " in report["next_steps"][0]["action"]
    # The Markdown report names cells too, never the joined line.
    md = (tmp_path / "out" / "r.md").read_text()
    assert "demo.ipynb:cell 3:2" in md
    # After the two edits nothing stands in the way, as written.
    assert dualtrack("fix", project, "--apply", cwd=tmp_path).returncode == 0
    r = dualtrack("audit", project, "--entry", "demo.ipynb", "--format", "json",
                  "-o", tmp_path / "after" / "r.html", cwd=tmp_path)
    after = json.loads(r.stdout)["experiments"][0]["report"]
    assert after["verdict"] == "mac-ready" and after["automatic_edits"] == 0, after["reasons"]


def test_notebook_entry_reaches_the_modules_it_imports(dualtrack, tmp_path):
    """A notebook's imports (any cell) put the project's modules on its path; a module only a
    script imports stays off it."""
    project = tmp_path / "p"
    project.mkdir()
    (project / "net.py").write_text("import torch\n\ndef build():\n    return torch.nn.Linear(2, 2).cuda()\n")
    (project / "other.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    nb = {"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# demo\n"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": ["%matplotlib inline\n", "import torch\n"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": "from net import build\nm = build()\ntorch.cuda.synchronize()"}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (project / "demo.ipynb").write_text(json.dumps(nb, indent=1))
    r = dualtrack("scan", project, "--entry", "demo.ipynb", "--format", "json", "--fail-on", "never")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    by_file = {(f["file"], f["code"]): f for f in doc["findings"]}
    assert by_file[("net.py", "DT101")]["reachable"] is True
    assert by_file[("other.py", "DT101")]["reachable"] is False
    sync = by_file[("demo.ipynb", "DT103")]
    # cell 3 (Markdown cells count), line 3 of it; the whole source is one JSON string, so the
    # file line is that string's line.
    assert (sync["cell"], sync["line"], sync["reachable"]) == (3, 3, True), sync
    text = (project / "demo.ipynb").read_text().splitlines()
    assert "torch.cuda.synchronize()" in text[sync["file_line"] - 1]


def test_audit_shows_its_stages_on_a_terminal_and_is_quiet_piped(dualtrack, tmp_path):
    script = shutil.which("script")  # util-linux: runs the command on a pseudo-terminal
    if script is None:
        pytest.skip("no `script` to give the command a terminal")
    project = tmp_path / "p"
    project.mkdir()
    (project / "train.py").write_text("import torch\nif __name__ == '__main__':\n    pass\n")
    binary = os.environ.get("DUALTRACK_BIN") or str(Path(__file__).parents[2] / "build" / "dualtrack")
    line = shlex.join([binary, "audit", str(project), "-o", str(tmp_path / "tty" / "r.html")])
    tty = subprocess.run([script, "-qec", line, "/dev/null"], capture_output=True, text=True,
                         timeout=300)
    assert tty.returncode == 0, tty.stdout[-2000:]
    assert "env: started" in tty.stdout and "train: scan: done" in tty.stdout, tty.stdout[-2000:]
    piped = dualtrack("audit", project, "-o", tmp_path / "piped" / "r.html", cwd=tmp_path)
    assert piped.returncode == 0, piped.stderr
    assert "env: started" not in piped.stderr and "scan: done" not in piped.stderr
