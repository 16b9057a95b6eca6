"""End-to-end tests of `dualtrack scan` and `dualtrack rule` on real files."""

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
EXPECTED = HERE / "expected" / "cuda-research.json"


def scan_json(dualtrack, *args, cwd=None):
    r = dualtrack("scan", *args, "--format", "json", "--fail-on", "never", cwd=cwd)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def by_loc(doc):
    return {(f["file"], f["line"], f["code"]): f for f in doc["findings"]}


@pytest.fixture(scope="module")
def example_scan(dualtrack_bin, repo_root):
    r = subprocess.run([str(dualtrack_bin), "scan", "examples/cuda-research", "--format", "json"],
                       cwd=repo_root, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, r.stderr  # Unguarded fixable findings exist: default --fail-on fixable.
    return json.loads(r.stdout)


def test_example_equals_expected_file(example_scan):
    expected = json.loads(EXPECTED.read_text())
    assert example_scan == expected, (
        "scan output changed; if intended, regenerate with: build/dualtrack scan "
        "examples/cuda-research --format json --fail-on never -o tests/scan/expected/cuda-research.json")


def test_example_has_no_absolute_paths_or_timestamps(example_scan):
    text = json.dumps(example_scan)
    assert "/work/" not in text and "/tmp/" not in text
    assert example_scan["root"] == "examples/cuda-research"
    assert example_scan["schema"] == "dualtrack.scan/1"


PLANTED = [
    # file, line, code, guarded, reachable
    ("train.py", 44, "DT102", False, True),     # --device default "cuda"
    ("train.py", 84, "DT102", False, False),    # def build(device="cuda"): its one call passes device
    ("train.py", 93, "DT101", True, True),      # model.cuda() under is_available()
    ("train.py", 106, "DT104", True, True),     # portable DDP set_device
    ("train.py", 108, "DT205", True, True),     # backend="nccl" (setup_distributed runs only under --distributed)
    ("train.py", 109, "DT104", True, True),     # torch.cuda.set_device(local_rank), same
    ("train.py", 116, "DT106", False, True),    # cudnn.benchmark
    ("train.py", 147, "DT115", True, True),     # torch.cuda.amp.autocast if use_amp
    ("train.py", 148, "DT115", True, True),     # GradScaler if use_amp
    ("train.py", 150, "DT203", False, True),    # F.multi_margin_loss
    ("utils/metrics.py", 9, "DT204", False, True),
    ("utils/timing.py", 18, "DT103", True, True),
    ("portable.py", 24, "DT102", True, True),
    ("portable.py", 43, "DT103", True, True),
    ("model.py", 18, "DT201", True, True),      # optional flash_attn import
    ("model.py", 109, "DT202", True, True),
    ("model.py", 24, "DT305", True, True),      # optional fused_gelu_cuda import
    ("model.py", 35, "DT305", True, True),
    ("scripts/benchmark_cuda.py", 11, "DT201", False, False),  # CuPy in an unused script
    ("scripts/benchmark_cuda.py", 31, "DT101", False, False),
    ("scripts/benchmark_cuda.py", 34, "DT103", False, False),
]


@pytest.mark.parametrize("file,line,code,guarded,reachable", PLANTED)
def test_planted_python_dependencies(example_scan, file, line, code, guarded, reachable):
    f = by_loc(example_scan).get((file, line, code))
    assert f is not None, f"{file}:{line} {code} not reported"
    assert f["guarded"] is guarded
    assert f["reachable"] is reachable
    if guarded:
        assert f["severity"] == "portable"
    else:
        assert f["severity"] != "portable" or code == "DT106"


@pytest.mark.parametrize("file,line,code", [
    ("ext/setup.py", 19, "DT301"), ("ext/setup.py", 13, "DT302"), ("ext/setup.py", 24, "DT302"),
    ("ext/fused_gelu_kernel.cu", 6, "DT304"), ("ext/fused_gelu_kernel.cu", 18, "DT303"),
    ("ext/fused_gelu_kernel.cu", 48, "DT304"), ("ext/fused_gelu_kernel.cu", 63, "DT303"),
    ("ext/fused_gelu.cpp", 7, "DT307"), ("ext/fused_gelu.cpp", 25, "DT309"),
    ("scripts/launch.sh", 6, "DT405"), ("scripts/launch.sh", 9, "DT406"),
    ("scripts/launch.sh", 13, "DT407"), ("scripts/build_ext.sh", 11, "DT302"),
    ("requirements.txt", 2, "DT401"), ("requirements.txt", 3, "DT401"),
    ("requirements.txt", 4, "DT402"), ("requirements.txt", 7, "DT403"),
    ("requirements.txt", 9, "DT403"), ("environment.yml", 4, "DT408"),
    ("environment.yml", 9, "DT402"), ("environment.yml", 10, "DT402"),
    ("Dockerfile", 2, "DT404"), ("Dockerfile", 6, "DT302"), ("Dockerfile", 18, "DT310"),
    ("pyproject.toml", 10, "DT403"),
])
def test_planted_build_and_environment(example_scan, file, line, code):
    f = by_loc(example_scan).get((file, line, code))
    assert f is not None, f"{file}:{line} {code} not reported"
    assert f["reachable"] is None


def test_notebook_cells(example_scan):
    nb = [f for f in example_scan["findings"] if f["file"] == "notebooks/explore.ipynb"]
    assert {(f["cell"], f["line"], f["code"]) for f in nb} == {(4, 1, "DT104"), (5, 3, "DT101"), (5, 5, "DT101")}
    assert all(f["reachable"] is False for f in nb)


def test_traps_are_not_reported(example_scan):
    traps = {("train.py", n) for n in list(range(1, 12)) + [45, 85, 86, 87, 88, 89, 146]}
    traps |= {("model.py", n) for n in [1, 2, 3, 4, 5, 6, 7, 16, 22, 45, 94]}
    traps |= {("utils/timing.py", n) for n in range(1, 6)}
    traps |= {("portable.py", 49), ("requirements.txt", 1), ("requirements.txt", 8), ("Dockerfile", 1)}
    hits = [(f["file"], f["line"]) for f in example_scan["findings"] if (f["file"], f["line"]) in traps]
    assert hits == []
    assert not any(f["file"].endswith("README.md") for f in example_scan["findings"])
    assert not any(f["file"] == "notebooks/explore.ipynb" and f["cell"] == 1 for f in example_scan["findings"])


def test_summary_keeps_reachability_apart(example_scan):
    s = example_scan["summary"]
    r = s["by_reachability"]
    assert r["reachable"] + r["unreachable"] + r["not_python"] == s["findings"] == len(example_scan["findings"])
    assert r["unreachable"] > 0 and r["reachable"] > 0
    assert 0 < s["readiness"] < 1
    assert example_scan["entries"] == ["train.py"]


def write(path: Path, text, mode="w"):
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def test_lexer_traps_and_aliases(dualtrack, tmp_path):
    write(tmp_path / "app.py", '''
import torch.cuda as tc
from torch.cuda.amp import autocast
import torch
# torch.cuda.synchronize() in a comment
s = "torch.cuda.synchronize() in a string"
b = b"cuda"
f = f"{'cuda'} and {x!r:>{width}} \\"cuda\\""
doc = """
x.cuda()
"""
tc.synchronize()
with autocast():
    pass
y = (torch
     .cuda
     .synchronize())
torch.cuda.brand_new_api(1)
dev = f"cuda:{rank}"
z = x.to("cuda:1")  # dualtrack: ignore[DT102]
w = x.cuda()  # dualtrack: ignore
if __name__ == "__main__":
    pass
''')
    doc = scan_json(dualtrack, tmp_path)
    got = sorted((f["line"], f["code"]) for f in doc["findings"])
    assert got == [(3, "DT115"), (12, "DT103"), (13, "DT115"), (15, "DT103"), (18, "DT110"), (19, "DT102")]


def test_guards(dualtrack, tmp_path):
    write(tmp_path / "g.py", '''
import torch
device = "cuda" if torch.cuda.is_available() else "cpu"
use_cuda = torch.cuda.is_available()
if use_cuda:
    torch.cuda.synchronize()
if not torch.cuda.is_available():
    torch.cuda.synchronize()
else:
    torch.cuda.empty_cache()
torch.cuda.manual_seed(0)
''')
    doc = scan_json(dualtrack, tmp_path)
    got = {(f["line"], f["code"]): f["guarded"] for f in doc["findings"]}
    assert got == {(3, "DT102"): True, (6, "DT103"): True, (8, "DT103"): False,
                   (10, "DT115"): True, (11, "DT115"): False}


def test_malformed_inputs_are_skipped_with_a_note(dualtrack, tmp_path):
    write(tmp_path / "ok.py", "import torch\nx = torch.zeros(1).cuda()\n")
    write(tmp_path / "bad.ipynb", '{"cells": [ {"cell_type": "code", "source": "x.cuda()"')
    write(tmp_path / "latin.py", "# caf\xe9\nx = y.cuda()\n".encode("latin-1"))
    write(tmp_path / "blob.py", b"\x7fELF\x00\x00\x01cuda" * 100)
    (tmp_path / "loop").symlink_to(tmp_path)
    (tmp_path / "dangling.py").symlink_to(tmp_path / "nowhere.py")
    os.mkfifo(tmp_path / "pipe.py")
    doc = scan_json(dualtrack, tmp_path)
    reasons = {s["file"]: s["reason"] for s in doc["skipped"]}
    assert reasons["bad.ipynb"].startswith("invalid notebook JSON")
    assert reasons["latin.py"] == "not valid UTF-8"
    assert reasons["blob.py"] == "binary file"
    assert reasons["loop"] == "symlink loop"
    assert reasons["dangling.py"] == "broken symlink"
    assert reasons["pipe.py"] == "not a regular file"
    assert [(f["file"], f["code"]) for f in doc["findings"]] == [("ok.py", "DT101")]


def test_notebook_fields_of_the_wrong_type_are_ignored(dualtrack, tmp_path):
    """A cell whose cell_type or source is not a string (found by fuzz_notebook: it ended the scan
    with an uncaught exception) is not code; the notebook's other cells are still read."""
    cells = [{"cell_type": {}}, {"cell_type": 3, "source": "x.cuda()"},
             {"cell_type": "code", "source": {"a": 1}}, {"cell_type": None},
             {"cell_type": "code", "source": ["import torch\n", "y = torch.zeros(1).cuda()\n"]}]
    write(tmp_path / "nb.ipynb", json.dumps({"cells": cells, "metadata": {}, "nbformat": 4}))
    doc = scan_json(dualtrack, tmp_path)
    assert doc["skipped"] == []
    assert [(f["file"], f["cell"], f["line"], f["code"]) for f in doc["findings"]] == [
        ("nb.ipynb", 5, 2, "DT101")]


# The size limit holds on each path a file can take through the reader: read whole in the first
# read, stat'ed after it, or mapped; the reason gives the file's real size.
def test_max_file_size_on_every_read_path(dualtrack, tmp_path):
    sizes = {"tiny.py": 10, "small.py": 5000, "medium.py": 40000, "large.py": 200000}
    for name, size in sizes.items():
        write(tmp_path / name, "x.cuda()\n" + "#" * (size - 10) + "\n")
    for limit, kept in (("1K", {"tiny.py"}), ("20K", {"tiny.py", "small.py"}),
                        ("100K", {"tiny.py", "small.py", "medium.py"})):
        doc = scan_json(dualtrack, tmp_path, "--max-file-size", limit)
        assert {f["file"] for f in doc["findings"]} == kept, limit
        skipped = {s["file"]: s["reason"] for s in doc["skipped"]}
        assert set(skipped) == set(sizes) - kept, limit
        for name, reason in skipped.items():
            assert reason == f"larger than --max-file-size ({sizes[name]} bytes)", reason


def test_huge_one_line_file(dualtrack, tmp_path):
    big = tmp_path / "minified.py"
    with open(big, "w") as fh:
        fh.write('s = "')
        chunk = "a" * (1 << 20)
        for _ in range(100):
            fh.write(chunk)
        fh.write('"; y = t.cuda()\n')
    write(tmp_path / "small.py", "x = 1\n")  # A tree where everything is skipped is exit 2.
    doc = scan_json(dualtrack, tmp_path)
    assert doc["skipped"][0]["file"] == "minified.py"
    assert "max-file-size" in doc["skipped"][0]["reason"]
    doc = scan_json(dualtrack, tmp_path, "--max-file-size", "200M")
    assert [(f["file"], f["line"], f["code"]) for f in doc["findings"]] == [("minified.py", 1, "DT101")]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file(dualtrack, tmp_path):
    p = write(tmp_path / "secret.py", "x.cuda()\n")
    write(tmp_path / "ok.py", "x = 1\n")
    p.chmod(0)
    doc = scan_json(dualtrack, tmp_path)
    assert doc["skipped"][0]["reason"].startswith("unreadable")


def test_missing_path_and_empty_tree_are_errors(dualtrack, tmp_path):
    r = dualtrack("scan", tmp_path / "nope")
    assert r.returncode == 2 and "no such file" in r.stderr
    (tmp_path / "empty").mkdir()
    write(tmp_path / "empty" / "notes.txt", "cuda everywhere\n")
    r = dualtrack("scan", tmp_path / "empty")
    assert r.returncode == 2 and "nothing was scanned" in r.stderr


def test_config_gitignore_and_entries(dualtrack, tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.dualtrack]\nentry = ["main.py"]\nexclude = ["vendor"]\nignore = ["DT4"]\n')
    write(tmp_path / "main.py", "import helper\n")
    write(tmp_path / "helper.py", "import torch\ntorch.cuda.synchronize()\n")
    write(tmp_path / "other.py", "import torch\ntorch.cuda.synchronize()\nif __name__ == '__main__':\n    pass\n")
    write(tmp_path / "vendor" / "v.py", "x.cuda()\n")
    write(tmp_path / "build" / "gen.py", "x.cuda()\n")
    write(tmp_path / ".gitignore", "build/\n")
    write(tmp_path / "requirements.txt", "cupy-cuda12x\n")
    doc = scan_json(dualtrack, tmp_path)
    got = {(f["file"], f["code"], f["reachable"]) for f in doc["findings"]}
    assert got == {("helper.py", "DT103", True), ("other.py", "DT103", False)}
    doc = scan_json(dualtrack, tmp_path, "--no-gitignore", "--entry", "other.py")
    got = {(f["file"], f["code"], f["reachable"]) for f in doc["findings"]}
    assert ("build/gen.py", "DT101", False) in got and ("other.py", "DT103", True) in got



def test_an_entry_named_on_the_command_line_is_read_though_gitignored(dualtrack, tmp_path):
    # VAR's .gitignore says `*.ipynb` while its two demo notebooks are committed: git reads a
    # tracked file whatever .gitignore says, and so does the scan for the entries it is given.
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                     "source": ["import torch\n", "from model import build\n",
                                "net = build().cuda()\n"]}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    write(tmp_path / "demos" / "demo.ipynb", json.dumps(nb))
    write(tmp_path / "demos" / "other.ipynb", json.dumps(nb))
    write(tmp_path / "model.py", "import torch\n\n\ndef build():\n    return torch.nn.Linear(2, 2)\n")
    write(tmp_path / ".gitignore", "*.ipynb\ndemos/\n")
    doc = scan_json(dualtrack, tmp_path, "--entry", "demos/demo.ipynb")
    assert doc["entries"] == ["demos/demo.ipynb"]
    got = {(f["file"], f["code"]) for f in doc["findings"]}
    assert ("demos/demo.ipynb", "DT101") in got
    assert not any(f == "demos/other.ipynb" for f, _ in got)  # Still ignored: not named.
    assert "demos/demo.ipynb" not in {f["file"] for f in scan_json(dualtrack, tmp_path)["findings"]}

