#include "scan/prefilter.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string_view>
#include <tuple>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define DT_PREFILTER_SSSE3 1
#elif defined(__aarch64__)
#include <arm_neon.h>
#define DT_PREFILTER_NEON 1
#endif

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

// A candidate position and the buckets whose fingerprint it matched.
struct Candidate {
  std::size_t offset;
  unsigned bits;
};
constexpr std::size_t kCandidates = 64;
// The vector kernels read 16 positions and the bytes after them that the fingerprint covers.
constexpr std::size_t kLookahead = Prefilter::kFingerprint - 1;

// A byte of a lower-cased needle as the vector search tests it: a letter after `| 0x20` (which
// folds exactly the upper-case letters onto it), any other byte as it is.
struct Anchor {
  unsigned char byte;
  unsigned char fold;
};
inline Anchor AnchorOf(char c, bool fold) {
  const auto b = static_cast<unsigned char>(c);
  return Anchor{b, static_cast<unsigned char>(fold && b >= 'a' && b <= 'z' ? 0x20 : 0)};
}

// Whether the bytes at `at`, ASCII-lower-cased, are `lower`.
inline bool FoldedEqual(const unsigned char* at, std::string_view lower) {
  for (std::size_t k = 0; k < lower.size(); ++k)
    if (kLower.t[at[k]] != static_cast<unsigned char>(lower[k])) return false;
  return true;
}

// How common each byte is in source code: its place in a count over Python and C++ files, most
// common first; bytes not in the list are rarer than all of them.
struct Rarity {
  std::array<std::uint8_t, 256> t{};
  constexpr Rarity() {
    constexpr std::string_view kCommonBytes =
        " etsarnio\nlcd_,puf\"m.()g:hy'=b-vxw0k1[]ATNES2C#RPID`GL*>3F{}OM\\q";
    for (auto& r : t) r = static_cast<std::uint8_t>(kCommonBytes.size());
    for (std::size_t k = 0; k < kCommonBytes.size(); ++k)
      t[static_cast<unsigned char>(kCommonBytes[k])] = static_cast<std::uint8_t>(k);
  }
};
constexpr Rarity kRarity;

}  // namespace

// The offsets of two bytes of a needle that the vector search compares: its rarest byte, and the
// rarest other one (of another value where there is one, then the farthest). Both at once are
// far rarer than a word's first and last bytes (`__main__`'s underscores are in every
// snake_case name).
Prefilter::Offsets Prefilter::RareOffsets(std::string_view needle) {
  auto rarity = [&](std::size_t k) { return kRarity.t[static_cast<unsigned char>(needle[k])]; };
  Offsets o;
  for (std::size_t k = 1; k < needle.size(); ++k)
    if (rarity(k) > rarity(o.a)) o.a = static_cast<std::uint32_t>(k);
  auto key = [&](std::size_t x) {
    const std::size_t distance = x > o.a ? x - o.a : o.a - x;
    return std::tuple(needle[x] != needle[o.a], rarity(x), distance);
  };
  o.b = static_cast<std::uint32_t>(o.a == 0 ? needle.size() - 1 : 0);
  for (std::size_t k = 0; k < needle.size(); ++k)
    if (k != o.a && key(k) > key(o.b)) o.b = static_cast<std::uint32_t>(k);
  return o;
}

namespace {

using Offsets = Prefilter::Offsets;

// Whether the needle (lower-cased when `fold`) is at `at` (a loop: needles are a few bytes).
inline bool NeedleAt(const unsigned char* at, std::string_view needle, bool fold) {
  if (fold) return FoldedEqual(at, needle);
  for (std::size_t k = 0; k < needle.size(); ++k)
    if (at[k] != static_cast<unsigned char>(needle[k])) return false;
  return true;
}

#if DT_PREFILTER_SSSE3
bool HaveVectorUnit() {
  static const bool ok = __builtin_cpu_supports("ssse3");
  return ok;
}

// The buckets each of the 16 positions at `at` may start, judged by the byte at offset k.
__attribute__((target("ssse3"))) inline __m128i Classify(const unsigned char* at, __m128i lo,
                                                         __m128i hi) {
  const __m128i nibble = _mm_set1_epi8(0x0f);
  __m128i v =
      _mm_or_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(at)), _mm_set1_epi8(0x20));
  __m128i l = _mm_shuffle_epi8(lo, _mm_and_si128(v, nibble));
  __m128i h = _mm_shuffle_epi8(hi, _mm_and_si128(_mm_srli_epi16(v, 4), nibble));
  return _mm_and_si128(l, h);
}

