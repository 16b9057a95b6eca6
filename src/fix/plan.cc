#include "fix/plan.h"

#include <algorithm>

#include "util/fs.h"
#include "util/strings.h"

namespace dt::fix {

namespace fs = std::filesystem;

namespace {

// Where the scan's relative file name lives: under the root folder, or the root itself when a
// single file was scanned.
fs::path SourcePath(const std::string& root, const std::string& file) {
  std::error_code ec;
  const fs::path r(root);
  if (fs::is_directory(r, ec)) return r / file;
  return r.parent_path() / file;
}

// The scan saw this text: every finding's snippet is its line, trimmed.
bool MatchesScan(std::string_view text, const std::vector<scan::Finding>& findings) {
  std::vector<std::string_view> lines;
  for (std::size_t at = 0; at <= text.size();) {
    std::size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) nl = text.size();
    lines.push_back(text.substr(at, nl - at));
    at = nl + 1;
  }
  for (const auto& f : findings) {
    if (f.line < 1 || static_cast<std::size_t>(f.line) > lines.size()) return false;
    if (f.snippet.empty()) continue;
    std::string_view line = Trim(lines[static_cast<std::size_t>(f.line - 1)]);
    if (!line.starts_with(
            std::string_view(f.snippet).substr(0, std::min<std::size_t>(f.snippet.size(), 40))))
      return false;
  }
  return true;
}

// The project folder the scan's relative names are under, its links resolved.
fs::path ResolvedRoot(const std::string& root) {
  std::error_code ec;
  const fs::path r(root);
  const fs::path dir = fs::is_directory(r, ec) ? r : r.parent_path();
  fs::path resolved = fs::weakly_canonical(fs::absolute(dir.empty() ? "." : dir, ec), ec);
  return ec ? dir : resolved;
}

}  // namespace

Status CheckInsideRoot(const fs::path& path, const fs::path& root) {
  std::error_code ec;
  const fs::path resolved = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (!ec && PathWithin(resolved.native(), root.native())) return OkStatus();
  return MakeError(ErrorCode::kInput,
                   "outside the project: a symbolic link leads out of it" +
                       (ec ? std::string() : " (to " + resolved.string() + ")") +
                       "; fix writes only inside the project, left alone",
                   path.string());
}

Result<FixPlan> PlanFixes(const scan::ScanReport& report, const FixOptions& fix_options,
                          std::ostream& warnings) {
  FixPlan plan;
  plan.root = ResolvedRoot(report.root);
  // Python files and notebooks (whose findings carry their cell).
  std::map<std::string, std::vector<scan::Finding>> by_file;
  for (const auto& f : report.findings)
    if ((f.cell ? f.file.ends_with(".ipynb") : f.file.ends_with(".py")) && !f.guarded)
      by_file[f.file].push_back(f);
  for (const auto& [file, findings] : by_file) {
    const fs::path path = SourcePath(report.root, file);
    if (auto inside = CheckInsideRoot(path, plan.root); !inside) {
      warnings << "dualtrack fix: " << EscapeControl(file) << ": "
               << EscapeControl(inside.error().message) << '\n';
      ++plan.failed;
      continue;
    }
    auto text = ReadFile(path);
    if (!text) return text.take_error();
    const bool notebook = file.ends_with(".ipynb");
    if (!notebook && !MatchesScan(*text, findings)) {
      warnings << "dualtrack fix: " << EscapeControl(file)
               << ": changed while it was scanned; left alone\n";
      ++plan.failed;
      continue;
    }
    FileFix result;
    if (notebook) {
      auto nb = FixNotebook(*text, findings, fix_options);
      if (!nb) {
        warnings << "dualtrack fix: " << EscapeControl(file) << ": "
                 << EscapeControl(nb.error().message) << '\n';
        ++plan.failed;
        continue;
      }
      result = std::move(*nb);
    } else {
      result = FixPython(*text, findings, fix_options);
    }
    for (const auto& o : result.outcomes) {
      plan.findings.push_back({file, o});
      if (o.fixed) continue;
      ++plan.left;
      plan.left_lines.push_back(file +
                                (o.cell ? ":cell " + std::to_string(*o.cell) : std::string()) +
                                ":" + std::to_string(o.line) + ": " + o.code + " " + o.note);
    }
    if (!result.changed()) continue;
    plan.fixed += result.fixed();
    plan.changes.emplace(
        file, Change{path, std::move(*text), std::move(result.text), std::move(result.replaced)});
  }
  return plan;
}

}  // namespace dt::fix
