"""The Python side of the field cases (tests/scan/fixtures/field/*/EXPECT.md): patterns taken from
real research repositories, each checked through the real binary."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

FIELD = Path(__file__).resolve().parent / "fixtures" / "field"


def scan(dualtrack_bin, path, *args):
    r = subprocess.run([str(dualtrack_bin), "scan", str(path), "--format", "json", *args],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode in (0, 1), r.stderr
    return r.returncode, json.loads(r.stdout)


def at(doc, file, line):
    return [f for f in doc["findings"] if f["file"] == file and f["line"] == line]


def one(doc, file, line, code):
    found = [f for f in at(doc, file, line) if f["code"] == code]
    assert len(found) == 1, (file, line, code, doc["findings"])
    return found[0]


@pytest.fixture(scope="module")
def field(dualtrack_bin):
    cache = {}

    def get(case, *args):
        key = (case, args)
        if key not in cache:
            cache[key] = scan(dualtrack_bin, FIELD / case, "--fail-on", "never", *args)[1]
        return cache[key]
    return get


def test_guard_forms(field, dualtrack_bin):
    doc = field("guard-forms")
    assert one(doc, "g.py", 6, "DT102")["guarded"]      # under `not cpu and not mps and available`
    assert one(doc, "g.py", 8, "DT101")["guarded"]      # `available and not cpu`
    assert one(doc, "g.py", 10, "DT101")["guarded"]
    assert one(doc, "g.py", 14, "DT205")["guarded"]     # "nccl" if is_nccl_available() else "gloo"
    assert one(doc, "g.py", 19, "DT103")["guarded"]     # after `if not available: return`
    for line in (22, 23):                               # manual_seed_all, empty_cache: no-ops
        f = one(doc, "g.py", line, "DT115")
        assert f["severity"] == "portable" and f["class"] == "device"
    assert all(f["severity"] == "portable" for f in doc["findings"])
    rc, _ = scan(dualtrack_bin, FIELD / "guard-forms")  # default --fail-on fixable
    assert rc == 0


def test_not_binds_to_its_operand(field):
    doc = field("guard-negation")
    for line in (4, 6, 8, 10, 12):
        assert one(doc, "g.py", line, "DT101")["guarded"], line
    assert len(doc["findings"]) == 5


def test_traps_are_not_uses(field):
    doc = field("traps")
    assert all(f["guarded"] for f in doc["findings"]), doc["findings"]
    for line in (4, 11, 17, 18):
        assert at(doc, "probe.py", line) == [], line
    assert one(doc, "probe.py", 6, "DT106")["guarded"]


def test_reading_cuda_home_builds_nothing(field):
    doc = field("cuda-home-read")
    assert [f for f in doc["findings"] if f["class"] == "extension"] == []
    assert doc["findings"] == []


def test_device_option_without_mps(field):
    doc = field("device-whitelist")
    f = one(doc, "txt2img.py", 6, "DT112")
    assert (f["class"], f["severity"], f["guarded"]) == ("device", "fixable", False)
    assert one(doc, "txt2img.py", 9, "DT102")["guarded"]


def test_device_option_with_mps_is_fine(dualtrack_bin, tmp_path):
    (tmp_path / "run.py").write_text(
        'import argparse\n'
        'p = argparse.ArgumentParser()\n'
        'p.add_argument("--device", choices=("cpu", "cuda", "mps"), default="cpu")\n')
    _, doc = scan(dualtrack_bin, tmp_path, "--fail-on", "never")
    assert doc["findings"] == []


def test_guarded_jit_extension(field):
    doc = field("guarded-jit-extension")
    assert doc["findings"], "the plugin build is still listed"
    assert all(f["guarded"] for f in doc["findings"]), doc["findings"]
    assert at(doc, "bias_act.py", 18) == []   # impl="cuda": a dispatch key
    assert at(doc, "bias_act.py", 14) == []   # the warning text
    assert one(doc, "bias_act.py", 12, "DT301")["guarded"]


def test_integer_device_index(field):
    doc = field("integer-device-index")
    f = one(doc, "main.py", 10, "DT113")
    assert f["class"] == "device" and f["guarded"]
    assert one(doc, "main.py", 13, "DT101")["guarded"]


def test_hf_int8_and_fp16(field):
    doc = field("hf-int8-fp16")
    f = one(doc, "finetune.py", 16, "DT206")
    assert (f["class"], f["severity"], f["guarded"]) == ("library", "replace", False)
    assert "float16" in f["replacement"]
    assert one(doc, "finetune.py", 20, "DT206")["class"] == "library"
    f = one(doc, "finetune.py", 24, "DT105")
    assert (f["class"], f["severity"]) == ("device", "fixable")
    f = one(doc, "finetune.py", 13, "DT113")
    assert f["guarded"]                      # inside `if ddp:`


def test_bitsandbytes_through_transformers(field):
    doc = field("hf-bitsandbytes-4bit")
    for line in (6, 8, 9):
        f = one(doc, "train.py", line, "DT206")
        assert f["class"] == "library" and not f["guarded"]
        assert "torch.optim.AdamW" not in f["replacement"]
    assert "adamw_torch" in one(doc, "train.py", 9, "DT206")["replacement"]
    assert at(doc, "train.py", 2) == [] and at(doc, "train.py", 3) == []  # imports: uses count


def test_load_in_8bit_wherever_it_appears(dualtrack_bin, tmp_path):
    (tmp_path / "m.py").write_text(
        "from transformers import AutoModel as AM\n"
        "def load(path):\n"
        "    return AM.from_pretrained(path,\n"
        "                              load_in_8bit=True)\n"
        "def other(load_in_8bit=True):\n"
        "    return dict(load_in_8bit=False)\n")
    _, doc = scan(dualtrack_bin, tmp_path, "--fail-on", "never")
    assert [(f["line"], f["code"]) for f in doc["findings"]] == [(4, "DT206")]


def test_lightning_gpus(field):
    doc = field("lightning-gpus")
    f = one(doc, "train.py", 7, "DT104")
    assert (f["class"], f["severity"]) == ("device", "fixable")
    assert "accelerator" in f["replacement"]


def test_module_named_setup_is_code(field):
    doc = field("module-named-setup")
    f = one(doc, "pkg/setup.py", 4, "DT101")
    assert f["reachable"] is True
    assert at(doc, "pkg/setup.py", 6) == []


def test_nccl_compared_or_with_fallback(field):
    doc = field("nccl-with-fallback")
    assert at(doc, "comm.py", 5) == []
    assert all(f["guarded"] for f in doc["findings"]), doc["findings"]
    assert one(doc, "comm.py", 11, "DT205")["guarded"]


def test_own_package_named_like_a_library(dualtrack_bin, tmp_path):
    # mamba_ssm is in the knowledge base; a project whose own package has that name is project code.
    tree = tmp_path / "proj"
    shutil.copytree(FIELD / "own-package-name", tree)
    (tree / "mamba_like").rename(tree / "mamba_ssm")
    for p in list(tree.rglob("*.py")) + [tree / "pyproject.toml"]:
        p.write_text(p.read_text().replace("mamba_like", "mamba_ssm"))
    _, doc = scan(dualtrack_bin, tree, "--fail-on", "never")
    assert doc["findings"] == []
    # The same import from a project that is not mamba is the library.
    (tmp_path / "user.py").write_text("from mamba_ssm import Mamba\n")
    _, doc = scan(dualtrack_bin, tmp_path / "user.py", "--fail-on", "never")
    assert [f["code"] for f in doc["findings"]] == ["DT201"]


def test_profiler_and_memory_stats(field):
    doc = field("profiler-and-memory-stats")
    f = one(doc, "bench.py", 14, "DT114")
    assert f["class"] == "device"
    # Returns 0 without CUDA, so it does not fail; it reports nothing on a Mac: fixable (portable
    # or fixable, never blocker, says the field case), rewritten by `dualtrack fix`.
    f = one(doc, "bench.py", 17, "DT107")
    assert f["severity"] in ("portable", "fixable") and f["fix"] == "safe"


def test_setup_py_prose_is_not_a_package(field):
    assert field("setup-py-strings")["findings"] == []


def test_torch_compile_on_by_default(field):
    doc = field("torch-compile-flag")
    f = one(doc, "train.py", 12, "DT208")
    assert (f["class"], f["severity"], f["guarded"]) == ("library", "fixable", False)
    f = one(doc, "train.py", 5, "DT102")
    assert (f["class"], f["severity"]) == ("device", "fixable")


def test_triton_kernel_once_per_kernel_and_launch(field):
    doc = field("triton-kernel")
    kernel = one(doc, "model.py", 5, "DT207")
    launch = one(doc, "model.py", 15, "DT207")
    assert kernel["severity"] == launch["severity"] == "blocker"
    assert not kernel["guarded"] and not launch["guarded"]
    for line in range(6, 12):
        assert at(doc, "model.py", line) == [], line
    assert len(doc["findings"]) <= 4, doc["findings"]


def test_jit_extension_followed_to_the_model(field):
    doc = field("jit-extension")
    f = one(doc, "ops.py", 6, "DT301")
    assert (f["class"], f["severity"], f["reachable"]) == ("extension", "blocker", True)
    assert not one(doc, "ops.py", 15, "DT305")["guarded"]
    for line in (2, 7):
        f = one(doc, "model.py", line, "DT312")
        assert (f["class"], f["guarded"], f["reachable"]) == ("extension", False, True)


def test_compiled_extension_package_followed(field):
    doc = field("compiled-extension-package")
    assert one(doc, "setup.py", 7, "DT301")["class"] == "extension"
    assert one(doc, "setup.py", 10, "DT302")["class"] == "extension"
    # The import of CUDAExtension is where the build's need for nvcc starts (LABELLING.md).
    assert [f["code"] for f in at(doc, "setup.py", 2)] == ["DT301"]
    for line in (2, 8):
        one(doc, "pointops/functions.py", line, "DT305")
    for line in (2, 7):
        f = one(doc, "models/net.py", line, "DT312")
        assert f["reachable"] is True and not f["guarded"]


def test_config_selected_xformers_module(field):
    doc = field("config-selects-xformers")
    assert not one(doc, "ldm/xformers_block.py", 2, "DT201")["guarded"]
    one(doc, "ldm/xformers_block.py", 7, "DT202")


def test_statement_after_semicolon_and_cr_line_ends(dualtrack_bin, tmp_path):
    (tmp_path / "a.py").write_bytes(b"import torch; x = torch.zeros(1).cuda()\r# a comment\r"
                                    b"y = torch.ones(1).to('cuda')\r")
    _, doc = scan(dualtrack_bin, tmp_path, "--fail-on", "never")
    assert [(f["line"], f["code"]) for f in doc["findings"]] == [(1, "DT101"), (3, "DT102")]
    assert doc["findings"][1]["snippet"] == "y = torch.ones(1).to('cuda')"


def test_names_resolve_in_their_scope(dualtrack_bin, tmp_path):
    (tmp_path / "s.py").write_text(
        "def a():\n"
        "    from torch.cuda import synchronize\n"
        "    synchronize()\n"
        "def b(synchronize):\n"
        "    synchronize()\n"
        "def c():\n"
        "    synchronize()\n")
    _, doc = scan(dualtrack_bin, tmp_path, "--fail-on", "never")
    assert sorted({f["line"] for f in doc["findings"]}) == [2, 3]


def test_launch_mode_guards(dualtrack_bin, tmp_path):
    (tmp_path / "t.py").write_text(
        "import os\n"
        "import torch\n"
        "import torch.distributed as dist\n"
        "local_rank = int(os.environ.get('LOCAL_RANK', -1))\n"
        "if local_rank != -1:\n"
        "    dist.init_process_group(backend='nccl')\n"
        "if int(os.environ.get('WORLD_SIZE', 1)) > 1:\n"
        "    torch.cuda.set_device(local_rank)\n"
        "if local_rank == -1:\n"
        "    pass\n"
        "else:\n"
        "    model = torch.nn.Linear(1, 1).cuda()\n")
    _, doc = scan(dualtrack_bin, tmp_path, "--fail-on", "never")
    assert {f["line"] for f in doc["findings"]} == {6, 8, 12}
    assert all(f["guarded"] for f in doc["findings"]), doc["findings"]


def test_raise_is_a_requirement_not_a_fallback(dualtrack_bin, tmp_path):
    # The raise is no other path: the run stops there without CUDA (DT213, unguarded); what
    # follows runs only with CUDA (guarded), as the labelling rules read an early raise.
    (tmp_path / "r.py").write_text(
        "import torch\n"
        "def f():\n"
        "    if not torch.cuda.is_available():\n"
        "        raise RuntimeError('this needs a GPU')\n"
        "    torch.cuda.synchronize()\n")
    _, doc = scan(dualtrack_bin, tmp_path, "--fail-on", "never")
    assert [(f["line"], f["code"], f["guarded"]) for f in doc["findings"]] == [
        (4, "DT213", False), (5, "DT103", True)]


# ---- Values judged where they are used (issue #35): launch modes derived through assignments,
# settings read only behind checks, early returns, options off by default.

def _lines(doc, file):
    return {(f["line"], f["code"]): f for f in doc["findings"] if f["file"] == file}


def test_launch_mode_flows_into_the_values_it_reads(field):
    doc = field("launch-mode-dataflow")
    train = _lines(doc, "train.py")
    # `backend = 'nccl'` is read only inside `if ddp:`, and ddp holds only when torchrun set RANK.
    assert train[(9, "DT205")]["guarded"]
    for line, code in ((18, "DT102"), (19, "DT104"), (23, "DT113")):
        assert train[(line, code)]["guarded"], (line, code)
    # The device is a setting the configurator overrides: unguarded, fixable, an option default.
    device = train[(10, "DT102")]
    assert not device["guarded"] and device["severity"] == "fixable"
    assert device["option_default"] and device["fix"] == "safe"
    # --dist-backend defaults to nccl but is read only under `if args.distributed:`.
    finetune = _lines(doc, "finetune.py")
    assert finetune[(9, "DT205")]["guarded"] and finetune[(9, "DT205")]["option_default"]
    # Nothing else: the single-process run never reaches NCCL.
    assert not [f for f in doc["findings"] if not f["guarded"] and f["line"] != 10]


def test_distributed_helpers_that_return_early(field):
    doc = field("dist-early-return")
    misc = _lines(doc, "util/misc.py")
    # After `if not is_dist_avail_and_initialized(): return`.
    assert misc[(30, "DT102")]["guarded"] and misc[(30, "DT204")]["guarded"]
    assert misc[(44, "DT115")]["guarded"]  # the SLURM branch
    # After `else: ... return`: only when a launcher set the variables.
    for line, code in ((51, "DT104"), (52, "DT205")):
        assert misc[(line, code)]["guarded"], (line, code)
    main = _lines(doc, "main.py")
    option = main[(11, "DT102")]
    assert not option["guarded"] and option["severity"] == "fixable" and option["option_default"]


def test_an_option_off_by_default_gates_a_cuda_only_module(field):
    doc = field("option-gated-module", "--entry", "main.py")
    tcnn = [f for f in doc["findings"] if f["file"] == "net_tcnn.py"]
    assert {(f["line"], f["class"]) for f in tcnn} == {(1, "library"), (8, "library"),
                                                       (9, "library")}
    assert all(f["guarded"] for f in tcnn), tcnn
    choice = _lines(doc, "main.py")[(15, "DT102")]
    assert choice["guarded"]


def test_mechanical_edits_only(field):
    doc = field("mechanical-only")
    train = _lines(doc, "train.py")
    assert train[(26, "DT106")]["severity"] == "portable"
    # torch.cuda.amp disables itself without CUDA: the step runs, in full precision.
    assert train[(29, "DT115")]["severity"] == "portable"
    assert train[(33, "DT115")]["severity"] == "portable"
    for line in (27, 31, 32, 39, 40):
        found = [f for (l, _), f in train.items() if l == line]
        assert len(found) == 1, line
        f = found[0]
        assert f["class"] == "device" and not f["guarded"], f
        assert f["severity"] == "fixable" and f["fix"] == "safe", f


def test_feature_probes_inside_expressions(field):
    doc = field("feature-probe-expression")
    assert all(f["guarded"] for f in doc["findings"]), doc["findings"]
    assert {f["line"] for f in doc["findings"]} <= {9, 10, 11, 12, 13}


def test_notebook_locations_name_cells_and_file_lines(field, dualtrack_bin):
    """../shared/field/notebook-entry: cell 3 line 2 and cell 4 line 1; SARIF and GitHub, which
    know file lines only, point at the lines of demo.ipynb that hold the code."""
    doc = field("notebook-entry", "--entry", "demo.ipynb")
    nb = FIELD / "notebook-entry" / "demo.ipynb"
    lines = nb.read_text().splitlines()
    found = sorted((f["cell"], f["line"], f["code"], f["guarded"], f["severity"], f["reachable"])
                   for f in doc["findings"])
    assert found == [(3, 2, "DT101", False, "fixable", True), (4, 1, "DT101", False, "fixable", True)]
    grep = [i + 1 for i, text in enumerate(lines) if "cuda()" in text]
    assert sorted(f["file_line"] for f in doc["findings"]) == grep
    r = subprocess.run([str(dualtrack_bin), "scan", str(FIELD / "notebook-entry"), "--format", "sarif",
                        "--fail-on", "never"], capture_output=True, text=True, timeout=60)
    sarif = json.loads(r.stdout)
    starts = sorted(res["locations"][0]["physicalLocation"]["region"]["startLine"]
                    for res in sarif["runs"][0]["results"])
    assert starts == grep
    r = subprocess.run([str(dualtrack_bin), "scan", str(FIELD / "notebook-entry"), "--format", "github",
                        "--fail-on", "never"], capture_output=True, text=True, timeout=60)
    assert sorted(int(l.split(",line=")[1].split(",")[0]) for l in r.stdout.splitlines()
                  if l.startswith("::warning")) == grep
    r = subprocess.run([str(dualtrack_bin), "scan", str(FIELD / "notebook-entry"), "--fail-on", "never"],
                       capture_output=True, text=True, timeout=60)
    assert "demo.ipynb:cell 3:2:" in r.stdout and "demo.ipynb:cell 4:1:" in r.stdout


def test_jit_extension_package_fallback_is_cuda_too(field):
    """../shared/field/jit-extension-package: the optional import's fallback is the same kernels
    (a JIT build in backend.py), so the try/except is no guard; the package re-exports the
    encoder, and the network that imports it by the package's name depends on the extension."""
    doc = field("jit-extension-package", "--entry", "train.py")
    build = one(doc, "fastgrid/backend.py", 12, "DT301")  # the load() statement, lines 12-19
    assert not build["guarded"] and build["class"] == "extension"
    for line in (6, 15, 23):                          # the import and both calls
        f = one(doc, "fastgrid/grid.py", line, "DT305")
        assert not f["guarded"] and f["severity"] != "portable", f
    assert not one(doc, "fastgrid/grid.py", 8, "DT312")["guarded"]
    for line in (3, 9):                               # through the package's re-export
        f = one(doc, "network.py", line, "DT312")
        assert not f["guarded"] and f["reachable"] and f["class"] == "extension"
    assert {f["line"] for f in doc["findings"] if f["file"] == "fastgrid/src/grid.cu"} >= {5}
    assert one(doc, "fastgrid/src/bindings.cpp", 3, "DT307")["class"] == "extension"
    assert one(doc, "train.py", 11, "DT102")["guarded"]


