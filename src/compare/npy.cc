// NumPy .npy (format versions 1 to 3) and .npz (a zip of .npy members, stored or deflated).
#include <cctype>
#include <cstring>

#include "compare/tensor.h"
#include "compare/zip.h"
#include "util/strings.h"

namespace dt::compare {

namespace {

struct NpyHeader {
  DType dtype = DType::kF32;
  bool big_endian = false;
  bool fortran = false;
  std::vector<std::uint64_t> shape;
  std::uint64_t data_offset = 0;
};

Error Bad(const std::string& file, const std::string& what, const std::string& msg) {
  return MakeError(ErrorCode::kInput, what + ": " + msg, file);
}

// Parses the Python dict literal of an .npy header: {'descr': '<f4', 'fortran_order': False,
// 'shape': (2, 3), }. Only strings, booleans and tuples of integers are accepted.
class DictParser {
 public:
  explicit DictParser(std::string_view s) : s_(s) {}

  bool Parse(std::string& descr, bool& fortran, std::vector<std::uint64_t>& shape,
             std::string& err) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    Ws();
    if (!Eat('{')) return Fail(err, "header is not a dict");
    while (true) {
      Ws();
      if (Eat('}')) break;
      std::string key;
      if (!Str(key)) return Fail(err, "expected a quoted key");
      Ws();
      if (!Eat(':')) return Fail(err, "expected ':' after '" + key + "'");
      Ws();
      if (key == "descr") {
        if (!Str(descr))
          return Fail(err,
                      "descr is not a simple dtype string (structured arrays are not supported)");
        have_descr = true;
      } else if (key == "fortran_order") {
        if (s_.substr(i_, 4) == "True") {
          fortran = true;
          i_ += 4;
        } else if (s_.substr(i_, 5) == "False") {
          fortran = false;
          i_ += 5;
        } else {
          return Fail(err, "fortran_order is not True or False");
        }
        have_fortran = true;
      } else if (key == "shape") {
        if (!Eat('(')) return Fail(err, "shape is not a tuple");
        while (true) {
          Ws();
          if (Eat(')')) break;
          if (i_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[i_]))) {
            return Fail(err, "shape holds something other than non-negative integers");
          }
          std::uint64_t v = 0;
          while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
            if (v > (std::uint64_t{1} << 62) / 10) return Fail(err, "shape dimension overflows");
            v = v * 10 + static_cast<std::uint64_t>(s_[i_++] - '0');
          }
          if (s_.substr(i_, 1) == "L") ++i_;
          shape.push_back(v);
          if (shape.size() > 64) return Fail(err, "shape has more than 64 dimensions");
          Ws();
          if (Eat(',')) continue;
          if (Eat(')')) break;
          return Fail(err, "malformed shape tuple");
        }
        have_shape = true;
      } else {
        return Fail(err, "unexpected key '" + key + "'");
      }
      Ws();
      if (Eat(',')) continue;
      Ws();
      if (Eat('}')) break;
      return Fail(err, "expected ',' or '}'");
    }
    if (!have_descr || !have_fortran || !have_shape) {
      return Fail(err, "header lacks descr, fortran_order or shape");
    }
    return true;
  }

 private:
  static bool Fail(std::string& err, const std::string& msg) {
    err = msg;
    return false;
  }
  void Ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool Eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool Str(std::string& out) {
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) return false;
    char q = s_[i_++];
    std::size_t j = s_.find(q, i_);
    if (j == std::string_view::npos) return false;
    out.assign(s_.substr(i_, j - i_));
    i_ = j + 1;
    return true;
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

// Parses the .npy preamble from the first bytes of the file (or member).
Result<NpyHeader> ParseNpyHeader(const unsigned char* data, std::size_t size,
                                 const std::string& file, const std::string& what) {
  if (size < 10 || std::memcmp(data, "\x93NUMPY", 6) != 0) {
    return Bad(file, what, "not an .npy file (bad magic)");
  }
  int major = data[6];
  std::uint64_t hlen = 0, pre = 0;
  if (major == 1) {
    hlen = data[8] | (std::uint64_t{data[9]} << 8);
    pre = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) return Bad(file, what, "truncated .npy preamble");
    hlen = data[8] | (std::uint64_t{data[9]} << 8) | (std::uint64_t{data[10]} << 16) |
           (std::uint64_t{data[11]} << 24);
    pre = 12;
  } else {
    return Bad(file, what, "unsupported .npy format version " + std::to_string(major));
  }
  if (hlen > size - pre) {
    return Bad(file, what, "header length " + std::to_string(hlen) + " is longer than the file");
  }
  NpyHeader h;
  h.data_offset = pre + hlen;
  std::string descr, err;
  DictParser parser(std::string_view(reinterpret_cast<const char*>(data + pre), hlen));
  if (!parser.Parse(descr, h.fortran, h.shape, err)) return Bad(file, what, "header: " + err);
  if (descr.size() < 3) return Bad(file, what, "unknown or unsupported dtype '" + descr + "'");
  char order = descr[0];
  std::string_view code = std::string_view(descr).substr(1);
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    return Bad(file, what, "unknown or unsupported dtype '" + descr + "'");
  }
  struct Code {
    std::string_view code;
    DType type;
  };
  static constexpr Code kCodes[] = {
      {"f8", DType::kF64}, {"f4", DType::kF32},   {"f2", DType::kF16}, {"i8", DType::kI64},
      {"i4", DType::kI32}, {"i2", DType::kI16},   {"i1", DType::kI8},  {"u8", DType::kU64},
      {"u4", DType::kU32}, {"u2", DType::kU16},   {"u1", DType::kU8},  {"b1", DType::kBool},
      {"c8", DType::kC64}, {"c16", DType::kC128},
  };
  bool found = false;
  for (const Code& c : kCodes) {
    if (c.code == code) {
      h.dtype = c.type;
      found = true;
    }
  }
  if (!found) return Bad(file, what, "unknown or unsupported dtype '" + descr + "'");
  h.big_endian = order == '>' && DTypeSize(h.dtype) > 1;
  return h;
}