__attribute__((target("avx2"))) inline __m256i Classify32(const unsigned char* at, __m256i lo,
                                                          __m256i hi) {
  const __m256i nibble = _mm256_set1_epi8(0x0f);
  __m256i v = _mm256_or_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(at)),
                              _mm256_set1_epi8(0x20));
  __m256i l = _mm256_shuffle_epi8(lo, _mm256_and_si256(v, nibble));
  __m256i h = _mm256_shuffle_epi8(hi, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble));
  return _mm256_and_si256(l, h);
}

// The same as Kernel, 32 positions at a time (the shuffles work within each 16-byte half, so
// both halves get the same tables).
__attribute__((target("avx2"))) std::size_t Kernel32(const Prefilter::Tables& t,
                                                     const unsigned char* p, std::size_t n,
                                                     std::size_t i, Candidate* out,
                                                     std::size_t& count) {
  const __m256i zero = _mm256_setzero_si256();
  __m256i lo[Prefilter::kFingerprint], hi[Prefilter::kFingerprint];
  for (std::size_t k = 0; k < Prefilter::kFingerprint; ++k) {
    lo[k] = _mm256_broadcastsi128_si256(
        _mm_load_si128(reinterpret_cast<const __m128i*>(t.lo[k].data())));
    hi[k] = _mm256_broadcastsi128_si256(
        _mm_load_si128(reinterpret_cast<const __m128i*>(t.hi[k].data())));
  }
  for (; i + 32 + kLookahead <= n && count + 32 <= kCandidates; i += 32) {
    const unsigned char* at = p + i;
    __m256i m = _mm256_and_si256(
        _mm256_and_si256(Classify32(at, lo[0], hi[0]), Classify32(at + 1, lo[1], hi[1])),
        _mm256_and_si256(Classify32(at + 2, lo[2], hi[2]), Classify32(at + 3, lo[3], hi[3])));
    auto mask = ~static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(m, zero)));
    if (mask == 0) [[likely]]
      continue;
    alignas(32) std::uint8_t lanes[32];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), m);
    while (mask != 0) {
      unsigned j = static_cast<unsigned>(__builtin_ctz(mask));
      mask &= mask - 1;
      out[count++] = Candidate{i + j, lanes[j]};
    }
  }
  return i;
}

// Scans positions [i, ...) 16 at a time while the block fits in `n` and the candidate buffer has
// room for another block; returns the first position not scanned.
__attribute__((target("ssse3"))) std::size_t Kernel16(const Prefilter::Tables& t,
                                                      const unsigned char* p, std::size_t n,
                                                      std::size_t i, Candidate* out,
                                                      std::size_t& count) {
  const __m128i zero = _mm_setzero_si128();
  __m128i lo[Prefilter::kFingerprint], hi[Prefilter::kFingerprint];
  for (std::size_t k = 0; k < Prefilter::kFingerprint; ++k) {
    lo[k] = _mm_load_si128(reinterpret_cast<const __m128i*>(t.lo[k].data()));
    hi[k] = _mm_load_si128(reinterpret_cast<const __m128i*>(t.hi[k].data()));
  }
  for (; i + 16 + kLookahead <= n && count + 16 <= kCandidates; i += 16) {
    const unsigned char* at = p + i;
    __m128i m = _mm_and_si128(
        _mm_and_si128(Classify(at, lo[0], hi[0]), Classify(at + 1, lo[1], hi[1])),
        _mm_and_si128(Classify(at + 2, lo[2], hi[2]), Classify(at + 3, lo[3], hi[3])));
    auto mask = static_cast<unsigned>(~_mm_movemask_epi8(_mm_cmpeq_epi8(m, zero))) & 0xffffu;
    if (mask == 0) [[likely]]
      continue;
    alignas(16) std::uint8_t lanes[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(lanes), m);
    while (mask != 0) {
      unsigned j = static_cast<unsigned>(__builtin_ctz(mask));
      mask &= mask - 1;
      out[count++] = Candidate{i + j, lanes[j]};
    }
  }
  return i;
}

// The first position of a block's candidates (bit j of `mask`: position i + j) where the needle
// is, or npos.
inline std::size_t Confirm(std::uint32_t mask, std::size_t i, const unsigned char* p,
                           std::string_view needle, bool fold) {
  for (; mask != 0; mask &= mask - 1) {
    const std::size_t at = i + static_cast<unsigned>(__builtin_ctz(mask));
    if (NeedleAt(p + at, needle, fold)) return at;
  }
  return std::string_view::npos;
}

bool HaveAvx2() {
  static const bool ok = __builtin_cpu_supports("avx2");
  return ok;
}