# An entry script without any trigger word is read by the cheap import-only pass; its imports
# may continue over lines with a backslash, and its `__main__` test must still make it an entry
# (a continuation once swallowed the test, and the script was no entry).
def test_entry_without_trigger_words_with_continued_imports(dualtrack, tmp_path):
    write(tmp_path / "run.py", "from helper import a, \\\n    b\nimport os\n\n"
                               "if __name__ == '__main__':\n    a()\n")
    write(tmp_path / "helper.py", "import torch\ndef a():\n    torch.cuda.synchronize()\nb = 1\n")
    write(tmp_path / "unused.py", "import torch\ntorch.cuda.synchronize()\n")
    doc = scan_json(dualtrack, tmp_path)
    assert doc["entries"] == ["run.py"]
    got = {(f["file"], f["code"], f["reachable"]) for f in doc["findings"]}
    assert got == {("helper.py", "DT103", True), ("unused.py", "DT103", False)}


# The import-only pass finds import statements from the word `import` alone: `from x \` with its
# `import` on the next line is one, and a docstring line that starts with "from" is not (one with
# an unclosed bracket once swallowed every import after it).
def test_entry_without_trigger_words_reads_only_import_statements(dualtrack, tmp_path):
    write(tmp_path / "run.py", "'''Usage notes\nfrom (the paper\n'''\nfrom helper \\\n"
                               "    import a\nimport os\n\nif __name__ == '__main__':\n    a()\n")
    write(tmp_path / "helper.py", "import torch\ndef a():\n    torch.cuda.synchronize()\n")
    doc = scan_json(dualtrack, tmp_path)
    assert doc["entries"] == ["run.py"]
    got = {(f["file"], f["code"], f["reachable"]) for f in doc["findings"]}
    assert got == {("helper.py", "DT103", True)}


