// Scans one Python source (a .py file or a notebook cell): import and alias resolution, guard
// detection and the device / library / extension rules of the registry.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "scan/sink.h"

namespace dt::scan {

// An import statement, kept for the project's import graph.
struct PyImport {
  std::string module;               // Dotted, without the leading dots of a relative import.
  int level = 0;                    // Number of leading dots.
  std::vector<std::string> names;   // from-import names (they may be submodules).
};

struct PyScanResult {
  std::vector<PyImport> imports;
  bool has_main = false;  // Has `if __name__ == "__main__":`.
};

// `is_setup_py` also checks string literals as requirement specifiers (install_requires).
PyScanResult ScanPython(std::string_view source, FindingSink& sink, bool is_setup_py);

}  // namespace dt::scan
