"""bench/field/score.py on a tiny fake repository, fake labels and a fake dualtrack.

No network, no real repositories, no real binary: the fake prints canned scan JSON
and audit verdicts, so the numbers below are known in advance.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
SCORE = REPO_ROOT / "bench" / "field" / "score.py"


def finding(file, line, cls="device", guarded=False, code="DT101"):
    return {"file": file, "line": line, "code": code, "class": cls, "guarded": guarded,
            "severity": "fixable", "message": f"{code} at {file}:{line}", "cell": None}


# Canned scan output. In scope (train.py, util.py, csrc/): six findings; one outside.
SCAN = {
    "schema": "dualtrack.scan/1",
    "findings": [
        finding("train.py", 11),                       # label train.py:10 (+1 line): TP
        finding("train.py", 22),                       # label train.py:20 is 2 away: adjudicated fp
        finding("train.py", 30),                       # nothing: left to adjudicate
        finding("csrc/k.cu", 57, cls="extension", code="DT303"),  # file-level label: TP
        finding("util.py", 5, cls="library", guarded=False, code="DT201"),  # label says device, guarded
        finding("util.py", 40, code="DT105"),          # adjudicated tp-missed-label
        finding("tests/test_x.py", 3),                 # outside the scope: ignored
    ],
}

LABELS = {
    "repo": "someone/fake", "commit": "0" * 40, "kind": "test",
    "scope": ["train.py", "util.py", "csrc"],
    "findings": [
        {"file": "train.py", "line": 10, "class": "device", "guarded": False,
         "severity": "fixable", "what": "model.cuda()"},
        {"file": "train.py", "line": 20, "class": "device", "guarded": False,
         "severity": "fixable", "what": "x.cuda()"},
        {"file": "csrc/k.cu", "line": 0, "file_level": True, "class": "extension",
         "guarded": False, "severity": "blocker", "what": "CUDA kernels"},
        {"file": "util.py", "line": 5, "class": "device", "guarded": True,
         "severity": "portable", "what": "torch.cuda.synchronize() under is_available"},
    ],
    "experiments": [
        {"name": "train", "entry": "train.py", "command": "python train.py",
         "verdict": "dev-only", "reason": "r"},
        {"name": "eval", "entry": "util.py", "command": "python util.py",
         "verdict": "cuda-only", "reason": "r"},
    ],
}

ADJ = [
    {"file": "train.py", "line": 22, "code": "DT101", "judgement": "fp", "why": "a comment"},
    {"file": "util.py", "line": 40, "code": "DT105", "judgement": "tp-missed-label",
     "why": "a real CUDA call the labels missed"},
]

# The fake answers `scan`, `audit --help` and `audit PATH --entry E ...`; with
# FAKE_NO_FORMAT set its audit has no --format and writes the report given with -o.
FAKE = textwrap.dedent(
    """\
    #!{python}
    import json, os, sys
    args = sys.argv[1:]
    if args[0] == "scan":
        assert args[2:] == ["--format", "json", "--fail-on", "never"], args
        print(open({scan!r}).read())
        sys.exit(1)
    if args[0] == "audit":
        no_format = bool(os.environ.get("FAKE_NO_FORMAT"))
        if "--help" in args:
            print("audit PATH --entry E -o FILE" + ("" if no_format else " --format json"))
            sys.exit(0)
        entry = args[args.index("--entry") + 1]
        verdict = {{"train.py": "dev-only", "util.py": "mac-ready"}}[entry]
        report = {{"schema": "dualtrack.report/1", "verdict": verdict}}
        if no_format:
            assert "--format" not in args
            open(args[args.index("-o") + 1], "w").write(json.dumps(report))
        else:
            assert args[args.index("--format") + 1] == "json"
            print(json.dumps(report))
        sys.exit(0)
    sys.exit(2)
    """
)


@pytest.fixture
def corpus(tmp_path):
    repos = tmp_path / "repos"
    tree = repos / "fake"
    (tree / "csrc").mkdir(parents=True)
    (tree / "tests").mkdir()
    for rel in ("train.py", "util.py", "csrc/k.cu", "tests/test_x.py"):
        (tree / rel).write_text("x = 1\n" * 60)
    labels = tmp_path / "labels"
    labels.mkdir()
    (labels / "fake.json").write_text(json.dumps(LABELS))
    adj = tmp_path / "adjudications"
    adj.mkdir()
    (adj / "fake.json").write_text(json.dumps(ADJ))
    scan = tmp_path / "scan.json"
    scan.write_text(json.dumps(SCAN))
    fake = tmp_path / "dualtrack"
    fake.write_text(FAKE.format(python=sys.executable, scan=str(scan)))
    fake.chmod(0o755)
    return tmp_path


def score(corpus, *extra, env=None):
    out = corpus / "results.json"
    cmd = [sys.executable, str(SCORE), "--repos", str(corpus / "repos"),
           "--dualtrack", str(corpus / "dualtrack"), "--labels", str(corpus / "labels"),
           "--adjudications", str(corpus / "adjudications"), "--out", str(out), *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, **(env or {})))
    result = json.loads(out.read_text()) if p.returncode == 0 else None
    return p, result


def test_numbers_with_adjudication_line_tolerance_file_level_and_scope(corpus):
    p, res = score(corpus)
    assert p.returncode == 0, p.stderr
    r = res["repositories"][0]
    assert r["labels"] == 4
    assert r["matched"] == 3                      # train.py:20 is 2 lines from the finding
    assert r["recall"] == pytest.approx(0.75)
    assert [m["line"] for m in r["misses"]] == [20]
    assert r["findings_total"] == 7
    assert r["findings_in_scope"] == 6            # tests/test_x.py is out of scope
    assert r["sampled"] == 6
    assert r["sample_tp"] == 4                    # 3 label matches + 1 tp-missed-label
    assert r["sample_tp_adjudicated"] == 1
    assert r["precision"] == pytest.approx(4 / 6)
    assert [(f["file"], f["line"]) for f in r["to_adjudicate"]] == [("train.py", 30)]
    assert [(f["file"], f["line"]) for f in r["adjudicated_fp"]] == [("train.py", 22)]
    assert r["guard_agreement"] == pytest.approx(2 / 3)   # util.py:5 disagrees
    assert r["class_agreement"] == pytest.approx(2 / 3)
    assert r["verdict_agree"] == 1 and r["experiments"] == 2
    assert res["totals"]["recall"] == pytest.approx(0.75)
    assert res["totals"]["precision"] == pytest.approx(4 / 6)
    assert res["audit"] == "--format json"
    # The developer's work list is printed.
    assert "train.py:20: [device] x.cuda()" in p.stdout
    assert "train.py:30: DT101" in p.stdout
    assert "TOTAL" in p.stdout


def test_sample_is_bounded_and_seeded(corpus):
    _, a = score(corpus, "--sample", "2", "--seed", "7", "--no-audit")
    _, b = score(corpus, "--sample", "2", "--seed", "7", "--no-audit")
    ra, rb = a["repositories"][0], b["repositories"][0]
    assert ra["sampled"] == 2
    assert ra["sample_tp"] + ra["sample_fp"] == 2
    assert ra == rb
    assert ra["verdicts"][0]["tool"] is None and ra["verdict_agree"] == 0


def test_audit_without_format_reads_the_report(corpus):
    p, res = score(corpus, env={"FAKE_NO_FORMAT": "1"})
    assert p.returncode == 0, p.stderr
    assert res["audit"] == "-o report.json"
    v = res["repositories"][0]["verdicts"]
    assert [(e["tool"], e["agree"]) for e in v] == [("dev-only", True), ("mac-ready", False)]


def test_commit_mismatch_warns(corpus):
    tree = corpus / "repos" / "fake"
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@t"]
    if subprocess.run(git + ["init", "-q"], capture_output=True).returncode != 0:
        pytest.skip("git not usable here")
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "x"], check=True)
    p, res = score(corpus, "--no-audit")
    assert p.returncode == 0
    assert "checkout is at" in p.stderr
    assert res["repositories"][0]["recall"] == pytest.approx(0.75)


def test_bad_input_exits_2(corpus):
    bad = dict(LABELS, findings=[dict(LABELS["findings"][0], **{"class": "gpu"})])
    (corpus / "labels" / "fake.json").write_text(json.dumps(bad))
    p, _ = score(corpus)
    assert p.returncode == 2
    assert "class must be one of" in p.stderr
    (corpus / "labels" / "fake.json").write_text(json.dumps(LABELS))
    p, _ = score(corpus, "--dualtrack", str(corpus / "missing"))
    assert "not an executable file" in p.stderr
    assert p.returncode == 2


def test_missing_checkout_is_reported_not_fatal(corpus):
    (corpus / "labels" / "other.json").write_text(json.dumps(dict(LABELS, repo="x/other")))
    p, res = score(corpus, "--no-audit")
    assert p.returncode == 0
    names = {r["name"]: r for r in res["repositories"]}
    assert names["other"]["error"] == "no checkout"
    assert names["fake"]["matched"] == 3
    assert res["totals"]["repositories_failed"] == 1


def test_notebook_labels_match_the_file_line(corpus):
    """Labels of a notebook give lines of the .ipynb file; a finding's `line` is within its cell
    and its `file_line` is the file's: the match uses the file line."""
    nb = finding("demo.ipynb", 2)
    nb.update({"cell": 3, "file_line": 29})
    (corpus / "scan.json").write_text(json.dumps({"schema": "dualtrack.scan/1", "findings": [nb]}))
    labels = dict(LABELS, scope=["demo.ipynb"], findings=[
        {"file": "demo.ipynb", "line": 29, "class": "device", "guarded": False,
         "severity": "fixable", "what": "cell 3: model.cuda()"}])
    (corpus / "labels" / "fake.json").write_text(json.dumps(labels))
    (corpus / "repos" / "fake" / "demo.ipynb").write_text("{}\n" * 40)
    p, res = score(corpus, "--no-audit")
    assert p.returncode == 0, p.stderr
    r = res["repositories"][0]
    assert (r["labels"], r["matched"], r["sample_tp"]) == (1, 1, 1)