# A user rule whose text starts with "__" keeps "__main__" out of the shared prefilter search
# (the two could start at the same place); entries are then found by the separate search.
def test_entry_found_when_a_user_rule_starts_like_main(dualtrack, tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.dualtrack]\nrules = "r.toml"\n')
    write(tmp_path / "r.toml", '[[rule]]\ncode = "DT902"\nclass = "device"\nseverity = "fixable"\n'
                               'title = "Hook"\nmessage = "{name}"\ntext = "__nv_hook"\n')
    write(tmp_path / "run.py", "import helper\n\nif __name__ == '__main__':\n    helper.go()\n")
    write(tmp_path / "helper.py", "import torch\ndef go():\n    torch.cuda.synchronize()\n")
    write(tmp_path / "other.py", "x = 1  # __nv_hook\ny = __nv_hook()\n")
    doc = scan_json(dualtrack, tmp_path)
    assert doc["entries"] == ["run.py"]
    got = {(f["file"], f["code"], f["reachable"]) for f in doc["findings"]}
    assert got == {("helper.py", "DT103", True), ("other.py", "DT902", False)}


def test_user_text_rules_reach_notebook_cells(dualtrack, tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.dualtrack]\nrules = "r.toml"\n')
    write(tmp_path / "r.toml", '[[rule]]\ncode = "DT903"\nclass = "device"\nseverity = "fixable"\n'
                               'title = "Lab launcher"\nmessage = "{name}"\ntext = "lab_gpu_launch"\n')
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["lab_gpu_launch in prose\n"]},
             {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
              "source": ["import os\n", "# lab_gpu_launch in a comment\n", "lab_gpu_launch(4)\n"]}]
    write(tmp_path / "nb.ipynb", json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                              "nbformat_minor": 5}))
    write(tmp_path / "m.py", "lab_gpu_launch(2)\n")
    doc = scan_json(dualtrack, tmp_path)
    got = sorted((f["file"], f.get("cell"), f["line"], f["code"]) for f in doc["findings"])
    assert got == [("m.py", None, 1, "DT903"), ("nb.ipynb", 2, 3, "DT903")]


