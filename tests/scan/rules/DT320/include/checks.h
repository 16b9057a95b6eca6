#pragma once
#include <torch/extension.h>

#define CHECK_CUDA_T(x) TORCH_CHECK(x.is_cuda(), #x " must be a CUDA tensor")
#define CHECK_CONTIGUOUS(x) TORCH_CHECK(x.is_contiguous(), #x " must be contiguous")
#define CHECK_INPUT(x) \
  CHECK_CUDA_T(x);     \
  CHECK_CONTIGUOUS(x)
