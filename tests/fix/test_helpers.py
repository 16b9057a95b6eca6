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
    # --all: the portable lines too (seeds, cache, torch.cuda.amp, cuDNN flag); --unsafe-fixes:
    # torch.cuda.amp's rewrite turns mixed precision on for MPS.
    out = dualtrack("fix", tmp_path, "--apply", "--all", "--unsafe-fixes")
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


INDEXES = """\
import torch


class Args:
    gpu = 0
    local_rank = 1


args = Args()
a = torch.ones(2).cuda(0)
b = torch.ones(2).cuda(device=args.gpu, non_blocking=True)
c = torch.device("cuda", args.local_rank)
d = torch.ones(2).to(args.gpu)
RESULT = dict(a=str(a.device), b=str(b.device), c=str(c), d=str(d.device))
"""


def test_device_indexes_run_on_the_cpu(dualtrack, tmp_path):
    (tmp_path / "m.py").write_text(INDEXES)
    out = dualtrack("fix", tmp_path, "--apply")
    assert out.returncode == 0, out.stderr
    text = (tmp_path / "m.py").read_text()
    assert ".cuda(" not in text and '"cuda", args' not in text
    fixed = subprocess.run([sys.executable, "-c", RUN], cwd=tmp_path, capture_output=True, text=True,
                           timeout=300)
    assert fixed.returncode == 0, fixed.stderr[-2000:]
    assert json.loads(fixed.stdout.strip().splitlines()[-1]) == {"a": "cpu", "b": "cpu", "c": "cpu", "d": "cpu"}


# xformers and flash-attn are not installed here (they need CUDA): the original stops at its import;
# the fixed module computes the same attention through scaled_dot_product_attention.
ATTENTION = """\
import torch
import xformers.ops as xops
from flash_attn import flash_attn_func

torch.manual_seed(0)
q, k, v = (torch.randn(2, 5, 4, 8) for _ in range(3))
bias = torch.randn(2, 4, 5, 5)
kv = torch.randn(2, 5, 2, 8)  # Two key/value heads for four query heads (grouped-query attention).
a = xops.memory_efficient_attention(q, k, v, attn_bias=bias)
b = flash_attn_func(q, kv, kv, 0.0, None, True)
c = xops.memory_efficient_attention(q[:, :, 0], k[:, :, 0], v[:, :, 0])
q2, k2, v2 = xops.unbind(torch.stack([q, k, v], 2), 2)
"""

# Attention written out in the libraries' own layout ([batch, seq, heads, dim]), as their docs define it.
CHECK = """\
import json, math, runpy
import torch
m = runpy.run_path('m.py')
def ref(q, k, v, bias=None, causal=False):
    if q.dim() == 3:
        return ref(q[:, :, None], k[:, :, None], v[:, :, None], bias, causal)[:, :, 0]
    rep = q.shape[2] // k.shape[2]
    k, v = k.repeat_interleave(rep, dim=2), v.repeat_interleave(rep, dim=2)
    s = torch.einsum('bqhd,bkhd->bhqk', q, k) / math.sqrt(q.shape[-1])
    if bias is not None:
        s = s + bias
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), float('-inf'))
    return torch.einsum('bhqk,bkhd->bqhd', s.softmax(-1), v)
print(json.dumps(dict(
    a=(m['a'] - ref(m['q'], m['k'], m['v'], m['bias'])).abs().max().item(),
    b=(m['b'] - ref(m['q'], m['kv'], m['kv'], causal=True)).abs().max().item(),
    c=(m['c'] - ref(m['q'][:, :, 0], m['k'][:, :, 0], m['v'][:, :, 0])).abs().max().item(),
    unbind=all(torch.equal(m[n + '2'], m[n]) for n in 'qkv'),
    shapes=[list(m[n].shape) for n in 'abc'])))
"""


def test_attention_libraries_run_through_sdpa_with_unsafe_fixes(dualtrack, tmp_path):
    (tmp_path / "m.py").write_text(ATTENTION)
    original = subprocess.run([sys.executable, "-c", CHECK], cwd=tmp_path, capture_output=True, text=True,
                              timeout=300)
    assert original.returncode != 0 and "xformers" in original.stderr
    safe = dualtrack("fix", tmp_path, "--apply")
    assert safe.returncode == 0, safe.stderr
    assert (tmp_path / "m.py").read_text() == ATTENTION  # Results may change: not a safe fix.
    out = dualtrack("fix", tmp_path, "--apply", "--unsafe-fixes")
    assert out.returncode == 0, out.stderr
    fixed = subprocess.run([sys.executable, "-c", CHECK], cwd=tmp_path, capture_output=True, text=True,
                           timeout=300)
    assert fixed.returncode == 0, fixed.stderr[-2000:]
    result = json.loads(fixed.stdout.strip().splitlines()[-1])
    assert result["shapes"] == [[2, 5, 4, 8], [2, 5, 4, 8], [2, 5, 8]] and result["unbind"]
    for name in "abc":
        assert result[name] < 1e-5, (name, result)
    again = dualtrack("fix", tmp_path, "--unsafe-fixes")
    assert again.returncode == 0 and again.stdout == "", again.stdout
