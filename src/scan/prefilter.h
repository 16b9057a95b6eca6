// A fast ASCII-case-insensitive multi-substring search run before lexing: files that contain none
// of the trigger words cannot produce a finding and are not lexed, and the Python scanner skips the
// statements that contain none.
//
// Written by hand because no Debian library fits: RE2 and std::regex are far slower for a case-
// folded literal set, and Hyperscan is x86-only. The method is the "Teddy" fingerprint used by
// ripgrep's and Hyperscan's literal matchers: needles fall into 8 buckets; for each of the first
// four bytes of a needle, two 16-entry tables (low and high nibble) hold the bits of the buckets
// whose needles may have that byte there, so one vector shuffle per nibble tests 16 text positions
// at once (SSSE3 on x86-64, NEON on arm64, a byte-at-a-time path elsewhere). A position whose four
// bytes leave a bucket bit set is a candidate, verified against that bucket's needles.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace dt::scan {

// The first position at or after `from` where `needle` occurs in `text` (exactly, bytes as they
// are), or npos: the vector search Prefilter uses for a single needle. Faster than memmem and
// string_view::find on source text, where a word's two rarest bytes together are rare.
std::size_t FindLiteral(std::string_view text, std::string_view needle, std::size_t from = 0);

class Prefilter {
 public:
  // A match: the needle occupies text[start, end).
  struct Match {
    std::size_t start;
    std::size_t end;
  };

  Prefilter() = default;
  // Needles shorter than two bytes are ignored (they would match nearly every text).
  explicit Prefilter(const std::vector<std::string>& needles);

  // True when `text` contains any needle (ASCII case-insensitive). An empty filter passes all.
  bool Matches(std::string_view text) const;

  // Every position where a needle starts, in order, each with the end of the shortest needle
  // starting there. Nothing when the filter is empty.
  std::vector<Match> FindAll(std::string_view text) const;

  // Calls on(start, end) for each match as FindAll reports them, until it returns true.
  void ForEachMatch(std::string_view text,
                    const std::function<bool(std::size_t, std::size_t)>& on) const;

  // The same searches without vector instructions: the reference the vector path is tested
  // against, and the path taken where no vector unit is available.
  bool MatchesScalar(std::string_view text) const;
  std::vector<Match> FindAllScalar(std::string_view text) const;

  // How many leading bytes of a needle its fingerprint covers (four: with three, the ~50 Python
  // trigger words left a candidate at 4% of all positions).
  static constexpr std::size_t kFingerprint = 4;

  // Two offsets of a needle whose bytes the one-needle search compares first (the rarest).
  struct Offsets {
    std::uint32_t a = 0, b = 0;
  };
  static Offsets RareOffsets(std::string_view needle);

  // Fingerprint tables, public for the vector kernels in prefilter.cc.
  struct Tables {
    // lo[k][n] / hi[k][n]: buckets whose needles may have, at offset k, a byte (folded with
    // `| 0x20`) whose low / high nibble is n.
    alignas(16) std::array<std::array<std::uint8_t, 16>, kFingerprint> lo{};
    alignas(16) std::array<std::array<std::uint8_t, 16>, kFingerprint> hi{};
    // byte[k][b] = lo[k][b & 15] & hi[k][b >> 4], for the scalar path.
    std::array<std::array<std::uint8_t, 256>, kFingerprint> byte{};
  };

 private:
  // The nibble tables and quick prefixes of the filled buckets.
  void BuildTables();
  bool AnyMatch(std::string_view text, bool vector_unit) const;
  std::vector<Match> AllMatches(std::string_view text, bool vector_unit) const;
  // Calls on(start, end) for each match in order; stops when it returns true.
  template <typename On>
  void Search(std::string_view text, bool vector_unit, On&& on) const;
  // The end of the shortest needle of the buckets `bits` that starts at `pos`, or 0.
  std::size_t Verify(const unsigned char* text, std::size_t n, std::size_t pos,
                     unsigned bits) const;
  // The same by comparing with each needle of the buckets (near the end of the text).
  std::size_t VerifyEach(const unsigned char* text, std::size_t n, std::size_t pos, unsigned bits,
                         bool only_short) const;
  std::size_t SlotOf(std::uint32_t prefix) const {
    return static_cast<std::size_t>((prefix * 0x9E3779B1u) >> 16) & slot_mask_;
  }

  Tables tables_;
  std::array<std::vector<std::string>, 8> buckets_;  // Needles, lower-cased, shortest first.
  // Per needle of buckets_: its first four bytes folded with | 0x20, and the mask of those it
  // has, so that most false candidates fail one 32-bit compare.
  struct Quick {
    std::uint32_t prefix;
    std::uint32_t mask;
  };
  std::array<std::vector<Quick>, 8> quick_;
  // The needles of four bytes or more, by their first four bytes folded with | 0x20: a candidate
  // is verified by one probe of this table with its own four bytes, instead of a compare with
  // every needle of its buckets (with ~90 needles in 8 buckets, a dozen per candidate). Slots
  // hold the range of long_ whose needles share the prefix, shortest first; count 0 is empty.
  struct Slot {
    std::uint32_t prefix = 0;
    std::uint32_t first = 0;
    std::uint32_t count = 0;
  };
  std::vector<Slot> slots_;
  std::vector<std::string> long_;
  std::uint32_t slot_mask_ = 0;
  // Per bucket: whether it holds a needle shorter than four bytes (only those are compared one
  // by one).
  std::array<bool, 8> has_short_{};
  bool empty_ = true;
  // The needle when there is only one: searched by its two rarest bytes (single_at_) instead of
  // the fingerprint tables, which are then not built.
  std::string single_;
  Offsets single_at_;
};

}  // namespace dt::scan
