#include "verdict/evidence.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace dt::verdict {
namespace {

std::filesystem::path Data(const std::string& name) {
  return std::filesystem::path(DUALTRACK_TEST_SOURCE_DIR) / "src/verdict/testdata" / name;
}

TEST(VerdictEvidenceTest, LoadsScanAndIgnoresUnknownFields) {
  auto scan = LoadScan(Data("scan_example.json"));
  ASSERT_TRUE(scan.ok()) << scan.error().ToString();
  EXPECT_EQ(scan->root, "examples/cuda-research");
  EXPECT_EQ(scan->files_scanned, 21);
  ASSERT_EQ(scan->findings.size(), 10u);
  const Finding& nccl = scan->findings[2];
  EXPECT_EQ(nccl.file, "train.py");
  EXPECT_EQ(nccl.line, 108);
  EXPECT_EQ(nccl.severity, scan::Severity::kBlocker);
  EXPECT_EQ(nccl.reachable, std::optional<bool>(true));
  EXPECT_EQ(nccl.guarded, std::optional<bool>(false));
  EXPECT_FALSE(scan->findings[5].reachable.has_value());  // ext/setup.py: not Python.
}

TEST(VerdictEvidenceTest, LoadsEnvBaselineCoverageCompare) {
  auto mac = LoadEnv(Data("env_mac.json"));
  ASSERT_TRUE(mac.ok()) << mac.error().ToString();
  EXPECT_TRUE(mac->IsMac());
  EXPECT_EQ(mac->mps_available, std::optional<bool>(true));
  EXPECT_FALSE(mac->mps_fallback.has_value());

  auto base = LoadBaseline(Data("baseline.json"));
  ASSERT_TRUE(base.ok()) << base.error().ToString();
  EXPECT_EQ(base->commit.size(), 40u);
  EXPECT_EQ(base->seeds, std::vector<std::int64_t>{0});
  ASSERT_TRUE(base->env.has_value());
  EXPECT_EQ(base->env->gpus.at(0).name, "NVIDIA A100");

  auto cov = LoadCoverage(Data("coverage_fallback.json"));
  ASSERT_TRUE(cov.ok()) << cov.error().ToString();
  ASSERT_EQ(cov->ops.size(), 3u);
  EXPECT_EQ(cov->ops[1].cls, coverage::OpClass::kCpuFallback);
  EXPECT_EQ(cov->ops[1].location.line, 166);

  auto cmp = LoadComparison(Data("compare_fail.json"));
  ASSERT_TRUE(cmp.ok()) << cmp.error().ToString();
  EXPECT_EQ(cmp->verdict, compare::Outcome::kFail);
  EXPECT_EQ(cmp->tensors.at(1).hist_counts.size(), 5u);
  EXPECT_EQ(cmp->tensors.at(1).hist_log10_edges.size(), 6u);
}

TEST(VerdictEvidenceTest, LoadsBundleWithOpsAndMetrics) {
  auto t = LoadTrack("mps", Data("bundles/mps"));
  ASSERT_TRUE(t.ok()) << t.error().ToString();
  EXPECT_TRUE(t->IsMps());
  EXPECT_TRUE(t->Finished());
  EXPECT_EQ(t->step_wall_s.size(), 2u);
  EXPECT_EQ(t->ops.size(), 3u);  // Two in model.py, one in train.py.
  EXPECT_EQ(t->ops[1].status, bundle::OpStatus::kFallback);
  EXPECT_EQ(t->metrics.size(), 2u);
  EXPECT_EQ(t->mps_fallback, std::optional<std::string>("1"));
  ASSERT_TRUE(t->env.has_value());
  EXPECT_TRUE(t->env->IsMac());

  auto failed = LoadTrack("mps", Data("bundles/mps_failed"));
  ASSERT_TRUE(failed.ok());
  ASSERT_TRUE(failed->exception.has_value());
  EXPECT_EQ(failed->exception->location.file, "utils/metrics.py");
}

TEST(VerdictEvidenceTest, MalformedInputNamesTheFile) {
  auto syntax = LoadScan(Data("bad_syntax.json"));
  ASSERT_FALSE(syntax.ok());
  EXPECT_NE(syntax.error().file.find("bad_syntax.json"), std::string::npos);
  EXPECT_NE(syntax.error().message.find("invalid JSON"), std::string::npos);

  auto schema = LoadScan(Data("bad_schema.json"));
  ASSERT_FALSE(schema.ok());
  EXPECT_NE(schema.error().message.find("dualtrack.scan/2"), std::string::npos);
  EXPECT_NE(schema.error().message.find("expected \"dualtrack.scan/1\""), std::string::npos);

  auto type = LoadScan(Data("bad_type.json"));
  ASSERT_FALSE(type.ok());
  EXPECT_NE(type.error().message.find("findings[0].line"), std::string::npos);

  // A scan document given where an env is expected is a schema error, not a silent empty env.
  auto wrong = LoadEnv(Data("scan_clean.json"));
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message.find("dualtrack.env/1"), std::string::npos);

