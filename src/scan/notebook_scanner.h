// Jupyter notebooks: each code cell is scanned as Python; findings carry the cell and the line
// within it. IPython magics and shell escapes are blanked so they do not confuse the lexer.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "scan/python_scanner.h"
#include "util/result.h"

namespace dt::scan {

// The cell source with IPython magics (%time, %%bash) and shell escapes (!pip) blanked, line count
// and offsets kept: what the scanner lexes, and what a fix of the cell must lex too.
std::string BlankMagics(std::string source);

// Errors name what is malformed (invalid JSON, no "cells" list); the caller records a skip.
Status ScanNotebook(std::string_view text, const Registry& reg, const std::string& rel,
                    std::vector<Finding>& out);

}  // namespace dt::scan
