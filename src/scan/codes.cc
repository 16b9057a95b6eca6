#include "scan/registry.h"

namespace dt::scan {

// Every code a scanner writes as a literal. Codes that data entries name (python_apis,
// python_keywords) need no place here: the load checks those against the rules directly.
const std::vector<std::string_view>& DetectorCodes() {
  static const std::vector<std::string_view> kCodes = {
      // Python: .cuda(), device strings, catch-all torch.cuda API, option choices, integer index.
      "DT101",
      "DT102",
      "DT110",
      "DT112",
      "DT113",
      "DT120",
      // Python: libraries, .double(), NCCL strings, Triton kernels, extension builds and modules.
      "DT201",
      "DT202",
      "DT204",
      "DT205",
      "DT207",
      "DT209",
      "DT210",
      "DT211",
      "DT212",
      "DT213",
      "DT220",
      "DT221",
      "DT406",
      "DT301",
      "DT302",
      "DT305",
      "DT312",
      "DT313",
      "DT314",
      // C/C++/CUDA and CMake.
      "DT303",
      "DT304",
      "DT306",
      "DT307",
      "DT308",
      "DT309",
      "DT320",
      "DT321",
      "DT322",
      // Build, environment, container and shell files.
      "DT310",
      "DT401",
      "DT402",
      "DT403",
      "DT404",
      "DT405",
      "DT407",
      "DT408",
      "DT409",
      "DT410",
      "DT420",
  };
  return kCodes;
}

}  // namespace dt::scan
