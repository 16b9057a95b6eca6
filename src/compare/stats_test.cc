// The fused statistics on small inputs whose answers are known exactly.
#include "compare/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace dt::compare {
namespace {

TensorInfo F64(const std::vector<double>& v, std::vector<std::uint64_t> shape = {}) {
  TensorInfo t;
  t.name = "x";
  t.dtype = DType::kF64;
  t.shape = shape.empty() ? std::vector<std::uint64_t>{v.size()} : shape;
  t.numel = v.size();
  t.storage_elements = v.size();
  t.storage.data = reinterpret_cast<const unsigned char*>(v.data());
  return t;
}

TEST(CompareStatsTest, ErrorsIndexHistogramAndTolerance) {
  std::vector<double> b = {1, 2, 3, 4, 0, 0};
  std::vector<double> a = {1, 2.001, 3, 3.5, 0, 1e-12};
  StatsConfig cfg;
  cfg.atol = 1e-5;
  cfg.rtol = 1e-3;
  cfg.ulp_dtype = DType::kF64;
  auto s = ComputeStats(F64(a, {2, 3}), F64(b, {2, 3}), cfg, "a", "b");
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ(s->max_abs, 0.5);
  EXPECT_EQ(s->max_abs_index, (std::vector<std::uint64_t>{1, 0}));
  EXPECT_EQ(s->n_outside, 1u);  // 2.001 vs 2 is within 1e-5 + 2e-3; 3.5 vs 4 is not.
  EXPECT_EQ(s->equal, 3u);
  EXPECT_TRUE(std::isinf(s->max_rel));  // 1e-12 against an exact zero.
  EXPECT_DOUBLE_EQ(s->min_passing_atol, 0.5 - 1e-3 * 4);
  // Decades: 1e-12 → -12, 0.001 → -3 (2.001 - 2 is a hair under 1e-3), 0.5 → -1.
  EXPECT_EQ(s->histogram.zero, 3u);
  int first = s->histogram.first_decade;
  std::uint64_t total = 0;
  for (auto c : s->histogram.counts) total += c;
  EXPECT_EQ(total, 3u);
  EXPECT_EQ(first, -12);
  EXPECT_EQ(s->histogram.counts.back(), 1u);  // The 0.5 in decade -1.
}

TEST(CompareStatsTest, HistogramBinsAreExactAtPowersOfTen) {
  std::vector<double> b(5, 0.0);
  std::vector<double> a = {1e-3, std::nextafter(1e-3, 0.0), 1.0, std::nextafter(1.0, 0.0), 1e300};
  StatsConfig cfg;
  auto s = ComputeStats(F64(a), F64(b), cfg, "a", "b");
  ASSERT_TRUE(s);
  ASSERT_EQ(s->histogram.first_decade, -4);
  // -4: one, -3: one, -2: 0, -1: one, 0: one; 1e300 clamps into the last bin (39).
  EXPECT_EQ(s->histogram.counts[0], 1u);
  EXPECT_EQ(s->histogram.counts[1], 1u);
  EXPECT_EQ(s->histogram.counts[2], 0u);
  EXPECT_EQ(s->histogram.counts[3], 1u);
  EXPECT_EQ(s->histogram.counts[4], 1u);
  EXPECT_EQ(s->histogram.first_decade + static_cast<int>(s->histogram.counts.size()) - 1, 39);
}

TEST(CompareStatsTest, UlpNanAndInfRules) {
  float x = 1.0f, y = std::nextafter(std::nextafter(1.0f, 2.0f), 2.0f);
  std::vector<float> a = {x, -0.0f, std::numeric_limits<float>::quiet_NaN(), INFINITY};
  std::vector<float> b = {y, 0.0f, std::numeric_limits<float>::quiet_NaN(), INFINITY};
  auto mk = [](const std::vector<float>& v) {
    TensorInfo t;
    t.dtype = DType::kF32;
    t.shape = {v.size()};
    t.numel = v.size();
    t.storage.data = reinterpret_cast<const unsigned char*>(v.data());
    return t;
  };
  StatsConfig cfg;
  cfg.ulp_dtype = DType::kF32;
  auto s = ComputeStats(mk(a), mk(b), cfg, "a", "b");
  ASSERT_TRUE(s);
  EXPECT_EQ(*s->max_ulp, 2u);
  EXPECT_EQ(s->n_outside, 2u);  // NaN pair and inf pair, by default.
  EXPECT_EQ(s->nan_mismatch, 0u);
  cfg.equal_nan = cfg.inf_equal = true;
  s = ComputeStats(mk(a), mk(b), cfg, "a", "b");
  EXPECT_EQ(s->n_outside, 0u);
}

TEST(CompareStatsTest, StridedGatherMatchesContiguousAndThreadsAgree) {
  const std::uint64_t rows = 300, cols = 70;
  std::vector<double> c(rows * cols), f(rows * cols), r(rows * cols);
  for (std::uint64_t i = 0; i < rows; ++i) {
    for (std::uint64_t j = 0; j < cols; ++j) {
      double v = std::sin(static_cast<double>(i * cols + j));
      c[i * cols + j] = v;
      f[j * rows + i] = v;
      r[i * cols + j] = v + 1e-9 * static_cast<double>(j);
    }
  }
  TensorInfo tf = F64(f, {rows, cols});
  tf.strides = {1, static_cast<std::int64_t>(rows)};
  StatsConfig cfg;
  cfg.percentiles = true;
  auto s1 = ComputeStats(tf, F64(r, {rows, cols}), cfg, "a", "b");
  auto s2 = ComputeStats(F64(c, {rows, cols}), F64(r, {rows, cols}), cfg, "a", "b");
  cfg.threads = 3;
  auto s3 = ComputeStats(F64(c, {rows, cols}), F64(r, {rows, cols}), cfg, "a", "b");
  ASSERT_TRUE(s1 && s2 && s3);
  EXPECT_EQ(s1->max_abs, s2->max_abs);
  EXPECT_EQ(s1->max_abs_index, s2->max_abs_index);
  EXPECT_EQ(s1->max_abs_index[1], cols - 1);
  EXPECT_DOUBLE_EQ(s1->mean_abs, s2->mean_abs);
  EXPECT_DOUBLE_EQ(s2->pearson, s3->pearson);
  EXPECT_EQ(s2->max_abs_index, s3->max_abs_index);
  EXPECT_GE(s2->p99_abs, 68e-9);  // Upper bucket edge: never below the true percentile.
  EXPECT_LE(s2->p99_abs, 69e-9 * 1.07);
}

}  // namespace
}  // namespace dt::compare

