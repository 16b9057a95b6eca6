// The statistics of complex tensor pairs (complex64, complex128), as torch.isclose compares them:
// the error of an element is the modulus |a - b| and the reference magnitude |b|. Complex
// tensors are rare, so this is a plain float64 loop, apart from stats.cc's vectorised real
// kernels; it streams in 2048-element blocks and splits contiguous ranges over threads like them.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <thread>

#include "compare/stats.h"
#include "compare/zip.h"

namespace dt::compare {

namespace {

// The histogram and percentile layout of stats.cc, which the report reads the same way for both.
constexpr std::size_t kBlock = 2048;
constexpr int kMinDecade = -40;
constexpr int kMaxDecade = 40;
constexpr int kDecades = kMaxDecade - kMinDecade;
constexpr std::size_t kPctBuckets = 65536;

// ---- Layout: the helpers of stats.cc's real path, repeated here so its kernels stay untouched.

bool IsC(const TensorInfo& t) {
  return t.strides.empty() || t.strides == ContiguousStrides(t.shape);
}

// True when `strides` lay the shape out densely in some dimension order (C, Fortran, …).
bool IsDense(const TensorInfo& t) {
  if (t.strides.empty()) return true;
  std::vector<std::size_t> order(t.shape.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t x, std::size_t y) { return t.strides[x] < t.strides[y]; });
  std::int64_t expect = 1;
  for (std::size_t d : order) {
    if (t.shape[d] == 1) continue;
    if (t.strides[d] != expect) return false;
    expect *= static_cast<std::int64_t>(t.shape[d]);
  }
  return true;
}

// The multi-index of the element at storage position `pos` of a dense layout.
std::vector<std::uint64_t> UnravelStorage(const TensorInfo& t, std::uint64_t pos) {
  std::vector<std::int64_t> s = t.strides.empty() ? ContiguousStrides(t.shape) : t.strides;
  std::vector<std::size_t> order(t.shape.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return s[x] > s[y]; });
  std::vector<std::uint64_t> idx(t.shape.size(), 0);
  for (std::size_t d : order) {
    if (t.shape[d] <= 1) continue;
    idx[d] = pos / static_cast<std::uint64_t>(s[d]);
    pos %= static_cast<std::uint64_t>(s[d]);
  }
  return idx;
}

std::vector<std::uint64_t> UnravelC(const std::vector<std::uint64_t>& shape, std::uint64_t pos) {
  std::vector<std::uint64_t> idx(shape.size(), 0);
  for (std::size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 0) continue;
    idx[d] = pos % shape[d];
    pos /= shape[d];
  }
  return idx;
}

// ---- Histograms: the decade bins and 1/16-octave percentile buckets of stats.cc.

struct Pow10 {
  std::array<double, kDecades + 2> v{};  // v[k] = 10^(kMinDecade + k), correctly rounded.
  Pow10() {
    for (int k = 0; k < kDecades + 2; ++k) {
      v[static_cast<std::size_t>(k)] =
          std::strtod(("1e" + std::to_string(kMinDecade + k)).c_str(), nullptr);
    }
  }
};

// The decade bin of a nonzero error: floor(log10 e) from the exponent, settled by one comparison
// with the float64 power of ten, clamped to [kMinDecade, kMaxDecade); float64 subnormals go to
// the lowest bin.
std::size_t DecadeBin(double e) {
  static const Pow10 pow10;
  std::uint64_t bits;
  std::memcpy(&bits, &e, 8);
  if ((bits >> 52) == 0) return 0;
  std::int32_t p = static_cast<std::int32_t>(bits >> 52) - 1023;
  std::int32_t d = std::clamp((p * 78913) >> 18, kMinDecade, kMaxDecade - 1);
  std::int32_t k = d - kMinDecade;
  k += e >= pow10.v[static_cast<std::size_t>(k + 1)] ? 1 : 0;
  return static_cast<std::size_t>(std::min(k, kDecades - 1));
}

