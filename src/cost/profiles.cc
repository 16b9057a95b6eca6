// Device profiles: the datasheet figures of data/devices/*.json, the traced machine's measured
// peaks, and the names labs give their Macs.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <tuple>

#include "cost/cost.h"
#include "util/fs.h"
#include "util/json_fields.h"
#include "util/strings.h"

namespace dt::cost {

namespace {

using nlohmann::json;

constexpr std::uint64_t kMaxProfileBytes = 4u << 20;

std::optional<double> Positive(const json& j, const char* key) {
  if (j.is_object() && j.contains(key) && j[key].is_number() && j[key].get<double>() > 0) {
    return j[key].get<double>();
  }
  return std::nullopt;
}

Result<DeviceProfile> ParseDevice(const json& d, const std::string& file, std::size_t index) {
  const std::string where = "device " + std::to_string(index + 1);
  auto bad = [&](const std::string& what) {
    return MakeError(ErrorCode::kInput, where + ": " + what, file);
  };
  if (!d.is_object()) return bad("not an object");
  DeviceProfile p;
  p.id = JsonString(d, "id");
  p.name = JsonString(d, "name");
  if (p.id.empty() || p.name.empty()) return bad("'id' and 'name' must be non-empty strings");
  p.variant = JsonString(d, "variant");
  p.vendor = JsonString(d, "vendor");
  const auto fp32 = Positive(d, "fp32_flops");
  const auto bw = Positive(d, "memory_bytes_per_s");
  if (!fp32 || !bw) return bad("'fp32_flops' and 'memory_bytes_per_s' must be positive numbers");
  p.fp32_flops = *fp32;
  p.bytes_per_s = *bw;
  p.fp16_flops = Positive(d, "fp16_flops");
  p.bf16_flops = Positive(d, "bf16_flops");
  if (d.contains("aliases") && d["aliases"].is_array()) {
    for (const json& a : d["aliases"]) {
      if (a.is_string()) p.aliases.push_back(a.get<std::string>());
    }
  }
  if (d.contains("memory_options_gb") && d["memory_options_gb"].is_array()) {
    for (const json& m : d["memory_options_gb"]) {
      if (m.is_number() && m.get<double>() > 0) p.memory_options_gb.push_back(m.get<double>());
    }
  }
  if (d.contains("sources") && d["sources"].is_array() && !d["sources"].empty()) {
    const json& s = d["sources"].front();
    p.source = JsonString(s, "url");
    if (const std::string date = JsonString(s, "date"); !date.empty()) {
      p.source += " (" + date + ")";
    }
  }
  if (p.source.empty()) return bad("no source: every figure needs its public source");
  return p;
}

// "m3  max" and "M3 Max" are one name.
std::string Canonical(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// Splits a trailing memory size ("36GB", "36 GB", "1TB") from a name; 0 when there is none.
std::pair<std::string, double> SplitMemory(std::string_view raw) {
  std::string name = Canonical(raw);
  double scale = 0;
  if (name.size() > 2 && name.compare(name.size() - 2, 2, "gb") == 0) scale = 1;
  if (name.size() > 2 && name.compare(name.size() - 2, 2, "tb") == 0) scale = 1024;
  if (scale == 0) return {name, 0};
  std::size_t end = name.size() - 2;
  while (end > 0 && name[end - 1] == ' ') --end;
  std::size_t begin = end;
  while (begin > 0 && (std::isdigit(static_cast<unsigned char>(name[begin - 1])) != 0 ||
                       name[begin - 1] == '.')) {
    --begin;
  }
  if (begin == end) return {name, 0};
  const double size = std::strtod(name.substr(begin, end - begin).c_str(), nullptr);
  std::string rest = name.substr(0, begin);
  while (!rest.empty() && (rest.back() == ' ' || rest.back() == ',')) rest.pop_back();
  return {rest, size * scale};
}

bool Matches(const DeviceProfile& p, const std::string& name) {
  if (Canonical(p.name) == name || Canonical(p.id) == name) return true;
  if (!p.variant.empty() && Canonical(p.name + " " + p.variant) == name) return true;
  return std::any_of(p.aliases.begin(), p.aliases.end(),
                     [&](const std::string& a) { return Canonical(a) == name; });
}

}  // namespace

Result<std::vector<DeviceProfile>> LoadProfiles(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".json" && e.path().filename() != "calibration.json") {
      files.push_back(e.path());
    }
  }
  if (ec)
    return MakeError(ErrorCode::kInput, "cannot list device profiles: " + ec.message(),
                     dir.string());
  std::sort(files.begin(), files.end());
  std::vector<DeviceProfile> out;
  for (const auto& f : files) {
    auto text = ReadFile(f, kMaxProfileBytes);
    if (!text) return text.take_error();
    auto doc = ParseJson(*text, f.string());
    if (!doc) return doc.take_error();
    if (!doc->is_object() || JsonString(*doc, "schema") != "dualtrack.devices/1" ||
        !(*doc)["devices"].is_array()) {
      return MakeError(ErrorCode::kInput,
                       "not a device profile file (schema dualtrack.devices/1 with 'devices')",
                       f.string());
    }
    const json& devices = (*doc)["devices"];
    for (std::size_t i = 0; i < devices.size(); ++i) {
      auto p = ParseDevice(devices[i], f.string(), i);
      if (!p) return p.take_error();
      out.push_back(std::move(*p));
    }
  }
  return out;
}

