"""`dualtrack fix` on hostile projects: it never writes outside the project, keeps what it does not
own (notebook bytes it did not fix, line endings, lines appended meanwhile), leaves no temporary
file behind when interrupted, bounds the nesting of the JSON it reads, and its diff of a notebook
grows with the notebook, not with the square of its cells."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from hostile_util import TIMEOUT, assert_clear_error, dt  # noqa: F401 (dt is a fixture)
from test_memory import BASE, MB, peak_rss

CUDA_PY = "import torch\n\nx = torch.zeros(2).cuda()\n"


def notebook(cells, metadata=None, indent=1):
    nb = {"cells": [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {},
                     "outputs": [], "source": src.splitlines(keepends=True)}
                    for i, src in enumerate(cells)],
          "metadata": metadata or {}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(nb, indent=indent, ensure_ascii=False) + "\n"


# --- Outside the project -------------------------------------------------------------------------

def test_fix_apply_never_writes_through_links_out_of_the_project(dt, tmp_path):
    outside = tmp_path / "outside"
    (outside / "lib").mkdir(parents=True)
    (outside / "lib" / "m.py").write_text(CUDA_PY)
    (outside / "single.py").write_text(CUDA_PY)
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "own.py").write_text(CUDA_PY)
    os.symlink(outside / "lib", proj / "lib")  # a folder link leading out
    os.symlink(outside / "single.py", proj / "single.py")  # a file link leading out
    r = dt("fix", proj, "--apply")
    assert (outside / "lib" / "m.py").read_text() == CUDA_PY, r.stderr
    assert (outside / "single.py").read_text() == CUDA_PY, r.stderr
    assert (proj / "lib").is_symlink() and (proj / "single.py").is_symlink()
    assert "internal error" not in r.stderr
    # The project's own file is still fixed.
    assert ".cuda()" not in (proj / "own.py").read_text(), r.stderr


# --- What fix does not own -----------------------------------------------------------------------

def test_fix_keeps_notebook_bytes_it_does_not_fix(dt, tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    text = notebook(["import torch\n", "x = torch.zeros(2).cuda()\n", "y = 1\n"])
    # Integers past 2^53 and a float written as 1.10: a JSON round trip would change them.
    big = ('"metadata": {\n  "id": 12345678901234567890,\n  "odd": 9007199254740993,\n'
           '  "huge": 123456789012345678901234567890,\n  "ratio": 1.10,\n  "e": "caf\\u00e9"\n }')
    text = text.replace('\n "metadata": {},\n "nbformat"', "\n " + big + ',\n "nbformat"')
    assert big in text
    nb = proj / "nb.ipynb"
    nb.write_text(text)
    r = dt("fix", proj, "--apply")
    assert r.returncode == 0, r.stderr
    new = nb.read_text()
    assert big in new
    assert ".cuda()" not in new
    # Only the fixed cell's source lines differ (nbformat's layout: they are indented 4 spaces).
    old_lines, new_lines = text.splitlines(), new.splitlines()
    added = [line for line in new_lines if line not in set(old_lines)]
    removed = [line for line in old_lines if line not in set(new_lines)]
    assert added and all(line.startswith('    "') for line in added), added
    assert removed == ['    "x = torch.zeros(2).cuda()\\n"'], removed
    assert json.loads(new)["metadata"]["odd"] == 9007199254740993


def test_fix_keeps_crlf_line_endings(dt, tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    crlf = proj / "crlf.py"
    crlf.write_bytes(CUDA_PY.replace("\n", "\r\n").encode())
    # Mixed: the first two lines end in LF, the rest in CR LF.
    mixed = proj / "mixed.py"
    mixed.write_bytes(b"import torch\nimport os\r\n\r\nx = torch.zeros(2).cuda()\r\ny = 1\r\n")
    r = dt("fix", proj, "--apply")
    assert r.returncode == 0, r.stderr
    data = crlf.read_bytes()
    assert b".cuda()" not in data and b"_dualtrack_device" in data
    assert data.count(b"\n") == data.count(b"\r\n"), data  # every line, inserted ones too
    m = mixed.read_bytes()
    assert b".cuda()" not in m
    assert m.startswith(b"import torch\nimport os\r\n"), m
    assert m.endswith(b"y = 1\r\n"), m
    # Lines fix inserted take the ending of the line they go into (here CR LF).
    helper = m[m.index(b"def _dualtrack_device"):]
    assert helper.split(b"\n")[0].endswith(b"\r"), m


def test_fix_keeps_a_crlf_notebook_crlf(dt, tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    nb = proj / "nb.ipynb"
    nb.write_bytes(notebook(["import torch\n", "x = torch.zeros(2).cuda()\n"]).replace(
        "\n", "\r\n").encode())
    r = dt("fix", proj, "--apply")
    assert r.returncode == 0, r.stderr
    data = nb.read_bytes()
    assert b".cuda()" not in data
    assert data.count(b"\n") == data.count(b"\r\n"), data


def test_fix_apply_interrupted_leaves_no_temporary_file(dualtrack_bin, tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    body = CUDA_PY + "DATA = '''" + "0123456789abcdef" * (1 << 16) + "'''\n"  # 1 MiB each
    for i in range(60):
        (proj / f"m{i:02d}.py").write_text(body)
    p = subprocess.Popen([str(dualtrack_bin), "fix", str(proj), "--apply"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline, seen = time.monotonic() + TIMEOUT, False
    while p.poll() is None and time.monotonic() < deadline:
        if any(".tmp" in n for n in os.listdir(proj)):  # in the middle of a write
            p.send_signal(signal.SIGINT)
            seen = True
            break
    p.communicate(timeout=TIMEOUT)
    if not seen:
        pytest.skip("the writes were over before a temporary file could be seen")
    names = os.listdir(proj)
    assert not [n for n in names if ".tmp" in n], names
    for n in names:
        text = (proj / n).read_text()
        assert text == body or (".cuda()" not in text and text.endswith(body[len(CUDA_PY):])), n
    if p.returncode == 0:
        # The temporary seen was the last one, and the process finished between the listing and
        # the signal (a signal to an exited process does nothing): every file is whole, above.
        pytest.skip("the signal arrived after the last write")
    assert p.returncode == -signal.SIGINT, p.returncode


APPENDER = """
import sys, time
path, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    with open(path, "a") as f:
        f.write(f"# appended {i}\\n")
    time.sleep(0.0005)
