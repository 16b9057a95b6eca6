#include "compare/tensor.h"

#include <filesystem>
#include <iterator>

namespace dt::compare {

namespace {

enum class Kind { kFloat, kComplex, kInt, kBool };

struct DTypeRow {
  DType type;
  std::string_view name;
  std::string_view safetensors;  // Empty where the format has no such dtype.
  int bits;
  Kind kind;
  int mantissa;
};

// In DType's order (checked below).
constexpr DTypeRow kDTypes[] = {
    {DType::kF64, "float64", "F64", 64, Kind::kFloat, 52},
    {DType::kF32, "float32", "F32", 32, Kind::kFloat, 23},
    {DType::kF16, "float16", "F16", 16, Kind::kFloat, 10},
    {DType::kBF16, "bfloat16", "BF16", 16, Kind::kFloat, 7},
    {DType::kF8E4M3, "float8_e4m3fn", "F8_E4M3", 8, Kind::kFloat, 3},
    {DType::kF8E5M2, "float8_e5m2", "F8_E5M2", 8, Kind::kFloat, 2},
    {DType::kF8E4M3FNUZ, "float8_e4m3fnuz", "F8_E4M3FNUZ", 8, Kind::kFloat, 3},
    {DType::kF8E5M2FNUZ, "float8_e5m2fnuz", "F8_E5M2FNUZ", 8, Kind::kFloat, 2},
    {DType::kF8E8M0, "float8_e8m0fnu", "F8_E8M0", 8, Kind::kFloat, 0},
    {DType::kF6E2M3, "float6_e2m3fn", "F6_E2M3", 6, Kind::kFloat, 3},
    {DType::kF6E3M2, "float6_e3m2fn", "F6_E3M2", 6, Kind::kFloat, 2},
    {DType::kF4, "float4_e2m1fn", "F4", 4, Kind::kFloat, 1},
    {DType::kI64, "int64", "I64", 64, Kind::kInt, 0},
    {DType::kI32, "int32", "I32", 32, Kind::kInt, 0},
    {DType::kI16, "int16", "I16", 16, Kind::kInt, 0},
    {DType::kI8, "int8", "I8", 8, Kind::kInt, 0},
    {DType::kU64, "uint64", "U64", 64, Kind::kInt, 0},
    {DType::kU32, "uint32", "U32", 32, Kind::kInt, 0},
    {DType::kU16, "uint16", "U16", 16, Kind::kInt, 0},
    {DType::kU8, "uint8", "U8", 8, Kind::kInt, 0},
    {DType::kBool, "bool", "BOOL", 8, Kind::kBool, 0},
    {DType::kC64, "complex64", "C64", 64, Kind::kComplex, 23},
    {DType::kC128, "complex128", "", 128, Kind::kComplex, 52},
};

constexpr bool InOrder() {
  for (std::size_t i = 0; i < std::size(kDTypes); ++i) {
    if (static_cast<std::size_t>(kDTypes[i].type) != i) return false;
  }
  return true;
}
static_assert(InOrder(), "kDTypes must list the dtypes in DType's order");

const DTypeRow& Row(DType t) { return kDTypes[static_cast<int>(t)]; }

}  // namespace

std::string_view DTypeName(DType t) { return Row(t).name; }
int DTypeBits(DType t) { return Row(t).bits; }
bool IsSubByte(DType t) { return Row(t).bits < 8; }

std::size_t DTypeSize(DType t) {
  DT_CHECK(!IsSubByte(t));
  return static_cast<std::size_t>(Row(t).bits / 8);
}

std::uint64_t BytesOf(DType t, std::uint64_t n) {
  int bits = Row(t).bits;
  // Whole-byte dtypes multiply by bytes, so n·bits cannot overflow where n·size does not.
  if (bits % 8 == 0) return n * static_cast<std::uint64_t>(bits / 8);
  return n * static_cast<std::uint64_t>(bits) / 8;
}

std::uint64_t StorageBytes(const TensorInfo& t) { return BytesOf(t.dtype, t.numel); }

bool IsFloat(DType t) { return Row(t).kind == Kind::kFloat; }
bool IsComplex(DType t) { return Row(t).kind == Kind::kComplex; }
int MantissaBits(DType t) { return Row(t).mantissa; }

DType ComponentDType(DType t) {
  if (t == DType::kC64) return DType::kF32;
  if (t == DType::kC128) return DType::kF64;
  return t;
}

std::string_view SafetensorsName(DType t) { return Row(t).safetensors; }

std::optional<DType> DTypeFromSafetensors(std::string_view s) {
  for (const DTypeRow& r : kDTypes) {
    if (!r.safetensors.empty() && r.safetensors == s) return r.type;
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
