#include "scan/walker.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <utility>

#include "util/fs.h"
#include "util/strings.h"

namespace dt::scan {

namespace {

struct IgnoreRule {
  std::string base;  // Directory of the .gitignore, relative; "" for the root.
  std::string pattern;
  bool negate = false;
  bool dir_only = false;
  bool anchored = false;
};

std::string_view Basename(std::string_view rel) {
  auto slash = rel.rfind('/');
  return slash == std::string_view::npos ? rel : rel.substr(slash + 1);
}

// The rules of an ignore file (a folder's .gitignore, or .git/info/exclude) read as git reads
// them: a UTF-8 byte order mark before the first pattern is skipped (git's dir.c does), CRLF lines
// work. Returns the reason when the file is there but cannot be read (a FIFO, a device: never
// waited on), so the scan can say its rules were not applied.
std::string LoadIgnoreFile(const std::string& path, const std::string& base,
                           std::vector<IgnoreRule>& rules) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return {};  // None here.
  auto text = ReadFile(path, std::uint64_t{1} << 20);
  if (!text) return "its rules are not applied: " + text.error().message;
  std::string_view body = *text;
  if (StartsWith(body, "\xEF\xBB\xBF")) body.remove_prefix(3);
  for (auto line : Split(body, '\n')) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    // Trailing spaces are insignificant unless escaped (a backslash before one keeps it).
    while (!line.empty() && line.back() == ' ' &&
           !(line.size() >= 2 && line[line.size() - 2] == '\\')) {
      line.remove_suffix(1);
    }
    if (line.empty() || line[0] == '#') continue;
    IgnoreRule r;
    r.base = base;
    if (line[0] == '!') {
      r.negate = true;
      line.remove_prefix(1);
    }
    // A leading backslash (before '#' or '!') stays: WildMatch reads it as an escape, as git does.
    if (!line.empty() && line.back() == '/') {
      r.dir_only = true;
      line.remove_suffix(1);
    }
    // "**/x" keeps its "**/" and becomes anchored below: WildMatch matches it at any depth.
    if (!line.empty() && line[0] == '/') {
      r.anchored = true;
      line.remove_prefix(1);
    }
    if (line.find('/') != std::string_view::npos) r.anchored = true;
    if (line.empty()) continue;
    r.pattern = std::string(line);
    rules.push_back(std::move(r));
  }
  return {};
}

bool Ignored(const std::vector<IgnoreRule>& rules, const std::string& rel, bool is_dir) {
  bool ignored = false;
  for (const auto& r : rules) {
    if (r.dir_only && !is_dir) continue;
    std::string_view sub = rel;
    if (!r.base.empty()) {
      if (!StartsWith(sub, r.base) || sub.size() <= r.base.size() || sub[r.base.size()] != '/')
        continue;
      sub.remove_prefix(r.base.size() + 1);
    }
    // git's wildmatch: '*' never crosses '/', '**' spans folders.
    bool match = r.anchored ? WildMatch(r.pattern, sub) : WildMatch(r.pattern, Basename(sub));
    if (match) ignored = !r.negate;
  }
  return ignored;
}

bool Excluded(const std::vector<std::string>& globs, const std::string& rel) {
  for (const auto& g : globs) {
    if (GlobMatch(g, rel)) return true;
    // "build" or "build/" excludes the whole folder.
    std::string_view d = g;
    if (!d.empty() && d.back() == '/') d.remove_suffix(1);
    if (rel == d || (StartsWith(rel, d) && rel.size() > d.size() && rel[d.size()] == '/'))
      return true;
  }
  return false;
}

class Walker {
 public:
  Walker(const WalkOptions& o, const std::function<void(WalkItem&&)>& on_item,
         std::vector<Skipped>& skipped)
      : opt_(o), on_item_(on_item), skipped_(skipped) {}

