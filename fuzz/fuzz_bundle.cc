// libFuzzer target: the bundle readers (manifest.json, ops.jsonl, metrics.jsonl, the safetensors
// header). The first byte picks the file the rest becomes, in a scratch bundle folder read back
// with LoadBundle, as `show`, `coverage` and `report` read it.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "bundle/bundle.h"

namespace {

namespace fs = std::filesystem;

const char kManifest[] =
    R"({"schema": "dualtrack.bundle/1", "track": "cpu", "status": "ok", "command": ["python"],)"
    R"( "files": {}, "problems": []})";

const fs::path& Scratch() {
  static const fs::path dir = [] {
    std::string tmpl = (fs::temp_directory_path() / "dualtrack-fuzz-bundle-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
    static std::string keep = tmpl;
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(keep, ec);
    });
    return fs::path(tmpl);
  }();
  return dir;
}

void Write(const fs::path& p, const std::uint8_t* data, std::size_t size) {
  std::ofstream(p, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const fs::path& dir = Scratch();
  std::error_code ec;
  for (const char* f : {"manifest.json", "ops.jsonl", "metrics.jsonl", "tensors.safetensors"}) {
    fs::remove(dir / f, ec);
  }
  const std::uint8_t* body = data + 1;
  const std::size_t n = size - 1;
  switch (data[0] % 4) {
    case 0:
      Write(dir / "manifest.json", body, n);
      break;
    case 1:
      Write(dir / "ops.jsonl", body, n);
      break;
    case 2:
      Write(dir / "metrics.jsonl", body, n);
      break;
    default:
      Write(dir / "tensors.safetensors", body, n);
      break;
  }
  if (data[0] % 4 != 0) {
    std::ofstream(dir / "manifest.json") << kManifest;
  }
  auto b = dt::bundle::LoadBundle(dir);
  if (b) (void)dt::bundle::ShowText(*b, 15);
  return 0;
}
