#include <torch/extension.h>
#include <cuda_runtime.h>  // expect: DT304
#include <ATen/cuda/CUDAContext.h>  // expect: DT304
#include <vector>

torch::Tensor knn(torch::Tensor points, int k) {
  auto stream = at::cuda::getCurrentCUDAStream();  // expect: DT304
  cudaDeviceSynchronize();  // expect: DT304
  std::vector<int64_t> sizes{points.size(0), k};
  // cudaMemcpy is done by the caller
  return torch::empty(sizes, points.options());
}

cudaStream_t side_stream;  // expect: DT304
