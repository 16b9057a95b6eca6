// libFuzzer target: the build and environment scanners. The first byte picks the scanner
// (requirements, conda environment, pyproject.toml, setup.cfg, Dockerfile, shell); the rest is
// the file.
#include <vector>

#include "fuzz_scan_common.h"
#include "scan/env_scanners.h"
#include "scan/sink.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dt::scan;  // NOLINT
  if (size == 0) return 0;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (!fuzz::ScannableText(text)) return 0;
  static const char* const kNames[] = {"requirements.txt", "environment.yml", "pyproject.toml",
                                       "setup.cfg",        "Dockerfile",      "run.sh"};
  const unsigned which = data[0] % 6;
  std::vector<Finding> findings;
  FindingSink sink(fuzz::Reg(), kNames[which], text, findings);
  switch (which) {
    case 0:
      ScanRequirements(text, sink);
      break;
    case 1:
      ScanCondaEnv(text, sink);
      break;
    case 2:
      ScanPyproject(text, sink);
      break;
    case 3:
      ScanSetupCfg(text, sink);
      break;
    case 4:
      ScanDockerfile(text, sink);
      break;
    default:
      ScanShell(text, sink);
      break;
  }
  return 0;
}
