"""Compiled extensions followed through a project, in the forms real repositories use.

Each test builds a small source tree the way a repository lays it out (a vendored package in a
submodule folder, a setup.py that picks the extension class at build time, an op library
registered from C++) and checks what the scan reports where the project uses the extension.
"""

import json

import pytest


def scan(dualtrack, root, *extra):
    out = dualtrack("scan", root, "--format", "json", "--fail-on", "never", *extra)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["findings"]


def at(findings, file):
    return sorted((f["line"], f["code"]) for f in findings if f["file"] == file)


def verdict(dualtrack, root, entry):
    out = dualtrack("audit", root, "--entry", entry, "--format", "json")
    report = json.loads(out.stdout)
    return (report["experiments"][0]["report"] if "experiments" in report else report)["verdict"]


def test_relative_import_of_a_vendored_extension(dualtrack, tmp_path):
    # submodules/raster/ is not a package (no __init__.py): Python sees `raster_pkg` once it is
    # installed, so `from . import _C` inside it is raster_pkg._C, the module setup.py builds.
    sub = tmp_path / "submodules" / "raster"
    (sub / "raster_pkg").mkdir(parents=True)
    (sub / "setup.py").write_text(
        "from setuptools import setup\n"
        "from torch.utils.cpp_extension import CUDAExtension, BuildExtension\n"
        "setup(name='raster_pkg', ext_modules=[CUDAExtension(name='raster_pkg._C',\n"
        "      sources=['rasterize.cu', 'ext.cpp'])], cmdclass={'build_ext': BuildExtension})\n")
    (sub / "raster_pkg" / "__init__.py").write_text(
        "from . import _C\n\n\ndef rasterize(x):\n    return _C.rasterize(x)\n")
    (tmp_path / "render.py").write_text("from raster_pkg import rasterize\n\nrasterize(1)\n")
    findings = scan(dualtrack, tmp_path)
    assert at(findings, "submodules/raster/raster_pkg/__init__.py") == [(1, "DT305"), (5, "DT305")]
    assert (1, "DT312") in at(findings, "render.py")


def make_extension_project(root, setup_py, module, op):
    """setup.py building pkg.<module>; pkg/ops.py calls <module>.<op>; train.py calls pkg/ops.py."""
    (root / "pkg").mkdir()
    (root / "setup.py").write_text(setup_py)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "ops.py").write_text(
        f"from pkg import {module}\n\n\ndef run(x):\n    return {module}.{op}(x)\n")
    (root / "train.py").write_text("from pkg.ops import run\n\nrun(1)\n")


def test_extension_class_chosen_at_build_time_has_a_cpu_build(dualtrack, tmp_path):
    # detectron2's setup.py: CppExtension unless CUDA is found (or FORCE_CUDA=1). The module
    # exists on a Mac (CPU kernels only): its uses are reported, with the CPU build named, but
    # the code around them is not made CUDA-only (no DT312 for the callers).
    make_extension_project(
        tmp_path,
        "import os\nimport torch\n"
        "from torch.utils.cpp_extension import CUDA_HOME, CppExtension, CUDAExtension\n"
        "def get_extensions():\n"
        "    extension = CppExtension\n"
        "    if torch.cuda.is_available() or os.getenv('FORCE_CUDA', '0') == '1':\n"
        "        extension = CUDAExtension\n"
        "    return [extension('pkg._C', ['pkg/csrc/vision.cpp'])]\n",
        "_C", "deform_conv_forward")
    findings = scan(dualtrack, tmp_path)
    ops = [f for f in findings if f["file"] == "pkg/ops.py"]
    assert [(f["line"], f["code"]) for f in ops] == [(1, "DT305"), (5, "DT305")]
    assert all("CPU only" in f["message"] for f in ops)
    # The Mac gets the CPU build: its ops run on the CPU there, only MPS tensors fail.
    assert all(f["mps_only"] for f in ops)
    assert at(findings, "train.py") == []
    # The CUDA build's own lines sit under the CUDA check or the FORCE_CUDA switch.
    setup = {f["line"]: f for f in findings if f["file"] == "setup.py"}
    assert setup[7]["code"] == "DT301" and setup[7]["guarded"]


