#include <torch/extension.h>

torch::Tensor forward_cuda(torch::Tensor x);

bool on_gpu(const torch::Tensor& x) { return x.is_cuda(); }  // expect: DT307

torch::Tensor forward(torch::Tensor x) {
  const bool use_kernel = x.is_cuda() && x.is_contiguous();  // expect: DT307
  if (x.is_cuda()) {
    return forward_cuda(x);
  }
  return x * 2;
}
// x.is_cuda() is checked by the caller
