"""Findings inside functions follow the experiment's calls, not only its imports.

A module every script imports (utils) holds functions only some scripts call: for a named entry,
a function its run never calls is off the path, one it calls only behind a CUDA or launch-mode
check is guarded, and a CUDA default that every call overrides is never used. Patterns from
yolov5 (smart_DDP, torch_distributed_zero_first, export_engine) and denoising-diffusion-pytorch
(FIDEvaluation(device=self.device)); a method its class calls only behind a library check
(dinov2's NestedTensorBlock.forward_nested).
"""

import json

UTILS = """\
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

LOCAL_RANK = int(os.getenv("LOCAL_RANK", "-1"))


def smart_ddp(model):
    return DDP(model, device_ids=[LOCAL_RANK], output_device=LOCAL_RANK)


def zero_first(local_rank):
    if local_rank not in [-1, 0]:
        dist.barrier(device_ids=[local_rank])
    yield
    if local_rank == 0:
        dist.barrier(device_ids=[0])


def peak_memory():
    return torch.cuda.max_memory_allocated()


class FID:
    def __init__(self, dl, device="cuda"):
        self.device = device


def score(x, device="cuda:0"):
    return x
"""

EXPORT = """\
def export_engine(model):
    import tensorrt as trt
    return trt


def run(model, engine=False):
    if engine:
        export_engine(model)


def formats():
    return ["pt", "engine"]


def main():
    run(None, engine=True)


if __name__ == "__main__":
    main()
"""

TRAIN = """\
import os

import torch

from pkg import export
from pkg.utils import FID, score, smart_ddp, zero_first

cuda = torch.cuda.is_available()
device = torch.device("cuda" if cuda else "cpu")
RANK = int(os.getenv("RANK", "-1"))
model = torch.nn.Linear(2, 2).to(device)
if cuda and RANK != -1:
    model = smart_ddp(model)
for _ in zero_first(RANK):
    pass
fid = FID(None, device=device)
print(score(1, device), export.formats())
"""

# Another script calls what train.py leaves alone, without checks.
BENCH = """\
from pkg.utils import FID, peak_memory, smart_ddp

print(peak_memory(), FID(None), smart_ddp)
"""

# A file whose single process is rank 0: `rank == 0` holds there too, so it guards nothing.
RANK_ZERO = """\
import torch.distributed as dist

RANK = 0


def sync(rank=RANK):
    if rank == 0:
        dist.barrier(device_ids=[0])
"""


def make_tree(root):
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "utils.py").write_text(UTILS)
    (root / "pkg" / "export.py").write_text(EXPORT)
    (root / "pkg" / "rank_zero.py").write_text(RANK_ZERO)
    (root / "train.py").write_text(TRAIN)
    (root / "bench.py").write_text(BENCH)
    (root / "sync.py").write_text("from pkg.rank_zero import sync\n\nsync()\n")


def findings(dualtrack, root, *entry):
    args = ["scan", root, "--format", "json", "--fail-on", "never"]
    for e in entry:
        args += ["--entry", e]
    proc = dualtrack(*args)
    assert proc.returncode == 0, proc.stderr
    return {(f["file"], f["line"]): f for f in json.loads(proc.stdout)["findings"]}


def line_of(text, needle):
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def at(found, file, text, needle):
    key = (file, line_of(text, needle))
    assert key in found, f"no finding at {key}: {sorted(found)}"
    return found[key]


def test_a_function_called_only_behind_a_check_is_guarded(dualtrack, tmp_path):
    make_tree(tmp_path)
    found = findings(dualtrack, tmp_path, "train.py")
    ddp = at(found, "pkg/utils.py", UTILS, "return DDP(")
    assert ddp["reachable"] is True
    assert ddp["guarded"] is True


