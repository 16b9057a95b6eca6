#include "env/host.h"

#include <cstdlib>

#include "util/fs.h"

extern char** environ;  // NOLINT: POSIX.

namespace dt::env {

std::optional<std::string> SystemHostFiles::Read(const std::string& path) {
  auto r = ReadFile(path, std::uint64_t{16} << 20);
  if (!r.ok()) return std::nullopt;
  return std::move(r).value();
}

std::optional<std::string> SystemHostFiles::GetEnv(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

std::map<std::string, std::string> SystemHostFiles::Environment() {
  std::map<std::string, std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    out[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return out;
}

void ReplayHost::AddCommand(const std::string& key, std::string out, int exit_code,
                            std::string err) {
  ProcessResult r;
  r.exit_code = exit_code;
  r.out = std::move(out);
  r.err = std::move(err);
  commands_[key] = std::move(r);
}

Result<ProcessResult> ReplayHost::Run(const std::vector<std::string>& argv,
                                      const ProcessOptions& /*options*/) {
  std::string joined;
  for (const auto& a : argv) {
    if (!joined.empty()) joined += ' ';
    joined += a;
  }
  calls_.push_back(joined);
  if (auto it = commands_.find(joined); it != commands_.end()) return it->second;
  for (const auto& [key, result] : commands_) {
    if (!key.empty() && key.back() == '*' &&
        joined.compare(0, key.size() - 1, key, 0, key.size() - 1) == 0) {
      return result;
    }
  }
  return MakeError(ErrorCode::kIo, "'" + (argv.empty() ? std::string() : argv[0]) +
                                       "' not found on PATH");
}

std::optional<std::filesystem::path> ReplayHost::Which(const std::string& name) {
  if (auto it = programs_.find(name); it != programs_.end()) return it->second;
  return std::nullopt;
}

std::optional<std::string> ReplayHost::Read(const std::string& path) {
  if (auto it = files_.find(path); it != files_.end()) return it->second;
  return std::nullopt;
}

std::optional<std::string> ReplayHost::GetEnv(const std::string& name) {
  if (auto it = env_.find(name); it != env_.end()) return it->second;
  return std::nullopt;
}

}  // namespace dt::env