std::size_t Kernel(const Prefilter::Tables& t, const unsigned char* p, std::size_t n, std::size_t i,
                   Candidate* out, std::size_t& count) {
  if (HaveAvx2()) {
    i = Kernel32(t, p, n, i, out, count);
    // Stopped with a full candidate buffer: the caller empties it and calls again, so that dense
    // candidates do not leave the rest of the text to the half-width kernel.
    if (i + 32 + kLookahead <= n) return i;
  }
  return Kernel16(t, p, n, i, out, count);  // The last 16-byte block, or all without AVX2.
}

// One needle: the blocks of positions where two of its bytes (RareOffsets) are where they would
// be are compared in full (the two together are rare in source, so this does a fraction of the
// fingerprint kernel's work per byte). Each returns the first match, or npos with `i` at the
// first position it did not test.
__attribute__((target("avx2"))) std::size_t FindOne32(const unsigned char* p, std::size_t n,
                                                      std::size_t& i, std::string_view needle,
                                                      Offsets o, bool fold) {
  const std::size_t last = needle.size() - 1;
  const Anchor a = AnchorOf(needle[o.a], fold), z = AnchorOf(needle[o.b], fold);
  const __m256i a_fold = _mm256_set1_epi8(static_cast<char>(a.fold));
  const __m256i a_byte = _mm256_set1_epi8(static_cast<char>(a.byte));
  const __m256i z_fold = _mm256_set1_epi8(static_cast<char>(z.fold));
  const __m256i z_byte = _mm256_set1_epi8(static_cast<char>(z.byte));
  for (; i + last + 32 <= n; i += 32) {
    __m256i x = _mm256_cmpeq_epi8(
        _mm256_or_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + o.a)), a_fold),
        a_byte);
    __m256i y = _mm256_cmpeq_epi8(
        _mm256_or_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + o.b)), z_fold),
        z_byte);
    const auto mask = static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_and_si256(x, y)));
    if (std::size_t at = Confirm(mask, i, p, needle, fold); at != std::string_view::npos) return at;
  }
  return std::string_view::npos;
}

std::size_t FindOne16(const unsigned char* p, std::size_t n, std::size_t& i,
                      std::string_view needle, Offsets o, bool fold) {
  const std::size_t last = needle.size() - 1;
  const Anchor a = AnchorOf(needle[o.a], fold), z = AnchorOf(needle[o.b], fold);
  const __m128i a_fold = _mm_set1_epi8(static_cast<char>(a.fold));
  const __m128i a_byte = _mm_set1_epi8(static_cast<char>(a.byte));
  const __m128i z_fold = _mm_set1_epi8(static_cast<char>(z.fold));
  const __m128i z_byte = _mm_set1_epi8(static_cast<char>(z.byte));
  for (; i + last + 16 <= n; i += 16) {
    __m128i x = _mm_cmpeq_epi8(
        _mm_or_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i + o.a)), a_fold),
        a_byte);
    __m128i y = _mm_cmpeq_epi8(
        _mm_or_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i + o.b)), z_fold),
        z_byte);
    const auto mask = static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_and_si128(x, y)));
    if (std::size_t at = Confirm(mask, i, p, needle, fold); at != std::string_view::npos) return at;
  }
  return std::string_view::npos;
}

std::size_t FindOneVector(const unsigned char* p, std::size_t n, std::size_t& i,
                          std::string_view needle, Offsets o, bool fold) {
  if (HaveAvx2())
    if (std::size_t at = FindOne32(p, n, i, needle, o, fold); at != std::string_view::npos)
      return at;
  return FindOne16(p, n, i, needle, o, fold);
}
#elif DT_PREFILTER_NEON
bool HaveVectorUnit() { return true; }

std::size_t Kernel(const Prefilter::Tables& t, const unsigned char* p, std::size_t n, std::size_t i,
                   Candidate* out, std::size_t& count) {
  const uint8x16_t fold = vdupq_n_u8(0x20);
  const uint8x16_t nibble = vdupq_n_u8(0x0f);
  uint8x16_t lo[Prefilter::kFingerprint], hi[Prefilter::kFingerprint];
  for (std::size_t k = 0; k < Prefilter::kFingerprint; ++k) {
    lo[k] = vld1q_u8(t.lo[k].data());
    hi[k] = vld1q_u8(t.hi[k].data());
  }
  auto classify = [&](const unsigned char* at, std::size_t k) {
    uint8x16_t v = vorrq_u8(vld1q_u8(at), fold);
    return vandq_u8(vqtbl1q_u8(lo[k], vandq_u8(v, nibble)), vqtbl1q_u8(hi[k], vshrq_n_u8(v, 4)));
  };
  for (; i + 16 + kLookahead <= n && count + 16 <= kCandidates; i += 16) {
    const unsigned char* at = p + i;
    uint8x16_t m = vandq_u8(vandq_u8(classify(at, 0), classify(at + 1, 1)),
                            vandq_u8(classify(at + 2, 2), classify(at + 3, 3)));
    if (vmaxvq_u8(m) == 0) [[likely]]
      continue;
    std::uint8_t lanes[16];
    vst1q_u8(lanes, m);
    for (unsigned j = 0; j < 16; ++j)
      if (lanes[j] != 0) out[count++] = Candidate{i + j, lanes[j]};
  }
  return i;
}