def test_a_build_that_refuses_the_cpu_has_no_cpu_build(dualtrack, tmp_path):
    # Deformable-DETR's setup.py: CppExtension by default, but without CUDA the script raises
    # before it builds anything. No CPU build exists: the callers need CUDA.
    make_extension_project(
        tmp_path,
        "import torch\n"
        "from torch.utils.cpp_extension import CppExtension, CUDAExtension\n"
        "def get_extensions():\n"
        "    extension = CppExtension\n"
        "    if torch.cuda.is_available():\n"
        "        extension = CUDAExtension\n"
        "    else:\n"
        "        raise NotImplementedError('Cuda is not available')\n"
        "    return [extension('pkg._C', ['pkg/csrc/vision.cpp'])]\n",
        "_C", "deform_attn_forward")
    findings = scan(dualtrack, tmp_path)
    ops = [f for f in findings if f["file"] == "pkg/ops.py"]
    assert [(f["line"], f["code"]) for f in ops] == [(1, "DT305"), (5, "DT305")]
    assert not any(f["mps_only"] or "CPU only" in f["message"] for f in ops)
    assert (1, "DT312") in at(findings, "train.py")


def test_cuda_only_extension_class_in_a_variable_makes_callers_cuda_only(dualtrack, tmp_path):
    make_extension_project(
        tmp_path,
        "from torch.utils.cpp_extension import CUDAExtension\n"
        "ext = CUDAExtension\n"
        "modules = [ext('pkg._fused', ['pkg/fused.cu'])]\n",
        "_fused", "run")
    findings = scan(dualtrack, tmp_path)
    assert at(findings, "pkg/ops.py") == [(1, "DT305"), (5, "DT305")]
    assert not any(f["mps_only"] for f in findings if f["file"] == "pkg/ops.py")
    assert (1, "DT312") in at(findings, "train.py")


@pytest.mark.parametrize("threads", ["1", "3"])
def test_extension_followed_through_a_chain_of_wrappers(dualtrack, tmp_path, threads):
    # Each wrapper is known to depend on the extension only once the file it imports from has
    # been read again, one round per level (a relative import at level 3). train.py imports from
    # levels 2 and 4, so what it counts grows twice: its findings name both. unrelated.py imports
    # another name of a changed module: read again, it still has nothing.
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "setup.py").write_text(
        "from setuptools import setup\n"
        "from torch.utils.cpp_extension import CUDAExtension\n"
        "setup(name='pkg', ext_modules=[CUDAExtension(name='pkg._C', sources=['pkg/k.cu'])])\n")
    (tmp_path / "pkg" / "k.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sub" / "__init__.py").write_text("")
    levels = {"pkg/a.py": "from pkg import _C", "pkg/b.py": "from pkg.a import level1",
              "pkg/sub/c.py": "from ..b import level2", "pkg/d.py": "from pkg.sub.c import level3"}
    for n, (file, imp) in enumerate(levels.items(), start=1):
        callee = imp.split()[-1] if n > 1 else "_C.op"
        (tmp_path / file).write_text(f"{imp}\n\n\ndef level{n}(x):\n    return {callee}(x)\n")
    (tmp_path / "train.py").write_text(
        "from pkg.b import level2\nfrom pkg.d import level4\nimport os\n\nlevel2(1)\nlevel4(2)\n")
    (tmp_path / "unrelated.py").write_text("from pkg.b import other\nimport os\n\nother(1)\n")
    findings = scan(dualtrack, tmp_path, "--threads", threads)
    assert at(findings, "pkg/a.py") == [(1, "DT305"), (5, "DT305")]
    for file in ("pkg/b.py", "pkg/sub/c.py", "pkg/d.py"):
        assert at(findings, file) == [(1, "DT312"), (5, "DT312")], file
    train = {(f["line"], f["code"]): f["message"] for f in findings if f["file"] == "train.py"}
    assert sorted(train) == [(1, "DT312"), (2, "DT312"), (5, "DT312"), (6, "DT312")]
    assert "pkg.b.level2" in train[(5, "DT312")] and "pkg.d.level4" in train[(6, "DT312")]
    assert at(findings, "unrelated.py") == []


