// What every fuzz target does with the tensors a reader accepted: compare each with itself, which
// walks every element (conversion, strided gather, streamed inflate) under the sanitizers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "compare/compare.h"
#include "compare/stats.h"
#include "compare/tensor.h"

namespace dt::compare::fuzz {

inline void Exercise(const std::vector<TensorInfo>& tensors) {
  for (const TensorInfo& t : tensors) {
    if (t.numel > (1u << 16)) continue;  // Keep each input fast; sizes are checked by the readers.
    StatsConfig cfg;
    cfg.threads = 1;
    cfg.percentiles = true;
    cfg.ulp_dtype = UlpDType(t.dtype, t.dtype);
    (void)ComputeStats(t, t, cfg, "fuzz", "fuzz");
  }
}

}  // namespace dt::compare::fuzz
