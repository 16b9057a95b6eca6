// libFuzzer target: the torch.save pickle reader on raw data.pkl bytes.
#include "compare/pickle.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)dt::compare::ReadTorchPickle(data, size, "fuzz");
  return 0;
}
