// Arithmetic on counts read from files: a hostile or corrupt count must not overflow (undefined
// behaviour in C++) but stop at the largest value, which reads as "at least this many".
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

namespace dt {

inline std::int64_t SaturatingAdd(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) {
    return b > 0 ? std::numeric_limits<std::int64_t>::max()
                 : std::numeric_limits<std::int64_t>::min();
  }
  return r;
}

// A random seed as every library a run seeds accepts it (NumPy's legacy seeding takes
// 0..2^32-1): decimal digits only, no sign, no clamping; nullopt when out of range or not a number.
inline std::optional<std::int64_t> ParseSeed(std::string_view s) {
  if (s.empty() || s.size() > 10) return std::nullopt;
  std::int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (v > std::int64_t{0xFFFFFFFF}) return std::nullopt;
  return v;
}

}  // namespace dt
