// The project's own Python import graph, used to tell which findings lie on a path reachable from
// an entry script.
#pragma once

#include <string>
#include <unordered_set>
#include <vector>

#include "scan/python_scanner.h"

namespace dt::scan {

struct PyModule {
  std::string rel;  // "pkg/mod.py".
  std::vector<PyImport> imports;
  // Folders the module puts on sys.path, relative to the project ("models", "." for the root):
  // imports anywhere in the process resolve against them too, once the module ran.
  std::vector<std::string> sys_path = {};
};

// Relative paths of the modules reachable from `entries` (relative paths, included themselves).
// An import resolves against the root, the importing file's folder (the script's sys.path[0]),
// src/, and relative imports against the package.
// `behind_checks`, when given, receives the reachable modules that every path from the entries
// reaches through a guarded import (PyImport::guarded): on these paths they run only with CUDA.
std::unordered_set<std::string> ReachableModules(
    const std::vector<PyModule>& modules, const std::vector<std::string>& entries,
    std::unordered_set<std::string>* behind_checks = nullptr);

}  // namespace dt::scan
