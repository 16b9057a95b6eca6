#include "compare/zip.h"

#include <algorithm>
#include <cstring>

#include "util/parallel.h"

namespace dt::compare {

namespace {

std::uint64_t Le(const unsigned char* p, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

Error Bad(const std::string& file, const std::string& msg) {
  return MakeError(ErrorCode::kInput, "zip: " + msg, file);
}

}  // namespace

std::uint64_t MaxInflatedSize(std::uint64_t compressed) {
  // Deflate cannot exceed a ratio of 1032:1; a small slack covers tiny members.
  return compressed * 1032 + 1024;
}

Result<std::vector<ZipEntry>> ReadZipDirectory(const unsigned char* data, std::size_t size,
                                               const std::string& file) {
  if (size < 22) return Bad(file, "file is too short to be a zip archive");
  std::size_t lo = size > 65557 ? size - 65557 : 0;
  std::size_t eocd = SIZE_MAX;
  for (std::size_t i = size - 22 + 1; i-- > lo;) {
    if (Le(data + i, 4) == 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd == SIZE_MAX) return Bad(file, "no end-of-central-directory record (not a zip archive)");
  std::uint64_t count = Le(data + eocd + 10, 2);
  std::uint64_t cd_size = Le(data + eocd + 12, 4);
  std::uint64_t cd_off = Le(data + eocd + 16, 4);
  if (count == 0xFFFF || cd_size == 0xFFFFFFFF || cd_off == 0xFFFFFFFF) {
    if (eocd < 20 || Le(data + eocd - 20, 4) != 0x07064b50) {
      return Bad(file, "zip64 end-of-central-directory locator is missing");
    }
    std::uint64_t z64 = Le(data + eocd - 20 + 8, 8);
    if (size < 56 || z64 > size - 56 || Le(data + z64, 4) != 0x06064b50) {
      return Bad(file, "zip64 end-of-central-directory record lies outside the file");
    }
    count = Le(data + z64 + 32, 8);
    cd_size = Le(data + z64 + 40, 8);
    cd_off = Le(data + z64 + 48, 8);
  }
  if (cd_off > size || cd_size > size - cd_off) {
    return Bad(file, "central directory lies outside the file");
  }
  if (count > cd_size / 46 + 1) return Bad(file, "central directory declares too many entries");
  std::vector<ZipEntry> entries;
  struct Range {
    std::uint64_t begin, end;
    std::size_t index;
  };
  std::vector<Range> ranges;
  const unsigned char* p = data + cd_off;
  const unsigned char* end = p + cd_size;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (end - p < 46 || Le(p, 4) != 0x02014b50) return Bad(file, "central directory is truncated");
    std::uint16_t flags = static_cast<std::uint16_t>(Le(p + 8, 2));
    ZipEntry e;
    e.method = static_cast<std::uint16_t>(Le(p + 10, 2));
    e.crc32 = static_cast<std::uint32_t>(Le(p + 16, 4));
    e.compressed_size = Le(p + 20, 4);
    e.size = Le(p + 24, 4);
    std::uint64_t nlen = Le(p + 28, 2), elen = Le(p + 30, 2), clen = Le(p + 32, 2);
    std::uint64_t local = Le(p + 42, 4);
    if (static_cast<std::uint64_t>(end - p) < 46 + nlen + elen + clen) {
      return Bad(file, "central directory entry is truncated");
    }
    e.name.assign(reinterpret_cast<const char*>(p + 46), nlen);
    const unsigned char* x = p + 46 + nlen;
    const unsigned char* xend = x + elen;
    while (xend - x >= 4) {
      std::uint64_t id = Le(x, 2), len = Le(x + 2, 2);
      if (static_cast<std::uint64_t>(xend - x - 4) < len) break;
      if (id == 1) {
        const unsigned char* q = x + 4;
        std::uint64_t left = len;
        auto take = [&](std::uint64_t& field) {
          if (field == 0xFFFFFFFF && left >= 8) {
            field = Le(q, 8);
            q += 8;
            left -= 8;
          }
        };
        take(e.size);
        take(e.compressed_size);
        take(local);
      }
      x += 4 + len;
    }
    p += 46 + nlen + elen + clen;
    if (flags & 1) return Bad(file, "member '" + e.name + "' is encrypted");
    if (e.method != 0 && e.method != 8) {
      return Bad(file, "member '" + e.name + "' uses compression method " +
                           std::to_string(e.method) + " (only stored and deflate are supported)");
    }
    if (size < 30 || local > size - 30 || Le(data + local, 4) != 0x04034b50) {
      return Bad(file, "member '" + e.name + "': local header lies outside the file");
    }
    std::uint64_t lnlen = Le(data + local + 26, 2), lelen = Le(data + local + 28, 2);
    std::uint64_t start = local + 30 + lnlen + lelen;
    if (start > size || e.compressed_size > size - start) {
      return Bad(file,
                 "member '" + e.name + "' is truncated: its data runs past the end of the file");
    }
    if (e.method == 0 && e.size != e.compressed_size) {
      return Bad(file, "stored member '" + e.name + "' declares different sizes");
    }
    if (e.method == 8 && e.size > MaxInflatedSize(e.compressed_size)) {
      return Bad(file, "member '" + e.name + "' declares " + std::to_string(e.size) +
                           " bytes from " + std::to_string(e.compressed_size) +
                           " compressed bytes, more than deflate can produce (a zip bomb)");
    }
    e.data = data + start;
    ranges.push_back({local, start + e.compressed_size, entries.size()});
    entries.push_back(std::move(e));
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
  for (std::size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].begin < ranges[i - 1].end) {
      return Bad(file, "members '" + entries[ranges[i - 1].index].name + "' and '" +
                           entries[ranges[i].index].name + "' overlap");
    }
  }
#if !defined(FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION)
  if (auto s = VerifyZipCrcs(entries, file); !s) return s.take_error();
#endif
  return entries;
}

namespace {

// CRC-32 of a byte range, split over threads for large ranges (zlib combines the parts).
std::uint32_t Crc32(const unsigned char* p, std::uint64_t n) {
  static constexpr std::uint64_t kChunk = std::uint64_t{1} << 30;  // zlib takes uInt lengths.
  constexpr std::uint64_t kParallelFrom = std::uint64_t{64} << 20;
  auto serial = [](const unsigned char* q, std::uint64_t m) {
    uLong c = crc32(0L, Z_NULL, 0);
    while (m > 0) {
      auto k = static_cast<uInt>(std::min(m, kChunk));
      c = crc32(c, q, k);
      q += k;
      m -= k;
    }
    return c;
  };
  const unsigned threads = std::min(8u, DefaultThreads());
  if (n < kParallelFrom || threads == 1) return static_cast<std::uint32_t>(serial(p, n));
  std::vector<uLong> parts(threads);
  std::vector<std::uint64_t> sizes(threads);
  const std::uint64_t per = n / threads;
  ParallelFor(threads, threads, [&](std::size_t t, unsigned) {
    const std::uint64_t begin = per * t;
    sizes[t] = t + 1 == threads ? n - begin : per;
    parts[t] = serial(p + begin, sizes[t]);
  });
  uLong c = parts[0];
  // z_off_t is 64 bits on Linux and macOS (crc32_combine64 is not declared everywhere).
  for (unsigned t = 1; t < threads; ++t) {
    c = crc32_combine(c, parts[t], static_cast<z_off_t>(sizes[t]));
  }
  return static_cast<std::uint32_t>(c);
}

}  // namespace

Status VerifyZipCrcs(const std::vector<ZipEntry>& entries, const std::string& file) {
  for (const ZipEntry& e : entries) {
    std::uint32_t crc = 0;
    if (e.method == 0) {
      crc = Crc32(e.data, e.size);
    } else {
      // Inflated once, never past the declared size (+1 to see a longer stream). A stream that is
      // corrupt or of another length is left to the readers, whose errors say what is wrong.
      z_stream z{};
      if (inflateInit2(&z, -15) != Z_OK) return Bad(file, "cannot start inflating");
      std::vector<unsigned char> buf(std::min<std::uint64_t>(e.size + 1, 1u << 20));
      uLong c = crc32(0L, Z_NULL, 0);
      const unsigned char* src = e.data;
      std::uint64_t src_left = e.compressed_size, produced = 0;
      int rc = Z_OK;
      while (rc == Z_OK && produced <= e.size) {
        if (z.avail_in == 0 && src_left > 0) {
          auto take = static_cast<uInt>(std::min<std::uint64_t>(src_left, 1u << 30));
          z.next_in = const_cast<Bytef*>(src);
          z.avail_in = take;
          src += take;
          src_left -= take;
        }
        z.next_out = buf.data();
        z.avail_out = static_cast<uInt>(std::min<std::uint64_t>(buf.size(), e.size + 1 - produced));
        rc = inflate(&z, Z_NO_FLUSH);
        std::size_t made = z.next_out - buf.data();
        c = crc32(c, buf.data(), static_cast<uInt>(made));
        produced += made;
        if (rc == Z_BUF_ERROR && made == 0) break;
        if (rc == Z_BUF_ERROR) rc = Z_OK;
      }
      inflateEnd(&z);
      if (rc != Z_STREAM_END || produced != e.size) continue;
      crc = static_cast<std::uint32_t>(c);
    }
    if (crc != e.crc32) {
      return Bad(file, "member '" + e.name + "' is corrupt: its CRC-32 does not match its data");
    }
  }
  return OkStatus();
}

InflateStream::~InflateStream() {
  if (init_) inflateEnd(&z_);
}

Error InflateStream::Fail(const std::string& msg) const {
  return MakeError(ErrorCode::kInput, "zip member '" + member_ + "': " + msg, file_);
}

Status InflateStream::Init(const unsigned char* src, std::uint64_t src_size, std::uint64_t limit,
                           std::string file, std::string member) {
  file_ = std::move(file);
  member_ = std::move(member);
  src_ = src;
  src_left_ = src_size;
  limit_ = limit;
  std::memset(&z_, 0, sizeof z_);
  if (inflateInit2(&z_, -15) != Z_OK) return Fail("cannot start inflating");
  init_ = true;
  return OkStatus();
}

Status InflateStream::ReadExactly(unsigned char* out, std::size_t n) {
  if (n > limit_ - std::min(limit_, produced_)) {
    return Fail("inflated data would exceed the declared size of " + std::to_string(limit_) +
                " bytes");
  }
  std::size_t got = 0;
  while (got < n) {
    if (ended_) return Fail("truncated: the compressed stream ended early");
    if (z_.avail_in == 0 && src_left_ > 0) {
      std::uint64_t take = std::min<std::uint64_t>(src_left_, 1u << 30);
      z_.next_in = const_cast<Bytef*>(src_);
      z_.avail_in = static_cast<uInt>(take);
      src_ += take;
      src_left_ -= take;
    }
    std::size_t want = std::min<std::size_t>(n - got, 1u << 30);
    z_.next_out = out + got;
    z_.avail_out = static_cast<uInt>(want);
    int rc = inflate(&z_, Z_NO_FLUSH);
    std::size_t made = want - z_.avail_out;
    got += made;
    if (rc == Z_STREAM_END) {
      ended_ = true;
    } else if (rc == Z_BUF_ERROR && made == 0 && z_.avail_in == 0 && src_left_ == 0) {
      return Fail("truncated: the compressed stream ended early");
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      return Fail(std::string("corrupt deflate data") + (z_.msg ? std::string(": ") + z_.msg : ""));
    }
  }
  produced_ += n;
  return OkStatus();
}

Status InflateStream::Skip(std::uint64_t n) {
  unsigned char buf[16384];
  while (n > 0) {
    std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(n, sizeof buf));
    if (auto s = ReadExactly(buf, k); !s) return s;
    n -= k;
  }
  return OkStatus();
}

}  // namespace dt::compare
