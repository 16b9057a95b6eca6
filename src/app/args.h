// Glue between a command's CLI11 parser, its output and the error model.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/cli.h"
#include "util/fs.h"

namespace dt {

// Parses `args` into `app` (built as `CLI::App app{description, "dualtrack NAME"}`). Returns
// nullopt when the command should go on, or the result to return at once: --help printed (kOk), or
// a usage error naming the bad option.
std::optional<Result<ExitCode>> ParseArgs(CLI::App& app, const std::vector<std::string>& args,
                                          Io& io);

// --timeout SEC: a finite number of seconds above 0 and at most a week (NaN, infinities and 1e308
// would end the run at once and call it timed out).
const CLI::Validator& TimeoutSeconds();
// --threads N: 1 to 1024 (a bigger number asks for more threads than any machine runs).
const CLI::Validator& ThreadCount();

// Writes a command's report to `output` with WriteFileAtomic (never over `guard`'s inputs), or to
// io.out when `output` is empty (-o not given).
Status WriteOutput(const std::string& output, std::string_view text, Io& io,
                   const OutputGuard& guard = {});

}  // namespace dt
