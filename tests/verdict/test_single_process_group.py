"""An NCCL process group the script creates on every run (llama's `init_process_group("nccl")`
under `torchrun --nproc_per_node 1`): one process makes a world of one, which needs no
communication, and `dualtrack fix` gives the backend its gloo branch, so the group is an automatic
edit, not a multi-GPU stop. A backend named in a config file is the launch mode's when the project
creates the group only behind a launch check (basicsr's `dist_params`) (issue #35)."""

import json
import os
import subprocess
import sys

ENTRY = """\
import torch
import torch.distributed as dist

dist.init_process_group("nccl")
model = torch.nn.Linear(4, 2)
x = torch.ones(3, 4)
out = model(x)
dist.all_reduce(out)
print(dist.get_world_size(), round(float(out.sum()), 4))
"""


def test_an_nccl_group_of_one_process_is_an_automatic_edit(dualtrack, audit_main, tmp_path):
    (tmp_path / "main.py").write_text(ENTRY)
    exp = audit_main(tmp_path)
    reasons = exp["report"]["reasons"]
    assert exp["verdict"] == "mac-ready", reasons
    assert reasons[0].startswith("mac-ready after `dualtrack fix"), reasons
    assert "main.py:4" in reasons[0], reasons[0]
    multi = [s for s in exp["report"]["stop_conditions"] if s["id"] == "multi-gpu"]
    assert multi and multi[0]["state"] == "clear", multi


def test_the_fixed_group_runs_as_one_process_without_cuda(dualtrack, tmp_path):
    (tmp_path / "main.py").write_text(ENTRY)
    before = subprocess.run([sys.executable, "main.py"], cwd=tmp_path, capture_output=True,
                            text=True, env=dict(os.environ, MASTER_ADDR="127.0.0.1",
                                                MASTER_PORT="29531", RANK="0", WORLD_SIZE="1"))
    assert before.returncode != 0  # NCCL needs CUDA: the original cannot run here.
    out = dualtrack("fix", tmp_path, "--apply")
    assert out.returncode == 0, out.stderr
    assert "gloo" in (tmp_path / "main.py").read_text()
    after = subprocess.run([sys.executable, "main.py"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=120,
                           env=dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT="29532",
                                    RANK="0", WORLD_SIZE="1"))
    assert after.returncode == 0, after.stderr
    assert after.stdout.split()[0] == "1"


def test_a_group_behind_a_check_in_the_script_stays_optional(dualtrack, tmp_path):
    guarded = ENTRY.replace('dist.init_process_group("nccl")',
                            'import os\nif int(os.environ.get("WORLD_SIZE", 1)) > 1:\n'
                            '    dist.init_process_group("nccl")')
    (tmp_path / "main.py").write_text(guarded)
    out = dualtrack("scan", tmp_path, "--entry", "main.py", "--format", "json", "--fail-on", "never")
    codes = {(f["line"], f["code"]): f for f in json.loads(out.stdout)["findings"]}
    assert codes[(6, "DT205")]["guarded"]
    assert (6, "DT211") not in codes


TRAIN = """\
import argparse

import yaml

from utils.dist_util import init_dist

parser = argparse.ArgumentParser()
parser.add_argument("-opt", required=True)
parser.add_argument("--launcher", default="none")
args = parser.parse_args()
opt = yaml.safe_load(open(args.opt))
if args.launcher == "none":
    distributed = False
else:
    init_dist(args.launcher, **opt["dist_params"])
    distributed = True
print(distributed)
"""

DIST_UTIL = """\
import torch.distributed as dist


def init_dist(launcher, backend="gloo", **kwargs):
    if launcher == "pytorch":
        _init_dist_pytorch(backend, **kwargs)


def _init_dist_pytorch(backend, **kwargs):
    dist.init_process_group(backend=backend, **kwargs)
"""

OPTIONS = """\
name: train_x4
model_type: SRModel
num_gpu: 1
dist_params:
  backend: nccl
  port: 29500
train:
  total_iter: 1000
"""


def config_backend(dualtrack, root):
    out = dualtrack("scan", root, "--entry", "train.py", "--format", "json", "--fail-on", "never")
    assert out.returncode == 0, out.stderr
    found = [f for f in json.loads(out.stdout)["findings"]
             if f["file"] == "options/train.yml" and f["code"] == "DT205"]
    assert len(found) == 1, found
    assert found[0]["line"] == 5
    return found[0]


def test_a_config_backend_read_behind_the_launcher_is_guarded(dualtrack, tmp_path):
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "__init__.py").write_text("")
    (tmp_path / "utils" / "dist_util.py").write_text(DIST_UTIL)
    (tmp_path / "options").mkdir()
    (tmp_path / "options" / "train.yml").write_text(OPTIONS)
    (tmp_path / "train.py").write_text(TRAIN)
    f = config_backend(dualtrack, tmp_path)
    assert f["guarded"] and f["severity"] == "portable", f


def test_a_config_backend_every_run_reads_is_not(dualtrack, tmp_path):
    # The same tree whose script creates the group from the config on every run.
    (tmp_path / "options").mkdir()
    (tmp_path / "options" / "train.yml").write_text(OPTIONS)
    (tmp_path / "train.py").write_text(
        TRAIN.replace("from utils.dist_util import init_dist\n",
                      "import torch.distributed as dist\n")
        .replace('if args.launcher == "none":',
                 'dist.init_process_group(backend=opt["dist_params"]["backend"])\n'
                 'if args.launcher == "none":')
        .replace('    init_dist(args.launcher, **opt["dist_params"])\n', ""))
    f = config_backend(dualtrack, tmp_path)
    assert not f["guarded"], f
