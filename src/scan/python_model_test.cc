#include "scan/python_model.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scan/test_registry.h"

namespace dt::scan {
namespace {

using testing::Reg;

// The logical line that starts on physical line `line` (1-based).
std::size_t LineAt(const PyModel& m, std::uint32_t line) {
  for (std::size_t li = 0; li < m.lines().size(); ++li)
    if (m.Line(m.T(m.lines()[li].begin)) == line) return li;
  ADD_FAILURE() << "no logical line starts on line " << line;
  return 0;
}

// What the condition of the if / elif / while on physical line `line` says.
Truth CondAt(const PyModel& m, std::uint32_t line) {
  const std::size_t li = LineAt(m, line);
  const LogicalLine& l = m.lines()[li];
  return m.Cond(l.begin + 1, m.FindColon(l), m.ScopeOf(li));
}

// One model at a time: the model's tokens live in the thread's lexer storage.
class PyModelTest : public ::testing::Test {
 protected:
  PyModel& Build(const std::string& src) {
    src_ = src;
    model_.emplace(src_, Reg(), opt_);
    model_->Build();
    return *model_;
  }

  PyScanOptions opt_;
  std::string src_;
  std::optional<PyModel> model_;
};

TEST_F(PyModelTest, ResolvesAnAliasInANestedScope) {
  const PyModel& m = Build(
      "import torch.cuda as tc\n"
      "def outer():\n"
      "    from torch import backends as b\n"
      "    def inner(x):\n"
      "        tc.synchronize(b.cudnn)\n"
      "    def shadowed(tc):\n"
      "        tc.synchronize()\n"
      "b.cudnn\n");
  const int inner = m.ScopeOf(LineAt(m, 5));
  ASSERT_GT(inner, 0);
  EXPECT_EQ(m.scope(inner).name, "inner");
  EXPECT_EQ(m.scope(m.TopOf(LineAt(m, 5))).name, "outer");
  const std::string* tc = m.Lookup("tc", inner);
  ASSERT_NE(tc, nullptr);
  EXPECT_EQ(*tc, "torch.cuda");
  // Bound in the enclosing function, seen in the nested one, not at module level.
  const std::string* b = m.Lookup("b", inner);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(*b, "torch.backends");
  EXPECT_EQ(m.Lookup("b", m.ScopeOf(LineAt(m, 8))), nullptr);
  // A parameter of the same name hides the import.
  EXPECT_EQ(m.Lookup("tc", m.ScopeOf(LineAt(m, 7))), nullptr);
  std::string resolved, head;
  const LogicalLine& l = m.lines()[LineAt(m, 5)];
  m.Chain(l.begin, l.end, inner, resolved, head);
  EXPECT_EQ(resolved, "torch.cuda.synchronize");
  EXPECT_EQ(head, "tc");
}

TEST_F(PyModelTest, LineGuardedByAnAvailabilityCheck) {
  const PyModel& m = Build(
      "import torch\n"
      "if torch.cuda.is_available():\n"
      "    torch.cuda.synchronize()\n"
      "else:\n"
      "    pass\n"
      "torch.cuda.synchronize()\n");
  EXPECT_EQ(CondAt(m, 2), Truth::kCuda);
  EXPECT_TRUE(m.IsChecked(LineAt(m, 2)));
  EXPECT_TRUE(m.IsChecked(LineAt(m, 3)));
  EXPECT_TRUE(m.IsGuarded(LineAt(m, 3)));
  EXPECT_FALSE(m.IsChecked(LineAt(m, 5)));
  EXPECT_FALSE(m.IsChecked(LineAt(m, 6)));
  EXPECT_FALSE(m.IsGuarded(LineAt(m, 6)));
}

TEST_F(PyModelTest, LineGuardedByAnEarlyReturn) {
  const PyModel& m = Build(
      "import torch\n"
      "def sync(x):\n"
      "    if not torch.cuda.is_available():\n"
      "        return x\n"
      "    torch.cuda.synchronize()\n"
      "    return x\n"
      "def other(x):\n"
      "    torch.cuda.synchronize()\n");
  EXPECT_EQ(CondAt(m, 3), Truth::kNoCuda);
  EXPECT_FALSE(m.IsChecked(LineAt(m, 4)));  // The fallback itself runs without CUDA.
  EXPECT_TRUE(m.IsChecked(LineAt(m, 5)));
  EXPECT_TRUE(m.IsChecked(LineAt(m, 6)));
  EXPECT_FALSE(m.IsChecked(LineAt(m, 8)));  // Another function: the return guards nothing there.
}

TEST_F(PyModelTest, LineGuardedByALaunchModeCheck) {
  const PyModel& m = Build(
      "import torch\n"
      "if args.local_rank != -1:\n"
      "    torch.cuda.set_device(args.local_rank)\n"
      "if args.distributed:\n"
      "    torch.cuda.set_device(0)\n"
      "if world_size == 1:\n"
      "    pass\n"
      "else:\n"
      "    torch.cuda.set_device(0)\n");
  EXPECT_EQ(CondAt(m, 2), Truth::kCuda);
  EXPECT_TRUE(m.IsChecked(LineAt(m, 3)));
  EXPECT_EQ(CondAt(m, 4), Truth::kCuda);
  EXPECT_TRUE(m.IsChecked(LineAt(m, 5)));
  EXPECT_EQ(CondAt(m, 6), Truth::kNoCuda);  // A single process.
  EXPECT_FALSE(m.IsChecked(LineAt(m, 7)));
  EXPECT_TRUE(m.IsChecked(LineAt(m, 9)));
}

TEST_F(PyModelTest, OptionalImportWhoseFallbackIsACudaBuildIsNoGuard) {
  // The fallback JIT-builds the same CUDA sources: no branch runs without CUDA.
  const PyModel& m = Build(
      "try:\n"
      "    import fastops._ext as _ext\n"
      "except ImportError:\n"
      "    from torch.utils.cpp_extension import load\n"
      "    _ext = load('_ext', sources=['a.cpp', 'k.cu'], with_cuda=True)\n"
      "y = _ext.run(x)\n");
  EXPECT_FALSE(m.IsOptionalLine(LineAt(m, 2)));
  EXPECT_FALSE(m.IsGuarded(LineAt(m, 2)));
  EXPECT_FALSE(m.IsFallbackName("_ext"));
  EXPECT_FALSE(m.IsFallbackName("load"));
  // A fallback that builds for the CPU only is one.
  const PyModel& cpu = Build(
      "try:\n"
      "    import fastops._ext as _ext\n"
      "except ImportError:\n"
      "    from torch.utils.cpp_extension import load\n"
      "    _ext = load('_ext', sources=['a.cpp'])\n");
  EXPECT_TRUE(cpu.IsOptionalLine(LineAt(cpu, 2)));
  EXPECT_TRUE(cpu.IsFallbackName("_ext"));
}

TEST_F(PyModelTest, OptionalImportWithANonCudaFallback) {
  const PyModel& m = Build(
      "import torch\n"
      "try:\n"
      "    from fused_ops import gelu\n"
      "    import apex\n"
      "except ImportError:\n"
      "    gelu = torch.nn.functional.gelu\n"
      "    apex = None\n"
      "y = gelu(x)\n");
  ASSERT_EQ(m.imports().size(), 3u);
  EXPECT_TRUE(m.IsOptionalLine(LineAt(m, 3)));
  EXPECT_TRUE(m.IsOptionalLine(LineAt(m, 4)));
  EXPECT_FALSE(m.IsRequiredLine(LineAt(m, 3)));
  EXPECT_TRUE(m.IsGuarded(LineAt(m, 3)));
  EXPECT_FALSE(m.IsGuarded(LineAt(m, 8)));
  // Testing a name an optional import binds tests the import.
  EXPECT_TRUE(m.IsOptionalName("gelu"));
  EXPECT_TRUE(m.IsOptionalName("apex"));
  // `gelu` has a fallback that runs anywhere; `apex = None` is none (its uses need a check).
  EXPECT_TRUE(m.IsFallbackName("gelu"));
  EXPECT_FALSE(m.IsFallbackName("apex"));
  const std::string* gelu = m.Lookup("gelu", 0);
  ASSERT_NE(gelu, nullptr);
  EXPECT_EQ(*gelu, "fused_ops.gelu");
}

TEST_F(PyModelTest, ImportWhoseHandlerOnlyRaisesIsRequired) {
  const PyModel& m = Build(
      "try:\n"
      "    import xformers\n"
      "except ImportError:\n"
      "    raise ImportError('xformers is required')\n");
  EXPECT_TRUE(m.IsRequiredLine(LineAt(m, 2)));
  EXPECT_FALSE(m.IsOptionalLine(LineAt(m, 2)));
}

TEST_F(PyModelTest, TruthOfNotAndOr) {
  const PyModel& m = Build(
      "import torch\n"
      "if not torch.cuda.is_available(): pass\n"
      "if not not torch.cuda.is_available(): pass\n"
      "if x and torch.cuda.is_available(): pass\n"
      "if not x and not torch.cuda.is_available(): pass\n"
      "if torch.cuda.is_available() or x: pass\n"
      "if torch.cuda.is_available() or args.use_gpu: pass\n"
      "if x or not torch.cuda.is_available(): pass\n"
      "if not (x and torch.cuda.is_available()): pass\n"
      "if x: pass\n"
      "if args.no_cuda: pass\n");
  EXPECT_EQ(CondAt(m, 2), Truth::kNoCuda);
  EXPECT_EQ(CondAt(m, 3), Truth::kCuda);
  EXPECT_EQ(CondAt(m, 4), Truth::kCuda);  // A conjunction holds where any term does.
  EXPECT_EQ(CondAt(m, 5), Truth::kNone);  // `not a and not b` fails where either holds.
  EXPECT_EQ(CondAt(m, 6), Truth::kNone);  // A disjunction only where all terms do.
  EXPECT_EQ(CondAt(m, 7), Truth::kCuda);
  EXPECT_EQ(CondAt(m, 8), Truth::kNoCuda);
  EXPECT_EQ(CondAt(m, 9), Truth::kNoCuda);
  EXPECT_EQ(CondAt(m, 10), Truth::kNone);
  EXPECT_EQ(CondAt(m, 11), Truth::kNoCuda);  // A flag that says CUDA is off.
}

TEST_F(PyModelTest, GuardNamesAndBranches) {
  const PyModel& m = Build(
      "import torch\n"
      "def has_cuda():\n"
      "    return torch.cuda.is_available()\n"
      "ok = has_cuda()\n"
      "if ok:\n"
      "    pass\n"
      "d = torch.cuda.current_device() if ok else 'cpu'\n");
  EXPECT_TRUE(m.IsGuardName("has_cuda"));
  EXPECT_TRUE(m.IsGuardName("ok"));
  EXPECT_TRUE(m.IsChecked(LineAt(m, 6)));
  const std::size_t li = LineAt(m, 7);
  std::vector<std::pair<std::size_t, std::size_t>> branches;
  m.GuardedBranches(m.lines()[li], m.ScopeOf(li), branches);
  ASSERT_EQ(branches.size(), 1u);
  // `torch.cuda.current_device()`: from after `=` to the `if`.
  EXPECT_EQ(m.Text(m.T(branches[0].first)), "torch");
  EXPECT_EQ(m.Text(m.T(branches[0].second)), "if");
}

TEST_F(PyModelTest, KernelsAndTheirLaunches) {
  const PyModel& m = Build(
      "import triton\n"
      "@triton.jit\n"
      "def _kernel(x):\n"
      "    pass\n"
      "def run(x):\n"
      "    _kernel[(1,)](x)\n");
  EXPECT_TRUE(m.IsKernelName("_kernel"));
  EXPECT_TRUE(m.InKernel(LineAt(m, 2)));
  EXPECT_TRUE(m.InKernelBody(LineAt(m, 4)));
  EXPECT_FALSE(m.InKernel(LineAt(m, 6)));
  EXPECT_TRUE(m.InLaunch(LineAt(m, 6)));
  EXPECT_TRUE(m.IsLaunchScope(m.ScopeOf(LineAt(m, 6))));
  ASSERT_NE(m.kernel_lib(), nullptr);
}

// ---- Settings: options with their defaults, launch facts through assignments, early exits, and
// values judged where they are read.

TEST_F(PyModelTest, AnOptionOffByDefaultGuardsItsBranch) {
  const PyModel& m = Build(
      "import argparse, torch\n"
      "p = argparse.ArgumentParser()\n"
      "p.add_argument('--tcnn', action='store_true')\n"
      "p.add_argument('--batch-size', type=int, default=16)\n"
      "p.add_argument('--gpu', default=None, type=int)\n"
      "p.add_argument('--amp', action='store_false')\n"
      "p.add_argument('--use-cpu', action='store_true')\n"
      "opt = p.parse_args()\n"
      "if opt.tcnn:\n    import tinycudann\n"                                // 9: off by default
      "if opt.batch_size == -1:\n    torch.cuda.mem_get_info()\n"            // 11
      "if opt.gpu is not None:\n    torch.cuda.set_device(opt.gpu)\n"        // 13
      "if opt.amp:\n    torch.cuda.synchronize()\n"                          // 15: on by default
      "if not opt.use_cpu:\n    x.cuda()\n"                                  // 17: a device flag
      "if not opt.tcnn:\n    pass\nelse:\n    torch.cuda.synchronize()\n");  // 19
  EXPECT_EQ(CondAt(m, 9), Truth::kCuda);
  EXPECT_TRUE(m.IsChecked(LineAt(m, 10)));
  EXPECT_EQ(CondAt(m, 11), Truth::kCuda);
  EXPECT_EQ(CondAt(m, 13), Truth::kCuda);
  EXPECT_EQ(CondAt(m, 15), Truth::kNone);
  EXPECT_FALSE(m.IsChecked(LineAt(m, 16)));
  EXPECT_EQ(CondAt(m, 17), Truth::kCuda);  // `not use_cpu`: CUDA chosen, as FlagWord reads it.
  EXPECT_EQ(CondAt(m, 19), Truth::kNoCuda);
  EXPECT_TRUE(m.IsChecked(LineAt(m, 22)));
  for (std::uint32_t line : {3u, 4u, 5u, 6u, 7u})
    EXPECT_TRUE(m.settings().IsOptionLine(line)) << line;
  EXPECT_FALSE(m.settings().IsOptionLine(8));
}

TEST_F(PyModelTest, AnAttributeAssignedInTheFileIsNoLongerItsDefault) {
  const PyModel& m = Build(
      "import argparse, torch\n"
      "p = argparse.ArgumentParser()\n"
      "p.add_argument('--fast', action='store_true')\n"
      "args = p.parse_args()\n"
      "args.fast = torch.cuda.is_available()\n"
      "if args.fast:\n    torch.cuda.synchronize()\n");
  EXPECT_EQ(CondAt(m, 6), Truth::kCuda);  // A CUDA check now, through the assignment.
}

TEST_F(PyModelTest, LaunchFactsFlowThroughAssignments) {
  const PyModel& m = Build(
      "import os, torch\n"
      "ddp_mode = int(os.environ.get('RANK', -1)) != -1\n"
      "if ddp_mode:\n    torch.cuda.set_device(0)\n"
      "if 'SLURM_PROCID' in os.environ:\n    torch.cuda.device_count()\n");
  EXPECT_EQ(CondAt(m, 3), Truth::kCuda);
  EXPECT_EQ(CondAt(m, 5), Truth::kCuda);
}

TEST_F(PyModelTest, EarlyExitsGuardWhatFollows) {
  const PyModel& m = Build(
      "import os, torch\n"
      "import torch.distributed as dist\n"
      "def initialized():\n"
      "    if not dist.is_available():\n        return False\n"
      "    if not dist.is_initialized():\n        return False\n"
      "    return True\n"
      "def sync(t):\n"
      "    if not initialized():\n        return\n"
      "    torch.cuda.synchronize()\n"  // 12
      "def setup(args):\n"
      "    if 'RANK' in os.environ:\n        args.rank = 0\n"
      "    elif 'SLURM_PROCID' in os.environ:\n        args.rank = 1\n"
      "    else:\n        print('single process')\n        return\n"
      "    torch.cuda.set_device(args.rank)\n"  // 21
      "def lr(opt):\n"
      "    if torch.cuda.is_available():\n        f = 1\n"
      "    else:\n        def f(x):\n            return x\n"
      "    torch.cuda.synchronize()\n");  // 28
  EXPECT_TRUE(m.IsChecked(LineAt(m, 12)));
  EXPECT_TRUE(m.IsChecked(LineAt(m, 21)));
  EXPECT_FALSE(m.IsChecked(LineAt(m, 19)));  // The single-process branch itself.
  EXPECT_FALSE(m.IsChecked(LineAt(m, 28)));  // A return inside a nested def leaves nothing.
}

TEST_F(PyModelTest, AValueReadOnlyBehindChecksIsGuarded) {
  const PyModel& m = Build(
      "import argparse, os, torch\n"
      "backend = 'nccl'\n"
      "device = 'cuda'\n"
      "exec(open('configurator.py').read())\n"
      "p = argparse.ArgumentParser()\n"
      "p.add_argument('--dist-backend', default='nccl')\n"
      "p.add_argument('--world-size', default=-1, type=int)\n"
      "args = p.parse_args()\n"
      "ddp = int(os.environ.get('RANK', -1)) != -1\n"
      "if ddp:\n    torch.distributed.init_process_group(backend=backend)\n"
      "if args.world_size > 1:\n    torch.distributed.init_process_group(args.dist_backend)\n"
      "x = torch.zeros(2, device=device)\n");
  EXPECT_TRUE(m.IsChecked(LineAt(m, 2)));     // read only in `if ddp:`
  EXPECT_FALSE(m.IsChecked(LineAt(m, 3)));    // read unguarded at 14
  EXPECT_TRUE(m.IsChecked(LineAt(m, 6)));     // read only under world_size > 1
  EXPECT_TRUE(m.settings().IsOptionLine(2));  // before the configurator
  EXPECT_TRUE(m.settings().IsOptionLine(3));
}

TEST_F(PyModelTest, ANameAValueGetsOnlyBehindACheckIsACheckedLiteral) {
  PyModel& m = Build(
      "try:\n"
      "    import xformers.ops\n"
      "    XFORMERS_AVAILABLE = True\n"
      "except ImportError:\n"
      "    XFORMERS_AVAILABLE = False\n"
      "mode = 'softmax-xformers' if XFORMERS_AVAILABLE else 'softmax'\n"
      "def make(kind='vanilla'):\n"
      "    if XFORMERS_AVAILABLE and kind == 'vanilla':\n"
      "        kind = 'vanilla-xformers'\n"
      "    if kind == 'vanilla-xformers':\n"
      "        pass\n"
      "    elif kind == 'softmax':\n"
      "        pass\n");
  EXPECT_TRUE(m.IsCheckedLiteral("softmax-xformers"));
  EXPECT_TRUE(m.IsCheckedLiteral("vanilla-xformers"));
  // Written as a value outside any check: the default of `kind`, the other side of the choice.
  EXPECT_FALSE(m.IsCheckedLiteral("vanilla"));
  EXPECT_FALSE(m.IsCheckedLiteral("softmax"));
  EXPECT_EQ(CondAt(m, 10), Truth::kCuda);
  EXPECT_EQ(CondAt(m, 12), Truth::kNone);
}

TEST_F(PyModelTest, ABranchOfAChoiceByNameIsOneChoiceUnlessTheDefaultPicksIt) {
  PyModel& m = Build(
      "import argparse\n"
      "parser = argparse.ArgumentParser()\n"
      "parser.add_argument('--opt', default='adamw')\n"
      "args = parser.parse_args()\n"
      "def create(opt_lower):\n"
      "    if opt_lower == 'adamw':\n"
      "        x = 1\n"
      "    elif opt_lower == 'fusedsgd':\n"
      "        x = 2\n"
      "    if opt_lower == 'alone':\n"
      "        x = 3\n"
      "if args.opt == 'adamw':\n"
      "    y = 1\n"
      "else:\n"
      "    y = 2\n");
  EXPECT_TRUE(InNamedChoice(m, LineAt(m, 7)));
  EXPECT_TRUE(InNamedChoice(m, LineAt(m, 9)));
  EXPECT_FALSE(InNamedChoice(m, LineAt(m, 11)));  // No other branch: no choice.
  EXPECT_FALSE(InNamedChoice(m, LineAt(m, 13)));  // The option's default picks it.
  EXPECT_FALSE(InNamedChoice(m, LineAt(m, 15)));  // An else is no named branch.
}

TEST_F(PyModelTest, ASwitchNamedForACudaOnlyLibraryChoosesCuda) {
  PyModel& m = Build(
      "import triton\n"
      "if self.use_apex:\n    pass\n"
      "if HAS_TRITON:\n    pass\n"
      "if xformers_enabled:\n    pass\n"
      "if not use_xformers:\n    pass\n"
      "if triton.__version__ > '2':\n    pass\n"
      "if flash_attn_func is None:\n    pass\n"
      "if capex:\n    pass\n");
  EXPECT_EQ(CondAt(m, 2), Truth::kCuda);
  EXPECT_EQ(CondAt(m, 4), Truth::kCuda);
  EXPECT_EQ(CondAt(m, 6), Truth::kCuda);
  EXPECT_EQ(CondAt(m, 8), Truth::kNoCuda);
  EXPECT_EQ(CondAt(m, 10), Truth::kNone);  // The module itself.
  EXPECT_EQ(CondAt(m, 12), Truth::kNone);  // A function of the library, not a switch.
  EXPECT_EQ(CondAt(m, 14), Truth::kNone);
}

}  // namespace
}  // namespace dt::scan
