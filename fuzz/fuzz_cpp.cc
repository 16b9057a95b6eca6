// libFuzzer target: the C/C++/CUDA scanner and the CMake scanner over the same text.
#include <vector>

#include "fuzz_scan_common.h"
#include "scan/cpp_scanner.h"
#include "scan/sink.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dt::scan;  // NOLINT
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (!fuzz::ScannableText(text)) return 0;
  std::vector<Finding> findings;
  FindingSink cpp(fuzz::Reg(), "fuzz.cu", text, findings);
  ScanCpp(text, cpp);
  FindingSink cmake(fuzz::Reg(), "CMakeLists.txt", text, findings);
  ScanCMake(text, cmake);
  return 0;
}