std::size_t PctKey(double v) {
  std::uint64_t bits;
  std::memcpy(&bits, &v, 8);
  std::size_t k = static_cast<std::size_t>((bits >> 48) & 0x7fff);
  return (bits >> 63) ? 32767 - k : 32768 + k;
}

// The upper edge of a percentile bucket.
double PctValue(std::size_t key) {
  std::uint64_t bits;
  double v;
  if (key >= 32768) {
    bits = static_cast<std::uint64_t>(key - 32768 + 1) << 48;
    std::memcpy(&v, &bits, 8);
    return v;
  }
  bits = static_cast<std::uint64_t>(32767 - key) << 48;
  std::memcpy(&v, &bits, 8);
  return -v;
}

double Percentile(const std::vector<std::uint64_t>& pct, std::size_t which, std::uint64_t total,
                  double q) {
  if (total == 0) return 0;
  std::uint64_t rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(total)));
  rank = std::max<std::uint64_t>(rank, 1);
  std::uint64_t seen = 0;
  for (std::size_t k = 0; k < kPctBuckets; ++k) {
    seen += pct[which * kPctBuckets + k];
    if (seen >= rank) return PctValue(k);
  }
  return PctValue(kPctBuckets - 1);
}

// The ULP-ordered integer of a component in float64 or (rounded to) float32.
std::int64_t Ordered(double v, bool wide) {
  if (wide) {
    std::uint64_t b;
    std::memcpy(&b, &v, 8);
    std::int64_t mag = static_cast<std::int64_t>(b & ~(std::uint64_t{1} << 63));
    return (b >> 63) ? -mag : mag;
  }
  float f = static_cast<float>(v);
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  std::int64_t mag = static_cast<std::int64_t>(b & 0x7fffffffu);
  return (b >> 31) ? -mag : mag;
}

std::uint64_t UlpDistance(double x, double y, bool wide) {
  std::int64_t ox = Ordered(x, wide), oy = Ordered(y, wide);
  return ox >= oy ? static_cast<std::uint64_t>(ox) - static_cast<std::uint64_t>(oy)
                  : static_cast<std::uint64_t>(oy) - static_cast<std::uint64_t>(ox);
}

// ---- Reading ---------------------------------------------------------------------------------

// Reads complex elements in iteration order as float64 components: a linear run of storage, a
// gather through strides, or a deflated stream. Big-endian data is swapped per component.
class ComplexReader {
 public:
  Status Init(const TensorInfo& t, bool linear, const std::string& file) {
    t_ = &t;
    linear_ = linear;
    es_ = DTypeSize(t.dtype);
    strides_ = t.strides.empty() ? ContiguousStrides(t.shape) : t.strides;
    if (t.storage.is_deflated()) {
      z_ = std::make_unique<InflateStream>();
      if (auto s = z_->Init(t.storage.deflated, t.storage.deflated_size, t.storage.inflated_limit,
                            file, t.name);
          !s) {
        return s;
      }
      if (auto s = z_->Skip(t.storage.inflated_skip); !s) return s;
    }
    if (z_ || !linear) bytes_.resize(kBlock * es_);
    return OkStatus();
  }

  // Elements [start, start + n) of the iteration into re[], im[].
  Status Load(std::uint64_t start, std::size_t n, double* re, double* im) {
    auto raw = Raw(start, n);
    if (!raw) return raw.take_error();
    const std::size_t cs = es_ / 2;
    for (std::size_t i = 0; i < n; ++i) {
      const unsigned char* p = *raw + i * es_;
      re[i] = Component(p, cs);
      im[i] = Component(p + cs, cs);
    }
    return OkStatus();
  }

