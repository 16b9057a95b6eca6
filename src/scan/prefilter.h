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
  // Bit per lower-cased two-byte prefix, then the needles (lower-cased) with that prefix.
  std::vector<std::uint64_t> bits_;
  std::vector<std::vector<std::string>> by_key_;
  std::vector<std::uint16_t> keys_;
  bool empty_ = true;
};

}  // namespace dt::scan
