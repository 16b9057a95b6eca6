#include "verdict/render.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace dt::verdict {
namespace {

std::filesystem::path Data(const std::string& name) {
  return std::filesystem::path(DUALTRACK_TEST_SOURCE_DIR) / "src/verdict/testdata" / name;
}

Report FullReport() {
  Evidence ev;
  ev.scan = *LoadScan(Data("scan_example.json"));
  ev.env = *LoadEnv(Data("env_mac.json"));
  ev.baseline = *LoadBaseline(Data("baseline.json"));
  ev.coverage = *LoadCoverage(Data("coverage_fallback.json"));
  ev.tracks.push_back(*LoadTrack("cuda", Data("bundles/cuda")));
  ev.tracks.push_back(*LoadTrack("mps", Data("bundles/mps")));
  ev.comparisons.push_back(*LoadComparison(Data("compare_fail.json")));
  return Decide(std::move(ev));
}

// RenderJson writes the findings one at a time into the rest of the document: the text is the
// document's own dump, byte for byte, with findings, with none and without a scan; and a source
// path that spells the placeholder's key does not confuse it.
TEST(VerdictRenderTest, StreamedJsonEqualsTheDocument) {
  Report r = FullReport();
  ASSERT_GT(r.evidence.scan->findings.size(), 1u);
  r.evidence.scan->source = "\"findings\": \"x\"";
  EXPECT_EQ(RenderJson(r), ToJson(r).dump(2) + "\n");
  r.evidence.scan->findings.clear();
  EXPECT_EQ(RenderJson(r), ToJson(r).dump(2) + "\n");
  r.evidence.scan.reset();
  EXPECT_EQ(RenderJson(r), ToJson(r).dump(2) + "\n");
}

TEST(VerdictRenderTest, HtmlIsSelfContainedAndEscaped) {
  Report r = FullReport();
  r.evidence.scan->findings[0].message = "<script>alert('x')</script> & \"q\"";
  const std::string html = RenderHtml(r);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"),
            std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_NE(html.find("@media print"), std::string::npos);
  EXPECT_NE(html.find("<svg class=\"hist\""), std::string::npos);
  EXPECT_NE(html.find("class=\"banner cuda-only\""), std::string::npos);
  // The env conclusion carries markup in the fixture; it never reaches the page unescaped.
  EXPECT_EQ(html.find("<b>host</b>"), std::string::npos);
  for (const char* section : {"id=\"checklist\"", "id=\"stops\"", "id=\"plan\"", "id=\"findings\"",
                              "id=\"coverage\"", "id=\"comparison\"", "id=\"environments\""}) {
    EXPECT_NE(html.find(section), std::string::npos) << section;
  }
}

TEST(VerdictRenderTest, HtmlEscapeCoversAllSpecials) {
  EXPECT_EQ(HtmlEscape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
  EXPECT_EQ(HtmlEscape("plain"), "plain");
}

TEST(VerdictRenderTest, MarkdownHasChecklistAndEscapesPipes) {
  Report r = FullReport();
  r.evidence.tracks[0].name = "a|b";
  const std::string md = RenderMarkdown(r);
  EXPECT_NE(md.find("# dualtrack report: **cuda-only**"), std::string::npos);
  EXPECT_NE(md.find("| CUDA baseline saved | done |"), std::string::npos) << md;
  EXPECT_NE(md.find("a\\|b"), std::string::npos);
  EXPECT_NE(md.find("## Dual-track plan"), std::string::npos);
  EXPECT_NE(md.find("## Next steps"), std::string::npos);
}

TEST(VerdictRenderTest, JsonFollowsTheReportSchema) {
  const nlohmann::json j = ToJson(FullReport());
  EXPECT_EQ(j["schema"], "dualtrack.report/1");
  EXPECT_EQ(j["verdict"], "cuda-only");
  EXPECT_EQ(j["evidence_level"], "measured");
  EXPECT_EQ(j["checklist"].size(), 8u);
  EXPECT_EQ(j["stop_conditions"].size(), 5u);
  EXPECT_EQ(j["validity"]["state"], "ok");
  EXPECT_TRUE(j["evidence"]["tracks"].is_array());
  EXPECT_EQ(j["evidence"]["tracks"][1]["ops_by_status"]["fallback"], 1);
  // Round trip through text keeps it valid JSON.
  EXPECT_TRUE(nlohmann::json::accept(RenderJson(FullReport())));
}

TEST(VerdictRenderTest, TextSummaryNamesVerdictAndChecklist) {
  const std::string text = RenderText(Decide(Evidence{}));
  EXPECT_NE(text.find("verdict: dev-only (predicted)"), std::string::npos) << text;
  EXPECT_NE(text.find("[missing] CUDA baseline saved"), std::string::npos) << text;
}

}  // namespace
}  // namespace dt::verdict
