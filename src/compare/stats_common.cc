#include "compare/stats_common.h"

#include <algorithm>

#include "util/parallel.h"

namespace dt::compare::detail {

const std::array<double, kDecades + 2>& Pow10() {
  static const std::array<double, kDecades + 2> table = [] {
    std::array<double, kDecades + 2> t{};
    for (int k = 0; k < kDecades + 2; ++k) {
      t[static_cast<std::size_t>(k)] =
          std::strtod(("1e" + std::to_string(kMinDecade + k)).c_str(), nullptr);
    }
    return t;
  }();
  return table;
}

std::size_t DecadeBin(double e) {
  std::uint64_t bits;
  std::memcpy(&bits, &e, 8);
  if ((bits >> 52) == 0) return 0;
  std::int32_t p = static_cast<std::int32_t>((bits >> 52) & 0x7ff) - 1023;
  // floor(p · log10 2) for |p| < 1650 (the constant is log10(2) · 2^18, rounded).
  std::int32_t d = std::clamp((p * 78913) >> 18, kMinDecade, kMaxDecade - 1);
  std::int32_t k = d - kMinDecade;
  k += e >= Pow10()[static_cast<std::size_t>(k + 1)] ? 1 : 0;
  return static_cast<std::size_t>(std::min(k, kDecades - 1));
}

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

bool IsC(const TensorInfo& t) {
  return t.strides.empty() || t.strides == ContiguousStrides(t.shape);
}

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

Result<bool> StorageOrder(const TensorInfo& a, const TensorInfo& b, const std::string& file_a,
                          const std::string& file_b) {
  const bool same_dense = IsDense(a) && IsDense(b) &&
                          (a.strides.empty() ? ContiguousStrides(a.shape) : a.strides) ==
                              (b.strides.empty() ? ContiguousStrides(b.shape) : b.strides);
  for (const TensorInfo* t : {&a, &b}) {
    if (t->storage.is_deflated() && !same_dense && !IsC(*t)) {
      return MakeError(ErrorCode::kInput,
                       "tensor '" + t->name +
                           "': a compressed Fortran-order member can only be compared with a "
                           "tensor of the same layout",
                       t == &a ? file_a : file_b);
    }
  }
  return same_dense;
}

Status ElementReader::Init(const TensorInfo& t, bool linear, const std::string& file) {
  t_ = &t;
  linear_ = linear;
  // Sub-byte tensors (safetensors only) are mapped and C-contiguous, so never gathered or
  // inflated: only their linear runs are addressed, in bytes, by BytesOf.
  DT_CHECK(!IsSubByte(t.dtype) || (linear && !t.storage.is_deflated()));
  es_ = static_cast<std::size_t>(DTypeBits(t.dtype) / 8);
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

Result<const unsigned char*> ElementReader::Raw(std::uint64_t start, std::size_t n) {
  if (z_) {
    if (auto s = z_->ReadExactly(bytes_.data(), n * es_); !s) return s.take_error();
    return bytes_.data();
  }
  if (linear_) return t_->storage.data + BytesOf(t_->dtype, start);
  // Gather in C order: the multi-index of `start`, then step it element by element.
  const std::size_t nd = t_->shape.size();
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

int RangesFor(const TensorInfo& a, const TensorInfo& b, int threads) {
  const bool streamed = a.storage.is_deflated() || b.storage.is_deflated();
  return streamed || a.numel < 4 * kBlock ? 1 : std::max(1, threads);
}

Status ForEachRange(std::uint64_t n, int ranges,
                    const std::function<Status(std::size_t, std::uint64_t, std::uint64_t)>& fn) {
  const auto r = static_cast<std::uint64_t>(std::max(1, ranges));
  const std::uint64_t blocks = (n + kBlock - 1) / kBlock;
  auto bound = [&](std::uint64_t t) { return std::min(n, blocks * t / r * kBlock); };
  if (r == 1) return fn(0, 0, n);
  std::vector<Status> status(r, OkStatus());
  ParallelFor(r, static_cast<unsigned>(r),
              [&](std::size_t t, unsigned) { status[t] = fn(t, bound(t), bound(t + 1)); });
  for (auto& s : status) {
    if (!s) return s.take_error();
  }
  return OkStatus();
}

void AccCommon::MergeCommon(const AccCommon& o) {
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

TensorStats CommonStats(const AccCommon& acc, const TensorInfo& a, bool storage_order,
                        const StatsConfig& cfg) {
  TensorStats s;
  s.numel = a.numel;
  s.finite_pairs = acc.n;
  s.cosine = NAN;
  s.pearson = NAN;
  const double fn = static_cast<double>(acc.n);
  if (acc.n > 0) {
    s.max_abs = acc.max_e;
    s.max_abs_index = storage_order ? UnravelStorage(a, acc.max_i) : UnravelC(a.shape, acc.max_i);
    s.mean_abs = acc.sum_e / fn;
    s.rmse = std::sqrt(acc.sum_sq / fn);
    s.max_rel = acc.zero_b_err > 0 ? INFINITY : acc.max_rel;
    s.mean_rel = acc.n_rel > 0 ? acc.sum_rel / static_cast<double>(acc.n_rel) : 0;
    s.mean_excess = acc.sum_ex / fn;
    // Σab / (‖a‖‖b‖); for complex pairs sab is Re Σ a·conj(b).
    const double denom = std::sqrt(acc.saa) * std::sqrt(acc.sbb);
    if (denom > 0) s.cosine = acc.sab / denom;
    s.min_passing_atol = cfg.rule == Rule::kEither ? s.max_abs : std::max(0.0, acc.max_ex);
    s.min_passing_rtol = s.max_rel;
  }
  if (cfg.ulp_dtype) s.max_ulp = acc.max_ulp;
  s.n_outside = acc.outside;
  s.nonfinite_outside = acc.nf_outside;
  s.frac_outside =
      a.numel > 0 ? static_cast<double>(acc.outside) / static_cast<double>(a.numel) : 0;
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

}  // namespace dt::compare::detail
