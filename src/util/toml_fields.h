// Reading the values of a TOML file a user wrote: a value of the wrong type is an error at its
// place, never silently nothing.
#pragma once

#include <toml++/toml.h>

#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace dt {

// A string or an array of strings (`entry = "a.py"`, `entry = ["a.py", "b.py"]`); anything else
// (`entry = [1, 2]`) is an input error naming `file` and the value's line and column: "`what` must
// be a string or an array of strings".
Result<std::vector<std::string>> TomlStrings(const toml::node& node, std::string_view what,
                                             const std::string& file);

}  // namespace dt