  void Root(const std::string& abs, const std::string& rel) {
    struct stat st {};
    if (::stat(abs.c_str(), &st) != 0) {
      skipped_.push_back({rel, "cannot read: " + ErrnoMessage(errno)});
      return;
    }
    if (S_ISDIR(st.st_mode)) {
      start_real_ = RealPath(abs);
      start_rel_ = rel;
      // git's per-repository excludes: at the walk's root, below every .gitignore in precedence
      // (the rules are applied in order and the last match wins, so they come first).
      if (opt_.honour_gitignore) {
        struct stat git {};
        const std::string git_dir = abs + "/.git";
        if (::stat(git_dir.c_str(), &git) == 0 && S_ISDIR(git.st_mode)) {
          if (std::string why = LoadIgnoreFile(git_dir + "/info/exclude", rel, rules_);
              !why.empty())
            skipped_.push_back(
                {rel.empty() ? ".git/info/exclude" : rel + "/.git/info/exclude", why});
        }
      }
      Dir(abs, rel, st);
    } else {
      File(abs, rel.empty() ? std::string(Basename(abs)) : rel, st);
    }
  }

 private:
  void Dir(const std::string& abs, const std::string& rel, const struct stat& st) {
    auto id = std::make_pair(static_cast<std::uint64_t>(st.st_dev),
                             static_cast<std::uint64_t>(st.st_ino));
    if (!active_.insert(id).second) {
      skipped_.push_back({rel, "symlink loop"});
      return;
    }
    std::size_t rules_before = rules_.size();
    if (opt_.honour_gitignore) {
      if (std::string why = LoadIgnoreFile(abs + "/.gitignore", rel, rules_); !why.empty()) {
        skipped_.push_back({rel.empty() ? ".gitignore" : rel + "/.gitignore", why});
      }
    }
    if (auto entries = SortedEntries(abs, rel)) {
      for (const auto& [name, type] : *entries) {
        if (name == ".git" || name == ".hg" || name == ".svn") continue;
        Entry(abs + "/" + name, rel.empty() ? name : rel + "/" + name, type);
      }
    }
    rules_.resize(rules_before);
    active_.erase(id);
  }

  // A folder's entries (name, d_type), sorted as the paths below them sort ("a.py" < "a/x.py",
  // as '.' < '/'), so the files come out in the order of their relative paths; nothing (and a
  // skip) when it cannot be read.
  std::optional<std::vector<std::pair<std::string, unsigned char>>> SortedEntries(
      const std::string& abs, const std::string& rel) {
    DIR* d = ::opendir(abs.c_str());
    if (d == nullptr) {
      skipped_.push_back(
          {rel.empty() ? "." : rel, "cannot read directory: " + ErrnoMessage(errno)});
      return std::nullopt;
    }
    std::vector<std::pair<std::string, unsigned char>> entries;
    while (struct dirent* e = ::readdir(d)) {
      std::string_view name = e->d_name;
      if (name == "." || name == "..") continue;
      entries.emplace_back(name, e->d_type);
    }
    ::closedir(d);
    auto key = [](const std::pair<std::string, unsigned char>& e, std::size_t i) {
      return i < e.first.size()                          ? static_cast<unsigned char>(e.first[i])
             : i == e.first.size() && e.second == DT_DIR ? '/'
                                                         : 0;
    };
    std::sort(entries.begin(), entries.end(), [&](const auto& a, const auto& b) {
      for (std::size_t i = 0;; ++i) {
        unsigned ka = key(a, i), kb = key(b, i);
        if (ka != kb || ka == 0) return ka < kb;
      }
    });
    return entries;
  }

  // Whether `rel` is a file named on the command line, or a folder that holds one.
  bool Named(const std::string& rel, bool is_dir) const {
    for (const std::string& n : opt_.named)
      if (is_dir ? n.size() > rel.size() && n.starts_with(rel) && n[rel.size()] == '/' : n == rel)
        return true;
    return false;
  }

