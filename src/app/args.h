// Glue between a command's CLI11 parser and the error model.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "app/cli.h"

namespace dt {

// Parses `args` into `app` (built as `CLI::App app{description, "dualtrack NAME"}`). Returns
// nullopt when the command should go on, or the result to return at once: --help printed (kOk), or
// a usage error naming the bad option.
std::optional<Result<ExitCode>> ParseArgs(CLI::App& app, const std::vector<std::string>& args,
                                          Io& io);

}  // namespace dt