namespace dt::compare {
namespace {

// Widens float32 (or bfloat16) bit patterns to float64 values, exactly.
std::vector<double> Widen(const std::vector<std::uint32_t>& bits) {
  std::vector<double> out;
  for (std::uint32_t b : bits) {
    float f;
    std::memcpy(&f, &b, 4);
    out.push_back(f);
  }
  return out;
}

// The native float32 lanes (f32 and bf16 pairs) agree with the float64 path on the same values:
// errors over 30 decades (the per-element bins), values near powers of ten, zeros, subnormals,
// NaN and infinities in some blocks, several blocks and both threads.
TEST(CompareStatsTest, NativeLanesMatchFloat64Path) {
  const std::size_t n = 40000;
  std::vector<std::uint32_t> a32(n), b32(n);
  std::uint64_t r = 12345;
  auto next = [&] {
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::uint32_t>(r >> 33);
  };
  for (std::size_t i = 0; i < n; ++i) {
    // The first blocks span a few decades of error (counted at the decade edges), the later
    // ones thirty (binned one by one).
    bool narrow = i < 20000;
    int e2 = narrow ? static_cast<int>(next() % 6) - 3 : static_cast<int>(next() % 60) - 40;
    float x = std::ldexp(static_cast<float>(next() % 1000 + 1), e2);
    if (next() % 2) x = -x;
    float y = x;
    std::uint32_t mode = next() % 8;
    if (mode == 1) y = std::nextafter(x, 0.0f);
    if (mode == 2) y = x * (1 + 1e-3f);
    int p10 = narrow ? static_cast<int>(next() % 4) - 4 : static_cast<int>(next() % 20) - 12;
    if (mode == 3) y = x + std::pow(10.0f, static_cast<float>(p10));
    if (mode == 4 && !narrow) y = 0;
    if (mode == 5 && !narrow) {
      y = std::numeric_limits<float>::denorm_min() * static_cast<float>(next() % 9);
    }
    if (i > 30000 && i % 977 == 0) y = std::numeric_limits<float>::quiet_NaN();
    if (i > 30000 && i % 1499 == 0) x = -std::numeric_limits<float>::infinity();
    std::memcpy(&a32[i], &x, 4);
    std::memcpy(&b32[i], &y, 4);
  }
  for (DType t : {DType::kF32, DType::kBF16}) {
    std::vector<std::uint32_t> wa = a32, wb = b32;
    std::vector<std::uint16_t> ha(n), hb(n);
    if (t == DType::kBF16) {
      for (std::size_t i = 0; i < n; ++i) {
        ha[i] = static_cast<std::uint16_t>(a32[i] >> 16);
        hb[i] = static_cast<std::uint16_t>(b32[i] >> 16);
        wa[i] = static_cast<std::uint32_t>(ha[i]) << 16;
        wb[i] = static_cast<std::uint32_t>(hb[i]) << 16;
      }
    }
    std::vector<double> da = Widen(wa), db = Widen(wb);
    auto native = [&](const void* p) {
      TensorInfo x;
      x.name = "x";
      x.dtype = t;
      x.shape = {n};
      x.numel = n;
      x.storage_elements = n;
      x.storage.data = static_cast<const unsigned char*>(p);
      return x;
    };
    const void* pa = t == DType::kF32 ? static_cast<const void*>(wa.data()) : ha.data();
    const void* pb = t == DType::kF32 ? static_cast<const void*>(wb.data()) : hb.data();
    for (Rule rule : {Rule::kAllclose, Rule::kEither}) {
      StatsConfig cfg;
      cfg.rule = rule;
      cfg.ulp_dtype = t;
      auto got = ComputeStats(native(pa), native(pb), cfg, "a", "b");
      auto want = ComputeStats(F64(da), F64(db), cfg, "a", "b");
      ASSERT_TRUE(got && want);
      EXPECT_EQ(got->finite_pairs, want->finite_pairs);
      EXPECT_EQ(got->max_abs, want->max_abs);
      EXPECT_EQ(got->max_abs_index, want->max_abs_index);
      EXPECT_NEAR(got->mean_abs, want->mean_abs, 1e-12 * want->mean_abs);
      EXPECT_NEAR(got->rmse, want->rmse, 1e-12 * want->rmse);
      EXPECT_EQ(got->max_rel, want->max_rel);
      EXPECT_NEAR(got->mean_rel, want->mean_rel, 1e-12 * want->mean_rel);
      EXPECT_EQ(got->n_outside, want->n_outside);
      EXPECT_EQ(got->nonfinite_outside, want->nonfinite_outside);
      EXPECT_NEAR(got->cosine, want->cosine, 1e-12);
      EXPECT_NEAR(got->pearson, want->pearson, 1e-12);
      EXPECT_EQ(got->max_ulp, want->max_ulp);
      EXPECT_EQ(got->nan_a + got->nan_b, want->nan_a + want->nan_b);
      EXPECT_EQ(got->neginf_a, want->neginf_a);
      EXPECT_EQ(got->nan_mismatch, want->nan_mismatch);
      EXPECT_EQ(got->equal, want->equal);
      EXPECT_EQ(got->a.min, want->a.min);
      EXPECT_EQ(got->b.max, want->b.max);
      EXPECT_NEAR(got->a.mean, want->a.mean, 1e-12 * std::fabs(want->a.mean) + 1e-300);
      EXPECT_NEAR(got->b.std, want->b.std, 1e-12 * want->b.std);
      EXPECT_EQ(got->min_passing_atol, want->min_passing_atol);
      EXPECT_NEAR(got->mean_excess, want->mean_excess, 1e-12 * std::fabs(want->mean_excess));
      EXPECT_EQ(got->histogram.first_decade, want->histogram.first_decade);
      EXPECT_EQ(got->histogram.counts, want->histogram.counts);
      EXPECT_EQ(got->histogram.zero, want->histogram.zero);
      EXPECT_GT(got->histogram.counts.size(), 12u);
    }
  }
}

// The native lanes on data that strains their shortcuts agree with the float64 path: an outlier
// first pair and means that jump between blocks (the moments' shift far from the block mean),
// |b| below 2^-126 or above 2^126 and zeros (the reciprocal's range), storage at odd
// addresses, both rules.
TEST(CompareStatsTest, NativeLanesMatchFloat64PathOnDriftAndExtremes) {
  const std::size_t n = 7 * 2048 + 333;
  std::vector<std::uint32_t> a32(n), b32(n);
  std::uint64_t r = 987654321;
  auto unit = [&] {
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(r >> 11) * 0x1p-53 - 0.5;
  };
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t block = i / 2048;
    double base = block == 1 ? 1e4 : block == 2 ? -3e5 : block == 4 ? 7e3 : 0.0;
    float x = static_cast<float>(base + unit() * (block == 1 || block == 2 ? 1.0 : 4.0));
    float y = static_cast<float>(x * (1 + 1e-3 * unit()));
    if (block == 3 && i % 7 == 0) y = std::numeric_limits<float>::denorm_min() * 3;
    if (block == 3 && i % 11 == 0) y = 0;
    if (block == 5 && i % 5 == 0) y = 1e38f * static_cast<float>(1 + unit());
    if (block == 6 && i % 3 == 0) x = y;
    if (i == 0) x = y = 1000;  // An outlier first pair: a poor shift for the first block.
    std::memcpy(&a32[i], &x, 4);
    std::memcpy(&b32[i], &y, 4);
  }
  for (DType t : {DType::kF32, DType::kBF16}) {
    std::vector<std::uint32_t> wa = a32, wb = b32;
    std::vector<unsigned char> ra(n * 4 + 1), rb(n * 4 + 1);  // One byte in: odd addresses.
    for (std::size_t i = 0; i < n; ++i) {
      if (t == DType::kBF16) {
        wa[i] &= 0xffff0000u;
        wb[i] &= 0xffff0000u;
        std::uint16_t ha = static_cast<std::uint16_t>(wa[i] >> 16);
        std::uint16_t hb = static_cast<std::uint16_t>(wb[i] >> 16);
        std::memcpy(&ra[1 + 2 * i], &ha, 2);
        std::memcpy(&rb[1 + 2 * i], &hb, 2);
      } else {
        std::memcpy(&ra[1 + 4 * i], &wa[i], 4);
        std::memcpy(&rb[1 + 4 * i], &wb[i], 4);
      }
    }
    std::vector<double> da = Widen(wa), db = Widen(wb);
    auto native = [&](const std::vector<unsigned char>& bytes) {
      TensorInfo x;
      x.name = "x";
      x.dtype = t;
      x.shape = {n};
      x.numel = n;
      x.storage_elements = n;
      x.storage.data = bytes.data() + 1;
      return x;
    };
    for (Rule rule : {Rule::kAllclose, Rule::kEither}) {
      StatsConfig cfg;
      cfg.rule = rule;
      cfg.ulp_dtype = t;
      cfg.atol = 1e-3;
      cfg.rtol = 1e-4;
      auto got = ComputeStats(native(ra), native(rb), cfg, "a", "b");
      auto want = ComputeStats(F64(da), F64(db), cfg, "a", "b");
      ASSERT_TRUE(got && want);
      EXPECT_EQ(got->max_abs, want->max_abs);
      EXPECT_EQ(got->max_abs_index, want->max_abs_index);
      EXPECT_EQ(got->max_rel, want->max_rel);
      EXPECT_NEAR(got->mean_rel, want->mean_rel, 1e-12 * want->mean_rel);
      EXPECT_EQ(got->n_outside, want->n_outside);
      EXPECT_EQ(got->min_passing_atol, want->min_passing_atol);
      EXPECT_EQ(got->max_ulp, want->max_ulp);
      EXPECT_EQ(got->equal, want->equal);
      EXPECT_NEAR(got->cosine, want->cosine, 1e-12);
      EXPECT_NEAR(got->pearson, want->pearson, 1e-12);
      for (auto [g, w] : {std::pair{got->a, want->a}, std::pair{got->b, want->b}}) {
        EXPECT_EQ(g.min, w.min);
        EXPECT_EQ(g.max, w.max);
        EXPECT_NEAR(g.mean, w.mean, 1e-12 * std::fabs(w.mean));
        EXPECT_NEAR(g.std, w.std, 1e-12 * w.std);
      }
      EXPECT_EQ(got->histogram.first_decade, want->histogram.first_decade);
      EXPECT_EQ(got->histogram.counts, want->histogram.counts);
      EXPECT_EQ(got->histogram.zero, want->histogram.zero);
    }
  }
}

// float16 ULP distances from the native lanes' bit arithmetic agree with the float64 path's
// rounding to half, for subnormal, normal and boundary halves of both signs.
TEST(CompareStatsTest, NativeFloat16UlpMatchesFloat64Path) {
  auto half_value = [](std::uint16_t h) {
    int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    double v = exp == 0 ? std::ldexp(mant, -24) : std::ldexp(1024 + mant, exp - 25);
    return (h & 0x8000) ? -v : v;
  };
  for (std::uint32_t base : {0x0000u, 0x0300u, 0x0400u, 0x3c00u, 0x7b00u}) {
    for (std::uint32_t sign : {0x0000u, 0x8000u}) {
      std::vector<std::uint16_t> a, b;
      for (std::uint32_t k = 0; k < 256; ++k) {
        a.push_back(static_cast<std::uint16_t>(sign | (base + k)));
        b.push_back(static_cast<std::uint16_t>(0x8000u ^ sign ^ (k % 3 == 0 ? base : 0x0001u)));
      }
      for (std::size_t i = 0; i < a.size(); ++i) {
        TensorInfo ta, tb;
        for (auto* t : {&ta, &tb}) {
          t->name = "x";
          t->dtype = DType::kF16;
          t->shape = {1};
          t->numel = 1;
          t->storage_elements = 1;
        }
        ta.storage.data = reinterpret_cast<const unsigned char*>(&a[i]);
        tb.storage.data = reinterpret_cast<const unsigned char*>(&b[i]);
        std::vector<double> da = {half_value(a[i])}, db = {half_value(b[i])};
        StatsConfig cfg;
        cfg.ulp_dtype = DType::kF16;
        auto got = ComputeStats(ta, tb, cfg, "a", "b");
        auto want = ComputeStats(F64(da), F64(db), cfg, "a", "b");
        ASSERT_TRUE(got && want);
        ASSERT_EQ(got->max_ulp, want->max_ulp) << std::hex << a[i] << " " << b[i];
        ASSERT_EQ(got->max_abs, want->max_abs);
      }
    }
  }
}

}  // namespace
}  // namespace dt::compare

