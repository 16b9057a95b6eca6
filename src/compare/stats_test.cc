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
