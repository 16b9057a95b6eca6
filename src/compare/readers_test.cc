// The tensor-file readers on small hand-built inputs: what they accept and each malformed case.
#include <gtest/gtest.h>

#include "compare/pickle.h"
#include "compare/tensor.h"
#include "compare/test_util.h"
#include "compare/zip.h"

namespace dt::compare {
namespace {

using namespace testing;  // NOLINT

std::string ErrorOf(const Status& s) { return s ? "" : s.error().message; }

TEST(CompareSafetensorsTest, ReadsTensorsAndRejectsMalformedHeaders) {
  std::string ok = Safetensors(
      R"({"__metadata__":{"a":"b"},"x":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]}})",
      std::string(8, '\0'));
  std::vector<TensorInfo> out;
  ASSERT_TRUE(ReadSafetensors(U(ok), ok.size(), "f", "p/", out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].name, "p/x");
  EXPECT_EQ(out[0].dtype, DType::kBF16);
  EXPECT_EQ(out[0].numel, 4u);

  struct Case {
    std::string bytes, needle;
  };
  std::string longer;
  PutLe(longer, 1000, 8);
  longer += "{}";
  const Case cases[] = {
      {longer, "longer than the file"},
      {"\x01\x02", "shorter than the 8-byte"},
      {Safetensors(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", ""),
       "outside the data"},
      {Safetensors(
           R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
           std::string(12, '\0')),
       "overlap"},
      {Safetensors(R"({"x":{"dtype":"C128","shape":[1],"data_offsets":[0,16]}})",
                   std::string(16, '\0')),
       "unknown or unsupported dtype 'C128'"},  // Not a safetensors dtype (only npy / pt).
      {Safetensors(R"({"x":{"dtype":"","shape":[1],"data_offsets":[0,16]}})",
                   std::string(16, '\0')),
       "unknown or unsupported dtype ''"},
      {Safetensors(R"({"x":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,8]}})",
                   std::string(8, '\0')),
       "overflows"},
      {Safetensors(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[8,0]}})",
                   std::string(8, '\0')),
       "outside the data"},
      {Safetensors(R"([1,2])", ""), "not a JSON object"},
      {Safetensors(R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})",
                   std::string(4, '\0')),
       "shape entry is not a non-negative integer"},
  };
  for (const Case& c : cases) {
    std::vector<TensorInfo> o;
    EXPECT_NE(ErrorOf(ReadSafetensors(U(c.bytes), c.bytes.size(), "f", "", o)).find(c.needle),
              std::string::npos)
        << c.needle << ": " << ErrorOf(ReadSafetensors(U(c.bytes), c.bytes.size(), "f", "", o));
  }
}

TEST(CompareNpyTest, ReadsVersionsOrdersAndRejectsMalformed) {
  std::string data(24, '\0');
  for (int v : {1, 2, 3}) {
    std::string f = Npy("{'descr': '>f4', 'fortran_order': True, 'shape': (2, 3), }", data, v);
    std::vector<TensorInfo> out;
    ASSERT_TRUE(ReadNpy(U(f), f.size(), "f", "x", out)) << v;
    EXPECT_TRUE(out[0].big_endian);
    EXPECT_EQ(out[0].strides, (std::vector<std::int64_t>{1, 2}));
    EXPECT_EQ(out[0].shape, (std::vector<std::uint64_t>{2, 3}));
  }
  struct Case {
    std::string bytes, needle;
  };
  std::string hlen = Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", "");
  hlen[8] = '\xff';
  hlen[9] = '\x7f';
  const Case cases[] = {
      {Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", data.substr(0, 20)),
       "truncated"},
      {"\x93NUMPX" + data, "bad magic"},
      {hlen, "longer than the file"},
      {Npy("{'descr': '<c32', 'fortran_order': False, 'shape': (1,), }", data),
       "unsupported dtype"},
      {Npy("{'descr': '<c8', 'fortran_order': False, 'shape': (4,), }", data), "truncated"},
      {Npy("{'descr': '>c16', 'fortran_order': False, 'shape': (2,), }", data), "truncated"},
      {Npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", data),
       "structured"},
      {Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 8), }", data),
       "overflow"},
      {Npy("{'descr': '<f4', 'fortran_order': maybe, 'shape': (1,), }", data), "fortran_order"},
      {Npy("{'descr': '<f4', 'shape': (1,), }", data), "lacks"},
      {Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", data),
       "unexpected key"},
      {Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", data), "non-negative"},
      {Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", data, 9), "version 9"},
  };
  for (const Case& c : cases) {
    std::vector<TensorInfo> o;
    std::string err = ErrorOf(ReadNpy(U(c.bytes), c.bytes.size(), "f", "x", o));
    EXPECT_NE(err.find(c.needle), std::string::npos) << c.needle << ": " << err;
  }
}

