"""The text output a person reads: summary first, findings grouped by file with counts, runs of one
code folded, --statistics without findings; the JSON keeps every finding."""

import json
from pathlib import Path


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_summary_first_groups_and_folding(dualtrack, tmp_path):
    kernel = ["#include <vector>", "void f() {"]
    kernel += [f"  cudaMemset(p{i}, 0, n);" for i in range(12)] + ["}"]
    write(tmp_path / "k.cpp", "\n".join(kernel) + "\n")
    write(tmp_path / "requirements.txt", "flash-attn\nxformers\n")
    text = dualtrack("scan", ".", "--fail-on", "never", cwd=tmp_path).stdout
    lines = text.splitlines()
    assert lines[0].startswith("dualtrack scan ") and "14 findings in 2 files" in lines[0]
    assert text.index("Summary") < text.index("k.cpp (12 findings)") < text.index("requirements.txt (2 findings)")
    folded = [l for l in lines if "×12 at 3, 4, 5," in l]
    assert len(folded) == 1 and folded[0].lstrip().startswith("k.cpp:3:")
    assert "cudaMemset(p5" not in text  # Folded: no snippet per line.
    assert "requirements.txt:1:1  DT403" in text and "requirements.txt:2:1  DT403" in text
    doc = json.loads(dualtrack("scan", tmp_path, "--format", "json", "--fail-on", "never").stdout)
    assert len(doc["findings"]) == 14  # Never folded.
    stats = dualtrack("scan", tmp_path, "--statistics", "--fail-on", "never").stdout
    assert "k.cpp (12 findings)" not in stats and "k.cpp:3:" not in stats
    assert "      12  DT304  extension   blocker 12" in stats


def test_locations_are_relative_to_where_the_user_stands(dualtrack, tmp_path):
    # Files are kept relative to the scanned root in JSON; text leads from the current directory
    # to them, so that `file:line:col` opens from the terminal.
    write(tmp_path / "proj" / "sub" / "train.py", "import torch\nx = torch.zeros(1).cuda()\n")
    text = dualtrack("scan", "proj", "--fail-on", "never", cwd=tmp_path).stdout
    assert "proj/sub/train.py (1 finding)" in text
    assert "  proj/sub/train.py:2:20  DT101" in text
    inside = dualtrack("scan", ".", "--fail-on", "never", cwd=tmp_path / "proj").stdout
    assert "  sub/train.py:2:20  DT101" in inside and "proj/sub" not in inside
    absolute = dualtrack("scan", tmp_path / "proj", "--fail-on", "never", cwd=tmp_path).stdout
    assert "  proj/sub/train.py:2:20  DT101" in absolute  # An absolute root under the cwd.
    doc = json.loads(dualtrack("scan", "proj", "--format", "json", "--fail-on", "never",
                               cwd=tmp_path).stdout)
    assert [f["file"] for f in doc["findings"]] == ["sub/train.py"]