def test_wrappers_reached_through_a_module_attribute(dualtrack, tmp_path):
    # The wrappers' modules are imported, not their functions: `from pkg import ops` then
    # `ops.run()`, `import pkg.ops as o`, `import pkg.ops` then `pkg.ops.run()`. A function that
    # calls one is a wrapper too, and its importers are reported.
    make_extension_project(
        tmp_path,
        "from torch.utils.cpp_extension import CUDAExtension\n"
        "modules = [CUDAExtension('pkg._fused', ['pkg/fused.cu'])]\n",
        "_fused", "run")
    (tmp_path / "pkg" / "sub").mkdir()
    (tmp_path / "pkg" / "sub" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sub" / "more.py").write_text(
        "from pkg import ops\n\n\ndef deeper(x):\n    return ops.run(x)\n")
    (tmp_path / "model.py").write_text(
        "from pkg import ops\nimport pkg.ops as o\nimport pkg.ops\nfrom pkg.sub import more\n"
        "import os\n\nops.run(1)\no.run(2)\npkg.ops.run(3)\nmore.deeper(4)\nos.getcwd()\n\n\n"
        "def forward(x):\n    return o.run(x)\n")
    (tmp_path / "train.py").write_text("from model import forward\n\nforward(1)\n")
    (tmp_path / "other.py").write_text("from pkg import ops\n\nprint(ops.__name__)\n")
    findings = scan(dualtrack, tmp_path)
    model = {(f["line"], f["code"]): f["message"] for f in findings if f["file"] == "model.py"}
    assert sorted(model) == [(7, "DT312"), (8, "DT312"), (9, "DT312"), (10, "DT312"),
                             (15, "DT312")]
    assert "pkg.ops.run" in model[(8, "DT312")] and "pkg.sub.more.deeper" in model[(10, "DT312")]
    assert at(findings, "pkg/sub/more.py") == [(5, "DT312")]
    assert at(findings, "train.py") == [(1, "DT312"), (3, "DT312")]
    assert at(findings, "other.py") == []


@pytest.mark.parametrize("with_cu", [True, False])
def test_torch_ops_namespace_registered_by_the_project(dualtrack, tmp_path, with_cu):
    # TORCH_LIBRARY(ns, m) in the project's C++ makes torch.ops.ns.* its extension's ops, with no
    # import to follow; only a project that compiles CUDA sources is reported.
    csrc = tmp_path / "pkg" / "csrc"
    csrc.mkdir(parents=True)
    (csrc / "vision.cpp").write_text(
        "#include <torch/library.h>\nnamespace pkg {\n"
        "TORCH_LIBRARY(pkg, m) {\n  m.def(\"nms_rotated\", &nms_rotated);\n}\n}\n")
    if with_cu:
        (csrc / "nms_rotated_cuda.cu").write_text(
            "#include \"nms.h\"\n\nat::Tensor nms_rotated_cuda(const at::Tensor& b) { return b; }\n")
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "nms.py").write_text(
        "import torch\n\n\ndef nms_rotated(boxes):\n    return torch.ops.pkg.nms_rotated(boxes)\n")
    findings = scan(dualtrack, tmp_path)
    assert at(findings, "pkg/nms.py") == ([(5, "DT305")] if with_cu else [])
    if with_cu:
        # A .cu file that names no CUDA API (a host wrapper) is still CUDA source.
        assert at(findings, "pkg/csrc/nms_rotated_cuda.cu") == [(1, "DT303")]


def test_launched_commands_and_runtime_installs(dualtrack, tmp_path):
    (tmp_path / "run_all.py").write_text(
        "import os\n"
        "def train(gpu, scene):\n"
        "    cmd = f\"OMP_NUM_THREADS=4 CUDA_VISIBLE_DEVICES={gpu} python train.py -s {scene}\"\n"
        "    print(cmd)\n"
        "    os.system(cmd)\n")
    (tmp_path / "backend.py").write_text(
        "import torch\n"
        "cuda = torch.cuda.is_available()\n"
        "def load(check_requirements):\n"
        "    check_requirements(('onnx', 'onnxruntime-gpu' if cuda else 'onnxruntime'))\n"
        "    providers = ['CUDAExecutionProvider', 'CPUExecutionProvider'] if cuda else ['CPUExecutionProvider']\n"
        "    check_requirements('onnxruntime')\n"
        "    return providers\n")
    findings = scan(dualtrack, tmp_path)
    assert at(findings, "run_all.py") == [(3, "DT406")]
    backend = {(f["line"], f["code"]): f for f in findings if f["file"] == "backend.py"}
    assert set(backend) == {(4, "DT403"), (5, "DT102")}
    assert all(f["guarded"] for f in backend.values())


