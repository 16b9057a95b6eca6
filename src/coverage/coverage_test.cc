#include "coverage/coverage.h"

#include <gtest/gtest.h>

#include <sstream>

#include "coverage/rules.h"
#include "coverage/table.h"
#include "util/strings.h"

namespace dt::coverage {
namespace {

std::filesystem::path SourceDir() { return DUALTRACK_TEST_SOURCE_DIR; }

TEST(CoverageTableTest, RoundTripsAndFindsReleases) {
  auto t = CapabilityTable::Parse(
      "# c\nop\t2.0.1\t2.9.1\t2.10.0\nrelu\tNNN\nhinge\tFFN\nnew_op\t--C\n", "t.tsv");
  ASSERT_TRUE(t.ok()) << t.error().ToString();
  EXPECT_EQ(t->Get("hinge", 2), OpClass::kNative);
  EXPECT_EQ(t->Get("missing", 0), OpClass::kAbsent);
  EXPECT_EQ(*t->FindVersion("2.10"), 2u);
  EXPECT_EQ(*t->FindVersion("2.9.1"), 1u);
  EXPECT_FALSE(t->FindVersion("2.1").ok());
  auto bad = t->FindVersion("3.0");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("2.0.1, 2.9.1, 2.10.0"), std::string::npos);
  auto again = CapabilityTable::Parse(t->Serialize(), "again");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->Serialize(), t->Serialize());
}

TEST(CoverageTableTest, MalformedTablesNameTheLine) {
  EXPECT_EQ(CapabilityTable::Parse("relu\tN\n", "t").error().line, 1);
  EXPECT_EQ(CapabilityTable::Parse("op\t2.0\nrelu\tNN\n", "t").error().line, 2);
  EXPECT_EQ(CapabilityTable::Parse("op\t2.0\nrelu\tX\n", "t").error().line, 2);
  EXPECT_FALSE(CapabilityTable::Parse("op\t2.9\t2.1\n", "t").ok());
  EXPECT_FALSE(CapabilityTable::Parse("", "t").ok());
}

TEST(CoverageRulesTest, DtypeAndRankRules) {
  auto rules = LoadRules(SourceDir() / "data/coverage/rules.json");
  ASSERT_TRUE(rules.ok()) << rules.error().ToString();
  bool fails = false;
  auto issues = DtypeIssues(*rules, {"torch.float64"}, 0, 14, &fails);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_TRUE(fails);
  EXPECT_NE(issues[0].find("doesn't support float64"), std::string::npos);
  fails = false;
  EXPECT_TRUE(DtypeIssues(*rules, {"bfloat16"}, 0, 14, &fails).empty());
  EXPECT_FALSE(fails);
  EXPECT_EQ(DtypeIssues(*rules, {"bfloat16"}, 0, 13, &fails).size(), 1u);
  EXPECT_TRUE(fails);
  fails = false;
  auto rank = DtypeIssues(*rules, {"float32"}, 17, 14, &fails);
  ASSERT_EQ(rank.size(), 1u);
  EXPECT_EQ(rank[0], "MPS supports tensors with dimensions <= 16, but got 17.");
  ASSERT_NE(FindVariant(*rules, "cudnn_batch_norm"), nullptr);
  EXPECT_EQ(FindVariant(*rules, "relu"), nullptr);
}

CoverageOptions FixtureOptions() {
  CoverageOptions o;
  o.bundle = SourceDir() / "tests/coverage/fixtures/cpu-bundle";
  o.data_dir = SourceDir() / "data/coverage";
  o.torch = "2.13";
  return o;
}

const CoverageOp* FindOp(const CoverageReport& r, const std::string& op) {
  for (const CoverageOp& o : r.ops) {
    if (o.op == op) return &o;
  }
  return nullptr;
}

TEST(CoveragePredictTest, ExampleBundleShowsThePlantedOperatorAndFloat64) {
  auto r = Predict(FixtureOptions());
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->torch, "2.13.0");
  EXPECT_EQ(r->track, "cpu");
  const CoverageOp* mm = FindOp(*r, "aten::multi_margin_loss");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->cls, OpClass::kCpuFallback);
  ASSERT_TRUE(mm->location.has_value());
  EXPECT_EQ(mm->location->file, "train.py");
  EXPECT_EQ(mm->location->line, 167);
  EXPECT_FALSE(mm->native_since.has_value());
  const CoverageOp* f64 = FindOp(*r, "aten::_to_copy");
  ASSERT_NE(f64, nullptr);
  EXPECT_TRUE(f64->fails);
  EXPECT_EQ(f64->location->file, "utils/metrics.py");
  // The most severe come first: failures, then fallbacks.
  EXPECT_TRUE(r->ops.front().fails);
  EXPECT_EQ(r->summary.fallback, 2);
  EXPECT_EQ(r->summary.fail, 3);
  // The CPU flash-attention variant maps to the MPS SDPA kernel.
  const CoverageOp* sdpa = FindOp(*r, "aten::_scaled_dot_product_flash_attention_for_cpu");
  ASSERT_NE(sdpa, nullptr);
  EXPECT_EQ(sdpa->mps_op, "aten::_scaled_dot_product_attention_math_for_mps");
  EXPECT_EQ(sdpa->cls, OpClass::kNative);
  EXPECT_FALSE(r->upgrade_version.has_value());  // multi_margin_loss has no MPS kernel anywhere.
  auto j = CoverageReportToJson(*r);
  EXPECT_EQ(j["schema"], "dualtrack.coverage/1");
  EXPECT_EQ(j["summary"]["fallback"], 2);
}

// The JSON that `coverage` streams operator by operator is the document's own dump, to the byte
// (with operators, with none, and with a bundle path that spells the key it is spliced at).
TEST(CoveragePredictTest, StreamedJsonIsTheDocumentsDump) {
  auto r = Predict(FixtureOptions());
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  r->bundle = "dir/\"ops\": []\n";
  for (int pass = 0; pass < 2; ++pass) {
    std::ostringstream streamed;
    WriteCoverageJson(*r, streamed);
    EXPECT_EQ(streamed.str(), CoverageReportToJson(*r).dump(
                                  2, ' ', false, nlohmann::json::error_handler_t::replace) +
                                  "\n");
    std::ostringstream text;
    WriteCoverageText(*r, false, text);
    EXPECT_EQ(text.str(), EscapeControl(CoverageReportToText(*r, false)));
    EXPECT_EQ(pass == 0, r->ops.size() > 3);
    r->ops.clear();
  }
}

TEST(CoveragePredictTest, OlderReleaseSuggestsAnUpgrade) {
  auto o = FixtureOptions();
  o.torch = "2.0";
  auto r = Predict(o);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  ASSERT_TRUE(r->upgrade_version.has_value());
  EXPECT_EQ(*r->upgrade_version, "2.1.2");
  EXPECT_EQ(r->upgrade_removes, 3);
  EXPECT_EQ(r->upgrade_remaining, 2);
}

TEST(CoveragePredictTest, UnknownReleaseAndMissingBundleAreErrors) {
  auto o = FixtureOptions();
  o.torch = "1.13";
  auto r = Predict(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("2.13.0"), std::string::npos);
  o = FixtureOptions();
  o.bundle = SourceDir() / "no/such/bundle";
  EXPECT_FALSE(Predict(o).ok());
}

}  // namespace
}  // namespace dt::coverage
