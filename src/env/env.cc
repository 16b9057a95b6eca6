#include "env/env.h"

#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <sstream>

#include "util/json_fields.h"
#include "util/strings.h"

namespace dt::env {
namespace {

using nlohmann::json;

// Runs a probe command; nullopt when it is missing, failed or timed out.
std::optional<std::string> Output(CommandRunner& runner, const std::vector<std::string>& argv,
                                  std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  ProcessOptions opts;
  opts.timeout = timeout;
  opts.max_output_bytes = 4u << 20;
  auto r = runner.Run(argv, opts);
  if (!r.ok() || !r->Succeeded()) return std::nullopt;
  return r->out;
}

std::string FirstLine(std::string_view s) {
  s = Trim(s);
  auto nl = s.find('\n');
  return std::string(Trim(s.substr(0, nl)));
}

std::string Unquote(std::string_view v) {
  v = Trim(v);
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) {
    v = v.substr(1, v.size() - 2);
  }
  return std::string(v);
}

// "KEY: value" or "KEY=value" lines into a map (os-release, sw_vers, cpuinfo).
std::map<std::string, std::string> KeyValues(std::string_view text, char sep) {
  std::map<std::string, std::string> out;
  for (auto line : Split(text, '\n')) {
    auto pos = line.find(sep);
    if (pos == std::string_view::npos) continue;
    std::string key(Trim(line.substr(0, pos)));
    if (key.empty() || out.count(key)) continue;
    out[key] = Unquote(line.substr(pos + 1));
  }
  return out;
}

std::optional<std::uint64_t> ParseU64(std::string_view s) {
  s = Trim(s);
  if (s.empty()) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return v;
}

// "81920 MiB" or "81920" (nounits) into bytes.
std::optional<std::uint64_t> ParseMemory(std::string_view s) {
  s = Trim(s);
  std::uint64_t scale = std::uint64_t{1} << 20;  // nvidia-smi reports MiB.
  for (auto [suffix, mult] : {std::pair<std::string_view, std::uint64_t>{"MiB", 1ull << 20},
                              {"GiB", 1ull << 30},
                              {"KiB", 1ull << 10}}) {
    if (EndsWith(s, suffix)) {
      s = Trim(s.substr(0, s.size() - suffix.size()));
      scale = mult;
    }
  }
  auto v = ParseU64(s);
  if (!v) return std::nullopt;
  return *v * scale;
}

void ProbeLinuxHost(CommandRunner& runner, HostFiles& files, HostInfo& host) {
  if (auto text = files.Read("/etc/os-release")) {
    auto kv = KeyValues(*text, '=');
    host.os_version = kv.count("PRETTY_NAME") ? kv["PRETTY_NAME"]
                                              : std::string(Trim(kv["NAME"] + " " + kv["VERSION"]));
  }
  if (auto text = files.Read("/proc/cpuinfo")) {
    int processors = 0;
    for (auto line : Split(*text, '\n')) {
      auto colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      auto key = Trim(line.substr(0, colon));
      auto value = Trim(line.substr(colon + 1));
      if (key == "processor") ++processors;
      if (host.cpu.empty() && (key == "model name" || key == "Model" || key == "cpu model")) {
        host.cpu = std::string(value);
      }
    }
    host.cores = processors;
  }
  if (host.cores == 0) {
    if (auto n = Output(runner, {"getconf", "_NPROCESSORS_ONLN"})) {
      host.cores = static_cast<int>(ParseU64(*n).value_or(0));
    }
  }
  if (auto text = files.Read("/proc/meminfo")) {
    for (auto line : Split(*text, '\n')) {
      if (!StartsWith(line, "MemTotal:")) continue;
      auto rest = Trim(line.substr(9));
      if (EndsWith(rest, "kB")) rest = Trim(rest.substr(0, rest.size() - 2));
      host.memory_bytes = ParseU64(rest).value_or(0) * 1024;
    }
  }
}

void ProbeMacHost(CommandRunner& runner, HostInfo& host) {
  if (auto out = Output(runner, {"sw_vers"})) {
    auto kv = KeyValues(*out, ':');
    host.os_version = kv["ProductVersion"];
    if (!kv["BuildVersion"].empty()) host.os_version += " (" + kv["BuildVersion"] + ")";
  }
  if (auto out = Output(runner, {"sysctl", "-n", "machdep.cpu.brand_string"}))
    host.cpu = FirstLine(*out);
  if (auto out = Output(runner, {"sysctl", "-n", "hw.ncpu"})) {
    host.cores = static_cast<int>(ParseU64(FirstLine(*out)).value_or(0));
  }
  if (auto out = Output(runner, {"sysctl", "-n", "hw.memsize"})) {
    host.memory_bytes = ParseU64(FirstLine(*out)).value_or(0);
  }
  // Present (1) on Apple Silicon even when asked from a translated process.
  if (auto out = Output(runner, {"sysctl", "-n", "hw.optional.arm64"})) {
    host.apple_silicon = FirstLine(*out) == "1";
  } else {
    host.apple_silicon = false;
  }
  // Absent on Intel Macs, where nothing is translated.
  if (auto out = Output(runner, {"sysctl", "-n", "sysctl.proc_translated"})) {
    host.rosetta = FirstLine(*out) == "1";
  } else {
    host.rosetta = false;
  }
}

void ProbeNvidia(CommandRunner& runner, HostFiles& files, EnvReport& report) {
  if (auto text = files.Read("/proc/driver/nvidia/version")) {
    static const std::regex kDriver(R"(Kernel Module\s+([0-9][0-9.]*))");
    std::smatch m;
    if (std::regex_search(*text, m, kDriver)) report.cuda.driver_version = m[1].str();
  }
  auto smi = runner.Which("nvidia-smi");
  if (!smi) return;
  report.cuda.nvidia_smi_path = smi->string();
  ProcessOptions opts;
  opts.timeout = std::chrono::seconds(20);
  auto r = runner.Run({"nvidia-smi", "--query-gpu=name,driver_version,memory.total,compute_cap",
                       "--format=csv,noheader"},
                      opts);
  if (!r.ok() || !r->Succeeded()) {
    std::string why = r.ok() ? FirstLine(r->out.empty() ? r->err : r->out) : r.error().message;
    if (r.ok() && r->timed_out) why = "timed out";
    report.cuda.nvidia_smi_error =
        why.empty() ? "exit status " + std::to_string(r->exit_code) : why;
    return;
  }
  for (auto line : Split(r->out, '\n')) {
    if (Trim(line).empty()) continue;
    auto cols = Split(line, ',');
    if (cols.size() < 3) continue;
    GpuInfo gpu;
    gpu.vendor = "nvidia";
    gpu.name = std::string(Trim(cols[0]));
    gpu.driver = std::string(Trim(cols[1]));
    gpu.memory_bytes = ParseMemory(cols[2]);
    if (cols.size() >= 4 && Trim(cols[3]) != "[N/A]")
      gpu.compute_capability = std::string(Trim(cols[3]));
    if (!report.cuda.driver_version) report.cuda.driver_version = gpu.driver;
    report.gpus.push_back(std::move(gpu));
  }
}

std::string MetalName(std::string_view v) {
  // system_profiler writes "spdisplays_metal3"; older releases "spdisplays_supported".
  if (StartsWith(v, "spdisplays_metal")) return "Metal " + std::string(v.substr(16));
  if (v == "spdisplays_supported") return "Metal";
  return std::string(v);
}

void ProbeAppleGpus(CommandRunner& runner, EnvReport& report) {
  auto out =
      Output(runner, {"system_profiler", "SPDisplaysDataType", "-json"}, std::chrono::seconds(30));
  if (!out) return;
  json j = json::parse(*out, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("SPDisplaysDataType") || !j["SPDisplaysDataType"].is_array())
    return;
  for (const auto& item : j["SPDisplaysDataType"]) {
    if (!item.is_object()) continue;
    auto str = [&](const char* key) -> std::optional<std::string> {
      if (item.contains(key) && item[key].is_string()) return item[key].get<std::string>();
      return std::nullopt;
    };
    GpuInfo gpu;
    std::string vendor = str("spdisplays_vendor").value_or(str("sppci_vendor").value_or(""));
    gpu.name = str("sppci_model").value_or(str("_name").value_or("unknown GPU"));
    bool apple = vendor.find("Apple") != std::string::npos || StartsWith(gpu.name, "Apple");
    if (vendor.find("NVIDIA") != std::string::npos || vendor.find("10de") != std::string::npos) {
      gpu.vendor = "nvidia";
    } else if (apple) {
      gpu.vendor = "apple";
    } else {
      gpu.vendor = vendor.empty() ? "unknown" : vendor;
    }
    if (auto cores = str("sppci_cores")) {
      if (auto n = ParseU64(*cores)) gpu.cores = static_cast<int>(*n);
    }
    if (auto metal = str("spdisplays_mtlgpufamilysupport"))
      gpu.metal = MetalName(*metal);
    else if (auto metal2 = str("spdisplays_metal"))
      gpu.metal = MetalName(*metal2);
    if (auto vram = str("spdisplays_vram")) {
      // "8 GB"; Apple GPUs share unified memory and report none.
      auto parts = Split(*vram, ' ');
      if (parts.size() == 2) {
        if (auto n = ParseU64(parts[0])) gpu.memory_bytes = *n << (parts[1] == "GB" ? 30 : 20);
      }
    }
    report.gpus.push_back(std::move(gpu));
  }
}

void ProbeCuda(CommandRunner& runner, HostFiles& files, EnvReport& report) {
  auto& cuda = report.cuda;
  cuda.cuda_home = files.GetEnv("CUDA_HOME");
  if (!cuda.cuda_home) cuda.cuda_home = files.GetEnv("CUDA_PATH");
  if (auto nvcc = runner.Which("nvcc")) {
    cuda.nvcc_path = nvcc->string();
  } else if (cuda.cuda_home && runner.Which(*cuda.cuda_home + "/bin/nvcc")) {
    cuda.nvcc_path = *cuda.cuda_home + "/bin/nvcc";
  }
  if (cuda.nvcc_path) {
    if (auto out = Output(runner, {*cuda.nvcc_path, "--version"})) {
      static const std::regex kRelease(R"(release ([0-9]+\.[0-9]+))");
      std::smatch m;
      if (std::regex_search(*out, m, kRelease)) cuda.nvcc_version = m[1].str();
    }
  }
  std::vector<std::string> dirs;
  if (cuda.cuda_home) dirs.push_back(*cuda.cuda_home + "/include");
  if (cuda.nvcc_path) {
    std::filesystem::path bin = std::filesystem::path(*cuda.nvcc_path).parent_path();
    dirs.push_back((bin.parent_path() / "include").string());
  }
  for (const char* d :
       {"/usr/local/cuda/include", "/usr/include", "/usr/include/x86_64-linux-gnu"}) {
    dirs.emplace_back(d);
  }
  static const std::regex kMajor(R"(#define\s+CUDNN_MAJOR\s+([0-9]+))");
  static const std::regex kMinor(R"(#define\s+CUDNN_MINOR\s+([0-9]+))");
  static const std::regex kPatch(R"(#define\s+CUDNN_PATCHLEVEL\s+([0-9]+))");
  for (const auto& dir : dirs) {
    for (const char* header : {"/cudnn_version.h", "/cudnn.h"}) {
      auto text = files.Read(dir + header);
      if (!text) continue;
      std::smatch a, b, c;
      if (!std::regex_search(*text, a, kMajor)) continue;
      std::string v = a[1].str();
      if (std::regex_search(*text, b, kMinor)) v += "." + b[1].str();
      if (std::regex_search(*text, c, kPatch)) v += "." + c[1].str();
      cuda.cudnn_version = v;
      return;
    }
  }
}

bool TrueField(const json& j, const char* k) {
  return j.contains(k) && j[k].is_boolean() && j[k].get<bool>();
}

// The probe's {"kind": "python"} line.
void ReadPythonFacts(const json& j, PythonInfo& py) {
  py.found = true;
  if (auto p = JsonOptString(j, "path"); p && !p->empty()) py.path = *p;
  py.version = JsonOptString(j, "version");
  py.platform = JsonOptString(j, "platform");
  py.arch = JsonOptString(j, "arch");
  if (j.contains("translated") && j["translated"].is_boolean())
    py.translated = j["translated"].get<bool>();
}

// The probe's {"kind": "torch"} line.
void ReadTorchFacts(const json& j, TorchInfo& t) {
  t.installed = j.value("installed", false);
  t.version = JsonOptString(j, "version");
  t.cuda_version = JsonOptString(j, "cuda_version");
  t.cudnn_version = JsonOptString(j, "cudnn_version");
  t.cuda_available = TrueField(j, "cuda_available");
  if (j.contains("cuda_devices") && j["cuda_devices"].is_array()) {
    for (const auto& d : j["cuda_devices"]) {
      if (d.is_string()) t.cuda_devices.push_back(d.get<std::string>());
    }
  }
  t.mps_built = TrueField(j, "mps_built");
  t.mps_available = TrueField(j, "mps_available");
  t.error = JsonOptString(j, "error");
}

// How a probe that did not finish cleanly ended, in words; empty when it exited 0.
std::string HowItEnded(const ProcessResult& r, std::chrono::milliseconds timeout) {
  if (r.timed_out) return "timed out after " + std::to_string(timeout.count() / 1000) + " s";
  if (r.term_signal != 0) return "was killed by signal " + std::to_string(r.term_signal);
  if (r.exit_code != 0) return "exited with status " + std::to_string(r.exit_code);
  return "";
}

void ProbePython(CommandRunner& runner, const EnvOptions& options, EnvReport& report) {
  auto& py = report.python;
  py.requested = options.python;
  std::string exe = options.python;
  if (exe.find('/') == std::string::npos) {
    auto found = runner.Which(exe);
    if (!found) {
      py.error = "'" + exe + "' is not on PATH";
      return;
    }
    exe = found->string();
  }
  py.path = exe;
  ProcessOptions opts;
  opts.timeout = options.probe_timeout;
  // The probe must see torch as the user's scripts do, but never the user's startup hooks.
  opts.unset_env = {"PYTHONSTARTUP"};
  auto r = runner.Run({exe, "-c", PythonProbeScript()}, opts);
  if (!r.ok()) {
    py.error = r.error().message;
    return;
  }
  bool saw_python = false, saw_torch = false;
  for (auto line : Split(r->out, '\n')) {
    if (Trim(line).empty()) continue;
    json j = json::parse(line, nullptr, false);
    if (!j.is_object()) continue;
    const std::string kind = JsonOptString(j, "kind").value_or("");
    if (kind == "python") {
      saw_python = true;
      ReadPythonFacts(j, py);
    } else if (kind == "torch") {
      saw_torch = true;
      ReadTorchFacts(j, report.torch);
    }
  }
  const std::string how = HowItEnded(*r, options.probe_timeout);
  std::string err_tail = FirstLine(r->err.substr(r->err.size() > 400 ? r->err.size() - 400 : 0));
  if (!saw_python) {
    py.found = false;
    py.error = "the probe " + (how.empty() ? std::string("printed nothing usable") : how) +
               (err_tail.empty() ? "" : ": " + err_tail);
    return;
  }
  if (!saw_torch) {
    // The interpreter died inside `import torch` (a segfault in a native library, an abort).
    report.torch.installed = true;
    report.torch.error = "the Python process " + (how.empty() ? "stopped" : how) +
                         " while importing torch" + (err_tail.empty() ? "" : ": " + err_tail);
  }
}

// "14.4.1 (23E224)" -> {14, 4}.
std::pair<int, int> MacVersion(const std::string& v) {
  int major = 0, minor = 0;
  std::sscanf(v.c_str(), "%d.%d", &major, &minor);  // NOLINT: a bounded numeric parse.
  return {major, minor};
}

std::string HumanBytes(std::uint64_t b) {
  if (b >= (1ull << 30)) return fmt::format("{:.1f} GiB", static_cast<double>(b) / (1ull << 30));
  if (b >= (1ull << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(b) / (1ull << 20));
  return fmt::format("{} bytes", b);
}

namespace {

void Add(EnvReport& r, std::string id, std::string level, std::string text) {
  r.conclusions.push_back({std::move(id), std::move(level), std::move(text)});
}

// GPUs and the CUDA toolchain: a GPU without nvcc, nvcc without a GPU or driver, a driver that
// fails, nvcc and torch built for different CUDA majors, no GPU at all.
void ConcludeGpus(EnvReport& r, const GpuInfo* nvidia, const GpuInfo* apple) {
  const auto& t = r.torch;
  if (nvidia) {
    Add(r, "nvidia-gpu", "info",
        fmt::format(
            "NVIDIA GPU found: {} (driver {}{}{})", nvidia->name, nvidia->driver.value_or("?"),
            nvidia->memory_bytes ? ", " + HumanBytes(*nvidia->memory_bytes) : "",
            nvidia->compute_capability ? ", compute capability " + *nvidia->compute_capability
                                       : ""));
    if (!r.cuda.nvcc_path) {
      Add(r, "gpu-without-nvcc", "info",
          "There is an NVIDIA GPU but no nvcc on PATH: prebuilt CUDA wheels run, but CUDA "
          "extensions "
          "cannot be compiled here");
    }
  } else if (r.cuda.nvcc_path) {
    std::string why = r.cuda.nvidia_smi_error
                          ? " (nvidia-smi fails: \"" + *r.cuda.nvidia_smi_error + "\")"
                          : (r.cuda.nvidia_smi_path ? "" : " (no nvidia-smi on PATH)");
    Add(r, "nvcc-without-gpu", "warning",
        fmt::format(
            "nvcc {} is installed ({}) but there is no NVIDIA GPU and driver{}: CUDA programs "
            "cannot run here; nvcc only compiles and proves nothing about the GPU",
            r.cuda.nvcc_version.value_or("(unknown version)"), *r.cuda.nvcc_path, why));
  } else if (r.cuda.nvidia_smi_error) {
    Add(r, "nvidia-driver-missing", "warning",
        fmt::format(
            "nvidia-smi is installed but fails (\"{}\"): the NVIDIA driver is not loaded, so "
            "no CUDA device is usable",
            *r.cuda.nvidia_smi_error));
  }
  if (r.cuda.nvcc_version && t.cuda_version &&
      r.cuda.nvcc_version->substr(0, r.cuda.nvcc_version->find('.')) !=
          t.cuda_version->substr(0, t.cuda_version->find('.'))) {
    Add(r, "nvcc-torch-cuda-mismatch", "warning",
        fmt::format(
            "nvcc {} and the CUDA {} torch was built with differ in major version: CUDA extensions "
            "compiled here will not load into this torch",
            *r.cuda.nvcc_version, *t.cuda_version));
  }
  if (!nvidia && !apple) {
    Add(r, "no-gpu", "info",
        fmt::format(
            "No NVIDIA or Apple GPU found on this {} {} host: only the CPU track can run here",
            r.host.os, r.host.arch));
  }
}

// A Mac: too old for MPS, an Intel CPU, dualtrack or the Python under Rosetta.
void ConcludeMac(EnvReport& r) {
  auto [major, minor] = MacVersion(r.host.os_version);
  if (major > 0 && (major < 12 || (major == 12 && minor < 3))) {
    Add(r, "macos-too-old", "blocker",
        fmt::format("macOS {} is older than 12.3: MPS needs macOS 12.3 or later",
                    r.host.os_version));
  }
  if (r.host.apple_silicon == false) {
    Add(r, "intel-mac", "warning",
        fmt::format("This Mac has an Intel CPU ({}): the Apple Silicon MPS track does not apply",
                    r.host.cpu));
  }
  if (r.host.rosetta == true) {
    Add(r, "rosetta-process", "warning",
        "dualtrack itself runs under Rosetta (sysctl.proc_translated = 1): install the arm64 "
        "build");
  }
  bool x86_python = r.python.arch && *r.python.arch == "x86_64";
  if (r.python.found &&
      (r.python.translated == true || (r.host.apple_silicon == true && x86_python))) {
    Add(r, "rosetta-python", "blocker",
        fmt::format(
            "x86-64 Python under Rosetta ({}: platform.machine() = {}{}) on an arm64 Mac: MPS "
            "unavailable; use an arm64 Python",
            r.python.path.value_or("?"), r.python.arch.value_or("?"),
            r.python.translated == true ? ", sysctl.proc_translated = 1" : ""));
  }
}

// What torch makes of CUDA here.
void ConcludeTorchCuda(EnvReport& r, const GpuInfo* nvidia) {
  const auto& t = r.torch;
  const std::string tv = t.version.value_or("?");
  if (t.cuda_available) {
    std::string devices;
    for (const auto& d : t.cuda_devices) devices += (devices.empty() ? "" : ", ") + d;
    Add(r, "torch-cuda-available", "info",
        fmt::format(
            "CUDA is available to torch {} (built with CUDA {}, cuDNN {}): {} device(s): {}", tv,
            t.cuda_version.value_or("?"), t.cudnn_version.value_or("none"), t.cuda_devices.size(),
            devices));
  } else if (nvidia && !t.cuda_version) {
    Add(r, "torch-cpu-build", "blocker",
        fmt::format(
            "torch {} is a CPU-only build (torch.version.cuda is None): it cannot use the {}", tv,
            nvidia->name));
  } else if (nvidia) {
    Add(r, "torch-cuda-unavailable", "blocker",
        fmt::format(
            "torch {} was built with CUDA {} but torch.cuda.is_available() is False: check that "
            "driver {} supports CUDA {}",
            tv, *t.cuda_version, nvidia->driver.value_or("?"), *t.cuda_version));
  } else if (t.cuda_version) {
    Add(r, "torch-cuda-no-gpu", "info",
        fmt::format(
            "torch {} was built with CUDA {} but there is no NVIDIA GPU: it runs on the CPU here",
            tv, *t.cuda_version));
  }
}

// What torch makes of MPS here, and why not where it is built but unavailable.
void ConcludeTorchMps(EnvReport& r, const GpuInfo* apple) {
  const auto& t = r.torch;
  const std::string tv = t.version.value_or("?");
  const bool mac = r.host.os == "macOS";
  if (t.mps_available) {
    std::string gpu =
        apple ? fmt::format(" ({}{})", apple->name,
                            apple->cores ? fmt::format(", {} GPU cores", *apple->cores) : "")
              : "";
    Add(r, "mps-available", "info",
        fmt::format("MPS is built and available: torch {} can use the Apple GPU{}", tv, gpu));
  } else if (t.mps_built) {
    std::string why;
    auto [major, minor] = MacVersion(r.host.os_version);
    if (!mac) {
      why = "this host is not a Mac";
    } else if (r.python.translated == true ||
               r.python.arch == std::optional<std::string>("x86_64")) {
      why = "the Python runs as x86-64 under Rosetta";
    } else if (major > 0 && (major < 12 || (major == 12 && minor < 3))) {
      why = "macOS " + r.host.os_version + " is older than 12.3";
    } else if (!apple) {
      why = "no Metal GPU was found";
    } else {
      why = "torch.backends.mps.is_available() returned False";
    }
    Add(r, "mps-built-not-available", mac ? "blocker" : "info",
        fmt::format("MPS is built but not available: {}", why));
  } else if (mac) {
    Add(r, "mps-not-built", "blocker",
        fmt::format("torch {} was built without MPS (torch.backends.mps.is_built() is False): "
                    "install the "
                    "macOS arm64 wheel of torch",
                    tv));
  } else {
    Add(r, "mps-not-built", "info",
        fmt::format(
            "MPS is not built into torch {} and this host is not a Mac: the Apple track needs a "
            "Mac with Apple Silicon; here MPS coverage can only be predicted",
            tv));
  }
}

// PYTORCH_ENABLE_MPS_FALLBACK: set (operators may silently run on the CPU) or not.
void ConcludeFallback(EnvReport& r) {
  const auto& t = r.torch;
  const bool mac = r.host.os == "macOS";
  auto fallback = r.mps_env.find("PYTORCH_ENABLE_MPS_FALLBACK");
  if (fallback != r.mps_env.end() && fallback->second && *fallback->second == "1") {
    Add(r, "cpu-fallback", "warning",
        "CPU fallback is enabled (PYTORCH_ENABLE_MPS_FALLBACK=1): operators without an MPS kernel "
        "may "
        "silently run on the CPU; unset it to see which ones fail");
  } else if (mac && t.mps_available) {
    Add(r, "cpu-fallback-off", "info",
        "PYTORCH_ENABLE_MPS_FALLBACK is not set: an operator without an MPS kernel raises "
        "NotImplementedError instead of silently running on the CPU");
  }
}

}  // namespace

void Conclude(EnvReport& r) {
  const GpuInfo* nvidia = nullptr;
  const GpuInfo* apple = nullptr;
  for (const auto& g : r.gpus) {
    if (g.vendor == "nvidia" && !nvidia) nvidia = &g;
    if (g.vendor == "apple" && !apple) apple = &g;
  }
  ConcludeGpus(r, nvidia, apple);
  if (r.host.os == "macOS") ConcludeMac(r);
  // The chosen Python and torch.
  if (!r.python.found) {
    Add(r, "python-missing", "blocker",
        fmt::format("The Python '{}' could not be probed: {}", r.python.requested,
                    r.python.error.value_or("unknown error")));
    return;
  }
  const auto& t = r.torch;
  std::string pyname = fmt::format("{} (Python {})", r.python.path.value_or(r.python.requested),
                                   r.python.version.value_or("?"));
  if (!t.installed) {
    Add(r, "torch-missing", "warning", fmt::format("torch is not installed for {}", pyname));
  } else if (t.error) {
    Add(r, "torch-broken", "blocker",
        fmt::format("torch is installed for {} but fails to import: {}", pyname, *t.error));
  } else {
    ConcludeTorchCuda(r, nvidia);
    ConcludeTorchMps(r, apple);
  }
  ConcludeFallback(r);
}

template <class T>
json Opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

template <class T>
std::optional<T> GetOpt(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return std::nullopt;
  try {
    return j[key].get<T>();
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

template <class T>
T Get(const json& j, const char* key, T fallback) {
  return GetOpt<T>(j, key).value_or(fallback);
}

}  // namespace

Result<EnvReport> Diagnose(CommandRunner& runner, HostFiles& files, const EnvOptions& options) {
  EnvReport report;
  auto& host = report.host;
  if (auto out = Output(runner, {"uname", "-s", "-r", "-m"})) {
    std::string line = FirstLine(*out);
    auto parts = Split(line, ' ');
    if (parts.size() >= 3) {
      host.os = std::string(parts[0]);
      host.kernel = std::string(parts[1]);
      host.arch = std::string(parts[2]);
    }
  }
  if (host.os == "Darwin") {
    host.os = "macOS";
    ProbeMacHost(runner, host);
    ProbeAppleGpus(runner, report);
  } else {
    if (host.os.empty()) host.os = "unknown";
    ProbeLinuxHost(runner, files, host);
  }
  ProbeNvidia(runner, files, report);
  ProbeCuda(runner, files, report);
  ProbePython(runner, options, report);
  report.mps_env["PYTORCH_ENABLE_MPS_FALLBACK"] = files.GetEnv("PYTORCH_ENABLE_MPS_FALLBACK");
  for (const auto& [name, value] : files.Environment()) {
    if (StartsWith(name, "PYTORCH_MPS_")) report.mps_env[name] = value;
  }
  Conclude(report);
  return report;
}

Result<EnvReport> DiagnoseSystem(const EnvOptions& options) {
  SystemCommandRunner runner;
  SystemHostFiles files;
  return Diagnose(runner, files, options);
}

nlohmann::json EnvReportToJson(const EnvReport& r) {
  json gpus = json::array();
  for (const auto& g : r.gpus) {
    gpus.push_back({{"vendor", g.vendor},
                    {"name", g.name},
                    {"driver", Opt(g.driver)},
                    {"memory_bytes", Opt(g.memory_bytes)},
                    {"compute_capability", Opt(g.compute_capability)},
                    {"cores", Opt(g.cores)},
                    {"metal", Opt(g.metal)}});
  }
  json mps_env = json::object();
  for (const auto& [k, v] : r.mps_env) mps_env[k] = Opt(v);
  json conclusions = json::array();
  for (const auto& c : r.conclusions)
    conclusions.push_back({{"id", c.id}, {"level", c.level}, {"text", c.text}});
  return {
      {"schema", "dualtrack.env/1"},
      {"host",
       {{"os", r.host.os},
        {"os_version", r.host.os_version},
        {"kernel", r.host.kernel},
        {"arch", r.host.arch},
        {"cpu", r.host.cpu},
        {"cores", r.host.cores},
        {"memory_bytes", r.host.memory_bytes},
        {"rosetta", Opt(r.host.rosetta)},
        {"apple_silicon", Opt(r.host.apple_silicon)}}},
      {"gpus", gpus},
      {"cuda",
       {{"nvcc_path", Opt(r.cuda.nvcc_path)},
        {"nvcc_version", Opt(r.cuda.nvcc_version)},
        {"cuda_home", Opt(r.cuda.cuda_home)},
        {"cudnn_version", Opt(r.cuda.cudnn_version)},
        {"nvidia_smi_path", Opt(r.cuda.nvidia_smi_path)},
        {"nvidia_smi_error", Opt(r.cuda.nvidia_smi_error)},
        {"driver_version", Opt(r.cuda.driver_version)}}},
      {"python",
       {{"found", r.python.found},
        {"requested", r.python.requested},
        {"path", Opt(r.python.path)},
        {"version", Opt(r.python.version)},
        {"platform", Opt(r.python.platform)},
        {"arch", Opt(r.python.arch)},
        {"translated", Opt(r.python.translated)},
        {"error", Opt(r.python.error)}}},
      {"torch",
       {{"installed", r.torch.installed},
        {"version", Opt(r.torch.version)},
        {"cuda_version", Opt(r.torch.cuda_version)},
        {"cudnn_version", Opt(r.torch.cudnn_version)},
        {"cuda_available", r.torch.cuda_available},
        {"cuda_devices", r.torch.cuda_devices},
        {"mps_built", r.torch.mps_built},
        {"mps_available", r.torch.mps_available},
        {"error", Opt(r.torch.error)}}},
      {"mps_env", mps_env},
      {"conclusions", conclusions},
  };
}

Result<EnvReport> EnvReportFromJson(const nlohmann::json& j) {
  if (!j.is_object() || Get<std::string>(j, "schema", "") != "dualtrack.env/1") {
    return MakeError(ErrorCode::kInput, "not a dualtrack.env/1 object");
  }
  EnvReport r;
  const json empty = json::object();
  const json& h = j.contains("host") ? j["host"] : empty;
  r.host.os = Get<std::string>(h, "os", "");
  r.host.os_version = Get<std::string>(h, "os_version", "");
  r.host.kernel = Get<std::string>(h, "kernel", "");
  r.host.arch = Get<std::string>(h, "arch", "");
  r.host.cpu = Get<std::string>(h, "cpu", "");
  r.host.cores = Get<int>(h, "cores", 0);
  r.host.memory_bytes = Get<std::uint64_t>(h, "memory_bytes", 0);
  r.host.rosetta = GetOpt<bool>(h, "rosetta");
  r.host.apple_silicon = GetOpt<bool>(h, "apple_silicon");
  if (j.contains("gpus") && j["gpus"].is_array()) {
    for (const auto& g : j["gpus"]) {
      GpuInfo gpu;
      gpu.vendor = Get<std::string>(g, "vendor", "");
      gpu.name = Get<std::string>(g, "name", "");
      gpu.driver = GetOpt<std::string>(g, "driver");
      gpu.memory_bytes = GetOpt<std::uint64_t>(g, "memory_bytes");
      gpu.compute_capability = GetOpt<std::string>(g, "compute_capability");
      gpu.cores = GetOpt<int>(g, "cores");
      gpu.metal = GetOpt<std::string>(g, "metal");
      r.gpus.push_back(std::move(gpu));
    }
  }
  const json& c = j.contains("cuda") ? j["cuda"] : empty;
  r.cuda.nvcc_path = GetOpt<std::string>(c, "nvcc_path");
  r.cuda.nvcc_version = GetOpt<std::string>(c, "nvcc_version");
  r.cuda.cuda_home = GetOpt<std::string>(c, "cuda_home");
  r.cuda.cudnn_version = GetOpt<std::string>(c, "cudnn_version");
  r.cuda.nvidia_smi_path = GetOpt<std::string>(c, "nvidia_smi_path");
  r.cuda.nvidia_smi_error = GetOpt<std::string>(c, "nvidia_smi_error");
  r.cuda.driver_version = GetOpt<std::string>(c, "driver_version");
  const json& p = j.contains("python") ? j["python"] : empty;
  r.python.found = Get<bool>(p, "found", false);
  r.python.requested = Get<std::string>(p, "requested", "");
  r.python.path = GetOpt<std::string>(p, "path");
  r.python.version = GetOpt<std::string>(p, "version");
  r.python.platform = GetOpt<std::string>(p, "platform");
  r.python.arch = GetOpt<std::string>(p, "arch");
  r.python.translated = GetOpt<bool>(p, "translated");
  r.python.error = GetOpt<std::string>(p, "error");
  const json& t = j.contains("torch") ? j["torch"] : empty;
  r.torch.installed = Get<bool>(t, "installed", false);
  r.torch.version = GetOpt<std::string>(t, "version");
  r.torch.cuda_version = GetOpt<std::string>(t, "cuda_version");
  r.torch.cudnn_version = GetOpt<std::string>(t, "cudnn_version");
  r.torch.cuda_available = Get<bool>(t, "cuda_available", false);
  r.torch.cuda_devices = Get<std::vector<std::string>>(t, "cuda_devices", {});
  r.torch.mps_built = Get<bool>(t, "mps_built", false);
  r.torch.mps_available = Get<bool>(t, "mps_available", false);
  r.torch.error = GetOpt<std::string>(t, "error");
  if (j.contains("mps_env") && j["mps_env"].is_object()) {
    for (const auto& [k, v] : j["mps_env"].items()) {
      r.mps_env[k] =
          v.is_string() ? std::optional<std::string>(v.get<std::string>()) : std::nullopt;
    }
  }
  if (j.contains("conclusions") && j["conclusions"].is_array()) {
    for (const auto& x : j["conclusions"]) {
      r.conclusions.push_back({Get<std::string>(x, "id", ""), Get<std::string>(x, "level", ""),
                               Get<std::string>(x, "text", "")});
    }
  }
  return r;
}

namespace {

using Rows = std::vector<std::pair<std::string, std::string>>;

std::string Or(const std::optional<std::string>& v, const char* none) {
  return v ? *v : std::string(none);
}
std::string YesNo(bool b) { return b ? "yes" : "no"; }

// A titled block of aligned "key  value" rows.
void Section(std::ostream& out, const std::string& title, const Rows& rows) {
  out << title << "\n";
  std::size_t width = 0;
  for (const auto& row : rows) width = std::max(width, row.first.size());
  for (const auto& [k, v] : rows)
    out << "  " << k << std::string(width - k.size() + 2, ' ') << v << "\n";
}

Rows HostRows(const EnvReport& r) {
  Rows host = {{"OS", r.host.os + (r.host.os_version.empty() ? "" : ": " + r.host.os_version)},
               {"Kernel", r.host.kernel},
               {"Architecture", r.host.arch},
               {"CPU", r.host.cpu.empty() ? fmt::format("{} cores", r.host.cores)
                                          : fmt::format("{} ({} cores)", r.host.cpu, r.host.cores)},
               {"Memory", r.host.memory_bytes ? HumanBytes(r.host.memory_bytes) : "unknown"}};
  if (r.host.apple_silicon) host.emplace_back("Apple Silicon", YesNo(*r.host.apple_silicon));
  if (r.host.rosetta) host.emplace_back("Under Rosetta", YesNo(*r.host.rosetta));
  return host;
}

Rows GpuRows(const EnvReport& r) {
  Rows gpus;
  for (const auto& g : r.gpus) {
    std::string facts;
    auto addf = [&](const std::string& f) { facts += (facts.empty() ? "" : ", ") + f; };
    if (g.driver) addf("driver " + *g.driver);
    if (g.memory_bytes) addf(HumanBytes(*g.memory_bytes));
    if (g.compute_capability) addf("compute capability " + *g.compute_capability);
    if (g.cores) addf(std::to_string(*g.cores) + " cores");
    if (g.metal) addf(*g.metal);
    gpus.emplace_back(g.vendor, g.name + (facts.empty() ? "" : " (" + facts + ")"));
  }
  if (gpus.empty()) gpus.emplace_back("none", "no NVIDIA or Apple GPU found");
  return gpus;
}

Rows CudaRows(const EnvReport& r) {
  return {{"nvcc", r.cuda.nvcc_path
                       ? *r.cuda.nvcc_path + " (" + Or(r.cuda.nvcc_version, "unknown version") + ")"
                       : "not found"},
          {"CUDA_HOME", Or(r.cuda.cuda_home, "not set")},
          {"cuDNN", Or(r.cuda.cudnn_version, "not found")},
          {"nvidia-smi",
           r.cuda.nvidia_smi_path
               ? *r.cuda.nvidia_smi_path +
                     (r.cuda.nvidia_smi_error ? " (fails: " + *r.cuda.nvidia_smi_error + ")" : "")
               : "not found"},
          {"Driver", Or(r.cuda.driver_version, "none")}};
}

Rows PythonRows(const EnvReport& r) {
  Rows py = {{"Requested", r.python.requested}, {"Path", Or(r.python.path, "not found")}};
  if (r.python.found) {
    py.emplace_back("Version", Or(r.python.version, "?"));
    py.emplace_back("Platform", Or(r.python.platform, "?"));
    py.emplace_back("Architecture", Or(r.python.arch, "?"));
    if (r.python.translated) py.emplace_back("Under Rosetta", YesNo(*r.python.translated));
  }
  if (r.python.error) py.emplace_back("Error", *r.python.error);
  return py;
}

Rows TorchRows(const EnvReport& r) {
  if (!r.torch.installed) return {{"Installed", "no"}};
  if (r.torch.error) return {{"Installed", "yes, but import fails"}, {"Error", *r.torch.error}};
  std::string devices;
  for (const auto& d : r.torch.cuda_devices) devices += (devices.empty() ? "" : ", ") + d;
  return {
      {"Version", Or(r.torch.version, "?")},
      {"Built with CUDA", Or(r.torch.cuda_version, "no (CPU or MPS build)")},
      {"cuDNN", Or(r.torch.cudnn_version, "none")},
      {"CUDA available", YesNo(r.torch.cuda_available) + (devices.empty() ? "" : ": " + devices)},
      {"MPS built", YesNo(r.torch.mps_built)},
      {"MPS available", YesNo(r.torch.mps_available)}};
}

}  // namespace

std::string FormatEnvText(const EnvReport& r) {
  std::ostringstream out;
  Section(out, "Host", HostRows(r));
  Section(out, "GPUs", GpuRows(r));
  Section(out, "CUDA toolchain", CudaRows(r));
  Section(out, "Python", PythonRows(r));
  if (r.python.found) Section(out, "torch", TorchRows(r));
  Rows mps;
  for (const auto& [k, v] : r.mps_env) mps.emplace_back(k, Or(v, "not set"));
  Section(out, "MPS environment", mps);
  out << "Conclusions\n";
  for (const auto& c : r.conclusions) out << "  [" << c.level << "] " << c.text << "\n";
  return out.str();
}

}  // namespace dt::env
