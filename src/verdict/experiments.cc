#include "verdict/experiments.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <system_error>

#include "scan/entries.h"
#include "util/fs.h"
#include "util/strings.h"
#include "util/toml_fields.h"

namespace dt::verdict {

using scan::AddModuleScript;
using scan::IsFile;
using scan::NormalRel;
using scan::ProjectFile;
using scan::ReadSmall;

namespace {

namespace fs = std::filesystem;

std::string Stem(const std::string& rel) { return fs::path(rel).stem().string(); }

// A shell script's Python program: the first `python X.py`, `python -m pkg.mod`, `torchrun X.py`,
// `accelerate launch X.py` or `deepspeed X.py` command in it, with `VAR="python X.py"` assignments
// expanded where `$VAR` is used. Paths are tried from the project root, then from the script's
// folder. Written by hand: no library reads shell, and entry discovery needs only this much.
std::string ShellProgram(const fs::path& project, const std::string& rel) {
  const std::string text = ReadSmall(project / rel);
  std::map<std::string, std::string> vars;
  static const std::regex kAssign(R"(^\s*(?:export\s+)?([A-Za-z_]\w*)=(.*)$)");
  static const std::regex kVar(R"(\$\{?([A-Za-z_]\w*)\}?)");
  const fs::path dir = fs::path(rel).parent_path();
  auto resolve = [&](const std::string& word) -> std::string {
    for (const fs::path& base : {fs::path(), dir}) {
      if (std::string cand = ProjectFile(project, base / word); !cand.empty()) return cand;
    }
    return {};
  };
  std::string line;
  std::istringstream in(text);
  for (std::string raw; std::getline(in, raw);) {
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    if (!raw.empty() && raw.back() == '\\') {  // a continued command
      line += raw.substr(0, raw.size() - 1) + " ";
      continue;
    }
    line += raw;
    std::string cur = std::move(line);
    line.clear();
    const std::string_view trimmed = Trim(cur);
    if (trimmed.empty() || trimmed.front() == '#') continue;
    std::smatch m;
    if (std::regex_match(cur, m, kAssign)) {
      // `bin="python x.py"` is one word; `CUDA_VISIBLE_DEVICES=0 python x.py` is a command.
      auto value = SplitCommandLine(m[2].str());
      if (value.ok() && value->size() == 1) {
        vars[m[1].str()] = value->front();
        continue;
      }
    }
    std::string expanded;
    auto last = cur.cbegin();
    for (std::sregex_iterator it(cur.begin(), cur.end(), kVar), end; it != end; ++it) {
      expanded.append(last, (*it)[0].first);
      auto v = vars.find((*it)[1].str());
      if (v != vars.end()) expanded += v->second;
      last = (*it)[0].second;
    }
    expanded.append(last, cur.cend());
    auto words = SplitCommandLine(expanded);
    if (!words.ok()) continue;
    bool launcher = false;
    for (std::size_t i = 0; i < words->size(); ++i) {
      const std::string& w = (*words)[i];
      const std::string base = fs::path(w).filename().string();
      if (w == "|" || w == "&&" || w == "||" || w == ";") launcher = false;
      if (StartsWith(base, "python") || base == "torchrun" || base == "deepspeed" ||
          (base == "launch" && i > 0 && (*words)[i - 1] == "accelerate")) {
        launcher = true;
        continue;
      }
      if (!launcher) continue;
      if (w == "-m" && i + 1 < words->size() && !StartsWith((*words)[i + 1], "torch.")) {
        std::vector<std::string> found;
        AddModuleScript(project, (*words)[i + 1], found);
        if (!found.empty()) return found.front();
      }
      if (EndsWith(w, ".py")) {
        if (std::string script = resolve(w); !script.empty()) return script;
      }
    }
  }
  return {};
}

std::optional<std::string> TomlString(const toml::node_view<const toml::node>& node) {
  if (auto s = node.value<std::string>()) return *s;
  return std::nullopt;
}

// A designated run's length: a whole number of optimizer steps above 0.
Result<std::int64_t> PositiveSteps(const toml::node_view<const toml::node>& node,
                                   const std::string& what, const fs::path& path) {
  const std::optional<std::int64_t> n = node.value_exact<std::int64_t>();
  if (!n || *n <= 0) {
    return MakeError(ErrorCode::kInput, what + " must be a whole number of steps above 0",
                     path.string(), node.node()->source().begin.line);
  }
  return *n;
}

}  // namespace

Result<ProjectConfig> ReadProjectConfig(const fs::path& project) {
  ProjectConfig cfg;
  const fs::path path = project / "pyproject.toml";
  if (!IsFile(path)) return cfg;
  toml::table table;
  try {
    table = toml::parse_file(path.string());
  } catch (const toml::parse_error& e) {
    return MakeError(ErrorCode::kInput,
                     std::string("not valid TOML: ") + std::string(e.description()), path.string(),
                     e.source().begin.line, e.source().begin.column);
  }
  const auto tool = toml::node_view<const toml::node>(table)["tool"]["dualtrack"];
  if (auto run = tool["run"]; run) {
    if (!run.is<std::string>()) {
      return MakeError(ErrorCode::kInput, "[tool.dualtrack] run must be a string", path.string());
    }
    cfg.run = TomlString(run);
  }
  if (auto entry = tool["entry"]; entry) {
    // `entry = [1, 2]` must not become "no entry" without a word.
    auto entries = TomlStrings(*entry.node(), "[tool.dualtrack] entry", path.string());
    if (!entries) return entries.take_error();
    cfg.entry = std::move(*entries);
  }
  if (auto macs = tool["macs"]; macs) {
    auto names = TomlStrings(*macs.node(), "[tool.dualtrack] macs", path.string());
    if (!names) return names.take_error();
    cfg.macs = std::move(*names);
  }
  if (auto steps = tool["steps"]; steps) {
    auto n = PositiveSteps(steps, "[tool.dualtrack] steps", path);
    if (!n) return n.take_error();
    cfg.steps = *n;
  }
  for (const char* key : {"max_hours", "mac_memory_fraction"}) {
    auto node = tool[key];
    if (!node) continue;
    const std::optional<double> v = node.value<double>();
    const bool fraction = std::string_view(key) == "mac_memory_fraction";
    if (!v || !(*v > 0) || (fraction && *v > 1) || !std::isfinite(*v)) {
      return MakeError(ErrorCode::kInput,
                       fmt::format("[tool.dualtrack] {} must be a number {}", key,
                                   fraction ? "above 0 and at most 1" : "above 0"),
                       path.string(), node.node()->source().begin.line);
    }
    (fraction ? cfg.mac_memory_fraction : cfg.max_hours) = *v;
  }
  if (auto exps = tool["experiments"]; exps) {
    const auto* arr = exps.as_array();
    if (arr == nullptr) {
      return MakeError(ErrorCode::kInput,
                       "[tool.dualtrack] experiments must be an array of tables "
                       "([[tool.dualtrack.experiments]])",
                       path.string());
    }
    for (std::size_t i = 0; i < arr->size(); ++i) {
      const auto* t = (*arr)[i].as_table();
      const std::string where = fmt::format("[[tool.dualtrack.experiments]] #{}", i + 1);
      if (t == nullptr) {
        return MakeError(ErrorCode::kInput, where + " must be a table", path.string());
      }
      const auto view = toml::node_view<const toml::node>(*t);
      for (const auto& [key, node] : *t) {
        const std::string_view k = key.str();
        if (k != "name" && k != "entry" && k != "run" && k != "device" && k != "steps") {
          return MakeError(ErrorCode::kInput,
                           fmt::format("{} has no key '{}' (keys: name, entry, run, device, steps)",
                                       where, EscapeControl(std::string(k))),
                           path.string(), key.source().begin.line, key.source().begin.column);
        }
      }
      Experiment e;
      e.source = "declared";
      for (const char* key : {"name", "entry", "run", "device"}) {
        if (view[key] && !view[key].is<std::string>()) {
          return MakeError(ErrorCode::kInput, fmt::format("{}: {} must be a string", where, key),
                           path.string(), t->source().begin.line);
        }
      }
      e.entry = TomlString(view["entry"]).value_or("");
      e.run = TomlString(view["run"]);
      e.device = TomlString(view["device"]).value_or("");
      e.name = TomlString(view["name"]).value_or("");
      if (auto steps = view["steps"]; steps) {
        auto n = PositiveSteps(steps, where + ": steps", path);
        if (!n) return n.take_error();
        e.steps = *n;
      }
      if (e.entry.empty() && e.run) {
        if (auto words = SplitCommandLine(*e.run); words.ok()) e.entry = RunScript(*words);
      }
      if (e.entry.empty()) {
        return MakeError(ErrorCode::kInput, where + " needs an entry (the script it runs)",
                         path.string(), t->source().begin.line);
      }
      if (e.name.empty()) e.name = Stem(e.entry);
      cfg.experiments.push_back(std::move(e));
    }
  }
  return cfg;
}

std::string RunScript(const std::vector<std::string>& words) {
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w == "-m" || w == "-c") return {};
    if (EndsWith(w, ".py")) return NormalRel(w);
  }
  return {};
}

