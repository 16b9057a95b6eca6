#include "util/git.h"

#include <set>

#include "util/strings.h"

namespace dt {

std::vector<std::string> GitFilterListArgs() {
  return {"config", "--null", "--get-regexp", R"(^filter\..*\.(clean|smudge|process)$)"};
}

namespace {

// The driver names of `filter.<name>.<key>` entries ("key\nvalue\0" each; a name may hold dots).
std::set<std::string> FilterNames(std::string_view filter_config) {
  std::set<std::string> names;
  for (std::string_view entry : Split(filter_config, '\0')) {
    std::string_view key = entry.substr(0, entry.find('\n'));
    if (!StartsWith(key, "filter.")) continue;
    key.remove_prefix(7);
    auto dot = key.rfind('.');
    if (dot != std::string_view::npos && dot > 0) names.emplace(key.substr(0, dot));
  }
  return names;
}

}  // namespace

std::vector<std::string> SafeGitArgv(const std::string& dir, const std::vector<std::string>& args,
                                     std::string_view filter_config) {
  std::vector<std::string> argv = {"git", "--no-optional-locks", "-C", dir};
  auto set = [&](std::string kv) {
    argv.emplace_back("-c");
    argv.push_back(std::move(kv));
  };
  set("core.fsmonitor=false");
  set("core.hooksPath=/dev/null");
  set("core.pager=cat");
  set("diff.external=");
  set("core.untrackedCache=false");
  set("submodule.recurse=false");
  set("status.submoduleSummary=false");
  // An empty command is no filter at all (git's convert.c); a required filter without a command
  // would fail the status, so each is made optional too.
  for (const auto& name : FilterNames(filter_config)) {
    for (const char* key : {"clean", "smudge", "process"}) set("filter." + name + "." + key + "=");
    set("filter." + name + ".required=false");
  }
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

RunForOutput SafeGit(const std::string& dir, RunForOutput run) {
  std::string filters = run(SafeGitArgv(dir, GitFilterListArgs())).value_or("");
  return [dir, filters = std::move(filters), run = std::move(run)](
             const std::vector<std::string>& args) { return run(SafeGitArgv(dir, args, filters)); };
}

}  // namespace dt