namespace dt::compare {
namespace {

TensorInfo Raw(DType dtype, const std::string& bytes, std::uint64_t numel) {
  TensorInfo t;
  t.name = "x";
  t.dtype = dtype;
  t.shape = {numel};
  t.numel = numel;
  t.storage_elements = numel;
  t.storage.data = reinterpret_cast<const unsigned char*>(bytes.data());
  return t;
}

// The value of a small-float code from its fields, written apart from the decoder under test.
double Reference(unsigned code, int exp_bits, int mant_bits, int bias, bool fnuz) {
  unsigned sign = code >> (exp_bits + mant_bits);
  int exp = static_cast<int>((code >> mant_bits) & ((1u << exp_bits) - 1));
  double frac = static_cast<double>(code & ((1u << mant_bits) - 1)) / (1 << mant_bits);
  if (fnuz && code == 0x80) return std::numeric_limits<double>::quiet_NaN();
  double mag = exp == 0 ? frac * std::pow(2.0, 1 - bias) : (1 + frac) * std::pow(2.0, exp - bias);
  return sign ? -mag : mag;
}

// Compares `t` (the codes) with their expected float64 values: every code must decode exactly,
// NaN exactly where expected.
void ExpectDecodes(const TensorInfo& t, const std::vector<double>& want, int threads = 1) {
  StatsConfig cfg;
  cfg.atol = cfg.rtol = 0;
  cfg.threads = threads;
  std::uint64_t nans = 0;
  for (double v : want) nans += std::isnan(v);
  auto s = ComputeStats(t, F64(want), cfg, "a", "b");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->equal, want.size() - nans) << DTypeName(t.dtype);
  EXPECT_EQ(s->nan_a, nans) << DTypeName(t.dtype);
  EXPECT_EQ(s->nan_mismatch, 0u) << DTypeName(t.dtype);
  EXPECT_EQ(s->max_abs, 0.0) << DTypeName(t.dtype);
}

TEST(CompareStatsTest, Float8FnuzAndE8M0DecodeEveryCode) {
  std::string codes;
  for (int i = 0; i < 256; ++i) codes.push_back(static_cast<char>(i));
  std::vector<double> e4(256), e5(256), e8(256);
  for (unsigned i = 0; i < 256; ++i) {
    e4[i] = Reference(i, 4, 3, 8, true);
    e5[i] = Reference(i, 5, 2, 16, true);
    e8[i] = i == 0xff ? std::numeric_limits<double>::quiet_NaN() : std::pow(2.0, int(i) - 127);
  }
  // Spot values: the formats' largest finite values and their smallest subnormals.
  EXPECT_EQ(e4[0x7f], 240.0);
  EXPECT_EQ(e4[0x01], std::pow(2.0, -10));
  EXPECT_EQ(e5[0x7f], 57344.0);
  EXPECT_EQ(e5[0x01], std::pow(2.0, -17));
  EXPECT_EQ(e8[0x7f], 1.0);
  ExpectDecodes(Raw(DType::kF8E4M3FNUZ, codes, 256), e4);
  ExpectDecodes(Raw(DType::kF8E5M2FNUZ, codes, 256), e5);
  ExpectDecodes(Raw(DType::kF8E8M0, codes, 256), e8);
}

// Packs codes of `width` bits into an LSB-first little-endian bit stream.
std::string Pack(const std::vector<unsigned>& codes, int width) {
  std::string out((codes.size() * static_cast<std::size_t>(width) + 7) / 8, '\0');
  for (std::size_t i = 0; i < codes.size(); ++i) {
    for (int b = 0; b < width; ++b) {
      std::size_t bit = i * static_cast<std::size_t>(width) + static_cast<std::size_t>(b);
      if ((codes[i] >> b) & 1) out[bit / 8] = static_cast<char>(out[bit / 8] | (1 << (bit % 8)));
    }
  }
  return out;
}

TEST(CompareStatsTest, SubByteFloatsDecodeEveryCodeAcrossBlocksAndThreads) {
  struct Format {
    DType dtype;
    int width, exp_bits, mant_bits, bias;
  };
  const Format formats[] = {
      {DType::kF4, 4, 2, 1, 1}, {DType::kF6E2M3, 6, 2, 3, 1}, {DType::kF6E3M2, 6, 3, 2, 3}};
  for (const Format& f : formats) {
    // Five blocks and a bit (a multiple of 4 elements, whole bytes for both widths; enough for
    // three thread ranges), codes in a scrambled order so that a misplaced nibble or straddling
    // bit pair shows.
    const std::size_t n = 5 * 2048 + 8;
    const unsigned count = 1u << f.width;
    std::vector<unsigned> codes(n);
    std::vector<double> want(n);
    for (std::size_t i = 0; i < n; ++i) {
      codes[i] = static_cast<unsigned>((i * 7 + i / 5) % count);
      want[i] = Reference(codes[i], f.exp_bits, f.mant_bits, f.bias, false);
    }
    std::string bytes = Pack(codes, f.width);
    ASSERT_EQ(bytes.size(), BytesOf(f.dtype, n));
    for (int threads : {1, 3}) ExpectDecodes(Raw(f.dtype, bytes, n), want, threads);
  }
  // The formats' largest values: float4 6, float6_e2m3 7.5, float6_e3m2 28.
  EXPECT_EQ(Reference(0x7, 2, 1, 1, false), 6.0);
  EXPECT_EQ(Reference(0x1f, 2, 3, 1, false), 7.5);
  EXPECT_EQ(Reference(0x1f, 3, 2, 3, false), 28.0);
  // Element 0 is the low nibble: bytes 0x21 hold 0.5 (code 1) then 1.0 (code 2).
  std::string two = "\x21";
  ExpectDecodes(Raw(DType::kF4, two, 2), {0.5, 1.0});
}

TensorInfo C128(const std::vector<double>& reim, std::vector<std::uint64_t> shape = {}) {
  TensorInfo t;
  t.name = "z";
  t.dtype = DType::kC128;
  t.numel = reim.size() / 2;
  t.shape = shape.empty() ? std::vector<std::uint64_t>{t.numel} : shape;
  t.storage_elements = t.numel;
  t.storage.data = reinterpret_cast<const unsigned char*>(reim.data());
  return t;
}

TEST(CompareStatsTest, ComplexModulusErrorsNonFiniteRulesAndUlp) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // (re, im) pairs of A and B.
  std::vector<double> a = {3, 4,         1, 1, nan, 0, INFINITY, 1, -INFINITY, INFINITY,
                           1, -INFINITY, 0, 0, 2,   0, 1,        2, 0,         1e-12};
  std::vector<double> b = {0, 0, 1, 1, 0, nan,  INFINITY, 1, -INFINITY, INFINITY,
                           1, 2, 0, 0, 2, 1e-9, 1,        2, 0,         0};
  StatsConfig cfg;
  cfg.atol = 1e-5;
  cfg.rtol = 1e-3;
  cfg.ulp_dtype = DType::kF64;
  auto s = ComputeStats(C128(a), C128(b), cfg, "a", "b");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->numel, 10u);
  EXPECT_EQ(s->finite_pairs, 6u);  // Elements 0, 1, 6, 7, 8, 9.
  EXPECT_EQ(s->max_abs, 5.0);      // |3 + 4i|, against a zero reference.
  EXPECT_EQ(s->max_abs_index, (std::vector<std::uint64_t>{0}));
  EXPECT_TRUE(std::isinf(s->max_rel));
  EXPECT_EQ(s->nan_a, 1u);
  EXPECT_EQ(s->nan_b, 1u);
  EXPECT_EQ(s->nan_mismatch, 0u);  // Both sides are NaN at element 2 (different components).
  // Infinite elements count under the sign of their first infinite component.
  EXPECT_EQ(s->posinf_a, 1u);  // (inf, 1).
  EXPECT_EQ(s->neginf_a, 2u);  // (-inf, inf) and (1, -inf).
  EXPECT_EQ(s->posinf_b, 1u);
  EXPECT_EQ(s->neginf_b, 1u);
  EXPECT_EQ(s->equal, 5u);  // Elements 1, 3, 4, 6, 8.
  // Outside: 0 (5 > tol), 2 (NaN), 3 and 4 (infinities, not --inf-equal), 5 (inf vs finite),
  // 9 (1e-12 against an exact 0: under atol, inside). 7: 1e-9 under atol.
  EXPECT_EQ(s->n_outside, 5u);
  EXPECT_EQ(s->nonfinite_outside, 4u);
  ASSERT_TRUE(s->max_ulp);
  EXPECT_EQ(*s->max_ulp, 0x4010000000000000u);  // Element 0's imaginary part: 4.0 from 0.0.
  cfg.equal_nan = cfg.inf_equal = true;
  s = ComputeStats(C128(a), C128(b), cfg, "a", "b");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->n_outside, 2u);  // Element 0 and the infinity against a finite value.
  // Moduli: |a| over finite pairs is {5, √2, 0, 2, √5, 1e-12}, |b| {0, √2, 0, 2, √5, 0}.
  EXPECT_EQ(s->a.max, 5.0);
  EXPECT_EQ(s->a.min, 0.0);
  EXPECT_DOUBLE_EQ(s->b.max, std::sqrt(5.0));
  EXPECT_DOUBLE_EQ(s->a.mean, (5 + std::sqrt(2.0) + 2 + std::sqrt(5.0) + 1e-12) / 6);
}

