// Jupyter notebooks: the code cells, in order, are one Python module (what running the notebook
// from the top executes), scanned like a .py file; findings then carry the cell and the line
// within it, and the line of the .ipynb file where that source line is written. IPython magics
// and shell escapes are blanked so they do not confuse the lexer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "scan/python_scanner.h"
#include "util/result.h"

namespace dt::scan {

// The cell source with IPython magics (%time, %%bash) and shell escapes (!pip) blanked, line count
// and offsets kept: what the scanner lexes, and what a fix of the cell must lex too.
std::string BlankMagics(std::string source);

// Where one line of the joined source comes from.
struct NotebookLine {
  std::int64_t cell = 0;       // 1-based index among all cells (Markdown ones count).
  std::int64_t line = 0;       // 1-based line within the cell.
  std::int64_t file_line = 0;  // 1-based line of the .ipynb file; 0 when it cannot be told.
};

struct NotebookSource {
  std::string python;               // The code cells in order, magics blanked, each ending in \n.
  std::vector<NotebookLine> lines;  // lines[k]: line k + 1 of `python`.
};

// Where one cell's "source" value is written in the notebook's text, as byte ranges: the whole
// value (a string, or a list from '[' to ']') and, for a list, each string in it (quotes
// included). A fix rewrites these bytes only, so the rest of the file stays as it was written.
struct SourceSpan {
  bool found = false;
  bool list = false;
  std::size_t begin = 0, end = 0;
  std::vector<std::pair<std::size_t, std::size_t>> parts;
};

// The span of each cell's source, by cell index (0-based; a cell without one is not `found`).
std::vector<SourceSpan> CellSourceSpans(std::string_view text);

// Errors name what is malformed (invalid JSON, no "cells" list); the caller records a skip.
Result<NotebookSource> JoinNotebook(std::string_view text, const std::string& rel);

// Findings made on the joined source, moved to their cell, line in the cell and file line.
void PlaceInCells(const std::vector<NotebookLine>& lines, std::vector<Finding>& findings);

// JoinNotebook, ScanPython and PlaceInCells in one (the notebook alone, no project context).
Status ScanNotebook(std::string_view text, const Registry& reg, const std::string& rel,
                    std::vector<Finding>& out);

}  // namespace dt::scan
