// The FLOP and byte formulas per operator family (docs/cost.md states each). Hand-written: no
// library knows PyTorch's operator set after decomposition, and the formulas must be the ones the
// documentation states, tested against hand-computed cases.
#include <algorithm>
#include <functional>
#include <unordered_map>

#include "cost/cost.h"

namespace dt::cost {

namespace {

using nlohmann::json;

// The operator tables. Names are aten's without the namespace and without the trailing "_" of
// in-place variants (add_ is add). The tables read best as lists, hence no clang-format.
// clang-format off
const std::unordered_map<std::string_view, OpKind>& Table() {
  static const auto* table = [] {
    auto* t = new std::unordered_map<std::string_view, OpKind>;
    auto put = [t](OpKind k, std::initializer_list<std::string_view> names) {
      for (std::string_view n : names) t->emplace(n, k);
    };
    put(OpKind::kMatmul,
        {"mm", "addmm", "bmm", "baddbmm", "addbmm", "mv", "addmv", "dot", "vdot", "matmul",
         "linear", "_addmm_activation", "addr", "_int_mm", "_scaled_mm"});
    put(OpKind::kConvolution,
        {"convolution", "_convolution", "convolution_backward", "conv1d", "conv2d", "conv3d",
         "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "mkldnn_convolution",
         "cudnn_convolution", "cudnn_convolution_transpose", "_slow_conv2d_forward",
         "_slow_conv2d_backward", "slow_conv3d_forward", "slow_conv_transpose2d",
         "slow_conv_transpose3d", "_conv_depthwise2d", "slow_conv_dilated2d",
         "_mps_convolution", "_mps_convolution_transpose", "mps_convolution_backward"});
    put(OpKind::kAttention,
        {"_scaled_dot_product_flash_attention", "_scaled_dot_product_flash_attention_backward",
         "_scaled_dot_product_flash_attention_for_cpu",
         "_scaled_dot_product_flash_attention_for_cpu_backward",
         "_scaled_dot_product_efficient_attention",
         "_scaled_dot_product_efficient_attention_backward",
         "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_cudnn_attention_backward",
         "_scaled_dot_product_fused_attention_overrideable",
         "_scaled_dot_product_fused_attention_overrideable_backward", "_flash_attention_forward",
         "_flash_attention_backward", "_efficient_attention_forward",
         "_efficient_attention_backward", "scaled_dot_product_attention",
         "_scaled_dot_product_attention_math_for_mps"});
    put(OpKind::kNormalization,
        {"native_layer_norm", "native_layer_norm_backward", "native_batch_norm",
         "native_batch_norm_backward", "_native_batch_norm_legit",
         "_native_batch_norm_legit_no_training", "_native_batch_norm_legit_functional",
         "batch_norm_backward", "cudnn_batch_norm", "cudnn_batch_norm_backward",
         "native_group_norm", "native_group_norm_backward", "_fused_rms_norm",
         "_fused_rms_norm_backward", "layer_norm", "group_norm", "batch_norm", "rms_norm"});
    put(OpKind::kSoftmax, {"_softmax", "_log_softmax", "_softmax_backward_data",
                           "_log_softmax_backward_data", "softmax", "log_softmax"});
    put(OpKind::kReduction,
        {"sum", "mean", "amax", "amin", "max", "min", "var", "var_mean", "std", "std_mean", "norm",
         "linalg_vector_norm", "prod", "argmax", "argmin", "logsumexp", "all", "any", "cumsum",
         "cumprod", "nll_loss_forward", "nll_loss_backward", "nll_loss2d_forward",
         "nll_loss2d_backward", "mse_loss", "mse_loss_backward", "binary_cross_entropy",
         "binary_cross_entropy_backward", "binary_cross_entropy_with_logits", "smooth_l1_loss",
         "smooth_l1_loss_backward", "l1_loss", "huber_loss", "huber_loss_backward", "topk", "sort",
         "count_nonzero", "max_pool2d_with_indices", "max_pool2d_with_indices_backward",
         "max_pool3d_with_indices", "avg_pool2d", "avg_pool2d_backward", "avg_pool3d",
         "_adaptive_avg_pool2d", "_adaptive_avg_pool2d_backward", "adaptive_max_pool2d",
         "max_pool2d", "_prelu_kernel_backward", "aminmax", "multi_margin_loss",
         "multi_margin_loss_backward", "multilabel_margin_loss_forward", "kl_div",
         "soft_margin_loss",
         "cross_entropy_loss", "nll_loss", "_ctc_loss", "_ctc_loss_backward"});
    put(OpKind::kElementwise,
        {"add", "sub", "rsub", "mul", "div", "neg", "abs", "relu", "gelu", "gelu_backward",
         "silu", "silu_backward", "sigmoid", "sigmoid_backward", "tanh", "tanh_backward",
         "threshold", "threshold_backward", "exp", "exp2", "expm1", "log", "log1p", "log2",
         "log10", "sqrt", "rsqrt", "pow", "reciprocal", "clamp", "clamp_min", "clamp_max",
         "hardtanh", "hardtanh_backward", "leaky_relu", "leaky_relu_backward", "elu",
         "elu_backward", "softplus", "softplus_backward", "where", "maximum", "minimum", "eq",
         "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not",
         "bitwise_and", "bitwise_or", "bitwise_not", "bitwise_xor", "sign", "sgn", "floor",
         "ceil", "round", "trunc", "frac", "erf", "erfinv", "sin", "cos", "atan2", "lerp",
         "addcmul", "addcdiv", "masked_fill", "native_dropout", "native_dropout_backward",
         "bernoulli", "mish", "mish_backward", "hardswish", "hardswish_backward", "hardsigmoid",
         "hardsigmoid_backward", "_prelu_kernel", "fmod", "remainder", "square", "isnan",
         "isinf", "nan_to_num", "upsample_nearest2d", "upsample_nearest2d_backward",
         "upsample_bilinear2d", "upsample_bilinear2d_backward", "_upsample_nearest_exact2d",
         "_upsample_bilinear2d_aa", "glu", "glu_backward", "log_sigmoid_forward",
         "log_sigmoid_backward", "softshrink", "hardshrink", "xlogy", "special_xlog1py",
         "logit", "logit_backward", "copysign", "heaviside"});
    put(OpKind::kGather,
        {"embedding", "embedding_dense_backward", "index_select", "gather", "index", "index_put",
         "_index_put_impl", "index_add", "index_copy", "scatter", "scatter_add", "scatter_reduce",
         "take", "masked_select", "embedding_bag", "_embedding_bag", "_embedding_bag_backward",
         "_embedding_bag_dense_backward", "nonzero", "unique", "_unique2", "masked_scatter",
         "_unsafe_index", "_unsafe_index_put", "index_fill"});
    put(OpKind::kCopy,
        {"copy", "_to_copy", "clone", "cat", "stack", "_copy_from", "_copy_from_and_resize",
         "zero", "fill", "zeros", "ones", "full", "zeros_like", "ones_like", "full_like",
         "arange", "linspace", "randn", "rand", "randint", "randn_like", "rand_like", "normal",
         "uniform", "randperm", "constant_pad_nd", "reflection_pad1d", "reflection_pad2d",
         "replication_pad1d", "replication_pad2d", "repeat", "roll", "flip", "tril", "triu",
         "im2col", "col2im", "pixel_shuffle", "pixel_unshuffle", "lift_fresh_copy",
         "_local_scalar_dense", "scalar_tensor", "new_zeros", "new_ones", "new_full",
         "split_with_sizes_copy", "slice_scatter", "select_scatter", "diagonal_scatter",
         "as_strided_scatter", "contiguous", "_pin_memory", "_fused_dropout", "one_hot",
         "tensor", "_foreach_zero", "lift_fresh", "detach_copy", "view_copy"});
    put(OpKind::kView,
        {"view", "_unsafe_view", "reshape", "_reshape_alias", "expand", "permute", "transpose",
         "t", "unsqueeze", "squeeze", "slice", "select", "as_strided", "alias", "detach", "split",
         "split_with_sizes", "chunk", "unbind", "narrow", "view_as_real", "view_as_complex",
         "diagonal", "unfold", "unflatten", "flatten", "empty", "empty_strided", "empty_like",
         "new_empty", "new_empty_strided", "resize", "set", "expand_as", "view_as", "movedim",
         "numpy_T", "_neg_view", "_conj", "conj", "resolve_conj", "resolve_neg", "is_same_size",
         "_has_compatible_shallow_copy_type", "sym_size", "sym_stride", "sym_numel",
         "record_stream", "_nested_tensor_from_mask_left_aligned", "is_nonzero", "equal",
         "_assert_async", "_functional_assert_async", "sym_constrain_range_for_size",
         "_assert_scalar", "_unsafe_split"});
    return t;
  }();
  return *table;
}
// clang-format on

std::string_view BaseName(std::string_view op) {
  if (const auto colons = op.find("::"); colons != std::string_view::npos) {
    op.remove_prefix(colons + 2);
  }
  if (op.size() > 1 && op.back() == '_' && op[op.size() - 2] != '_') op.remove_suffix(1);
  return op;
}

double Product(const std::vector<std::int64_t>& v, std::size_t from = 0) {
  double p = 1;
  for (std::size_t i = from; i < v.size(); ++i) p *= static_cast<double>(v[i]);
  return p;
}

double LastDim(const TensorDesc& t) { return t.shape.empty() ? 1 : double(t.shape.back()); }

double Spans(const std::vector<TensorDesc>& ts, std::size_t from = 0) {
  double b = 0;
  for (std::size_t i = from; i < ts.size(); ++i) b += SpanBytes(ts[i]);
  return b;
}

double MaxNumel(const std::vector<TensorDesc>& ts) {
  double n = 0;
  for (const TensorDesc& t : ts) n = std::max(n, Numel(t));
  return n;
}

const TensorDesc* At(const std::vector<TensorDesc>& ts, std::size_t i) {
  return i < ts.size() ? &ts[i] : nullptr;
}

bool IsBackward(std::string_view name) { return name.find("backward") != std::string_view::npos; }

// Matmul family: every output element is a dot product of length k (the last dimension of the
// left operand): 2·k FLOPs (multiply and add); an added bias or accumulator adds one per element.
double MatmulFlops(std::string_view name, const CostRow& row) {
  const bool accumulates = name == "addmm" || name == "baddbmm" || name == "addbmm" ||
                           name == "addmv" || name == "_addmm_activation";
  const TensorDesc* left = At(row.inputs, accumulates ? 1 : 0);
  const TensorDesc* out = At(row.outputs, 0);
  if (left == nullptr || out == nullptr) return 0;
  const double n_out = Numel(*out);
  if (name == "addr") return 2 * n_out;
  double k = LastDim(*left);
  if (name == "addbmm") k *= left->shape.empty() ? 1 : double(left->shape.front());  // Σ over b.
  const bool bias = accumulates || (name == "linear" && row.inputs.size() >= 3);
  return 2 * n_out * k + (bias ? n_out : 0);
}

// The first boolean among the scalars: `transposed` in convolution and convolution_backward (their
// only boolean before the output mask, which is a list).
bool FirstBool(const json& scalars) {
  if (!scalars.is_array()) return false;
  for (const json& s : scalars) {
    if (s.is_boolean()) return s.get<bool>();
  }
  return false;
}

// One convolution: each output element (each input element for a transposed one) meets
// weight[1:] products, 2 FLOPs each.
double ConvForwardFlops(const TensorDesc& in, const TensorDesc& weight, const TensorDesc& out,
                        bool transposed) {
  return 2 * (transposed ? Numel(in) : Numel(out)) * Product(weight.shape, 1);
}

double ConvolutionFlops(std::string_view name, const CostRow& row) {
  const bool transposed =
      FirstBool(row.scalars) || name.find("transpose") != std::string_view::npos;
  if (!IsBackward(name)) {
    const TensorDesc* in = At(row.inputs, 0);
    const TensorDesc* w = At(row.inputs, 1);
    const TensorDesc* out = At(row.outputs, 0);
    if (in == nullptr || w == nullptr || out == nullptr) return 0;
    const TensorDesc* bias = At(row.inputs, 2);
    return ConvForwardFlops(*in, *w, *out, transposed) +
           (bias != nullptr && bias->shape.size() == 1 ? Numel(*out) : 0);
  }
  // (grad_output, input, weight, ...) → (grad_input?, grad_weight?, grad_bias?): each gradient
  // asked for is one forward's work; the bias gradient sums grad_output.
  const TensorDesc* gout = At(row.inputs, 0);
  const TensorDesc* in = At(row.inputs, 1);
  const TensorDesc* w = At(row.inputs, 2);
  if (gout == nullptr || in == nullptr || w == nullptr) return 0;
  const double fwd = ConvForwardFlops(*in, *w, *gout, transposed);
  double flops = 0;
  for (const TensorDesc& o : row.outputs) {
    if (o.shape == in->shape || o.shape == w->shape) {
      flops += fwd;
    } else if (o.shape.size() == 1) {
      flops += Numel(*gout);
    }
  }
  return flops;
}

// Attention: q [..., L, E], k [..., S, E], v [..., S, Ev]; forward = Q·Kᵀ and P·V, 2·L·S·(E + Ev)
// per batch-head; backward = 2·L·S·(3E + 2Ev) (dV, dP, dQ, dK and the recomputed Q·Kᵀ of the fused
// kernels: 2.5× the forward when E = Ev). A causal mask is not halved: an upper bound.
double AttentionFlops(std::string_view name, const CostRow& row) {
  const bool backward = IsBackward(name);
  const std::size_t first = backward ? 1 : 0;
  const TensorDesc* q = At(row.inputs, first);
  const TensorDesc* k = At(row.inputs, first + 1);
  const TensorDesc* v = At(row.inputs, first + 2);
  if (q == nullptr || k == nullptr || v == nullptr || q->shape.size() < 2 || k->shape.size() < 2) {
    return 0;
  }
  const double l = double(q->shape[q->shape.size() - 2]);
  const double e = LastDim(*q);
  const double s = double(k->shape[k->shape.size() - 2]);
  const double ev = LastDim(*v);
  const double batch = l * e > 0 ? Numel(*q) / (l * e) : 0;
  return backward ? 2 * batch * l * s * (3 * e + 2 * ev) : 2 * batch * l * s * (e + ev);
}

}  // namespace

const char* ToString(OpKind k) {
  switch (k) {
    case OpKind::kMatmul:
      return "matmul";
    case OpKind::kConvolution:
      return "convolution";
    case OpKind::kAttention:
      return "attention";
    case OpKind::kNormalization:
      return "normalization";
    case OpKind::kSoftmax:
      return "softmax";
    case OpKind::kReduction:
      return "reduction";
    case OpKind::kElementwise:
      return "elementwise";
    case OpKind::kOptimizer:
      return "optimizer";
    case OpKind::kGather:
      return "gather";
    case OpKind::kCopy:
      return "copy";
    case OpKind::kView:
      return "view";
    case OpKind::kUnknown:
      return "unknown";
  }
  return "unknown";
}

OpKind KindOf(std::string_view op) {
  // torch.profiler.record_function's markers run no kernel.
  if (op.rfind("profiler::", 0) == 0) return OpKind::kView;
  const std::string_view name = BaseName(op);
  if (name.rfind("_foreach_", 0) == 0 || name.rfind("_fused_", 0) == 0) return OpKind::kOptimizer;
  const auto& table = Table();
  if (auto it = table.find(name); it != table.end()) return it->second;
  return OpKind::kUnknown;
}

double Numel(const TensorDesc& t) { return Product(t.shape); }

double ElementBytes(std::string_view dtype) {
  static const std::unordered_map<std::string_view, double> sizes = {{"float32", 4},
                                                                     {"float", 4},
                                                                     {"float64", 8},
                                                                     {"double", 8},
                                                                     {"float16", 2},
                                                                     {"half", 2},
                                                                     {"bfloat16", 2},
                                                                     {"int64", 8},
                                                                     {"long", 8},
                                                                     {"int32", 4},
                                                                     {"int", 4},
                                                                     {"int16", 2},
                                                                     {"int8", 1},
                                                                     {"uint8", 1},
                                                                     {"bool", 1},
                                                                     {"complex64", 8},
                                                                     {"complex128", 16},
                                                                     {"complex32", 4},
                                                                     {"uint16", 2},
                                                                     {"uint32", 4},
                                                                     {"uint64", 8},
                                                                     {"float8_e4m3fn", 1},
                                                                     {"float8_e5m2", 1},
                                                                     {"float8_e4m3fnuz", 1},
                                                                     {"float8_e5m2fnuz", 1},
                                                                     {"float8_e8m0fnu", 1},
                                                                     {"qint8", 1},
                                                                     {"quint8", 1},
                                                                     {"qint32", 4}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

double SpanBytes(const TensorDesc& t) {
  // A dtype outside the table still moves memory: counted as 4 bytes, never as free.
  const double element = ElementBytes(t.dtype) > 0 ? ElementBytes(t.dtype) : 4;
  double distinct = 1;
  for (std::size_t i = 0; i < t.shape.size(); ++i) {
    const bool broadcast = t.stride && i < t.stride->size() && (*t.stride)[i] == 0;
    if (!broadcast || t.shape[i] == 0) distinct *= static_cast<double>(t.shape[i]);
  }
  return distinct * element;
}

OpCost CostOf(const CostRow& row) {
  const std::string_view name = BaseName(row.op);
  OpCost c;
  c.kind = KindOf(row.op);
  c.bytes = Spans(row.inputs) + Spans(row.outputs);
  const double n_in = row.inputs.empty() ? 0 : Numel(row.inputs.front());
  switch (c.kind) {
    case OpKind::kMatmul:
      c.flops = MatmulFlops(name, row);
      c.tensor_core = true;
      break;
    case OpKind::kConvolution:
      c.flops = ConvolutionFlops(name, row);
      c.tensor_core = true;
      break;
    case OpKind::kAttention:
      c.flops = AttentionFlops(name, row);
      c.tensor_core = true;
      break;
    case OpKind::kNormalization:  // mean 1, variance 3, normalise 2, scale and shift 2 per element.
      c.flops = (IsBackward(name) ? 16 : 8) * n_in;
      break;
    case OpKind::kSoftmax:  // max, subtract, exp, sum, divide; backward: multiply, sum, subtract,
                            // multiply.
      c.flops = (IsBackward(name) ? 4 : 5) * n_in;
      break;
    case OpKind::kReduction:
      c.flops = MaxNumel(row.inputs);
      break;
    case OpKind::kElementwise:
      c.flops = row.outputs.empty() ? n_in : MaxNumel(row.outputs);
      break;
    case OpKind::kOptimizer:
      for (const TensorDesc& t : row.inputs) c.flops += Numel(t);
      break;
    case OpKind::kGather:
      // A lookup reads only the rows it gathers (then writes them), not the whole table.
      if (name == "embedding" || name == "index_select" || name == "gather" || name == "index" ||
          name == "take" || name == "embedding_bag" || name == "_embedding_bag" ||
          name == "_unsafe_index") {
        c.bytes = Spans(row.inputs, 1) + 2 * Spans(row.outputs);
      }
      break;
    case OpKind::kView:
      c.bytes = 0;
      break;
    case OpKind::kCopy:
    case OpKind::kUnknown:
      break;
  }
  return c;
}

}  // namespace dt::cost
