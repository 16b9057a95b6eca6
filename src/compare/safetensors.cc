// safetensors: an 8-byte little-endian header length, a JSON header, then the raw bytes.
#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "compare/tensor.h"
#include "util/json_fields.h"

namespace dt::compare {

namespace {

Error Bad(const std::string& file, const std::string& msg) {
  return MakeError(ErrorCode::kInput, "safetensors: " + msg, file);
}

}  // namespace

Status ReadSafetensors(const unsigned char* data, std::size_t size, const std::string& file,
                       std::string_view prefix, std::vector<TensorInfo>& out) {
  if (size < 8) return Bad(file, "file is shorter than the 8-byte header length");
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | data[i];
  if (header_len > size - 8) {
    return Bad(file, "header length " + std::to_string(header_len) + " is longer than the file (" +
                         std::to_string(size) + " bytes)");
  }
  if (header_len > (std::uint64_t{100} << 20)) return Bad(file, "header is larger than 100 MiB");
  // A header nested thousands deep would exhaust the stack of the recursive parser.
  const std::string_view header_text(reinterpret_cast<const char*>(data + 8), header_len);
  if (auto depth = CheckJsonDepth(header_text, file); !depth) return depth;
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(data + 8, data + 8 + header_len);
  } catch (const nlohmann::json::exception& e) {
    return Bad(file, std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) return Bad(file, "header is not a JSON object");
  const unsigned char* base = data + 8 + header_len;
  const std::uint64_t data_size = size - 8 - header_len;
  struct Span {
    std::uint64_t begin, end;
    std::string name;
  };
  std::vector<Span> spans;
  std::size_t first = out.size();
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const std::string& name = it.key();
    const nlohmann::json& t = it.value();
    if (!t.is_object() || !t.contains("dtype") || !t.contains("shape") ||
        !t.contains("data_offsets")) {
      return Bad(file, "tensor '" + name + "' lacks dtype, shape or data_offsets");
    }
    const auto& jd = t["dtype"];
    if (!jd.is_string()) return Bad(file, "tensor '" + name + "': dtype is not a string");
    auto dtype = DTypeFromSafetensors(jd.get<std::string>());
    if (!dtype) {
      return Bad(file, "tensor '" + name + "': unknown or unsupported dtype '" +
                           jd.get<std::string>() + "'");
    }
    const auto& js = t["shape"];
    const auto& jo = t["data_offsets"];
    if (!js.is_array()) return Bad(file, "tensor '" + name + "': shape is not a list");
    if (!jo.is_array() || jo.size() != 2 || !jo[0].is_number_unsigned() ||
        !jo[1].is_number_unsigned()) {
      return Bad(file, "tensor '" + name + "': data_offsets is not a pair of offsets");
    }
    TensorInfo info;
    info.name = std::string(prefix) + name;
    info.dtype = *dtype;
    for (const auto& d : js) {
      if (!d.is_number_unsigned())
        return Bad(file, "tensor '" + name + "': shape entry is not a non-negative integer");
      info.shape.push_back(d.get<std::uint64_t>());
    }
    auto numel = ShapeProduct(info.shape, file, "safetensors: tensor '" + name + "'");
    if (!numel) return numel.take_error();
    info.numel = *numel;
    std::uint64_t b = jo[0].get<std::uint64_t>(), e = jo[1].get<std::uint64_t>();
    if (b > e || e > data_size) {
      return Bad(file, "tensor '" + name + "': data_offsets [" + std::to_string(b) + ", " +
                           std::to_string(e) + "] lie outside the data (" +
                           std::to_string(data_size) + " bytes)");
    }
    const auto bits = static_cast<std::uint64_t>(DTypeBits(info.dtype));
    if (info.numel > (std::uint64_t{1} << 62) / bits) {
      return Bad(file, "tensor '" + name + "': shape × dtype overflows 2^62 bits");
    }
    // Sub-byte floats are packed; the format stores whole bytes, so their count must fill them.
    if (info.numel * bits % 8 != 0) {
      return Bad(file, "tensor '" + name + "': " + std::to_string(info.numel) + " elements of " +
                           jd.get<std::string>() + " (" + std::to_string(bits) +
                           " bits each) is not a whole number of bytes");
    }
    if (e - b != info.numel * bits / 8) {
      return Bad(file, "tensor '" + name + "': data_offsets span " + std::to_string(e - b) +
                           " bytes but the shape and dtype need " +
                           std::to_string(info.numel * bits / 8));
    }
    info.storage.data = base + b;
    info.storage_elements = info.numel;
    spans.push_back({b, e, name});
    out.push_back(std::move(info));
  }
  std::sort(spans.begin(), spans.end(),
            [](const Span& x, const Span& y) { return x.begin < y.begin; });
  for (std::size_t i = 1; i < spans.size(); ++i) {
    if (spans[i].begin < spans[i - 1].end) {
      out.resize(first);
      return Bad(file, "tensors '" + spans[i - 1].name + "' and '" + spans[i].name +
                           "' overlap in the data");
    }
  }
  return OkStatus();
}

}  // namespace dt::compare
