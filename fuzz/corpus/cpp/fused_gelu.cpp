// Python bindings of the fused GELU kernels in fused_gelu_kernel.cu.
#include <torch/extension.h>

torch::Tensor fused_gelu_forward_cuda(const torch::Tensor& x);
torch::Tensor fused_gelu_backward_cuda(const torch::Tensor& grad_out, const torch::Tensor& x);

#define CHECK_CUDA(x) TORCH_CHECK((x).is_cuda(), #x " must be a CUDA tensor")
#define CHECK_CONTIGUOUS(x) TORCH_CHECK((x).is_contiguous(), #x " must be contiguous")
#define CHECK_INPUT(x) \
  CHECK_CUDA(x);       \
  CHECK_CONTIGUOUS(x)

torch::Tensor fused_gelu_forward(const torch::Tensor& x) {
  CHECK_INPUT(x);
  return fused_gelu_forward_cuda(x);
}

torch::Tensor fused_gelu_backward(const torch::Tensor& grad_out, const torch::Tensor& x) {
  CHECK_INPUT(grad_out);
  CHECK_INPUT(x);
  TORCH_CHECK(grad_out.sizes() == x.sizes(), "grad_out and x must have the same shape");
  return fused_gelu_backward_cuda(grad_out, x);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &fused_gelu_forward, "GELU forward (exact erf form, CUDA)");
  m.def("backward", &fused_gelu_backward, "GELU backward (exact erf form, CUDA)");
}