def test_user_rules(dualtrack, tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.dualtrack]\nrules = "cuda-rules.toml"\n')
    write(tmp_path / "cuda-rules.toml", '''
[[rule]]
code = "DT901"
class = "library"
severity = "blocker"
title = "Lab kernels"
message = "{name} is the lab's CUDA kernel package"
python_api = "labkernels"
''')
    write(tmp_path / "m.py", "import labkernels as lk\nlk.fused_cuda_op(1)\n")
    doc = scan_json(dualtrack, tmp_path)
    assert [(f["line"], f["code"], f["severity"]) for f in doc["findings"]] == [(1, "DT901", "blocker"), (2, "DT901", "blocker")]


def test_fail_on(dualtrack, example_dir, tmp_path):
    assert dualtrack("scan", example_dir, "--fail-on", "never").returncode == 0
    assert dualtrack("scan", example_dir, "--fail-on", "blocker").returncode == 1
    write(tmp_path / "p.py", "import torch\nif torch.cuda.is_available():\n    torch.cuda.synchronize()\n")
    assert dualtrack("scan", tmp_path).returncode == 0
    assert dualtrack("scan", tmp_path, "--fail-on", "portable").returncode == 1


def test_formats(dualtrack, example_dir):
    text = dualtrack("scan", example_dir, "--statistics").stdout
    assert "\x1b[" not in text and "Summary" in text and "readiness" in text and "per file" in text
    sarif = json.loads(dualtrack("scan", example_dir, "--format", "sarif").stdout)
    assert sarif["version"] == "2.1.0"
    run = sarif["runs"][0]
    ids = {r["id"] for r in run["tool"]["driver"]["rules"]}
    assert all(r["ruleId"] in ids for r in run["results"])
    doc = scan_json(dualtrack, example_dir)
    assert len(run["results"]) == len(doc["findings"])
    md = dualtrack("scan", example_dir, "--format", "markdown").stdout
    assert md.startswith("# CUDA dependencies") and "| class |" in md
    gh = dualtrack("scan", example_dir, "--format", "github").stdout.splitlines()
    assert len(gh) == len(doc["findings"])
    assert all(line.startswith(("::error ", "::warning ", "::notice ")) for line in gh)


