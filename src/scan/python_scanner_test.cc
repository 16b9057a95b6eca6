#include "scan/python_scanner.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <unordered_set>

#include "scan/registry.h"
#include "scan/test_registry.h"

namespace dt::scan {
namespace {

using testing::Codes;
using testing::Reg;

std::vector<Finding> Py(const std::string& src) {
  std::vector<Finding> out;
  FindingSink sink(Reg(), "t.py", src, out);
  (void)ScanPython(src, sink, false);
  return out;
}

// Scans `src` as the file `rel` with `opt`, its findings appended to `out`.
PyScanResult PyAs(const std::string& src, const std::string& rel, const PyScanOptions& opt,
                  std::vector<Finding>& out) {
  FindingSink sink(Reg(), rel, src, out);
  return ScanPython(src, sink, opt);
}

// The folders a file puts on sys.path, also through a helper that inserts its parameter (the
// `_init_paths.py` of detection projects), with the argument read through its assignment; a
// file without a trigger word is read for them too.
TEST(ScanPythonTest, SysPathFoldersThroughAHelper) {
  const std::string src =
      "import os.path as osp\nimport sys\n\ndef add_path(path):\n"
      "    if path not in sys.path:\n        sys.path.insert(0, path)\n\n"
      "this_dir = osp.dirname(__file__)\nlib_path = osp.join(this_dir, 'lib')\n"
      "add_path(lib_path)\nadd_path(osp.join(this_dir, '..', 'data'))\n"
      "sys.path.append('tools')\n";
  for (bool imports_only : {false, true}) {
    PyScanOptions opt;
    opt.imports_only = imports_only;
    std::vector<Finding> out;
    const PyScanResult r = PyAs(src, "src/_init_paths.py", opt, out);
    EXPECT_EQ(r.sys_path, (std::vector<std::string>{"lib", "../data", "tools"})) << imports_only;
  }
}

// The compiled modules that flash-attention's and apex's csrc builds install under their own
// names (`import dropout_layer_norm`, `import amp_C`) are those libraries; a project module of the
// same name is the project's.
TEST(ScanPythonTest, CompiledModulesOfKernelLibraries) {
  const std::string src =
      "import rotary_emb\nimport dropout_layer_norm\nimport amp_C\n"
      "def f(x):\n    return dropout_layer_norm.dropout_add_ln_fwd(x)\n";
  EXPECT_EQ(Codes(Py(src)), (std::vector<std::string>{"DT201@1", "DT201@2", "DT201@3", "DT202@5"}));
  const std::unordered_set<std::string> own = {"rotary_emb"};
  PyScanOptions opt;
  opt.own_tops = &own;
  std::vector<Finding> out;
  (void)PyAs(src, "model.py", opt, out);
  EXPECT_EQ(Codes(out), (std::vector<std::string>{"DT201@2", "DT201@3", "DT202@5"}));
  // Beside other trigger words too.
  EXPECT_EQ(Codes(Py("import torch\nimport dropout_layer_norm\nx = torch.zeros(1).cuda()\n"
                     "y = dropout_layer_norm.dropout_add_ln_fwd(x)\n")),
            (std::vector<std::string>{"DT201@2", "DT101@3", "DT202@4"}));
}

TEST(ScanPythonTest, ResolvesAliases) {
  auto fs =
      Py("import torch.cuda as tc\nfrom torch import cuda\ntc.synchronize()\ncuda.empty_cache()\n");
  EXPECT_EQ(Codes(fs), (std::vector<std::string>{"DT103@3", "DT115@4"}));
}

TEST(ScanPythonTest, OptionalImportIsGuarded) {
  // The import cannot fail; a use is guarded only where the code checks that it loaded.
  auto fs =
      Py("try:\n    import apex\n    HAS_APEX = True\nexcept ImportError:\n    apex = None\n"
         "    HAS_APEX = False\n"
         "opt = apex.optimizers.FusedAdam(p)\n"
         "if apex is not None:\n    opt = apex.optimizers.FusedLAMB(p)\n"
         "if HAS_APEX:\n    opt = apex.optimizers.FusedSGD(p)\n");
  ASSERT_EQ(Codes(fs), (std::vector<std::string>{"DT201@2", "DT202@7", "DT202@9", "DT202@11"}));
  EXPECT_TRUE(fs[0].guarded);
  EXPECT_EQ(fs[0].severity, Severity::kPortable);
  EXPECT_FALSE(fs[1].guarded);
  EXPECT_TRUE(fs[2].guarded);
  EXPECT_TRUE(fs[3].guarded);
}

// A field a config class declares (`bits: int = field(default=16)`) tested for membership or
// equality: the branch of another value is an opt-in, the branch of the default runs.
TEST(ScanPythonTest, MembershipTestOfADataclassFieldIsAnOptIn) {
  auto fs =
      Py("from dataclasses import dataclass, field\n"
         "@dataclass\n"
         "class TrainingArguments:\n"
         "    bits: int = field(default=16, metadata={'help': 'quantisation bits'})\n"
         "def load(training_args, load_model):\n"
         "    if training_args.bits in [4, 8]:\n"
         "        load_model(load_in_4bit=True)\n"
         "    if training_args.bits not in (4, 8):\n"
         "        load_model(load_in_4bit=True)\n"
         "    if training_args.bits == 4:\n"
         "        load_model(load_in_4bit=True)\n");
  ASSERT_EQ(Codes(fs), (std::vector<std::string>{"DT206@7", "DT206@9", "DT206@11"}));
  EXPECT_TRUE(fs[0].guarded);
  EXPECT_FALSE(fs[1].guarded);
  EXPECT_TRUE(fs[2].guarded);
}

TEST(ScanPythonTest, PrivateDefinitionUsedOnlyUnderACheckIsGuarded) {
  auto fs =
      Py("try:\n    import fused_cuda\nexcept ImportError:\n    fused_cuda = None\n"
         "class _Fn:\n    def forward(x):\n        return fused_cuda.forward(x)\n"
         "def Public(x):\n    return fused_cuda.forward(x)\n"
         "def op(x):\n    if fused_cuda is not None and x.is_cuda:\n        return _Fn.forward(x)\n"
         "    return x\n");
  ASSERT_EQ(Codes(fs), (std::vector<std::string>{"DT305@2", "DT305@7", "DT305@9"}));
  EXPECT_TRUE(fs[1].guarded);   // Only reached through the checked call.
  EXPECT_FALSE(fs[2].guarded);  // Public: other modules may call it unchecked.
}

TEST(ScanPythonTest, FunctionCalledOnlyUnderACheckIsGuarded) {
  // `dtw()` calls the public `dtw_cuda()` only under `if x.is_cuda:` with a fallback; `raw()` is
  // called once without a check, so its line stays unguarded; `never()` is not called here.
  auto fs =
      Py("import torch\n"
         "def dtw_cuda(x):\n    torch.cuda.synchronize()\n    return x\n"
         "def raw(x):\n    torch.cuda.synchronize()\n"
         "def never(x):\n    torch.cuda.synchronize()\n"
         "def dtw(x):\n    if x.is_cuda:\n        return dtw_cuda(x)\n    raw(x)\n    return x\n");
  ASSERT_EQ(Codes(fs), (std::vector<std::string>{"DT103@3", "DT103@6", "DT103@8"}));
  EXPECT_TRUE(fs[0].guarded);
  EXPECT_EQ(fs[0].severity, Severity::kPortable);
  EXPECT_FALSE(fs[1].guarded);
  EXPECT_FALSE(fs[2].guarded);
}

TEST(ScanPythonTest, ImportWhoseHandlerOnlyRaisesIsRequired) {
  auto fs =
      Py("try:\n    from xformers.ops import fmha\nexcept ImportError:\n"
         "    raise AssertionError('xFormers is required')\n"
         "try:\n    import apex\nexcept ImportError:\n    apex = None\n");
  ASSERT_EQ(Codes(fs), (std::vector<std::string>{"DT210@2", "DT201@6"}));
  EXPECT_EQ(fs[0].severity, Severity::kBlocker);
  EXPECT_FALSE(fs[0].guarded);
  EXPECT_TRUE(fs[1].guarded);
}

TEST(ScanPythonTest, TryBodyIsAGuardOnlyWhenTheHandlerOffersAnotherPath) {
  // A handler that only reports (metrics lost) or re-raises after a dump leaves the body's work
  // undone on a Mac; one that substitutes something is a fallback.
  auto fs =
      Py("import torch\n"
         "try:\n    x = x.cuda()\nexcept Exception:\n    print('Unable to compute metrics')\n"
         "try:\n    y = y.cuda()\nexcept Exception as e:\n    torch.save(y, 'dump')\n    raise e\n"
         "try:\n    z = z.cuda()\nexcept Exception:\n    z = z.cpu()\n");
  ASSERT_EQ(Codes(fs), (std::vector<std::string>{"DT101@3", "DT101@7", "DT101@12"}));
  EXPECT_FALSE(fs[0].guarded);
  EXPECT_FALSE(fs[1].guarded);
  EXPECT_TRUE(fs[2].guarded);
}

// The code of f-string fields is scanned where it stands (line and column of the field's own
// token): method calls, nested f-strings, format specs and conversions, triple quotes and
// Python 3.12's reused quotes; the literal text around the fields is not code.
TEST(ScanPythonTest, FStringFieldsAreCode) {
  const std::string src =
      "import torch\n"
      "a = f\"{x.cuda()}\"\n"                        // 2
      "b = f\"use .cuda() here {n}\"\n"              // literal text only
      "c = f\"{torch.cuda.synchronize()!r:>10}\"\n"  // 4
      "d = f\"{x.cuda():>10}\"\n"                    // 5
      "e = f'''text\n  {y.cuda()}'''\n"              // 7
      "g = f\"{f'{z.cuda()}'}\"\n"                   // 8: nested
      "h = f\"{d[\"k\"].cuda()}\"\n"                 // 9: 3.12's reused quote
      "i = f\"{{x.cuda()}}\"\n"                      // escaped braces: text
      "j = f\"{v:{w.cuda()}}\"\n";                   // 11: a field in the spec
  std::vector<std::string> got;
  for (const auto& f : Py(src))
    got.push_back(f.code + "@" + std::to_string(f.line) + ":" + std::to_string(f.column));
  EXPECT_EQ(got, (std::vector<std::string>{"DT101@2:10", "DT103@4:8", "DT101@5:10", "DT101@7:6",
                                           "DT101@8:13", "DT101@9:15", "DT101@11:13"}));
}

TEST(ScanPythonTest, GuardForms) {
  // Early return on `not cuda or not flag`; CUDA autocast enabled (no device argument); the
  // ROCm/CUDA build of torch; a rank that only a launched worker has; a CUDA build switch; the
  // value before a check's `if` inside an f-string.
  auto fs =
      Py("import os, torch\n"
         "def f(flash):\n"
         "    if not torch.cuda.is_available() or not flash:\n        return\n"
         "    p = torch.cuda.get_device_properties(0)\n"                              // 5
         "if torch.is_autocast_enabled():\n    d = torch.get_autocast_gpu_dtype()\n"  // 7
         "if torch.is_autocast_enabled('cpu'):\n    d = torch.get_autocast_gpu_dtype()\n"
         "if torch.version.hip:\n    p = torch.cuda.get_device_properties(0)\n"  // 11
         "if local_rank not in [-1, 0]:\n    torch.cuda.synchronize()\n"         // 13
         "if local_rank in [-1, 0]:\n    torch.cuda.synchronize()\n"             // 15
         "if os.getenv('FORCE_CUDA', '0') == '1':\n    torch.cuda.synchronize()\n"
         "m = f'{torch.cuda.memory_reserved() / 1e9 if torch.cuda.is_available() else 0:.3g}G'\n"
         "n = f'{torch.cuda.memory_reserved() / 1e9:.3g}G'\n");
  ASSERT_EQ(Codes(fs),
            (std::vector<std::string>{"DT104@5", "DT105@7", "DT105@9", "DT104@11", "DT103@13",
                                      "DT103@15", "DT103@17", "DT107@18", "DT107@19"}));
  std::vector<bool> guarded;
  for (const auto& f : fs) guarded.push_back(f.guarded);
  EXPECT_EQ(guarded, (std::vector<bool>{true, true, false, true, true, false, true, true, false}));
}

TEST(ScanPythonTest, ComparedValuesAndDeviceIndexesByKey) {
  // A value compared is a test, not a use; DDP's device_ids set by key or through a getter.
  auto fs =
      Py("import torch\nimport torch.distributed as dist\n"
         "if dist.get_backend() == dist.Backend.NCCL:\n    pass\n"
         "if x.dtype != torch.float64:\n    pass\n"
         "kwargs['device_ids'] = [comm.get_local_rank()]\n"
         "m = DDP(model, device_ids=[comm.get_local_rank()])\n"
         "n = DDP(model, device_ids=[comm.get_rank_name()])\n"
         "o = nn.DataParallel(model, device_ids=args.gpus)\n"
         "p = Other(model, device_ids=args.gpus)\n"
         "q = DDP(model, device_ids=None)\n");
  // A parallel wrapper reads GPU indexes in device_ids whatever the value; another callee's
  // keyword is an index only when it reads as one.
  EXPECT_EQ(Codes(fs), (std::vector<std::string>{"DT113@7", "DT113@8", "DT113@9", "DT113@10"}));
}

TEST(ScanPythonTest, IntegerLiteralDeviceNeedsNoTriggerWord) {
  // `.to(0)` carries no trigger word: the statement prefilter must still let it through.
  auto fs = Py("def place(model):\n    model = model.to(0)\n    return model.to(dtype)\n");
  EXPECT_EQ(Codes(fs), (std::vector<std::string>{"DT113@2"}));
}

TEST(ScanPythonTest, KeywordDeviceOfTo) {
  // Tensor.to's `device=` keyword, first or after dtype; other keywords are no device.
  auto fs =
      Py("m = model.to(device=args.gpu)\n"
         "n = model.to(dtype=torch.half, device=local_rank, non_blocking=True)\n"
         "o = model.to(dtype=torch.half)\n"
         "p = model.to(device=args.device)\n");
  ASSERT_EQ(Codes(fs), (std::vector<std::string>{"DT113@1", "DT113@2"}));
  EXPECT_NE(fs[0].message.find(".to(device=args.gpu)"), std::string::npos) << fs[0].message;
}

TEST(ScanPythonTest, TritonKernelAtItsJitDecorator) {
  // One finding at @triton.jit, where a reader says the kernel is, under its autotune configs.
  auto fs =
      Py("import triton\n"
         "@triton.autotune(configs=[triton.Config({'B': 128})],\n"
         "                 key=['n'])\n"
         "@triton.jit\n"
         "def k(x_ptr, n):\n"
         "    pass\n"
         "@triton.jit\n"
         "def j(x_ptr, n):\n"
         "    pass\n");
  std::vector<std::string> kernels;
  for (const auto& f : fs)
    if (f.code == "DT207") kernels.push_back(f.code + "@" + std::to_string(f.line));
  EXPECT_EQ(kernels, (std::vector<std::string>{"DT207@4", "DT207@7"}));
}

TEST(ScanPythonTest, CudaDefaultWithALaterFallbackIsGuarded) {
  // stable-baselines' get_device: "cuda" by default, the CPU when CUDA turns out to be missing.
  // The comparison against torch.device("cuda").type is a test, not a placement.
  auto fs = Py(
      "import torch as th\n"
      "def get_device(device='auto'):\n"
      "    if device == 'auto':\n        device = 'cuda'\n"
      "    device = th.device(device)\n"
      "    if device.type == th.device('cuda').type and not th.cuda.is_available():\n"
      "        return th.device('cpu')\n"
      "    return device\n"
      "def pick():\n    device = 'cuda'\n    print(th.cuda.is_available())\n    return device\n");
  ASSERT_EQ(Codes(fs), (std::vector<std::string>{"DT102@4", "DT102@10"}));
  EXPECT_TRUE(fs[0].guarded);
  EXPECT_FALSE(fs[1].guarded);  // A check with no fallback guards nothing.
}

TEST(ScanPythonTest, GuardFunctionAndVariable) {
  auto fs =
      Py("import torch\n"
         "def has_gpu():\n    return torch.cuda.is_available()\n"
         "if has_gpu():\n    torch.cuda.synchronize()\n"
         "ok = x.is_cuda\n"
         "if ok:\n    torch.cuda.empty_cache()\n"
         "torch.cuda.reset_peak_memory_stats()\n");
  // `x.is_cuda` is a guard, not a finding (DT109 is retired).
  ASSERT_EQ(Codes(fs), (std::vector<std::string>{"DT103@5", "DT115@8", "DT107@9"}));
  EXPECT_TRUE(fs[0].guarded);
  EXPECT_TRUE(fs[1].guarded);
  EXPECT_FALSE(fs[2].guarded);
}

TEST(ScanPythonTest, NothingInDocstringsCommentsOrProse) {
  auto fs =
      Py("\"\"\"Runs on cuda: x.cuda(), torch.cuda.synchronize().\"\"\"\n"
         "# model.cuda()\n"
         "log.info('see docs on cuda setup and nccl')\n"
         "help_text = 'use --device cuda'\n");
  EXPECT_TRUE(fs.empty()) << Codes(fs).size();
}

TEST(ScanPythonTest, CatchAllForUnknownTorchCudaApi) {
  auto fs = Py("import torch\ntorch.cuda.jiterator._create_jit_fn(code)\n");
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, "DT110");
  EXPECT_NE(fs[0].message.find("torch.cuda.jiterator"), std::string::npos);
}

TEST(ScanPythonTest, InlineSuppression) {
  auto fs =
      Py("x = y.cuda()  # dualtrack: ignore[DT101]\nz = w.cuda()  # dualtrack: ignore[DT2]\n");
  EXPECT_EQ(Codes(fs), (std::vector<std::string>{"DT101@2"}));
}

}  // namespace
}  // namespace dt::scan