Result<std::vector<Experiment>> ResolveExperiments(const fs::path& project,
                                                   const ProjectConfig& config,
                                                   const std::vector<std::string>& entries,
                                                   const std::optional<std::string>& run) {
  std::vector<Experiment> out;
  auto add = [&](const std::string& entry, const std::string& source) {
    for (const Experiment& e : out) {
      if (e.entry == entry) return;
    }
    // A declared experiment keeps its name, run and device option even when --entry names it.
    for (const Experiment& d : config.experiments) {
      if (d.entry == entry) {
        out.push_back(d);
        return;
      }
    }
    // A shell script is judged through the Python program it starts (never run from here).
    if (EndsWith(entry, ".sh") || EndsWith(entry, ".bash")) {
      if (std::string script = ShellProgram(project, entry); !script.empty()) {
        out.push_back({Stem(entry), script, std::nullopt, "", source + " " + entry, std::nullopt});
        return;
      }
    }
    out.push_back({Stem(entry), entry, std::nullopt, "", source, std::nullopt});
  };
  if (!entries.empty()) {
    for (const std::string& e : entries) {
      const std::string rel = NormalRel(e);
      std::error_code ec;
      if (!IsFile(project / rel) && !fs::is_directory(project / rel, ec)) {
        return MakeError(ErrorCode::kUsage, "--entry: no such file or folder in the project",
                         (project / rel).string());
      }
      add(rel, "--entry");
    }
  } else if (!config.experiments.empty()) {
    out = config.experiments;
  } else if (!config.entry.empty()) {
    for (const std::string& e : config.entry) add(NormalRel(e), "[tool.dualtrack] entry");
  } else {
    for (const std::string& e : PickEntries(project)) add(e, "picked");
  }
  // The run line: --run wins over [tool.dualtrack] run; it belongs to the experiment it starts.
  std::optional<std::string> line = run ? run : config.run;
  if (line) {
    auto words = SplitCommandLine(*line);
    if (!words.ok()) return words.take_error();
    if (words->empty()) return MakeError(ErrorCode::kUsage, "the run command is empty");
    const std::string script = RunScript(*words);
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const Experiment& e) { return e.entry == script; });
    if (it != out.end()) {
      // --run replaces a declared run; [tool.dualtrack] run only fills an empty one.
      if (run || !it->run) it->run = *line;
    } else if (!script.empty() || out.empty()) {
      out.push_back(
          {script.empty() ? "run" : Stem(script), script, *line, "", "--run", std::nullopt});
    } else {
      out.front().run = *line;
    }
  }
  if (out.empty()) {
    out.push_back({"project", "", std::nullopt, "", "whole project", std::nullopt});
  }
  // Names must tell the rows apart: two "train" entries become their paths.
  for (Experiment& e : out) {
    const auto same = std::count_if(out.begin(), out.end(),
                                    [&](const Experiment& o) { return o.name == e.name; });
    if (same > 1 && !e.entry.empty()) e.name = e.entry;
  }
  return out;
}

