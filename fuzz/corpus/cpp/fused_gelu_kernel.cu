// Elementwise GELU, y = x * Phi(x), and its derivative, in one pass each.
// Half and bfloat16 inputs are computed in float (at::opmath_type), as in ATen.
#include <ATen/OpMathType.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <torch/extension.h>

#include <algorithm>

namespace {

constexpr int kThreads = 256;
constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

template <typename scalar_t>
__global__ void gelu_forward_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ y,
                                    int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    using acc_t = at::opmath_type<scalar_t>;
    const acc_t v = static_cast<acc_t>(x[i]);
    y[i] = static_cast<scalar_t>(acc_t(0.5) * v * (acc_t(1) + erf(v * acc_t(kInvSqrt2))));
  }
}

template <typename scalar_t>
__global__ void gelu_backward_kernel(const scalar_t* __restrict__ grad_out,
                                     const scalar_t* __restrict__ x,
                                     scalar_t* __restrict__ grad_in, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    using acc_t = at::opmath_type<scalar_t>;
    const acc_t v = static_cast<acc_t>(x[i]);
    const acc_t cdf = acc_t(0.5) * (acc_t(1) + erf(v * acc_t(kInvSqrt2)));
    const acc_t pdf = acc_t(kInvSqrt2Pi) * exp(acc_t(-0.5) * v * v);
    grad_in[i] = static_cast<scalar_t>(static_cast<acc_t>(grad_out[i]) * (cdf + v * pdf));
  }
}

int num_blocks(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(std::min<int64_t>(blocks, 65535));
}

void check_launch(const char* name) {
  const cudaError_t err = cudaGetLastError();
  TORCH_CHECK(err == cudaSuccess, name, " launch failed: ", cudaGetErrorString(err));
}

}  // namespace

torch::Tensor fused_gelu_forward_cuda(const torch::Tensor& x) {
  auto y = torch::empty_like(x);
  const int64_t n = x.numel();
  if (n == 0) return y;
  const int blocks = num_blocks(n);
  const int threads = kThreads;
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16, x.scalar_type(),
                                  "fused_gelu_forward", [&] {
    gelu_forward_kernel<scalar_t><<<blocks, threads, 0, stream>>>(
        x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), n);
  });
  check_launch("gelu_forward_kernel");
  return y;
}

torch::Tensor fused_gelu_backward_cuda(const torch::Tensor& grad_out, const torch::Tensor& x) {
  auto grad_in = torch::empty_like(x);
  const int64_t n = x.numel();
  if (n == 0) return grad_in;
  const int blocks = num_blocks(n);
  const int threads = kThreads;
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16, x.scalar_type(),
                                  "fused_gelu_backward", [&] {
    gelu_backward_kernel<scalar_t><<<blocks, threads, 0, stream>>>(
        grad_out.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(), grad_in.data_ptr<scalar_t>(), n);
  });
  check_launch("gelu_backward_kernel");
  return grad_in;
}