std::optional<DeviceProfile> MeasuredProfile(const json& manifest) {
  if (!manifest.is_object() || !manifest.contains("device_peak")) return std::nullopt;
  const json& peak = manifest["device_peak"];
  const auto fp32 = Positive(peak, "matmul_fp32_flops");
  const auto bw = Positive(peak, "copy_bytes_per_s");
  if (!fp32 || !bw) return std::nullopt;
  DeviceProfile p;
  p.id = "measured";
  const std::string device = JsonString(peak, "device");
  const std::string model = JsonString(peak, "device_name");
  p.name = "this machine (" + (device.empty() ? std::string("?") : device) +
           (model.empty() ? "" : ", " + model) + ")";
  p.vendor = "measured";
  p.fp32_flops = *fp32;
  p.bytes_per_s = *bw;
  p.fp16_flops = Positive(peak, "matmul_fp16_flops");
  p.bf16_flops = Positive(peak, "matmul_bf16_flops");
  p.op_overhead_s = Positive(peak, "op_overhead_s").value_or(0);
  p.measured = true;
  p.source = "measured by the tracer after the traced step";
  return p;
}

Result<NamedDevice> ResolveDevice(const std::vector<DeviceProfile>& profiles,
                                  std::string_view name) {
  // A name may carry a size of its own ("A100 SXM 80GB"): the whole name first, then the name
  // without its trailing size.
  std::string chip = Canonical(name);
  double memory = 0;
  std::vector<const DeviceProfile*> found;
  for (int attempt = 0; attempt < 2 && found.empty(); ++attempt) {
    if (attempt == 1) std::tie(chip, memory) = SplitMemory(name);
    for (const DeviceProfile& p : profiles) {
      if (Matches(p, chip)) found.push_back(&p);
    }
  }
  if (found.empty()) {
    std::vector<std::string> names;
    names.reserve(profiles.size());
    for (const DeviceProfile& p : profiles) names.push_back(Canonical(p.name));
    std::vector<std::string_view> views(names.begin(), names.end());
    std::string closest = ClosestMatch(chip, views);
    for (const DeviceProfile& p : profiles) {
      if (!closest.empty() && Canonical(p.name) == closest) {
        closest = p.name;
        break;
      }
    }
    return MakeError(ErrorCode::kInput,
                     "unknown device '" + std::string(name) + "'" +
                         (closest.empty() ? "" : " (did you mean '" + closest + "'?)") +
                         "; names are a chip then a memory size, e.g. 'M3 Max 36GB' "
                         "(docs/devices.md lists them)");
  }
  // Of a chip's variants, the one sold with the memory size named; else the fastest.
  const DeviceProfile* chosen = *std::max_element(
      found.begin(), found.end(),
      [](const DeviceProfile* a, const DeviceProfile* b) { return a->fp32_flops < b->fp32_flops; });
  for (const DeviceProfile* p : found) {
    const auto& m = p->memory_options_gb;
    if (memory > 0 && std::find(m.begin(), m.end(), memory) != m.end() &&
        std::find(chosen->memory_options_gb.begin(), chosen->memory_options_gb.end(), memory) ==
            chosen->memory_options_gb.end()) {
      chosen = p;
    }
  }
  NamedDevice out;
  out.label = std::string(Trim(name));
  out.profile = *chosen;
  out.memory_gb = memory;
  if (out.memory_gb == 0 && !chosen->memory_options_gb.empty()) {
    out.memory_gb =
        *std::max_element(chosen->memory_options_gb.begin(), chosen->memory_options_gb.end());
  }
  return out;
}

std::optional<Calibration> LoadCalibration(const std::filesystem::path& dir) {
  auto text = ReadFile(dir / "calibration.json", kMaxProfileBytes);
  if (!text) return std::nullopt;
  auto doc = ParseJson(*text, (dir / "calibration.json").string());
  if (!doc || !doc->is_object() || !(*doc)["models"].is_array()) return std::nullopt;
  Calibration c;
  c.date = JsonString(*doc, "date");
  c.where = JsonString(*doc, "where");
  c.low = INFINITY;
  c.high = 0;
  for (const json& m : (*doc)["models"]) {
    const auto predicted = Positive(m, "predicted_s");
    const auto measured = Positive(m, "measured_s");
    if (!predicted || !measured) continue;
    const double ratio = *measured / *predicted;
    c.low = std::min(c.low, ratio);
    c.high = std::max(c.high, ratio);
    ++c.models;
  }
  if (c.models == 0) return std::nullopt;
  return c;
}

}  // namespace dt::cost
