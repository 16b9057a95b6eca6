"""cpu-only-training: an experiment that trains a convolution or attention model, and whose device
choice is CUDA or the CPU, trains on a Mac's CPU only: dev-only (development runs), with the MPS
branch of the device choice as the way up. Patterns of cleanrl's ppo_atari (dev-only, labelled) and
pygcn / ppo-cartpole (a small model: mac-ready, labelled)."""

import json

import pytest

TRAIN = """\
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else {other})
model = nn.Sequential({layer}, nn.Flatten()).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(4, 3, 8, 8, device=device)
loss = model(x).pow(2).mean()
loss.backward()
opt.step()
"""

CONV = "nn.Conv2d(3, 4, 3)"
LINEAR = "nn.Flatten(), nn.Linear(192, 4)"


def audit(dualtrack, root):
    out = dualtrack("audit", root, "--entry", "train.py", "--format", "json", "-o", root / "report.html",
                    cwd=root)
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)["experiments"][0]


@pytest.mark.parametrize("other, layer, verdict", [
    ('"cpu"', CONV, "dev-only"),
    ('"mps" if torch.backends.mps.is_available() else "cpu"', CONV, "mac-ready"),
    ('"cpu"', LINEAR, "mac-ready"),
])
def test_training_a_conv_net_where_the_mac_gets_only_the_cpu(dualtrack, tmp_path, other, layer, verdict):
    (tmp_path / "train.py").write_text(TRAIN.format(other=other, layer=layer))
    exp = audit(dualtrack, tmp_path)
    reasons = " ".join(exp["report"]["reasons"])
    assert exp["verdict"] == verdict, reasons
    if verdict == "dev-only":
        assert "trains on the CPU only" in reasons
        assert "torch.nn.Conv2d (train.py:5)" in reasons


def test_the_scan_reports_what_the_path_says(dualtrack, tmp_path):
    (tmp_path / "train.py").write_text(TRAIN.format(other='"cpu"', layer=CONV))
    out = dualtrack("scan", tmp_path, "--entry", "train.py", "--format", "json", "--fail-on", "never")
    path = json.loads(out.stdout)["path"]
    assert path == {"cuda_choice": {"file": "train.py", "line": 4}, "mentions_mps": False,
                    "framework_device": False,
                    "model": {"file": "train.py", "line": 5, "api": "torch.nn.Conv2d"},
                    "training": {"file": "train.py", "line": 9}}
    # Without a named entry the path is a guess, and nothing is said of it.
    (tmp_path / "train.py").write_text(TRAIN.format(other='"cpu"', layer=CONV) + 'if __name__ == "__main__":\n    pass\n')
    out = dualtrack("scan", tmp_path, "--format", "json", "--fail-on", "never")
    assert "path" not in json.loads(out.stdout)


DYNAMIC = """\
import argparse
import importlib
import os
import sys

import torch

sys.path.append(os.path.join(os.path.dirname(__file__), "models"))
parser = argparse.ArgumentParser()
parser.add_argument("--model", default="cnn")
parser.add_argument("--use_cpu", action="store_true")
args = parser.parse_args()
model = importlib.import_module(args.model).Net()
if not args.use_cpu:
    model = model.cuda()
loss = model(torch.randn(2, 3, 8, 8)).sum()
loss.backward()
"""

CNN = """\
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        return self.conv(x)
"""


def test_a_model_chosen_at_run_time_is_one_of_the_projects(dualtrack, tmp_path):
    # Pointnet_Pointnet2_pytorch: importlib.import_module(args.model) from models/, which no import
    # names; the project's layers stand for the model.
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "cnn.py").write_text(CNN)
    (tmp_path / "train.py").write_text(DYNAMIC)
    exp = audit(dualtrack, tmp_path)
    reasons = " ".join(exp["report"]["reasons"])
    assert exp["verdict"] == "dev-only", reasons
    assert "torch.nn.Conv2d (models/cnn.py:7)" in reasons
