"""The tracer's cost facts: cost.jsonl, steps[].tracer_s and memory, tracer.json's device_peak.

Real PyTorch, real `dualtrack run` of small scripts written here; the tracer is this tree's package
(DUALTRACK_PYTHON_DIR), whatever binary runs it. The table's bound and the `"peak": false` option
are tested in-process on the session and table themselves.
"""

import gc
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from conftest import REPO_ROOT

PY = sys.executable
ENV = {"DUALTRACK_PYTHON_DIR": str(REPO_ROOT / "python")}

LAYERS = """
import torch
import torch.nn as nn

BEFORE = torch.ones(1000, 1000) + 1  # before the first forward: outside every step window


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(32, 64)
        self.conv = nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2)

    def forward(self, x, img):
        y = self.lin(x)
        for _ in range(5):
            y = torch.tanh(y)
        z = self.conv(img)
        try:
            torch.linalg.cholesky(-torch.eye(3))  # not positive-definite: raises
        except RuntimeError:
            pass
        try:
            torch.mm(torch.ones(2, 3), torch.ones(4, 5))  # shapes do not match: raises
        except RuntimeError:
            pass
        return y.pow(2).mean() + z.pow(2).mean()


torch.manual_seed(0)
net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
x = torch.ones(8, 32)
img = torch.ones(2, 4, 9, 9)
for step in range(3):
    opt.zero_grad()
    loss = net(x, img)
    loss.backward()
    opt.step()
print("done")
"""

ADAM = """
import torch
import torch.nn as nn

torch.manual_seed(0)
lin = nn.Linear(256, 256)
opt = torch.optim.Adam(lin.parameters(), lr=1e-3)
x = torch.full((4096, 256), 0.01)
for step in range(2):
    opt.zero_grad()
    h = torch.relu(lin(x))  # [4096, 256], saved for backward
    loss = h.pow(2).mean()
    loss.backward()
    opt.step()
print("done")
"""


def _run(dualtrack, tmp: Path, source: str, steps: int) -> Path:
    script = tmp / "train.py"
    script.write_text(textwrap.dedent(source))
    out = tmp / "bundle"
    proc = dualtrack(
        "run",
        "--track",
        "cpu",
        "--no-env",
        "--steps",
        steps,
        "-o",
        out,
        "--",
        PY,
        script,
        cwd=tmp,
        env=ENV,
    )
    assert proc.returncode == 0, proc.stderr
    assert "done" in proc.stdout
    return out


def _jsonl(path: Path) -> list:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _shapes(sigs: list) -> list:
    return [s["shape"] for s in sigs]