def test_kernel_module_imported_only_behind_a_fallback_is_guarded(dualtrack, tmp_path):
    # Swin's fused window kernel: kernels/wp.py imports the compiled module at its top, the model
    # imports kernels/wp.py in a try with a None fallback and calls it only when a switch that is
    # off by default (handed down through the layers) is on. The kernel's own unit test imports the
    # module unguarded: a test of the CUDA path, not a run of the project.
    (tmp_path / "kernels").mkdir()
    (tmp_path / "models").mkdir()
    (tmp_path / "kernels" / "setup.py").write_text(
        "from setuptools import setup\n"
        "from torch.utils.cpp_extension import BuildExtension, CUDAExtension\n"
        "setup(name='wp_ext', ext_modules=[CUDAExtension('wp_ext', ['wp.cpp', 'wp_kernel.cu'])],\n"
        "      cmdclass={'build_ext': BuildExtension})\n")
    (tmp_path / "kernels" / "wp_kernel.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "kernels" / "wp.py").write_text(
        "import torch\nimport wp_ext\n\n\nclass WP(torch.autograd.Function):\n"
        "    @staticmethod\n    def forward(ctx, x):\n        return wp_ext.fwd(x)\n")
    (tmp_path / "kernels" / "unit_test.py").write_text(
        "import wp_ext\n\n\ndef test_fwd():\n    assert wp_ext.fwd(1)\n")
    (tmp_path / "models" / "model.py").write_text(
        "try:\n    from kernels.wp import WP\nexcept:\n    WP = None\n\n\n"
        "class Block:\n    def __init__(self, fused=False):\n        self.fused = fused\n\n"
        "    def __call__(self, x):\n        if not self.fused:\n            return x\n"
        "        return WP.apply(x)\n\n\n"
        "class Model:\n    def __init__(self, fused=False):\n        self.block = Block(fused=fused)\n")
    findings = scan(dualtrack, tmp_path)
    by_file = {}
    for f in findings:
        by_file.setdefault(f["file"], []).append(f["guarded"])
    for file in ("kernels/setup.py", "kernels/wp.py", "kernels/wp_kernel.cu", "models/model.py"):
        assert by_file.get(file) and all(by_file[file]), (file, by_file.get(file))
    # The test itself is reported as it is: it needs the CUDA build.
    assert by_file["kernels/unit_test.py"] and not any(by_file["kernels/unit_test.py"])