def test_rule_command(dualtrack):
    r = dualtrack("rule", "DT201")
    assert r.returncode == 0 and "FlashAttention" in r.stdout and "scaled_dot_product_attention" in r.stdout
    r = dualtrack("rule", "DT2O1")
    assert r.returncode == 2 and "did you mean DT201" in r.stderr
    listing = dualtrack("rule", "--list").stdout.splitlines()
    assert len(listing) >= 30 and all(line.startswith("DT") for line in listing)


def test_rule_docs_are_up_to_date(dualtrack, repo_root, tmp_path):
    r = dualtrack("rule", "--all", "--markdown", tmp_path / "rules")
    assert r.returncode == 0, r.stderr
    generated = {p.name: p.read_text() for p in (tmp_path / "rules").iterdir()}
    committed = {p.name: p.read_text() for p in (repo_root / "docs" / "rules").iterdir()}
    assert generated == committed, "docs/rules is stale: run build/dualtrack rule --all --markdown docs/rules"


def test_checkpoint_loads_count_only_where_the_project_writes_checkpoints(dualtrack, tmp_path):
    # segment-anything loads released weights (CPU tensors) and saves nothing: its torch.load is not
    # a finding. A project that saves its own checkpoints (from a model trained on CUDA) loads them
    # back without map_location at its peril.
    write(tmp_path / "infer" / "build.py", "import torch\nstate = torch.load(path)\nmodel = torch.nn.Linear(2, 2)\n")
    doc = scan_json(dualtrack, tmp_path / "infer")
    assert [f for f in doc["findings"] if f["code"] == "DT116"] == []
    write(tmp_path / "infer" / "train.py", "import torch\nm = torch.nn.Linear(2, 2).cuda()\ntorch.save(m.state_dict(), 'm.pt')\n")
    doc = scan_json(dualtrack, tmp_path / "infer")
    found = [(f["file"], f["line"], f["severity"]) for f in doc["findings"] if f["code"] == "DT116"]
    assert found == [("build.py", 2, "fixable")]