def test_a_function_the_entry_never_calls_is_off_its_path(dualtrack, tmp_path):
    make_tree(tmp_path)
    found = findings(dualtrack, tmp_path, "train.py")
    assert at(found, "pkg/utils.py", UTILS, "max_memory_allocated")["reachable"] is False
    # export.py is imported, but only the other script's command line calls export_engine.
    assert at(found, "pkg/export.py", EXPORT, "import tensorrt")["reachable"] is False


def test_another_entry_that_calls_it_unchecked_keeps_it(dualtrack, tmp_path):
    make_tree(tmp_path)
    found = findings(dualtrack, tmp_path, "bench.py")
    memory = at(found, "pkg/utils.py", UTILS, "max_memory_allocated")
    assert memory["reachable"] is True and memory["guarded"] is False
    # Handed on (not called here): whoever receives it may call it unchecked.
    ddp = at(found, "pkg/utils.py", UTILS, "return DDP(")
    assert ddp["reachable"] is True and ddp["guarded"] is False


def test_a_cuda_default_every_call_overrides_is_never_used(dualtrack, tmp_path):
    make_tree(tmp_path)
    train = findings(dualtrack, tmp_path, "train.py")
    # FID(None, device=device) by keyword, score(1, device) by position.
    assert at(train, "pkg/utils.py", UTILS, 'device="cuda"')["reachable"] is False
    assert at(train, "pkg/utils.py", UTILS, 'device="cuda:0"')["reachable"] is False
    bench = findings(dualtrack, tmp_path, "bench.py")  # FID(None): the default is used.
    assert at(bench, "pkg/utils.py", UTILS, 'device="cuda"')["reachable"] is True


def test_rank_zero_is_a_launched_worker_where_the_single_process_is_minus_one(dualtrack, tmp_path):
    make_tree(tmp_path)
    found = findings(dualtrack, tmp_path, "train.py", "sync.py")
    assert at(found, "pkg/utils.py", UTILS, "device_ids=[0]")["guarded"] is True
    assert at(found, "pkg/rank_zero.py", RANK_ZERO, "device_ids=[0]")["guarded"] is False


def test_reached_by_counts_no_entry_for_an_unreachable_finding(dualtrack, tmp_path):
    # Several named entries: reached_by counts the entries that reach the file, but a finding in a
    # function none of them calls (or a default every call overrides) is on no entry's path.
    make_tree(tmp_path)
    for entries in [("train.py", "sync.py"), ("train.py", "bench.py"),
                    ("train.py", "bench.py", "sync.py")]:
        found = findings(dualtrack, tmp_path, *entries)
        bad = [k for k, f in found.items()
               if f["reachable"] is False and (f["reached_by"] or 0) > 0]
        assert bad == [], (entries, bad)
    found = findings(dualtrack, tmp_path, "train.py", "sync.py")
    memory = at(found, "pkg/utils.py", UTILS, "max_memory_allocated")
    assert memory["reachable"] is False and memory["reached_by"] == 0
    default = at(found, "pkg/utils.py", UTILS, 'device="cuda:0"')
    assert default["reachable"] is False and default["reached_by"] == 0
    # What train.py does run keeps its count.
    ddp = at(found, "pkg/utils.py", UTILS, "return DDP(")
    assert ddp["reachable"] is True and ddp["reached_by"] == 1
    both = findings(dualtrack, tmp_path, "train.py", "bench.py")
    assert at(both, "pkg/utils.py", UTILS, "max_memory_allocated")["reached_by"] >= 1


def test_reached_by_implies_reachable_in_the_example(dualtrack, example_dir):
    found = findings(dualtrack, example_dir, "train.py", "preprocess.py",
                     "scripts/benchmark_cuda.py")
    assert any(f["reached_by"] is not None for f in found.values())
    bad = [k for k, f in found.items() if (f["reached_by"] or 0) > 0 and f["reachable"] is not True]
    assert bad == []


