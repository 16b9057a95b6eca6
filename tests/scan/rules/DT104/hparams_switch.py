# Settings declared as data, off by default: a config constructor's keyword (HParams), a
# dataclass field; a YAML config's key (settings.yaml beside this file). A test of one elsewhere
# in the project (`hparams.distributed_run`, `cfg.sharded`) is an opt-in.
from dataclasses import dataclass

import torch


def create_hparams():
    return HParams(distributed_run=False, fp16_run=False, dist_backend="gloo")


@dataclass
class RunConfig:
    sharded: bool = False
    seed: int = 0


class HParams(dict):
    pass


def train(hparams, cfg, opts):
    if hparams.distributed_run:
        torch.cuda.set_device(0)  # expect-guarded: DT104
    if cfg.sharded:
        torch.cuda.set_device(1)  # expect-guarded: DT104
    if opts.cluster_mode:
        torch.cuda.set_device(2)  # expect-guarded: DT104
    if opts.fast_path:
        torch.cuda.set_device(3)  # expect: DT104
