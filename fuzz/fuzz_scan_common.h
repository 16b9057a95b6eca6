// Shared by the scanner fuzz targets: the shipped rule registry, loaded once, and the filters the
// scan applies before any scanner sees a file (no NUL in the first 8 KiB, valid UTF-8), so the
// targets fuzz what production code receives.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "scan/registry.h"
#include "util/strings.h"

namespace dt::scan::fuzz {

inline const Registry& Reg() {
  static const Registry* reg = [] {
    auto r = Registry::Load(DUALTRACK_FUZZ_DATA_DIR "/scan");
    if (!r) {
      std::fprintf(stderr, "fuzz: cannot load the registry: %s\n", r.error().ToString().c_str());
      std::abort();
    }
    return new Registry(std::move(*r));
  }();
  return *reg;
}

inline bool ScannableText(std::string_view text) {
  if (std::memchr(text.data(), 0, text.size() < 8192 ? text.size() : 8192) != nullptr) return false;
  return IsValidUtf8(text);
}

}  // namespace dt::scan::fuzz