std::string MacCommand(const Experiment& e) {
  std::vector<std::string> words;
  if (e.run) {
    if (auto w = SplitCommandLine(*e.run); w.ok()) words = *w;
  }
  // A notebook runs top to bottom under Jupyter; it has no device option to set.
  if (words.empty() && EndsWith(e.entry, ".ipynb"))
    return "jupyter nbconvert --to notebook --execute " +
           (e.entry.find_first_of(" \t'\"") == std::string::npos ? e.entry : "'" + e.entry + "'");
  if (words.empty() && !e.entry.empty()) words = {e.entry};
  if (words.empty()) return {};
  if (!StartsWith(fs::path(words[0]).filename().string(), "python")) {
    words.insert(words.begin(), "python");
  }
  bool set = false;
  for (std::size_t i = 0; i + 1 < words.size(); ++i) {
    if ((words[i] == "--device" || words[i] == "--accelerator") &&
        (words[i + 1] == "cpu" || StartsWith(words[i + 1], "cuda"))) {
      words[i + 1] = "mps";
      set = true;
    }
  }
  for (std::string& w : words) {
    if (StartsWith(w, "--device=cpu") || StartsWith(w, "--device=cuda")) {
      w = "--device=mps";
      set = true;
    }
  }
  if (!set && !e.device.empty()) {
    // "--device" is the option's name; "--device mps" or "--device=mps" is the whole setting.
    if (e.device.find_first_of(" =") == std::string::npos) {
      words.push_back(e.device);
      words.push_back("mps");
    } else if (auto w = SplitCommandLine(e.device); w.ok()) {
      words.insert(words.end(), w->begin(), w->end());
    }
  }
  std::string out;
  for (const std::string& w : words) {
    if (!out.empty()) out += ' ';
    out += w.find_first_of(" \t'\"") == std::string::npos ? w : "'" + w + "'";
  }
  return out;
}

Result<std::vector<std::string>> SplitCommandLine(const std::string& line) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote == '\'') {
      if (c == '\'') {
        quote = 0;
      } else {
        cur += c;
      }
    } else if (quote == '"') {
      if (c == '"') {
        quote = 0;
      } else if (c == '\\' && i + 1 < line.size() &&
                 (line[i + 1] == '"' || line[i + 1] == '\\' || line[i + 1] == '$')) {
        cur += line[++i];
      } else {
        cur += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < line.size()) {
      cur += line[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(cur));
      cur.clear();
      in_word = false;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (quote != 0) {
    return MakeError(ErrorCode::kUsage, fmt::format("unbalanced {} quote in \"{}\"", quote, line));
  }
  if (in_word) words.push_back(std::move(cur));
  return words;
}

}  // namespace dt::verdict
