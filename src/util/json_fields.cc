#include "util/json_fields.h"

namespace dt {

std::optional<std::string> JsonOptString(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

std::string JsonString(const nlohmann::json& j, const char* key) {
  return JsonOptString(j, key).value_or(std::string());
}

}  // namespace dt
