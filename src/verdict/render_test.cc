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

// Coverage reads as a sentence and lists only what is not native: one row per operator (its
// overloads merged), and a CPU kernel variant named with the kernel MPS runs instead.
TEST(VerdictRenderTest, CoverageSaysWhatIsNotNativeInPlainWords) {
  Evidence ev;
  CoverageEvidence c;
  c.torch = "2.13";
  auto op = [](std::string name, std::string overload, coverage::OpClass cls, int count,
               std::string mps_op = {}) {
    CoverageOp o;
    o.op = std::move(name);
    o.overload = std::move(overload);
    o.cls = cls;
    o.count = count;
    o.dtypes = {"float32"};
    o.mps_op = std::move(mps_op);
    return o;
  };
  c.ops = {op("aten::multi_margin_loss", "default", coverage::OpClass::kCpuFallback, 1),
           op("aten::add", "Tensor", coverage::OpClass::kNative, 3),
           op("aten::add", "Scalar", coverage::OpClass::kNative, 2),
           op("aten::_scaled_dot_product_flash_attention_for_cpu", "default",
              coverage::OpClass::kNative, 1, "aten::_scaled_dot_product_attention_math_for_mps")};
  ev.coverage = c;
  Report r = Decide(std::move(ev));
  const std::string md = RenderMarkdown(r);
  EXPECT_NE(md.find("3 operators: 2 with an MPS kernel, 1 falls back to the CPU"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| `aten::multi_margin_loss` |"), std::string::npos);
  EXPECT_EQ(md.find("| `aten::add` |"), std::string::npos);  // Native: in the list, not a row.
  EXPECT_NE(md.find("`aten::_scaled_dot_product_flash_attention_for_cpu (on MPS: "
                    "aten::_scaled_dot_product_attention_math_for_mps)`"),
            std::string::npos);
  const std::string html = RenderHtml(r);
  EXPECT_NE(html.find("2 operators with an MPS kernel</summary>"), std::string::npos);
  std::size_t rows = 0;
  for (std::size_t at = html.find("<code>aten::add</code>"); at != std::string::npos;
       at = html.find("<code>aten::add</code>", at + 1))
    ++rows;
  EXPECT_EQ(rows, 1u);  // One mention: the two overloads are one operator.

  // All native: one sentence, no table.
  Evidence all;
  all.coverage = c;
  all.coverage->ops.erase(all.coverage->ops.begin());
  const std::string only = RenderMarkdown(Decide(std::move(all)));
  EXPECT_NE(only.find("2 operators, all with an MPS kernel"), std::string::npos) << only;
  EXPECT_EQ(only.find("| operator | class |"), std::string::npos);
}

// Nothing measured, nothing said to be measured; many drifting tensors are one step; a stop
// condition without a place still names its subject.
TEST(VerdictRenderTest, PlainWordsInThePlanAndTheSteps) {
  Report r = FullReport();  // Compared on MPS, outside tolerance.
  std::size_t drift = 0;
  for (const NextStep& s : r.next_steps)
    drift += s.action.find("Find where the results drift") == 0;
  EXPECT_EQ(drift, 1u);
  for (const PlanItem& p : r.plan) {
    if (p.what.rfind("Anything that runs ", 0) == 0) {
      EXPECT_GT(p.what.size(), std::string("Anything that runs ").size() + 3) << p.what;
    }
  }
  Evidence none;
  Report empty = Decide(std::move(none));
  for (const NextStep& s : empty.next_steps) EXPECT_EQ(s.action.find("<entry"), std::string::npos);
  for (const PlanItem& p : empty.plan) EXPECT_EQ(p.why.find("measured on MPS"), std::string::npos);
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
  EXPECT_EQ(j["stop_conditions"].size(), 6u);
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
