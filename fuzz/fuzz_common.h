// What every fuzz target does with the tensors a reader accepted: compare each with itself, which
// walks every element (conversion, strided gather, streamed inflate) under the sanitizers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "compare/stats.h"
#include "compare/tensor.h"

namespace dt::compare::fuzz {

inline void Exercise(const std::vector<TensorInfo>& tensors) {
  for (const TensorInfo& t : tensors) {
    if (t.numel > (1u << 16)) continue;  // Keep each input fast; sizes are checked by the readers.
    StatsConfig cfg;
    cfg.threads = 1;
    cfg.percentiles = true;
    if (IsFloat(t.dtype) && t.dtype != DType::kF8E4M3 && t.dtype != DType::kF8E5M2) {
      cfg.ulp_dtype = t.dtype;
    }
    (void)ComputeStats(t, t, cfg, "fuzz", "fuzz");
  }
}

}  // namespace dt::compare::fuzz
