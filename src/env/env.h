// `dualtrack env`: the host diagnosis of step 4 (OS, architecture, GPUs, CUDA toolchain, the chosen
// Python and its torch) with its conclusions in words. Usable in-process by `audit` and `report`.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "env/host.h"
#include "util/result.h"
#include "util/subprocess.h"

namespace dt::env {

struct HostInfo {
  std::string os;          // "Linux" or "macOS" (else uname -s).
  std::string os_version;  // PRETTY_NAME of os-release, or "14.4.1 (23E224)".
  std::string kernel;
  std::string arch;  // uname -m: x86_64, arm64, aarch64.
  std::string cpu;
  int cores = 0;
  std::uint64_t memory_bytes = 0;
  std::optional<bool> rosetta;        // macOS only: this process runs translated.
  std::optional<bool> apple_silicon;  // macOS only: hw.optional.arm64.
};

struct GpuInfo {
  std::string vendor;  // "nvidia" or "apple".
  std::string name;
  std::optional<std::string> driver;
  std::optional<std::uint64_t> memory_bytes;
  std::optional<std::string> compute_capability;
  std::optional<int> cores;
  std::optional<std::string> metal;  // "Metal 3" and so on.
};

struct CudaToolchain {
  std::optional<std::string> nvcc_path;
  std::optional<std::string> nvcc_version;  // "13.0".
  std::optional<std::string> cuda_home;
  std::optional<std::string> cudnn_version;
  std::optional<std::string> nvidia_smi_path;
  std::optional<std::string> nvidia_smi_error;  // nvidia-smi present but failed (no driver).
  std::optional<std::string> driver_version;    // From /proc/driver/nvidia/version or nvidia-smi.
};

struct PythonInfo {
  bool found = false;
  std::string requested;  // What --python named ("python3" by default).
  std::optional<std::string> path;
  std::optional<std::string> version;
  std::optional<std::string> platform;
  std::optional<std::string> arch;
  std::optional<bool> translated;  // Runs under Rosetta (macOS).
  std::optional<std::string> error;
};

struct TorchInfo {
  bool installed = false;
  std::optional<std::string> version;
  std::optional<std::string> cuda_version;
  std::optional<std::string> cudnn_version;
  bool cuda_available = false;
  std::vector<std::string> cuda_devices;
  bool mps_built = false;
  bool mps_available = false;
  std::optional<std::string> error;  // Import failed or crashed.
};

struct Conclusion {
  std::string id;     // Stable: "nvcc-without-gpu", "mps-not-built", ...
  std::string level;  // "info", "warning" or "blocker".
  std::string text;   // One sentence with its evidence.
};

struct EnvReport {
  HostInfo host;
  std::vector<GpuInfo> gpus;
  CudaToolchain cuda;
  PythonInfo python;
  TorchInfo torch;
  std::map<std::string, std::optional<std::string>>
      mps_env;  // PYTORCH_ENABLE_MPS_FALLBACK, PYTORCH_MPS_*.
  std::vector<Conclusion> conclusions;
};

struct EnvOptions {
  std::string python = "python3";  // A name looked up on PATH or a path.
  std::chrono::milliseconds probe_timeout{60000};
};

// Diagnoses the host through `runner` and `files`; never fails for a missing tool, Python or torch
// (those are facts to report), only for a bug.
Result<EnvReport> Diagnose(CommandRunner& runner, HostFiles& files, const EnvOptions& options);

// The real host.
Result<EnvReport> DiagnoseSystem(const EnvOptions& options);

// `dualtrack.env/1`.
nlohmann::json EnvReportToJson(const EnvReport& report);
// Reads back what EnvReportToJson wrote (for `freeze --check`); unknown fields are ignored.
Result<EnvReport> EnvReportFromJson(const nlohmann::json& j);

// Sections with aligned facts, then the conclusions.
std::string FormatEnvText(const EnvReport& report);

// The Python probe: one script, run with the chosen interpreter, printing JSON lines.
const std::string& PythonProbeScript();

}  // namespace dt::env