  // One entry of a folder: a regular file is classified from its d_type alone; anything else is
  // stat'ed (links followed, loops and broken links listed) and walked or read.
  void Entry(std::string child_abs, std::string child_rel, unsigned char type) {
    if (type == DT_REG) {
      if (Excluded(opt_.exclude, child_rel)) return;
      if (opt_.honour_gitignore && Ignored(rules_, child_rel, false) && !Named(child_rel, false))
        return;
      if (auto kind = ClassifyFile(child_rel))
        on_item_(WalkItem{std::move(child_abs), std::move(child_rel), *kind, kUnknownSize});
      return;
    }
    struct stat lst {};
    if (::lstat(child_abs.c_str(), &lst) != 0) {
      // A path past PATH_MAX (or one unreadable) is listed, never silently left out; a file
      // deleted since the listing is simply gone.
      if (errno == ENAMETOOLONG) {
        skipped_.push_back({child_rel, "path too long for the system (" +
                                           std::to_string(child_abs.size()) +
                                           " bytes): not scanned"});
      } else if (errno != ENOENT) {
        skipped_.push_back({child_rel, "cannot stat: " + ErrnoMessage(errno)});
      }
      return;
    }
    struct stat cst = lst;
    bool link = S_ISLNK(lst.st_mode);
    if (link && ::stat(child_abs.c_str(), &cst) != 0) {
      if (errno == ELOOP)
        skipped_.push_back({child_rel, "symlink loop"});
      else if (ClassifyFile(child_rel))
        skipped_.push_back({child_rel, "broken symlink"});
      return;
    }
    bool is_dir = S_ISDIR(cst.st_mode);
    if (Excluded(opt_.exclude, child_rel)) return;
    if (opt_.honour_gitignore && Ignored(rules_, child_rel, is_dir) && !Named(child_rel, is_dir))
      return;
    if (link && !FollowLink(child_abs, child_rel, is_dir)) return;
    if (is_dir)
      Dir(child_abs, child_rel, cst);
    else
      File(child_abs, child_rel, cst);
  }

  void File(const std::string& abs, const std::string& rel, const struct stat& st) {
    auto kind = ClassifyFile(rel);
    if (!kind) return;
    if (!S_ISREG(st.st_mode)) {
      skipped_.push_back({rel, "not a regular file"});
      return;
    }
    auto size = static_cast<std::uint64_t>(st.st_size);
    if (opt_.max_file_size > 0 && size > opt_.max_file_size) {
      skipped_.push_back({rel, "larger than --max-file-size (" + std::to_string(size) + " bytes)"});
      return;
    }
    on_item_(WalkItem{abs, rel, *kind, size});
  }

  // Whether to walk or read the target of a symlink. One that resolves outside the project (and
  // outside the walked path) is listed and never opened: its text must not reach any output. A
  // folder link that stays inside the walked path is not followed either: its folder is walked
  // under its own name (scanning it twice would double its findings), or it is an ancestor (a
  // loop). File links inside are read under their own name, as before.
  bool FollowLink(const std::string& abs, const std::string& rel, bool is_dir) {
    const std::string target = RealPath(abs);
    if (target.empty()) {
      if (is_dir || ClassifyFile(rel))
        skipped_.push_back({rel, "cannot resolve symbolic link: " + ErrnoMessage(errno)});
      return false;
    }
    if (!PathWithin(target, opt_.root_real) && !PathWithin(target, start_real_)) {
      if (is_dir || ClassifyFile(rel))
        // The target is escaped here: a text report prints reasons as they are.
        skipped_.push_back(
            {rel, "symbolic link leads outside the project: -> " + EscapeControl(target)});
      return false;
    }
    if (!is_dir || !PathWithin(target, start_real_)) return true;
    const std::string parent = RealPath(abs.substr(0, abs.rfind('/')));
    if (PathWithin(parent, target)) {
      skipped_.push_back({rel, "symlink loop"});
    } else {
      std::string inner = target.substr(std::min(target.size(), start_real_.size() + 1));
      if (!start_rel_.empty()) inner = inner.empty() ? start_rel_ : start_rel_ + "/" + inner;
      skipped_.push_back({rel, "symbolic link to a folder of the project (" +
                                   (inner.empty() ? std::string(".") : inner) +
                                   "): scanned under its own name"});
    }
    return false;
  }

  const WalkOptions& opt_;
  const std::function<void(WalkItem&&)>& on_item_;
  std::vector<Skipped>& skipped_;
  std::vector<IgnoreRule> rules_;
  std::set<std::pair<std::uint64_t, std::uint64_t>> active_;
  std::string start_real_;  // The walked folder, resolved.
  std::string start_rel_;   // The walked folder, relative to the root.
};

