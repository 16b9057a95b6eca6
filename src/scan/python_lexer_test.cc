#include "scan/python_lexer.h"

#include <gtest/gtest.h>

#include <string>

namespace dt::scan {
namespace {

std::vector<std::string> Texts(const Lexed& lx) {
  std::vector<std::string> out;
  for (const auto& t : lx.tokens) out.emplace_back(lx.Text(t));
  return out;
}

TEST(ScanLexerTest, CommentsAndStringsAreSingleTokens) {
  auto lx = LexPython("x = 'a # not a comment'  # torch.cuda\ny = b\"cuda\"\n");
  EXPECT_EQ(Texts(lx),
            (std::vector<std::string>{"x", "=", "'a # not a comment'", "y", "=", "b\"cuda\""}));
  ASSERT_EQ(lx.lines.size(), 2u);
  EXPECT_EQ(lx.Line(lx.tokens[3]), 2u);
  EXPECT_TRUE(IsBytes(lx.Text(lx.tokens[5])));
}

TEST(ScanLexerTest, TripleQuotedDocstringSpansLines) {
  auto lx = LexPython("def f():\n    \"\"\"x.cuda()\n    more\"\"\"\n    return 1\n");
  ASSERT_EQ(lx.lines.size(), 3u);
  EXPECT_EQ(lx.lines[1].indent, 4u);
  EXPECT_EQ(StringBody(lx.Text(lx.tokens[lx.lines[1].begin])), "x.cuda()\n    more");
  EXPECT_EQ(lx.Line(lx.tokens[lx.lines[2].begin]), 4u);
}

// String content is skipped sixteen bytes at a time: the byte that stops it (quote, backslash,
// newline, an f-string's brace) is found at every distance from the start of a block.
TEST(ScanLexerTest, StringsEndRightAtEveryLength) {
  for (std::size_t k = 0; k < 40; ++k) {
    const std::string body(k, 'a');
    for (const std::string& lit : {"'" + body + "'", "\"" + body + "\\\"b\"", "f'" + body + "{x}'",
                                   "'" + body + "{x}'", "r'" + body + "\\'z'"}) {
      const std::string src = "x = " + lit + " + y\n";  // The tokens are views of it.
      auto lx = LexPython(src);
      EXPECT_EQ(Texts(lx), (std::vector<std::string>{"x", "=", lit, "+", "y"})) << lit;
    }
    // A newline inside a triple-quoted string counts as a line; one in a single-quoted string
    // ends it.
    const std::string triple = "s = '''" + body + "\n'''\nt = 1\n";
    auto lx = LexPython(triple);
    ASSERT_EQ(lx.lines.size(), 2u) << k;
    EXPECT_EQ(lx.Line(lx.tokens[lx.lines[1].begin]), 3u) << k;
    const std::string single = "s = '" + body + "\nt = 1\n";
    lx = LexPython(single);
    ASSERT_EQ(lx.lines.size(), 2u) << k;
    EXPECT_EQ(lx.Text(lx.tokens[2]), "'" + body) << k;
  }
}

// Names are read sixteen bytes at a time: every length, letters of both cases, digits, `_` and
// UTF-8 bytes continue one; the byte after it (any of the ASCII punctuation) ends it.
// A backslash as the last byte of an unterminated string (a cut file, fuzz_python's find): the
// string token ends at the input's end, never past it.
TEST(ScanLexerTest, AnEscapeAtTheEndOfTheInputStaysInside) {
  for (std::string src :
       {"x = 'abc \\", "x = \"is requi'' \\", "x = f'{y!r} \\", "x = f'{\"a\\", "x = r'a\\"}) {
    const std::string copy = src;  // Exactly this many bytes: nothing to read past.
    const Lexed lex = LexPython(copy);
    ASSERT_FALSE(lex.tokens.empty()) << src;
    for (const Token& t : lex.tokens)
      EXPECT_LE(std::size_t{t.offset} + t.size(), copy.size()) << src;
  }
}

TEST(ScanLexerTest, NamesEndRightAtEveryLength) {
  const std::string parts = "aZ_9\xc3\xa9";
  for (std::size_t k = 1; k < 40; ++k) {
    std::string name = "n";
    for (std::size_t j = 1; j < k; ++j) name += parts[j % parts.size()];
    if (static_cast<unsigned char>(name.back()) == 0xc3) name.back() = 'x';  // No split UTF-8.
    for (char end : std::string("@`[{/:.( ")) {
      const std::string src = "    " + name + end + "q\n";  // The tokens are views of it.
      auto lx = LexPython(src);
      ASSERT_GE(lx.tokens.size(), 2u) << name << end;
      EXPECT_EQ(lx.Text(lx.tokens[0]), name) << end;
      EXPECT_EQ(lx.lines[0].indent, 4u);
    }
  }
  // Deep indentation is counted eight spaces at a time, then tabs and the rest.
  const std::string deep = std::string(19, ' ') + "x\n";
  EXPECT_EQ(LexPython(deep).lines[0].indent, 19u);
  const std::string mixed = std::string(8, ' ') + "\t  y\n";
  EXPECT_EQ(LexPython(mixed).lines[0].indent, 18u);
}

TEST(ScanLexerTest, FStringWithNestedQuotesAndFormatSpec) {
  auto lx = LexPython("s = f\"{d['k']!r:>{w}} {{lit}} \\\"q\\\"\"\nz = 1\n");
  ASSERT_EQ(lx.lines.size(), 2u);
  EXPECT_EQ(lx.tokens[2].kind(), TokKind::kString);
  EXPECT_TRUE(IsFString(lx.Text(lx.tokens[2])));
  EXPECT_EQ(lx.Text(lx.tokens[3]), "z");
}

TEST(ScanLexerTest, BracketsAndBackslashContinueTheLogicalLine) {
  auto lx = LexPython("a = (1,\n     2)\nb = 1 + \\\n    2\nc = 3\n");
  ASSERT_EQ(lx.lines.size(), 3u);
  EXPECT_EQ(lx.Text(lx.tokens[lx.lines[2].begin]), "c");
  EXPECT_EQ(lx.Line(lx.tokens[lx.lines[2].begin]), 5u);
}

TEST(ScanLexerTest, ColumnsAreOneBased) {
  auto lx = LexPython("if x:\n    y.cuda()\n");
  const auto& t = lx.tokens[lx.lines[1].begin];
  EXPECT_EQ(lx.Text(t), "y");
  EXPECT_EQ(lx.Line(t), 2u);
  EXPECT_EQ(lx.Column(t), 5u);
}

TEST(ScanLexerTest, MalformedInputNeverHangs) {
  for (const char* src : {"'unterminated", "\"\"\"never closed", "f'{", "x = (((", "\\", "\xff\xfe",
                          "rb'\\", "f\"{'\"", ""}) {
    auto lx = LexPython(src);
    (void)lx;
  }
  SUCCEED();
}

// The kind is read back from the token's bytes: every form of each kind, unterminated ones too.
TEST(ScanLexerTest, KindsComeBackFromTheBytes) {
  static_assert(sizeof(Token) <= 8, "a huge one-line file holds a token per byte or two");
  auto lx = LexPython("x_1 = .5 + 0x1f; s = rb'a' f\"b\" ... \xc3\xa9t\u00e9 _p\ny = f\"open");
  std::vector<std::pair<std::string, TokKind>> got;
  for (const auto& t : lx.tokens) got.emplace_back(std::string(lx.Text(t)), t.kind());
  std::vector<std::pair<std::string, TokKind>> want = {{"x_1", TokKind::kName},
                                                       {"=", TokKind::kOp},
                                                       {".5", TokKind::kNumber},
                                                       {"+", TokKind::kOp},
                                                       {"0x1f", TokKind::kNumber},
                                                       {"s", TokKind::kName},
                                                       {"=", TokKind::kOp},
                                                       {"rb'a'", TokKind::kString},
                                                       {"f\"b\"", TokKind::kString},
                                                       {".", TokKind::kOp},
                                                       {".", TokKind::kOp},
                                                       {".", TokKind::kOp},
                                                       {"\xc3\xa9t\u00e9", TokKind::kName},
                                                       {"_p", TokKind::kName},
                                                       {"y", TokKind::kName},
                                                       {"=", TokKind::kOp},
                                                       {"f\"open", TokKind::kString}};
  EXPECT_EQ(got, want);
  // Columns of tokens after a multi-line string count from their own line.
  auto ml = LexPython("a = '''x\n  y''' ; b\n");
  EXPECT_EQ(ml.Text(ml.tokens.back()), "b");
  EXPECT_EQ(ml.Line(ml.tokens.back()), 2u);
  EXPECT_EQ(ml.Column(ml.tokens.back()), 10u);
}

// Data written as code: past kNumberRun numbers in a bracket, the rest of the run is one token;
// short argument lists and runs broken by another token keep one token per number.
TEST(ScanLexerTest, LongNumberRunsFold) {
  std::string data = "x = [";
  for (int i = 0; i < 1000; ++i) data += std::to_string(i % 7) + ", ";
  data += "y.cuda()]\nf(1, 2, 3)\n";
  auto lx = LexPython(data);
  ASSERT_EQ(lx.lines.size(), 2u);
  // x = [, 31 numbers with their commas, the 32nd number holding the rest of the run, then
  // , y . cuda ( ) ]
  EXPECT_EQ(lx.lines[0].end - lx.lines[0].begin, 3u + 63 + 1 + 6);
  const Token& folded = lx.tokens[3 + 62];
  EXPECT_EQ(folded.kind(), TokKind::kNumber);
  EXPECT_EQ(lx.Text(folded).substr(0, 7), "3, 4, 5");
  EXPECT_EQ(lx.Text(folded).substr(lx.Text(folded).size() - 4), "4, 5");
  EXPECT_EQ(lx.Text(lx.tokens[lx.lines[0].end - 4]), "cuda");
  EXPECT_EQ(lx.lines[1].end - lx.lines[1].begin, 8u);  // f ( 1 , 2 , 3 )
  // Outside brackets (a tuple statement) nothing folds.
  std::string bare;
  for (int i = 0; i < 100; ++i) bare += "1, ";
  EXPECT_EQ(LexPython(bare).tokens.size(), 200u);
}

TEST(ScanLexerTest, StringBodyStripsPrefixAndQuotes) {
  EXPECT_EQ(StringBody("rb'cu'"), "cu");
  EXPECT_EQ(StringBody("\"\""), "");
  EXPECT_EQ(StringBody("'''a'''"), "a");
}

TEST(ScanLexerTest, TokenTextComparesWithLiteralsByLengthAndBytes) {
  const Lexed lx = LexPython("import torch as t\n");
  ASSERT_GE(lx.tokens.size(), 4u);
  EXPECT_TRUE(lx.Text(lx.tokens[0]) == "import");
  EXPECT_FALSE(lx.Text(lx.tokens[0]) == "impor");    // A prefix.
  EXPECT_FALSE(lx.Text(lx.tokens[0]) == "imports");  // Longer.
  EXPECT_TRUE(lx.Text(lx.tokens[3]) != "torch");
  EXPECT_TRUE(lx.Text(lx.tokens[3]) == "t");
  const std::string_view view = lx.Text(lx.tokens[1]);  // Still a view for everything else.
  EXPECT_EQ(view, "torch");
}

}  // namespace
}  // namespace dt::scan