std::size_t FindOneVector(const unsigned char* p, std::size_t n, std::size_t& i,
                          std::string_view needle, Offsets o, bool fold) {
  const std::size_t last = needle.size() - 1;
  const Anchor a = AnchorOf(needle[o.a], fold), z = AnchorOf(needle[o.b], fold);
  const uint8x16_t a_fold = vdupq_n_u8(a.fold), a_byte = vdupq_n_u8(a.byte);
  const uint8x16_t z_fold = vdupq_n_u8(z.fold), z_byte = vdupq_n_u8(z.byte);
  for (; i + last + 16 <= n; i += 16) {
    uint8x16_t m = vandq_u8(vceqq_u8(vorrq_u8(vld1q_u8(p + i + o.a), a_fold), a_byte),
                            vceqq_u8(vorrq_u8(vld1q_u8(p + i + o.b), z_fold), z_byte));
    // Four bits per position (the shift-right-narrow idiom for a NEON movemask).
    std::uint64_t bits =
        vget_lane_u64(vreinterpret_u64_u8(vshrn_n_u16(vreinterpretq_u16_u8(m), 4)), 0);
    while (bits != 0) {
      const unsigned k = static_cast<unsigned>(__builtin_ctzll(bits)) / 4;
      bits &= ~(std::uint64_t{0xf} << (k * 4));
      if (NeedleAt(p + i + k, needle, fold)) return i + k;
    }
  }
  return std::string_view::npos;
}
#else
bool HaveVectorUnit() { return false; }

std::size_t FindOneVector(const unsigned char*, std::size_t, std::size_t&, std::string_view,
                          Offsets, bool) {
  return std::string_view::npos;
}

std::size_t Kernel(const Prefilter::Tables&, const unsigned char*, std::size_t, std::size_t i,
                   Candidate*, std::size_t&) {
  return i;
}
#endif

// The first position at or after `from` where the needle (lower-cased when `fold`) is: the vector
// blocks where `vector_unit`, then a byte at a time for the tail they leave, or for everything.
std::size_t FindOne(const unsigned char* p, std::size_t n, std::size_t from,
                    std::string_view needle, Offsets o, bool fold, bool vector_unit) {
  std::size_t i = from;
  if (vector_unit)
    if (std::size_t at = FindOneVector(p, n, i, needle, o, fold); at != std::string_view::npos)
      return at;
  const auto first = static_cast<unsigned char>(needle[0]);
  for (; i + needle.size() <= n; ++i)
    if ((fold ? kLower.t[p[i]] : p[i]) == first && NeedleAt(p + i, needle, fold)) return i;
  return std::string_view::npos;
}

// The needles of a bucket as nibble masks per fingerprint offset.
struct Masks {
  std::array<std::uint16_t, Prefilter::kFingerprint> lo{}, hi{};
};

// One needle's masks. A short needle accepts any byte after its end.
Masks MaskOf(const std::string& n) {
  Masks m;
  for (std::size_t k = 0; k < Prefilter::kFingerprint; ++k) {
    if (k >= n.size()) {
      m.lo[k] = m.hi[k] = 0xffff;
      continue;
    }
    auto c = static_cast<unsigned char>(n[k] | 0x20);
    m.lo[k] = static_cast<std::uint16_t>(1u << (c & 15u));
    m.hi[k] = static_cast<std::uint16_t>(1u << (c >> 4));
  }
  return m;
}

// The masks of the needles of `a` and `b` together.
Masks Unite(Masks a, const Masks& b) {
  for (std::size_t k = 0; k < Prefilter::kFingerprint; ++k) {
    a.lo[k] = static_cast<std::uint16_t>(a.lo[k] | b.lo[k]);
    a.hi[k] = static_cast<std::uint16_t>(a.hi[k] | b.hi[k]);
  }
  return a;
}

