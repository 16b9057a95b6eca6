// A zip central-directory reader over a memory map and a bounded streaming inflater. Hand-written
// because Debian's zlib has no zip-container API (minizip is not in the dependency set) and the
// reader must refuse hostile archives (overlapping members, zip bombs) without allocating.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

#include "util/result.h"

namespace dt::compare {

struct ZipEntry {
  std::string name;
  std::uint16_t method = 0;  // 0 stored, 8 deflated.
  std::uint64_t compressed_size = 0;
  std::uint64_t size = 0;               // Declared uncompressed size.
  std::uint32_t crc32 = 0;              // Declared CRC-32 of the uncompressed bytes.
  const unsigned char* data = nullptr;  // Start of the member's (compressed) bytes.
};

// The entries of a zip archive; refuses members outside the file or overlapping, encryption,
// methods other than stored and deflate, and deflated members declaring a size beyond what deflate
// can produce from their compressed bytes (a zip bomb).
Result<std::vector<ZipEntry>> ReadZipDirectory(const unsigned char* data, std::size_t size,
                                               const std::string& file);

// Checks every member's CRC-32 against its bytes (inflated for deflated members; stored ones on
// several threads), so a corrupted member is refused instead of compared as data. ReadZipDirectory
// calls it; fuzzing builds skip it so the fuzzers reach the parsers behind it.
Status VerifyZipCrcs(const std::vector<ZipEntry>& entries, const std::string& file);

// The largest size a deflated member of `compressed` bytes may declare (deflate's ratio bound).
std::uint64_t MaxInflatedSize(std::uint64_t compressed);

// Inflates a raw-deflate member into caller buffers; never produces more than `limit` bytes.
class InflateStream {
 public:
  InflateStream() = default;
  InflateStream(const InflateStream&) = delete;
  InflateStream& operator=(const InflateStream&) = delete;
  ~InflateStream();

  Status Init(const unsigned char* src, std::uint64_t src_size, std::uint64_t limit,
              std::string file, std::string member);
  // Fills exactly `n` bytes, or returns an error (truncated, corrupt, or longer than the limit).
  Status ReadExactly(unsigned char* out, std::size_t n);
  // Skips `n` bytes of output.
  Status Skip(std::uint64_t n);
  std::uint64_t produced() const { return produced_; }

 private:
  Error Fail(const std::string& msg) const;

  z_stream z_{};
  bool init_ = false;
  bool ended_ = false;
  const unsigned char* src_ = nullptr;
  std::uint64_t src_left_ = 0;
  std::uint64_t limit_ = 0;
  std::uint64_t produced_ = 0;
  std::string file_, member_;
};

}  // namespace dt::compare
