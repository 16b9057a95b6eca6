// git runs programs named in a repository's own configuration (core.fsmonitor on every status,
// filter drivers when it re-reads a changed file, hooks, an external diff, a pager). A repository
// dualtrack is given is untrusted, so every git command it runs goes through SafeGitArgv, which
// overrides each of those settings on the command line (`-c` wins over the repository's files).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dt {

// `git config` arguments that list the repository's filter drivers, one "key\nvalue\0" each: run
// them (through SafeGitArgv) and pass the output to SafeGitArgv's `filter_config`.
std::vector<std::string> GitFilterListArgs();

// The argv of `git -C dir <args>` with the executable configuration neutralised: no fsmonitor,
// hooks, external diff, pager, optional index locks or submodule recursion, and every filter
// driver named in `filter_config` (the output of GitFilterListArgs) emptied and made optional.
std::vector<std::string> SafeGitArgv(const std::string& dir, const std::vector<std::string>& args,
                                     std::string_view filter_config = {});

// Runs an argv; its standard output when it succeeded, else nullopt.
using RunForOutput = std::function<std::optional<std::string>(const std::vector<std::string>&)>;

// `git <args>` in `dir` through `run`, every command by SafeGitArgv: the repository's filter
// drivers are listed once, here, and switched off in each command the returned function runs.
RunForOutput SafeGit(const std::string& dir, RunForOutput run);

}  // namespace dt