def test_a_checkpoint_writer_without_any_cuda_word_still_counts(dualtrack, tmp_path):
    # The saving module names nothing CUDA (it is not analysed at all); its torch.save still
    # makes the project's loads a risk.
    write(tmp_path / "p" / "evaluate.py", "import torch\nstate = torch.load(path)\n")
    write(tmp_path / "p" / "ckpt.py", "import torch\n\ndef save(m, path):\n    torch.save(m.state_dict(), path)\n")
    doc = scan_json(dualtrack, tmp_path / "p")
    assert [(f["file"], f["line"]) for f in doc["findings"] if f["code"] == "DT116"] == [("evaluate.py", 2)]


def test_a_script_inside_a_template_string_is_no_entry(dualtrack, tmp_path):
    # A code generator's template holds `if __name__ == "__main__":` as text; the module that
    # holds it is no script. A real module test is, whether or not the file is analysed.
    write(tmp_path / "p" / "gen.py", 'TEMPLATE = """\nimport sys\n\nif __name__ == "__main__":\n    main()\n"""\n')
    write(tmp_path / "p" / "run.py", "import gen\n\nif __name__ == '__main__':\n    print(gen.TEMPLATE)\n")
    doc = scan_json(dualtrack, tmp_path / "p")
    assert doc["entries"] == ["run.py"]


