__global__ void chamfer_kernel(const float* a, const float* b, float* d, int n) {}
