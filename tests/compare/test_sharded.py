"""Checkpoints as people keep them: a Hugging Face-style folder of shards with an index
(model.safetensors.index.json, pytorch_model.bin.index.json) or a plain folder of shards is one
state dict. Written by the real libraries (safetensors, torch.save)."""

import json

import torch
from safetensors.torch import save_file


def state_dict():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3),
                                torch.nn.LayerNorm(3))
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def shard(sd, n):
    keys = sorted(sd)
    return [{k: sd[k] for k in keys[i::n]} for i in range(n)]


def write_hf_safetensors(folder, sd, n=2):
    folder.mkdir(parents=True)
    weight_map = {}
    for i, part in enumerate(shard(sd, n)):
        name = f"model-{i + 1:05d}-of-{n:05d}.safetensors"
        save_file(part, str(folder / name), metadata={"format": "pt"})
        weight_map.update({k: name for k in part})
    total = sum(t.numel() * t.element_size() for t in sd.values())
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}))
    return folder


def write_hf_bin(folder, sd, n=3):
    folder.mkdir(parents=True)
    weight_map = {}
    for i, part in enumerate(shard(sd, n)):
        name = f"pytorch_model-{i + 1:05d}-of-{n:05d}.bin"
        torch.save(part, folder / name)
        weight_map.update({k: name for k in part})
    (folder / "pytorch_model.bin.index.json").write_text(json.dumps({"weight_map": weight_map}))
    torch.save({"not": "weights"}, folder / "training_args.bin")
    return folder


def compare(dualtrack, a, b, *args):
    r = dualtrack("compare", a, b, "--format", "json", *args)
    return r, (json.loads(r.stdout) if r.stdout.strip().startswith("{") else None)


def test_sharded_checkpoints_compare_as_one_state_dict(dualtrack, tmp_path):
    sd = state_dict()
    single = tmp_path / "model.safetensors"
    save_file(sd, str(single))
    for folder in (write_hf_safetensors(tmp_path / "hf", sd), write_hf_bin(tmp_path / "bin", sd)):
        r, doc = compare(dualtrack, folder, single)
        assert r.returncode == 0, r.stdout + r.stderr
        names = {t["name"] for t in doc["tensors"]}
        assert names == set(sd), names  # Every tensor once; training_args.bin is not weights.
        assert all(t["status"] == "pass" for t in doc["tensors"])
    # A plain folder of shards, no index.
    plain = tmp_path / "plain"
    plain.mkdir()
    for i, part in enumerate(shard(sd, 2)):
        save_file(part, str(plain / f"part{i}.safetensors"))
    r, doc = compare(dualtrack, plain, single)
    assert r.returncode == 0 and {t["name"] for t in doc["tensors"]} == set(sd)
    # Changed weights in one shard are found.
    bad = dict(sd)
    key = sorted(sd)[0]
    bad[key] = sd[key] + 1.0
    changed = write_hf_safetensors(tmp_path / "changed", bad)
    r, doc = compare(dualtrack, changed, single)
    assert r.returncode == 1
    assert [t["name"] for t in doc["tensors"] if t["status"] != "pass"] == [key]


def test_malformed_checkpoint_folders_name_the_file(dualtrack, tmp_path):
    sd = state_dict()
    single = tmp_path / "model.safetensors"
    save_file(sd, str(single))

    def fails(folder, *needles):
        r = dualtrack("compare", folder, single)
        assert r.returncode == 2, r.stdout + r.stderr
        for n in needles:
            assert n in r.stderr, r.stderr

    folder = write_hf_safetensors(tmp_path / "a", sd)
    (folder / "model.safetensors.index.json").write_text("{not json")
    fails(folder, "model.safetensors.index.json", "weight_map")

    folder = write_hf_safetensors(tmp_path / "b", sd)
    (folder / "model-00002-of-00002.safetensors").unlink()
    fails(folder, "model-00002-of-00002.safetensors", "missing")

    folder = write_hf_safetensors(tmp_path / "c", sd)
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    index["weight_map"]["ghost.weight"] = "model-00001-of-00002.safetensors"
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    fails(folder, "ghost.weight", "does not hold it")

    folder = write_hf_safetensors(tmp_path / "d", sd)
    index["weight_map"] = {"0.weight": "../model.safetensors"}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    fails(folder, "not inside the checkpoint folder")

    dup = tmp_path / "dup"
    dup.mkdir()
    save_file(sd, str(dup / "x.safetensors"))
    save_file(sd, str(dup / "y.safetensors"))
    fails(dup, "in two shards")

    empty = tmp_path / "empty"
    empty.mkdir()
    fails(empty, "nor a checkpoint folder")


def test_summary_lists_counts_and_the_worst(dualtrack, tmp_path):
    sd = state_dict()
    single = tmp_path / "model.safetensors"
    save_file(sd, str(single))
    bad = dict(sd)
    key = sorted(sd)[-1]
    bad[key] = sd[key] * 3.0 + 1.0
    folder = write_hf_safetensors(tmp_path / "hf", bad)
    r = dualtrack("compare", folder, single, "--summary", "2")
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert f"{len(sd)} tensors: FAIL 1, ok {len(sd) - 1}; the 2 worst:" in lines
    table = [l for l in lines if l.startswith(("ok ", "FAIL "))]
    assert len(table) == 2 and table[0].startswith("FAIL") and key in table[0]
    assert f"... {len(sd) - 2} more (every tensor: --format json)" in lines
    full = dualtrack("compare", folder, single).stdout
    assert len([l for l in full.splitlines() if l.startswith(("ok ", "FAIL "))]) == len(sd)