"""


def test_fix_apply_loses_no_line_appended_meanwhile(dualtrack_bin, tmp_path):
    n = 400
    for run in range(5):
        proj = tmp_path / f"proj{run}"
        proj.mkdir()
        target = proj / "train.py"
        target.write_text(CUDA_PY + "".join(f"y{i} = {i}\n" for i in range(20000)))
        (proj / "other.py").write_text("y = 1\n")  # the scan has a file left if it skips train.py
        appender = subprocess.Popen([sys.executable, "-c", APPENDER, str(target), str(n)])
        time.sleep(0.05)
        r = subprocess.run([str(dualtrack_bin), "fix", str(proj), "--apply"],
                           capture_output=True, text=True, timeout=TIMEOUT)
        appender.wait(timeout=TIMEOUT)
        text = target.read_text()
        lines = [line for line in text.splitlines() if line.startswith("# appended ")]
        assert sorted(lines) == sorted(f"# appended {i}" for i in range(n)), (
            run, n - len(lines), r.stderr)
        assert r.returncode == 0 or "changed" in r.stderr, r.stderr
        assert "internal error" not in r.stderr


def test_fix_names_a_control_character_in_a_file_name_escaped(dt, tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "evil\x1b[2Jname.py").write_text(CUDA_PY)
    r = dt("fix", proj, "--diff")
    assert r.returncode == 1, r.stderr
    assert "\x1b" not in r.stdout and "\x1b" not in r.stderr
    assert "--- a/evil" in r.stdout


# --- Bounded JSON and diff -----------------------------------------------------------------------

@pytest.mark.parametrize("depth", [50_000, 200_000])
def test_fix_and_scan_refuse_a_deeply_nested_notebook(dt, tmp_path, depth):
    proj = tmp_path / "proj"
    proj.mkdir()
    text = notebook(["import torch\n", "x = torch.zeros(2).cuda()\n"])
    text = text.replace('\n "metadata": {},', '\n "metadata": {"deep": ' + "[" * depth + "]" * depth
                        + "},")
    (proj / "deep.ipynb").write_text(text)
    (proj / "ok.py").write_text(CUDA_PY)
    r = dt("fix", proj, "--apply")
    assert_clear_error(r, "deep.ipynb")
    assert "nested deeper than" in r.stderr, r.stderr[-2000:]
    assert ".cuda()" not in (proj / "ok.py").read_text()  # the rest of the project is fixed
    # scan lists the notebook as skipped, with the reason, and scans the rest.
    r = dt("scan", proj, "--format", "json", "--fail-on", "never")
    assert r.returncode == 0, r.stderr[-2000:]
    skipped = json.loads(r.stdout)["skipped"]
    assert [s["file"] for s in skipped] == ["deep.ipynb"], skipped
    assert "nested deeper than" in skipped[0]["reason"], skipped
    assert (proj / "deep.ipynb").read_text() == text


@pytest.mark.parametrize("cells", [2_000, 10_000])
def test_fix_diff_of_a_many_cell_notebook_stays_near_its_size(dualtrack_bin, tmp_path, cells):
    proj = tmp_path / "proj"
    proj.mkdir()
    nb = proj / "nb.ipynb"
    nb.write_text(notebook(["import torch\n"] + [f"x{i} = torch.zeros({i}).cuda()\n"
                                                 for i in range(cells)]))
    size = nb.stat().st_size
    out = tmp_path / "diff.txt"
    code, peak, err = peak_rss(dualtrack_bin, out, "fix", proj, "--diff")
    assert code == 1, err
    diff = out.read_text()
    assert diff.count("\n-") >= cells and diff.count("@@ -") >= cells // 10, diff[:2000]
    assert peak <= BASE + 10 * size, f"peak {peak / MB:.0f} MiB for a {size / MB:.1f} MiB notebook"
