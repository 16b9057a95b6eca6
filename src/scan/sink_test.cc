#include "scan/sink.h"

#include <gtest/gtest.h>

#include <string>

#include "scan/env_scanners.h"
#include "scan/test_registry.h"

namespace dt::scan {
namespace {

using testing::Codes;
using testing::Reg;

TEST(ScanSuppressionTest, FormsPeopleWrite) {
  for (const char* line :
       {"x.cuda()  # dualtrack: ignore[DT101]", "x.cuda()  # dualtrack: ignore",
        "x.cuda()  # noqa  dualtrack: ignore[DT101]", "x.cuda()  # dualtrack:ignore[DT101]",
        "x.cuda()  # dualtrack: ignore[dt101]", "x.cuda()  # noqa: DT101",
        "x.cuda()  # noqa:E501,DT101", "x.cuda()  # NOQA: e501, dt1",
        "x.cuda();  // Dualtrack: Ignore [ DT101 ]",
        "x.cuda(); /* dualtrack: ignore[DT102, DT101] */",
        // A bare noqa covers every code, as in flake8 and ruff.
        "x.cuda()  # noqa", "x.cuda()  #NOQA", "x.cuda()  # noqa:", "x.cuda()  # noqa: ,",
        "x.cuda()  # noqa E501 (flake8 reads this as bare)", "x.cuda()  # type: ignore  # noqa",
        "x.cuda();  // noqa", "x.cuda(); /* noqa */"}) {
    EXPECT_TRUE(IsSuppressed(line, "DT101")) << line;
  }
  for (const char* line :
       {"x.cuda()  # noqa: E501", "x.cuda()  # noqa:E501,W291", "x.cuda()  # dualtrack",
        "x.cuda()  # dualtrack: ignore[DT102]", "x.cuda()  # ignore[DT101]",
        "x.cuda()  # dualtrack: ignored later", "x.cuda()  # noqa: DT102, E501",
        // Codes named for dualtrack scope the line, even beside a bare noqa.
        "x.cuda()  # noqa  dualtrack: ignore[DT102]",
        // Not a marker: prose, names, flake8's whole-file form.
        "x.cuda()  # see noqa", "noqa_lines = x.cuda()", "x.cuda()  # noqaish",
        "x.cuda()  # flake8: noqa"}) {
    EXPECT_FALSE(IsSuppressed(line, "DT101")) << line;
  }
  EXPECT_TRUE(IsSuppressed("x.cuda()  # noqa: DT101, E501", "DT101"));
  EXPECT_FALSE(IsSuppressed("x.cuda()  # noqa: DT101, E501", "DT102"));
  auto bare = ParseSuppression("x.cuda()  # noqa");
  ASSERT_TRUE(bare.has_value());
  EXPECT_TRUE(bare->all && bare->bare_noqa);
  auto ours = ParseSuppression("x.cuda()  # noqa  dualtrack: ignore");
  ASSERT_TRUE(ours.has_value());
  EXPECT_TRUE(ours->all && !ours->bare_noqa);
  auto s = ParseSuppression("# noqa: DT101 dualtrack: ignore[dt4]");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->codes, (std::vector<std::string>{"DT4", "DT101"}));
}

TEST(ScanSuppressionTest, UnknownAndUnusedAreReported) {
  std::string src =
      "torch==2.1.0+cu118  # dualtrack: ignore\n"   // used
      "bitsandbytes  # dualtrack: ignore[DT403]\n"  // used
      "numpy  # dualtrack: ignore[DT403]\n"         // unused
      "xformers  # noqa: DT999, DT403\n"            // unknown + used
      "# dualtrack: ignore\n"                       // unused (a comment line suppresses nothing)
      "scipy  # noqa\n"                             // bare, drops none of ours: not reported
      "flash-attn  # noqa\n";                       // bare, used
  std::vector<Finding> out;
  FindingSink sink(Reg(), "requirements.txt", src, out);
  ScanRequirements(src, sink);
  std::vector<SuppressionProblem> problems;
  sink.CheckSuppressions(problems);
  EXPECT_TRUE(out.empty()) << Codes(out).size();
  std::vector<std::string> got;
  for (const auto& p : problems)
    got.push_back(std::to_string(p.line) + ":" + p.code + ":" + p.problem);
  EXPECT_EQ(got, (std::vector<std::string>{"3:DT403:unused", "4:DT999:unknown code", "5::unused"}));
}

TEST(ScanSuppressionTest, MalformedMarkers) {
  for (const char* line :
       {"# dualtrack: ignore[", "# dualtrack: ignore[,,]", "# noqa:", "# noqa: ,",
        "# dualtrack:", "dualtrack", "# noqa: DT", "# dualtrack: ignore[DT101"}) {
    (void)ParseSuppression(line);
  }
  EXPECT_TRUE(IsSuppressed("# dualtrack: ignore[DT101", "DT101"));
  EXPECT_TRUE(IsSuppressed("# dualtrack: ignore[]", "DT101"));
  std::string huge(1 << 20, 'n');
  huge += "# noqa: DT101";
  EXPECT_TRUE(IsSuppressed(huge, "DT101"));
}

TEST(ScanSinkTest, LinesEndAtCrCrlfAndLf) {
  std::string src = "a\rb\r\nc\nd";
  std::vector<Finding> out;
  FindingSink sink(Reg(), "x", src, out);
  EXPECT_EQ(sink.Line(1), "a");
  EXPECT_EQ(sink.Line(2), "b");
  EXPECT_EQ(sink.Line(3), "c");
  EXPECT_EQ(sink.Line(4), "d");
  EXPECT_EQ(sink.Line(5), "");
  std::vector<std::pair<std::uint32_t, std::string>> lines;
  ForEachLine(src, [&](std::uint32_t n, std::string_view l) { lines.emplace_back(n, l); });
  EXPECT_EQ(lines, (std::vector<std::pair<std::uint32_t, std::string>>{
                       {1, "a"}, {2, "b"}, {3, "c"}, {4, "d"}}));
}

TEST(ScanSinkTest, RootFromAbsoluteAndRelativePath) {
  std::vector<Finding> out;
  FindingSink sink(Reg(), "sub/requirements.txt", "", out);
  EXPECT_EQ(sink.Root(), "");
  sink.set_path("/tmp/proj/sub/requirements.txt");
  EXPECT_EQ(sink.Root(), "/tmp/proj");
  FindingSink other(Reg(), "requirements.txt", "", out);
  other.set_path("elsewhere/x.txt");
  EXPECT_EQ(other.Root(), "");
}

}  // namespace
}  // namespace dt::scan
