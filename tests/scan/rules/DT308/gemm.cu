#include <cutlass/gemm/device/gemm.h>  // expect: DT308
#include <algorithm>
