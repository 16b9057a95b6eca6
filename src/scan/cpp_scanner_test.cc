#include "scan/cpp_scanner.h"

#include <gtest/gtest.h>

#include <string>

#include "scan/test_registry.h"

namespace dt::scan {
namespace {

using testing::Codes;
using testing::Reg;

std::vector<Finding> Cpp(const std::string& src) {
  std::vector<Finding> out;
  FindingSink sink(Reg(), "k.cpp", src, out);
  ScanCpp(src, sink);
  return out;
}

TEST(ScanCppLinesTest, RawStringsKeepLineNumbers) {
  auto fs =
      Cpp("void usage() {\n  std::cerr << R\"xx(\nUsage: \"quoted\" )\" \n  prog a b\n)xx\";\n}\n"
          "void run() { cudaDeviceSynchronize(); }\n");
  ASSERT_EQ(Codes(fs), (std::vector<std::string>{"DT304@7"}));
  EXPECT_EQ(fs[0].snippet, "void run() { cudaDeviceSynchronize(); }");
  // No delimiter, a prefix, and CUDA names inside the raw string that must not count.
  fs = Cpp("auto s = u8R\"(cudaMalloc(\n__global__\n)\";\nint main() { cudaFree(0); }\n");
  EXPECT_EQ(Codes(fs), (std::vector<std::string>{"DT304@4"}));
  // An identifier ending in R before a string is not a raw string.
  fs = Cpp("#define STR(x) FOOR\"a\"\ncudaMalloc(0);\n");
  EXPECT_EQ(Codes(fs), (std::vector<std::string>{"DT304@2"}));
}

TEST(ScanCppLinesTest, CrOnlyAndCrlfLineEnds) {
  EXPECT_EQ(Codes(Cpp("// a\r// b\r\rcudaMalloc(0);\r")), (std::vector<std::string>{"DT304@4"}));
  EXPECT_EQ(Codes(Cpp("// a\r\n/* b\r\n */\r\ncudaMalloc(0);\r\n")),
            (std::vector<std::string>{"DT304@4"}));
  auto fs = Cpp("int a;\rint b;\r  cudaFree(0);\r");
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].line, 3);
  EXPECT_EQ(fs[0].snippet, "cudaFree(0);");
}

TEST(ScanCppLinesTest, MalformedInputDoesNotCrash) {
  Cpp("R\"abc(never closed\n\n");
  Cpp("R\"");
  Cpp("\"unterminated\n/* unterminated");
  Cpp("#define CHECK_X(x) \\");
  Cpp("void f() { AT_ASSERT(false, \"CPU\"");
  Cpp("}}}}{{{ if ( if (");
  Cpp(std::string("\x00\xff\xfe R\"(\x80", 9));
  Cpp(std::string(1 << 20, '{'));
  Cpp(std::string(1 << 20, '('));
  SUCCEED();
}

// fps.cpp of a JIT extension: the CUDA branch, then a failure for everything else.
TEST(ScanCppWrapperTest, FailureAfterCudaBranchHasNoCpuPath) {
  auto fs =
      Cpp("#include <torch/extension.h>\n"
          "at::Tensor fps(at::Tensor points, int64_t n) {\n"
          "  if (points.is_cuda()) {\n"
          "    return fps_cuda(points, n);\n"
          "  }\n"
          "  AT_ASSERT(false, \"CPU not supported\");\n"
          "  return at::Tensor();\n"
          "}\n");
  EXPECT_EQ(Codes(fs), (std::vector<std::string>{"DT320@6"}));
  EXPECT_EQ(fs[0].cls, FindingClass::kExtension);
  EXPECT_EQ(fs[0].severity, Severity::kBlocker);
  // The same in an else branch, with AT_ERROR and a message that says nothing of devices.
  fs =
      Cpp("namespace ops {\n"
          "at::Tensor ball_query(at::Tensor xyz, float r) {\n"
          "  if (xyz.device().is_cuda())\n"
          "  {\n"
          "    return ball_query_gpu(xyz, r);\n"
          "  } else {\n"
          "    AT_ERROR(\"unsupported\");\n"
          "  }\n"
          "}\n"
          "}  // namespace ops\n");
  EXPECT_EQ(Codes(fs), (std::vector<std::string>{"DT320@7"}));
  // Without braces, and a failure whose message says nothing of devices.
  fs =
      Cpp("at::Tensor f(at::Tensor x) {\n  if (x.is_cuda()) return f_cuda(x);\n"
          "  TORCH_CHECK(false, \"unsupported\");\n}\n");
  EXPECT_EQ(Codes(fs), (std::vector<std::string>{"DT320@3"}));
  // A failure whose message names the CPU, with no branch at all.
  fs =
      Cpp("struct Op {\n  static at::Tensor run(at::Tensor x) {\n"
          "    TORCH_CHECK(false, \"not implemented on CPU\");\n  }\n};\n");
  EXPECT_EQ(Codes(fs), (std::vector<std::string>{"DT320@3"}));
}

