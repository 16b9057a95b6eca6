"""Issue #37, scan's part: a hostile repository cannot make `scan` read outside itself (symlinks
that leave the tree are listed, never opened), its ignore files are read as git reads them,
f-string replacement fields are code, and `coverage` of a large trace stays near its size."""

import json
import os
import shutil
import subprocess

import pytest

from hostile_util import dt  # noqa: F401 (dt is a fixture)

MARKER = "SECRET-MARKER-7f3a"
CODE = "import torch\nx = torch.zeros(1).cuda()\n"
FORMATS = ("json", "text", "sarif", "markdown", "github", "junit")


def _secret_outside(tmp_path):
    """A folder outside the project holding a file that would be a finding, and a marker."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text(f"import torch\ny = torch.ones(1).cuda()  # {MARKER}\n")
    return outside


def _project(tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "train.py").write_text(CODE)
    return proj


def test_symlinks_leaving_the_project_are_listed_and_never_read(dt, tmp_path):
    outside = _secret_outside(tmp_path)
    proj = _project(tmp_path)
    os.symlink(outside / "secret.py", proj / "link.py")  # a file link
    os.symlink(outside, proj / "vendor")  # a folder link
    os.symlink("../outside/secret.py", proj / "rel.py")  # relative, climbing out
    for fmt in FORMATS:
        r = dt("scan", proj, "--format", fmt, "--fail-on", "never")
        assert r.returncode == 0, (fmt, r.stderr)
        assert MARKER not in r.stdout and MARKER not in r.stderr, fmt
        assert "secret.py" not in r.stdout.replace("-> " + str(outside / "secret.py"), ""), fmt
    doc = json.loads(dt("scan", proj, "--format", "json", "--fail-on", "never").stdout)
    reasons = {s["file"]: s["reason"] for s in doc["skipped"]}
    real = os.path.realpath(outside)
    assert reasons["link.py"] == f"symbolic link leads outside the project: -> {real}/secret.py"
    assert reasons["vendor"] == f"symbolic link leads outside the project: -> {real}"
    assert "rel.py" in reasons
    assert [f["file"] for f in doc["findings"]] == ["train.py"]


def test_outside_link_targets_are_escaped_in_the_text_report(dt, tmp_path):
    outside = tmp_path / "out\x1b[2Jside"
    outside.mkdir()
    proj = _project(tmp_path)
    os.symlink(outside, proj / "vendor")
    r = dt("scan", proj, "--fail-on", "never")
    assert r.returncode == 0, r.stderr
    assert "\x1b" not in r.stdout and "out\\x1b[2Jside" in r.stdout, r.stdout


def test_symlinks_inside_the_project_keep_working_without_double_findings(dt, tmp_path):
    proj = _project(tmp_path)
    (proj / "pkg").mkdir()
    (proj / "pkg" / "model.py").write_text(CODE)
    os.symlink("pkg", proj / "alias")  # the same folder under a second name
    os.symlink(proj, proj / "pkg" / "up")  # a loop back to the root
    os.symlink("train.py", proj / "main.py")  # a file link inside: read under its own name
    doc = json.loads(dt("scan", proj, "--format", "json", "--fail-on", "never").stdout)
    files = sorted(f["file"] for f in doc["findings"])
    assert files == ["main.py", "pkg/model.py", "train.py"], files
    reasons = {s["file"]: s["reason"] for s in doc["skipped"]}
    assert reasons["alias"] == ("symbolic link to a folder of the project (pkg): "
                                "scanned under its own name")
    assert reasons["pkg/up"] == "symlink loop"


def test_symlinked_project_root_is_scanned(dt, tmp_path):
    """The path given on the command line may itself be a link: the user chose it."""
    proj = _project(tmp_path)
    (proj / "pkg").mkdir()
    (proj / "pkg" / "m.py").write_text(CODE)
    os.symlink("pkg", proj / "alias")
    os.symlink(proj, tmp_path / "via")
    doc = json.loads(dt("scan", tmp_path / "via", "--format", "json", "--fail-on", "never").stdout)
    assert sorted(f["file"] for f in doc["findings"]) == ["pkg/m.py", "train.py"]


def _git_listed(proj):
    subprocess.run(["git", "init", "-q", str(proj)], check=True)
    out = subprocess.run(["git", "-C", str(proj), "ls-files", "--others", "--exclude-standard"],
                         check=True, capture_output=True, text=True).stdout.splitlines()
    return {f for f in out if f.endswith(".py")}


def _scanned(dt, proj):
    r = dt("scan", proj, "--format", "json", "--fail-on", "never")
    assert r.returncode == 0, r.stderr
    return {f["file"] for f in json.loads(r.stdout)["findings"]}


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_gitignore_with_a_byte_order_mark_matches_git(dt, tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    for name in ("first.py", "second.py", "kept.py"):
        (proj / name).write_text(CODE)
    (proj / ".gitignore").write_bytes(b"\xef\xbb\xbffirst.py\r\nsecond.py\r\n")
    want = _git_listed(proj)
    assert want == {"kept.py"}, want  # git skips the mark: the first pattern applies
    assert _scanned(dt, proj) == want


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_info_exclude_applies_below_gitignore(dt, tmp_path):
    proj = tmp_path / "proj"
    (proj / "sub").mkdir(parents=True)
    for name in ("local.py", "sub/local.py", "negated.py", "kept.py", "scratch/a.py"):
        (proj / name).parent.mkdir(parents=True, exist_ok=True)
        (proj / name).write_text(CODE)
    want_init = _git_listed(proj)  # creates .git
    assert "local.py" in want_init
    # exclude ignores local.py everywhere, negated.py and scratch/; the .gitignore takes negated.py
    # back (a .gitignore outranks info/exclude).
    (proj / ".git" / "info").mkdir(exist_ok=True)
    exclude = proj / ".git" / "info" / "exclude"
    exclude.write_bytes(b"\xef\xbb\xbflocal.py\nnegated.py\nscratch/\n")
    (proj / ".gitignore").write_text("!negated.py\n")
    want = _git_listed(proj)
    assert want == {"negated.py", "kept.py"}, want
    assert _scanned(dt, proj) == want
    # --no-gitignore reads everything.
    r = dt("scan", proj, "--no-gitignore", "--format", "json", "--fail-on", "never")
    assert "local.py" in {f["file"] for f in json.loads(r.stdout)["findings"]}


FSTRINGS = """import torch
a = f"{x.cuda()}"
b = f"use .cuda() here, and torch.cuda.synchronize() {n}"
c = f"{torch.cuda.synchronize()!r:>10}"
d = f"{x.cuda():>10}"
e = f\"\"\"text
  {y.cuda()}\"\"\"
