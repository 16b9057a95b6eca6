// JSON has no NaN or infinity, but a training loss can be either, and that is exactly what a
// cross-device check must be able to show. Files dualtrack writes hold them as the strings "NaN",
// "Infinity" and "-Infinity"; readers accept those and the bare tokens Python's json module writes.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace dt {

// `text` with every bare NaN, Infinity and -Infinity outside a string quoted, so a strict parser
// accepts it. Text without them is returned unchanged.
std::string QuoteNonFiniteTokens(std::string_view text);

// A JSON number, or one of the strings above (also "nan", "inf", "-inf"); nullopt otherwise.
std::optional<double> JsonNumberOrNonFinite(const nlohmann::json& j);

// A finite value as a JSON number, a non-finite one as its string token.
nlohmann::json JsonNumberOrToken(double v);

}  // namespace dt
