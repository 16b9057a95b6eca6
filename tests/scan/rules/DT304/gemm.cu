#include <cublas_v2.h>  // expect: DT304
#include <nccl.h>  // expect: DT304
#include <vector>

void gemm(cublasHandle_t h, const float* a, const float* b, float* c, int n) {  // expect: DT304
  const float one = 1.0f, zero = 0.0f;
  cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n);  // expect: DT304
}
