#include <torch/extension.h>

torch::Tensor voxelize_cuda(torch::Tensor points);

torch::Tensor voxelize(torch::Tensor points) {
  if (points.device().is_cuda()) {
    return voxelize_cuda(points);
  }
  AT_ASSERTM(false, "CPU not supported");  // expect: DT320
  return points;
}

torch::Tensor gather(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");  // expect: DT320
  return x;
}
