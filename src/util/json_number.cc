#include "util/json_number.h"

#include <cmath>
#include <limits>

namespace dt {

std::string QuoteNonFiniteTokens(std::string_view text) {
  if (text.find("NaN") == std::string_view::npos &&
      text.find("Infinity") == std::string_view::npos) {
    return std::string(text);
  }
  std::string out;
  out.reserve(text.size() + 8);
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      out += c;
      continue;
    }
    for (std::string_view token : {"-Infinity", "Infinity", "NaN"}) {
      if (text.substr(i, token.size()) == token) {
        out += '"';
        out += token;
        out += '"';
        i += token.size() - 1;
        c = 0;
        break;
      }
    }
    if (c != 0) out += c;
  }
  return out;
}

std::optional<double> JsonNumberOrNonFinite(const nlohmann::json& j) {
  if (j.is_number()) return j.get<double>();
  if (!j.is_string()) return std::nullopt;
  const auto& s = j.get_ref<const std::string&>();
  if (s == "NaN" || s == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (s == "Infinity" || s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-Infinity" || s == "-inf") return -std::numeric_limits<double>::infinity();
  return std::nullopt;
}

nlohmann::json JsonNumberOrToken(double v) {
  if (std::isfinite(v)) return v;
  if (std::isnan(v)) return "NaN";
  return v > 0 ? "Infinity" : "-Infinity";
}

}  // namespace dt
