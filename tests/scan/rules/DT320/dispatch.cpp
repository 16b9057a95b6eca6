#include <torch/extension.h>

at::Tensor nms_cpu(const at::Tensor& dets, double thr);
#if defined(WITH_CUDA)
at::Tensor nms_cuda(const at::Tensor& dets, double thr);
#endif

at::Tensor nms(const at::Tensor& dets, double thr) {
  if (dets.is_cuda()) {
#if defined(WITH_CUDA)
    return nms_cuda(dets, thr);
#else
    AT_ERROR("Not compiled with GPU support");
#endif
  }
  return nms_cpu(dets, thr);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("nms", &nms); }