TEST(CompareStatsTest, ComplexCosinePearsonUlpAndLayouts) {
  // b = a · e^{iθ} has |Re Σ a·conj(b)| = cos θ · ‖a‖²: the cosine is cos θ for any a.
  const std::size_t rows = 90, cols = 100;  // 9000 elements: several blocks and thread ranges.
  const double theta = 0.3;
  std::vector<double> c(2 * rows * cols), f(2 * rows * cols), r(2 * rows * cols);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) {
      std::size_t k = i * cols + j;
      double re = std::sin(static_cast<double>(k)), im = std::cos(0.7 * static_cast<double>(k));
      c[2 * k] = f[2 * (j * rows + i)] = re;
      c[2 * k + 1] = f[2 * (j * rows + i) + 1] = im;
      r[2 * k] = re * std::cos(theta) - im * std::sin(theta);
      r[2 * k + 1] = re * std::sin(theta) + im * std::cos(theta);
    }
  }
  TensorInfo tf = C128(f, {rows, cols});
  tf.strides = {1, static_cast<std::int64_t>(rows)};
  StatsConfig cfg;
  auto sc = ComputeStats(C128(c, {rows, cols}), C128(r, {rows, cols}), cfg, "a", "b");
  auto sf = ComputeStats(tf, C128(r, {rows, cols}), cfg, "a", "b");
  cfg.threads = 3;
  auto s3 = ComputeStats(C128(c, {rows, cols}), C128(r, {rows, cols}), cfg, "a", "b");
  ASSERT_TRUE(sc && sf && s3);
  EXPECT_NEAR(sc->cosine, std::cos(theta), 1e-12);
  EXPECT_EQ(sc->max_abs, sf->max_abs);
  EXPECT_EQ(sc->max_abs_index, sf->max_abs_index);
  EXPECT_EQ(sc->max_abs_index, s3->max_abs_index);
  EXPECT_DOUBLE_EQ(sc->pearson, sf->pearson);
  EXPECT_DOUBLE_EQ(sc->pearson, s3->pearson);
  EXPECT_NEAR(sc->mean_abs, s3->mean_abs, 1e-15);  // Summed in another order.
  // A rotation keeps moduli: |a| and |b| have the same side statistics.
  EXPECT_NEAR(sc->a.mean, sc->b.mean, 1e-12);
  EXPECT_NEAR(sc->a.std, sc->b.std, 1e-12);

  // ULP: component-wise, in float32 units for complex64 (one component two ULP away).
  std::vector<float> x = {1.0f, -2.0f, 3.0f, 0.0f};
  std::vector<float> y = x;
  y[3] = std::nextafter(std::nextafter(0.0f, 1.0f), 1.0f);
  TensorInfo cx, cy;
  for (auto [t, v] : {std::pair{&cx, &x}, std::pair{&cy, &y}}) {
    t->dtype = DType::kC64;
    t->shape = {2};
    t->numel = 2;
    t->storage.data = reinterpret_cast<const unsigned char*>(v->data());
  }
  StatsConfig u;
  u.ulp_dtype = DType::kF32;
  auto su = ComputeStats(cx, cy, u, "a", "b");
  ASSERT_TRUE(su && su->max_ulp);
  EXPECT_EQ(*su->max_ulp, 2u);
  EXPECT_EQ(su->equal, 1u);
}

TEST(CompareStatsTest, ComplexAgainstRealIsAnInputError) {
  std::vector<double> z = {1, 2, 3, 4};
  std::vector<double> r = {1, 2};
  auto s = ComputeStats(C128(z), F64(r), StatsConfig{}, "za", "rb");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().file, "za");
  EXPECT_NE(s.error().message.find("a complex128 tensor cannot be compared with a real float64"),
            std::string::npos)
      << s.error().message;
}

}  // namespace
}  // namespace dt::compare
