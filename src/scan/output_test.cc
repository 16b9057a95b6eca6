#include "scan/output.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

namespace dt::scan {
namespace {

// The hand-written findings must be exactly what nlohmann writes for the same document.
TEST(ScanOutputTest, JsonTextMatchesNlohmannDump) {
  ScanReport report;
  report.root = "proj";
  report.entries = {"train.py"};
  report.files_scanned = 3;
  report.skipped = {{"blob.py", "binary file"}};
  EXPECT_EQ(ScanReportJsonText(report), ScanReportToJson(report).dump(2) + "\n");

  Finding a;
  a.code = "DT102";
  a.cls = FindingClass::kDevice;
  a.severity = Severity::kFixable;
  a.file = "dir/a \"q\".py";
  a.line = 44;
  a.column = 7;
  a.message = "hard-coded device \"cuda\"\\ tab\there \x01 \x1f \x7f é ✓";
  a.snippet = "x = 'cuda'\r\n\b\f";
  a.reachable = true;
  a.replacement = "";
  Finding b = a;
  b.cell = 3;
  b.reachable = std::nullopt;
  b.guarded = true;
  b.severity = Severity::kBlocker;
  Finding c = a;
  c.reachable = false;
  report.findings = {a, b, c};
  EXPECT_EQ(ScanReportJsonText(report), ScanReportToJson(report).dump(2) + "\n");
}

// Thousands of findings are formatted in chunks on several threads: the same bytes, in order, and
// one finding with invalid UTF-8 in a late chunk sends the whole document to nlohmann.
TEST(ScanOutputTest, JsonTextInChunksOnThreads) {
  ScanReport report;
  report.root = "proj";
  for (int i = 0; i < 2500; ++i) {
    Finding f;
    f.code = i % 3 == 0 ? "DT102" : "DT303";
    f.cls = FindingClass::kExtension;
    f.severity = i % 2 == 0 ? Severity::kBlocker : Severity::kPortable;
    f.file = "m" + std::to_string(i % 17) + ".py";
    f.line = i;
    f.column = -i;
    f.reached_by = i % 5 == 0 ? std::optional<std::int64_t>(std::int64_t{1} << 40) : std::nullopt;
    f.message = "n\"" + std::to_string(i);
    report.findings.push_back(std::move(f));
  }
  const std::string expect = ScanReportToJson(report).dump(2) + "\n";
  EXPECT_EQ(ScanReportJsonText(report, 1), expect);
  EXPECT_EQ(ScanReportJsonText(report, 3), expect);
  report.findings[2400].snippet = "bad \xff byte";
  EXPECT_EQ(ScanReportJsonText(report, 3),
            ScanReportToJson(report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
                "\n");
}

Finding Make(std::string file, std::int64_t line, std::string code, std::string message) {
  Finding f;
  f.code = std::move(code);
  f.cls = FindingClass::kLibrary;
  f.severity = Severity::kReplace;
  f.file = std::move(file);
  f.line = line;
  f.column = 1;
  f.message = std::move(message);
  f.snippet = "snippet " + std::to_string(line);
  return f;
}

// Summary first, findings grouped by file with counts, runs of one code folded; JSON unfolded.
TEST(ScanOutputTest, TextGroupsByFileAndFoldsRuns) {
  ScanReport report;
  report.root = "proj";  // Relative: text leads from the current directory to each file.
  report.entries = {"train.py", "tools/eval.py"};
  report.files_scanned = 2;
  for (int line : {10, 14, 18, 22, 26})
    report.findings.push_back(Make("k.py", line, "DT202", "uses tl.load from a CUDA-only library"));
  report.findings.push_back(Make("k.py", 30, "DT201", "imports triton, which needs CUDA"));
  // Interleaved with another code, and one far away: the first four still fold, line 90 does not.
  report.findings.push_back(Make("k.py", 12, "DT204", "float64"));
  report.findings.push_back(Make("k.py", 90, "DT202", "uses tl.store from a CUDA-only library"));
  report.findings.push_back(Make("a.py", 3, "DT202", "uses x"));
  report.findings.push_back(Make("a.py", 4, "DT202", "uses y"));
  std::sort(report.findings.begin(), report.findings.end(), [](const Finding& a, const Finding& b) {
    return std::tie(a.file, a.line) < std::tie(b.file, b.line);
  });
  report.suppressions = {{"k.py", 2, "DT999", "unknown code", std::nullopt, 0},
                         {"k.py", 5, "", "unused", std::nullopt, 0},
                         {"n.ipynb", 17, "DT999", "unknown code", 2, 3}};
  std::string text = FormatText(report, false, false);
  // A notebook's suppression is named by its cell and line, as its findings are.
  EXPECT_NE(text.find("warning: proj/n.ipynb:cell 2:3: suppression DT999: unknown code"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("warning: proj/k.py:2: suppression DT999"), std::string::npos) << text;
  EXPECT_LT(text.find("Summary"), text.find("proj/k.py (8 findings)")) << text;
  EXPECT_LT(text.find("proj/a.py (2 findings)"), text.find("proj/k.py (8 findings)")) << text;
  EXPECT_NE(text.find("entry scripts (2):\n    train.py, tools/eval.py\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("  proj/k.py:10:1  DT202 replace ×5 at 10, 14, 18, 22, 26: uses tl.load from "
                      "a CUDA-only library"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("snippet 14"), std::string::npos) << text;  // Folded.
  EXPECT_NE(text.find("snippet 30"), std::string::npos) << text;
  EXPECT_NE(text.find("snippet 12"), std::string::npos) << text;
  EXPECT_NE(text.find("snippet 90"), std::string::npos) << text;
  EXPECT_LT(text.find("×5 at"), text.find("snippet 12"))
      << text;  // The group stands where it starts.
  EXPECT_NE(text.find("  proj/k.py:30:1  DT201 replace  imports triton"), std::string::npos)
      << text;
  EXPECT_NE(text.find("snippet 3"), std::string::npos) << text;  // Two of a kind stay unfolded.
  EXPECT_NE(text.find("warning: proj/k.py:2: suppression DT999: unknown code"), std::string::npos);
  EXPECT_NE(text.find("warning: proj/k.py:5: suppression dualtrack: ignore: unused"),
            std::string::npos);
  std::string stats = FormatText(report, false, true);
  EXPECT_EQ(stats.find("k.py (8 findings)"), std::string::npos) << stats;
  EXPECT_NE(stats.find("       8  DT202  library     replace 8\n"), std::string::npos) << stats;
  EXPECT_NE(stats.find("per file"), std::string::npos);
  EXPECT_NE(FormatMarkdown(report, false).find("- `k.py:2`: DT999 (unknown code)"),
            std::string::npos);
  EXPECT_NE(
      FormatGithub(report).find("::warning file=proj/k.py,line=5,title=dualtrack suppression::"
                                "dualtrack: ignore: unused"),
      std::string::npos)
      << FormatGithub(report);
  auto doc = ScanReportToJson(report);
  EXPECT_EQ(doc["findings"].size(), 10u);
  EXPECT_EQ(doc["suppressions"][1]["code"], nullptr);
  EXPECT_EQ(ScanReportJsonText(report), doc.dump(2) + "\n");
}

// Markdown: prose is escaped (`__global__` is not bold), rules are named, not linked into a
// repository the reader may not have.
TEST(ScanOutputTest, MarkdownEscapesProseAndNamesRules) {
  ScanReport report;
  report.root = "proj";
  report.files_scanned = 1;
  report.findings.push_back(Make("k.cu", 3, "DT303", "defines __global__ kernels: a*b [x] <y>"));
  std::string md = FormatMarkdown(report, false);
  EXPECT_NE(md.find("defines \\_\\_global\\_\\_ kernels: a\\*b \\[x\\] \\<y\\>"), std::string::npos)
      << md;
  EXPECT_EQ(md.find("docs/rules/"), std::string::npos) << md;
  EXPECT_NE(md.find("`dualtrack rule CODE`"), std::string::npos) << md;
  EXPECT_NE(md.find("`DT303`"), std::string::npos) << md;
}

}  // namespace
}  // namespace dt::scan