def test_without_a_named_entry_imports_alone_decide(dualtrack, tmp_path):
    # Every __main__ script is a guess at the path, not the experiment's: calls are not followed.
    make_tree(tmp_path)
    (tmp_path / "train.py").write_text(TRAIN + '\nif __name__ == "__main__":\n    pass\n')
    found = findings(dualtrack, tmp_path)
    assert at(found, "pkg/utils.py", UTILS, "max_memory_allocated")["reachable"] is True


def test_audit_predicts_mac_ready_for_the_entry_whose_calls_are_checked(dualtrack, tmp_path):
    make_tree(tmp_path)
    verdicts, first = {}, {}
    for entry in ("train.py", "bench.py"):
        proc = dualtrack("audit", tmp_path, "--entry", entry, "--format", "json",
                         "-o", tmp_path / f"{entry}.html", cwd=tmp_path)
        assert proc.returncode in (0, 1), proc.stderr
        experiment = json.loads(proc.stdout)["experiments"][0]
        verdicts[entry] = experiment["verdict"]
        first[entry] = experiment["report"]["reasons"][0]
    # bench.py calls the helpers unchecked: device edits by hand that keep the recipe, named in
    # the first line, not a reason the formal runs stay on CUDA.
    assert verdicts == {"train.py": "mac-ready", "bench.py": "mac-ready"}
    assert "by hand" not in first["train.py"]
    assert "edit(s) by hand that keep the recipe (pkg/utils.py:" in first["bench.py"], first


BLOCKS = """\
import torch

try:
    from xformers.ops import fmha
    XFORMERS_AVAILABLE = True
except ImportError:
    XFORMERS_AVAILABLE = False


def nested_bias(x_list):
    return fmha.BlockDiagonalMask.from_seqlens([x.shape[0] for x in x_list])


class Block(torch.nn.Module):
    def forward_nested(self, x_list):
        return nested_bias(x_list)

    def forward(self, x):
        if isinstance(x, list) and XFORMERS_AVAILABLE:
            return self.forward_nested(x)
        return x
"""


def test_a_method_called_only_behind_a_library_check_guards_what_it_calls(dualtrack, tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "blocks.py").write_text(BLOCKS)
    (tmp_path / "hub.py").write_text("import torch\nfrom pkg.blocks import Block\n\nprint(Block()(torch.zeros(1)))\n")
    # Another script calls the method itself, with no check.
    (tmp_path / "nested.py").write_text("from pkg.blocks import Block\n\nprint(Block().forward_nested([]))\n")
    hub = findings(dualtrack, tmp_path, "hub.py")
    bias = at(hub, "pkg/blocks.py", BLOCKS, "BlockDiagonalMask")
    assert bias["reachable"] is True and bias["guarded"] is True
    nested = findings(dualtrack, tmp_path, "nested.py")
    assert at(nested, "pkg/blocks.py", BLOCKS, "BlockDiagonalMask")["guarded"] is False