Masks MasksOf(const std::vector<std::string>& needles) {
  Masks m;
  for (const auto& n : needles) m = Unite(m, MaskOf(n));
  return m;
}

// Single-byte frequencies miss the words that fill source code: a bucket holding "cudf" and
// "selective_scan_cuda" admits "self". Each 4-byte window of these common words (with the
// bytes around them) that a bucket admits costs as if it were 1 position in 100. The second
// half are the windows that most often reached verification on the scan benchmark's corpus
// (`tens`, `aram`, `ault`, `sour`, `attr`, ...): with them, 27 % fewer candidates.
constexpr std::string_view kCommon[] = {
    " self.",   "(self, ",   "(self)",   "return ",   "import ",     "from ",     " None",
    " True",    " False",    "def ",     "class ",    " for ",       " if ",      " else",
    " elif ",   " not ",     " and ",    " in ",      " is ",        "torch.",    "tensor",
    " int ",    "const ",    "std::",    "void ",     "template",    "typename",  "include",
    "static ",  "struct ",   "size",     "type",      "name",        "data",      "value",
    "args",     "kwargs",    "shape",    "dtype",     "device",      "list",      "dict",
    "print",    "raise ",    "assert ",  "lambda ",   "with ",       "yield ",    "except ",
    "Optional", "Tensor",    "numpy",    " np.",      "isinstance",  "len(",      "range(",
    "append",   "format",    "string",   "index",     "input",       "output",    "result",
    "module",   "config",    "_t ",      "auto ",     "unsigned ",   "int64",     "float",
    "double",   "bool ",     "char ",    "#define ",  "return;",     "nullptr",   "this->",
    "inline ",  "namespace", "__init__", "super(",    "other",       "__name__",  "   ",
    "\n    ",   ", ",        "()",       "):",        "= ",          " == ",      "\"\"\"",
    "# ",       "// ",       "/* ",      "tensor",    "param",       "default",   "source",
    "attr",     "version",   "operator", "method",    "group",       "string",    "equal",
    "resource", "attribute", "sympy",    "present",   "symbol",      "transform", "trace",
    "variable", "process",   "matrix",   "parameter", "description", "allocate",  "local",
    "address",  "output",    "optional", "compute",   "float",       "torch"};

constexpr std::size_t CountWindows() {
  std::size_t n = 0;
  for (std::string_view word : kCommon)
    if (word.size() >= Prefilter::kFingerprint) n += word.size() - Prefilter::kFingerprint + 1;
  return n;
}

// The false candidates a bucket lets through grow with the byte combinations its nibble tables
// admit beyond its own needles, so buckets should hold needles alike in their leading bytes.
// "Widens" is judged by the share of text positions a bucket admits under a rough model of
// source text (letters common, space and newline more so), plus the common words above.
class BucketCost {
 public:
  BucketCost() {
    double sum = 0;
    for (unsigned c = 0; c < 256; ++c) {
      unsigned f = c | 0x20u;
      double w = (f >= 'a' && f <= 'z')    ? 3
                 : f == ' '                ? 12
                 : f == '*'                ? 2
                 : (f >= 0x20 && f < 0x80) ? 1
                                           : 0.05;
      weight_[c] = w;  // '*' stands for '\n' too ('\n' | 0x20).
      sum += w;
    }
    for (double& w : weight_) w /= sum;
    // Each window of the common words as one bit of a set per offset and nibble value.
    std::size_t windows = 0;
    for (std::string_view word : kCommon) {
      for (std::size_t at = 0; at + Prefilter::kFingerprint <= word.size(); ++at, ++windows) {
        for (std::size_t k = 0; k < Prefilter::kFingerprint; ++k) {
          auto c = static_cast<unsigned char>(word[at + k] | 0x20);
          lo_[k][c & 15u][windows >> 6] |= std::uint64_t{1} << (windows & 63);
          hi_[k][c >> 4][windows >> 6] |= std::uint64_t{1} << (windows & 63);
        }
      }
    }
  }

