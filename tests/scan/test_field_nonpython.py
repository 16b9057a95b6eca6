"""Field cases (copied from real-repository patterns into fixtures/field/) for everything that is
not Python source: C++ wrappers, container files, YAML configs, submodules, local packages,
project metadata and suppressions. Each asserts exact file:line:code with class and guard."""

import json
import shutil
from pathlib import Path

import pytest

FIELD = Path(__file__).resolve().parent / "fixtures" / "field"


def scan(dualtrack, path, *args):
    r = dualtrack("scan", path, "--format", "json", "--fail-on", "never", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def locs(doc, file=None):
    return {(f["file"], f["line"], f["code"]) for f in doc["findings"] if file in (None, f["file"])}


def finding(doc, file, line, code):
    got = [f for f in doc["findings"] if (f["file"], f["line"], f["code"]) == (file, line, code)]
    assert got, f"no {code} at {file}:{line}; have {sorted(locs(doc))}"
    return got[0]


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_cpp_line_numbers_after_raw_string(dualtrack):
    doc = scan(dualtrack, FIELD / "cpp-raw-string-lines")
    assert locs(doc, "m.cpp") == {("m.cpp", 10, "DT304")}
    assert finding(doc, "m.cpp", 10, "DT304")["snippet"] == "if (c) cudaDeviceSynchronize();"


def test_cpp_cr_only_line_ends(dualtrack, tmp_path):
    (tmp_path / "k.cpp").write_bytes(b"// one\r// two\rauto s = R\"(\r\r)\";\rvoid f() { cudaFree(0); }\r")
    doc = scan(dualtrack, tmp_path)
    assert locs(doc) == {("k.cpp", 6, "DT304")}
    assert finding(doc, "k.cpp", 6, "DT304")["snippet"] == "void f() { cudaFree(0); }"


@pytest.mark.parametrize("case,file,line", [
    ("jit-extension", "fps.cpp", 9),
    ("compiled-extension-package", "pointops/_ext-src/ball_query.cpp", 7),
])
def test_wrapper_without_cpu_path(dualtrack, case, file, line):
    doc = scan(dualtrack, FIELD / case)
    f = finding(doc, file, line, "DT320")
    assert (f["class"], f["severity"], f["guarded"]) == ("extension", "blocker", False)
    # The is_cuda() of the branch is a dispatch, not a second finding.
    assert not any(c == "DT307" for (_, _, c) in locs(doc, file))


def test_wrapper_with_cpu_path_is_not_a_finding(dualtrack, tmp_path):
    write(tmp_path / "ops.cpp",
          "#include <torch/extension.h>\n"
          "#define CHECK_CUDA(x) TORCH_CHECK(x.is_cuda(), #x \" must be a CUDA tensor\")\n"
          "at::Tensor knn(at::Tensor p) {\n"
          "  if (p.is_cuda()) {\n    CHECK_CUDA(p);\n    return knn_cuda(p);\n  }\n"
          "  return knn_cpu(p);\n}\n"
          "at::Tensor only_gpu(at::Tensor p) {\n  CHECK_CUDA(p);\n  return knn_cuda(p);\n}\n")
    doc = scan(dualtrack, tmp_path)
    assert {(l, c) for (_, l, c) in locs(doc, "ops.cpp")} == {(2, "DT307"), (11, "DT320")}


def test_wrapper_check_macro_from_project_header(dualtrack, tmp_path):
    # The classic point-cloud ops layout: the check macros live in a shared header.
    write(tmp_path / "src" / "utils.h",
          "#pragma once\n#define CHECK_IS_CUDA_T(x) AT_CHECK(x.type().is_cuda(), #x \" must be a CUDA tensor\")\n"
          "#define CHECK_INPUT(x) CHECK_IS_CUDA_T(x); CHECK_CONTIGUOUS(x)\n")
    write(tmp_path / "src" / "group_points.cpp",
          "#include <torch/extension.h>\n#include \"utils.h\"\n"
          "at::Tensor group_points(at::Tensor points, at::Tensor idx) {\n"
          "  CHECK_INPUT(points);\n  return group_points_kernel_wrapper(points, idx);\n}\n")
    doc = scan(dualtrack, tmp_path)
    assert ("src/group_points.cpp", 4, "DT320") in locs(doc)


def test_local_extension_package_in_requirements(dualtrack):
    doc = scan(dualtrack, FIELD / "compiled-extension-package")
    f = finding(doc, "requirements.txt", 2, "DT322")
    assert (f["class"], f["guarded"]) == ("extension", False)
    assert {l for (_, l, _) in locs(doc, "requirements.txt")} == {2}


def test_compose_gpu_and_cuda_wheel_index(dualtrack):
    doc = scan(dualtrack, FIELD / "compose-gpu")
    # EXPECT.md says :10 and :12; the file has `driver: nvidia` on line 9 and
    # `capabilities: [gpu]` on line 11 (its line 4 `command:` matches), so the real lines count.
    for line in (9, 11):
        f = finding(doc, "docker-compose.yml", line, "DT420")
        assert (f["class"], f["guarded"]) == ("environment", False)
    assert finding(doc, "docker-compose.yml", 4, "DT221")["class"] == "library"
    assert finding(doc, "Dockerfile", 2, "DT401")["class"] == "environment"
    assert locs(doc, "Dockerfile") == {("Dockerfile", 2, "DT401")}


def test_compose_written_differently(dualtrack, tmp_path):
    write(tmp_path / "compose.yaml",
          "services:\n"
          "  llm:\n"
          "    runtime: nvidia\n"
          "    environment:\n"
          "      NVIDIA_VISIBLE_DEVICES: all\n"
          "      CUDA_VISIBLE_DEVICES: '0'\n"
          "    entrypoint: [\"python\", \"-m\", \"serve\", \"--load-in-4bit\"]\n"
          "    gpus: all\n")
    write(tmp_path / "docker" / "Dockerfile.gpu",
          "FROM ubuntu:22.04\nRUN pip3 install torch torchvision \\\n"
          "    --extra-index-url https://download.pytorch.org/whl/cu121\n")
    doc = scan(dualtrack, tmp_path)
    assert locs(doc, "compose.yaml") == {("compose.yaml", 3, "DT420"), ("compose.yaml", 5, "DT420"),
                                         ("compose.yaml", 6, "DT406"), ("compose.yaml", 7, "DT221"),
                                         ("compose.yaml", 8, "DT420")}
    assert locs(doc, "docker/Dockerfile.gpu") == {("docker/Dockerfile.gpu", 3, "DT401")}


def test_config_selects_xformers(dualtrack):
    doc = scan(dualtrack, FIELD / "config-selects-xformers")
    f = finding(doc, "configs/model.yaml", 5, "DT220")
    assert (f["class"], f["guarded"]) == ("library", False)
    assert locs(doc, "configs/model.yaml") == {("configs/model.yaml", 5, "DT220")}


def test_lightning_gpus_in_config(dualtrack):
    doc = scan(dualtrack, FIELD / "lightning-gpus")
    f = finding(doc, "config/config.yaml", 3, "DT120")
    assert (f["class"], f["severity"], f["guarded"]) == ("device", "fixable", False)
    assert locs(doc, "config/config.yaml") == {("config/config.yaml", 3, "DT120")}


def test_yaml_configs_written_differently(dualtrack, tmp_path):
    write(tmp_path / "conf" / "trainer" / "gpu.yaml",
          "# gpus: [0, 1]  in a comment\n"
          "trainer:\n  accelerator: gpu\n  devices: 1\n  precision: 16-mixed\n"
          "model:\n  use_flash_attn: true\n  attention: sdpa\n"
          "help: run with xformers if you have it\n")
    write(tmp_path / ".github" / "workflows" / "ci.yml", "jobs:\n  t:\n    gpus: [0]\n")
    write(tmp_path / ".pre-commit-config.yaml", "repos:\n- repo: xformers\n")
    doc = scan(dualtrack, tmp_path)
    assert locs(doc) == {("conf/trainer/gpu.yaml", 3, "DT120"), ("conf/trainer/gpu.yaml", 7, "DT220")}


def test_submodules_are_extensions(dualtrack, tmp_path):
    # git keeps no empty folder: copy the case and leave the submodule folders absent or empty.
    root = tmp_path / "case"
    shutil.copytree(FIELD / "submodule-extension", root)
    (root / "submodules" / "fast-knn").mkdir(parents=True)
    doc = scan(dualtrack, root)
    for line, name in ((1, "submodules/diff-raster"), (4, "submodules/fast-knn")):
        f = finding(doc, ".gitmodules", line, "DT321")
        assert (f["class"], f["guarded"]) == ("extension", False)
        assert name in f["message"] and "empty" in f["message"]
    for line in (9, 10):
        assert finding(doc, "environment.yml", line, "DT322")["class"] == "extension"
    assert {l for (_, l, c) in locs(doc, ".gitmodules")} == {1, 4}


def test_submodule_checked_out_with_cuda_sources(dualtrack, tmp_path):
    write(tmp_path / ".gitmodules",
          "[submodule \"third_party/simple-knn\"]\n  path = third_party/simple-knn\n  url = u\n"
          "[submodule \"third_party/docs\"]\n  path = third_party/docs\n  url = v\n")
    write(tmp_path / "third_party" / "simple-knn" / "simple_knn.cu", "__global__ void k() {}\n")
    write(tmp_path / "third_party" / "docs" / "index.md", "# docs\n")
    write(tmp_path / "requirements.txt", "-e third_party/simple-knn\n")
    doc = scan(dualtrack, tmp_path)
    assert "has .cu sources" in finding(doc, ".gitmodules", 1, "DT321")["message"]
    assert not any(l == 4 for (_, l, _) in locs(doc, ".gitmodules"))
    finding(doc, "requirements.txt", 1, "DT322")


def test_pyproject_metadata_is_prose(dualtrack, tmp_path):
    doc = scan(dualtrack, FIELD / "pyproject-metadata")
    assert locs(doc, "pyproject.toml") == set()
    write(tmp_path / "setup.cfg",
          "[metadata]\nname = fast-cuda\nkeywords = cuda, nvidia-cuda, triton\n"
          "description = xformers and flash-attn kernels\n[options]\ninstall_requires =\n    flash-attn\n")
    doc = scan(dualtrack, tmp_path)
    assert locs(doc, "setup.cfg") == {("setup.cfg", 7, "DT403")}


def test_suppression_forms(dualtrack):
    doc = scan(dualtrack, FIELD / "suppression-forms")
    assert locs(doc, "a.py") == set()
    assert locs(doc, "requirements.txt") == {("requirements.txt", 3, "DT403")}
    assert locs(doc, "environment.yml") == set()
    assert locs(doc, "k.cu") == {("k.cu", 2, "DT303")}
    assert locs(doc, "Dockerfile") == {("Dockerfile", 3, "DT404")}
    # The marker alone on Dockerfile:2 suppresses nothing: reported, not a finding.
    assert doc["suppressions"] == [
        {"file": "Dockerfile", "line": 2, "code": None, "problem": "unused"}]


def test_unknown_and_unused_suppressions(dualtrack, tmp_path):
    write(tmp_path / "requirements.txt",
          "xformers  # noqa: DT403\nnumpy  # dualtrack: ignore[DT403]\n"
          "cupy  # dualtrack: ignore[DT999, dt403]\nscipy  # noqa\n")
    write(tmp_path / "k.cu", "/* dualtrack:ignore[DT303] */ __global__ void k() {}\nint x;  // noqa: DT304\n")
    r = dualtrack("scan", tmp_path, "--fail-on", "never")
    # The root is outside the current directory: the warnings name the files by absolute path.
    assert f"warning: {tmp_path}/requirements.txt:2: suppression DT403: unused" in r.stdout
    assert f"warning: {tmp_path}/requirements.txt:3: suppression DT999: unknown code" in r.stdout
    doc = scan(dualtrack, tmp_path)
    assert doc["findings"] == []
    assert [(s["file"], s["line"], s["code"], s["problem"]) for s in doc["suppressions"]] == [
        ("k.cu", 2, "DT304", "unused"),
        ("requirements.txt", 2, "DT403", "unused"),
        ("requirements.txt", 3, "DT999", "unknown code"),
    ]


def test_malformed_non_python_files_do_not_crash(dualtrack, tmp_path):
    write(tmp_path / "configs" / "bad.yaml", "a: [\n  - : :\n\tgpus: [0\n" + "x" * 200000 + "\n")
    write(tmp_path / "docker-compose.yml", "services: {\n  - driver: nvidia\n")
    write(tmp_path / ".gitmodules", "[submodule \"x\n path\n[\n")
    write(tmp_path / "k.cpp", "auto s = R\"zz(never closed\n" + "{" * 10000)
    (tmp_path / "requirements.txt").write_bytes(b"torch\r\xff\xfe./x\rflash-attn\r")
    r = dualtrack("scan", tmp_path, "--format", "json", "--fail-on", "never")
    assert r.returncode == 0, r.stderr
    json.loads(r.stdout)
