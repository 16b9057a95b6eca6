"""Class 1: files that shrink while scan or compare reads them (an editor saving, a job rewriting
its checkpoint) never crash the tool (SIGBUS): the result is correct or the file is named as
having changed while read."""

import json
import os
import subprocess
import threading
import time

import numpy as np

from hostile_util import TIMEOUT, dt  # noqa: F401 (dt is a fixture)


def _rewriter(path, content, stop):
    """Truncates `path` and writes it again, in place (the same inode), until stopped."""
    with open(path, "r+b", buffering=0) as f:
        while not stop.is_set():
            f.truncate(0)
            f.seek(0)
            for i in range(0, len(content), 1 << 20):  # grows by 1 MiB steps, as a job writes
                f.write(content[i:i + (1 << 20)])


def test_scan_survives_a_large_file_truncated_and_rewritten_in_a_loop(dt, tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    big = proj / "big.py"
    # The trigger word comes last, so every byte is read before the scanner decides.
    content = b"y = 1  # padding line\n" * 400000 + b"import torch\nx = torch.zeros(1).cuda()\n"
    big.write_bytes(content)  # ~9 MB, memory-mapped by the scanner
    (proj / "small.py").write_text("import torch\ntorch.cuda.synchronize()\n")
    stop = threading.Event()
    t = threading.Thread(target=_rewriter, args=(big, content, stop))
    t.start()
    try:
        for _ in range(30):
            r = dt("scan", proj, "--format", "json", "--fail-on", "never")
            assert r.returncode == 0, (r.returncode, r.stderr[-2000:])  # negative: killed by a signal
            doc = json.loads(r.stdout)
            assert any(f["file"] == "small.py" for f in doc["findings"])
    finally:
        stop.set()
        t.join()


def test_compare_survives_its_input_truncated_while_compared(dualtrack_bin, tmp_path):
    n = 8 << 20  # 32 MB of float32 per side: long enough to be caught mid-read
    a = tmp_path / "a.npy"
    b = tmp_path / "b.npy"
    np.save(b, np.zeros(n, np.float32))
    outcomes = []
    for delay in (0.0, 0.02, 0.05, 0.1, 0.2):
        np.save(a, np.ones(n, np.float32))
        p = subprocess.Popen([str(dualtrack_bin), "compare", str(a), str(b), "--threads", "1"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        with open(a, "r+b") as f:
            f.truncate(4096)
        out, err = p.communicate(timeout=TIMEOUT)
        assert p.returncode in (1, 2), (p.returncode, err)  # never killed by SIGBUS
        if p.returncode == 2:
            assert "a.npy" in err
            assert "changed while it was read" in err or "truncated" in err or "past the end" in err, err
        outcomes.append(p.returncode)


def test_compare_names_a_file_rewritten_while_compared(dualtrack_bin, tmp_path):
    """Same size, new content, in place: the statistics mix two versions, so they are refused."""
    n = 8 << 20
    a = tmp_path / "a.npy"
    b = tmp_path / "b.npy"
    np.save(b, np.zeros(n, np.float32))
    np.save(a, np.ones(n, np.float32))
    p = subprocess.Popen([str(dualtrack_bin), "compare", str(a), str(b), "--threads", "1"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.02)
    os.utime(a, ns=(1, 1))  # the write a job does changes the modification time
    out, err = p.communicate(timeout=TIMEOUT)
    assert p.returncode in (1, 2), (p.returncode, err)
    if p.returncode == 2:
        assert "a.npy" in err and "changed while it was read" in err
