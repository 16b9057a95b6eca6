// Entry points of the subcommands, one per pipeline stage folder. Each parses its own options
// (app/args.h) and returns an exit code or an Error; app/cli.cc owns the table that lists them.
#pragma once

#include <string>
#include <vector>

#include "app/cli.h"

namespace dt {

namespace scan {
Result<ExitCode> RunScanCommand(const std::vector<std::string>& args, Io& io);
Result<ExitCode> RunRuleCommand(const std::vector<std::string>& args, Io& io);
}  // namespace scan

namespace env {
Result<ExitCode> RunEnvCommand(const std::vector<std::string>& args, Io& io);
Result<ExitCode> RunFreezeCommand(const std::vector<std::string>& args, Io& io);
}  // namespace env

namespace bundle {
Result<ExitCode> RunRunCommand(const std::vector<std::string>& args, Io& io);
Result<ExitCode> RunShowCommand(const std::vector<std::string>& args, Io& io);
}  // namespace bundle

namespace coverage {
Result<ExitCode> RunCoverageCommand(const std::vector<std::string>& args, Io& io);
}  // namespace coverage

namespace compare {
Result<ExitCode> RunCompareCommand(const std::vector<std::string>& args, Io& io);
}  // namespace compare

namespace fix {
Result<ExitCode> RunFixCommand(const std::vector<std::string>& args, Io& io);
}  // namespace fix

namespace verdict {
Result<ExitCode> RunReportCommand(const std::vector<std::string>& args, Io& io);
Result<ExitCode> RunAuditCommand(const std::vector<std::string>& args, Io& io);
}  // namespace verdict

}  // namespace dt
