// Unified diffs (`diff -u`, `git diff` without the git header) of two texts, line by line.
#pragma once

#include <string>
#include <string_view>

namespace dt::fix {

// The hunks turning `before` into `after`, with `context` unchanged lines around each change,
// under `--- a/<name>` / `+++ b/<name>` headers; empty when the texts are equal. A last line
// without a newline is marked as diff marks it.
std::string UnifiedDiff(std::string_view before, std::string_view after, std::string_view name,
                        int context = 3);

}  // namespace dt::fix
