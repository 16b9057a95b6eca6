// Each check that rejects a non-CUDA input is a finding: each names a tensor the user would have to
// move off the extension. The build in setup.py is an opt-in switch, which does not make these
// checks portable: whether the project runs without the extension is decided where it is used.
#include <torch/extension.h>

std::vector<at::Tensor> selective_scan_fwd_cuda(const at::Tensor& u, const at::Tensor& delta,
                                                const c10::optional<at::Tensor>& z);

std::vector<at::Tensor> selective_scan_fwd(const at::Tensor& u, const at::Tensor& delta,
                                           const c10::optional<at::Tensor>& z) {
  TORCH_CHECK(u.scalar_type() == delta.scalar_type());
  TORCH_CHECK(u.is_cuda());  // expect: DT320
  TORCH_CHECK(delta.is_cuda());  // expect: DT320
  if (z.has_value()) {
    TORCH_CHECK(z.value().is_cuda());  // expect: DT320
  }
  return selective_scan_fwd_cuda(u, delta, z);
}
