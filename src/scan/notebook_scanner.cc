#include "scan/notebook_scanner.h"

#include <nlohmann/json.hpp>

#include "scan/env_scanners.h"

namespace dt::scan {

std::string BlankMagics(std::string source) {
  for (std::size_t pos = 0; pos < source.size();) {
    std::size_t nl = source.find('\n', pos);
    std::size_t end = nl == std::string::npos ? source.size() : nl;
    std::size_t first = source.find_first_not_of(" \t", pos);
    if (first < end && (source[first] == '%' || source[first] == '!'))
      for (std::size_t k = first; k < end; ++k) source[k] = ' ';
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return source;
}

Status ScanNotebook(std::string_view text, const Registry& reg, const std::string& rel,
                    std::vector<Finding>& out) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return MakeError(ErrorCode::kInput, std::string("invalid notebook JSON: ") + e.what(), rel);
  }
  if (!doc.is_object() || !doc.contains("cells") || !doc["cells"].is_array())
    return MakeError(ErrorCode::kInput, "not a notebook: no \"cells\" list", rel);
  std::int64_t index = 0;
  for (const auto& cell : doc["cells"]) {
    ++index;
    if (!cell.is_object()) continue;
    // find, not value(): value() throws when the field is there with another type.
    auto type = cell.find("cell_type");
    if (type == cell.end() || !type->is_string() || type->get_ref<const std::string&>() != "code")
      continue;
    std::string source;
    auto it = cell.find("source");
    if (it == cell.end()) continue;
    if (it->is_string()) {
      source = it->get<std::string>();
    } else if (it->is_array()) {
      for (const auto& part : *it)
        if (part.is_string()) source += part.get<std::string>();
    } else {
      continue;
    }
    source = BlankMagics(std::move(source));
    FindingSink sink(reg, rel, source, out, index);
    (void)ScanPython(source, sink, false);
    UserTextRules(reg, source, rel, out, index);
  }
  return OkStatus();
}

}  // namespace dt::scan
