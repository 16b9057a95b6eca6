// A cheap case-insensitive multi-substring test run before lexing a file: files that contain none
// of the trigger words cannot produce a finding and are not lexed at all.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dt::scan {

class Prefilter {
 public:
  Prefilter() = default;
  explicit Prefilter(const std::vector<std::string>& needles);

  // True when `text` contains any needle (ASCII case-insensitive). An empty filter passes all.
  bool Matches(std::string_view text) const;

 private:
  // Keyed by the first two bytes with case folded as `byte | 0x20` (one OR instead of a table
  // load per byte; it also merges a few punctuation pairs, which only adds candidates): a
  // byte per key saying whether a needle starts so, then the needles (lower-cased) themselves.
  std::vector<std::uint8_t> starts_;
  std::vector<std::vector<std::string>> by_key_;
  bool empty_ = true;
};

}  // namespace dt::scan
