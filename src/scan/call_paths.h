// Which module-level functions of the project an entry's run calls, and whether only behind a CUDA
// or launch-mode check: the import graph says which modules load, this says which of their
// functions run. `smart_DDP()` in utils/torch_utils.py is loaded by every script but called only
// by train.py, under `if cuda and RANK != -1:`; `export_engine()` is called only by export.py's
// own command line.
#pragma once

#include <string>
#include <vector>

#include "scan/python_scanner.h"

namespace dt::scan {

struct CallModule {
  std::vector<std::string> names;  // Every dotted name it may be imported as (ModuleNames).
  bool entry = false;              // The script that runs: its __main__ block runs too.
  std::vector<PyTopDef> defs;
  std::vector<PyRef> refs;
  std::vector<PyDefault> defaults;
  std::vector<std::string> attrs;
};

struct DefPath {
  bool reached = true;   // Some path from the entries calls (or hands on) the function.
  bool guarded = false;  // Every such call runs behind a CUDA or launch-mode check.
};

struct CallPathResult {
  std::vector<std::vector<DefPath>> defs;  // Per module, parallel to CallModule::defs.
  // Per module, parallel to CallModule::defaults: every call on the path passes a value for the
  // parameter, so its CUDA default is never used (`FIDEvaluation(..., device=self.device)`).
  std::vector<std::vector<char>> overridden;
};

// Per module, per definition (parallel to CallModule::defs). `modules` are the reachable ones:
// mentions in other files never run. Conservative where the code is dynamic: a function named in
// an identifier-like string, registered by a decorator, or defined in an entry counts as reached;
// a mention resolves to every definition of that name in a module the import may mean.
CallPathResult CallPaths(const std::vector<CallModule>& modules);

}  // namespace dt::scan