  auto ops = LoadTrack("x", Data("bundles/bad_ops"));
  ASSERT_FALSE(ops.ok());
  EXPECT_NE(ops.error().file.find("ops.jsonl"), std::string::npos);
  EXPECT_EQ(ops.error().line, 2);

  auto missing = LoadTrack("x", Data("bundles/does_not_exist"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("bundle"), std::string::npos);

  auto not_object = ParseScan(nlohmann::json::array(), "x.json");
  ASSERT_FALSE(not_object.ok());
  EXPECT_EQ(not_object.error().file, "x.json");
}

TEST(VerdictEvidenceTest, NullsAreUnknownNotErrors) {
  nlohmann::json doc = {{"schema", "dualtrack.scan/1"},
                        {"root", nullptr},
                        {"findings", {{{"code", "DT1"}, {"line", nullptr}, {"guarded", nullptr}}}}};
  auto scan = ParseScan(doc, "s.json");
  ASSERT_TRUE(scan.ok()) << scan.error().ToString();
  EXPECT_EQ(scan->findings.at(0).line, 0);
  EXPECT_FALSE(scan->findings.at(0).guarded.has_value());
}

TEST(VerdictEvidenceTest, ReachedByIsACountOrAnError) {
  nlohmann::json doc = {{"schema", "dualtrack.scan/1"},
                        {"findings",
                         {{{"code", "DT207"}, {"line", 3}, {"reached_by", 2}},
                          {{"code", "DT207"}, {"line", 4}, {"reached_by", nullptr}}}}};
  auto scan = ParseScanText(doc.dump(), "s.json");
  ASSERT_TRUE(scan.ok()) << scan.error().ToString();
  EXPECT_EQ(scan->findings.at(0).reached_by, std::optional<std::int64_t>(2));
  EXPECT_FALSE(scan->findings.at(1).reached_by.has_value());
  doc["findings"][0]["reached_by"] = "two";
  auto bad = ParseScanText(doc.dump(), "s.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().file, "s.json");
  EXPECT_NE(bad.error().message.find("reached_by"), std::string::npos) << bad.error().message;
}

// States the other stages write by name are read into their enums: an absent one stays unknown,
// a name no stage writes is an error naming the file and the field.
TEST(VerdictEvidenceTest, StatesAreReadByNameAndAnUnknownNameIsAnError) {
  nlohmann::json scan = {{"schema", "dualtrack.scan/1"},
                         {"findings",
                          {{{"code", "DT101"}, {"severity", "replace"}, {"class", "extension"}},
                           {{"code", "DT102"}}}}};
  auto ok = ParseScanText(scan.dump(), "s.json");
  ASSERT_TRUE(ok.ok()) << ok.error().ToString();
  EXPECT_EQ(ok->findings.at(0).severity, scan::Severity::kReplace);
  EXPECT_EQ(ok->findings.at(0).cls, scan::FindingClass::kExtension);
  EXPECT_FALSE(ok->findings.at(1).severity.has_value());
  EXPECT_FALSE(ok->findings.at(1).cls.has_value());
  scan["findings"][0]["class"] = "gpu";
  auto bad_class = ParseScanText(scan.dump(), "s.json");
  ASSERT_FALSE(bad_class.ok());
  EXPECT_NE(bad_class.error().message.find("findings[0].class"), std::string::npos)
      << bad_class.error().message;
  scan["findings"][0]["class"] = "extension";
  for (const nlohmann::json& bad :
       {nlohmann::json("fatal"), nlohmann::json("Blocker"), nlohmann::json(3)}) {
    scan["findings"][1]["severity"] = bad;
    for (auto parsed : {ParseScanText(scan.dump(), "s.json"), ParseScan(scan, "s.json")}) {
      ASSERT_FALSE(parsed.ok()) << bad;
      EXPECT_EQ(parsed.error().file, "s.json");
      EXPECT_NE(parsed.error().message.find("findings[1].severity"), std::string::npos)
          << parsed.error().message;
      EXPECT_NE(parsed.error().message.find(bad.dump()), std::string::npos);
    }
  }

  nlohmann::json cov = {
      {"schema", "dualtrack.coverage/1"},
      {"evidence", "measured"},
      {"ops", {{{"op", "aten::mm"}, {"class", "always-cpu"}}, {{"op", "aten::x"}}}}};
  auto c = ParseCoverage(cov, "c.json");
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->evidence, EvidenceLevel::kMeasured);
  EXPECT_EQ(c->ops.at(0).cls, coverage::OpClass::kAlwaysCpu);
  EXPECT_EQ(c->ops.at(1).cls, coverage::OpClass::kAbsent);
  cov["ops"][1]["class"] = "mostly-native";
  auto bad_cls = ParseCoverage(cov, "c.json");
  ASSERT_FALSE(bad_cls.ok());
  EXPECT_NE(bad_cls.error().message.find("ops[1].class"), std::string::npos);
  cov["ops"][1]["class"] = "unknown";
  cov["evidence"] = "guessed";
  auto bad_level = ParseCoverage(cov, "c.json");
  ASSERT_FALSE(bad_level.ok());
  EXPECT_NE(bad_level.error().message.find("evidence"), std::string::npos);

  nlohmann::json cmp = {{"schema", "dualtrack.compare/1"},
                        {"verdict", "fail"},
                        {"tensors", {{{"name", "loss"}, {"status", "shape_mismatch"}}}},
                        {"metrics", {{{"name", "loss"}, {"status", "pass"}}}}};
  auto m = ParseComparison(cmp, "m.json");
  ASSERT_TRUE(m.ok()) << m.error().ToString();
  EXPECT_EQ(m->verdict, compare::Outcome::kFail);
  EXPECT_EQ(m->tensors.at(0).status, compare::Outcome::kShapeMismatch);
  EXPECT_EQ(m->metrics.at(0).status, compare::Outcome::kPass);
  cmp["tensors"][0]["status"] = "close enough";
  auto bad_status = ParseComparison(cmp, "m.json");
  ASSERT_FALSE(bad_status.ok());
  EXPECT_EQ(bad_status.error().file, "m.json");
  EXPECT_NE(bad_status.error().message.find("tensors[0].status"), std::string::npos);
}

// The streamed reader (LoadScan) and the DOM reader agree, on good documents and on bad ones.
TEST(VerdictEvidenceTest, StreamedScanMatchesTheDocumentReader) {
  nlohmann::json doc = {
      {"schema", "dualtrack.scan/1"},
      {"root", "/p"},
      {"entries", {"train.py"}},
      {"summary", {{"files_scanned", 3}}},
      {"statistics", {{"findings", {1, 2}}}},  // A nested array named like the findings.
      {"findings",
       {{{"code", "DT101"}, {"file", "a.py"}, {"line", 4}, {"guarded", true}},
        {{"code", "DT202"}, {"file", "b.py"}, {"line", 9}, {"extra", {{"findings", {1}}}}}}}};
  auto dom = ParseScan(doc, "s.json");
  auto streamed = ParseScanText(doc.dump(), "s.json");
  ASSERT_TRUE(dom.ok()) << dom.error().ToString();
  ASSERT_TRUE(streamed.ok()) << streamed.error().ToString();
  ASSERT_EQ(streamed->findings.size(), 2u);
  EXPECT_EQ(streamed->findings[1].code, "DT202");
  EXPECT_EQ(streamed->findings[1].line, 9);
  EXPECT_EQ(streamed->findings[0].guarded, dom->findings[0].guarded);
  EXPECT_EQ(streamed->files_scanned, 3);
  EXPECT_EQ(streamed->entries, dom->entries);
  EXPECT_EQ(streamed->root, "/p");

  for (const char* bad : {R"({"schema":"dualtrack.scan/1","findings":[{"code":"DT1"},7]})",
                          R"({"schema":"dualtrack.scan/1","findings":[[1]]})",
                          R"({"schema":"dualtrack.scan/1","findings":{"code":"DT1"}})",
                          R"({"schema":"dualtrack.scan/1","findings":[{"line":"x"}]})"}) {
    auto a = ParseScan(nlohmann::json::parse(bad), "s.json");
    auto b = ParseScanText(bad, "s.json");
    ASSERT_FALSE(a.ok()) << bad;
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_EQ(a.error().message, b.error().message) << bad;
  }
  auto schema = ParseScanText(R"({"schema":"other/1","findings":[7]})", "s.json");
  ASSERT_FALSE(schema.ok());
  EXPECT_NE(schema.error().message.find("schema"), std::string::npos);
}

}  // namespace
}  // namespace dt::verdict
