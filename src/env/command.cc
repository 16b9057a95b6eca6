// Placeholder entry points: this stage is not built yet, so its commands say so (exit 2).
#include "app/commands.h"

namespace dt::env {

Result<ExitCode> RunEnvCommand(const std::vector<std::string>& /*args*/, Io& /*io*/) {
  return MakeError(ErrorCode::kUsage, "'dualtrack env' is not available in this version yet");
}

Result<ExitCode> RunFreezeCommand(const std::vector<std::string>& /*args*/, Io& /*io*/) {
  return MakeError(ErrorCode::kUsage, "'dualtrack freeze' is not available in this version yet");
}

}  // namespace dt::env
