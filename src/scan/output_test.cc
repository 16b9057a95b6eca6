#include "scan/output.h"

#include <gtest/gtest.h>

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
  a.cls = "device";
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

}  // namespace
}  // namespace dt::scan