// The dtypes added for issue #6's "every dtype of the format": the size rules of packed sub-byte
// floats and complex64, read from hand-built headers.
TEST(CompareSafetensorsTest, NewDTypesAndSubByteSizes) {
  struct Ok {
    std::string dtype;
    std::uint64_t numel, bytes;
    DType type;
  };
  const Ok oks[] = {
      {"F4", 8, 4, DType::kF4},
      {"F6_E2M3", 4, 3, DType::kF6E2M3},
      {"F6_E3M2", 8, 6, DType::kF6E3M2},
      {"F8_E4M3FNUZ", 3, 3, DType::kF8E4M3FNUZ},
      {"F8_E5M2FNUZ", 3, 3, DType::kF8E5M2FNUZ},
      {"F8_E8M0", 3, 3, DType::kF8E8M0},
      {"C64", 3, 24, DType::kC64},
  };
  for (const Ok& c : oks) {
    std::string f =
        Safetensors(R"({"x":{"dtype":")" + c.dtype + R"(","shape":[)" + std::to_string(c.numel) +
                        R"(],"data_offsets":[0,)" + std::to_string(c.bytes) + "]}}",
                    std::string(c.bytes, '\0'));
    std::vector<TensorInfo> out;
    auto st = ReadSafetensors(U(f), f.size(), "f", "", out);
    ASSERT_TRUE(st) << c.dtype << ": " << ErrorOf(st);
    EXPECT_EQ(out[0].dtype, c.type) << c.dtype;
    EXPECT_EQ(out[0].numel, c.numel) << c.dtype;
    EXPECT_EQ(StorageBytes(out[0]), c.bytes) << c.dtype;
  }
  struct Bad {
    std::string header, needle;
    std::size_t data;
  };
  const Bad bads[] = {
      {R"({"x":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})",
       "3 elements of F4 (4 bits each) is not a whole number of bytes", 2},
      {R"({"x":{"dtype":"F6_E3M2","shape":[2,1],"data_offsets":[0,2]}})",
       "2 elements of F6_E3M2 (6 bits each) is not a whole number of bytes", 2},
      {R"({"x":{"dtype":"F6_E2M3","shape":[4],"data_offsets":[0,4]}})",
       "data_offsets span 4 bytes but the shape and dtype need 3", 4},
      {R"({"x":{"dtype":"F4","shape":[8],"data_offsets":[0,8]}})",
       "data_offsets span 8 bytes but the shape and dtype need 4", 8},
      {R"({"x":{"dtype":"C64","shape":[2],"data_offsets":[0,8]}})",
       "data_offsets span 8 bytes but the shape and dtype need 16", 8},
      {R"({"x":{"dtype":"C64","shape":[2],"data_offsets":[0,24]}})", "outside the data", 16},
      {R"({"x":{"dtype":"F4","shape":[4611686018427387904],"data_offsets":[0,8]}})",
       "overflows 2^62 bits", 8},
  };
  for (const Bad& c : bads) {
    std::string f = Safetensors(c.header, std::string(c.data, '\0'));
    std::vector<TensorInfo> out;
    std::string err = ErrorOf(ReadSafetensors(U(f), f.size(), "f", "", out));
    EXPECT_NE(err.find(c.needle), std::string::npos) << c.needle << ": " << err;
  }
}