  // The cost of a non-empty bucket whose needles' masks are `m`. Start-up prices thousands of
  // buckets: the common windows a bucket admits are found by set operations on all of them at
  // once (the windows whose byte k has a nibble the bucket's mask k holds, intersected over k),
  // not window by window.
  double operator()(const Masks& m) const {
    double c = Admits(m);
    WindowSet admitted;
    admitted.fill(~std::uint64_t{0});
    for (std::size_t k = 0; k < Prefilter::kFingerprint; ++k) {
      WindowSet lo{}, hi{};
      for (unsigned bits = m.lo[k]; bits != 0; bits &= bits - 1)
        for (std::size_t w = 0; w < kSetWords; ++w) lo[w] |= lo_[k][__builtin_ctz(bits)][w];
      for (unsigned bits = m.hi[k]; bits != 0; bits &= bits - 1)
        for (std::size_t w = 0; w < kSetWords; ++w) hi[w] |= hi_[k][__builtin_ctz(bits)][w];
      for (std::size_t w = 0; w < kSetWords; ++w) admitted[w] &= lo[w] & hi[w];
    }
    int n = 0;
    for (std::uint64_t w : admitted) n += __builtin_popcountll(w);
    for (int i = 0; i < n; ++i) c += 1.0 / 100;  // Added one by one, as each window once was.
    return c;
  }

 private:
  // The share of text positions whose bytes the masks admit.
  double Admits(const Masks& m) const {
    double share = 1;
    for (std::size_t k = 0; k < Prefilter::kFingerprint; ++k) {
      double w = 0;
      for (unsigned lo = m.lo[k]; lo != 0; lo &= lo - 1)
        for (unsigned hi = m.hi[k]; hi != 0; hi &= hi - 1)
          w += weight_[static_cast<unsigned>(__builtin_ctz(hi)) << 4 |
                       static_cast<unsigned>(__builtin_ctz(lo))];
      share *= w;
    }
    return share;
  }

  static constexpr std::size_t kSetWords = (CountWindows() + 63) / 64;
  using WindowSet = std::array<std::uint64_t, kSetWords>;

  std::array<double, 256> weight_{};  // By byte value, folded with | 0x20; sums to 1.
  // [offset][nibble]: the common windows whose byte at the offset has that low / high nibble.
  std::array<std::array<WindowSet, 16>, Prefilter::kFingerprint> lo_{}, hi_{};
};

using Buckets = std::array<std::vector<std::string>, 8>;

// Moves one needle to another bucket if that lowers the total cost; false when none does. Costs
// are judged on masks (`masks` holds each needle's, parallel to `buckets`), without copying
// needles.
bool ImproveOnce(const BucketCost& cost_of, Buckets& buckets,
                 std::array<std::vector<Masks>, 8>& masks, std::array<double, 8>& cost) {
  std::array<Masks, 8> whole{};
  for (std::size_t b = 0; b < buckets.size(); ++b)
    for (const Masks& m : masks[b]) whole[b] = Unite(whole[b], m);
  for (std::size_t a = 0; a < buckets.size(); ++a) {
    for (std::size_t i = 0; i < buckets[a].size(); ++i) {
      Masks rest{};
      for (std::size_t j = 0; j < masks[a].size(); ++j)
        if (j != i) rest = Unite(rest, masks[a][j]);
      const double rest_cost = buckets[a].size() == 1 ? 0.0 : cost_of(rest);
      for (std::size_t b = 0; b < buckets.size(); ++b) {
        if (b == a) continue;
        const double joined = cost_of(Unite(whole[b], masks[a][i]));
        if (rest_cost + joined < (cost[a] + cost[b]) * (1 - 1e-9)) {
          buckets[b].push_back(std::move(buckets[a][i]));
          masks[b].push_back(masks[a][i]);
          buckets[a].erase(buckets[a].begin() + static_cast<std::ptrdiff_t>(i));
          masks[a].erase(masks[a].begin() + static_cast<std::ptrdiff_t>(i));
          cost[a] = rest_cost;
          cost[b] = joined;
          return true;
        }
      }
    }
  }
  return false;
}

// Each needle first joins the bucket it widens least, then needles move between buckets while
// that lowers the total.
void AssignBuckets(const std::vector<std::string>& list, Buckets& buckets) {
  const BucketCost cost_of;
  std::array<double, 8> cost{};
  std::array<std::vector<Masks>, 8> masks;
  std::array<Masks, 8> whole{};  // The union of each bucket's masks.
  for (const std::string& n : list) {
    const Masks m = MaskOf(n);
    std::size_t best = 0;
    double best_rise = 0;
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      double rise = cost_of(Unite(whole[b], m)) - cost[b];
      if (b == 0 || rise < best_rise) {
        best = b;
        best_rise = rise;
      }
    }
    buckets[best].push_back(n);
    masks[best].push_back(m);
    whole[best] = Unite(whole[best], m);
    cost[best] = cost_of(whole[best]);
  }
  for (int moves = 0; moves < 200 && ImproveOnce(cost_of, buckets, masks, cost); ++moves) {
  }
}

}  // namespace

