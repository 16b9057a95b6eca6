// libFuzzer target: the notebook scanner (JSON, then each code cell through the Python scanner).
#include <vector>

#include "fuzz_scan_common.h"
#include "scan/notebook_scanner.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dt::scan;  // NOLINT
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (!fuzz::ScannableText(text)) return 0;
  std::vector<Finding> findings;
  (void)ScanNotebook(text, fuzz::Reg(), "fuzz.ipynb", findings);
  return 0;
}