TEST(CompareNpyTest, ComplexDescrsAndDeflatedComplexSize) {
  std::string data(32, '\0');
  std::vector<TensorInfo> out;
  std::string le = Npy("{'descr': '<c8', 'fortran_order': True, 'shape': (2, 2), }", data);
  ASSERT_TRUE(ReadNpy(U(le), le.size(), "f", "x", out));
  std::string be = Npy("{'descr': '>c16', 'fortran_order': False, 'shape': (2,), }", data);
  ASSERT_TRUE(ReadNpy(U(be), be.size(), "f", "y", out));
  EXPECT_EQ(out[0].dtype, DType::kC64);
  EXPECT_FALSE(out[0].big_endian);
  EXPECT_EQ(out[0].strides, (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(out[1].dtype, DType::kC128);
  EXPECT_TRUE(out[1].big_endian);
  // A deflated member whose declared size disagrees with its complex header (16 bytes short).
  std::string member = Npy("{'descr': '<c16', 'fortran_order': False, 'shape': (3,), }", data);
  std::string npz = Zip({{"z.npy", member, true}});
  std::vector<TensorInfo> o;
  std::string err = ErrorOf(ReadNpz(U(npz), npz.size(), "f", o));
  EXPECT_NE(err.find("does not match the header (48 data bytes)"), std::string::npos) << err;
}

TEST(CompareNpzTest, StoredAndDeflatedMembersAndZipAttacks) {
  std::string npy =
      Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", Floats({1.5f, -2.f}));
  std::string zip = Zip({{"a.npy", npy, false}, {"b.npy", npy, true}});
  std::vector<TensorInfo> out;
  ASSERT_TRUE(ReadNpz(U(zip), zip.size(), "f", out))
      << ErrorOf(ReadNpz(U(zip), zip.size(), "f", out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].name, "a");
  EXPECT_FALSE(out[0].storage.is_deflated());
  EXPECT_TRUE(out[1].storage.is_deflated());
  EXPECT_EQ(out[1].storage.inflated_skip, npy.size() - 8);

  struct Case {
    std::string bytes, needle;
  };
  std::string overlap = Zip({{"a.npy", npy, false}, {"b.npy", npy, false}});
  std::size_t second = overlap.rfind("PK\x01\x02");
  for (int i = 0; i < 4; ++i) overlap[second + 42 + static_cast<std::size_t>(i)] = 0;
  std::string cut = Zip({{"a.npy", npy, false}});
  cut = cut.substr(0, 40) + cut.substr(60);
  const Case cases[] = {
      {Zip({{"a.npy", npy, true, 4000000000}}), "zip bomb"},
      {Zip({{"a.npy", npy, true, 1000}}), "does not match the header"},
      {Zip({{"a.npy", npy, true, 20}}), "longer than the member"},
      {Zip({{"a.npy", npy, false, 10}}), "declares different sizes"},
      {overlap, "overlap"},
      {cut, "zip:"},
      {"PK\x03\x04 not really", "zip:"},
  };
  for (const Case& c : cases) {
    std::vector<TensorInfo> o;
    std::string err = ErrorOf(ReadNpz(U(c.bytes), c.bytes.size(), "f", o));
    EXPECT_NE(err.find(c.needle), std::string::npos) << c.needle << ": " << err;
  }
}

TEST(CompareZipTest, InflateStopsAtTheDeclaredSizeAndOnTruncation) {
  std::string payload(100000, 'z');
  std::string def = RawDeflate(payload);
  InflateStream z;
  ASSERT_TRUE(z.Init(U(def), def.size(), 1000, "f", "m"));
  std::vector<unsigned char> buf(2000);
  EXPECT_FALSE(z.ReadExactly(buf.data(), 2000));
  InflateStream t;
  ASSERT_TRUE(t.Init(U(def), def.size() / 2, payload.size(), "f", "m"));
  std::vector<unsigned char> all(payload.size());
  auto s = t.ReadExactly(all.data(), all.size());
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("truncated"), std::string::npos);
  EXPECT_GT(MaxInflatedSize(100), 100000u);
}

TEST(CompareTorchPickleTest, ReadsTheTorchSaveShapeAndRefusesEverythingElse) {
  std::string pkl = TorchPickle(4);
  auto t = ReadTorchPickle(U(pkl), pkl.size(), "f");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->size(), 1u);
  EXPECT_EQ((*t)[0].name, "w");
  EXPECT_EQ((*t)[0].storage_key, "0");
  EXPECT_EQ((*t)[0].shape, (std::vector<std::uint64_t>{4}));

  std::string archive = Zip({{"m/data.pkl", pkl}, {"m/data/0", Floats({1, 2, 3, 4})}});
  std::vector<TensorInfo> out;
  ASSERT_TRUE(ReadTorchZip(U(archive), archive.size(), "f", out));
  EXPECT_EQ(out[0].numel, 4u);

  struct Case {
    std::string bytes, needle;
  };
  const Case cases[] = {
      {"\x80\x02"
       "cos\nsystem\n(X\x01\x00\x00\x00xtR.",
       "refused global 'os.system'"},
      {"\x80\x02"
       "cbuiltins\nexec\n.",
       "refused global 'builtins.exec'"},
      {"\x80\x02"
       "ctorch\nFloatStorage\n)R.",
       "refused call of 'torch.FloatStorage'"},
      {"\x80\x02"
       "N",
       "truncated"},
      {"\x80\x02"
       "X\xff\xff\xff\x7f",
       "past the end"},
      {"\x80\x02"
       "a.",
       "underflow"},
      {"\x80\x02"
       "]N\x81.",
       "unsupported pickle opcode 0x81"},
      {"\x80\x02"
       "h\x05.",
       "unknown memo entry"},
      {"\x80\x02"
       "NN.",
       "exactly one object"},
      {"\x80\x09.", "unsupported pickle protocol"},
      {TorchPickle(4).replace(TorchPickle(4).find("FloatStorage"), 12, "FloatStorags"),
       "refused global 'torch.FloatStorags'"},
  };
  for (const Case& c : cases) {
    auto r = ReadTorchPickle(U(c.bytes), c.bytes.size(), "f");
    ASSERT_FALSE(r) << c.needle;
    EXPECT_NE(r.error().message.find(c.needle), std::string::npos)
        << c.needle << ": " << r.error().message;
  }
  std::string legacy = "\x80\x02\x8a\x0alegacy";
  std::vector<TensorInfo> o;
  EXPECT_NE(ErrorOf(ReadTorchZip(U(legacy), legacy.size(), "f", o)).find("legacy"),
            std::string::npos);
  std::string small = Zip({{"m/data.pkl", TorchPickle(8)}, {"m/data/0", Floats({1, 2, 3, 4})}});
  EXPECT_NE(ErrorOf(ReadTorchZip(U(small), small.size(), "f", o)).find("declares 8 elements"),
            std::string::npos);
  // torch.save writes complex64 as a typed ComplexFloatStorage: elements of 8 bytes.
  std::string cpkl = TorchPickle(2);
  cpkl.replace(cpkl.find("FloatStorage"), 12, "ComplexFloatStorage");
  std::string complex = Zip({{"m/data.pkl", cpkl}, {"m/data/0", Floats({1, 2, 3, 4})}});
  std::vector<TensorInfo> co;
  ASSERT_TRUE(ReadTorchZip(U(complex), complex.size(), "f", co));
  EXPECT_EQ(co[0].dtype, DType::kC64);
  EXPECT_EQ(co[0].numel, 2u);
  std::string cshort = Zip({{"m/data.pkl", cpkl}, {"m/data/0", Floats({1, 2, 3})}});
  EXPECT_NE(ErrorOf(ReadTorchZip(U(cshort), cshort.size(), "f", o)).find("declares 2 elements"),
            std::string::npos);
  std::string missing = Zip({{"m/data.pkl", TorchPickle(4)}});
  EXPECT_NE(ErrorOf(ReadTorchZip(U(missing), missing.size(), "f", o)).find("is missing"),
            std::string::npos);
}

}  // namespace
}  // namespace dt::compare

