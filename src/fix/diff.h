// Unified diffs (`diff -u`, `git diff` without the git header) of two texts, line by line.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace dt::fix {

// One replacement a rewrite made: before[before_begin, before_end) became
// after[after_begin, after_end). Outside its replacements the two texts are byte for byte equal.
struct Replaced {
  std::size_t before_begin = 0, before_end = 0;
  std::size_t after_begin = 0, after_end = 0;
};

// The hunks turning `before` into `after`, with `context` unchanged lines around each change,
// under `--- a/<name>` / `+++ b/<name>` headers (control characters in the name escaped); empty
// when the texts are equal. A last line without a newline is marked as diff marks it.
std::string UnifiedDiff(std::string_view before, std::string_view after, std::string_view name,
                        int context = 3);

// The same when the caller knows where the texts differ (`replaced`, in order, not overlapping):
// only those lines are compared, so the time and memory grow with the file and the size of each
// change, never with the square of the number of changes.
std::string UnifiedDiff(std::string_view before, std::string_view after, std::string_view name,
                        const std::vector<Replaced>& replaced, int context = 3);

}  // namespace dt::fix
