"""Adopting dualtrack in an existing project's CI, as a user does it: code lists and --select,
strict configuration, a baseline of today's findings, `# noqa`, JUnit XML, FORCE_COLOR, the
pre-commit hook (run by pre-commit itself in a temporary git repository) and the GitHub Action's
steps (run as a script)."""

import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]

TRAIN = """import torch
import triton

model = torch.nn.Linear(4, 4).cuda()
x = torch.zeros(2, 4).cuda()  # noqa: DT101
scaler = torch.cuda.amp.GradScaler()


if __name__ == "__main__":
    print(model(x))
"""


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def codes(dualtrack, root, *args):
    r = dualtrack("scan", root, "--format", "json", "--fail-on", "never", *args)
    assert r.returncode == 0, r.stderr
    return sorted((f["code"], f["line"]) for f in json.loads(r.stdout)["findings"])


@pytest.fixture
def project(tmp_path):
    write(tmp_path / "train.py", TRAIN)
    write(tmp_path / "requirements.txt", "torch\nflash-attn\n")
    return tmp_path


def test_code_lists_select_and_noqa(dualtrack, project):
    everything = codes(dualtrack, project)
    assert ("DT101", 4) in everything and ("DT101", 5) not in everything  # noqa: DT101 honoured.
    assert {c for c, _ in everything} >= {"DT101", "DT201", "DT403"}
    # Comma-separated and repeated lists, any case.
    ignored = {c for c, _ in codes(dualtrack, project, "--ignore", "dt1,DT4")}
    assert ignored == {c for c, _ in everything if not c.startswith(("DT1", "DT4"))}
    assert "DT201" in ignored
    assert {c for c, _ in codes(dualtrack, project, "--select", "DT4", "--select", "DT201")} == {
        "DT403", "DT201"}
    # A code that names no rule is an error, not a silent no-op.
    r = dualtrack("scan", project, "--ignore", "DT1,DT9x")
    assert r.returncode == 2 and "--ignore: 'DT9X' is not a rule code" in r.stderr
    r = dualtrack("scan", project, "--select", "cuda")
    assert r.returncode == 2 and "--select: 'CUDA'" in r.stderr


def test_bare_noqa_suppresses_the_whole_line(dualtrack, tmp_path):
    # flake8's and ruff's convention: a bare noqa comment (or `noqa:` with no codes) drops every
    # finding on its line; `noqa: E501` is another linter's and drops nothing of ours.
    write(tmp_path / "train.py", """import torch

a = torch.zeros(1).cuda()  # noqa
b = torch.zeros(1).cuda()  # NOQA:
c = torch.zeros(1).cuda()  # noqa: E501
d = torch.zeros(1).cuda()  # noqa: DT101, E501
e = torch.zeros(1).cuda()  # noqa  dualtrack: ignore[DT102]
f = 1  # noqa
g = 2  # noqa: E501
h = torch.zeros(1).cuda()  # flake8: noqa


if __name__ == "__main__":
    print(a, b, c, d, e, f, g, h)
""")
    write(tmp_path / "requirements.txt",
          "torch  # noqa\nflash-attn  # noqa\nxformers  # noqa: E501\n")
    r = dualtrack("scan", tmp_path, "--format", "json", "--fail-on", "never")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    got = sorted((f["file"], f["line"], f["code"]) for f in doc["findings"])
    assert [x for x in got if x[0] == "train.py" and x[2] == "DT101"] == [
        ("train.py", 5, "DT101"), ("train.py", 7, "DT101"), ("train.py", 10, "DT101")]
    assert [x for x in got if x[0] == "requirements.txt"] == [("requirements.txt", 3, "DT403")]
    # Bare noqa lines that drop nothing of ours belong to other linters: no unused warnings.
    assert doc["suppressions"] == [
        {"file": "train.py", "line": 7, "code": "DT102", "problem": "unused"}]


