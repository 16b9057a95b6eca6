// Scanners for C, C++ and CUDA sources and headers, and for CMake files.
#pragma once

#include <string_view>

#include "scan/sink.h"

namespace dt::scan {

void ScanCpp(std::string_view text, FindingSink& sink);
void ScanCMake(std::string_view text, FindingSink& sink);

}  // namespace dt::scan
