#include <cuda_runtime.h>

__global__ void add_kernel(const float* a, const float* b, float* out, int n) {  // expect: DT303
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

__device__ float square(float x) { return x * x; }  // expect: DT303

void launch_add(const float* a, const float* b, float* out, int n) {
  int threads = 256;
  add_kernel<<<(n + threads - 1) / threads, threads>>>(a, b, out, n);  // expect: DT303
}

// a __global__ function runs on the GPU
bool shift = (1 << 3) > 2;