 private:
  double Component(const unsigned char* p, std::size_t cs) const {
    if (cs == 4) {
      std::uint32_t v;
      std::memcpy(&v, p, 4);
      if (t_->big_endian) v = __builtin_bswap32(v);
      float f;
      std::memcpy(&f, &v, 4);
      return f;
    }
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    if (t_->big_endian) v = __builtin_bswap64(v);
    double d;
    std::memcpy(&d, &v, 8);
    return d;
  }

  Result<const unsigned char*> Raw(std::uint64_t start, std::size_t n) {
    if (z_) {
      if (auto s = z_->ReadExactly(bytes_.data(), n * es_); !s) return s.take_error();
      return bytes_.data();
    }
    if (linear_) return t_->storage.data + start * es_;
    // Gather in C order: the multi-index of `start`, then step it element by element.
    std::size_t nd = t_->shape.size();
    std::vector<std::uint64_t> idx(nd, 0);
    std::uint64_t rem = start;
    std::int64_t off = 0;
    for (std::size_t d = nd; d-- > 0;) {
      idx[d] = rem % t_->shape[d];
      rem /= t_->shape[d];
      off += static_cast<std::int64_t>(idx[d]) * strides_[d];
    }
    for (std::size_t i = 0; i < n; ++i) {
      std::memcpy(bytes_.data() + i * es_, t_->storage.data + static_cast<std::uint64_t>(off) * es_,
                  es_);
      for (std::size_t d = nd; d-- > 0;) {
        if (++idx[d] < t_->shape[d]) {
          off += strides_[d];
          break;
        }
        off -= static_cast<std::int64_t>(idx[d] - 1) * strides_[d];
        idx[d] = 0;
      }
    }
    return bytes_.data();
  }

  const TensorInfo* t_ = nullptr;
  bool linear_ = true;
  std::size_t es_ = 8;
  std::vector<std::int64_t> strides_;
  std::unique_ptr<InflateStream> z_;
  std::vector<unsigned char> bytes_;
};

// ---- Accumulation ----------------------------------------------------------------------------

// The moments Pearson's correlation and the side statistics need, per finite pair: the components
// a.re, a.im, b.re, b.im and the moduli |a|, |b|.
constexpr std::size_t kMoments = 6;
using Moments = std::array<double, kMoments>;

struct Acc {
  std::uint64_t n = 0;  // Finite pairs.
  double sum_e = 0, sum_sq = 0, sum_rel = 0, sum_ex = 0;
  double max_e = -1, max_rel = 0, max_ex = -INFINITY;
  std::uint64_t max_i = 0;
  std::uint64_t n_rel = 0, zero_b_err = 0, outside = 0, equal = 0;
  std::uint64_t nan_a = 0, nan_b = 0, pinf_a = 0, ninf_a = 0, pinf_b = 0, ninf_b = 0;
  std::uint64_t nan_mismatch = 0, nf_outside = 0;
  double min_a = INFINITY, max_a = -INFINITY, min_b = INFINITY, max_b = -INFINITY;  // Moduli.
  Moments mean{}, m2{};
  double c_re = 0, c_im = 0;  // Co-moments of a.re with b.re and of a.im with b.im.
  double saa = 0, sbb = 0, sab = 0;
  std::uint64_t max_ulp = 0;
  std::array<std::uint64_t, kDecades> hist{};
  std::uint64_t hist_zero = 0;
  std::vector<std::uint64_t> pct;  // 3 × kPctBuckets when percentiles are kept.

  // Chan's parallel merge of another set's moments into these.
  void MergeMoments(std::uint64_t nb, const Moments& mb, const Moments& m2b, double cre,
                    double cim) {
    if (nb == 0) return;
    double na = static_cast<double>(n), nbd = static_cast<double>(nb), tot = na + nbd;
    Moments d{};
    for (std::size_t k = 0; k < kMoments; ++k) {
      d[k] = mb[k] - mean[k];
      mean[k] += d[k] * nbd / tot;
      m2[k] += m2b[k] + d[k] * d[k] * na * nbd / tot;
    }
    c_re += cre + d[0] * d[2] * na * nbd / tot;
    c_im += cim + d[1] * d[3] * na * nbd / tot;
    n += nb;
  }