def test_cffi_extension_beside_its_build_script(dualtrack, tmp_path):
    # PyTorch 0.x's cffi build (CenterNet's DCNv2): `create_extension('_ext.dcn', ...,
    # with_cuda=with_cuda, relative_to=__file__)` makes nets/DCN/_ext/dcn beside build.py. Its
    # autograd Function stops on non-CUDA tensors (`if not x.is_cuda: raise`), which is no path
    # beside the kernel: the Function reaches CUDA, and so does the model that builds it. The
    # detection project's `_init_paths.py` puts lib/ on sys.path through a helper, so the entry
    # script reaches the model.
    pkg = tmp_path / "src" / "lib" / "nets" / "DCN"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "build.py").write_text(
        "import torch\nfrom torch.utils.ffi import create_extension\n"
        "with_cuda = False\nif torch.cuda.is_available():\n    with_cuda = True\n"
        "ffi = create_extension('_ext.dcn', headers=[], sources=['src/dcn.c'],\n"
        "                       relative_to=__file__, with_cuda=with_cuda)\n")
    (pkg / "func.py").write_text(
        "from torch.autograd import Function\nfrom ._ext import dcn as _backend\n\n\n"
        "class DCNFunction(Function):\n"
        "    def forward(self, x):\n"
        "        if not x.is_cuda:\n"
        "            raise NotImplementedError\n"
        "        return _backend.dcn_cuda_forward(x)\n")
    (tmp_path / "src" / "lib" / "nets" / "model.py").write_text(
        "from .DCN.func import DCNFunction\n\n\ndef create_model():\n    return DCNFunction()\n")
    (tmp_path / "src" / "_init_paths.py").write_text(
        "import os.path as osp\nimport sys\n\n\ndef add_path(path):\n"
        "    if path not in sys.path:\n        sys.path.insert(0, path)\n\n\n"
        "this_dir = osp.dirname(__file__)\nadd_path(osp.join(this_dir, 'lib'))\n")
    (tmp_path / "src" / "main.py").write_text(
        "import _init_paths\nfrom nets.model import create_model\n\nmodel = create_model()\n")
    findings = scan(dualtrack, tmp_path, "--entry", "src/main.py")
    assert (2, "DT301") in at(findings, "src/lib/nets/DCN/build.py")
    assert at(findings, "src/lib/nets/DCN/func.py") == [(2, "DT305"), (8, "DT213"), (9, "DT305")]
    model = [f for f in findings if f["file"] == "src/lib/nets/model.py"]
    assert [(f["line"], f["code"]) for f in model] == [(1, "DT312"), (5, "DT312")]
    assert all(f["reachable"] and not f["guarded"] for f in model)
    # A reference path beside the kernel keeps the Function off the CUDA-only list.
    (pkg / "func.py").write_text(
        (pkg / "func.py").read_text().replace(
            "            raise NotImplementedError\n", "            return x * 2\n"))
    findings = scan(dualtrack, tmp_path, "--entry", "src/main.py")
    assert at(findings, "src/lib/nets/model.py") == []


@pytest.mark.parametrize("spelling", [
    "'%s.%s' % (module, name)",
    "'{}.{}'.format(module, name)",
    "f'{module}.{name}'",
    "module + '.' + name",
])
def test_extensions_named_by_a_build_helper(dualtrack, tmp_path, spelling):
    # OpenPCDet's and mmdetection's setup.py: make_cuda_ext(name, module, sources) returns a
    # CUDAExtension whose name it makes from its parameters; each call declares one module.
    (tmp_path / "setup.py").write_text(
        "import os\n"
        "from setuptools import setup\n"
        "from torch.utils.cpp_extension import BuildExtension, CUDAExtension\n\n\n"
        "def make_cuda_ext(name, module, sources):\n"
        "    return CUDAExtension(\n"
        f"        name={spelling},\n"
        "        sources=[os.path.join(*module.split('.'), s) for s in sources])\n\n\n"
        "if __name__ == '__main__':\n"
        "    setup(name='det', cmdclass={'build_ext': BuildExtension}, ext_modules=[\n"
        "        make_cuda_ext(\n"
        "            name='nms_cuda',\n"
        "            module='det.ops.nms',\n"
        "            sources=['src/nms.cpp', 'src/nms_kernel.cu']),\n"
        "        make_cuda_ext('pool_cuda', 'det.ops.pool',"
        " ['src/pool.cpp', 'src/pool_kernel.cu']),\n"
        "    ])\n")
    for op in ("nms", "pool"):
        d = tmp_path / "det" / "ops" / op
        d.mkdir(parents=True)
        (d / "__init__.py").write_text("")
    (tmp_path / "det" / "__init__.py").write_text("")
    (tmp_path / "det" / "ops" / "__init__.py").write_text("")
    (tmp_path / "det" / "ops" / "nms" / "nms_utils.py").write_text(
        "from . import nms_cuda\n\n\ndef nms(boxes, scores):\n"
        "    return nms_cuda.nms_gpu(boxes, scores)\n")
    (tmp_path / "det" / "ops" / "pool" / "pool_utils.py").write_text(
        "from .pool_cuda import forward\n")
    (tmp_path / "train.py").write_text(
        "import torch\nfrom det.ops.nms.nms_utils import nms\n\n"
        "boxes = torch.rand(4, 4)\nprint(nms(boxes, boxes[:, 0]))\n")
    findings = scan(dualtrack, tmp_path)
    assert at(findings, "det/ops/nms/nms_utils.py") == [(1, "DT305"), (5, "DT305")]
    assert at(findings, "det/ops/pool/pool_utils.py") == [(1, "DT305")]
    assert (2, "DT312") in at(findings, "train.py")
    setup = at(findings, "setup.py")
    assert (14, "DT301") in setup and (18, "DT301") in setup
    assert verdict(dualtrack, tmp_path, "train.py") == "cuda-only"