Prefilter::Prefilter(const std::vector<std::string>& needles) {
  std::vector<std::string> list;
  for (const auto& raw : needles) {
    if (raw.size() < 2) continue;
    std::string n = raw;
    for (char& c : n) c = static_cast<char>(kLower.t[static_cast<unsigned char>(c)]);
    list.push_back(std::move(n));
  }
  std::sort(list.begin(), list.end());
  list.erase(std::unique(list.begin(), list.end()), list.end());
  if (list.empty()) return;
  empty_ = false;
  if (list.size() == 1) {
    single_ = std::move(list.front());
    single_at_ = RareOffsets(single_);
    return;
  }
  AssignBuckets(list, buckets_);
  BuildTables();
}

void Prefilter::BuildTables() {
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    const Masks m = MasksOf(buckets_[b]);
    for (std::size_t k = 0; k < kFingerprint; ++k) {
      for (unsigned x = 0; x < 16; ++x) {
        if (m.lo[k] >> x & 1u)
          tables_.lo[k][x] = static_cast<std::uint8_t>(tables_.lo[k][x] | 1u << b);
        if (m.hi[k] >> x & 1u)
          tables_.hi[k][x] = static_cast<std::uint8_t>(tables_.hi[k][x] | 1u << b);
      }
    }
  }
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    std::stable_sort(
        buckets_[b].begin(), buckets_[b].end(),
        [](const std::string& x, const std::string& y) { return x.size() < y.size(); });
    for (const auto& n : buckets_[b]) {
      unsigned char prefix[4] = {}, mask[4] = {};
      for (std::size_t k = 0; k < 4 && k < n.size(); ++k) {
        prefix[k] = static_cast<unsigned char>(n[k] | 0x20);
        mask[k] = 0xff;
      }
      Quick q{};
      std::memcpy(&q.prefix, prefix, 4);
      std::memcpy(&q.mask, mask, 4);
      quick_[b].push_back(q);
    }
  }
  for (std::size_t k = 0; k < kFingerprint; ++k)
    for (unsigned c = 0; c < 256; ++c)
      tables_.byte[k][c] = tables_.lo[k][c & 15u] & tables_.hi[k][c >> 4];
  // The long needles by prefix (then length), in an open-addressing table at most half full.
  std::vector<std::pair<std::uint32_t, std::string>> longs;
  for (std::size_t b = 0; b < buckets_.size(); ++b)
    for (std::size_t j = 0; j < buckets_[b].size(); ++j) {
      if (buckets_[b][j].size() < 4) {
        has_short_[b] = true;
        continue;
      }
      longs.emplace_back(quick_[b][j].prefix, buckets_[b][j]);
    }
  std::sort(longs.begin(), longs.end(), [](const auto& x, const auto& y) {
    return x.first != y.first ? x.first < y.first : x.second.size() < y.second.size();
  });
  std::size_t size = 16;
  while (size < 2 * longs.size()) size *= 2;
  slots_.assign(size, Slot{});
  slot_mask_ = static_cast<std::uint32_t>(size - 1);
  for (std::size_t i = 0; i < longs.size(); ++i) {
    long_.push_back(longs[i].second);
    std::size_t at = SlotOf(longs[i].first);
    while (slots_[at].count != 0 && slots_[at].prefix != longs[i].first) at = (at + 1) & slot_mask_;
    if (slots_[at].count == 0) {
      slots_[at].prefix = longs[i].first;
      slots_[at].first = static_cast<std::uint32_t>(i);
    }
    ++slots_[at].count;
  }
}

std::size_t Prefilter::Verify(const unsigned char* p, std::size_t n, std::size_t pos,
                              unsigned bits) const {
  if (pos + 4 > n) return VerifyEach(p, n, pos, bits, false);
  // A needle under four bytes is shorter than any other that can match here.
  for (unsigned b = bits; b != 0; b &= b - 1)
    if (has_short_[static_cast<std::size_t>(__builtin_ctz(b))]) {
      if (std::size_t end = VerifyEach(p, n, pos, bits, true); end != 0) return end;
      break;
    }
  std::uint32_t word;
  std::memcpy(&word, p + pos, 4);
  word |= 0x20202020u;
  for (std::size_t at = SlotOf(word); slots_[at].count != 0; at = (at + 1) & slot_mask_) {
    if (slots_[at].prefix != word) continue;
    for (std::uint32_t i = slots_[at].first; i < slots_[at].first + slots_[at].count; ++i) {
      const std::string& needle = long_[i];
      if (pos + needle.size() > n) break;  // Shortest first.
      std::size_t k = 0;
      while (k < needle.size() && kLower.t[p[pos + k]] == static_cast<unsigned char>(needle[k]))
        ++k;
      if (k == needle.size()) return pos + needle.size();
    }
    break;
  }
  return 0;
}

