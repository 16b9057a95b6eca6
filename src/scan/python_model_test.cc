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

}  // namespace
}  // namespace dt::scan
