#include <thrust/device_vector.h>  // expect: DT308
#include <thrust/reduce.h>  // expect: DT308
#include <cub/cub.cuh>  // expect: DT308
#include <vector>

float total(const std::vector<float>& host) {
  thrust::device_vector<float> d(host.begin(), host.end());
  return thrust::reduce(d.begin(), d.end());
}