Status FillNpy(const NpyHeader& h, const std::string& file, const std::string& what,
               TensorInfo& info) {
  info.dtype = h.dtype;
  info.shape = h.shape;
  info.big_endian = h.big_endian;
  auto numel = ShapeProduct(h.shape, file, what);
  if (!numel) return numel.take_error();
  info.numel = *numel;
  info.storage_elements = info.numel;
  if (info.numel > (std::uint64_t{1} << 62) / DTypeSize(info.dtype)) {
    return Bad(file, what, "shape product overflows");
  }
  if (h.fortran && h.shape.size() > 1) info.strides = FortranStrides(h.shape);
  return OkStatus();
}

}  // namespace

Status ReadNpy(const unsigned char* data, std::size_t size, const std::string& file,
               const std::string& name, std::vector<TensorInfo>& out) {
  auto h = ParseNpyHeader(data, size, file, "npy");
  if (!h) return h.take_error();
  TensorInfo info;
  info.name = name;
  if (auto s = FillNpy(*h, file, "npy", info); !s) return s;
  std::uint64_t need = info.numel * DTypeSize(info.dtype);
  if (need > size - h->data_offset) {
    return Bad(file, "npy",
               "truncated: the data needs " + std::to_string(need) + " bytes, " +
                   std::to_string(size - h->data_offset) + " present");
  }
  info.storage.data = data + h->data_offset;
  out.push_back(std::move(info));
  return OkStatus();
}

Status ReadNpz(const unsigned char* data, std::size_t size, const std::string& file,
               std::vector<TensorInfo>& out) {
  auto entries = ReadZipDirectory(data, size, file);
  if (!entries) return entries.take_error();
  for (const ZipEntry& e : *entries) {
    std::string name = e.name;
    if (EndsWith(name, ".npy")) name.resize(name.size() - 4);
    std::string what = "npz member '" + e.name + "'";
    if (e.method == 0) {
      if (auto s = ReadNpy(e.data, e.size, file, name, out); !s) {
        Error err = s.take_error();
        err.message = what + ": " + err.message;
        return err;
      }
      continue;
    }
    // Deflated: inflate just the preamble and header to learn the layout; the data is inflated
    // again, in bounded chunks, when the tensor is compared.
    InflateStream z;
    if (auto s = z.Init(e.data, e.compressed_size, e.size, file, e.name); !s) return s;
    unsigned char pre[12] = {};
    std::size_t pre_len = std::min<std::uint64_t>(12, e.size);
    if (auto s = z.ReadExactly(pre, pre_len); !s) return s;
    if (pre_len < 10 || std::memcmp(pre, "\x93NUMPY", 6) != 0) {
      return Bad(file, what, "not an .npy file (bad magic)");
    }
    std::uint64_t hlen = pre[6] == 1
                             ? (pre[8] | (std::uint64_t{pre[9]} << 8))
                             : (pre[8] | (std::uint64_t{pre[9]} << 8) |
                                (std::uint64_t{pre[10]} << 16) | (std::uint64_t{pre[11]} << 24));
    std::uint64_t pre_size = pre[6] == 1 ? 10 : 12;
    if (hlen > (1u << 20)) return Bad(file, what, "header is larger than 1 MiB");
    if (pre_size + hlen > e.size) return Bad(file, what, "header length is longer than the member");
    std::vector<unsigned char> head(pre_size + hlen);
    // A version-1 header shorter than two bytes ends inside the 12 bytes already read.
    std::size_t have = std::min<std::size_t>(pre_len, head.size());
    std::memcpy(head.data(), pre, have);
    if (auto s = z.ReadExactly(head.data() + have, head.size() - have); !s) return s;
    auto h = ParseNpyHeader(head.data(), head.size(), file, what);
    if (!h) return h.take_error();
    TensorInfo info;
    info.name = name;
    if (auto s = FillNpy(*h, file, what, info); !s) return s;
    std::uint64_t need = info.numel * DTypeSize(info.dtype);
    if (need != e.size - h->data_offset) {
      return Bad(file, what,
                 "declared size " + std::to_string(e.size) + " does not match the header (" +
                     std::to_string(need) + " data bytes)");
    }
    info.storage.deflated = e.data;
    info.storage.deflated_size = e.compressed_size;
    info.storage.inflated_skip = h->data_offset;
    info.storage.inflated_limit = e.size;
    out.push_back(std::move(info));
  }
  return OkStatus();
}

}  // namespace dt::compare
