#include "util/result.h"

namespace dt {

std::string Error::ToString() const {
  std::string out;
  if (!file.empty()) {
    out += file;
    if (line > 0) {
      out += ':' + std::to_string(line);
      if (column > 0) out += ':' + std::to_string(column);
    }
    out += ": ";
  }
  out += message;
  return out;
}

}  // namespace dt
