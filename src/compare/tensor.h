// The tensor model shared by every reader: a dtype, a shape, a layout and where the bytes lie
// (inside a memory map, or inside a deflated zip member that is inflated as it is read).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/fs.h"
#include "util/result.h"

namespace dt::compare {

enum class DType {
  kF64,
  kF32,
  kF16,
  kBF16,
  kF8E4M3,
  kF8E5M2,
  kF8E4M3FNUZ,
  kF8E5M2FNUZ,
  kF8E8M0,
  kF6E2M3,
  kF6E3M2,
  kF4,
  kI64,
  kI32,
  kI16,
  kI8,
  kU64,
  kU32,
  kU16,
  kU8,
  kBool,
  kC64,
  kC128,
};

// "float32", "bfloat16", "float8_e4m3fn", "complex64"… (torch's names; the sub-byte floats, which
// torch only has packed, by their element names: "float4_e2m1fn", "float6_e2m3fn"…).
std::string_view DTypeName(DType t);
// Bits per element: 4 and 6 for the sub-byte floats, which only safetensors holds, bit-packed.
int DTypeBits(DType t);
// Bytes per element of a dtype of whole bytes (checked: a sub-byte dtype has no element size; use
// BytesOf or StorageBytes for those).
std::size_t DTypeSize(DType t);
bool IsSubByte(DType t);
// Bytes that n packed elements of `t` take; n·DTypeBits(t) must be a multiple of 8, which the
// safetensors reader checks of every sub-byte tensor (and which holds at every 2048-element block
// boundary).
std::uint64_t BytesOf(DType t, std::uint64_t n);
// A real floating dtype (float8_e8m0fnu too, which has no mantissa bits); not complex.
bool IsFloat(DType t);
bool IsComplex(DType t);
// Mantissa bits of a float dtype (its precision), of a complex dtype's components; 0 for
// integers and bool.
int MantissaBits(DType t);
// The real dtype of a complex dtype's components (float32, float64); `t` itself otherwise.
DType ComponentDType(DType t);
// safetensors' dtype strings ("F32", "BF16", "F8_E4M3", "F4", "C64"…); complex128 has none.
std::optional<DType> DTypeFromSafetensors(std::string_view s);
// The safetensors spelling of a dtype ("F32", "F8_E4M3FNUZ"…); empty for complex128.
std::string_view SafetensorsName(DType t);

// Where a tensor's bytes are: a range of a mapped file, or a deflated zip member (its compressed
// bytes, and how many inflated bytes precede the data, e.g. an .npy header).
struct TensorStorage {
  const unsigned char* data = nullptr;  // Direct bytes, when not deflated.
  const unsigned char* deflated = nullptr;
  std::uint64_t deflated_size = 0;
  std::uint64_t inflated_skip = 0;   // Bytes of the inflated stream before the tensor data.
  std::uint64_t inflated_limit = 0;  // The member's declared inflated size.
  bool is_deflated() const { return deflated != nullptr; }
};

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<std::uint64_t> shape;
  // Element strides; C-contiguous when empty. Only memory-mapped storage may have other strides
  // than C order, except that two tensors with identical dense strides are read in storage order.
  std::vector<std::int64_t> strides;
  bool big_endian = false;
  std::uint64_t numel = 1;
  std::uint64_t storage_elements = 0;  // Elements addressable from `storage` (bounds for strides).
  TensorStorage storage;
};

// The bytes of a tensor's elements (numel of its dtype, packed).
std::uint64_t StorageBytes(const TensorInfo& t);

// C-order strides for `shape`.
std::vector<std::int64_t> ContiguousStrides(const std::vector<std::uint64_t>& shape);
// Fortran-order strides for `shape`.
std::vector<std::int64_t> FortranStrides(const std::vector<std::uint64_t>& shape);
// The product of `shape`, or an error when it overflows 2^62 elements.
Result<std::uint64_t> ShapeProduct(const std::vector<std::uint64_t>& shape, const std::string& file,
                                   std::string_view what);

// One scalar metric of a bundle's metrics.jsonl.
struct MetricPoint {
  std::int64_t step = 0;
  std::string name;
  double value = 0;
};

// An opened tensor file, bundle or archive: the tensors it holds (their bytes stay in `maps`).
struct TensorFile {
  std::string path;
  std::string kind;  // "safetensors", "npy", "npz", "pt", "bundle".
  std::vector<std::unique_ptr<MappedFile>> maps;
  std::vector<TensorInfo> tensors;
  bool has_metrics = false;
  std::vector<MetricPoint> metrics;
};

// Opens any supported input: a bundle directory, .safetensors, .npy, .npz, .pt / .pth / .bin zip.
Result<TensorFile> OpenTensorFile(const std::string& path);

// The readers, each over bytes already mapped (`file` names them in errors). They append to `out`.
Status ReadSafetensors(const unsigned char* data, std::size_t size, const std::string& file,
                       std::string_view prefix, std::vector<TensorInfo>& out);
Status ReadNpy(const unsigned char* data, std::size_t size, const std::string& file,
               const std::string& name, std::vector<TensorInfo>& out);
Status ReadNpz(const unsigned char* data, std::size_t size, const std::string& file,
               std::vector<TensorInfo>& out);
Status ReadTorchZip(const unsigned char* data, std::size_t size, const std::string& file,
                    std::vector<TensorInfo>& out);

}  // namespace dt::compare
