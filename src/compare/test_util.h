// Byte builders shared by the compare stage's unit tests and fuzz seed generation.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dt::compare::testing {

inline void PutLe(std::string& s, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

inline std::string Safetensors(const std::string& header, const std::string& data) {
  std::string s;
  PutLe(s, header.size(), 8);
  return s + header + data;
}

inline std::string Npy(const std::string& dict, const std::string& data, int version = 1) {
  std::string s = "\x93NUMPY";
  s.push_back(static_cast<char>(version));
  s.push_back(0);
  std::string h = dict;
  std::size_t pre = version == 1 ? 10 : 12;
  while ((pre + h.size() + 1) % 64 != 0) h.push_back(' ');
  h.push_back('\n');
  PutLe(s, h.size(), version == 1 ? 2 : 4);
  return s + h + data;
}

inline std::string RawDeflate(const std::string& in) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, in.size()) + 16, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

struct Member {
  std::string name;
  std::string payload;  // Uncompressed.
  bool deflate = false;
  std::int64_t declared = -1;  // Declared size; -1 for the true one.
};

inline std::string Zip(const std::vector<Member>& members) {
  std::string out, central;
  for (const Member& m : members) {
    std::string data = m.deflate ? RawDeflate(m.payload) : m.payload;
    std::uint64_t size =
        m.declared >= 0 ? static_cast<std::uint64_t>(m.declared) : m.payload.size();
    std::uint64_t off = out.size();
    PutLe(out, 0x04034b50, 4);
    PutLe(out, 20, 2);
    PutLe(out, 0, 2);
    PutLe(out, m.deflate ? 8 : 0, 2);
    const auto crc = crc32(0L, reinterpret_cast<const Bytef*>(m.payload.data()),
                           static_cast<uInt>(m.payload.size()));
    PutLe(out, 0, 4);
    PutLe(out, crc, 4);
    PutLe(out, data.size(), 4);
    PutLe(out, size, 4);
    PutLe(out, m.name.size(), 2);
    PutLe(out, 0, 2);
    out += m.name + data;
    PutLe(central, 0x02014b50, 4);
    PutLe(central, 20, 2);
    PutLe(central, 20, 2);
    PutLe(central, 0, 2);
    PutLe(central, m.deflate ? 8 : 0, 2);
    PutLe(central, 0, 4);
    PutLe(central, crc, 4);
    PutLe(central, data.size(), 4);
    PutLe(central, size, 4);
    PutLe(central, m.name.size(), 2);
    PutLe(central, 0, 2);
    PutLe(central, 0, 2);
    PutLe(central, 0, 2);
    PutLe(central, 0, 2);
    PutLe(central, 0, 4);
    PutLe(central, off, 4);
    central += m.name;
  }
  std::uint64_t cd = out.size();
  out += central;
  PutLe(out, 0x06054b50, 4);
  PutLe(out, 0, 4);
  PutLe(out, members.size(), 2);
  PutLe(out, members.size(), 2);
  PutLe(out, central.size(), 4);
  PutLe(out, cd, 4);
  PutLe(out, 0, 2);
  return out;
}

// A data.pkl as torch.save writes it for {"w": tensor of `numel` float32 in storage "0"}.
inline std::string TorchPickle(int numel) {
  std::string p = "\x80\x02}(X";
  PutLe(p, 1, 4);
  p += "wctorch._utils\n_rebuild_tensor_v2\n((X";
  PutLe(p, 7, 4);
  p += "storagectorch\nFloatStorage\nX";
  PutLe(p, 1, 4);
  p += "0X";
  PutLe(p, 3, 4);
  p += "cpuK";
  p.push_back(static_cast<char>(numel));
  p += "tQK";
  p.push_back(0);
  p += "K";
  p.push_back(static_cast<char>(numel));
  p += "\x85K\x01\x85\x89"
       "ccollections\nOrderedDict\n)RtRu.";
  return p;
}

inline std::string Floats(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

inline const unsigned char* U(const std::string& s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

}  // namespace dt::compare::testing
