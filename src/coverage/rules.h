// Data-driven rules of the prediction (data/coverage/rules.json): which MPS operator replaces a
// CPU- or CUDA-specific variant seen in a trace, and which dtypes or ranks MPS refuses.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "util/result.h"

namespace dt::coverage {

struct VariantRule {
  std::vector<std::string>
      from;  // Table keys ("cudnn_batch_norm", "_scaled_dot_product_flash_attention_for_cpu").
  std::vector<std::string> to;  // Candidates in order; the first one a release has is used.
  std::string why;
};

struct DtypeRule {
  std::string dtype;    // Normalized name ("float64").
  int below_macos = 0;  // 0: refused on every macOS; N: refused below macOS N.
  std::string issue;    // Short statement.
  std::string error;    // PyTorch's error text.
};

struct Rules {
  std::vector<VariantRule> variants;
  std::vector<DtypeRule> dtypes;
  int max_ndim = 16;
  std::string ndim_error;  // With "{ndim}" where the rank goes.
};

Result<Rules> LoadRules(const std::filesystem::path& path);

// "torch.float64", "double", "Double" → "float64"; unknown names pass through lowercased.
std::string NormalizeDtype(std::string_view dtype);

// The issues of one traced row; sets *fails when one of them makes the op error on MPS.
std::vector<std::string> DtypeIssues(const Rules& rules, const std::vector<std::string>& dtypes,
                                     std::int64_t max_ndim, int macos, bool* fails);

const VariantRule* FindVariant(const Rules& rules, const std::string& key);

}  // namespace dt::coverage