namespace dt::scan {
namespace {

// A file whose trigger words are all in comments and docstrings gives no finding, and still
// gives its imports (an optional one guarded) and whether it is a script: the same as the full
// analysis, which it skips.
TEST(ScanPythonTest, TriggerWordsOnlyInProseStillGiveImportsAndMain) {
  const std::string src =
      "\"\"\"Runs on CUDA when it can (see torch.cuda).\"\"\"\n"
      "import os  # gpu, cuda\n"
      "try:\n    import yaml\nexcept ImportError:\n    yaml = None\n"
      "from .util import helper\n"
      "def main():\n    \"\"\"float64 on the GPU.\"\"\"\n    helper(os.getcwd())\n"
      "if __name__ == '__main__':\n    main()\n";
  std::vector<Finding> out;
  PyScanOptions opt;
  opt.package = "pkg";
  auto r = PyAs(src, "pkg/run.py", opt, out);
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(r.has_main);
  ASSERT_EQ(r.imports.size(), 3u);
  EXPECT_EQ(r.imports[0].module, "os");
  EXPECT_FALSE(r.imports[0].guarded);
  EXPECT_EQ(r.imports[1].module, "yaml");
  EXPECT_TRUE(r.imports[1].guarded);
  EXPECT_EQ(r.imports[2].module, "util");
  EXPECT_EQ(r.imports[2].level, 1);
  EXPECT_EQ(r.imports[2].names, (std::vector<std::string>{"helper"}));
  // The same words in a string that is not a statement of its own are code.
  EXPECT_EQ(testing::Codes(Py("import torch\nx = torch.zeros(2).to('cuda')\n")),
            (std::vector<std::string>{"DT102@2"}));
}

TEST(ScanPythonTest, CudaSymbolReachedThroughItsModule) {
  // pkg.ops.run reaches a CUDA extension; the file binds pkg.ops (or pkg) and calls run on it.
  CudaContext cuda;
  cuda.symbols.emplace("pkg.ops.run", true);
  cuda.symbol_packages = {"pkg", "pkg.ops"};
  const std::string src =
      "from pkg import ops\nimport pkg.ops as o\nimport pkg.ops\nimport pkg.util as u\n"
      "ops.run(1)\no.run(2)\npkg.ops.run(3)\nops.other(4)\nu.run(5)\n"
      "def f(x):\n    return o.run(x)\n";
  std::vector<Finding> out;
  PyScanOptions opt;
  opt.cuda = &cuda;
  auto r = PyAs(src, "model.py", opt, out);
  EXPECT_EQ(Codes(out), (std::vector<std::string>{"DT312@5", "DT312@6", "DT312@7", "DT312@11"}));
  // f calls it unguarded: f is a symbol of this module now.
  ASSERT_EQ(r.cuda_symbols.size(), 1u);
  EXPECT_EQ(r.cuda_symbols[0].first, "f");
  // Without the modules known, nothing: a bound module is not a symbol.
  cuda.symbol_packages.clear();
  out.clear();
  (void)PyAs(src, "model.py", opt, out);
  EXPECT_EQ(Codes(out), (std::vector<std::string>{}));
}

}  // namespace
}  // namespace dt::scan
