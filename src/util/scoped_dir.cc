#include "util/scoped_dir.h"

#include <stdlib.h>

#include <string>

namespace dt {

namespace fs = std::filesystem;

Result<TempDir> TempDir::Make(std::string_view prefix) {
  std::error_code ec;
  fs::path base = fs::temp_directory_path(ec);
  if (ec) base = "/tmp";
  std::string pattern = (base / (std::string(prefix) + "XXXXXX")).string();
  if (mkdtemp(pattern.data()) == nullptr)
    return MakeError(ErrorCode::kIo, "cannot make a temporary directory", base.string());
  return TempDir(pattern);
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

CurrentDirectory::CurrentDirectory(const fs::path& dir) {
  std::error_code ec;
  previous_ = fs::current_path(ec);
  if (ec) return;
  fs::current_path(dir, ec);
  ok_ = !ec;
}

CurrentDirectory::~CurrentDirectory() {
  if (!ok_) return;
  std::error_code ec;
  fs::current_path(previous_, ec);
}

}  // namespace dt
