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
