"""The cost prediction end to end: a real training step traced by `dualtrack run`, costed by `show`,
`coverage` and `report`, with the memory-fit stop condition on a step whose activations exceed a
small device profile (docs/cost.md)."""

import json
import shutil
import sys
import textwrap

import pytest

# Activations of about 64 MB kept for backward: [4096, 1024] float32 four times over.
SCRIPT = textwrap.dedent(
    """
    import torch
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 8))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(4096, 1024)
    y = torch.randn(4096, 8)
    for _ in range(2):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    print("done")
    """
)

# A profile too small for that step, and one with room: test devices, in a copy of the shipped data.
TEST_DEVICES = {
    "schema": "dualtrack.devices/1",
    "devices": [
        {"id": "tiny", "name": "Tiny", "variant": None, "aliases": [], "vendor": "apple",
         "fp32_flops": 1e12, "fp16_flops": None, "bf16_flops": None,
         "memory_bytes_per_s": 1e11, "memory_options_gb": [0.05], "memory_kind": "unified",
         "sources": [{"url": "test fixture", "date": "2026-12-07"}]},
        {"id": "roomy", "name": "Roomy", "variant": None, "aliases": [], "vendor": "apple",
         "fp32_flops": 1e12, "fp16_flops": None, "bf16_flops": None,
         "memory_bytes_per_s": 1e11, "memory_options_gb": [4], "memory_kind": "unified",
         "sources": [{"url": "test fixture", "date": "2026-12-07"}]},
    ],
}


