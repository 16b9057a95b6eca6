"""One fixture folder per scan rule (tests/scan/rules/DTxxx/), ruff-style.

Each line that must produce the folder's code carries `expect: DTxxx` (or `expect-guarded: DTxxx` when the
finding must be `guarded: true`) in its file's comment syntax; files without comments list theirs in
`EXPECT` as `path:line:CODE` (append `:guarded` for a guarded one). A notebook's annotations sit in its
code cells; their lines count within the cell, as the scanner reports them. The findings of the folder's
own code must equal the annotations exactly, both ways, so a missed construct and a false positive both
fail. Findings of other codes are ignored: a `.cuda()` fixture may also report a device string.

A construct the scanner gets wrong lives in its own file `bug_*` (or folder `bug_*/`, for a file whose
name matters) inside the folder, whose first line says what is wrong. It is checked on its own as a
strict xfail, so fixing the scanner turns it into a failure that asks for the marker to be dropped.
"""

import json
import re
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
RULES_DIR = HERE / "rules"
RULES_JSON = HERE.parent.parent / "data" / "scan" / "rules.json"

ANNOTATION = re.compile(r"\bexpect(-guarded)?:\s*(DT\d{3}(?:\s*,\s*DT\d{3})*)")
EXPECT_LINE = re.compile(r"^(?P<path>[^:#]+):(?P<line>\d+):(?P<code>DT\d{3})(?P<guarded>:guarded)?$")


def _rules():
    return json.loads(RULES_JSON.read_text())["rules"]


def _live_codes():
    return {r["code"] for r in _rules() if not r.get("retired")}


def _folders():
    return sorted(p for p in RULES_DIR.iterdir() if p.is_dir()) if RULES_DIR.is_dir() else []


def _bug_unit(rel: str):
    """The `bug_*` file or folder that holds a fixture path, or None."""
    parts = Path(rel).parts
    for i, part in enumerate(parts):
        if part.startswith("bug_"):
            return "/".join(parts[: i + 1])
    return None


def _lines(path: Path, rel: str):
    """(where, line, text) of a file; a notebook's lines count within their cell, as findings do."""
    if path.suffix == ".ipynb":
        for index, cell in enumerate(json.loads(path.read_text())["cells"], start=1):
            source = cell.get("source", [])
            text = "".join(source) if isinstance(source, list) else source
            for lineno, line in enumerate(text.splitlines(), start=1):
                yield _where(rel, index), lineno, line
        return
    for lineno, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
        yield rel, lineno, line


def _where(file: str, cell) -> str:
    return f"{file}#cell{cell}" if cell is not None else file


def expectations(folder: Path):
    """(file, line, code, guarded) for every annotation of the folder's own code."""
    code = folder.name
    want = set()
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or path.name == "EXPECT":
            continue
        rel = path.relative_to(folder).as_posix()
        for where, lineno, text in _lines(path, rel):
            for m in ANNOTATION.finditer(text):
                codes = {c.strip() for c in m.group(2).split(",")}
                if code in codes:
                    want.add((where, lineno, code, bool(m.group(1))))
    expect_file = folder / "EXPECT"
    if expect_file.exists():
        for raw in expect_file.read_text().splitlines():
            raw = raw.strip()
            if not raw or raw.startswith("#"):
                continue
            m = EXPECT_LINE.match(raw)
            assert m, f"{expect_file}: malformed line {raw!r} (want path:line:CODE[:guarded])"
            assert (folder / m["path"]).is_file(), f"{expect_file}: no file {m['path']}"
            if m["code"] == code:
                want.add((m["path"], int(m["line"]), code, bool(m["guarded"])))
    return want


_SCANS = {}


def scan_findings(dualtrack_bin, folder: Path):
    """The folder's own-code findings as (file, line, code, guarded); one scan per folder per session."""
    if folder not in _SCANS:
        r = subprocess.run([str(dualtrack_bin), "scan", str(folder), "--format", "json", "--fail-on", "never"],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        _SCANS[folder] = {(_where(f["file"], f["cell"]), f["line"], f["code"], bool(f["guarded"]))
                          for f in doc["findings"] if f["code"] == folder.name}
    return _SCANS[folder]


def _bug_reason(path: Path) -> str:
    if path.is_dir():
        path = sorted(p for p in path.rglob("*") if p.is_file())[0]
    first = path.read_text(errors="replace").splitlines()[0]
    return re.sub(r"^\s*(#|//)\s*", "", first).strip() or "known scanner bug"


def _cases():
    cases = []
    for folder in _folders():
        cases.append(pytest.param(folder, None, id=folder.name))
        units = {_bug_unit(p.relative_to(folder).as_posix()) for p in folder.rglob("bug_*")}
        for rel in sorted(u for u in units if u):
            bug = folder / rel
            cases.append(pytest.param(folder, rel, id=f"{folder.name}-{rel}",
                                      marks=pytest.mark.xfail(strict=True, reason=_bug_reason(bug))))
    return cases


@pytest.mark.parametrize("folder,only", _cases())
def test_fixture_findings_equal_annotations(dualtrack_bin, folder, only):
    def keep(item):
        return _bug_unit(item[0].split("#cell")[0]) == only

    want = {e for e in expectations(folder) if keep(e)}
    got = {f for f in scan_findings(dualtrack_bin, folder) if keep(f)}
    assert want or only, f"{folder.name}: the fixture annotates no line with its own code"
    missing = sorted(want - got)
    unexpected = sorted(got - want)
    assert not missing and not unexpected, (
        f"{folder.name}: missing (annotated, not reported): {missing}; "
        f"unexpected (reported, not annotated): {unexpected}")


def test_every_live_code_has_a_fixture_folder():
    live = _live_codes()
    have = {p.name for p in _folders()}
    assert not sorted(live - have), f"rules without a fixture folder: {sorted(live - have)}"


def test_no_fixture_folder_names_an_unknown_or_retired_code():
    live = _live_codes()
    stray = sorted(p.name for p in _folders() if p.name not in live)
    assert not stray, f"fixture folders for unknown or retired codes: {stray}"


def test_annotation_parser_reads_multi_code_and_guarded(tmp_path):
    folder = tmp_path / "DT101"
    folder.mkdir()
    (folder / "a.py").write_text("x.cuda()  # expect: DT102, DT101\ny.cuda()  # expect-guarded: DT101\n"
                                 "z = 1  # expect: DT102\n")
    (folder / "Dockerfile").write_text("FROM x\n")
    (folder / "EXPECT").write_text("Dockerfile:1:DT101\n")
    assert expectations(folder) == {("a.py", 1, "DT101", False), ("a.py", 2, "DT101", True),
                                    ("Dockerfile", 1, "DT101", False)}


def test_bug_units_are_files_or_folders():
    assert _bug_unit("bug_x.py") == "bug_x.py"
    assert _bug_unit("bug_cmake/CMakeLists.txt") == "bug_cmake"
    assert _bug_unit("sub/bug_y.sh") == "sub/bug_y.sh"
    assert _bug_unit("model.py") is None


def test_dt113_device_ids_message_names_the_argument(dualtrack_bin):
    folder = RULES_DIR / "DT113"
    r = subprocess.run([str(dualtrack_bin), "scan", str(folder), "--format", "json", "--fail-on", "never"],
                       capture_output=True, text=True, timeout=120)
    messages = [f["message"] for f in json.loads(r.stdout)["findings"]
                if f["file"] == "ddp_wrap.py" and f["line"] == 13 and f["code"] == "DT113"]
    assert messages and all("device_ids=[args.gpu]" in m or "device_ids=[gpu]" in m for m in messages), messages
