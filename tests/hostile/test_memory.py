"""Class 11: memory stays within a small multiple of the input. A scan of a huge one-line source
file held 32 bytes per token (a token per byte or two: 22x the file), and `report` held a scan
JSON as a DOM (7x). Each test measures the peak resident memory of the real binary on an input
big enough for the multiple to dominate the process's own baseline."""

import json
import os
import subprocess
import sys
from pathlib import Path

from hostile_util import TIMEOUT

MB = 1 << 20
# Peak RSS of the binary on an empty input (shared libraries, the registry): what is not
# proportional to the input.
BASE = 48 * MB

# Runs the command with the suite's timeout and prints the peak RSS of that child in bytes
# (ru_maxrss is KiB on Linux, bytes on macOS).
_PEAK = """
import resource, subprocess, sys
r = subprocess.run(sys.argv[2:], stdout=open(sys.argv[1], "wb"), stderr=subprocess.PIPE,
                   timeout=float(__import__("os").environ["DT_TIMEOUT"]))
sys.stderr.write(r.stderr.decode(errors="replace"))
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(r.returncode, peak if sys.platform == "darwin" else peak * 1024)
"""


def peak_rss(dualtrack_bin, out: Path, *args):
    env = dict(os.environ, DT_TIMEOUT=str(TIMEOUT * 3))
    p = subprocess.run([sys.executable, "-c", _PEAK, str(out), str(dualtrack_bin), *map(str, args)],
                       capture_output=True, text=True, env=env, timeout=TIMEOUT * 4)
    assert p.returncode == 0, p.stderr
    code, peak = map(int, p.stdout.split())
    return code, peak, p.stderr


def dense_code_line(size: int) -> str:
    """One physical line of short statements: the densest realistic token stream."""
    unit = 'a = torch.zeros(3, device="cuda"); b = [1, 2, 3]; '
    return "import torch; " + unit * (size // len(unit)) + "\n"


def scan_one_file(dualtrack_bin, tmp_path, name: str, text: str):
    """Scans a project of one file: (findings, peak RSS, file size)."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / name).write_text(text)
    out = tmp_path / "scan.json"
    code, peak, err = peak_rss(dualtrack_bin, out, "scan", proj, "--max-file-size", "0",
                               "--format", "json", "--fail-on", "never")
    assert code == 0, err
    return json.loads(out.read_text())["findings"], peak, (proj / name).stat().st_size


def test_scan_of_a_huge_one_line_file_stays_near_its_size(dualtrack_bin, tmp_path):
    findings, peak, size = scan_one_file(dualtrack_bin, tmp_path, "big.py", dense_code_line(24 * MB))
    # Found, once per line and code (the statements repeat on the one line).
    assert [(f["code"], f["line"]) for f in findings] == [("DT102", 1)], findings
    assert peak <= BASE + 7 * size, f"peak {peak / MB:.0f} MiB for a {size / MB:.0f} MiB file"


def test_scan_of_a_data_line_keeps_findings_after_the_data(dualtrack_bin, tmp_path):
    """Numbers written as code (a weights list on one line) fold past the first few in a bracket:
    the line costs about its size, and code after the data on the same line is still read."""
    n = 12 * MB // 2
    line = "W = [" + ",".join("01"[i % 2] for i in range(n)) + "]; m = torch.nn.Linear(2, 2).cuda()"
    findings, peak, size = scan_one_file(dualtrack_bin, tmp_path, "weights.py",
                                         "import torch\n" + line + "\n")
    assert [(f["code"], f["line"]) for f in findings] == [("DT101", 2)], findings
    col = findings[0]["column"]
    assert line[col - 1:].startswith("cuda()"), col
    assert peak <= BASE + 3 * size, f"peak {peak / MB:.0f} MiB for a {size / MB:.0f} MiB file"


def test_report_of_a_large_scan_json_stays_near_its_size(dualtrack_bin, tmp_path):
    finding = {"cell": None, "class": "device", "code": "DT101", "column": 5, "guarded": False,
               "message": "x.cuda() moves to a CUDA device", "reachable": True,
               "replacement": "x.to(device)", "severity": "fixable",
               "snippet": "y = x.cuda()  # a snippet of ordinary length for a finding"}
    n = 160_000
    doc = {"schema": "dualtrack.scan/1", "root": str(tmp_path), "entries": ["train.py"],
           "summary": {"files_scanned": n}, "skipped": [], "suppressions": [],
           "findings": [dict(finding, file=f"pkg/m{i}.py", line=i + 1) for i in range(n)]}
    scan = tmp_path / "scan.json"
    scan.write_text(json.dumps(doc, indent=1))
    size = scan.stat().st_size
    assert size > 40 * MB
    for fmt in ("md", "json"):
        out = tmp_path / f"report.{fmt}"
        code, peak, err = peak_rss(dualtrack_bin, out, "report", "--scan", scan, "--format", fmt)
        assert code == 0, err
        assert f"{n} finding(s)" in out.read_text(), "every finding was read"
        assert peak <= BASE + 3 * size, f"{fmt}: peak {peak / MB:.0f} MiB for a {size / MB:.0f} MiB scan"
    # The JSON report lists every finding, written one at a time, as valid JSON.
    listed = json.loads((tmp_path / "report.json").read_text())["evidence"]["scan"]["findings"]
    assert len(listed) == n and listed[-1]["line"] == n and listed[0]["file"] == "pkg/m0.py"


def test_scan_of_a_line_of_nested_conditional_expressions_ends(dualtrack_bin, tmp_path):
    """`"a" if "a" if ... else "b"`: each `if` once read its condition, the element before it and
    its branch to the end of the line, quadratic in the line's length (300,000 of them: minutes).
    The reads are bounded; the code after the line is still read."""
    n = 300_000
    text = ("import torch\ntry:\n    from apex.optimizers import FusedSGD\nexcept ImportError:\n"
            "    FusedSGD = None\n"
            "m = " + '"a" if ' * n + 'torch.cuda.is_available() else "b"\n'
            "v = " + "FusedSGD if " * n + "m else None\n"
            "x = torch.zeros(1).cuda()\n")
    findings, peak, size = scan_one_file(dualtrack_bin, tmp_path, "nested.py", text)
    assert ("DT101", 8) in [(f["code"], f["line"]) for f in findings], findings
    assert peak <= BASE + 20 * size, f"peak {peak / MB:.0f} MiB for a {size / MB:.0f} MiB file"
