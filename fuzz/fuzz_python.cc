// libFuzzer target: the Python tokenizer, then the Python scanner (imports, aliases, guards,
// rules).
#include <vector>

#include "fuzz_scan_common.h"
#include "scan/python_lexer.h"
#include "scan/python_scanner.h"
#include "scan/sink.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dt::scan;  // NOLINT
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (!fuzz::ScannableText(text)) return 0;
  (void)LexPython(text);
  std::vector<Finding> findings;
  FindingSink sink(fuzz::Reg(), "fuzz.py", text, findings);
  (void)ScanPython(text, sink, size > 0 && data[0] == 's');  // Sometimes as a setup.py.
  return 0;
}
