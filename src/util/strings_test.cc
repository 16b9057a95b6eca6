#include "util/strings.h"

#include <gtest/gtest.h>

namespace dt {
namespace {

TEST(StringsTest, EditDistance) {
  EXPECT_EQ(EditDistance("", ""), 0u);
  EXPECT_EQ(EditDistance("scan", "scan"), 0u);
  EXPECT_EQ(EditDistance("scna", "scan"), 1u);  // A transposition is one edit.
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
}

TEST(StringsTest, ClosestMatchRejectsFarWords) {
  std::vector<std::string_view> c = {"scan", "env", "freeze", "compare"};
  EXPECT_EQ(ClosestMatch("scam", c), "scan");
  EXPECT_EQ(ClosestMatch("compre", c), "compare");
  EXPECT_EQ(ClosestMatch("zzzzzz", c), "");
}

TEST(StringsTest, TrimAndSplit) {
  EXPECT_EQ(Trim("  a b \n"), "a b");
  EXPECT_EQ(Trim("   "), "");
  auto parts = Split("a::b", ':');
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[1], "");
}

// ASCII runs are skipped a word at a time: a bad or good sequence must be judged wherever it
// falls relative to those words, and a sequence cut off by the end must fail.
TEST(StringsTest, Utf8ValidationAfterAsciiRunsOfEveryLength) {
  for (std::size_t k = 0; k < 40; ++k) {
    std::string ascii(k, 'a');
    EXPECT_FALSE(IsValidUtf8(ascii + "\xff" + ascii)) << k;
    EXPECT_FALSE(IsValidUtf8(ascii + "\xe4\xbd")) << k;
    EXPECT_FALSE(IsValidUtf8(ascii + "\xed\xa0\x80" + ascii)) << k;  // A surrogate.
    EXPECT_TRUE(IsValidUtf8(ascii + "\xe4\xbd\xa0" + ascii + "\xc3\xa9")) << k;
  }
}

TEST(StringsTest, Utf8Validation) {
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("\xe4\xbd\xa0\xe5\xa5\xbd"));  // 你好
  EXPECT_FALSE(IsValidUtf8("\xff\xfe"));                 // Not UTF-8 at all.
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));                 // Overlong '/'.
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));             // Surrogate.
  EXPECT_FALSE(IsValidUtf8("\xe4\xbd"));                 // Truncated sequence.
}

TEST(StringsTest, WildMatchBracketExpressionsAsGitReadsThem) {
  EXPECT_TRUE(WildMatch("[a-c]x", "bx"));
  EXPECT_FALSE(WildMatch("[a-c]x", "dx"));
  EXPECT_FALSE(WildMatch("[!a]x", "ax"));
  EXPECT_TRUE(WildMatch("[!a]x", "bx"));
  EXPECT_TRUE(WildMatch("[[:digit:]]", "7"));
  EXPECT_FALSE(WildMatch("[[:digit:]]", "a"));
  EXPECT_TRUE(WildMatch("[\\]]", "]"));         // An escaped bracket is a member.
  EXPECT_FALSE(WildMatch("[abc", "a"));         // Unterminated: matches nothing.
  EXPECT_FALSE(WildMatch("a[/]b", "a/b"));      // A set never matches the separator.
  EXPECT_FALSE(WildMatch("[[:bogus:]]", "a"));  // An unknown class matches nothing.
  EXPECT_TRUE(WildMatch("[[x]", "["));          // "[[" without ':' is a literal bracket.
  EXPECT_TRUE(WildMatch("**/[ab].py", "d/e/a.py"));
}

TEST(StringsTest, GlobMatch) {
  EXPECT_TRUE(GlobMatch("*.py", "a/b/train.py"));
  EXPECT_TRUE(GlobMatch("model.*.weight", "model.layer1.weight"));
  EXPECT_FALSE(GlobMatch("model.*.weight", "model.layer1.bias"));
  EXPECT_TRUE(GlobMatch("file?.txt", "file1.txt"));
  EXPECT_TRUE(GlobMatch("[ab]*", "beta"));
  EXPECT_FALSE(GlobMatch("[!ab]*", "beta"));
  EXPECT_TRUE(GlobMatch("*", ""));
  EXPECT_FALSE(GlobMatch("a*b*c*d*e*f*g", std::string(5000, 'a')));  // No exponential blow-up.
}

TEST(StringsTest, AsciiCaseMappingLeavesOtherBytes) {
  EXPECT_EQ(Lower("DT101 Ab-Z"), "dt101 ab-z");
  EXPECT_EQ(Upper("dt1xx, dt2"), "DT1XX, DT2");
  EXPECT_EQ(Upper("\xc3\xa9t\xc3\xa9"), "\xc3\xa9T\xc3\xa9");  // UTF-8 "été": only the ASCII t.
  EXPECT_EQ(Lower(""), "");
}

TEST(StringsTest, EscapeMarkdownLeavesNoMarkupAndNoLineBreak) {
  EXPECT_EQ(EscapeMarkdown("__global__ a*b | c"), "\\_\\_global\\_\\_ a\\*b \\| c");
  EXPECT_EQ(EscapeMarkdown("`x`\n[y](z)!{}"), "\\`x\\` \\[y\\](z)\\!\\{\\}");
  EXPECT_EQ(EscapeMarkdown("plain text, 3.5 ok"), "plain text, 3.5 ok");
}

}  // namespace
}  // namespace dt
