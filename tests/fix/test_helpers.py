"""The helpers `dualtrack fix` writes, run by real PyTorch on this CPU-only machine.

Every construct of a rule with a safe fix, fixed and executed: the module now runs where the
original stops at its first CUDA call, on the CPU, with mixed precision and loss scaling off as
torch.cuda.amp had them without CUDA.
"""

import json
import subprocess
import sys

SOURCE = """\
import torch

x = torch.ones(2).cuda()
with torch.cuda.device(0):
    y = x * 2
torch.cuda.synchronize()
torch.cuda.manual_seed_all(0)
torch.cuda.empty_cache()
scaler = torch.cuda.amp.GradScaler()
with torch.cuda.amp.autocast():
    z = torch.nn.functional.linear(x, torch.ones(2, 2))
peak = torch.cuda.max_memory_allocated()
loss = z.sum()
scaled = scaler.scale(loss)
torch.backends.cudnn.benchmark = True
w = torch.zeros(1, device="cuda:0")
RESULT = dict(device=str(x.device), y=y.tolist(), z_dtype=str(z.dtype), peak=peak,
              scaled=float(scaled), loss=float(loss), w=str(w.device))
"""

RUN = "import json, runpy; print(json.dumps(runpy.run_path('m.py')['RESULT']))"


def test_fixed_constructs_run_on_the_cpu(dualtrack, tmp_path):
    (tmp_path / "m.py").write_text(SOURCE)
    original = subprocess.run([sys.executable, "-c", RUN], cwd=tmp_path, capture_output=True, text=True,
                              timeout=300)
    assert original.returncode != 0  # Torch was not compiled with CUDA enabled.
    out = dualtrack("fix", tmp_path, "--apply")
    assert out.returncode == 0, out.stderr
    text = (tmp_path / "m.py").read_text()
    text = text[text.index("x = torch.ones"):]  # The module's own code, after the helpers.
    for gone in (".cuda()", "torch.cuda.amp.", "torch.cuda.synchronize", "torch.cuda.device(", '"cuda:0"'):
        assert gone not in text, gone
    fixed = subprocess.run([sys.executable, "-c", RUN], cwd=tmp_path, capture_output=True, text=True,
                           timeout=300)
    assert fixed.returncode == 0, fixed.stderr[-2000:]
    result = json.loads(fixed.stdout.strip().splitlines()[-1])
    assert result == {"device": "cpu", "y": [2.0, 2.0], "z_dtype": "torch.float32", "peak": 0,
                      "scaled": result["loss"], "loss": 4.0, "w": "cpu"}