// Errors of the CUDA path itself name CUDA without rejecting other devices.
TEST(ScanCppWrapperTest, CudaErrorsAreNotRejections) {
  auto fs =
      Cpp("void a() { TORCH_CHECK(false, \"CUDA driver error: \", err); }\n"
          "void b() { TORCH_CHECK(false, \"kernel_cuda handles only int64 and float\"); }\n"
          "void c() { AT_ERROR(\"Cannot convert ScalarType to cudaDataType\"); }\n"
          "void d() { TORCH_CHECK(false, \"Cannot map SparseCsr(CPU|CUDA) to a layout\"); }\n"
          "void e() { throw std::runtime_error(\"CPU runtime error\"); }\n"
          "void f() { AT_ERROR(\"fps is only implemented for CUDA tensors\"); }\n"
          "void g() { throw std::invalid_argument(\"No CPU implementation of knn\"); }\n"
          "void h() { TORCH_CHECK(false, \"input must be a CUDA tensor\"); }\n");
  EXPECT_EQ(Codes(fs), (std::vector<std::string>{"DT320@6", "DT320@7", "DT320@8"}));
}

TEST(ScanCppWrapperTest, CudaChecksWithoutAnotherBranch) {
  auto fs =
      Cpp("#define CHECK_CUDA(x) TORCH_CHECK(x.is_cuda(), #x \" must be CUDA\")\n"
          "#define CHECK_INPUT(x) \\\n  CHECK_CUDA(x);      \\\n  CHECK_CONTIGUOUS(x)\n"
          "at::Tensor fwd(at::Tensor x) {\n"
          "  CHECK_INPUT(x);\n"
          "  CHECK_INPUT(x);\n"
          "  return fwd_cuda(x);\n"
          "}\n"
          "at::Tensor bwd(at::Tensor g) {\n"
          "  TORCH_CHECK(g.device().type() == at::kCUDA, \"g must be on the GPU\");\n"
          "  return bwd_cuda(g);\n"
          "}\n");
  // The macro's own definition keeps DT307; each rejecting check is reported (each names an input).
  EXPECT_EQ(Codes(fs), (std::vector<std::string>{"DT307@1", "DT320@6", "DT320@7", "DT320@11"}));
}

TEST(ScanCppLinesTest, CudaCallsInConditionsCount) {
  auto fs =
      Cpp("void f() {\n  if (cudaMalloc(&p, n) != cudaSuccess) return;\n"
          "  for (int i = 0; i < cudaDeviceCount(); ++i) {}\n  if (x.is_cuda()) g(x);\n}\n");
  EXPECT_EQ(Codes(fs), (std::vector<std::string>{"DT304@2", "DT304@3"}));
}

TEST(ScanCppWrapperTest, DeviceBranchWithCpuImplementationIsNotARejection) {
  auto fs =
      Cpp("at::Tensor fwd(at::Tensor x) {\n"
          "  if (x.is_cuda()) {\n"
          "    CHECK_CUDA(x);\n"
          "    return fwd_cuda(x);\n"
          "  } else {\n"
          "    return fwd_cpu(x);\n"
          "  }\n"
          "}\n"
          "at::Tensor g(at::Tensor x) {\n"
          "  TORCH_CHECK(x.dim() == 2, \"x must be 2-D\");\n"
          "  switch (x.scalar_type()) { default: AT_ERROR(\"unsupported dtype\"); }\n"
          "  if (x.is_cpu()) return g_cpu(x);\n"
          "  CHECK_CUDA(x);\n"
          "  return g_cuda(x);\n"
          "}\n");
  EXPECT_EQ(Codes(fs),
            (std::vector<std::string>{}));  // The CUDA implementation in a .cu file checks its
                                            // inputs; the wrapper decides, not it.
  std::string cu =
      "void launch(at::Tensor x) {\n  CHECK_CUDA(x);\n  k<<<1, 1>>>(x.data_ptr<float>());\n}\n";
  std::vector<Finding> out;
  FindingSink sink(Reg(), "ops/k.cu", cu, out);
  ScanCpp(cu, sink);
  EXPECT_EQ(Codes(out), (std::vector<std::string>{"DT303@3"}));
}

