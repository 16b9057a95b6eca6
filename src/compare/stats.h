// The statistics of one tensor pair, computed in one fused pass over both (float64 accumulators,
// blocks converted to double in cache, several threads over contiguous ranges).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compare/tensor.h"
#include "util/result.h"

namespace dt::compare {

enum class Rule { kAllclose, kEither };
enum class Check { kElementwise, kMax, kMean, kMedian, kP99 };

// torch.testing.assert_close's float32 tolerances: the default of every comparison (tensors and
// metrics), and the row of DefaultTolerance (tolerance.cc), the per-dtype table, for float32.
inline constexpr double kFloat32Rtol = 1.3e-6;
inline constexpr double kFloat32Atol = 1e-5;

struct StatsConfig {
  double atol = kFloat32Atol;
  double rtol = kFloat32Rtol;
  Rule rule = Rule::kAllclose;
  bool equal_nan = false;
  bool inf_equal = false;
  bool percentiles = false;  // Keep the histograms --check median/p99 needs.
  int threads = 2;
  std::optional<DType> ulp_dtype;  // The dtype ULP distances are counted in; none for integers.
};

struct SideStats {
  double min = 0, max = 0, mean = 0, std = 0;
};

// Decades of |a - b|: counts[k] holds errors in [10^(first_decade+k), 10^(first_decade+k+1)).
struct ErrorHistogram {
  int first_decade = 0;
  std::vector<std::uint64_t> counts;
  std::uint64_t zero = 0;  // Pairs with no error at all.
};

struct TensorStats {
  std::uint64_t numel = 0;
  std::uint64_t finite_pairs = 0;  // Error statistics are over pairs where both sides are finite.
  double max_abs = 0;
  std::vector<std::uint64_t> max_abs_index;
  double mean_abs = 0, rmse = 0, max_rel = 0, mean_rel = 0;
  std::uint64_t n_outside = 0;
  std::uint64_t nonfinite_outside = 0;  // Of n_outside, pairs with a NaN or infinity.
  double frac_outside = 0;
  double cosine = 0, pearson = 0;  // NaN when undefined (a side is constant or zero).
  std::optional<std::uint64_t> max_ulp;
  std::uint64_t nan_a = 0, nan_b = 0, posinf_a = 0, neginf_a = 0, posinf_b = 0, neginf_b = 0;
  std::uint64_t nan_mismatch = 0;  // Positions where exactly one side is NaN.
  std::uint64_t equal = 0;         // Positions where a == b (IEEE: NaN never equals).
  SideStats a, b;
  double min_passing_atol = 0;  // The smallest atol that passes with this rtol (allclose rule).
  double min_passing_rtol = 0;  // The largest relative error (Polygraphy's required rtol).
  double mean_excess = 0;       // Mean of |a-b| - rtol·|b| (for --check mean).
  // Percentiles, when StatsConfig::percentiles (upper bucket edges, relative precision 2^-4).
  double median_abs = 0, p99_abs = 0, median_rel = 0, p99_rel = 0;
  double median_excess = 0, p99_excess = 0;
  ErrorHistogram histogram;
};

// Computes the statistics of a and b (same shape) under `cfg`.
Result<TensorStats> ComputeStats(const TensorInfo& a, const TensorInfo& b, const StatsConfig& cfg,
                                 const std::string& file_a, const std::string& file_b);

// The statistics of a pair of complex tensors (ComputeStats sends such pairs here): errors are the
// moduli |a - b| (component differences in float64, then hypot), relative errors |a - b| / |b|,
// NaN and infinity are per element (a NaN component makes the element NaN), max_ulp is
// component-wise in cfg.ulp_dtype (float32 or float64), and stats_a / stats_b describe |a|, |b|.
// A complex tensor against a real one is an input error. See docs/compare.md.
Result<TensorStats> ComputeComplexStats(const TensorInfo& a, const TensorInfo& b,
                                        const StatsConfig& cfg, const std::string& file_a,
                                        const std::string& file_b);

}  // namespace dt::compare