def test_a_helper_name_that_is_not_a_template_declares_nothing(dualtrack, tmp_path):
    # The name comes from a call the scan cannot evaluate: no module is guessed from it, and the
    # project's own module of that name stays the project's.
    (tmp_path / "setup.py").write_text(
        "from setuptools import setup\n"
        "from torch.utils.cpp_extension import CUDAExtension\n\n\n"
        "def make_ext(name, sources):\n"
        "    return CUDAExtension(name=pick(name), sources=sources)\n\n\n"
        "setup(name='x', ext_modules=[make_ext('fast_ops', ['k.cu'])])\n")
    (tmp_path / "fast_ops.py").write_text("def add(a, b):\n    return a + b\n")
    (tmp_path / "train.py").write_text("import fast_ops\n\nprint(fast_ops.add(1, 2))\n")
    findings = scan(dualtrack, tmp_path)
    assert at(findings, "train.py") == []
    assert at(findings, "fast_ops.py") == []


def test_a_script_that_calls_the_extension_itself_needs_it(dualtrack, tmp_path):
    # gptq's test_kernel.py benchmarks the kernels by calling the compiled module directly, while
    # quant.py imports it under try/except for the optional packed layers: the benchmark is the
    # kernel, the quantisation script never calls it.
    (tmp_path / "setup_cuda.py").write_text(
        "from setuptools import setup\n"
        "from torch.utils import cpp_extension\n"
        "setup(name='quant_cuda', ext_modules=[cpp_extension.CUDAExtension(\n"
        "    'quant_cuda', ['quant_cuda.cpp', 'quant_cuda_kernel.cu'])],\n"
        "    cmdclass={'build_ext': cpp_extension.BuildExtension})\n")
    (tmp_path / "quant.py").write_text(
        "import torch\n\ntry:\n    import quant_cuda\nexcept ImportError:\n"
        "    print('CUDA extension not installed.')\n\n\n"
        "def quantize(x, scale):\n    return torch.round(x / scale) * scale\n")
    (tmp_path / "test_kernel.py").write_text(
        "import torch\nimport quant_cuda\n\n"
        "mat = torch.randint(0, 7, (64, 64), dtype=torch.int32)\nvec = torch.randn(1, 64)\n"
        "mul = torch.zeros(1, 64)\n"
        "quant_cuda.vecquant3matmul(vec, mat, mul, torch.ones(64), torch.zeros(64))\n")
    (tmp_path / "quantize.py").write_text(
        "import torch\nfrom quant import quantize\n\nprint(quantize(torch.randn(8), 0.1))\n")
    findings = scan(dualtrack, tmp_path)
    assert (7, "DT305") in at(findings, "test_kernel.py")
    assert verdict(dualtrack, tmp_path, "test_kernel.py") == "cuda-only"
    assert verdict(dualtrack, tmp_path, "quantize.py") == "mac-ready"


@pytest.mark.parametrize("spelling", [
    "'%s.%s.%s' % (module, name)",   # more holes than names
    "'%s' % (module, name)",         # more names than holes
    "f'{module}.{name'",             # an unterminated brace
    "f'{module}.{other}'",           # a name that is no parameter
    "'{}.{}'.format(module)",
    "module + '.' +",
])
def test_malformed_helper_names_declare_nothing(dualtrack, tmp_path, spelling):
    (tmp_path / "setup.py").write_text(
        "from torch.utils.cpp_extension import CUDAExtension\n\n\n"
        "def make_ext(name, module, sources):\n"
        f"    return CUDAExtension(name={spelling}, sources=sources)\n\n\n"
        "exts = [make_ext('fast_ops', 'pkg', ['k.cu'])]\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "fast_ops.py").write_text("def add(a, b):\n    return a + b\n")
    (tmp_path / "train.py").write_text("from pkg import fast_ops\n\nprint(fast_ops.add(1, 2))\n")
    findings = scan(dualtrack, tmp_path)
    assert at(findings, "train.py") == []
    assert at(findings, "pkg/fast_ops.py") == []
