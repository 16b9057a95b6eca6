#include <torch/extension.h>
#include <cuda_runtime.h>

torch::Tensor nms_cuda(torch::Tensor boxes, float thresh);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {  // expect: DT309
  m.def("nms", &nms_cuda, "NMS (CUDA)");
}
