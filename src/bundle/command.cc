// Placeholder entry points: this stage is not built yet, so its commands say so (exit 2).
#include "app/commands.h"

namespace dt::bundle {

Result<ExitCode> RunRunCommand(const std::vector<std::string>& /*args*/, Io& /*io*/) {
  return MakeError(ErrorCode::kUsage, "'dualtrack run' is not available in this version yet");
}

Result<ExitCode> RunShowCommand(const std::vector<std::string>& /*args*/, Io& /*io*/) {
  return MakeError(ErrorCode::kUsage, "'dualtrack show' is not available in this version yet");
}

}  // namespace dt::bundle