def test_subproject_extension_is_followed_by_package_name(field):
    """../shared/field/subproject-extension: ops_lib/ is a sub-project with its own setup.py; the
    research code imports its package as `fastops`. Its ImportError fallback is a JIT build of the
    same CUDA sources (with_cuda=True): no guard."""
    doc = field("subproject-extension", "--entry", "train.py")
    for line, code in ((13, "DT302"), (19, "DT301")):
        assert one(doc, "ops_lib/setup.py", line, code)["class"] == "extension"
    assert one(doc, "requirements.txt", 3, "DT322")["class"] == "extension"
    assert not one(doc, "ops_lib/fastops/ops.py", 8, "DT305")["guarded"]
    assert not one(doc, "ops_lib/fastops/ops.py", 13, "DT301")["guarded"]   # the fallback build
    for line in (25, 36):
        assert not one(doc, "ops_lib/fastops/ops.py", line, "DT305")["guarded"]
    # `fastops` is a Python package around the compiled fastops._ext, not a compiled module.
    assert not at(doc, "ops_lib/fastops/__init__.py", 1) or \
        all(f["code"] != "DT305" for f in at(doc, "ops_lib/fastops/__init__.py", 1))
    for line in (3, 13, 15):
        f = one(doc, "models/pointnet2_ssg.py", line, "DT312")
        assert not f["guarded"] and f["reachable"], f
    assert one(doc, "ops_lib/fastops/_ext-src/src/sampling.cpp", 9, "DT320")
    assert one(doc, "ops_lib/fastops/_ext-src/src/sampling_gpu.cu", 4, "DT303")
    for line in (7, 10):
        assert one(doc, "train.py", line, "DT101")["severity"] == "fixable"
