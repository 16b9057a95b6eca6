// Reading the fields of JSON documents that users hand us: a field of the wrong type is the same as
// an absent one here (callers that must reject it say so themselves), never a thrown type_error
// that would surface as an internal error.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace dt {

// The string at `key` when `j` is an object holding a string there; nullopt otherwise.
std::optional<std::string> JsonOptString(const nlohmann::json& j, const char* key);

// The same, with "" for a missing or non-string field.
std::string JsonString(const nlohmann::json& j, const char* key);

}  // namespace dt
