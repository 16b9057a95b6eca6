// The command table and the dispatcher: the only place that turns errors into exit codes.
#pragma once

#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace dt {

// Exit codes scripts can rely on.
enum class ExitCode : int {
  kOk = 0,             // Done; nothing at or above the threshold.
  kFindings = 1,       // Findings, differences or a failed check at or above the user's threshold.
  kError = 2,          // Usage or input error.
  kInterrupted = 130,  // Stopped by Ctrl-C (128 + SIGINT, as a shell reports it).
};

// Where a command writes; tests pass string streams.
struct Io {
  std::ostream& out;
  std::ostream& err;
  bool out_is_tty = false;
  bool err_is_tty = false;
};

using CommandFn = Result<ExitCode> (*)(const std::vector<std::string>& args, Io& io);

struct Command {
  std::string_view name;
  std::string_view summary;  // One line, shown in `dualtrack --help`.
  CommandFn run;
};

// The commands in pipeline order; help and suggestions are generated from this table.
std::span<const Command> Commands();

// Runs `dualtrack <args...>` (args excludes the program name) and returns the process exit code.
int Dispatch(const std::vector<std::string>& args, Io& io);

}  // namespace dt