def test_config_lists_and_strict_keys(dualtrack, project):
    write(project / "pyproject.toml", '[tool.dualtrack]\nselect = "DT1,DT403"\nignore = ["DT403"]\n')
    everything = {c for c, _ in codes(dualtrack, project, "--no-config")}
    assert {c for c, _ in codes(dualtrack, project)} == {c for c in everything if c.startswith("DT1")}
    # --select on the command line replaces the configured one.
    assert {c for c, _ in codes(dualtrack, project, "--select", "DT201")} == {"DT201"}
    write(project / "pyproject.toml", '[tool.dualtrack]\nexlude = ["third_party/*"]\n')
    r = dualtrack("scan", project)
    assert r.returncode == 2
    assert "pyproject.toml:2:1" in r.stderr and "no key 'exlude'; did you mean 'exclude'?" in r.stderr
    write(project / "pyproject.toml", '[tool.dualtrack]\nignore = "DT1,DT77"\n')
    r = dualtrack("scan", project)
    assert r.returncode == 2 and "pyproject.toml" in r.stderr and "'DT77'" in r.stderr
    # Keys of audit's experiments are known keys of the table.
    write(project / "pyproject.toml",
          '[tool.dualtrack]\nrun = "python train.py"\n\n[[tool.dualtrack.experiments]]\n'
          'name = "t"\nentry = "train.py"\n')
    assert dualtrack("scan", project, "--fail-on", "never").returncode == 0


def test_baseline_fails_only_on_new_findings(dualtrack, project):
    baseline = project / ".dualtrack-findings.json"
    r = dualtrack("scan", project, "--write-baseline", baseline)
    assert r.returncode == 0 and "recorded" in r.stderr
    doc = json.loads(baseline.read_text())
    assert doc["schema"] == "dualtrack.findings-baseline/1"
    assert sum(e["count"] for e in doc["findings"]) == len(codes(dualtrack, project))
    # Today's findings: accepted. Lines moved by an edit above them stay accepted.
    r = dualtrack("scan", project, "--baseline", baseline)
    assert r.returncode == 0, r.stdout
    write(project / "train.py", '"""Training."""\n\n' + TRAIN)
    r = dualtrack("scan", project, "--baseline", baseline, "--format", "json")
    assert r.returncode == 0 and json.loads(r.stdout)["findings"] == []
    assert json.loads(r.stdout)["baseline"]["matched"] == sum(e["count"] for e in doc["findings"])
    # A new CUDA call is reported, and only it.
    write(project / "train.py", '"""Training."""\n\n' + TRAIN + "y = x.cuda()\n")
    r = dualtrack("scan", project, "--baseline", baseline)
    assert r.returncode == 1
    assert "accepted findings not shown" in r.stdout
    found = re.findall(r"train\.py:(\d+):\d+  (DT\d+)", r.stdout)
    assert found == [("13", "DT101")], r.stdout
    # Bad baselines are input errors that name the file.
    bad = project / "bad.json"
    bad.write_text('{"schema": "dualtrack.findings-baseline/1", "findings": [{"code": "DT101"}]}')
    r = dualtrack("scan", project, "--baseline", bad)
    assert r.returncode == 2 and "bad.json" in r.stderr and "entry 1 needs" in r.stderr
    bad.write_text("not json")
    r = dualtrack("scan", project, "--baseline", bad)
    assert r.returncode == 2 and "invalid JSON" in r.stderr
    bad.write_text('{"schema": "dualtrack.baseline/1", "created": "2026-12-01T00:00:00Z"}')
    r = dualtrack("scan", project, "--baseline", bad)
    assert r.returncode == 2 and "`dualtrack freeze` baseline" in r.stderr  # The other baseline.
    r = dualtrack("scan", project, "--baseline", project / "missing.json")
    assert r.returncode == 2 and "missing.json" in r.stderr
    r = dualtrack("scan", project, "--baseline", baseline, "--write-baseline", bad)
    assert r.returncode == 2 and "excludes" in r.stderr


def test_junit_for_test_report_viewers(dualtrack, project):
    r = dualtrack("scan", project, "--format", "junit", "--fail-on", "replace")
    assert r.returncode == 1
    root = ET.fromstring(r.stdout)
    cases = root.findall("./testsuite/testcase")
    n = len(codes(dualtrack, project))
    assert len(cases) == n and root.get("tests") == str(n)
    failed = [c for c in cases if c.find("failure") is not None]
    assert root.get("failures") == str(len(failed)) and 0 < len(failed) < n  # fixable passes.
    triton = next(c for c in cases if c.get("name").startswith("DT201"))
    assert triton.find("failure").get("type") == "DT201 replace"
    assert triton.get("file").endswith("train.py") and triton.get("line") == "2"
    # Nothing found: one passing case, so that viewers show the run.
    clean = project / "clean"
    write(clean / "a.py", "import torch\nprint(torch.ones(1))\n")
    root = ET.fromstring(dualtrack("scan", clean, "--format", "junit").stdout)
    assert root.get("tests") == "1" and root.get("failures") == "0"


