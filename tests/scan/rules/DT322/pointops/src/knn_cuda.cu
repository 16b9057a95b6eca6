__global__ void knn_kernel(const float* xyz, int* idx, int n) {}
