#include <torch/extension.h>

#define CHECK_CUDA(x) TORCH_CHECK(x.is_cuda(), #x " must be a CUDA tensor")

torch::Tensor nms_cuda(torch::Tensor boxes, float thresh);
torch::Tensor roi_cuda(torch::Tensor feats, torch::Tensor rois);

torch::Tensor nms(torch::Tensor boxes, float thresh) {
  CHECK_CUDA(boxes);  // expect: DT320
  return nms_cuda(boxes, thresh);
}

torch::Tensor roi_align(torch::Tensor feats, torch::Tensor rois) {
  if (feats.is_cuda()) {
    return roi_cuda(feats, rois);
  }
  AT_ERROR("roi_align is not implemented on CPU");  // expect: DT320
}

torch::Tensor scale(torch::Tensor x) {
  if (x.is_cuda()) {
    return x * 2;
  }
  return x.mul(2);
}
