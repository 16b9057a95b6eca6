"""Writes a dualtrack bundle (bundle/1 contract) from two real training steps of the example's
model: python make_bundle.py EXAMPLE_DIR OUT_ROOT writes OUT_ROOT/float32 and OUT_ROOT/float64."""

import json
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import save_file

example, root = Path(sys.argv[1]), Path(sys.argv[2])
sys.path.insert(0, str(example))
from model import TinyHybrid  # noqa: E402


def write_bundle(dtype_name):
    dtype = getattr(torch, dtype_name)
    out = root / dtype_name
    torch.manual_seed(0)
    model = TinyHybrid(num_classes=10, portable=True).to(dtype)
    images = torch.from_numpy(np.load(example / "data" / "train_images.npy")[:8]).to(dtype)
    labels = torch.from_numpy(np.load(example / "data" / "train_labels.npy")[:8]).long()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    tensors, metrics = {}, []
    for step in (1, 2):
        opt.zero_grad()
        logits = model(images)
        loss = F.cross_entropy(logits, labels)
        loss.backward()
        tensors[f"output/step{step}"] = logits.detach().clone()
        tensors[f"loss/step{step}"] = loss.detach().clone()
        for name, p in model.named_parameters():
            tensors[f"grad/step{step}/{name}"] = p.grad.detach().clone()
            tensors[f"param/step{step}/{name}"] = p.detach().clone()
        acc = (logits.argmax(1) == labels).double().mean().item()
        metrics += [{"step": step, "name": "loss", "value": loss.item()},
                    {"step": step, "name": "accuracy", "value": acc}]
        opt.step()
    out.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in tensors.items()}, out / "tensors.safetensors")
    (out / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    (out / "manifest.json").write_text(json.dumps({
        "schema": "dualtrack.bundle/1", "track": "cpu", "command": ["python", "make_bundle.py"],
        "seed": 0, "status": "ok", "exit_code": 0, "steps": [{"step": 1}, {"step": 2}],
    }))


for name in ("float32", "float64"):
    write_bundle(name)
