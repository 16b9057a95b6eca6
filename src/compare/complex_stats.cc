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
#include "compare/stats_common.h"

namespace dt::compare {

namespace {

using namespace detail;  // The layout, reader and thread split shared with stats.cc.

std::uint64_t UlpDistance(double x, double y, bool wide) {
  const DType t = wide ? DType::kF64 : DType::kF32;
  std::int64_t ox = OrderedIn(t, x), oy = OrderedIn(t, y);
  return ox >= oy ? static_cast<std::uint64_t>(ox) - static_cast<std::uint64_t>(oy)
                  : static_cast<std::uint64_t>(oy) - static_cast<std::uint64_t>(ox);
}

// ---- Reading ---------------------------------------------------------------------------------

// Reads complex elements in iteration order as float64 components (big-endian data is swapped
// per component).
class ComplexReader : public ElementReader {
 public:
  // Elements [start, start + n) of the iteration into re[], im[].
  Status Load(std::uint64_t start, std::size_t n, double* re, double* im) {
    auto raw = Raw(start, n);
    if (!raw) return raw.take_error();
    // The components as 2n reals of the component dtype, then split.
    Convert(ComponentDType(tensor().dtype), tensor().big_endian, *raw, 2 * n, parts_.data());
    for (std::size_t i = 0; i < n; ++i) {
      re[i] = parts_[2 * i];
      im[i] = parts_[2 * i + 1];
    }
    return OkStatus();
  }

 private:
  std::vector<double> parts_ = std::vector<double>(2 * kBlock);
};

// ---- Accumulation ----------------------------------------------------------------------------

// The moments Pearson's correlation and the side statistics need, per finite pair: the components
// a.re, a.im, b.re, b.im and the moduli |a|, |b|.
constexpr std::size_t kMoments = 6;
using Moments = std::array<double, kMoments>;

struct Acc : AccCommon {
  // The side extremes of AccCommon are of the moduli here.
  Moments mean{}, m2{};
  double c_re = 0, c_im = 0;  // Co-moments of a.re with b.re and of a.im with b.im.

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
    MergeCommon(o);
    MergeMoments(o.n, o.mean, o.m2, o.c_re, o.c_im);
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
  ComplexKernel kernel(cfg);
  return PairStats<Acc>(
      a, b, cfg, file_a, file_b,
      [&](bool linear, std::uint64_t begin, std::uint64_t end, Acc& acc) {
        return RunRange(a, b, linear, begin, end, kernel, acc, file_a, file_b);
      },
      [](const Acc& acc, double n, TensorStats& s) {
        // Pearson's correlation of the complex values: Re Σ (a-ā)·conj(b-b̄) over the norms.
        double pd = std::sqrt(acc.m2[0] + acc.m2[1]) * std::sqrt(acc.m2[2] + acc.m2[3]);
        if (pd > 0) s.pearson = (acc.c_re + acc.c_im) / pd;
        s.a = {acc.min_a, acc.max_a, acc.mean[4], std::sqrt(acc.m2[4] / n)};
        s.b = {acc.min_b, acc.max_b, acc.mean[5], std::sqrt(acc.m2[5] / n)};
      });
}

}  // namespace dt::compare
