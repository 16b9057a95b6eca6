// libFuzzer target: the torch reader, then a full statistics pass over what it accepted.
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dt::compare;  // NOLINT
  std::vector<TensorInfo> out;
  if (ReadTorchZip(data, size, "fuzz", out)) fuzz::Exercise(out);
  return 0;
}
