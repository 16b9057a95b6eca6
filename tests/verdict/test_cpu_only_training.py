"""The kind of model is never a reason against the Mac: an experiment that trains a convolution
model and whose device choice is CUDA or the CPU runs on the Mac as written, and only a predicted
or measured "cannot finish" would count (issue #35; cleanrl's ppo_atari, pygcn and ppo-cartpole
are all mac-ready in the field corpus's labels)."""

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


@pytest.mark.parametrize("other, layer", [
    ('"cpu"', CONV),
    ('"mps" if torch.backends.mps.is_available() else "cpu"', CONV),
    ('"cpu"', LINEAR),
])
def test_the_kind_of_model_is_no_reason_against_the_mac(dualtrack, tmp_path, other, layer):
    (tmp_path / "train.py").write_text(TRAIN.format(other=other, layer=layer))
    exp = audit(dualtrack, tmp_path)
    reasons = " ".join(exp["report"]["reasons"])
    assert exp["verdict"] == "mac-ready", reasons
    assert exp["report"]["reasons"][0].startswith("mac-ready as written"), reasons
    assert "trains on the CPU only" not in reasons and "Conv2d" not in reasons


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
    out = dualtrack("scan", tmp_path, "--entry", "train.py", "--format", "json", "--fail-on", "never")
    path = json.loads(out.stdout)["path"]
    assert path["model"] == {"file": "models/cnn.py", "line": 7, "api": "torch.nn.Conv2d"}
    exp = audit(dualtrack, tmp_path)
    assert exp["verdict"] == "mac-ready", exp["report"]["reasons"]
