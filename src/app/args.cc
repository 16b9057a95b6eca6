#include "app/args.h"

#include <algorithm>

namespace dt {

std::optional<Result<ExitCode>> ParseArgs(CLI::App& app, const std::vector<std::string>& args,
                                          Io& io) {
  app.get_formatter()->column_width(32);
  // CLI11 consumes the vector from the back.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    io.out << app.help();
    return Result<ExitCode>(ExitCode::kOk);
  } catch (const CLI::CallForAllHelp&) {
    io.out << app.help("", CLI::AppFormatMode::All);
    return Result<ExitCode>(ExitCode::kOk);
  } catch (const CLI::ParseError& e) {
    return Result<ExitCode>(MakeError(
        ErrorCode::kUsage,
        std::string(e.what()) + "\nRun '" + app.get_name() + " --help' for the options."));
  }
  return std::nullopt;
}

Status WriteOutput(const std::string& output, std::string_view text, Io& io,
                   const OutputGuard& guard) {
  if (!output.empty()) return WriteFileAtomic(output, text, guard);
  io.out << text;
  return OkStatus();
}

}  // namespace dt
