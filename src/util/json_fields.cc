#include "util/json_fields.h"

#include <cmath>

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

Status CheckJsonDepth(std::string_view text, const std::string& file, std::int64_t line,
                      int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        return MakeError(ErrorCode::kInput,
                         "JSON nested deeper than " + std::to_string(max_depth) +
                             " levels of arrays and objects; refusing to read it",
                         file, line);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return OkStatus();
}

Result<nlohmann::json> ParseJson(std::string_view text, const std::string& file, std::int64_t line,
                                 const nlohmann::json::parser_callback_t& callback) {
  if (auto st = CheckJsonDepth(text, file, line); !st) return st.take_error();
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

nlohmann::json OptJson(const std::optional<std::string>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
nlohmann::json OptJson(const std::optional<std::int64_t>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
nlohmann::json OptJson(const std::optional<bool>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
nlohmann::json OptJson(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace dt