def test_many_module_tests_in_strings_are_read_once(dualtrack, tmp_path):
    # Hostile input: 100,000 template lines that look like module tests, all in one string. Each is
    # checked against one lexing of the file (lexing the text before every such line took minutes).
    body = 'if __name__ == "__main__":\n    main()\n' * 100_000
    write(tmp_path / "p" / "gen.py", 'TEMPLATE = """\n' + body + '"""\n')
    r = dualtrack("scan", tmp_path / "p", "--format", "json", "--fail-on", "never", timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["entries"] == []


def test_a_statement_of_many_strings_is_read_once(dualtrack, tmp_path):
    # Hostile input: one statement of 300,000 adjacent string literals, each naming CUDA. Whether
    # the statement is prose (strings alone) is read once, not once per string.
    write(tmp_path / "p" / "strings.py", '"cuda" ' * 300_000 + "\n")
    r = dualtrack("scan", tmp_path / "p", "--format", "json", "--fail-on", "never", timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["findings"] == []


def test_guessed_entries_are_the_scripts_audit_would_pick(dualtrack, tmp_path):
    # A flat training script (no __main__ block) named in the README, and a data preparation
    # script that has one: the scan guesses as audit does, so train.py is the entry and the
    # model it imports is on the path; prepare.py is no entry.
    write(tmp_path / "README.md", "```\npython data/openwebtext/prepare.py\npython train.py\n```\n")
    write(tmp_path / "train.py", "import torch\nfrom model import Net\nnet = Net().cuda()\n")
    write(tmp_path / "model.py", "import torch\nclass Net(torch.nn.Module):\n"
          "    def forward(self, x):\n        return x.cuda()\n")
    write(tmp_path / "data" / "openwebtext" / "prepare.py",
          "import numpy\nif __name__ == '__main__':\n    print(numpy.zeros(1))\n")
    doc = scan_json(dualtrack, tmp_path)
    assert doc["entries"] == ["train.py"]
    model = [f for f in doc["findings"] if f["file"] == "model.py"]
    assert model and all(f["reachable"] for f in model)
