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

}  // namespace dt::env
