"""Float64 the recipe computes in, against float64 it only carries.

MPS has no float64. A sampler that integrates in double precision on the device (EDM's
`torch.arange(n, dtype=torch.float64, device=device)`, a `.double()` projection) must be rewritten in
float32 on a Mac, which changes the published numerics: the formal runs stay on CUDA (`dev-only`).
Numpy's float64 moved as it is, the count of a comparison, or a module setting naming the dtype
for statistics kept beside the run only need a cast: the experiment stays `mac-ready`.
"""

import json

import pytest

HEADER = """\
import numpy as np
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = torch.nn.Linear(4, 4).to(device)
"""

CASES = {
    "sampler-in-float64": (
        "steps = torch.arange(8, dtype=torch.float64, device=device)\n"
        "x = torch.randn(2, 4, device=device).to(torch.float64) * steps[0]\n"
        "for t in steps:\n    x = x + net(x.float()).double() * t\n", "dev-only"),
    "double-projection": (
        "logits = net(torch.randn(2, 4, device=device))\n"
        "probs = logits.double().softmax(-1)\n", "dev-only"),
    "numpy-latent-moved": (
        "z = torch.from_numpy(np.random.randn(2, 4)).to(device)\n"
        "print(net(z.float()))\n", "mac-ready"),
    "count-of-a-comparison": (
        "preds = net(torch.randn(2, 4, device=device)).argmax(-1)\n"
        "correct = preds.eq(torch.zeros_like(preds)).double().sum()\n", "mac-ready"),
    "dtype-parameter-default": (
        "def accuracy(logits, targets, dtype: torch.dtype = torch.float64):\n"
        "    return (logits.argmax(1) == targets).to(dtype).mean()\n\n\n"
        "print(accuracy(net(torch.randn(2, 4, device=device)), torch.zeros(2, device=device)))\n",
        "mac-ready"),
    "statistics-setting": (
        "_counter_dtype = torch.float64  # Data type of the logged counters.\n"
        "print(net(torch.randn(2, 4, device=device)).sum().item())\n", "mac-ready"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_float64_the_recipe_asks_for_keeps_the_formal_run_on_cuda(dualtrack, tmp_path, case):
    body, expected = CASES[case]
    (tmp_path / "sample.py").write_text(HEADER + body)
    out = dualtrack("audit", tmp_path, "--entry", "sample.py", "--format", "json")
    assert out.returncode in (0, 1), out.stderr
    report = json.loads(out.stdout)
    report = report["experiments"][0]["report"] if "experiments" in report else report
    assert report["verdict"] == expected, report["reasons"][0]
    if expected == "dev-only":
        assert "sample.py:" in report["reasons"][0]