TEST(ScanCppWrapperTest, CudaSourceFileAndOpLibrary) {
  // A .cu host wrapper that names no CUDA API is still nvcc-only source: one finding, line 1.
  std::string cu =
      "#include \"knn.h\"\n\nat::Tensor dist(const at::Tensor& p) { return knn(p); }\n";
  std::vector<Finding> out;
  FindingSink sink(Reg(), "simple_knn/spatial.cu", cu, out);
  ScanCpp(cu, sink);
  EXPECT_EQ(Codes(out), (std::vector<std::string>{"DT303@1"}));
  // The same text in a .cpp file is plain C++.
  EXPECT_EQ(Codes(Cpp(cu)), (std::vector<std::string>{}));
  // TORCH_LIBRARY(ns, m) declares torch.ops.ns, with a CPU build when the file is not CUDA source.
  std::string lib = "TORCH_LIBRARY(detectron2, m) {\n  m.def(\"nms_rotated\", &nms_rotated);\n}\n";
  std::vector<Finding> none;
  FindingSink lib_sink(Reg(), "csrc/vision.cpp", lib, none);
  ScanCpp(lib, lib_sink);
  ASSERT_EQ(lib_sink.cuda_modules().size(), 1u);
  EXPECT_EQ(lib_sink.cuda_modules()[0].module, "torch.ops.detectron2");
  EXPECT_TRUE(lib_sink.cuda_modules()[0].cpu_build);
  EXPECT_EQ(lib_sink.cuda_modules()[0].line, 1);
}

TEST(ScanCppTest, KernelsApisAndIncludesButNotCommentsOrStrings) {
  std::string src =
      "#include <cuda_runtime.h>\n"
      "#include <thrust/sort.h>\n"
      "// cudaMalloc in a comment\n"
      "/* __global__ */ const char* s = \"cudaFree\";\n"
      "__global__ void k() {}\n"
      "void f() { cudaMalloc(&p, 4); k<<<1, 1>>>(); }\n";
  std::vector<Finding> out;
  FindingSink sink(Reg(), "k.cu", src, out);
  ScanCpp(src, sink);
  EXPECT_EQ(Codes(out),
            (std::vector<std::string>{"DT304@1", "DT308@2", "DT303@5", "DT304@6", "DT303@6"}));
}

TEST(ScanCMakeTest, CudaLanguageAndArchitectures) {
  std::string src =
      "# enable_language(CUDA) in a comment\nproject(x LANGUAGES CXX CUDA)\n"
      "find_package(CUDAToolkit REQUIRED)\nset_target_properties(k PROPERTIES CUDA_ARCHITECTURES "
      "80)\n";
  std::vector<Finding> out;
  FindingSink sink(Reg(), "CMakeLists.txt", src, out);
  ScanCMake(src, sink);
  EXPECT_EQ(Codes(out), (std::vector<std::string>{"DT306@2", "DT306@3", "DT302@4"}));
}

TEST(ScanCMakeTest, OptionalCudaIsGuarded) {
  // CUDA only where it is chosen (an option OFF by default) or found (check_language, the find
  // modules); the else of a negation and the rest after an early return() too.
  std::string src =
      "option(WITH_CUDA \"Build the CUDA kernels (needs nvcc)\" OFF)\n"  // 1
      "option(USE_GPU \"Build for the GPU\" ON)\n"
      "if(WITH_CUDA)\n"
      "  enable_language(CUDA)\n"  // 4: guarded
      "endif()\n"
      "if(USE_GPU)\n"
      "  find_package(CUDAToolkit REQUIRED)\n"  // 7: ON by default: not guarded
      "endif()\n"
      "include(CheckLanguage)\n"
      "check_language(CUDA)\n"
      "if(CMAKE_CUDA_COMPILER AND NOT APPLE)\n"
      "  target_link_libraries(k PRIVATE\n"
      "    CUDA::cudart)\n"  // 13: guarded, on a continuation line
      "elseif(UNIX)\n"
      "  find_package(CUDA)\n"  // 15: another branch: not guarded
      "endif()\n"
      "if(NOT CMAKE_CUDA_COMPILER)\n"
      "  message(STATUS \"no CUDA\")\n"
      "else()\n"
      "  set_target_properties(k PROPERTIES CUDA_ARCHITECTURES 80)\n"  // 20: guarded
      "endif()\n"
      "if(WITH_CUDA OR USE_GPU)\n"
      "  enable_language(CUDA)\n"  // 23: not every alternative is a CUDA check
      "endif()\n"
      "if(NOT CUDAToolkit_FOUND)\n"
      "  return()\n"
      "endif()\n"
      "#[[ if(WITH_CUDA)\n"
      "endif() ]]\n"
      "enable_language(CUDA)\n";  // 30: after the early return: guarded
  std::vector<Finding> out;
  FindingSink sink(Reg(), "CMakeLists.txt", src, out);
  ScanCMake(src, sink);
  ASSERT_EQ(Codes(out), (std::vector<std::string>{"DT306@4", "DT306@7", "DT306@13", "DT306@15",
                                                  "DT302@20", "DT306@23", "DT306@30"}));
  std::vector<bool> guarded;
  for (const auto& f : out) guarded.push_back(f.guarded);
  EXPECT_EQ(guarded, (std::vector<bool>{true, false, true, false, true, false, true}));
  EXPECT_EQ(out[0].severity, Severity::kPortable);
}

}  // namespace
}  // namespace dt::scan
