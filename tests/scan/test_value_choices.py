"""Optional CUDA libraries reached through a value that names the implementation.

An optional import (`try: from apex.optimizers import FusedSGD / except ImportError`) is used in one
branch of a choice by name (`elif opt == "fusedsgd":`, an optimizer or attention registry): the
other names are its fallback, so the use is guarded unless the file's default picks it. A name
the value gets only behind the import's flag (`"softmax-xformers" if XFORMERS_AVAILABLE else
"softmax"`) is reached only where the library loaded, and so is the class registered under it.
"""

import json

import pytest


def scan(dualtrack, root, entry):
    out = dualtrack("scan", root, "--entry", entry, "--format", "json", "--fail-on", "never")
    assert out.returncode == 0, out.stderr
    return {(f["file"], f["line"], f["code"]): f for f in json.loads(out.stdout)["findings"]}


def verdict(dualtrack, root, entry):
    out = dualtrack("audit", root, "--entry", entry, "--format", "json")
    assert out.returncode in (0, 1), out.stderr
    report = json.loads(out.stdout)
    report = report["experiments"][0]["report"] if "experiments" in report else report
    return report["verdict"]


OPTIM_FACTORY = """\
import torch
from torch import optim

try:
    from apex.optimizers import FusedAdam, FusedSGD
    has_apex = True
except ImportError:
    has_apex = False


def create_optimizer(args, params):
    opt_lower = args.opt.lower()
    if opt_lower == "sgd":
        optimizer = optim.SGD(params, lr=args.lr, momentum=0.9)
    elif opt_lower == "adamw":
        optimizer = optim.AdamW(params, lr=args.lr)
    elif opt_lower == "fusedsgd":
        optimizer = FusedSGD(params, lr=args.lr, momentum=0.9)
    elif opt_lower == "fusedadam":
        optimizer = FusedAdam(params, lr=args.lr)
    else:
        raise ValueError(opt_lower)
    return optimizer


def always_fused(params):
    return FusedAdam(params, lr=1e-3)
"""

TRAIN = """\
import argparse

import torch
from optim_factory import create_optimizer

parser = argparse.ArgumentParser()
parser.add_argument("--opt", default="{default}")
parser.add_argument("--lr", type=float, default=1e-3)
args = parser.parse_args()
model = torch.nn.Linear(4, 4)
optimizer = create_optimizer(args, model.parameters())
loss = model(torch.randn(2, 4)).sum()
loss.backward()
optimizer.step()
"""


def test_an_optional_library_in_a_choice_by_name_is_guarded(dualtrack, tmp_path):
    # timm's optimizer factory (ConvNeXt, Swin, VideoMAE): apex's fused optimizers are four of
    # many names, and the default is AdamW.
    (tmp_path / "optim_factory.py").write_text(OPTIM_FACTORY)
    (tmp_path / "train.py").write_text(TRAIN.format(default="adamw"))
    found = scan(dualtrack, tmp_path, "train.py")
    assert found[("optim_factory.py", 18, "DT202")]["guarded"] is True
    assert found[("optim_factory.py", 20, "DT202")]["guarded"] is True
    # The same library outside any choice stays a use.
    assert found[("optim_factory.py", 27, "DT202")]["guarded"] is False
    assert verdict(dualtrack, tmp_path, "train.py") == "mac-ready"


def test_a_choice_the_files_default_picks_is_a_use(dualtrack, tmp_path):
    factory = OPTIM_FACTORY.replace("def create_optimizer(args, params):\n    opt_lower = "
                                    "args.opt.lower()\n", "def create_optimizer(args, params):\n")
    factory = factory.replace("opt_lower ==", "args.opt ==").replace("(opt_lower)", "(args.opt)")
    parser = ('import argparse\n\nparser = argparse.ArgumentParser()\n'
              'parser.add_argument("--opt", default="fusedsgd")\nargs = parser.parse_args()\n')
    (tmp_path / "optim_factory.py").write_text(parser + factory)
    found = scan(dualtrack, tmp_path, "optim_factory.py")
    fused_sgd = [f for (file, _, code), f in found.items()
                 if code == "DT202" and "FusedSGD" in f["message"] and "import" not in f["message"]]
    fused_adam = [f for (file, _, code), f in found.items()
                  if code == "DT202" and "FusedAdam" in f["message"]]
    assert fused_sgd and all(f["guarded"] is False for f in fused_sgd)
    assert any(f["guarded"] is True for f in fused_adam)


