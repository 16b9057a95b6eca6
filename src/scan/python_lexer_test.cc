#include "scan/python_lexer.h"

#include <gtest/gtest.h>

#include <string>

namespace dt::scan {
namespace {

std::vector<std::string> Texts(const Lexed& lx) {
  std::vector<std::string> out;
  for (const auto& t : lx.tokens) out.emplace_back(t.text);
  return out;
}

TEST(ScanLexerTest, CommentsAndStringsAreSingleTokens) {
  auto lx = LexPython("x = 'a # not a comment'  # torch.cuda\ny = b\"cuda\"\n");
  EXPECT_EQ(Texts(lx), (std::vector<std::string>{"x", "=", "'a # not a comment'", "y", "=", "b\"cuda\""}));
  ASSERT_EQ(lx.lines.size(), 2u);
  EXPECT_EQ(lx.tokens[3].line, 2u);
  EXPECT_TRUE(IsBytes(lx.tokens[5].text));
}

TEST(ScanLexerTest, TripleQuotedDocstringSpansLines) {
  auto lx = LexPython("def f():\n    \"\"\"x.cuda()\n    more\"\"\"\n    return 1\n");
  ASSERT_EQ(lx.lines.size(), 3u);
  EXPECT_EQ(lx.lines[1].indent, 4u);
  EXPECT_EQ(StringBody(lx.tokens[lx.lines[1].begin].text), "x.cuda()\n    more");
  EXPECT_EQ(lx.tokens[lx.lines[2].begin].line, 4u);
}

TEST(ScanLexerTest, FStringWithNestedQuotesAndFormatSpec) {
  auto lx = LexPython("s = f\"{d['k']!r:>{w}} {{lit}} \\\"q\\\"\"\nz = 1\n");
  ASSERT_EQ(lx.lines.size(), 2u);
  EXPECT_EQ(lx.tokens[2].kind, TokKind::kString);
  EXPECT_TRUE(IsFString(lx.tokens[2].text));
  EXPECT_EQ(lx.tokens[3].text, "z");
}

TEST(ScanLexerTest, BracketsAndBackslashContinueTheLogicalLine) {
  auto lx = LexPython("a = (1,\n     2)\nb = 1 + \\\n    2\nc = 3\n");
  ASSERT_EQ(lx.lines.size(), 3u);
  EXPECT_EQ(lx.tokens[lx.lines[2].begin].text, "c");
  EXPECT_EQ(lx.tokens[lx.lines[2].begin].line, 5u);
}

TEST(ScanLexerTest, ColumnsAreOneBased) {
  auto lx = LexPython("if x:\n    y.cuda()\n");
  const auto& t = lx.tokens[lx.lines[1].begin];
  EXPECT_EQ(t.text, "y");
  EXPECT_EQ(t.line, 2u);
  EXPECT_EQ(t.column, 5u);
}

TEST(ScanLexerTest, MalformedInputNeverHangs) {
  for (const char* src : {"'unterminated", "\"\"\"never closed", "f'{", "x = (((", "\\", "\xff\xfe",
                          "rb'\\", "f\"{'\"", ""}) {
    auto lx = LexPython(src);
    (void)lx;
  }
  SUCCEED();
}

TEST(ScanLexerTest, StringBodyStripsPrefixAndQuotes) {
  EXPECT_EQ(StringBody("rb'cu'"), "cu");
  EXPECT_EQ(StringBody("\"\""), "");
  EXPECT_EQ(StringBody("'''a'''"), "a");
}

}  // namespace
}  // namespace dt::scan
