// The project's own Python import graph, used to tell which findings lie on a path reachable from
// an entry script.
#pragma once

#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "scan/python_scanner.h"

namespace dt::scan {

struct PyModule {
  std::string rel;  // "pkg/mod.py".
  std::vector<PyImport> imports;
  bool imports_pending = false;  // Imports not read yet: the loader fills them on first visit.
};

// Fills the imports of modules whose imports were deferred (and clears their imports_pending);
// given a whole breadth-first level at once so that it can read the files in parallel.
using ImportLoader = std::function<void(const std::vector<PyModule*>& pending)>;

// Relative paths of the modules reachable from `entries` (relative paths, included themselves).
// An import resolves against the root, the importing file's folder (the script's sys.path[0]),
// src/, and relative imports against the package.
// Modules with `imports_pending` are passed to `load` when the walk first reaches them, so that
// files off every path from the entries never need their imports read.
// `behind_checks`, when given, receives the reachable modules that every path from the entries
// reaches through a guarded import (PyImport::guarded): on these paths they run only with CUDA.
std::unordered_set<std::string> ReachableModules(std::vector<PyModule>& modules,
                                                 const std::vector<std::string>& entries,
                                                 const ImportLoader& load = {},
                                                 std::unordered_set<std::string>* behind_checks = nullptr);

}  // namespace dt::scan