ATTENTION = """\
import torch
from torch import nn

try:
    import xformers
    import xformers.ops
    XFORMERS_AVAILABLE = True
except ImportError:
    XFORMERS_AVAILABLE = False


class CrossAttention(nn.Module):
    def forward(self, q, k, v):
        return torch.softmax(q @ k.transpose(-1, -2), -1) @ v


class MemoryEfficientCrossAttention(nn.Module):
    def forward(self, q, k, v):
        return xformers.ops.memory_efficient_attention(q, k, v)


class EfficientBlock(nn.Module):
    def forward(self, x):
        return xformers.ops.memory_efficient_attention(x, x, x)


class Block(nn.Module):
    MODES = {
        "softmax": CrossAttention,
        "softmax-xformers": MemoryEfficientCrossAttention,
    }

    def __init__(self):
        super().__init__()
        mode = "softmax-xformers" if XFORMERS_AVAILABLE else "softmax"
        self.attn = self.MODES[mode]()


def make_attn(attn_type="vanilla"):
    if XFORMERS_AVAILABLE and attn_type == "vanilla":
        attn_type = "vanilla-xformers"
    if attn_type == "vanilla":
        return CrossAttention()
    elif attn_type == "vanilla-xformers":
        return EfficientBlock()
    raise ValueError(attn_type)
"""


@pytest.mark.parametrize("chosen_by_user", [False, True])
def test_a_name_given_only_behind_the_flag_guards_what_it_selects(dualtrack, tmp_path,
                                                                   chosen_by_user):
    # ControlNet / latent-diffusion: the attention class is picked through a registry and a
    # string chain, whose xformers names only the import's flag hands out. When the caller can
    # also pass the name itself, it is the user's choice and no longer proves the library loaded.
    source = ATTENTION
    if chosen_by_user:
        source += "\n\nBLOCKS = [make_attn('vanilla-xformers'), Block()]\n"
    (tmp_path / "attention.py").write_text(source)
    (tmp_path / "sample.py").write_text(
        "import torch\nfrom attention import Block, make_attn\n\n"
        "x = torch.randn(1, 4, 8)\nprint(Block().attn(x, x, x), make_attn()(x))\n")
    found = scan(dualtrack, tmp_path, "sample.py")
    assert found[("attention.py", 19, "DT202")]["guarded"] is True  # Registered under the name.
    assert found[("attention.py", 24, "DT202")]["guarded"] is (not chosen_by_user)
    if not chosen_by_user:
        assert verdict(dualtrack, tmp_path, "sample.py") == "mac-ready"


NORMS = """\
from torch import nn

try:
    from mamba_ssm.ops.triton.layernorm import RMSNorm
except ImportError:
    RMSNorm = None


def make_norm(dim, rms_norm=True, fused=True):
    norm_cls = {expression}
    return norm_cls(dim)
"""


@pytest.mark.parametrize("expression, guarded", [
    ("nn.LayerNorm if not rms_norm else RMSNorm", False),
    ("RMSNorm if fused else None", True),
    ("None if not fused else RMSNorm", True),
])
def test_an_optional_name_beside_none_is_handed_on_beside_a_class_it_is_used(
        dualtrack, tmp_path, expression, guarded):
    # mdlm's Mamba blocks pick the Triton RMSNorm over nn.LayerNorm, on by default: a use. Beside
    # None the value may be nothing, and its users check it.
    (tmp_path / "norms.py").write_text(NORMS.format(expression=expression))
    found = scan(dualtrack, tmp_path, "norms.py")
    assert found[("norms.py", 10, "DT202")]["guarded"] is guarded


@pytest.mark.parametrize("test", [
    "if RMSNorm or hasattr(nn, 'RMSNorm'):",
    "if fused and RMSNorm:",
    "if not RMSNorm:",
    "if RMSNorm:",
])
def test_a_truth_test_of_an_optional_name_is_no_use(dualtrack, tmp_path, test):
    # LightGlue: `if FlashCrossAttention or hasattr(F, "scaled_dot_product_attention"):` asks
    # whether the import succeeded; nothing of the library runs.
    source = NORMS.format(expression="nn.LayerNorm").replace(
        "    return norm_cls(dim)\n", f"    {test}\n        pass\n    return norm_cls(dim)\n")
    (tmp_path / "norms.py").write_text(source)
    found = scan(dualtrack, tmp_path, "norms.py")
    assert ("norms.py", 11, "DT202") not in found