g = f"{f'{z.cuda()}'}"
h = f"{d["k"].cuda()}"
i = f"{{x.cuda()}}"
j = f"{v:{w.cuda()}}"
"""


def test_fstring_fields_are_scanned_and_their_text_is_not(dt, tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "t.py").write_text(FSTRINGS)
    r = dt("scan", proj, "--format", "json", "--fail-on", "never")
    assert r.returncode == 0, r.stderr
    got = [(f["code"], f["line"], f["column"]) for f in json.loads(r.stdout)["findings"]]
    assert got == [("DT101", 2, 10), ("DT103", 4, 8), ("DT101", 5, 10), ("DT101", 7, 6),
                   ("DT101", 8, 13), ("DT101", 9, 15), ("DT101", 11, 13)], got


def test_coverage_of_a_large_trace_stays_near_its_size(dualtrack_bin, tmp_path):
    """A 153 MB ops.jsonl took 3.4 GB: the file, every row and the report as a JSON tree were held
    at once. Rows are now merged as they are read and the report is written an operator at a
    time. The trace here is the worst case: every row a place of its own, so nothing merges."""
    from test_memory import BASE, MB, peak_rss

    ops = ("aten::add", "aten::mul", "aten::convolution", "aten::addmm", "myext::fused")
    path = tmp_path / "ops.jsonl"
    rows = 0
    with open(path, "w") as f:
        while f.tell() < 24 * MB:
            loc = {"file": f"/home/user/project/models/layer_{rows % 500}.py", "line": rows + 1,
                   "function": "forward"}
            f.write(json.dumps({"op": ops[rows % len(ops)], "overload": "Tensor", "device": "cpu",
                                "dtypes": ["float32"], "count": 3, "location": loc, "status": "ok",
                                "error": None, "max_ndim": 4}) + "\n")
            rows += 1
    size = path.stat().st_size
    out = tmp_path / "coverage.json"
    code, peak, err = peak_rss(dualtrack_bin, out, "coverage", path, "--format", "json")
    assert code == 1, err  # myext::fused is unknown to the table
    doc = json.loads(out.read_text())
    assert len(doc["ops"]) == rows and sum(o["count"] for o in doc["ops"]) == 3 * rows
    assert doc["summary"]["unknown"] >= rows // len(ops)
    assert peak <= BASE + 4 * size, f"json: peak {peak / MB:.0f} MiB, trace {size / MB:.0f} MiB"
    out = tmp_path / "coverage.txt"
    code, peak, err = peak_rss(dualtrack_bin, out, "coverage", path)
    assert code == 1, err
    assert out.read_text().count("layer_") == rows
    assert peak <= BASE + 4 * size, f"text: peak {peak / MB:.0f} MiB, trace {size / MB:.0f} MiB"
