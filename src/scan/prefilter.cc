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

}  // namespace

Prefilter::Prefilter(const std::vector<std::string>& needles)
    : bits_(1024, 0), by_key_(65536) {
  for (const auto& raw : needles) {
    if (raw.size() < 2) continue;
    std::string n = raw;
    for (char& c : n) c = static_cast<char>(kLower.t[static_cast<unsigned char>(c)]);
    auto key = static_cast<std::uint16_t>((static_cast<unsigned char>(n[0]) << 8) |
                                          static_cast<unsigned char>(n[1]));
    auto& list = by_key_[key];
    if (std::find(list.begin(), list.end(), n) != list.end()) continue;
    list.push_back(n);
    bits_[key >> 6] |= std::uint64_t{1} << (key & 63);
    empty_ = false;
  }
}

bool Prefilter::Matches(std::string_view text) const {
  if (empty_) return true;
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  if (n < 2) return false;
  const std::uint64_t* bits = bits_.data();
  unsigned prev = kLower.t[p[0]];
  for (std::size_t i = 1; i < n; ++i) {
    unsigned cur = kLower.t[p[i]];
    unsigned key = (prev << 8) | cur;
    prev = cur;
    if (((bits[key >> 6] >> (key & 63)) & 1) == 0) [[likely]] continue;
    for (const auto& needle : by_key_[key]) {
      std::size_t start = i - 1;
      if (start + needle.size() > n) continue;
      std::size_t k = 2;
      while (k < needle.size() && kLower.t[p[start + k]] == static_cast<unsigned char>(needle[k])) ++k;
      if (k == needle.size()) return true;
    }
  }
  return false;
}

}  // namespace dt::scan