// YAML that configures tools around the code (CI, linters, docs, packaging recipes), not a run:
// its `gpus:` or `image:` describe build machines, not what the experiment needs.
bool IsToolingYaml(std::string_view rel, std::string_view lower_base) {
  if (!lower_base.empty() && lower_base[0] == '.')
    return true;  // .pre-commit-config.yaml, .travis.yml
  for (std::string_view dir :
       {".github/", ".gitlab/", ".circleci/", ".azure-pipelines/", ".buildkite/", ".devcontainer/",
        ".ci/", "conda-recipe/", "conda.recipe/", "recipe/", ".readthedocs/", "docs/", "doc/"}) {
    if (StartsWith(rel, dir) || rel.find("/" + std::string(dir)) != std::string_view::npos)
      return true;
  }
  for (std::string_view name : {"mkdocs.yml",
                                "mkdocs.yaml",
                                "codecov.yml",
                                "codecov.yaml",
                                "azure-pipelines.yml",
                                "azure-pipelines.yaml",
                                "bitbucket-pipelines.yml",
                                "appveyor.yml",
                                "action.yml",
                                "action.yaml",
                                "meta.yaml",
                                "meta.yml",
                                "_config.yml",
                                "readthedocs.yml",
                                "readthedocs.yaml",
                                "dependabot.yml",
                                "citation.yml",
                                "mkdocs-material.yml",
                                "pubspec.yaml",
                                "pnpm-lock.yaml",
                                "pnpm-workspace.yaml",
                                "jitpack.yml",
                                "netlify.yml"}) {
    if (lower_base == name) return true;
  }
  return false;
}

}  // namespace

std::optional<FileKind> ClassifyFile(std::string_view rel) {
  std::string_view base = Basename(rel);
  std::string lower = Lower(base);
  std::string_view ext;
  if (auto dot = lower.rfind('.'); dot != std::string::npos)
    ext = std::string_view(lower).substr(dot);
  if (lower == "setup.py") return FileKind::kSetupPy;
  if (ext == ".py" || ext == ".pyi") return FileKind::kPython;
  if (ext == ".ipynb") return FileKind::kNotebook;
  if (ext == ".c" || ext == ".cc" || ext == ".cpp" || ext == ".cxx" || ext == ".h" ||
      ext == ".hh" || ext == ".hpp" || ext == ".hxx" || ext == ".cu" || ext == ".cuh" ||
      ext == ".inl")
    return FileKind::kCpp;
  if (lower == "cmakelists.txt" || ext == ".cmake") return FileKind::kCMake;
  if (lower == "pyproject.toml") return FileKind::kPyproject;
  if (lower == "setup.cfg") return FileKind::kSetupCfg;
  if ((StartsWith(lower, "requirements") || StartsWith(lower, "constraints") ||
       EndsWith(lower, "requirements.txt")) &&
      (ext == ".txt" || ext == ".in"))
    return FileKind::kRequirements;
  if (rel.find("requirements/") != std::string_view::npos && ext == ".txt")
    return FileKind::kRequirements;
  if ((StartsWith(lower, "environment") || StartsWith(lower, "conda") ||
       StartsWith(lower, "env")) &&
      (ext == ".yml" || ext == ".yaml"))
    return FileKind::kConda;
  if (lower == "dockerfile" || StartsWith(lower, "dockerfile.") || ext == ".dockerfile" ||
      lower == "containerfile")
    return FileKind::kDocker;
  if (lower == ".gitmodules") return FileKind::kGitmodules;
  if (ext == ".yml" || ext == ".yaml") {
    if (StartsWith(lower, "docker-compose") || StartsWith(lower, "compose.") ||
        EndsWith(lower, ".compose.yml") || EndsWith(lower, ".compose.yaml") ||
        lower == "cog.yaml")  // Replicate's Cog: a container spec too (`build: gpu: true`).
      return FileKind::kCompose;
    if (IsToolingYaml(rel, lower)) return std::nullopt;
    return FileKind::kConfigYaml;
  }
  if (ext == ".sh" || ext == ".bash" || ext == ".zsh" || ext == ".slurm" || ext == ".sbatch" ||
      ext == ".mk" || lower == "makefile" || lower == "gnumakefile")
    return FileKind::kShell;
  return std::nullopt;
}

void Walk(const std::filesystem::path& path, const std::string& rel_prefix,
          const WalkOptions& options, const std::function<void(WalkItem&&)>& on_item,
          std::vector<Skipped>& skipped) {
  Walker w(options, on_item, skipped);
  w.Root(path.string(), rel_prefix);
}

}  // namespace dt::scan
