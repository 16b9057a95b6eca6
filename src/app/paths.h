// Where dualtrack finds its shipped data (rule knowledge base, coverage tables) and its Python
// package, whether run from a build tree, a `cmake --install` prefix or a pip install.
#pragma once

#include <filesystem>

#include "util/result.h"

namespace dt {

// $DUALTRACK_DATA_DIR, else <exe>/../share/dualtrack, else the source tree's data/.
Result<std::filesystem::path> DataDir();

// The directory that contains the `dualtrack` Python package (to put on PYTHONPATH):
// $DUALTRACK_PYTHON_DIR, else <exe>/../share/dualtrack/python, else the source tree's python/.
Result<std::filesystem::path> PythonPackageParent();

}  // namespace dt