  void Merge(const Acc& o) {
    if (o.max_e > max_e) {
      max_e = o.max_e;
      max_i = o.max_i;
    }
    sum_e += o.sum_e;
    sum_sq += o.sum_sq;
    sum_rel += o.sum_rel;
    sum_ex += o.sum_ex;
    max_rel = std::max(max_rel, o.max_rel);
    max_ex = std::max(max_ex, o.max_ex);
    n_rel += o.n_rel;
    zero_b_err += o.zero_b_err;
    outside += o.outside;
    equal += o.equal;
    nan_a += o.nan_a;
    nan_b += o.nan_b;
    pinf_a += o.pinf_a;
    ninf_a += o.ninf_a;
    pinf_b += o.pinf_b;
    ninf_b += o.ninf_b;
    nan_mismatch += o.nan_mismatch;
    nf_outside += o.nf_outside;
    min_a = std::min(min_a, o.min_a);
    max_a = std::max(max_a, o.max_a);
    min_b = std::min(min_b, o.min_b);
    max_b = std::max(max_b, o.max_b);
    MergeMoments(o.n, o.mean, o.m2, o.c_re, o.c_im);
    saa += o.saa;
    sbb += o.sbb;
    sab += o.sab;
    max_ulp = std::max(max_ulp, o.max_ulp);
    for (std::size_t i = 0; i < hist.size(); ++i) hist[i] += o.hist[i];
    hist_zero += o.hist_zero;
    if (!o.pct.empty()) {
      if (pct.empty()) pct.assign(o.pct.size(), 0);
      for (std::size_t i = 0; i < pct.size(); ++i) pct[i] += o.pct[i];
    }
  }
};

// A block's components: a.re, a.im, b.re, b.im, kBlock each, and the flat positions of the
// finite pairs gathered out of a block with a non-finite element.
struct Buffers {
  std::vector<double> v = std::vector<double>(8 * kBlock);
  std::vector<std::uint64_t> idx = std::vector<std::uint64_t>(kBlock);
  double* in(std::size_t k) { return v.data() + k * kBlock; }
  double* finite(std::size_t k) { return v.data() + (4 + k) * kBlock; }
};

class ComplexKernel {
 public:
  explicit ComplexKernel(const StatsConfig& cfg) : cfg_(cfg) {}

  // One block of n elements whose flat positions are base + i: non-finite pairs are counted
  // here, finite pairs are gathered and go to Finite().
  void Block(Buffers& buf, std::size_t n, std::uint64_t base, Acc& acc) const {
    const double *ar = buf.in(0), *ai = buf.in(1), *br = buf.in(2), *bi = buf.in(3);
    double *far = buf.finite(0), *fai = buf.finite(1), *fbr = buf.finite(2), *fbi = buf.finite(3);
    std::size_t k = 0;
    for (std::size_t i = 0; i < n; ++i) {
      bool fin_a = std::isfinite(ar[i]) && std::isfinite(ai[i]);
      bool fin_b = std::isfinite(br[i]) && std::isfinite(bi[i]);
      if (fin_a && fin_b) {
        far[k] = ar[i];
        fai[k] = ai[i];
        fbr[k] = br[i];
        fbi[k] = bi[i];
        buf.idx[k++] = base + i;
        continue;
      }
      bool nan_a = std::isnan(ar[i]) || std::isnan(ai[i]);
      bool nan_b = std::isnan(br[i]) || std::isnan(bi[i]);
      bool inf_a = !fin_a && !nan_a, inf_b = !fin_b && !nan_b;
      acc.nan_a += nan_a;
      acc.nan_b += nan_b;
      // An infinite element counts under the sign of its first infinite component.
      if (inf_a) ++(InfSign(ar[i], ai[i]) > 0 ? acc.pinf_a : acc.ninf_a);
      if (inf_b) ++(InfSign(br[i], bi[i]) > 0 ? acc.pinf_b : acc.ninf_b);
      acc.nan_mismatch += nan_a != nan_b;
      bool eq = ar[i] == br[i] && ai[i] == bi[i];
      acc.equal += eq;
      bool pass = (nan_a && nan_b && cfg_.equal_nan) || (inf_a && eq && cfg_.inf_equal);
      acc.outside += !pass;
      acc.nf_outside += !pass;
    }
    Finite(far, fai, fbr, fbi, k, buf.idx.data(), acc);
  }