std::size_t Prefilter::VerifyEach(const unsigned char* p, std::size_t n, std::size_t pos,
                                  unsigned bits, bool only_short) const {
  std::size_t best = 0;
  std::uint32_t word = 0;
  const bool whole_word = pos + 4 <= n;
  if (whole_word) std::memcpy(&word, p + pos, 4);
  word |= 0x20202020u;
  for (; bits != 0; bits &= bits - 1) {
    auto b = static_cast<std::size_t>(__builtin_ctz(bits));
    const auto& bucket = buckets_[b];
    for (std::size_t j = 0; j < bucket.size(); ++j) {
      const std::string& needle = bucket[j];
      std::size_t len = needle.size();
      if (only_short && len >= 4) break;
      if (pos + len > n || (best != 0 && pos + len >= best)) break;  // Shortest first.
      if (whole_word && (word & quick_[b][j].mask) != quick_[b][j].prefix) continue;
      std::size_t k = 0;
      while (k < len && kLower.t[p[pos + k]] == static_cast<unsigned char>(needle[k])) ++k;
      if (k == len) {
        best = pos + len;
        break;
      }
    }
  }
  return best;
}

template <typename On>
void Prefilter::Search(std::string_view text, bool vector_unit, On&& on) const {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  std::size_t i = 0;
  if (!single_.empty()) {
    for (std::size_t at = FindOne(p, n, 0, single_, single_at_, true, vector_unit);
         at != std::string_view::npos && !on(at, at + single_.size());
         at = FindOne(p, n, at + 1, single_, single_at_, true, vector_unit)) {
    }
    return;
  }
  if (vector_unit) {
    Candidate found[kCandidates];
    for (;;) {
      std::size_t count = 0;
      std::size_t next = Kernel(tables_, p, n, i, found, count);
      for (std::size_t c = 0; c < count; ++c) {
        std::size_t pos = found[c].offset;
        if (std::size_t end = Verify(p, n, pos, found[c].bits); end != 0 && on(pos, end)) return;
      }
      if (next == i) break;  // Too close to the end for another vector block.
      i = next;
    }
  }
  // Byte at a time (the tail after the vector blocks, or everything). A fingerprint byte past
  // the end admits every bucket; Verify checks the length.
  const auto& t = tables_.byte;
  for (; i < n; ++i) {
    unsigned bits = t[0][p[i] | 0x20u];
    if (bits == 0) [[likely]]
      continue;
    for (std::size_t k = 1; k < kFingerprint && i + k < n; ++k) bits &= t[k][p[i + k] | 0x20u];
    if (bits == 0) continue;
    if (std::size_t end = Verify(p, n, i, bits); end != 0 && on(i, end)) return;
  }
}

bool Prefilter::AnyMatch(std::string_view text, bool vector_unit) const {
  if (empty_) return true;
  bool found = false;
  Search(text, vector_unit, [&](std::size_t, std::size_t) { return found = true; });
  return found;
}

std::vector<Prefilter::Match> Prefilter::AllMatches(std::string_view text, bool vector_unit) const {
  std::vector<Match> out;
  if (empty_) return out;
  Search(text, vector_unit, [&](std::size_t s, std::size_t e) {
    out.push_back(Match{s, e});
    return false;
  });
  return out;
}

bool Prefilter::Matches(std::string_view text) const { return AnyMatch(text, HaveVectorUnit()); }
bool Prefilter::MatchesScalar(std::string_view text) const { return AnyMatch(text, false); }

std::vector<Prefilter::Match> Prefilter::FindAll(std::string_view text) const {
  return AllMatches(text, HaveVectorUnit());
}
std::vector<Prefilter::Match> Prefilter::FindAllScalar(std::string_view text) const {
  return AllMatches(text, false);
}

std::size_t FindLiteral(std::string_view text, std::string_view needle, std::size_t from) {
  if (from > text.size() || text.size() - from < needle.size()) return std::string_view::npos;
  if (needle.empty()) return from;
  return FindOne(reinterpret_cast<const unsigned char*>(text.data()), text.size(), from, needle,
                 Prefilter::RareOffsets(needle), false, HaveVectorUnit());
}

void Prefilter::ForEachMatch(std::string_view text,
                             const std::function<bool(std::size_t, std::size_t)>& on) const {
  if (!empty_) Search(text, HaveVectorUnit(), on);
}

}  // namespace dt::scan
