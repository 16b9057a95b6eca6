"""Class 9 and 10: answers that must not be silently wrong: .gitignore matched as git matches it
(git itself is the oracle), coverage of unknown operators, bundles with missing files, corrupted
zip members; names with escapes and invalid UTF-8."""

import json
import os
import shutil
import subprocess
import zipfile
import zlib

import numpy as np
import pytest

from hostile_util import assert_clear_error, make_bundle, op_row, dt  # noqa: F401 (dt is a fixture)

GITIGNORE = r"""
src/*.py
!src/keep.py
a/**/c.py
**/deep/x.py
docs/
trailing\ 
name\ with\ space.py
\#hash.py
[!k]eep_*.py
lit\*.py
data[0-9].py
x/**
/rooted.py
*.tmp.py
"""

FILES = [
    "src/a.py", "src/keep.py", "src/sub/b.py", "src/sub/deeper/e.py",
    "a/c.py", "a/b/c.py", "a/b/d/c.py", "a/b/d/other.py",
    "deep/x.py", "m/deep/x.py", "m/n/deep/x.py", "m/deep/y.py",
    "docs/d.py", "pkg/docs/d.py",
    "trailing ", "name with space.py", "#hash.py", "keep_1.py", "beep_1.py",
    "lit*.py", "litx.py", "data1.py", "dataa.py",
    "x/y/z.py", "x.py", "rooted.py", "sub/rooted.py", "one.tmp.py", "q/two.tmp.py",
    "plain.py",
]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_gitignore_matches_git_ls_files(dt, tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    for f in FILES:
        p = proj / f
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("import torch\ntorch.cuda.synchronize()\n")
    (proj / ".gitignore").write_text(GITIGNORE.lstrip("\n"))
    # A nested .gitignore applies below its folder only.
    (proj / "m" / ".gitignore").write_text("y.py\n")
    subprocess.run(["git", "init", "-q", str(proj)], check=True)
    listed = subprocess.run(["git", "-C", str(proj), "ls-files", "--others", "--exclude-standard"],
                            check=True, capture_output=True, text=True).stdout.splitlines()
    want = {f for f in listed if not f.endswith(".gitignore")}
    # git quotes odd names; the oracle compares only names it prints plainly.
    want = {f for f in want if not f.startswith('"')}
    r = dt("scan", proj, "--format", "json", "--fail-on", "never")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    found = {f["file"] for f in doc["findings"]}
    plain = {f for f in FILES if f.endswith(".py")}
    assert {f for f in found if f in plain} == {f for f in want if f in plain}


def test_coverage_of_unknown_operators_is_not_a_clean_pass(dt, tmp_path):
    b = make_bundle(tmp_path / "b", ops=[op_row(op="myext::fused_thing", overload="default"),
                                         op_row(op="myext::other", overload="default")])
    r = dt("coverage", b)
    assert r.returncode == 1, (r.returncode, r.stdout)
    assert "unknown to the table" in r.stdout
    assert "every operator runs on MPS" not in r.stdout


def test_bundle_with_missing_files_is_not_zero_ops(dt, tmp_path):
    b = make_bundle(tmp_path / "b", ops=[op_row()], metrics=['{"step": 1, "name": "loss", "value": 1}'])
    (b / "ops.jsonl").unlink()
    for args in (["show", b], ["coverage", b], ["report", "--track", f"cpu={b}", "--format", "json"]):
        r = dt(*args)
        assert_clear_error(r, "ops.jsonl")


def test_npz_member_with_a_bad_crc_is_refused(dt, tmp_path):
    good = tmp_path / "good.npz"
    np.savez(good, w=np.arange(64, dtype=np.float32))
    raw = bytearray(good.read_bytes())
    # Flip one byte of the stored array data (stored, not deflated): only the CRC can tell.
    idx = raw.rfind(np.arange(64, dtype=np.float32).tobytes()[-8:])
    assert idx > 0
    raw[idx] ^= 0xFF
    bad = tmp_path / "bad.npz"
    bad.write_bytes(bytes(raw))
    r = dt("compare", bad, good)
    assert_clear_error(r, "bad.npz")
    assert "CRC" in r.stderr


def test_pt_member_with_a_bad_crc_is_refused(dt, tmp_path):
    torch = pytest.importorskip("torch")
    good = tmp_path / "good.pt"
    torch.save({"w": torch.arange(64, dtype=torch.float32)}, good)
    raw = bytearray(good.read_bytes())
    idx = raw.rfind(np.arange(64, dtype=np.float32).tobytes()[-8:])
    assert idx > 0
    raw[idx] ^= 0xFF
    bad = tmp_path / "bad.pt"
    bad.write_bytes(bytes(raw))
    r = dt("compare", bad, good)
    assert_clear_error(r, "bad.pt")
    assert "CRC" in r.stderr


def test_control_characters_in_names_are_escaped(dt, tmp_path):
    evil = "w\x1b[2J\x1b]0;pwned\x07"
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    np.savez(a, **{evil: np.zeros(3, np.float32)})
    np.savez(b, **{evil: np.ones(3, np.float32)})
    r = dt("compare", a, b)
    assert r.returncode == 1, r.stderr
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout
    assert "\\x1b" in r.stdout
    r = dt("compare", a, b, "--format", "json")
    assert json.loads(r.stdout)["tensors"][0]["name"].startswith("w\x1b")  # JSON keeps it, escaped


def test_error_messages_escape_file_names(dt, tmp_path):
    evil = tmp_path / "x\x1b[31m.npy"
    evil.write_bytes(b"not an npy")
    r = dt("compare", evil, evil)
    assert r.returncode == 2
    assert "\x1b" not in r.stderr and "\\x1b" in r.stderr


def test_invalid_utf8_names_do_not_break_json_output(dt, tmp_path):
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    for path, val in ((a, 0.0), (b, 1.0)):
        with zipfile.ZipFile(path, "w") as z:
            buf = __import__("io").BytesIO()
            np.save(buf, np.full(3, val, np.float32))
            info = zipfile.ZipInfo("ok.npy")
            z.writestr(info, buf.getvalue())
        raw = path.read_bytes().replace(b"ok.npy", b"\xff\xfe.npy")
        path.write_bytes(raw)
    r = dt("compare", a, b, "--format", "json")
    assert r.returncode in (1, 2), r.stderr
    assert "internal error" not in r.stderr
    if r.returncode == 1:
        json.loads(r.stdout)


@pytest.mark.parametrize("rules", ["/etc/passwd", "../outside.json", "link.json"])
def test_project_rules_file_must_stay_inside_the_project(dt, tmp_path, rules):
    proj = tmp_path / "proj"
    proj.mkdir()
    (tmp_path / "outside.json").write_text('{"rules": []}')
    os.symlink("/etc/passwd", proj / "link.json")
    (proj / "t.py").write_text("import torch\n")
    (proj / "pyproject.toml").write_text(f'[tool.dualtrack]\nrules = "{rules}"\n')
    r = dt("scan", proj, "--fail-on", "never")
    assert_clear_error(r, "inside the project")
    assert "root:" not in r.stderr


def test_project_rules_parse_errors_do_not_echo_the_file(dt, tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "t.py").write_text("import torch\n")
    (proj / "rules.json").write_text("SECRET-TOKEN-12345 {")
    (proj / "pyproject.toml").write_text('[tool.dualtrack]\nrules = "rules.json"\n')
    r = dt("scan", proj, "--fail-on", "never")
    assert_clear_error(r, "rules.json")
    assert "SECRET" not in r.stderr


def _odd_names_project(tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    code = b"import torch\nx = torch.zeros(1).cuda()  # \x1b[2J\n"
    (proj / os.fsdecode(b"bad\xff\xfename.py")).write_bytes(code)
    (proj / "esc\x1b[31mred.py").write_bytes(code)
    return proj


def test_scan_json_and_sarif_survive_invalid_utf8_file_names(dt, tmp_path):
    proj = _odd_names_project(tmp_path)
    r = dt("scan", proj, "--format", "json", "--fail-on", "never")
    assert r.returncode == 0, r.stderr
    files = sorted(f["file"] for f in json.loads(r.stdout)["findings"])
    assert len(files) == 2 and files[0].startswith("bad")
    r = dt("scan", proj, "--format", "sarif", "--fail-on", "never")
    assert r.returncode == 0, r.stderr
    assert len(json.loads(r.stdout)["runs"][0]["results"]) == 2


def test_scan_text_escapes_names_and_snippets(dt, tmp_path):
    proj = _odd_names_project(tmp_path)
    r = dt("scan", proj, "--fail-on", "never")
    assert r.returncode == 0, r.stderr
    assert "\x1b[31m" not in r.stdout and "\x1b[2J" not in r.stdout
    assert "esc\\x1b[31mred.py" in r.stdout and "bad\\xff\\xfename.py" in r.stdout


def test_paths_deeper_than_path_max_are_noted(dt, tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "top.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    fd = os.open(proj, os.O_RDONLY)
    try:
        for _ in range(25):  # 25 x 201 bytes: past Linux's and macOS's PATH_MAX
            os.mkdir("d" * 200, dir_fd=fd)
            nfd = os.open("d" * 200, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        wfd = os.open("deep.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(wfd, b"import torch\nx = torch.zeros(1).cuda()\n")
        os.close(wfd)
    finally:
        os.close(fd)
    r = dt("scan", proj, "--format", "json", "--fail-on", "never")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert any("too long" in s["reason"] for s in doc["skipped"]), doc["skipped"]
    shutil.rmtree(proj, ignore_errors=True)


def test_show_and_coverage_escape_names_from_the_bundle(dt, tmp_path):
    evil = "aten::add\x1b]0;owned\x07"
    b = make_bundle(tmp_path / "b", ops=[op_row(op=evil)],
                    metrics=['{"step": 1, "name": "loss\\u001b[2J", "value": 1.0}'])
    for args in (["show", b], ["coverage", b]):
        r = dt(*args)
        assert r.returncode in (0, 1), r.stderr
        assert "\x1b" not in r.stdout and "\x07" not in r.stdout, args
        assert "\\x1b" in r.stdout, args


def test_sarif_uris_are_percent_encoded(dt, tmp_path):
    proj = tmp_path / "my proj"
    proj.mkdir()
    (proj / "a b#1%.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    (proj / os.fsdecode(b"\xff.py")).write_bytes(b"import torch\nx = torch.zeros(1).cuda()\n")
    r = dt("scan", proj, "--format", "sarif", "--fail-on", "never")
    assert r.returncode == 0, r.stderr
    run = json.loads(r.stdout)["runs"][0]
    uris = sorted(res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for res in run["results"])
    assert uris == ["%FF.py", "a%20b%231%25.py"]
    base = run["originalUriBaseIds"]["SRCROOT"]["uri"]
    assert base.startswith("file:///") and base.endswith("/my%20proj/")


def test_columns_count_characters_and_sarif_says_so(dt, tmp_path):
    """A line with non-ASCII text before the finding: the column is the character, in JSON, text and
    SARIF (whose run names the kind), so an editor lands on `.cuda()`."""
    proj = tmp_path / "p"
    proj.mkdir()
    line = 'msg = "größe → ½"; x = torch.zeros(1).cuda()'
    (proj / "a.py").write_text("import torch\n" + line + "\n", encoding="utf-8")
    want = line.index("cuda()") + 1  # Python counts code points
    assert want != line.encode().index(b"cuda()") + 1
    j = dt("scan", proj, "--format", "json", "--fail-on", "never")
    assert j.returncode == 0, j.stderr
    assert [(f["code"], f["column"]) for f in json.loads(j.stdout)["findings"]] == [("DT101", want)]
    s = dt("scan", proj, "--format", "sarif", "--fail-on", "never")
    run = json.loads(s.stdout)["runs"][0]
    assert run["columnKind"] == "unicodeCodePoints"
    region = run["results"][0]["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 2, "startColumn": want}
    t = dt("scan", proj, "--fail-on", "never", "--color", "never")
    assert f"a.py:2:{want}" in t.stdout, t.stdout


# A project's rule file is user input: a field of the wrong type or an unknown name is an error
# that names the file and the field, never an internal error.
@pytest.mark.parametrize("change,needle", [
    ({"mps_only": "yes"}, "mps_only"),
    ({"class": "gpu"}, "class"),
    ({"class": 3}, "class"),
    ({"severity": "fatal"}, "severity"),
    ({"code": "DT101"}, "clashes"),
])
def test_project_rules_with_bad_fields_are_input_errors(dt, tmp_path, change, needle):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "t.py").write_text("import torch\nlab.launch()\n")
    rule = {"code": "DT901", "class": "device", "severity": "fixable", "title": "Lab launcher",
            "message": "{name}", "python_api": "lab.launch"}
    rule.update(change)
    (proj / "rules.json").write_text(json.dumps({"rules": [rule]}))
    (proj / "pyproject.toml").write_text('[tool.dualtrack]\nrules = "rules.json"\n')
    r = dt("scan", proj, "--fail-on", "never")
    assert_clear_error(r, "rules.json")
    assert needle in r.stderr
