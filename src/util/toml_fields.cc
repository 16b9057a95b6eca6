#include "util/toml_fields.h"

namespace dt {

Result<std::vector<std::string>> TomlStrings(const toml::node& node, std::string_view what,
                                             const std::string& file) {
  auto bad = [&](const toml::node& at) {
    return MakeError(ErrorCode::kInput,
                     std::string(what) + " must be a string or an array of strings", file,
                     at.source().begin.line, at.source().begin.column);
  };
  std::vector<std::string> out;
  if (node.is_string()) {
    out.push_back(*node.value<std::string>());
  } else if (const auto* arr = node.as_array()) {
    for (const auto& v : *arr) {
      if (!v.is_string()) return bad(v);
      out.push_back(*v.value<std::string>());
    }
  } else {
    return bad(node);
  }
  return out;
}

}  // namespace dt
