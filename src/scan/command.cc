// Placeholder entry points: this stage is not built yet, so its commands say so (exit 2).
#include "app/commands.h"

namespace dt::scan {

Result<ExitCode> RunScanCommand(const std::vector<std::string>& /*args*/, Io& /*io*/) {
  return MakeError(ErrorCode::kUsage, "'dualtrack scan' is not available in this version yet");
}

Result<ExitCode> RunRuleCommand(const std::vector<std::string>& /*args*/, Io& /*io*/) {
  return MakeError(ErrorCode::kUsage, "'dualtrack rule' is not available in this version yet");
}

}  // namespace dt::scan