def test_force_color_and_no_color(dualtrack, project):
    plain = dualtrack("scan", project, "--fail-on", "never").stdout
    assert "\x1b[" not in plain  # Not a terminal.
    forced = dualtrack("scan", project, "--fail-on", "never", env={"FORCE_COLOR": "1"}).stdout
    assert "\x1b[1m" in forced
    both = dualtrack("scan", project, "--fail-on", "never",
                     env={"FORCE_COLOR": "1", "NO_COLOR": "1"}).stdout
    assert "\x1b[" not in both
    never = dualtrack("scan", project, "--color", "never", env={"FORCE_COLOR": "1"}).stdout
    assert "\x1b[" not in never


def git(cwd, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t")
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def test_pre_commit_hook(dualtrack_bin, tmp_path):
    pytest.importorskip("pre_commit")
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "dualtrack")
    # The published hook installs dualtrack with pip (language: python); here the built binary
    # stands in for that install, and everything else is the hook as published.
    local = dict(hook, language="system", entry=f"{dualtrack_bin} scan")
    repo = tmp_path / "repo"
    write(repo / "train.py", "import torch\nx = torch.zeros(1).cuda()\n")
    write(repo / "README.md", "notes\n")
    write(repo / ".pre-commit-config.yaml",
          yaml.safe_dump({"repos": [{"repo": "local", "hooks": [local]}]}))
    git(repo, "init", "-q")
    git(repo, "add", ".")
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "cache"))
    env.pop("NO_COLOR", None)

    def run(*args):
        return subprocess.run(["python3", "-m", "pre_commit", "run", *args], cwd=repo, env=env,
                              capture_output=True, text=True, timeout=300)

    r = run("--all-files")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "train.py:2:20  DT101" in r.stdout
    # Only a README staged: the hook does not run.
    git(repo, "commit", "-qm", "x", "--no-verify")
    write(repo / "README.md", "more notes\n")
    git(repo, "add", "README.md")
    r = run()
    assert r.returncode == 0 and "no files to check" in r.stdout.lower(), r.stdout
    # A device-agnostic script passes.
    write(repo / "train.py",
          "import torch\ndev = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
          "x = torch.zeros(1).to(dev)\n")
    git(repo, "add", "train.py")
    r = run()
    assert r.returncode == 0, r.stdout


def test_github_action_steps(dualtrack_bin, project, tmp_path):
    action = yaml.safe_load((REPO / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    inputs = {k: v.get("default", "") for k, v in action["inputs"].items()}
    inputs["args"] = "--select DT1,DT2"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "dualtrack").symlink_to(dualtrack_bin)
    summary = tmp_path / "summary.md"

    def expand(text):
        text = text.replace("${{ github.action_path }}", str(REPO))
        return re.sub(r"\$\{\{ inputs\.([\w-]+) \}\}", lambda m: inputs[m.group(1)], text)

    results = []
    for step in action["runs"]["steps"]:
        if "run" not in step or "pip install" in step["run"]:
            continue  # setup-python, the pip install (the built binary stands in) and uploads.
        env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}",
                   GITHUB_STEP_SUMMARY=str(summary))
        env.pop("NO_COLOR", None)
        env.update({k: expand(str(v)) for k, v in step.get("env", {}).items()})
        results.append(subprocess.run(["bash", "-c", expand(step["run"])], cwd=project, env=env,
                                      capture_output=True, text=True, timeout=300))
    assert len(results) == 1
    r = results[0]
    assert r.returncode == 1, r.stderr  # fixable findings, the default fail-on.
    assert "::warning file=train.py,line=4," in r.stdout and "title=DT101 fixable" in r.stdout
    assert "DT403" not in r.stdout  # --select from the args input.
    sarif = json.loads((project / "dualtrack.sarif").read_text())
    assert sarif["version"] == "2.1.0" and sarif["runs"][0]["results"]
    assert "# CUDA dependencies" in summary.read_text()
    # A bad input fails the step with dualtrack's exit 2 before anything is written.
    (project / "dualtrack.sarif").unlink()
    inputs["args"] = "--select NOPE"
    step = next(s for s in action["runs"]["steps"] if s.get("name") == "Scan")
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    env.update({k: expand(str(v)) for k, v in step["env"].items()})
    r = subprocess.run(["bash", "-c", expand(step["run"])], cwd=project, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "NOPE" in r.stderr
    assert not (project / "dualtrack.sarif").exists()
