// The project's own snake_case names that start like a CUDA library (cuda_enabled) are no APIs.
#include <vector>

struct Options {
  bool use_gpu = false;
  int nccl_rank = 0;
};

static bool cuda_enabled = false;
int curand_seed = 42;

void cublas_like_gemm(const float* a, float* c, int n) {
  for (int i = 0; i < n; ++i) c[i] = a[i];
}

int run(const Options& o) { return o.nccl_rank + curand_seed + (cuda_enabled ? 1 : 0); }
