// Internal to the statistics of tensor pairs (stats.cc: real dtypes, complex_stats.cc: complex):
// the block and histogram layout, the reader of elements in iteration order, the split over
// threads, and the part of the result both accumulators fill the same way.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compare/stats.h"
#include "compare/tensor.h"
#include "compare/zip.h"
#include "util/result.h"

namespace dt::compare::detail {

constexpr std::size_t kBlock = 2048;  // Elements per block: both sides' blocks stay in L1/L2.
constexpr int kMinDecade = -40;
constexpr int kMaxDecade = 40;
constexpr int kDecades = kMaxDecade - kMinDecade;
constexpr std::size_t kPctBuckets = 65536;

// pow10[k] = 10^(kMinDecade + k), correctly rounded, for k in [0, kDecades + 2).
const std::array<double, kDecades + 2>& Pow10();

// The histogram bin of a finite nonzero error: floor(log10 e) - kMinDecade from the binary
// exponent, settled by one comparison with a power of ten, clamped to [0, kDecades); float64
// subnormals go to bin 0.
std::size_t DecadeBin(double e);

// The percentile bucket of a value: its sign, exponent and 4 mantissa bits, ordered as the values
// are (relative precision 2^-4); PctValue is a bucket's upper edge.
inline std::size_t PctKey(double v) {
  std::uint64_t bits;
  std::memcpy(&bits, &v, 8);
  std::size_t k = static_cast<std::size_t>((bits >> 48) & 0x7fff);
  return (bits >> 63) ? 32767 - k : 32768 + k;
}
double PctValue(std::size_t key);
// The q-quantile of `total` values counted in pct[which * kPctBuckets, +kPctBuckets).
double Percentile(const std::vector<std::uint64_t>& pct, std::size_t which, std::uint64_t total,
                  double q);

// float32 to float16 bits, rounding to nearest even (NaN stays NaN, overflow is infinity).
inline std::uint16_t FloatToHalf(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  std::uint32_t sign = (x >> 16) & 0x8000, ax = x & 0x7fffffff;
  if (ax >= 0x7f800000)
    return static_cast<std::uint16_t>(sign | 0x7c00 | (ax > 0x7f800000 ? 0x200 : 0));
  if (ax >= 0x477ff000) return static_cast<std::uint16_t>(sign | 0x7c00);
  if (ax < 0x38800000) {
    float v = std::fabs(f) * 16777216.0f;
    return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(std::nearbyint(v)));
  }
  ax += 0xfff + ((ax >> 13) & 1);
  return static_cast<std::uint16_t>(sign | ((ax - 0x38000000u) >> 13));
}

// Maps a sign-magnitude float bit pattern to an integer whose order is the float order.
inline std::int64_t Ordered(std::uint64_t bits, int width) {
  std::uint64_t sign = std::uint64_t{1} << (width - 1);
  std::uint64_t mag = bits & (sign - 1);
  return (bits & sign) ? -static_cast<std::int64_t>(mag) : static_cast<std::int64_t>(mag);
}

// The ULP-ordered integer of v rounded to float64, float32, float16 or bfloat16 (0 otherwise): the
// difference of two is their distance in units in the last place.
inline std::int64_t OrderedIn(DType t, double v) {
  switch (t) {
    case DType::kF64: {
      std::uint64_t b;
      std::memcpy(&b, &v, 8);
      return Ordered(b, 64);
    }
    case DType::kF32: {
      float f = static_cast<float>(v);
      std::uint32_t b;
      std::memcpy(&b, &f, 4);
      return Ordered(b, 32);
    }
    case DType::kF16:
      return Ordered(FloatToHalf(static_cast<float>(v)), 16);
    case DType::kBF16: {
      float f = static_cast<float>(v);
      std::uint32_t b;
      std::memcpy(&b, &f, 4);
      b = (b + 0x7fff + ((b >> 16) & 1)) >> 16;
      return Ordered(b, 16);
    }
    default:
      return 0;
  }
}

// Converts n contiguous elements of a real dtype at src (byte-swapped first when `swap`) to double.
void Convert(DType dtype, bool swap, const unsigned char* src, std::size_t n, double* out);

bool IsC(const TensorInfo& t);
// True when `strides` lay the shape out densely in some dimension order (C, Fortran, …).
bool IsDense(const TensorInfo& t);
// The multi-index of the element at storage position `pos` of a dense layout.
std::vector<std::uint64_t> UnravelStorage(const TensorInfo& t, std::uint64_t pos);
// The multi-index of the element at C-order position `pos`.
std::vector<std::uint64_t> UnravelC(const std::vector<std::uint64_t>& shape, std::uint64_t pos);

