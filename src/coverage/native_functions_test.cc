#include "coverage/native_functions.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "util/fs.h"
#include "util/subprocess.h"

namespace dt::coverage {
namespace {

constexpr const char* kSmall = R"(# comment
- func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
  structured: True
  ufunc_inner_loop:
    Generic: add (AllAndComplex, BFloat16, Half, ComplexHalf)
  dispatch:
    SparseCPU, SparseMeta: add_out_sparse_cpu
    CPU, CUDA, MPS: add_out   # a comment
  tags: [core, pointwise]

- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  structured_delegate: add.out
  dispatch:
    SparseCPU: add_sparse

- func: hinge(Tensor self) -> Tensor
  dispatch:
    CPU: hinge_cpu
    CUDA: hinge_cuda
  autogen: hinge.out

- func: decomposes(Tensor self) -> Tensor
  variants: function, method

- func: everywhere(Tensor self) -> Tensor
  dispatch:
    CompositeExplicitAutograd: everywhere

- func: python_only(Tensor self) -> Tensor
  dispatch: {}

- func: renorm_(Tensor(a!) self) -> Tensor(a!)
  dispatch:
    CPU: renorm_cpu_
  precomputed:
  - dim -> int dim
)";

TEST(CoverageNativeFunctionsTest, ParsesTheFieldsThatDecideTheBackend) {
  auto fns = ParseNativeFunctions(kSmall, "small.yaml");
  ASSERT_TRUE(fns.ok()) << fns.error().ToString();
  ASSERT_EQ(fns->size(), 7u);
  EXPECT_EQ((*fns)[0].name, "add.out");
  EXPECT_EQ((*fns)[0].line, 2);
  ASSERT_EQ((*fns)[0].dispatch.size(), 2u);
  EXPECT_EQ((*fns)[0].dispatch[1].keys, (std::vector<std::string>{"CPU", "CUDA", "MPS"}));
  EXPECT_EQ((*fns)[0].dispatch[1].kernel, "add_out");
  EXPECT_EQ((*fns)[1].structured_delegate, "add.out");
  EXPECT_EQ((*fns)[2].autogen, std::vector<std::string>{"hinge.out"});
  EXPECT_FALSE((*fns)[3].has_dispatch);
  EXPECT_TRUE((*fns)[5].has_dispatch);
  EXPECT_TRUE((*fns)[5].dispatch.empty());
}

TEST(CoverageNativeFunctionsTest, ClassifiesEachKindOfEntry) {
  auto fns = ParseNativeFunctions(kSmall, "small.yaml");
  ASSERT_TRUE(fns.ok());
  auto c = ClassifyOperators(*fns, SourceLists{{"renorm_", "add.out"}, {}});
  EXPECT_EQ(c.at("add.out"), OpClass::kNative);
  EXPECT_EQ(c.at("add.Tensor"), OpClass::kNative);  // Through its structured delegate.
  EXPECT_EQ(c.at("hinge"), OpClass::kCpuFallback);
  EXPECT_EQ(c.at("hinge.out"), OpClass::kCpuFallback);  // Autogen follows its source.
  EXPECT_EQ(c.at("decomposes"), OpClass::kComposite);
  EXPECT_EQ(c.at("everywhere"), OpClass::kExplicit);
  EXPECT_EQ(OpClassName(c.at("everywhere")), "native");
  EXPECT_EQ(c.at("python_only"), OpClass::kCpuFallback);
  EXPECT_EQ(c.at("renorm_"), OpClass::kAlwaysCpu);
}

struct BadCase {
  const char* text;
  std::int64_t line;
  const char* needle;
};

TEST(CoverageNativeFunctionsTest, MalformedInputNamesTheLine) {
  const BadCase cases[] = {
      {"- func: a(Tensor x) -> Tensor\nnot a list item\n", 2, "expected '- func:"},
      {"- func: a(Tensor x) -> Tensor\n  dispatch:\n    CPU a_cpu\n", 3, "DispatchKey: kernel"},
      {"- func: a(Tensor x) -> Tensor\n   dispatch:\n", 2, "indentation"},
      {"- func: no_parens\n", 1, "schema"},
      {"- func: a(Tensor x) -> Tensor\n\tdispatch:\n", 2, "tab"},
      {"  dispatch:\n    CPU: x\n", 1, "before the first"},
      {"- func: a(Tensor x) -> Tensor\n  dispatch: CPU\n", 2, "dispatch"},
      {"- func: a(Tensor x) -> Tensor\n  bogus\n", 2, "key: value"},
      {"# only a comment\n", 0, "no '- func:'"},
  };
  for (const BadCase& bc : cases) {
    auto r = ParseNativeFunctions(bc.text, "bad.yaml");
    ASSERT_FALSE(r.ok()) << bc.text;
    EXPECT_EQ(r.error().file, "bad.yaml");
    EXPECT_EQ(r.error().line, bc.line) << bc.text;
    EXPECT_NE(r.error().message.find(bc.needle), std::string::npos) << r.error().message;
  }
}

// The real file of the installed torch (2.13.0), located through its Python.
std::filesystem::path InstalledYaml() {
  if (const char* env = std::getenv("DUALTRACK_TEST_NATIVE_FUNCTIONS")) return env;
  auto r =
      RunProcess({"python3", "-c",
                  "import torchgen, os; print(os.path.join(os.path.dirname(torchgen.__file__), "
                  "'packaged/ATen/native/native_functions.yaml'))"});
  if (!r.ok() || !r->Succeeded()) return {};
  std::string p = r->out;
  while (!p.empty() && (p.back() == '\n' || p.back() == '\r')) p.pop_back();
  return p;
}

TEST(CoverageNativeFunctionsTest, KnownCasesOfTheInstalledTorch) {
  std::filesystem::path yaml = InstalledYaml();
  if (yaml.empty() || !std::filesystem::exists(yaml)) GTEST_SKIP() << "no installed torch";
  auto map = MappedFile::Open(yaml);
  ASSERT_TRUE(map.ok());
  auto fns = ParseNativeFunctions(map->view(), yaml.string());
  ASSERT_TRUE(fns.ok()) << fns.error().ToString();
  EXPECT_GT(fns->size(), 2000u);
  // MPSFallback.mm's list as of the newest stored revision.
  SourceLists lists{
      {"embedding_renorm_", "linalg_svd", "linalg_svd.U", "col2im", "upsample_nearest3d.vec"},
      {"_copy_from", "_copy_from_and_resize"}};
  auto c = ClassifyOperators(*fns, lists);
  EXPECT_EQ(c.at("relu"), OpClass::kNative);                  // `MPS: relu_mps` in its own entry.
  EXPECT_EQ(c.at("add.Tensor"), OpClass::kNative);            // structured_delegate: add.out.
  EXPECT_EQ(c.at("embedding_renorm_"), OpClass::kAlwaysCpu);  // MPSFallback.mm.
  EXPECT_EQ(c.at("linalg_svd"), OpClass::kAlwaysCpu);
  EXPECT_EQ(c.at("multi_margin_loss"), OpClass::kCpuFallback);  // CPU and CUDA keys only.
  EXPECT_EQ(c.at("multi_margin_loss_backward"), OpClass::kCpuFallback);
  EXPECT_EQ(c.at("dropout"), OpClass::kComposite);  // No dispatch: CompositeImplicitAutograd.
  EXPECT_EQ(c.at("col2im"), OpClass::kNative);      // Has an MPS kernel now: dropped from the list.
  EXPECT_EQ(c.at("_fused_adam_"), OpClass::kNative);
}

}  // namespace
}  // namespace dt::coverage
