#include "scan/prefilter.h"

#include <algorithm>

namespace dt::scan {

namespace {

struct LowerTable {
  std::array<unsigned char, 256> t{};
  constexpr LowerTable() {
    for (int i = 0; i < 256; ++i)
      t[static_cast<std::size_t>(i)] =
          static_cast<unsigned char>(i >= 'A' && i <= 'Z' ? i + 32 : i);
  }
};
constexpr LowerTable kLower;

unsigned FoldedKey(unsigned char a, unsigned char b) { return ((a | 0x20u) << 8) | (b | 0x20u); }

}  // namespace

Prefilter::Prefilter(const std::vector<std::string>& needles) : starts_(65536, 0), by_key_(65536) {
  for (const auto& raw : needles) {
    if (raw.size() < 2) continue;
    std::string n = raw;
    for (char& c : n) c = static_cast<char>(kLower.t[static_cast<unsigned char>(c)]);
    unsigned key = FoldedKey(static_cast<unsigned char>(n[0]), static_cast<unsigned char>(n[1]));
    auto& list = by_key_[key];
    if (std::find(list.begin(), list.end(), n) != list.end()) continue;
    list.push_back(n);
    starts_[key] = 1;
    empty_ = false;
  }
}

bool Prefilter::Matches(std::string_view text) const {
  if (empty_) return true;
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  if (n < 2) return false;
  const std::uint8_t* starts = starts_.data();
  unsigned prev = p[0] | 0x20u;
  for (std::size_t i = 1; i < n; ++i) {
    unsigned cur = p[i] | 0x20u;
    unsigned key = (prev << 8) | cur;
    prev = cur;
    if (starts[key] == 0) [[likely]] continue;
    const std::size_t start = i - 1;
    for (const auto& needle : by_key_[key]) {
      if (start + needle.size() > n) continue;
      std::size_t k = 0;
      while (k < needle.size() && kLower.t[p[start + k]] == static_cast<unsigned char>(needle[k])) ++k;
      if (k == needle.size()) return true;
    }
  }
  return false;
}

}  // namespace dt::scan