@pytest.fixture(scope="module")
def traced(tmp_path_factory, dualtrack_bin, repo_root):
    import subprocess

    root = tmp_path_factory.mktemp("cost")
    (root / "train.py").write_text(SCRIPT)
    bundle = root / "runs" / "cpu"
    r = subprocess.run(
        [str(dualtrack_bin), "run", "--track", "cpu", "--steps", "2", "-q", "-o", str(bundle),
         "--", sys.executable, "train.py"],
        cwd=root, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    data = root / "data"
    shutil.copytree(repo_root / "data", data)
    (data / "devices" / "test.json").write_text(json.dumps(TEST_DEVICES))
    return {"root": root, "bundle": bundle, "env": {"DUALTRACK_DATA_DIR": str(data)}}


def test_show_prints_the_steps_cost_memory_and_predictions(dualtrack, traced):
    r = dualtrack("show", str(traced["bundle"]), "--format", "json")
    assert r.returncode == 0, r.stderr
    cost = json.loads(r.stdout)["cost"]
    assert cost["step"] == 2  # The second step, past the first one's warm-up.
    # Forward: three matmuls of a [4096, 1024] batch, 2·4096·1024·(1024+1024+8) FLOPs. Backward:
    # every weight's gradient (the forward's FLOPs again) and the input gradients of the second
    # and third layers only (the batch needs none). Elementwise work and Adam add well under 1 %.
    forward = 2 * 4096 * 1024 * (1024 + 1024 + 8)
    matmuls = 2 * forward + 2 * 4096 * 1024 * (1024 + 8)
    assert matmuls <= cost["flops"] <= 1.01 * matmuls, cost["flops"] / matmuls
    memory = cost["memory"]
    params = (1024 * 1024 + 1024) * 2 + 1024 * 8 + 8
    assert memory["params"] == params * 4
    assert memory["grads"] == params * 4
    assert memory["optimizer_state"] >= 2 * params * 4
    assert memory["activations"] >= 3 * 4096 * 1024 * 4  # Kept for backward.
    assert memory["step_peak"] >= memory["params"] + memory["activations"]
    # The traced machine's own prediction comes first, then the default Macs.
    names = [p["device"] for p in cost["predictions"]]
    assert names[0].startswith("this machine (cpu")
    assert names[1:] == ["M2 16GB", "M3 Pro 36GB", "M4 Max 128GB"]
    mine = cost["predictions"][0]
    assert mine["bound"] in ("compute", "memory", "framework", "dispatch overhead")
    assert len(mine["top_ops"]) == 5 and mine["top_ops"][0]["key"] in ("aten::addmm", "aten::mm")
    assert all(p["fits"] for p in cost["predictions"][1:])
    text = dualtrack("show", str(traced["bundle"])).stdout
    assert "Step cost (step 2, cpu)" in text and "train.py:" in text


def test_coverage_prints_the_steps_cost_beside_the_operators(dualtrack, traced):
    r = dualtrack("coverage", str(traced["bundle"]), "--mac", "M1 8GB", "--format", "json")
    assert r.returncode in (0, 1), r.stderr
    doc = json.loads(r.stdout)
    assert doc["cost"]["predictions"][-1]["device"] == "M1 8GB"
    text = dualtrack("coverage", str(traced["bundle"]), "--mac", "M1 8GB").stdout
    assert "predicted step time" in text and "M1 8GB" in text


def _report(dualtrack, traced, *macs, fmt="json"):
    out = traced["root"] / f"report-{len(macs)}.{fmt}"
    args = ["report", "--track", f"cpu={traced['bundle']}", "-o", str(out), "--force"]
    for m in macs:
        args += ["--mac", m]
    r = dualtrack(*args, env=traced["env"])
    assert r.returncode == 0, r.stderr
    return out.read_text()


def test_a_step_too_big_for_every_named_mac_cannot_finish(dualtrack, traced):
    doc = json.loads(_report(dualtrack, traced, "Tiny 0.05GB"))
    stop = next(s for s in doc["stop_conditions"] if s["id"] == "cannot-finish")
    assert stop["state"] == "holds" and not stop["formal_run_only"]
    assert "none of the named Macs has room" in stop["summary"]
    assert doc["verdict"] == "cuda-only"
    tiny = doc["cost"]["predictions"][-1]
    assert tiny["device"] == "Tiny 0.05GB" and tiny["fits"] is False
    assert tiny["memory_needed"] > tiny["memory_available"] == pytest.approx(0.05 * 2**30 * 0.75)


def test_one_mac_with_room_clears_it_and_the_html_marks_the_one_without(dualtrack, traced):
    doc = json.loads(_report(dualtrack, traced, "Tiny 0.05GB", "Roomy 4GB"))
    stop = next(s for s in doc["stop_conditions"] if s["id"] == "cannot-finish")
    assert stop["state"] == "clear" and "Roomy 4GB" in stop["summary"]
    assert doc["verdict"] != "cuda-only"
    html = _report(dualtrack, traced, "Tiny 0.05GB", "Roomy 4GB", fmt="html")
    assert '<h2 id="cost">Time and memory on a Mac</h2>' in html
    assert '<svg class="steps"' in html and '<rect class="nofit"' in html
    assert '<rect class="measured"' in html  # The traced track, beside the predictions.
    assert "DOES NOT FIT" in html and "fits:" in html
    md = _report(dualtrack, traced, "Tiny 0.05GB", "Roomy 4GB", fmt="md")
    assert "## Time and memory on a Mac" in md and "| Roomy 4GB |" in md


def test_a_designated_run_over_the_limit_is_dev_only(dualtrack, traced):
    out = traced["root"] / "long.json"
    r = dualtrack("report", "--track", f"cpu={traced['bundle']}", "--mac", "Roomy 4GB",
                  "--steps", "100000000", "--max-hours", "1", "-o", str(out), env=traced["env"])
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    stop = next(s for s in doc["stop_conditions"] if s["id"] == "cannot-finish")
    assert stop["state"] == "holds" and stop["formal_run_only"]
    assert doc["verdict"] == "dev-only"
    assert doc["cost"]["predictions"][-1]["finishes"] is False


def test_an_unknown_mac_is_a_usage_error_with_a_suggestion(dualtrack, traced):
    r = dualtrack("show", str(traced["bundle"]), "--mac", "M3 Mux 36GB")
    assert r.returncode == 2
    assert "unknown device 'M3 Mux 36GB'" in r.stderr and "did you mean 'M3 Max'" in r.stderr


def test_a_malformed_cost_table_is_an_input_error_naming_the_line(dualtrack, traced, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(traced["bundle"], bad)
    with open(bad / "cost.jsonl", "a", encoding="utf-8") as f:
        f.write('{"step": 1, "op": "aten::mm", "inputs": [{"shape": [-4]}]}\n')
    r = dualtrack("show", str(bad))
    assert r.returncode == 2
    assert "cost.jsonl" in r.stderr and "negative" in r.stderr


def test_no_peak_leaves_the_machine_unmeasured(dualtrack, tmp_path):
    (tmp_path / "t.py").write_text(SCRIPT.replace("4096", "64"))
    out = tmp_path / "b"
    r = dualtrack("run", "--track", "cpu", "--no-peak", "-q", "-o", str(out), "--",
                  sys.executable, "t.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest.get("device_peak") is None
    cost = json.loads(dualtrack("show", str(out), "--format", "json").stdout)["cost"]
    assert not any(p["measured_profile"] for p in cost["predictions"])


def test_without_device_profiles_the_cost_still_shows_and_named_macs_are_an_error(
    dualtrack, traced, repo_root, tmp_path
):
    data = tmp_path / "data"
    shutil.copytree(repo_root / "data", data, ignore=shutil.ignore_patterns("devices"))
    env = {"DUALTRACK_DATA_DIR": str(data)}
    r = dualtrack("show", str(traced["bundle"]), env=env)
    assert r.returncode == 0, r.stderr
    assert "Step cost (step 2, cpu)" in r.stdout and "M2 16GB" not in r.stdout
    named = dualtrack("show", str(traced["bundle"]), "--mac", "M2 16GB", env=env)
    assert named.returncode == 2 and "device profiles" in named.stderr
