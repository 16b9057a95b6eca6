// A pickle reader for what torch.save writes, and nothing more. It never imports or calls
// anything: GLOBAL names are checked against a fixed allow-list and REDUCE is interpreted only
// for the few torch rebuild functions, so a hostile pickle is an error naming the global it asked
// for. Hand-written because the alternative, Python's unpickler, executes code by design.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compare/tensor.h"
#include "util/result.h"

namespace dt::compare {

// A tensor as a pickle describes it: a view into a storage of the archive.
struct PickledTensor {
  std::string name;  // State-dict key path ("layer.weight", "outputs.0").
  std::string storage_key;
  DType dtype = DType::kF32;
  std::uint64_t storage_numel = 0;
  std::uint64_t offset = 0;
  std::vector<std::uint64_t> shape;
  std::vector<std::int64_t> strides;
};

// Interprets `data` (a data.pkl) and returns the tensors it holds, named by their path.
Result<std::vector<PickledTensor>> ReadTorchPickle(const unsigned char* data, std::size_t size,
                                                   const std::string& file);

}  // namespace dt::compare