def test_modules_on_sys_path_and_imported_by_option_default(dualtrack, tmp_path):
    # votenet's train.py: sys.path.append(os.path.join(ROOT_DIR, 'models')) then
    # importlib.import_module(FLAGS.model) with --model defaulting to "votenet": the default run
    # imports models/votenet.py, which imports pointnet2/ through another sys.path folder.
    (tmp_path / "models").mkdir()
    (tmp_path / "lib").mkdir()
    (tmp_path / "train.py").write_text(
        "import argparse\nimport importlib\nimport os\nimport sys\n\nimport torch\n\n"
        "ROOT_DIR = os.path.dirname(os.path.abspath(__file__))\n"
        "sys.path.append(os.path.join(ROOT_DIR, 'models'))\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--model', default='votenet')\n"
        "FLAGS = parser.parse_args()\n"
        "MODEL = importlib.import_module(FLAGS.model)\n"
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n")
    (tmp_path / "models" / "votenet.py").write_text(
        "import os\nimport sys\n\n"
        "sys.path.append(os.path.join(os.path.dirname(__file__), '..', 'lib'))\n"
        "import helpers\nimport torch\n\nANCHORS = torch.zeros(4).cuda()\n")
    (tmp_path / "models" / "boxnet.py").write_text("import torch\n\nANCHORS = torch.zeros(4).cuda()\n")
    (tmp_path / "lib" / "helpers.py").write_text("import torch\n\nGRID = torch.zeros(4).cuda()\n")
    out = dualtrack("scan", tmp_path, "--entry", "train.py", "--format", "json",
                    "--fail-on", "never")
    assert out.returncode == 0, out.stderr
    reach = {f["file"]: f["reachable"] for f in json.loads(out.stdout)["findings"]}
    assert reach["models/votenet.py"] is True
    assert reach["lib/helpers.py"] is True
    # Another model the option could name is not the default run's.
    assert reach["models/boxnet.py"] is False


def test_kernel_class_reached_only_through_an_opt_in_class_on_sys_path(dualtrack, tmp_path):
    # RAFT: sys.path.append('core'), `from corr import AlternateCorrBlock` (the project's own
    # module, found through that folder), built only under the opt-in `--alternate_corr`; its
    # __call__ runs the autograd Function AltCudaCorr, whose forward calls the compiled module.
    # Both classes exist only where the option is on: the kernel call is guarded.
    (tmp_path / "core").mkdir()
    (tmp_path / "train.py").write_text(
        "import argparse\nimport sys\nsys.path.append('core')\nimport torch\nfrom raft import RAFT\n\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--alternate_corr', action='store_true')\n"
        "args = parser.parse_args()\nmodel = RAFT(args)\nmodel(torch.zeros(1))\n"
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n")
    (tmp_path / "core" / "raft.py").write_text(
        "import torch\nfrom corr import CorrBlock, AlternateCorrBlock\n\n\n"
        "class RAFT(torch.nn.Module):\n    def __init__(self, args):\n        super().__init__()\n"
        "        self.args = args\n\n    def forward(self, x):\n"
        "        if self.args.alternate_corr:\n            corr_fn = AlternateCorrBlock(x, x)\n"
        "        else:\n            corr_fn = CorrBlock(x, x)\n        return corr_fn(x)\n")
    (tmp_path / "core" / "corr.py").write_text(
        "import torch\n\ntry:\n    import alt_cuda_corr\nexcept:\n    pass\n\n\n"
        "class CorrBlock:\n    def __init__(self, a, b):\n        self.a = a\n\n"
        "    def __call__(self, x):\n        return x\n\n\n"
        "class AltCudaCorr(torch.autograd.Function):\n    @staticmethod\n"
        "    def forward(ctx, a, b):\n        corr, = alt_cuda_corr.forward(a, b)\n"
        "        return corr\n\n\n"
        "class AlternateCorrBlock:\n    def __init__(self, a, b):\n        self.a = a\n\n"
        "    def __call__(self, x):\n        return AltCudaCorr.apply(self.a, x)\n")
    (tmp_path / "alt_cuda_corr").mkdir()
    (tmp_path / "alt_cuda_corr" / "setup.py").write_text(
        "from setuptools import setup\n"
        "from torch.utils.cpp_extension import BuildExtension, CUDAExtension\n"
        "setup(name='correlation', ext_modules=[CUDAExtension('alt_cuda_corr',\n"
        "      sources=['correlation.cpp', 'correlation_kernel.cu'])],\n"
        "      cmdclass={'build_ext': BuildExtension})\n")
    out = dualtrack("scan", tmp_path, "--entry", "train.py", "--format", "json",
                    "--fail-on", "never")
    assert out.returncode == 0, out.stderr
    corr = {f["line"]: f for f in json.loads(out.stdout)["findings"] if f["file"] == "core/corr.py"}
    assert corr[20]["code"] == "DT305" and corr[20]["reachable"] is True
    assert corr[20]["guarded"] is True
