// The recorded host of the tests (replay_host.h); a *_test.cc file, so only the test binary has it.
#include "env/replay_host.h"

#include <nlohmann/json.hpp>

#include "util/fs.h"

namespace dt::env {

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
  return MakeError(ErrorCode::kIo,
                   "'" + (argv.empty() ? std::string() : argv[0]) + "' not found on PATH");
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

namespace {

// A member of the manifest, or an empty object when absent.
const nlohmann::json& Section(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  auto it = j.find(key);
  return it == j.end() ? kEmpty : *it;
}

}  // namespace

Result<std::unique_ptr<ReplayHost>> LoadReplayHost(const std::filesystem::path& dir) {
  using nlohmann::json;
  const std::string manifest = (dir / "host.json").string();
  auto text = ReadFile(manifest, 16u << 20);
  if (!text.ok()) return text.take_error();
  auto host = std::make_unique<ReplayHost>();
  auto bad = [&](const std::string& what) { return MakeError(ErrorCode::kInput, what, manifest); };
  // Inline text, or the contents of a file named relative to the fixture.
  auto contents = [&](const json& item, const char* inline_key,
                      const char* file_key) -> Result<std::string> {
    if (item.contains(file_key)) {
      auto r = ReadFile(dir / item[file_key].get<std::string>(), 16u << 20);
      if (!r.ok()) return r.take_error();
      return std::move(r).value();
    }
    return item.value(inline_key, std::string());
  };
  try {
    json j = json::parse(*text);
    for (const auto& [name, path] : Section(j, "programs").items()) {
      host->AddProgram(name, path.get<std::string>());
    }
    for (const auto& c : Section(j, "commands")) {
      ProcessResult r;
      auto out = contents(c, "out", "out_file");
      if (!out.ok()) return out.take_error();
      r.out = std::move(*out);
      auto err = contents(c, "err", "err_file");
      if (!err.ok()) return err.take_error();
      r.err = std::move(*err);
      r.exit_code = c.value("exit", 0);
      r.term_signal = c.value("signal", 0);
      r.timed_out = c.value("timed_out", false);
      host->AddCommand(c.at("argv").get<std::string>(), std::move(r));
    }
    for (const auto& [path, file] : Section(j, "files").items()) {
      auto r = ReadFile(dir / file.get<std::string>(), 16u << 20);
      if (!r.ok()) return r.take_error();
      host->AddFile(path, std::move(*r));
    }
    for (const auto& [name, value] : Section(j, "env").items()) {
      host->SetEnv(name, value.get<std::string>());
    }
  } catch (const json::exception& e) {
    return bad(std::string("malformed replay host: ") + e.what());
  }
  return host;
}

}  // namespace dt::env