namespace dt::compare {
namespace {

TEST(CompareZipCrcTest, LargeStoredMembersAreCheckedOnThreadsAndACorruptByteIsFound) {
  // Past the 64 MiB threshold, so the CRC is computed in parts and combined.
  std::vector<unsigned char> payload((std::size_t{65} << 20) + 12345);
  for (std::size_t i = 0; i < payload.size(); ++i)
    payload[i] = static_cast<unsigned char>(i * 2654435761u >> 13);
  ZipEntry e;
  e.name = "big";
  e.size = e.compressed_size = payload.size();
  e.data = payload.data();
  e.crc32 =
      static_cast<std::uint32_t>(crc32(0L, payload.data(), static_cast<uInt>(payload.size())));
  EXPECT_TRUE(VerifyZipCrcs({e}, "f").ok());
  payload[payload.size() / 3] ^= 1;
  auto s = VerifyZipCrcs({e}, "f");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("CRC-32"), std::string::npos);
}

TEST(CompareZipCrcTest, DeflatedMembersAreInflatedOnceAndChecked) {
  std::string npy =
      Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", Floats({1.5f, -2.f}));
  std::string zip = Zip({{"a.npy", npy, true}});
  std::vector<TensorInfo> out;
  EXPECT_TRUE(ReadNpz(U(zip), zip.size(), "f", out).ok());
  // The central directory's CRC field of the only member.
  std::size_t cd = zip.rfind("PK\x01\x02");
  zip[cd + 16] = static_cast<char>(zip[cd + 16] ^ 0x5a);
  out.clear();
  std::string err = ErrorOf(ReadNpz(U(zip), zip.size(), "f", out));
  EXPECT_NE(err.find("CRC-32"), std::string::npos) << err;
}

}  // namespace
}  // namespace dt::compare
