// Reading the fields of JSON documents that users hand us: a field of the wrong type is the same as
// an absent one here (callers that must reject it say so themselves), never a thrown type_error
// that would surface as an internal error.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "util/result.h"

namespace dt {

// The string at `key` when `j` is an object holding a string there; nullopt otherwise.
std::optional<std::string> JsonOptString(const nlohmann::json& j, const char* key);

// The same, with "" for a missing or non-string field.
std::string JsonString(const nlohmann::json& j, const char* key);

// An optional value as JSON: the value, or null when absent (or, for a double, not finite).
nlohmann::json OptJson(const std::optional<std::string>& v);
nlohmann::json OptJson(const std::optional<std::int64_t>& v);
nlohmann::json OptJson(const std::optional<bool>& v);
nlohmann::json OptJson(const std::optional<double>& v);

// The boolean at `key`, or `fallback` when it is missing or of another type.
bool JsonBool(const nlohmann::json& j, const char* key, bool fallback);

// How deep arrays and objects may nest in a JSON document dualtrack reads. nlohmann's DOM is
// built, printed and destroyed recursively: a hostile file nested 10^5 deep exhausts the stack
// (or, a little shallower, the memory). Real documents nest a few dozen levels at most.
inline constexpr int kMaxJsonDepth = 512;

// An input error naming `file` (and `line`) when `text` nests arrays and objects deeper than
// `max_depth`; a linear pass over the bytes (brackets inside strings do not count), run before a
// parser builds anything.
Status CheckJsonDepth(std::string_view text, const std::string& file, std::int64_t line = 0,
                      int max_depth = kMaxJsonDepth);

// Parses a whole document (after CheckJsonDepth). Every way parsing can fail (a syntax error, a
// number too large for a double, which nlohmann reports as out_of_range rather than parse_error)
// becomes one input error naming `file` (and `line`, for one row of a JSON-lines file). The message
// never quotes the bytes read: the file may not be text at all.
Result<nlohmann::json> ParseJson(std::string_view text, const std::string& file,
                                 std::int64_t line = 0,
                                 const nlohmann::json::parser_callback_t& callback = nullptr);

}  // namespace dt
