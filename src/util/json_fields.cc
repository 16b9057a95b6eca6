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

bool JsonBool(const nlohmann::json& j, const char* key, bool fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

Result<nlohmann::json> ParseJson(std::string_view text, const std::string& file, std::int64_t line,
                                 const nlohmann::json::parser_callback_t& callback) {
  try {
    return nlohmann::json::parse(text, callback);
  } catch (const nlohmann::json::parse_error& e) {
    return MakeError(ErrorCode::kInput,
                     "invalid JSON (syntax error at byte " + std::to_string(e.byte) + ")", file,
                     line);
  } catch (const nlohmann::json::out_of_range&) {
    return MakeError(ErrorCode::kInput, "invalid JSON (a number too large to represent)", file,
                     line);
  } catch (const nlohmann::json::exception&) {
    return MakeError(ErrorCode::kInput, "invalid JSON", file, line);
  }
}

}  // namespace dt
