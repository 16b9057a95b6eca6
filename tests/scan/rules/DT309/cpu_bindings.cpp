#include <torch/extension.h>

torch::Tensor nms_cpu(torch::Tensor boxes, float thresh) { return boxes; }

PYBIND11_MODULE(nms_cpu_ext, m) {
  m.def("nms", &nms_cpu, "NMS (CPU)");
}
