#include "app/paths.h"

#include <cstdlib>
#include <system_error>

#include "util/platform.h"

namespace dt {

namespace {

Result<std::filesystem::path> Locate(const char* env_var, const std::filesystem::path& installed,
                                     const char* source_dir, const char* what) {
  std::error_code ec;
  if (const char* env = std::getenv(env_var); env != nullptr && *env != '\0') {
    if (std::filesystem::is_directory(env, ec)) return std::filesystem::path(env);
    return MakeError(ErrorCode::kInput, std::string(env_var) + " is not a directory", env);
  }
  if (auto exe = CurrentExecutablePath()) {
    std::filesystem::path candidate = exe->parent_path().parent_path() / installed;
    if (std::filesystem::is_directory(candidate, ec)) return candidate;
  }
  if (std::filesystem::is_directory(source_dir, ec)) return std::filesystem::path(source_dir);
  return MakeError(ErrorCode::kInternal,
                   std::string("cannot find dualtrack's ") + what + "; set " + env_var);
}

}  // namespace

Result<std::filesystem::path> DataDir() {
  return Locate("DUALTRACK_DATA_DIR", "share/dualtrack", DUALTRACK_SOURCE_DATA_DIR,
                "data directory");
}

Result<std::filesystem::path> PythonPackageParent() {
  return Locate("DUALTRACK_PYTHON_DIR", "share/dualtrack/python", DUALTRACK_SOURCE_PYTHON_DIR,
                "Python package");
}

}  // namespace dt