 private:
  static double InfSign(double re, double im) { return std::isinf(re) ? re : im; }

  void Finite(const double* ar, const double* ai, const double* br, const double* bi, std::size_t n,
              const std::uint64_t* idx, Acc& acc) const {
    if (n == 0) return;
    const double atol = cfg_.atol, rtol = cfg_.rtol;
    const bool either = cfg_.rule == Rule::kEither;
    const bool ulp = cfg_.ulp_dtype.has_value();
    const bool wide = ulp && *cfg_.ulp_dtype == DType::kF64;
    Moments sum{};
    for (std::size_t i = 0; i < n; ++i) {
      double dr = ar[i] - br[i], di = ai[i] - bi[i];
      double e = std::hypot(dr, di), ab = std::hypot(br[i], bi[i]), aa = std::hypot(ar[i], ai[i]);
      double rel = ab > 0 ? e / ab : 0.0;
      double ex = e - rtol * ab;
      acc.sum_e += e;
      acc.sum_sq += dr * dr + di * di;
      acc.sum_rel += rel;
      acc.sum_ex += ex;
      if (e > acc.max_e) {
        acc.max_e = e;
        acc.max_i = idx[i];
      }
      acc.max_rel = std::max(acc.max_rel, rel);
      acc.max_ex = std::max(acc.max_ex, ex);
      acc.min_a = std::min(acc.min_a, aa);
      acc.max_a = std::max(acc.max_a, aa);
      acc.min_b = std::min(acc.min_b, ab);
      acc.max_b = std::max(acc.max_b, ab);
      acc.equal += ar[i] == br[i] && ai[i] == bi[i];
      acc.n_rel += ab > 0;
      acc.zero_b_err += ab == 0 && e > 0;
      acc.outside += either ? (e > atol && (ab == 0 || rel > rtol)) : ex > atol;
      acc.saa += ar[i] * ar[i] + ai[i] * ai[i];
      acc.sbb += br[i] * br[i] + bi[i] * bi[i];
      acc.sab += ar[i] * br[i] + ai[i] * bi[i];  // Re(a · conj(b)).
      if (e == 0) {
        ++acc.hist_zero;
      } else {
        ++acc.hist[DecadeBin(e)];
      }
      if (ulp) {
        acc.max_ulp = std::max(
            {acc.max_ulp, UlpDistance(ar[i], br[i], wide), UlpDistance(ai[i], bi[i], wide)});
      }
      if (!acc.pct.empty()) {
        ++acc.pct[PctKey(e)];
        ++acc.pct[kPctBuckets + PctKey(ab > 0 ? e / ab : (e > 0 ? INFINITY : 0.0))];
        ++acc.pct[2 * kPctBuckets + PctKey(ex)];
      }
      const Moments v = {ar[i], ai[i], br[i], bi[i], aa, ab};
      for (std::size_t k = 0; k < kMoments; ++k) sum[k] += v[k];
    }
    // The block's own moments about its means (a second, centred pass), then Chan's merge.
    const double nd = static_cast<double>(n);
    Moments mean{}, m2{};
    for (std::size_t k = 0; k < kMoments; ++k) mean[k] = sum[k] / nd;
    double cre = 0, cim = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const Moments d = {ar[i] - mean[0],
                         ai[i] - mean[1],
                         br[i] - mean[2],
                         bi[i] - mean[3],
                         std::hypot(ar[i], ai[i]) - mean[4],
                         std::hypot(br[i], bi[i]) - mean[5]};
      for (std::size_t k = 0; k < kMoments; ++k) m2[k] += d[k] * d[k];
      cre += d[0] * d[2];
      cim += d[1] * d[3];
    }
    acc.MergeMoments(n, mean, m2, cre, cim);
  }

  const StatsConfig& cfg_;
};

