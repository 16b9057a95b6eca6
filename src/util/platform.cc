#include "util/platform.h"

#include <unistd.h>

#include <climits>
#include <system_error>
#include <vector>

#if defined(__APPLE__)
#include <mach-o/dyld.h>
#endif

namespace dt {

std::optional<std::filesystem::path> CurrentExecutablePath() {
  std::error_code ec;
#if defined(__APPLE__)
  std::uint32_t size = 0;
  _NSGetExecutablePath(nullptr, &size);
  std::vector<char> buf(size + 1);
  if (_NSGetExecutablePath(buf.data(), &size) != 0) return std::nullopt;
  auto p = std::filesystem::weakly_canonical(buf.data(), ec);
#else
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
#endif
  if (ec) return std::nullopt;
  return p;
}

bool IsTerminal(int fd) { return ::isatty(fd) == 1; }

}  // namespace dt
