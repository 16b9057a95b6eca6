// Placeholder entry points: this stage is not built yet, so its commands say so (exit 2).
#include "app/commands.h"

namespace dt::coverage {

Result<ExitCode> RunCoverageCommand(const std::vector<std::string>& /*args*/, Io& /*io*/) {
  return MakeError(ErrorCode::kUsage, "'dualtrack coverage' is not available in this version yet");
}

}  // namespace dt::coverage
