#include "scan/notebook_scanner.h"

#include <gtest/gtest.h>

#include <string>

namespace dt::scan {
namespace {

// The standard layout nbformat writes: one source line per array element, one element per line.
constexpr const char* kNotebook = R"nb({
 "cells": [
  {"cell_type": "markdown", "metadata": {}, "source": ["# title\n", "text"]},
  {
   "cell_type": "code",
   "metadata": {"tags": ["a, b", "{x]"]},
   "source": [
    "import torch\n",
    "%time x = 1\n",
    "y = torch.zeros(1).cuda()"
   ]
  },
  {"cell_type": "code", "source": "a = 1\nb = \"q\\\"\\n\"\nc = 2\n"}
 ],
 "metadata": {},
 "nbformat": 4
})nb";

TEST(NotebookTest, CodeCellsAreJoinedInOrderWithTheirCellsAndFileLines) {
  auto nb = JoinNotebook(kNotebook, "n.ipynb");
  ASSERT_TRUE(nb.ok()) << nb.error().ToString();
  // The magic is blanked (same length), the cell without a final newline gets one.
  EXPECT_EQ(
      nb->python,
      "import torch\n           \ny = torch.zeros(1).cuda()\na = 1\nb = \"q\\\"\\n\"\nc = 2\n");
  ASSERT_EQ(nb->lines.size(), 6u);
  // Cell 2 (the Markdown cell counts), lines 1-3, written on file lines 8-10.
  EXPECT_EQ(nb->lines[0].cell, 2);
  EXPECT_EQ(nb->lines[0].line, 1);
  EXPECT_EQ(nb->lines[0].file_line, 8);
  EXPECT_EQ(nb->lines[2].line, 3);
  EXPECT_EQ(nb->lines[2].file_line, 10);
  // Cell 3 is one string: every line is on the string's file line; the escaped quote and the
  // escaped backslash-n inside a Python string do not end a line of the source.
  for (std::size_t k = 3; k < 6; ++k) {
    EXPECT_EQ(nb->lines[k].cell, 3);
    EXPECT_EQ(nb->lines[k].line, static_cast<std::int64_t>(k) - 2);
    EXPECT_EQ(nb->lines[k].file_line, 13);
  }
}

TEST(NotebookTest, FindingsMoveToTheirCells) {
  auto nb = JoinNotebook(kNotebook, "n.ipynb");
  ASSERT_TRUE(nb.ok());
  std::vector<Finding> findings(2);
  findings[0].line = 3;
  findings[1].line = 99;  // Past the end: left as it is.
  PlaceInCells(nb->lines, findings);
  EXPECT_EQ(findings[0].cell, 2);
  EXPECT_EQ(findings[0].line, 3);
  EXPECT_EQ(findings[0].file_line, 10);
  EXPECT_FALSE(findings[1].cell.has_value());
  EXPECT_EQ(findings[1].line, 99);
}

TEST(NotebookTest, MalformedNotebooksAreErrorsThatNameTheFile) {
  for (const char* text : {"", "{", "[]", R"({"cells": 3})", R"({"cell": []})", "{\"cells\": [}"}) {
    auto nb = JoinNotebook(text, "bad.ipynb");
    ASSERT_FALSE(nb.ok()) << text;
    EXPECT_NE(nb.error().ToString().find("bad.ipynb"), std::string::npos) << text;
  }
}

TEST(NotebookTest, OddCellsAreSkippedNotErrors) {
  // A cell that is not an object, a code cell without source, a source of another type, a
  // source array holding a number: nothing to scan there, and the other cells still count.
  auto nb = JoinNotebook(
      R"({"cells": [1, {"cell_type": "code"}, {"cell_type": "code", "source": 5},
          {"cell_type": "code", "source": [7, "x = 1\n"]}, {"cell_type": 2, "source": "y"}]})",
      "odd.ipynb");
  ASSERT_TRUE(nb.ok());
  EXPECT_EQ(nb->python, "x = 1\n");
  ASSERT_EQ(nb->lines.size(), 1u);
  EXPECT_EQ(nb->lines[0].cell, 4);
}

}  // namespace
}  // namespace dt::scan
