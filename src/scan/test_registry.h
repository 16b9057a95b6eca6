// The registry of data/scan for the scanners' unit tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "scan/registry.h"
#include "scan/scan.h"

namespace dt::scan::testing {

inline const Registry& Reg() {
  static Registry reg = [] {
    const char* src = std::getenv("DUALTRACK_TEST_SOURCE_DIR");
    std::string dir = std::string(src ? src : DUALTRACK_TEST_SOURCE_DIR) + "/data/scan";
    auto r = Registry::Load(dir);
    EXPECT_TRUE(r.ok());
    return std::move(*r);
  }();
  return reg;
}

// "DT101@3" per finding, in order.
inline std::vector<std::string> Codes(const std::vector<Finding>& fs) {
  std::vector<std::string> out;
  for (const auto& f : fs) out.push_back(f.code + "@" + std::to_string(f.line));
  return out;
}

}  // namespace dt::scan::testing
