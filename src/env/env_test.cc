#include "env/env.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "env/replay_host.h"

namespace dt::env {
namespace {

std::filesystem::path HostsDir() {
  const char* dir = std::getenv("DUALTRACK_TEST_SOURCE_DIR");
  return std::filesystem::path(dir ? dir : DUALTRACK_TEST_SOURCE_DIR) / "tests" / "env" / "hosts";
}

EnvReport Replay(const std::string& name, const EnvOptions& options = {}) {
  auto host = LoadReplayHost(HostsDir() / name);
  EXPECT_TRUE(host.ok()) << (host.ok() ? "" : host.error().ToString());
  auto r = Diagnose(**host, **host, options);
  EXPECT_TRUE(r.ok());
  return std::move(r).value();
}

const Conclusion* Find(const EnvReport& r, const std::string& id) {
  auto it = std::find_if(r.conclusions.begin(), r.conclusions.end(),
                         [&](const Conclusion& c) { return c.id == id; });
  return it == r.conclusions.end() ? nullptr : &*it;
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(EnvDiagnoseTest, RosettaPythonOnAMacInWords) {
  const std::string text = FormatEnvText(Replay("macos-rosetta-python"));
  EXPECT_TRUE(Has(text, "  apple  Apple M2 Pro (19 cores, Metal 3)\n")) << text;
  EXPECT_TRUE(Has(text, "x86-64 Python under Rosetta")) << text;
  EXPECT_TRUE(Has(text, "MPS unavailable; use an arm64 Python")) << text;
}

TEST(EnvDiagnoseTest, AppleSiliconMacWithMpsAndCpuFallback) {
  EnvReport r = Replay("macos-m2-arm64");
  EXPECT_EQ(r.host.os, "macOS");
  EXPECT_EQ(r.host.os_version, "14.4.1 (23E224)");
  EXPECT_EQ(r.host.arch, "arm64");
  EXPECT_EQ(r.host.cpu, "Apple M2 Pro");
  EXPECT_EQ(r.host.cores, 12);
  EXPECT_EQ(r.host.memory_bytes, 34359738368u);
  EXPECT_EQ(r.host.rosetta, std::optional<bool>(false));
  EXPECT_EQ(r.host.apple_silicon, std::optional<bool>(true));
  ASSERT_EQ(r.gpus.size(), 1u);
  EXPECT_EQ(r.gpus[0].vendor, "apple");
  EXPECT_EQ(r.gpus[0].name, "Apple M2 Pro");
  EXPECT_EQ(r.gpus[0].cores, std::optional<int>(19));
  EXPECT_EQ(r.gpus[0].metal, std::optional<std::string>("Metal 3"));
  EXPECT_FALSE(r.cuda.nvcc_path);
  EXPECT_TRUE(r.torch.mps_built);
  EXPECT_TRUE(r.torch.mps_available);
  EXPECT_EQ(r.mps_env.at("PYTORCH_ENABLE_MPS_FALLBACK"), std::optional<std::string>("1"));
  EXPECT_EQ(r.mps_env.at("PYTORCH_MPS_HIGH_WATERMARK_RATIO"), std::optional<std::string>("0.0"));
  const Conclusion* mps = Find(r, "mps-available");
  ASSERT_NE(mps, nullptr);
  EXPECT_TRUE(Has(mps->text, "Apple M2 Pro, 19 GPU cores"));
  const Conclusion* fallback = Find(r, "cpu-fallback");
  ASSERT_NE(fallback, nullptr);
  EXPECT_EQ(fallback->level, "warning");
  EXPECT_TRUE(Has(fallback->text, "CPU fallback is enabled"));
  EXPECT_TRUE(Has(fallback->text, "silently run on the CPU"));
  EXPECT_EQ(Find(r, "no-gpu"), nullptr);
  EXPECT_EQ(Find(r, "rosetta-python"), nullptr);
}

TEST(EnvDiagnoseTest, X86PythonUnderRosettaCannotUseMps) {
  EnvReport r = Replay("macos-rosetta-python");
  EXPECT_EQ(r.python.arch, std::optional<std::string>("x86_64"));
  EXPECT_EQ(r.python.translated, std::optional<bool>(true));
  const Conclusion* rosetta = Find(r, "rosetta-python");
  ASSERT_NE(rosetta, nullptr);
  EXPECT_EQ(rosetta->level, "blocker");
  EXPECT_TRUE(Has(rosetta->text, "x86-64 Python under Rosetta"));
  EXPECT_TRUE(Has(rosetta->text, "MPS unavailable; use an arm64 Python"));
  EXPECT_TRUE(Has(rosetta->text, "/usr/local/bin/python3.9"));
  const Conclusion* mps = Find(r, "mps-built-not-available");
  ASSERT_NE(mps, nullptr);
  EXPECT_TRUE(Has(mps->text, "MPS is built but not available"));
  EXPECT_TRUE(Has(mps->text, "Rosetta"));
  EXPECT_EQ(Find(r, "cpu-fallback"), nullptr);
}

TEST(EnvDiagnoseTest, NvidiaHostWithDriverAndCudaTorch) {
  EnvReport r = Replay("linux-nvidia-a100");
  EXPECT_EQ(r.host.os, "Linux");
  EXPECT_EQ(r.host.os_version, "Ubuntu 22.04.4 LTS");
  EXPECT_EQ(r.host.kernel, "5.15.0-91-generic");
  EXPECT_EQ(r.host.cpu, "AMD EPYC 7763 64-Core Processor");
  EXPECT_EQ(r.host.cores, 4);
  EXPECT_EQ(r.host.memory_bytes, 1056298548ull * 1024);
  EXPECT_FALSE(r.host.rosetta);
  ASSERT_EQ(r.gpus.size(), 2u);
  EXPECT_EQ(r.gpus[0].vendor, "nvidia");
  EXPECT_EQ(r.gpus[0].name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(r.gpus[0].driver, std::optional<std::string>("535.104.05"));
  EXPECT_EQ(r.gpus[0].memory_bytes, std::optional<std::uint64_t>(81920ull << 20));
  EXPECT_EQ(r.gpus[0].compute_capability, std::optional<std::string>("8.0"));
  EXPECT_EQ(r.cuda.nvcc_version, std::optional<std::string>("12.2"));
  EXPECT_EQ(r.cuda.cuda_home, std::optional<std::string>("/usr/local/cuda"));
  EXPECT_EQ(r.cuda.cudnn_version, std::optional<std::string>("8.9.7"));
  EXPECT_EQ(r.cuda.driver_version, std::optional<std::string>("535.104.05"));
  EXPECT_TRUE(r.torch.cuda_available);
  EXPECT_EQ(r.torch.cuda_devices.size(), 2u);
  ASSERT_NE(Find(r, "nvidia-gpu"), nullptr);
  EXPECT_TRUE(Has(Find(r, "nvidia-gpu")->text, "compute capability 8.0"));
  ASSERT_NE(Find(r, "torch-cuda-available"), nullptr);
  EXPECT_EQ(Find(r, "nvcc-without-gpu"), nullptr);
  EXPECT_EQ(Find(r, "no-gpu"), nullptr);
  EXPECT_EQ(Find(r, "nvcc-torch-cuda-mismatch"), nullptr);  // 12.2 and 12.1 share a major version.
  ASSERT_NE(Find(r, "mps-not-built"), nullptr);
  EXPECT_EQ(Find(r, "mps-not-built")->level, "info");
}

TEST(EnvDiagnoseTest, CpuOnlyTorchOnAGpuHostIsABlocker) {
  auto host = LoadReplayHost(HostsDir() / "linux-nvidia-a100");
  ASSERT_TRUE(host.ok());
  (*host)->AddCommand("/opt/conda/envs/train/bin/python3 -c*",
                      "{\"kind\": \"python\", \"path\": \"/usr/bin/python3\", \"version\": "
                      "\"3.10.12\", \"arch\": \"x86_64\"}\n"
                      "{\"kind\": \"torch\", \"installed\": true, \"version\": \"2.4.0+cpu\", "
                      "\"cuda_version\": null}\n");
  auto r = Diagnose(**host, **host, {});
  ASSERT_TRUE(r.ok());
  const Conclusion* c = Find(*r, "torch-cpu-build");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->level, "blocker");
  EXPECT_TRUE(Has(c->text, "2.4.0+cpu is a CPU-only build"));
}

TEST(EnvDiagnoseTest, NvccWithoutDriverProvesNothing) {
  EnvReport r = Replay("linux-nvcc-no-driver");
  EXPECT_TRUE(r.gpus.empty());
  EXPECT_EQ(r.cuda.nvcc_version, std::optional<std::string>("12.4"));
  ASSERT_TRUE(r.cuda.nvidia_smi_error);
  EXPECT_TRUE(Has(*r.cuda.nvidia_smi_error, "couldn't communicate with the NVIDIA driver"));
  const Conclusion* c = Find(r, "nvcc-without-gpu");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(Has(c->text, "nvcc 12.4 is installed"));
  EXPECT_TRUE(Has(c->text, "there is no NVIDIA GPU and driver: CUDA programs cannot run here") ||
              Has(c->text, "CUDA programs cannot run here"));
  EXPECT_TRUE(Has(c->text, "nvidia-smi fails"));
  ASSERT_NE(Find(r, "no-gpu"), nullptr);
  ASSERT_NE(Find(r, "torch-cuda-no-gpu"), nullptr);
  EXPECT_FALSE(r.torch.cuda_available);
}

TEST(EnvDiagnoseTest, TorchThatCrashesOnImportIsReportedNotFatal) {
  EnvReport r = Replay("linux-torch-crash");
  EXPECT_TRUE(r.python.found);
  EXPECT_EQ(r.python.version, std::optional<std::string>("3.10.12"));
  EXPECT_TRUE(r.torch.installed);
  ASSERT_TRUE(r.torch.error);
  EXPECT_TRUE(Has(*r.torch.error, "signal 11"));
  const Conclusion* c = Find(r, "torch-broken");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->level, "blocker");
}

TEST(EnvDiagnoseTest, MissingTorchIsAWarning) {
  EnvReport r = Replay("linux-no-torch");
  EXPECT_FALSE(r.torch.installed);
  const Conclusion* c = Find(r, "torch-missing");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(Has(c->text, "Python 3.8.10"));
  EXPECT_EQ(Find(r, "torch-broken"), nullptr);
}

TEST(EnvDiagnoseTest, MissingPythonIsReported) {
  EnvOptions options;
  options.python = "python3.99";
  EnvReport r = Replay("linux-no-torch", options);
  EXPECT_FALSE(r.python.found);
  const Conclusion* c = Find(r, "python-missing");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(Has(c->text, "python3.99"));
}

TEST(EnvDiagnoseTest, OldMacosAndGarbledOutputsDoNotCrash) {
  ReplayHost host;
  host.AddCommand("uname -s -r -m", "Darwin 20.6.0 x86_64\n");
  host.AddCommand("sw_vers", "ProductName: macOS\nProductVersion: 11.7.10\n");
  host.AddCommand("system_profiler SPDisplaysDataType -json",
                  "{\"SPDisplaysDataType\": [1, {\"_name\": 3}]");
  host.AddCommand("sysctl -n hw.memsize", "lots\n");
  host.AddProgram("python3", "/usr/bin/python3");
  host.AddCommand("/usr/bin/python3 -c*", "not json\n{\"kind\": \"python\", \"version\": 3}\n");
  auto r = Diagnose(host, host, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->host.memory_bytes, 0u);
  EXPECT_TRUE(r->gpus.empty());
  EXPECT_NE(Find(*r, "macos-too-old"), nullptr);
  EXPECT_NE(Find(*r, "intel-mac"), nullptr);
}

TEST(EnvDiagnoseTest, ProbeTimeoutIsReported) {
  ReplayHost host;
  host.AddCommand("uname -s -r -m", "Linux 6.1.0 x86_64\n");
  host.AddProgram("python3", "/usr/bin/python3");
  ProcessResult hung;
  hung.timed_out = true;
  hung.term_signal = 9;
  host.AddCommand("/usr/bin/python3 -c*", hung);
  auto r = Diagnose(host, host, {});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->python.found);
  ASSERT_TRUE(r->python.error);
  EXPECT_TRUE(Has(*r->python.error, "timed out"));
}

TEST(EnvJsonTest, RoundTripsEveryField) {
  EnvReport r = Replay("linux-nvidia-a100");
  nlohmann::json j = EnvReportToJson(r);
  EXPECT_EQ(j["schema"], "dualtrack.env/1");
  EXPECT_EQ(j["gpus"][0]["compute_capability"], "8.0");
  EXPECT_TRUE(j["host"]["rosetta"].is_null());
  EXPECT_TRUE(j["mps_env"].contains("PYTORCH_ENABLE_MPS_FALLBACK"));
  auto back = EnvReportFromJson(j);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(EnvReportToJson(*back), j);
  EXPECT_FALSE(EnvReportFromJson(nlohmann::json::array()).ok());
  EXPECT_FALSE(EnvReportFromJson({{"schema", "other/1"}}).ok());
}

TEST(EnvTextTest, SectionsAreAlignedAndConclusionsListed) {
  std::string text = FormatEnvText(Replay("macos-rosetta-python"));
  EXPECT_TRUE(Has(text, "Host\n  OS             macOS: 14.4.1 (23E224)\n")) << text;
  EXPECT_TRUE(Has(text, "GPUs\n  apple  Apple M2 Pro (19 cores, Metal 3)\n")) << text;
  EXPECT_TRUE(Has(text, "Conclusions\n  [blocker] x86-64 Python under Rosetta")) << text;
}

TEST(EnvProbeTest, ProbeRunsWithTheRealPython) {
  // The probe script is run as is by any Python 3.8+; here by the host's.
  auto py = FindInPath("python3");
  if (!py) GTEST_SKIP() << "no python3";
  ProcessOptions opts;
  opts.timeout = std::chrono::seconds(120);
  auto r = RunProcess({py->string(), "-c", PythonProbeScript()}, opts);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 0) << r->err;
  EXPECT_TRUE(Has(r->out, "\"kind\": \"python\""));
  EXPECT_TRUE(Has(r->out, "\"kind\": \"torch\""));
}

}  // namespace
}  // namespace dt::env