// True when a pair is read in storage order (both dense with the same strides, so elements pair
// up wherever they lie), false for C order; an error for a deflated member that would need a
// gather, which a stream cannot do.
Result<bool> StorageOrder(const TensorInfo& a, const TensorInfo& b, const std::string& file_a,
                          const std::string& file_b);

// The raw bytes of a tensor's elements in iteration order: a linear run of the map, a gather
// through strides, or a deflated stream.
class ElementReader {
 public:
  Status Init(const TensorInfo& t, bool linear, const std::string& file);
  // Elements [start, start + n) (n <= kBlock): inside the map for a linear run, else gathered or
  // inflated into the reader's buffer.
  Result<const unsigned char*> Raw(std::uint64_t start, std::size_t n);
  const TensorInfo& tensor() const { return *t_; }

 private:
  const TensorInfo* t_ = nullptr;
  bool linear_ = true;
  std::size_t es_ = 1;
  std::vector<std::int64_t> strides_;
  std::unique_ptr<InflateStream> z_;
  std::vector<unsigned char> bytes_;
};

// How many ranges a pair of n elements is split into: one for a streamed (deflated) or small
// pair, else `threads`.
int RangesFor(const TensorInfo& a, const TensorInfo& b, int threads);
// Runs fn(r, begin, end) for each of `ranges` runs of whole blocks covering [0, n), each on a
// thread of its own when there are several (so results do not depend on the split's timing);
// returns the first range's error, if any.
Status ForEachRange(std::uint64_t n, int ranges,
                    const std::function<Status(std::size_t, std::uint64_t, std::uint64_t)>& fn);

// What both accumulators (real and complex pairs) keep the same way: the error sums and extremes
// over finite pairs, the counts, the side extremes (values; moduli for complex), the raw sums of
// the cosine, the histogram and the percentile counts. `n` is merged with each one's moments.
struct AccCommon {
  std::uint64_t n = 0;  // Finite pairs.
  double sum_e = 0, sum_sq = 0, sum_rel = 0, sum_ex = 0;
  double max_e = -1, max_rel = 0, max_ex = -INFINITY;
  std::uint64_t max_i = 0;
  std::uint64_t n_rel = 0, zero_b_err = 0, outside = 0, equal = 0;
  std::uint64_t nan_a = 0, nan_b = 0, pinf_a = 0, ninf_a = 0, pinf_b = 0, ninf_b = 0;
  std::uint64_t nan_mismatch = 0, nf_outside = 0;
  double min_a = INFINITY, max_a = -INFINITY, min_b = INFINITY, max_b = -INFINITY;
  double saa = 0, sbb = 0, sab = 0;
  std::uint64_t max_ulp = 0;
  std::array<std::uint64_t, kDecades> hist{};
  std::uint64_t hist_zero = 0;
  std::vector<std::uint64_t> pct;  // 3 × kPctBuckets when percentiles are kept.

  // Adds another range's accumulator (all but `n` and the moments).
  void MergeCommon(const AccCommon& o);
};

// The error statistics, cosine, counts, histogram and percentiles of an accumulator; the caller
// adds Pearson's correlation and the side statistics.
TensorStats CommonStats(const AccCommon& acc, const TensorInfo& a, bool storage_order,
                        const StatsConfig& cfg);

// The statistics of a pair: its read order, range(storage_order, begin, end, acc) over the runs of
// its elements, each into an accumulator of its own (with percentile counts when asked for),
// merged in range order; then CommonStats and, when some pair was finite, moments(acc, n, stats)
// for Pearson's correlation and the side statistics.
template <class Acc, class Range, class Moments>
Result<TensorStats> PairStats(const TensorInfo& a, const TensorInfo& b, const StatsConfig& cfg,
                              const std::string& file_a, const std::string& file_b, Range&& range,
                              Moments&& moments) {
  DT_CHECK(a.shape == b.shape);
  auto linear = StorageOrder(a, b, file_a, file_b);
  if (!linear) return linear.take_error();
  std::vector<Acc> accs(static_cast<std::size_t>(RangesFor(a, b, cfg.threads)));
  if (cfg.percentiles) {
    for (Acc& acc : accs) acc.pct.assign(3 * kPctBuckets, 0);
  }
  Status st = ForEachRange(a.numel, static_cast<int>(accs.size()),
                           [&](std::size_t r, std::uint64_t begin, std::uint64_t end) {
                             return range(*linear, begin, end, accs[r]);
                           });
  if (!st) return st.take_error();
  Acc acc = std::move(accs[0]);
  for (std::size_t t = 1; t < accs.size(); ++t) acc.Merge(accs[t]);
  TensorStats s = CommonStats(acc, a, *linear, cfg);
  if (acc.n > 0) moments(acc, static_cast<double>(acc.n), s);
  return s;
}

}  // namespace dt::compare::detail
