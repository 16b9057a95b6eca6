#include "scan/entries.h"

#include <toml++/toml.h>

#include <algorithm>
#include <regex>
#include <set>
#include <system_error>

#include "util/fs.h"
#include "util/strings.h"

namespace dt::scan {

namespace fs = std::filesystem;

std::string ReadSmall(const fs::path& path) {
  auto text = ReadFile(path, std::uint64_t{4} << 20);
  return text.ok() ? *text : std::string();
}

bool IsFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// A path relative to the project, normalised, without a leading "./".
std::string NormalRel(const fs::path& p) {
  std::string rel = p.lexically_normal().generic_string();
  return StartsWith(rel, "./") ? rel.substr(2) : rel;
}

// `rel` normalised when it names a file inside the project; "" otherwise.
std::string ProjectFile(const fs::path& project, const fs::path& rel) {
  std::string cand = NormalRel(rel);
  return !cand.empty() && !StartsWith(cand, "..") && IsFile(project / cand) ? cand : "";
}

// "pkg.mod:main" -> pkg/mod.py, pkg/mod/__init__.py or src/pkg/mod.py, whichever exists.
void AddModuleScript(const fs::path& project, std::string target, std::vector<std::string>& out) {
  target = std::string(Trim(target.substr(0, target.find(':'))));
  if (target.empty()) return;
  std::replace(target.begin(), target.end(), '.', '/');
  for (const std::string& cand : {target + ".py", target + "/__init__.py", "src/" + target + ".py",
                                  target + "/__main__.py"}) {
    if (IsFile(project / cand)) {
      out.push_back(cand);
      return;
    }
  }
}

bool IsTestFile(const std::string& rel, const std::string& text) {
  return IsTestPath(rel) || text.find("unittest.main(") != std::string::npos;
}

namespace {

// Console scripts: [project.scripts] of pyproject.toml, console_scripts of setup.py.
void ConsoleScripts(const fs::path& project, std::vector<std::string>& found) {
  if (IsFile(project / "pyproject.toml")) {
    try {
      toml::table table = toml::parse_file((project / "pyproject.toml").string());
      if (const auto* scripts = table["project"]["scripts"].as_table()) {
        for (const auto& [key, node] : *scripts) {
          if (auto s = node.value<std::string>()) AddModuleScript(project, *s, found);
        }
      }
    } catch (const toml::parse_error&) {
      // ReadProjectConfig reports a malformed file; picking just finds no console scripts here.
    }
  }
  if (IsFile(project / "setup.py")) {
    // `"name = pkg.module:func"`; no raw string, which lizard (scripts/limits.py) misreads.
    static const std::regex kConsole("[\"'][\\w.-]+\\s*=\\s*([\\w.]+:[\\w.]+)[\"']");
    const std::string text = ReadSmall(project / "setup.py");
    for (std::sregex_iterator it(text.begin(), text.end(), kConsole), end; it != end; ++it) {
      AddModuleScript(project, (*it)[1].str(), found);
    }
  }
}

// Whether a top-level file is documentation whose commands tell how the project is run: the
// README, and the other guides projects keep beside it (PRETRAIN.md, GETTING_STARTED.md, ...).
bool IsTopLevelDoc(const std::string& lower_name) {
  return StartsWith(lower_name, "readme") || EndsWith(lower_name, ".md") ||
         EndsWith(lower_name, ".markdown") || EndsWith(lower_name, ".rst");
}

// Scripts named in the commands of the top-level documentation.
void DocScripts(const fs::path& project, std::vector<std::string>& found) {
  std::error_code ec;
  static const std::regex kCommand(
      "(?:python[0-9.]*|torchrun|accelerate\\s+launch|deepspeed)\\b[^\\n`]*?([\\w./-]+\\.py)\\b");
  for (const auto& entry : fs::directory_iterator(project, ec)) {
    const std::string name = Lower(entry.path().filename().string());
    if (!IsTopLevelDoc(name) || !entry.is_regular_file(ec)) continue;
    const std::string text = ReadSmall(entry.path());
    for (std::sregex_iterator it(text.begin(), text.end(), kCommand), end; it != end; ++it) {
      if (std::string rel = ProjectFile(project, (*it)[1].str()); !rel.empty())
        found.push_back(rel);
    }
  }
}

// Top-level scripts whose names say what a user runs, with a __main__ block.
void NamedScripts(const fs::path& project, std::vector<std::string>& found) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(project, ec)) {
    const std::string name = entry.path().filename().string();
    if (!EndsWith(name, ".py") || !entry.is_regular_file(ec)) continue;
    const std::string lower = Lower(name);
    const bool runnable_name =
        StartsWith(lower, "train") || lower.find("infer") != std::string::npos ||
        StartsWith(lower, "demo") || StartsWith(lower, "generate") ||
        StartsWith(lower, "predict") || StartsWith(lower, "eval") || lower == "main.py" ||
        StartsWith(lower, "finetune") || StartsWith(lower, "sample");
    if (!runnable_name) continue;
    if (ReadSmall(entry.path()).find("__main__") == std::string::npos) continue;
    found.push_back(name);
  }
}

// A script that fetches or prepares data (data/openwebtext/prepare.py, download_weights.py): run
// once before the experiments, never itself one unless the project declares it.
bool IsDataPreparation(const std::string& rel) {
  const fs::path p(rel);
  for (const fs::path& part : p.parent_path()) {
    const std::string dir = Lower(part.string());
    if (dir == "data" || dir == "dataset" || dir == "datasets" || dir == "data_utils") return true;
  }
  const std::string stem = Lower(p.stem().string());
  for (const char* prefix : {"prepare", "download", "preprocess", "make_data", "build_data",
                             "create_data", "convert", "fetch"}) {
    if (StartsWith(stem, prefix)) return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> PickEntries(const fs::path& project) {
  std::vector<std::string> found;
  ConsoleScripts(project, found);
  DocScripts(project, found);
  NamedScripts(project, found);
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const std::string& rel : found) {
    if (!seen.insert(rel).second) continue;
    if (IsTestFile(rel, ReadSmall(project / rel)) || IsDataPreparation(rel)) continue;
    out.push_back(rel);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace dt::scan
