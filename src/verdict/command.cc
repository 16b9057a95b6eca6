// Placeholder entry points: this stage is not built yet, so its commands say so (exit 2).
#include "app/commands.h"

namespace dt::verdict {

Result<ExitCode> RunReportCommand(const std::vector<std::string>& /*args*/, Io& /*io*/) {
  return MakeError(ErrorCode::kUsage, "'dualtrack report' is not available in this version yet");
}

Result<ExitCode> RunAuditCommand(const std::vector<std::string>& /*args*/, Io& /*io*/) {
  return MakeError(ErrorCode::kUsage, "'dualtrack audit' is not available in this version yet");
}

}  // namespace dt::verdict
