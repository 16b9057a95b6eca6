"""Issue #37: a repository dualtrack is given is untrusted. It must not make dualtrack run its code
(git's configuration, a declared run), keep its secrets (a token in a remote URL), or make an
output replace one of the command's inputs. Options and configuration are validated, never
silently clamped or ignored."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hostile_util import assert_clear_error, make_bundle, op_row, dt  # noqa: F401 (dt is a fixture)

PY = sys.executable
HAVE_GIT = shutil.which("git") is not None


def git(cwd, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t")
    subprocess.run(["git", *args], cwd=cwd, check=True, env=env, capture_output=True)


def hostile_repo(root: Path, marker: Path) -> Path:
    """A committed repository whose own .git/config runs `marker`-writing programs from git status:
    core.fsmonitor on every status and a clean filter on a file whose stat changed."""
    root.mkdir()
    (root / "train.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    (root / "data.txt").write_text("one\n")
    (root / ".gitattributes").write_text("*.txt filter=evil\n")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "init")
    git(root, "remote", "add", "origin", "https://gitlab.example/g/r.git?private_token=glpat-SECRET")
    hook = root / "evil.sh"
    hook.write_text(f"#!/bin/sh\necho ran >> {marker}\ncat\n")
    hook.chmod(0o755)
    with open(root / ".git" / "config", "a") as f:
        f.write(f'[core]\n\tfsmonitor = "{hook}"\n[filter "evil"]\n\tclean = "{hook}"\n'
                f"\trequired = true\n")
    (root / "data.txt").write_text("two\n")  # Stat-dirty: status re-reads it through the filter.
    return root


@pytest.mark.skipif(not HAVE_GIT, reason="git is not installed")
def test_freeze_runs_no_program_from_the_repositorys_git_config(dt, tmp_path):
    marker = tmp_path / "pwned"
    repo = hostile_repo(tmp_path / "repo", marker)
    out = tmp_path / "baseline.json"
    r = dt("freeze", "-C", repo, "--python", PY, "-o", out, timeout=120)
    assert r.returncode == 0, r.stderr
    assert not marker.exists(), "git ran a program named by the repository's own config"
    code = json.loads(out.read_text())["code"]
    assert code["git"] is True and len(code["commit"]) == 40
    assert "data.txt" in code["dirty"]  # The status still ran, without the filter.
    # The token in the remote's query is gone, the repository stays named.
    assert "SECRET" not in out.read_text()
    assert code["remotes"]["origin"] == "https://gitlab.example/g/r.git"


@pytest.mark.skipif(not HAVE_GIT, reason="git is not installed")
def test_run_records_git_facts_without_running_the_repositorys_programs(dt, tmp_path):
    marker = tmp_path / "pwned"
    repo = hostile_repo(tmp_path / "repo", marker)
    (repo / "ok.py").write_text("print('hi')\n")
    r = dt("run", "--track", "cpu", "--no-env", "-o", tmp_path / "b", "--", PY, "ok.py", cwd=repo,
           timeout=120)
    assert r.returncode == 0, r.stderr
    assert not marker.exists()
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["git_dirty"] is True


def declared_run_project(root: Path, marker: Path) -> Path:
    root.mkdir()
    (root / "train.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"
        "import torch\nprint(torch.ones(2).sum())\n")
    (root / "pyproject.toml").write_text(
        '[project]\nname = "p"\nversion = "0"\n[tool.dualtrack]\nentry = "train.py"\n'
        'run = "train.py"\n')
    return root


def test_audit_runs_a_declared_run_only_when_asked(dt, tmp_path):
    marker = tmp_path / "ran"
    project = declared_run_project(tmp_path / "p", marker)
    r = dt("audit", project, "--python", PY, "-o", tmp_path / "r1" / "report.html", timeout=300)
    assert r.returncode == 0, r.stderr
    assert not marker.exists(), "audit ran the project's declared command without being asked"
    assert "not run (declared by the project; --trust-project-run runs it)" in r.stdout
    report = json.loads((tmp_path / "r1" / "report.json").read_text())
    assert "--trust-project-run" in report["evidence"]["missing"]["run"]

    r = dt("audit", project, "--python", PY, "--trust-project-run", "-o",
           tmp_path / "r2" / "report.html", timeout=300)
    assert r.returncode == 0, r.stderr
    assert marker.read_text() == "ran"
    assert "ran: " in r.stdout and "train.py" in r.stdout


# Each writer onto each of its inputs: exit 2 naming both, the input unchanged; --force replaces.

@pytest.fixture
def project(tmp_path):
    p = tmp_path / "proj"
    p.mkdir()
    (p / "train.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    (p / ".gitignore").write_text("*.log\n")
    (p / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
    (p / "README.md").write_text("# my project\n\nRun `python train.py`.\n")
    return p


def assert_refused(r, out: Path, before: bytes, *needles):
    assert_clear_error(r, str(out))
    for n in needles:
        assert str(n) in r.stderr, r.stderr
    assert out.read_bytes() == before


@pytest.mark.parametrize("name", ["train.py", ".gitignore", "pyproject.toml", "README.md"])
def test_scan_output_never_replaces_a_file_it_reads(dt, project, name):
    target = project / name
    before = target.read_bytes()
    r = dt("scan", project, "-o", target)
    assert_refused(r, target, before, "--force")
    r = dt("scan", project, "--write-baseline", target)
    assert_refused(r, target, before)
    # A new file beside them is fine, and --force means it.
    assert dt("scan", project, "-o", project / "scan.txt", "--fail-on", "never").returncode == 0
    r = dt("scan", project, "-o", target, "--force", "--format", "json", "--fail-on", "never")
    assert r.returncode == 0, r.stderr
    assert json.loads(target.read_text())["schema"] == "dualtrack.scan/1"


def test_compare_and_report_never_write_inside_a_bundle(dt, tmp_path):
    a = make_bundle(tmp_path / "a", tensors={"w": np.ones(3)}, metrics=['{"step": 1, "name": "loss", "value": 1.0}'])
    b = make_bundle(tmp_path / "b", tensors={"w": np.ones(3)}, metrics=['{"step": 1, "name": "loss", "value": 1.0}'])
    manifest = b / "manifest.json"
    before = manifest.read_bytes()
    r = dt("compare", a, b, "-o", manifest)
    assert_refused(r, manifest, before, b)
    log = a / "stdout.log"
    log.write_text("the script's output\n")
    # A new file beside the bundle's own is fine; replacing one of them is not.
    r = dt("report", "--track", f"cpu={a}", "-o", a / "report.md")
    assert r.returncode == 0, r.stderr
    r = dt("report", "--track", f"cpu={a}", "--format", "md", "-o", log)
    assert_refused(r, log, b"the script's output\n")


def test_coverage_table_never_replaces_its_yaml(dt, tmp_path):
    import torchgen

    yaml = tmp_path / "native_functions.yaml"
    shutil.copy(Path(torchgen.__file__).parent / "packaged/ATen/native/native_functions.yaml", yaml)
    before = yaml.read_bytes()
    r = dt("coverage", "--yaml", yaml, "--torch", "2.13.0", "--write-table", yaml, timeout=120)
    assert_refused(r, yaml, before)


def test_rule_pages_never_replace_a_folders_own_files(dt, project):
    readme = project / "README.md"
    before = readme.read_bytes()
    r = dt("rule", "--all", "--markdown", project)
    assert_refused(r, readme, before, "--force")
    assert not (project / "DT101.md").exists()  # Checked before the first page is written.
    docs = project / "rules"
    assert dt("rule", "--all", "--markdown", docs).returncode == 0
    assert dt("rule", "--all", "--markdown", docs).returncode == 0  # Its own pages: replaced.
    assert dt("rule", "--all", "--markdown", project, "--force").returncode == 0
    assert readme.read_bytes() != before


def test_audit_reports_never_replace_the_projects_markdown(dt, project):
    readme = project / "README.md"
    before = readme.read_bytes()
    r = dt("audit", project, "--entry", "train.py", "-o", project / "README.html", timeout=300)
    assert_refused(r, readme, before, readme)
    assert not (project / "README.html").exists()  # All three or none.


def test_audit_keep_run_never_replaces_a_project_folder(dt, project):
    train = project / "train"
    train.mkdir()
    (train / "manifest.json").write_text('{"mine": true}\n')
    r = dt("audit", project, "--run", "train.py", "--python", PY, "--keep-run", project, "-o",
           project.parent / "out" / "r.html", timeout=300)
    assert r.returncode == 2, r.stderr
    assert str(train) in r.stderr and "not a dualtrack bundle" in r.stderr
    assert (train / "manifest.json").read_text() == '{"mine": true}\n'


# Numeric options: nonsense is a usage error naming the option, never a run killed at once.

@pytest.mark.parametrize("value", ["nan", "inf", "1e308", "0", "-1", "abc"])
def test_timeouts_are_validated(dt, tmp_path, value):
    (tmp_path / "t.py").write_text("print(1)\n")
    for args in (["run", "--track", "cpu", "-o", tmp_path / "b", "--timeout", value, "--", PY, "t.py"],
                 ["audit", tmp_path, "--timeout", value],
                 ["fix", tmp_path, "--timeout", value]):
        r = dt(*args, cwd=tmp_path)
        assert r.returncode == 2, (args, r.stderr)
        assert "--timeout" in r.stderr and "604800" in r.stderr, r.stderr
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("value", ["-1", "99999999999999T", "1.5M", "+4", "18446744073709551617"])
def test_max_file_size_is_validated(dt, project, value):
    r = dt("scan", project, "--max-file-size", value)
    assert r.returncode == 2 and "--max-file-size" in r.stderr, r.stderr


@pytest.mark.parametrize("value", ["4294967295", "100000", "0", "-3"])
def test_thread_counts_are_validated(dt, project, value):
    for cmd in (["scan", project], ["freeze", "-C", project, "--data", project / "train.py"]):
        r = dt(*cmd, "--threads", value)
        assert r.returncode == 2 and "--threads" in r.stderr, r.stderr
        assert "internal error" not in r.stderr


# Strict configuration: wrong types and misspelt keys are errors at their place.

def test_entry_of_the_wrong_type_is_an_error(dt, project):
    (project / "pyproject.toml").write_text('[tool.dualtrack]\nentry = [1, 2]\n')
    r = dt("scan", project)
    assert_clear_error(r, "pyproject.toml")
    assert "entry must be a string or an array of strings" in r.stderr
    r = dt("audit", project, "-o", project.parent / "o" / "r.html")
    assert r.returncode == 2 or "entry must be a string" in r.stdout + r.stderr


@pytest.mark.parametrize("toml,needle", [
    ("[default]\natl = 1e-3\n", "did you mean 'atol'"),
    ("[metrics]\nrtl = 0.1\n", "did you mean 'rtol'"),
    ('[[tensor]]\nname = "w"\natl = 1\n', "did you mean 'atol'"),
])
def test_misspelt_tolerance_keys_are_errors(dt, tmp_path, toml, needle):
    a, b = tmp_path / "a.npy", tmp_path / "b.npy"
    np.save(a, np.ones(3, dtype=np.float32))
    np.save(b, np.ones(3, dtype=np.float32))
    tol = tmp_path / "tol.toml"
    tol.write_text(toml)
    r = dt("compare", a, b, "--tolerances", tol)
    assert_clear_error(r, str(tol))
    assert needle in r.stderr, r.stderr


# freeze's data slice.

def test_freeze_data_fifo_is_an_error_not_an_empty_slice(dt, tmp_path):
    f = tmp_path / "pipe"
    os.mkfifo(f)
    r = dt("freeze", "-C", tmp_path, "--data", f, "--python", PY, "-o", tmp_path / "b.json")
    assert_clear_error(r, str(f))
    assert "FIFO" in r.stderr
    assert not (tmp_path / "b.json").exists()


def test_freeze_check_matches_a_non_utf8_data_name(dt, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / os.fsdecode(b"caf\xe9.bin")).write_bytes(b"x" * 10)
    (data / "plain.bin").write_bytes(b"y")
    base = tmp_path / "baseline.json"
    r = dt("freeze", "-C", tmp_path, "--data", "data", "--python", PY, "-o", base, timeout=120)
    assert r.returncode == 0, r.stderr
    names = [f["path"] for f in json.loads(base.read_text())["data"]["files"]]
    assert "data/caf\\xe9.bin" in names
    r = dt("freeze", "-C", tmp_path, "--check", base, "--python", PY, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    (data / os.fsdecode(b"caf\xe9.bin")).write_bytes(b"z" * 10)
    r = dt("freeze", "-C", tmp_path, "--check", base, "--python", PY, timeout=120)
    assert r.returncode == 1 and "caf\\xe9.bin" in r.stdout, r.stdout


# Names from the project in Markdown tables and on the terminal.

def test_bar_in_a_file_name_keeps_markdown_tables_whole(dt, tmp_path):
    (tmp_path / "a|b.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    r = dt("scan", tmp_path, "--format", "markdown", "--fail-on", "never")
    rows = [l for l in r.stdout.splitlines() if "a" in l and "b.py" in l and l.startswith("|")]
    assert rows, r.stdout
    header = next(l for l in r.stdout.splitlines() if l.startswith("| location"))
    unescaped = lambda l: l.replace("\\|", "").count("|")
    assert unescaped(rows[0]) == unescaped(header)
    scan_json = tmp_path / "scan.json"
    dt("scan", tmp_path, "--format", "json", "-o", scan_json, "--fail-on", "never")
    md = dt("report", "--scan", scan_json).stdout
    for line in md.splitlines():
        if "b.py" in line and line.startswith("|"):
            assert "a\\|b.py" in line, line


def test_escape_sequences_in_names_never_reach_the_terminal(dt, tmp_path):
    (tmp_path / "x\x1b]0;pwned\x07.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    scan_json = tmp_path / "scan.json"
    dt("scan", tmp_path, "--format", "json", "-o", scan_json, "--fail-on", "never")
    r = dt("report", "--scan", scan_json)
    assert r.returncode == 0, r.stderr
    assert "\x1b" not in r.stdout and "\\x1b" in r.stdout
    r = dt("audit", tmp_path, "--entry", "x\x1b]0;pwned\x07.py", "-o", tmp_path / "o" / "r.html",
           timeout=300)
    assert "\x1b" not in r.stdout + r.stderr


def test_deeply_nested_safetensors_header_is_an_error(dt, tmp_path):
    import struct

    header = b'{"w": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    header += b" " * (-len(header) % 8)
    bad = tmp_path / "deep.safetensors"
    bad.write_bytes(struct.pack("<Q", len(header)) + header)
    good = tmp_path / "good.npy"
    np.save(good, np.ones(3, dtype=np.float32))
    r = dt("compare", bad, good)
    assert_clear_error(r, str(bad))
    assert "nested deeper" in r.stderr, r.stderr