Status RunRange(const TensorInfo& a, const TensorInfo& b, bool linear, std::uint64_t begin,
                std::uint64_t end, const ComplexKernel& kernel, Acc& acc, const std::string& fa,
                const std::string& fb) {
  ComplexReader ra, rb;
  if (auto s = ra.Init(a, linear || IsC(a), fa); !s) return s;
  if (auto s = rb.Init(b, linear || IsC(b), fb); !s) return s;
  Buffers buf;
  for (std::uint64_t i = begin; i < end; i += kBlock) {
    std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kBlock, end - i));
    if (auto s = ra.Load(i, n, buf.in(0), buf.in(1)); !s) return s;
    if (auto s = rb.Load(i, n, buf.in(2), buf.in(3)); !s) return s;
    kernel.Block(buf, n, i, acc);
  }
  return OkStatus();
}

}  // namespace

Result<TensorStats> ComputeComplexStats(const TensorInfo& a, const TensorInfo& b,
                                        const StatsConfig& cfg, const std::string& file_a,
                                        const std::string& file_b) {
  if (!IsComplex(a.dtype) || !IsComplex(b.dtype)) {
    const TensorInfo& c = IsComplex(a.dtype) ? a : b;
    const TensorInfo& r = IsComplex(a.dtype) ? b : a;
    return MakeError(ErrorCode::kInput,
                     "tensor '" + c.name + "': a " + std::string(DTypeName(c.dtype)) +
                         " tensor cannot be compared with a real " +
                         std::string(DTypeName(r.dtype)) + " one",
                     &c == &a ? file_a : file_b);
  }
  DT_CHECK(a.shape == b.shape);
  const bool linear = IsDense(a) && IsDense(b) &&
                      (a.strides.empty() ? ContiguousStrides(a.shape) : a.strides) ==
                          (b.strides.empty() ? ContiguousStrides(b.shape) : b.strides);
  for (const TensorInfo* t : {&a, &b}) {
    if (t->storage.is_deflated() && !linear && !IsC(*t)) {
      return MakeError(ErrorCode::kInput,
                       "tensor '" + t->name +
                           "': a compressed Fortran-order member can only be compared with a "
                           "tensor of the same layout",
                       t == &a ? file_a : file_b);
    }
  }
  const std::uint64_t n = a.numel;
  ComplexKernel kernel(cfg);
  bool streamed = a.storage.is_deflated() || b.storage.is_deflated();
  int threads = streamed || n < 4 * kBlock ? 1 : std::max(1, cfg.threads);
  std::vector<Acc> accs(static_cast<std::size_t>(threads));
  if (cfg.percentiles) {
    for (Acc& acc : accs) acc.pct.assign(3 * kPctBuckets, 0);
  }
  std::vector<Status> status(static_cast<std::size_t>(threads), OkStatus());
  // Ranges start on block boundaries, so the result does not depend on the thread count.
  auto bounds = [&](int t) {
    std::uint64_t blocks = (n + kBlock - 1) / kBlock;
    std::uint64_t lo = blocks * static_cast<std::uint64_t>(t) / static_cast<std::uint64_t>(threads);
    return std::min(n, lo * kBlock);
  };
  if (threads == 1) {
    status[0] = RunRange(a, b, linear, 0, n, kernel, accs[0], file_a, file_b);
  } else {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        status[static_cast<std::size_t>(t)] =
            RunRange(a, b, linear, bounds(t), bounds(t + 1), kernel,
                     accs[static_cast<std::size_t>(t)], file_a, file_b);
      });
    }
    for (auto& th : pool) th.join();
  }
  for (auto& s : status) {
    if (!s) return s.take_error();
  }
  Acc acc = std::move(accs[0]);
  for (std::size_t t = 1; t < accs.size(); ++t) acc.Merge(accs[t]);

  TensorStats s;
  s.numel = n;
  s.finite_pairs = acc.n;
  const double fn = static_cast<double>(acc.n);
  s.cosine = NAN;
  s.pearson = NAN;
  if (acc.n > 0) {
    s.max_abs = acc.max_e;
    s.max_abs_index = linear ? UnravelStorage(a, acc.max_i) : UnravelC(a.shape, acc.max_i);
    s.mean_abs = acc.sum_e / fn;
    s.rmse = std::sqrt(acc.sum_sq / fn);
    s.max_rel = acc.zero_b_err > 0 ? INFINITY : acc.max_rel;
    s.mean_rel = acc.n_rel > 0 ? acc.sum_rel / static_cast<double>(acc.n_rel) : 0;
    s.mean_excess = acc.sum_ex / fn;
    // Re(Σ a·conj(b)) / (‖a‖‖b‖), and the same of the centred values.
    double denom = std::sqrt(acc.saa) * std::sqrt(acc.sbb);
    if (denom > 0) s.cosine = acc.sab / denom;
    double pd = std::sqrt(acc.m2[0] + acc.m2[1]) * std::sqrt(acc.m2[2] + acc.m2[3]);
    if (pd > 0) s.pearson = (acc.c_re + acc.c_im) / pd;
    s.a = {acc.min_a, acc.max_a, acc.mean[4], std::sqrt(acc.m2[4] / fn)};
    s.b = {acc.min_b, acc.max_b, acc.mean[5], std::sqrt(acc.m2[5] / fn)};
    s.min_passing_atol = cfg.rule == Rule::kEither ? s.max_abs : std::max(0.0, acc.max_ex);
    s.min_passing_rtol = s.max_rel;
  }
  if (cfg.ulp_dtype) s.max_ulp = acc.max_ulp;
  s.n_outside = acc.outside;
  s.nonfinite_outside = acc.nf_outside;
  s.frac_outside = n > 0 ? static_cast<double>(acc.outside) / static_cast<double>(n) : 0;
  s.nan_a = acc.nan_a;
  s.nan_b = acc.nan_b;
  s.posinf_a = acc.pinf_a;
  s.neginf_a = acc.ninf_a;
  s.posinf_b = acc.pinf_b;
  s.neginf_b = acc.ninf_b;
  s.nan_mismatch = acc.nan_mismatch;
  s.equal = acc.equal;
  int lo = kDecades, hi = -1;
  for (int i = 0; i < kDecades; ++i) {
    if (acc.hist[static_cast<std::size_t>(i)] != 0) {
      lo = std::min(lo, i);
      hi = std::max(hi, i);
    }
  }
  s.histogram.zero = acc.hist_zero;
  if (hi >= 0) {
    s.histogram.first_decade = kMinDecade + lo;
    s.histogram.counts.assign(acc.hist.begin() + lo, acc.hist.begin() + hi + 1);
  }
  if (cfg.percentiles) {
    s.median_abs = Percentile(acc.pct, 0, acc.n, 0.5);
    s.p99_abs = Percentile(acc.pct, 0, acc.n, 0.99);
    s.median_rel = Percentile(acc.pct, 1, acc.n, 0.5);
    s.p99_rel = Percentile(acc.pct, 1, acc.n, 0.99);
    s.median_excess = Percentile(acc.pct, 2, acc.n, 0.5);
    s.p99_excess = Percentile(acc.pct, 2, acc.n, 0.99);
  }
  return s;
}

}  // namespace dt::compare
