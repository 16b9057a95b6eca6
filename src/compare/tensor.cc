#include "compare/tensor.h"

#include <filesystem>

namespace dt::compare {

namespace {

struct DTypeRow {
  DType type;
  std::string_view name;
  std::string_view safetensors;
  std::size_t size;
  int mantissa;
};

constexpr DTypeRow kDTypes[] = {
    {DType::kF64, "float64", "F64", 8, 52},
    {DType::kF32, "float32", "F32", 4, 23},
    {DType::kF16, "float16", "F16", 2, 10},
    {DType::kBF16, "bfloat16", "BF16", 2, 7},
    {DType::kF8E4M3, "float8_e4m3fn", "F8_E4M3", 1, 3},
    {DType::kF8E5M2, "float8_e5m2", "F8_E5M2", 1, 2},
    {DType::kI64, "int64", "I64", 8, 0},
    {DType::kI32, "int32", "I32", 4, 0},
    {DType::kI16, "int16", "I16", 2, 0},
    {DType::kI8, "int8", "I8", 1, 0},
    {DType::kU64, "uint64", "U64", 8, 0},
    {DType::kU32, "uint32", "U32", 4, 0},
    {DType::kU16, "uint16", "U16", 2, 0},
    {DType::kU8, "uint8", "U8", 1, 0},
    {DType::kBool, "bool", "BOOL", 1, 0},
};

const DTypeRow& Row(DType t) { return kDTypes[static_cast<int>(t)]; }

}  // namespace

std::string_view DTypeName(DType t) { return Row(t).name; }
std::size_t DTypeSize(DType t) { return Row(t).size; }
bool IsFloat(DType t) { return Row(t).mantissa > 0; }
int MantissaBits(DType t) { return Row(t).mantissa; }

std::optional<DType> DTypeFromSafetensors(std::string_view s) {
  for (const DTypeRow& r : kDTypes) {
    if (r.safetensors == s) return r.type;
  }
  return std::nullopt;
}

std::vector<std::int64_t> ContiguousStrides(const std::vector<std::uint64_t>& shape) {
  std::vector<std::int64_t> s(shape.size());
  std::int64_t acc = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= static_cast<std::int64_t>(shape[i] == 0 ? 1 : shape[i]);
  }
  return s;
}

std::vector<std::int64_t> FortranStrides(const std::vector<std::uint64_t>& shape) {
  std::vector<std::int64_t> s(shape.size());
  std::int64_t acc = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    s[i] = acc;
    acc *= static_cast<std::int64_t>(shape[i] == 0 ? 1 : shape[i]);
  }
  return s;
}

Result<std::uint64_t> ShapeProduct(const std::vector<std::uint64_t>& shape, const std::string& file,
                                   std::string_view what) {
  constexpr std::uint64_t kMax = std::uint64_t{1} << 62;
  std::uint64_t n = 1;
  bool zero = false;
  for (std::uint64_t d : shape) {
    if (d == 0) zero = true;
    if (d > kMax) {
      return MakeError(
          ErrorCode::kInput,
          std::string(what) + ": shape dimension " + std::to_string(d) + " is too large", file);
    }
    std::uint64_t dim = d == 0 ? 1 : d;
    if (n > kMax / dim) {
      return MakeError(ErrorCode::kInput, std::string(what) + ": shape product overflows", file);
    }
    n *= dim;
  }
  return zero ? 0 : n;
}

}  // namespace dt::compare