@pytest.fixture(scope="module")
def layers(tmp_path_factory, dualtrack_bin):
    tmp = tmp_path_factory.mktemp("layers")
    script = tmp / "train.py"
    script.write_text(LAYERS)
    out = tmp / "bundle"
    proc = subprocess.run(
        [
            str(dualtrack_bin),
            "run",
            "--track",
            "cpu",
            "--no-env",
            "--steps",
            "2",
            "-o",
            str(out),
            "--",
            PY,
            str(script),
        ],
        cwd=tmp,
        env={**os.environ, **ENV},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return out, _jsonl(out / "cost.jsonl"), json.loads((out / "tracer.json").read_text())


def test_rows_cover_the_captured_steps_only(layers):
    _, rows, tracer = layers
    assert {r["step"] for r in rows} == {1, 2}  # the script ran 3 steps, --steps 2
    assert tracer["cost_rows"] == len(rows) and tracer["cost_truncated"] is False
    for r in rows:
        assert set(r) == {
            "step",
            "op",
            "overload",
            "device",
            "inputs",
            "outputs",
            "scalars",
            "count",
            "time_s",
            "location",
        }
        assert r["count"] >= 1 and r["time_s"] > 0
        # An operator without tensors (the optimizer's profiler marker) has no device.
        assert r["device"] == ("cpu" if r["inputs"] or r["outputs"] else None)


def test_linear_is_addmm_with_the_real_shapes_and_strides(layers):
    _, rows, _ = layers
    for step in (1, 2):
        addmm = [r for r in rows if r["step"] == step and r["op"] == "aten::addmm"]
        assert len(addmm) == 1
        r = addmm[0]
        # bias, input, weight.t() (a transposed view: strides [1, 32]).
        assert _shapes(r["inputs"]) == [[64], [8, 32], [32, 64]]
        assert [s["stride"] for s in r["inputs"]] == [[1], [32, 1], [1, 32]]
        assert r["inputs"][1]["dtype"] == "float32"
        assert r["outputs"] == [{"shape": [8, 64], "dtype": "float32", "stride": [64, 1]}]
        assert r["count"] == 1 and r["overload"] == "default"
        assert r["location"]["file"] == "train.py" and r["location"]["function"] == "forward"
        # The weight's gradient: grad_output.t() @ input.
        mm = [m for m in rows if m["step"] == step and m["op"] == "aten::mm"]
        assert [(_shapes(m["inputs"]), _shapes(m["outputs"])) for m in mm] == [
            ([[64, 8], [8, 32]], [[64, 32]])
        ]


def test_grouped_strided_convolution_scalars_and_output(layers):
    _, rows, _ = layers
    conv = [r for r in rows if r["step"] == 1 and r["op"] == "aten::convolution"]
    assert len(conv) == 1
    r = conv[0]
    assert _shapes(r["inputs"]) == [[2, 4, 9, 9], [6, 2, 3, 3], [6]]
    assert _shapes(r["outputs"]) == [[2, 6, 5, 5]]
    # stride, padding, dilation, transposed, output_padding, groups
    assert r["scalars"] == [[2, 2], [1, 1], [1, 1], False, [0, 0], 2]
    back = [b for b in rows if b["step"] == 1 and b["op"] == "aten::convolution_backward"]
    assert len(back) == 1 and back[0]["scalars"][-2] == 2


def test_counts_are_calls_per_step_and_signature(layers):
    _, rows, _ = layers
    for step in (1, 2):
        tanh = [r for r in rows if r["step"] == step and r["op"] == "aten::tanh"]
        assert [(r["count"], _shapes(r["inputs"])) for r in tanh] == [(5, [[8, 64]])]
        back = [r for r in rows if r["step"] == step and r["op"] == "aten::tanh_backward"]
        assert [r["count"] for r in back] == [5]
    # One row per (step, op, device, signature).
    keys = [
        json.dumps(
            [
                r["step"],
                r["op"],
                r["overload"],
                r["device"],
                r["inputs"],
                r["outputs"],
                r["scalars"],
            ]
        )
        for r in rows
    ]
    assert len(keys) == len(set(keys))


def test_no_rows_outside_the_window_nor_for_failed_calls(layers):
    out, rows, _ = layers
    everywhere = json.dumps(rows)
    assert "[1000, 1000]" not in everywhere  # torch.ones(1000, 1000) + 1 at import
    assert not any(r["op"] == "aten::mm" and _shapes(r["inputs"]) == [[2, 3], [4, 5]] for r in rows)
    assert not any(r["op"] == "aten::_linalg_check_errors" for r in rows)
    # The failing calls did happen (ops.jsonl has them) and did not break the table.
    failed = {r["op"] for r in _jsonl(out / "ops.jsonl") if r["status"] == "failed"}
    assert {"aten::mm", "aten::_linalg_check_errors"} <= failed
    assert any(r["op"] == "aten::linalg_cholesky_ex" for r in rows)


def test_steps_have_tracer_time(layers):
    _, _, tracer = layers
    steps = tracer["steps"]
    assert [s["step"] for s in steps] == [1, 2, 3]
    for s in steps[:2]:
        assert 0 <= s["tracer_s"] < s["wall_s"]
    assert "tracer_s" not in steps[2] and "memory" not in steps[2]  # beyond --steps


def test_device_peak_measured_on_the_cpu(layers):
    _, _, tracer = layers
    peak = tracer["device_peak"]
    assert peak["device"] == "cpu" and peak["device_name"]
    assert isinstance(peak["threads"], int) and peak["threads"] >= 1
    for key in ("matmul_fp32_flops", "copy_bytes_per_s", "op_overhead_s", "measured_s"):
        assert peak[key] > 0, key
    assert "matmul_bf16_flops" in peak and "matmul_fp16_flops" not in peak
    assert 1e8 < peak["matmul_fp32_flops"] < 1e15
    assert peak["op_overhead_s"] < 1e-3 and peak["measured_s"] < 5
    assert tracer["tracer_errors"] == []


def test_memory_of_an_adam_step(dualtrack, tmp_path):
    # --steps 3, but the script makes 2: the device's peak is measured at exit instead.
    out = _run(dualtrack, tmp_path, ADAM, steps=3)
    steps = json.loads((out / "manifest.json").read_text())["steps"]
    assert [s["step"] for s in steps] == [1, 2]
    tracer = json.loads((out / "tracer.json").read_text())
    assert tracer["device_peak"]["matmul_fp32_flops"] > 0 and tracer["tracer_errors"] == []
    size = 256 * 256 * 4 + 256 * 4
    for s in steps:
        m = s["memory"]
        assert m["params"] == size and m["grads"] == size
        assert m["optimizer_state"] >= 2 * size  # exp_avg, exp_avg_sq (and the step counts)
        assert m["optimizer_state"] < 2 * size + 1024
        assert m["step_peak"] >= m["params"] + m["grads"] + m["optimizer_state"]
        # relu's [4096, 256] float32 output is saved for backward.
        assert m["activations"] >= 4096 * 256 * 4
        assert m["activations"] == m["step_peak"] - size - size - m["optimizer_state"]
        assert 0 <= s["tracer_s"] < s["wall_s"]


# ---- in-process: the table's bound, the storage tracker, "peak": false ------------------------


def test_cost_table_bound_stops_adding_and_notes_once():
    from dualtrack import _cost

    assert _cost.MAX_ROWS == 200_000
    notes = []
    table = _cost.CostTable(notes.append, limit=3)
    keys = [(1, ("op", "cpu", ((torch.Size([i]), torch.float32, (1,)),), (), ())) for i in range(5)]
    for k in keys:
        table.add(k, 0.5, None)
    table.add(keys[0], 0.25, None)  # an existing row still counts
    assert len(table.rows) == 3 and table.truncated
    assert notes == [
        "cost table: more than 3 distinct operator signatures; the rest of the step is not costed"
    ]
    assert table.rows[keys[0]][:2] == [2, 0.75]
    assert keys[4] not in table.rows


def test_storage_tracker_counts_new_storages_and_ignores_an_earlier_window():
    from dualtrack import _cost

    tracker = _cost.StorageTracker()
    tracker.reset()
    old = torch.ones(1000)
    tracker.add([old], [])
    assert tracker.live == tracker.peak == 4000
    tracker.reset()  # a new window: `old` is no longer this window's
    new = torch.ones(500)
    view = new[10:20]
    tracker.add([new], [])
    tracker.add([view], [new])  # a view of an input: not new
    tracker.add([old.add_(1)], [old])  # in place: not new
    assert tracker.live == tracker.peak == 2000
    del old
    gc.collect()
    assert tracker.live == 2000  # freed, but tracked in the earlier window
    del new
    gc.collect()
    assert tracker.live == 2000  # the view keeps the storage alive
    del view
    gc.collect()
    assert tracker.live == 0 and tracker.peak == 2000


def _session_step(tmp_path: Path, cfg_extra: dict, limit: int | None = None) -> dict:
    from dualtrack import _session

    session = _session.Session({"bundle": str(tmp_path), "steps": 1, **cfg_extra})
    if limit is not None:
        session.cost.table.limit = limit
    uninstall = _session.install_tracer(session)
    try:
        model = torch.nn.Linear(4, 3)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.ones(2, 4)).sum().backward()
        opt.step()
    finally:
        uninstall()
        session.flush(final=True)
        session.metrics.close()
    return json.loads((tmp_path / "tracer.json").read_text())


def test_peak_false_measures_nothing(tmp_path):
    tracer = _session_step(tmp_path, {"peak": False})
    assert tracer["device_peak"] is None and tracer["tracer_errors"] == []
    assert tracer["steps"][0]["memory"]["params"] == (4 * 3 + 3) * 4
    assert tracer["cost_rows"] == len(_jsonl(tmp_path / "cost.jsonl")) > 0


def test_truncated_table_is_flagged_in_tracer_json(tmp_path):
    tracer = _session_step(tmp_path, {"peak": False}, limit=2)
    assert tracer["cost_truncated"] is True and tracer["cost_rows"] == 2
    assert tracer["tracer_errors"] == [
        "cost table: more than 2 distinct operator signatures; the rest of the step is not costed"
    ]
    assert len(_jsonl(tmp_path / "cost.jsonl")) == 2
