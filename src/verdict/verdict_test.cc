#include "verdict/verdict.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "verdict/rules.h"

// The fixtures name only the pieces of evidence a test uses; the rest stays empty on purpose.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace dt::verdict {
namespace {

// A stop condition judged on the facts of its evidence, as Decide() judges it.
RuleResult Judge(RuleResult (*check)(const Evidence&, const Facts&), const Evidence& ev) {
  return check(ev, GatherFacts(ev));
}

std::filesystem::path Data(const std::string& name) {
  return std::filesystem::path(DUALTRACK_TEST_SOURCE_DIR) / "src/verdict/testdata" / name;
}

// Builds evidence from fixtures; an empty name leaves that piece out.
struct Fixture {
  std::string scan, env, baseline, coverage;
  std::vector<std::pair<std::string, std::string>> tracks;  // name, bundle
  std::vector<std::string> compares;
  bool remote = false;
};

Evidence Load(const Fixture& f) {
  Evidence ev;
  if (!f.scan.empty()) ev.scan = *LoadScan(Data(f.scan));
  if (!f.env.empty()) ev.env = *LoadEnv(Data(f.env));
  if (!f.baseline.empty()) ev.baseline = *LoadBaseline(Data(f.baseline));
  if (!f.coverage.empty()) ev.coverage = *LoadCoverage(Data(f.coverage));
  for (const auto& [name, dir] : f.tracks) {
    auto t = LoadTrack(name, Data("bundles/" + dir));
    EXPECT_TRUE(t.ok()) << t.error().ToString();
    ev.tracks.push_back(*t);
  }
  for (const std::string& c : f.compares) ev.comparisons.push_back(*LoadComparison(Data(c)));
  ev.remote_data_confirmed = f.remote;
  return ev;
}

const ChecklistItem& Item(const Report& r, const std::string& id) {
  for (const ChecklistItem& c : r.checklist) {
    if (ToString(c.id) == id) return c;
  }
  ADD_FAILURE() << "no checklist item " << id;
  return r.checklist.front();
}

bool AnyReasonHas(const Report& r, const std::string& text) {
  for (const std::string& reason : r.reasons) {
    if (reason.find(text) != std::string::npos) return true;
  }
  return false;
}

// ---- Stop conditions, one by one.

TEST(VerdictRulesTest, BlockerOnReachablePathHolds) {
  RuleResult r = Judge(CheckBlockerOnPath, Load({.scan = "scan_blocker.json"}));
  EXPECT_EQ(r.state, RuleState::kHolds);
  EXPECT_EQ(r.level, EvidenceLevel::kPredicted);
  ASSERT_EQ(r.evidence.size(), 1u);
  EXPECT_EQ(r.evidence[0].location.file, "model.py");
  EXPECT_EQ(r.evidence[0].fix, "torch.nn.functional.scaled_dot_product_attention");
}

TEST(VerdictRulesTest, GuardedUnreachableAndBuildBlockersDoNotStop) {
  RuleResult r = Judge(CheckBlockerOnPath, Load({.scan = "scan_example.json"}));
  EXPECT_EQ(r.state, RuleState::kClear) << r.summary;
  std::string notes;
  for (const auto& n : r.notes) notes += n.location.file + ":" + n.text + "\n";
  EXPECT_NE(notes.find("model.py:guarded"), std::string::npos) << notes;
  EXPECT_NE(notes.find("scripts/benchmark_cuda.py:not reachable"), std::string::npos) << notes;
  EXPECT_NE(notes.find("ext/setup.py:CUDA-only build, the code has a guarded alternative"),
            std::string::npos)
      << notes;
  // The NCCL blocker belongs to the multi-GPU rule, not this one.
  EXPECT_EQ(notes.find("train.py"), std::string::npos);
}

TEST(VerdictRulesTest, BlockerWithoutScanIsUnknown) {
  EXPECT_EQ(Judge(CheckBlockerOnPath, Evidence{}).state, RuleState::kUnknown);
}

TEST(VerdictRulesTest, Float64OnTheTracedPathIsAnEditNotAMissingImplementation) {
  // The same operators run in float32: a dtype MPS lacks is noted with its fix, the rule is clear.
  RuleResult r = Judge(CheckNoMpsImplementation, Load({.coverage = "coverage_fallback.json"}));
  EXPECT_EQ(r.state, RuleState::kClear);
  EXPECT_EQ(r.level, EvidenceLevel::kPredicted);
  EXPECT_TRUE(r.evidence.empty());
  bool dtype = false;
  for (const EvidenceItem& n : r.notes) {
    if (n.kind != ItemKind::kDtype) continue;
    dtype = true;
    EXPECT_EQ(n.location.file, "utils/metrics.py");
    EXPECT_EQ(n.fix, "compute in float32 instead of float64");
  }
  EXPECT_TRUE(dtype);
  EXPECT_NE(r.summary.find("dtype MPS lacks"), std::string::npos) << r.summary;
  EXPECT_EQ(Judge(CheckNoMpsImplementation, Load({.coverage = "coverage_clean.json"})).state,
            RuleState::kClear);
  EXPECT_EQ(Judge(CheckNoMpsImplementation, Evidence{}).state, RuleState::kUnknown);
}

TEST(VerdictRulesTest, FailedOperatorOnMpsTrackIsMeasured) {
  RuleResult r =
      Judge(CheckNoMpsImplementation,
            Load({.coverage = "coverage_clean.json", .tracks = {{"mps", "mps_failed"}}}));
  EXPECT_EQ(r.state, RuleState::kHolds);
  EXPECT_EQ(r.level, EvidenceLevel::kMeasured);
  EXPECT_EQ(r.evidence.at(0).location.line, 15);
}

TEST(VerdictRulesTest, OutsideToleranceAfterFallback) {
  RuleResult r = Judge(CheckOutsideTolerance, Load({.tracks = {{"cuda", "cuda"}, {"mps", "mps"}},
                                                    .compares = {"compare_fail.json"}}));
  EXPECT_EQ(r.state, RuleState::kHolds);
  EXPECT_EQ(r.level, EvidenceLevel::kMeasured);
  EXPECT_NE(r.summary.find("CPU fallback"), std::string::npos) << r.summary;
  EXPECT_NE(r.evidence.at(0).text.find("grad/step1/fc.weight"), std::string::npos);
  EXPECT_EQ(Judge(CheckOutsideTolerance, Load({.compares = {"compare_pass.json"}})).state,
            RuleState::kClear);
  EXPECT_EQ(Judge(CheckOutsideTolerance, Evidence{}).state, RuleState::kUnknown);
}

TEST(VerdictRulesTest, CandidateStartedButDidNotFinish) {
  RuleResult r =
      Judge(CheckCandidateUnfinished, Load({.tracks = {{"cuda", "cuda"}, {"mac", "mps_failed"}}}));
  EXPECT_EQ(r.state, RuleState::kHolds);
  EXPECT_EQ(r.level, EvidenceLevel::kMeasured);
  EXPECT_NE(r.summary.find("utils/metrics.py:15"), std::string::npos) << r.summary;
  EXPECT_EQ(Judge(CheckCandidateUnfinished, Load({.tracks = {{"mac", "mps"}}})).state,
            RuleState::kClear);
  // A CUDA track alone is no candidate.
  EXPECT_EQ(Judge(CheckCandidateUnfinished, Load({.tracks = {{"cuda", "cuda"}}})).state,
            RuleState::kUnknown);
}

TEST(VerdictRulesTest, MultiGpuOnReachablePathHoldsUntilATrackFinishesWithoutIt) {
  RuleResult predicted = Judge(CheckMultiGpu, Load({.scan = "scan_example.json"}));
  EXPECT_EQ(predicted.state, RuleState::kHolds);
  ASSERT_EQ(predicted.evidence.size(), 1u);
  EXPECT_EQ(predicted.evidence[0].location.file, "train.py");
  EXPECT_EQ(predicted.evidence[0].location.line, 108);
  // The torchrun launcher is not Python: a note, not a stop.
  ASSERT_EQ(predicted.notes.size(), 1u);
  EXPECT_EQ(predicted.notes[0].location.file, "scripts/launch.sh");

  RuleResult measured =
      Judge(CheckMultiGpu, Load({.scan = "scan_example.json", .tracks = {{"cpu", "cpu"}}}));
  EXPECT_EQ(measured.state, RuleState::kClear);
  EXPECT_EQ(measured.level, EvidenceLevel::kMeasured);
  EXPECT_EQ(measured.notes.size(), 2u);
  EXPECT_EQ(Judge(CheckMultiGpu, Evidence{}).state, RuleState::kUnknown);
}

// A scan of one entry script with the given findings, all on its path.
Evidence OnPathScan(std::vector<Finding> findings) {
  Evidence ev;
  ScanEvidence scan;
  scan.entries = {"train.py"};
  for (Finding& f : findings) {
    f.file = f.file.empty() ? "train.py" : f.file;
    f.reachable = true;
    f.guarded = false;
    scan.findings.push_back(std::move(f));
  }
  ev.scan = std::move(scan);
  return ev;
}

TEST(VerdictRulesTest, NcclHardWiredIntoOneProcessIsAnEditNotAStop) {
  // `backend="nccl"` the scan rates fixable: a single-process run needs gloo, not several GPUs,
  // and `dualtrack fix` makes that edit.
  Finding nccl{.code = "DT205",
               .cls = scan::FindingClass::kLibrary,
               .severity = scan::Severity::kFixable,
               .line = 12,
               .snippet = "dist.init_process_group(backend=\"nccl\")",
               .fix = FixKind::kSafe};
  Report r = Decide(OnPathScan({nccl}));
  for (const RuleResult& rule : r.stops) {
    if (rule.id == StopId::kMultiGpu) {
      EXPECT_EQ(rule.state, RuleState::kClear);
    }
  }
  EXPECT_EQ(r.verdict, Verdict::kMacReady);
  EXPECT_EQ(r.automatic_edits, 1u);
  // Without a safe fix the edit is made by hand; it keeps the recipe, so it is named in the first
  // line of a mac-ready, not held against it.
  nccl.fix = FixKind::kNone;
  Report by_hand = Decide(OnPathScan({nccl}));
  EXPECT_EQ(by_hand.verdict, Verdict::kMacReady);
  ASSERT_FALSE(by_hand.reasons.empty());
  EXPECT_NE(by_hand.reasons.front().find("1 edit(s) by hand that keep the recipe (train.py:12)"),
            std::string::npos)
      << by_hand.reasons.front();
  // Every run initialising the group (DT211, replace) that `fix` gives its gloo branch: one
  // process makes a world of one, so it is an automatic edit, not a stop.
  nccl.code = "DT211";
  nccl.severity = scan::Severity::kReplace;
  nccl.fix = FixKind::kSafe;
  Report group = Decide(OnPathScan({nccl}));
  EXPECT_EQ(group.verdict, Verdict::kMacReady);
  EXPECT_EQ(group.automatic_edits, 1u);
  for (const RuleResult& rule : group.stops) {
    if (rule.id == StopId::kMultiGpu) {
      EXPECT_EQ(rule.state, RuleState::kClear);
    }
  }
  // Without that edit (the fixer leaves the call) or rated blocker: multi-GPU communication is
  // needed, which stops the Mac track.
  nccl.fix = FixKind::kNone;
  EXPECT_EQ(Decide(OnPathScan({nccl})).verdict, Verdict::kCudaOnly);
  nccl.severity = scan::Severity::kBlocker;
  EXPECT_EQ(Decide(OnPathScan({nccl})).verdict, Verdict::kCudaOnly);
}

TEST(VerdictRulesTest, MpsOnlyConstructsAreSaidBesideTheVerdict) {
  // float64 on a path the Mac runs on its CPU as written: predicted mac-ready, with the MPS edit
  // said beside it and given as a next step.
  Finding f64{.code = "DT204",
              .cls = scan::FindingClass::kLibrary,
              .severity = scan::Severity::kFixable,
              .line = 30,
              .snippet = "x = x.double()",
              .mps_only = true,
              .fix = FixKind::kUnsafe};
  Report r = Decide(OnPathScan({f64}));
  EXPECT_EQ(r.verdict, Verdict::kMacReady);
  EXPECT_EQ(r.level, EvidenceLevel::kPredicted);
  EXPECT_TRUE(
      AnyReasonHas(r, "On MPS (not on the Mac's CPU, where it runs as written), 1 line(s)"));
  EXPECT_FALSE(AnyReasonHas(r, "dev-only"));
  bool step = false;
  for (const NextStep& s : r.next_steps) step |= s.action.find("For MPS") != std::string::npos;
  EXPECT_TRUE(step);
  // A hard-coded placement that `fix` rewrites puts the work on MPS: the static float64 construct
  // may never reach the device, so it is said, not held against the Mac; a traced run decides.
  Finding cuda{.code = "DT101",
               .cls = scan::FindingClass::kDevice,
               .severity = scan::Severity::kFixable,
               .line = 31,
               .snippet = "model.cuda()",
               .placement = true,
               .fix = FixKind::kSafe};
  Report both = Decide(OnPathScan({f64, cuda}));
  EXPECT_EQ(both.verdict, Verdict::kMacReady);
  EXPECT_TRUE(AnyReasonHas(both, "On MPS, where the work runs after the edits, 1 line(s)"));
  // A traced float64 operator on that path stands in the way once the work runs on MPS.
  Evidence traced = OnPathScan({f64, cuda});
  CoverageEvidence cov;
  CoverageOp op;
  op.op = "aten::mean";
  op.cls = coverage::OpClass::kNative;
  op.dtypes = {"float64"};
  op.dtype_issues = {"MPS has no float64"};
  op.location = {"train.py", 30};
  op.count = 1;
  cov.ops.push_back(op);
  traced.coverage = cov;
  Report f64_traced = Decide(traced);
  EXPECT_EQ(f64_traced.verdict, Verdict::kDevOnly);
  EXPECT_TRUE(AnyReasonHas(f64_traced, "compute in a dtype MPS lacks (float64): train.py:30"));
  // A device call that places nothing (a seed) leaves the work on the CPU: still mac-ready.
  Finding seed{.code = "DT108",
               .cls = scan::FindingClass::kDevice,
               .severity = scan::Severity::kFixable,
               .line = 32,
               .snippet = "torch.cuda.manual_seed(0)",
               .fix = FixKind::kSafe};
  EXPECT_EQ(Decide(OnPathScan({f64, seed})).verdict, Verdict::kMacReady);
}

TEST(VerdictRulesTest, TrainingOnTheMacsCpuIsNoReasonAgainstTheMac) {
  // cleanrl ppo_atari: device = "cuda" if torch.cuda.is_available() else "cpu", a Nature CNN, and
  // loss.backward() in the script. The kind of model is never a reason: `dualtrack fix` gives the
  // device choice its MPS branch, and only a predicted "cannot finish" would count.
  Finding choice{
      .code = "DT102",
      .cls = scan::FindingClass::kDevice,
      .severity = scan::Severity::kPortable,
      .line = 9,
      .snippet = "device = torch.device(\"cuda\" if torch.cuda.is_available() else \"cpu\")"};
  Evidence ev = OnPathScan({choice});
  ev.scan->findings[0].guarded = true;
  ScanPath path;
  path.cuda_choice = Location{"train.py", 9};
  path.model = Location{"train.py", 20};
  path.model_api = "torch.nn.Conv2d";
  path.training = Location{"train.py", 60};
  ev.scan->path = path;
  Report r = Decide(ev);
  EXPECT_EQ(r.verdict, Verdict::kMacReady);
  EXPECT_FALSE(AnyReasonHas(r, "trains on the CPU only"));
  EXPECT_TRUE(AnyReasonHas(r, "mac-ready as written"));
}

// A traced CPU track whose step needs `peak` bytes and takes about 1 ms on a 1 TFLOP/s Mac.
Track CostedCpuTrack(double peak) {
  Track t;
  t.name = "cpu";
  t.device = "cpu";
  t.status = bundle::RunStatus::kOk;
  t.step_wall_s = {0.5};
  cost::CostRow mm;
  mm.step = 2;
  mm.op = "aten::mm";
  mm.inputs = {{{1000, 1000}, std::nullopt, "float32"}, {{1000, 1000}, std::nullopt, "float32"}};
  mm.outputs = {{{1000, 1000}, std::nullopt, "float32"}};
  cost::StepCost step;
  step.step = 2;
  step.device = "cpu";
  step.rows = {mm};
  step.memory = cost::StepMemory{peak / 4, peak / 4, peak / 4, peak / 4, peak};
  t.cost = step;
  return t;
}

cost::NamedDevice SmallMac(double memory_gb) {
  cost::NamedDevice d;
  d.label = "Small " + std::to_string(static_cast<int>(memory_gb)) + "GB";
  d.profile.name = "Small";
  d.profile.fp32_flops = 1e12;
  d.profile.bytes_per_s = 1e11;
  d.memory_gb = memory_gb;
  return d;
}

TEST(VerdictRulesTest, AStepThatFitsInNoNamedMacCannotFinish) {
  // The step needs 10 GB; 8 GB × 0.75 and 4 GB × 0.75 leave less: every run stops.
  Evidence ev = OnPathScan({});
  ev.tracks = {CostedCpuTrack(10e9)};
  ev.macs = {SmallMac(8), SmallMac(4)};
  const RuleResult r = Judge(CheckCannotFinish, ev);
  EXPECT_EQ(r.state, RuleState::kHolds);
  EXPECT_FALSE(r.formal_run_only);
  EXPECT_NE(r.summary.find("9.3 GB"), std::string::npos) << r.summary;
  EXPECT_NE(r.summary.find("Small 8GB, Small 4GB"), std::string::npos) << r.summary;
  ASSERT_EQ(r.evidence.size(), 2u);
  EXPECT_NE(r.evidence[0].text.find("DOES NOT FIT"), std::string::npos);
  const Report rep = Decide(ev);
  EXPECT_EQ(rep.verdict, Verdict::kCudaOnly);
  EXPECT_TRUE(AnyReasonHas(rep, "cannot-finish"));
  // One Mac with room clears it: a run that fits is no reason against the Mac, however slow.
  ev.macs.push_back(SmallMac(64));
  const RuleResult fits = Judge(CheckCannotFinish, ev);
  EXPECT_EQ(fits.state, RuleState::kClear);
  EXPECT_NE(fits.summary.find("Small 64GB"), std::string::npos);
  EXPECT_EQ(fits.evidence.size(), 2u);  // The two that cannot, as evidence beside the clear state.
  EXPECT_EQ(Decide(ev).verdict, Verdict::kMacReady);
}

TEST(VerdictRulesTest, ADesignatedRunOverTheLimitIsDevOnlyNotCudaOnly) {
  // 2·10⁹ FLOPs at 10¹² FLOP/s: 2 ms per step; 10⁹ steps take 23 days, over 72 h.
  Evidence ev = OnPathScan({});
  ev.tracks = {CostedCpuTrack(1e9)};
  ev.macs = {SmallMac(16)};
  ev.run_plan.steps = 1'000'000'000;
  const RuleResult r = Judge(CheckCannotFinish, ev);
  EXPECT_EQ(r.state, RuleState::kHolds);
  EXPECT_TRUE(r.formal_run_only);
  EXPECT_NE(r.summary.find("72 h"), std::string::npos) << r.summary;
  const Report rep = Decide(ev);
  EXPECT_EQ(rep.verdict, Verdict::kDevOnly);
  EXPECT_TRUE(AnyReasonHas(rep, "formal run"));
  // A run short enough finishes: nothing stops.
  ev.run_plan.steps = 1000;
  EXPECT_EQ(Judge(CheckCannotFinish, ev).state, RuleState::kClear);
  EXPECT_EQ(Decide(ev).verdict, Verdict::kMacReady);
}

TEST(VerdictRulesTest, NoCostTableLeavesCannotFinishUnknown) {
  Evidence ev = OnPathScan({});
  ev.macs = {SmallMac(16)};
  EXPECT_EQ(Judge(CheckCannotFinish, ev).state, RuleState::kUnknown);
}

TEST(VerdictRulesTest, MultiGpuFindingRecognition) {
  Finding gloo{.message = "process group", .snippet = "init_process_group(backend=\"gloo\")"};
  Finding nccl{.snippet = "dist.init_process_group(backend=\"nccl\")"};
  Finding fsdp{.message = "FullyShardedDataParallel wrapper"};
  Finding cuda{.snippet = "x.cuda()"};
  EXPECT_FALSE(IsMultiGpuFinding(gloo));
  EXPECT_TRUE(IsMultiGpuFinding(nccl));
  EXPECT_TRUE(IsMultiGpuFinding(fsdp));
  EXPECT_FALSE(IsMultiGpuFinding(cuda));
}

// ---- Validity.

TEST(VerdictValidityTest, SameCommitDigestAndSeedIsOk) {
  Validity v = CheckValidity(
      Load({.baseline = "baseline.json", .tracks = {{"cuda", "cuda"}, {"mps", "mps"}}}));
  EXPECT_EQ(v.state, ValidityState::kOk) << v.summary;
}

TEST(VerdictValidityTest, DifferentCommitAndSeedDiffer) {
  Validity v = CheckValidity(Load({.tracks = {{"cuda", "cuda"}, {"mps", "mps_other_commit"}}}));
  EXPECT_EQ(v.state, ValidityState::kDiffers);
  EXPECT_NE(v.summary.find("git commit"), std::string::npos);
  EXPECT_NE(v.summary.find("seed"), std::string::npos);
  EXPECT_EQ(v.summary.find("data-slice"), std::string::npos);
}

TEST(VerdictValidityTest, MissingDigestIsUnknownAndOneTrackIsNotApplicable) {
  EXPECT_EQ(CheckValidity(Load({.tracks = {{"cuda", "cuda"}, {"mps", "mps_no_digest"}}})).state,
            ValidityState::kUnknown);
  EXPECT_EQ(CheckValidity(Load({.tracks = {{"mps", "mps"}}})).state, ValidityState::kNotApplicable);
  EXPECT_EQ(CheckValidity(Evidence{}).state, ValidityState::kNotApplicable);
}

// ---- Verdicts with their evidence level.

TEST(VerdictDecideTest, MacReadyNeedsMeasuredMpsTrackWithinToleranceAndValidity) {
  Report r = Decide(Load({.scan = "scan_clean.json",
                          .env = "env_mac.json",
                          .baseline = "baseline.json",
                          .coverage = "coverage_clean.json",
                          .tracks = {{"cuda", "cuda"}, {"mps", "mps"}},
                          .compares = {"compare_pass.json"},
                          .remote = true}));
  EXPECT_EQ(r.verdict, Verdict::kMacReady);
  EXPECT_EQ(r.level, EvidenceLevel::kMeasured);
  for (const ChecklistItem& c : r.checklist) {
    EXPECT_EQ(c.status, ItemStatus::kDone) << ToString(c.id) << ": " << c.evidence;
  }
  EXPECT_TRUE(Item(r, "remote-data").user_statement);
  EXPECT_NE(Item(r, "fallback-separated").evidence.find("1 fell back"), std::string::npos);
  EXPECT_NE(Item(r, "workload-timed").evidence.find("cuda (cuda)"), std::string::npos);
  EXPECT_NE(Item(r, "workload-timed").evidence.find("mps (mps)"), std::string::npos);
}

TEST(VerdictDecideTest, DifferentCommitBlocksMacReadyAndIsShownFirst) {
  Report r = Decide(Load({.coverage = "coverage_clean.json",
                          .tracks = {{"cuda", "cuda"}, {"mps", "mps_other_commit"}},
                          .compares = {"compare_pass.json"}}));
  EXPECT_EQ(r.verdict, Verdict::kDevOnly);
  EXPECT_EQ(r.level, EvidenceLevel::kMeasured);
  ASSERT_FALSE(r.reasons.empty());
  EXPECT_EQ(r.reasons.front().rfind("Validity:", 0), 0u) << r.reasons.front();
}

TEST(VerdictDecideTest, CudaOnlyPredictedFromScan) {
  Report r = Decide(Load({.scan = "scan_blocker.json"}));
  EXPECT_EQ(r.verdict, Verdict::kCudaOnly);
  EXPECT_EQ(r.level, EvidenceLevel::kPredicted);
  EXPECT_TRUE(AnyReasonHas(r, "blocker-on-path"));
  ASSERT_FALSE(r.next_steps.empty());
  EXPECT_EQ(r.next_steps.front().effect, 3);
  EXPECT_NE(r.next_steps.front().action.find("scaled_dot_product_attention at model.py:3"),
            std::string::npos)
      << r.next_steps.front().action;
}

TEST(VerdictDecideTest, CudaOnlyMeasuredWhenCandidateFails) {
  Report r = Decide(Load({.tracks = {{"cuda", "cuda"}, {"mps", "mps_failed"}}}));
  EXPECT_EQ(r.verdict, Verdict::kCudaOnly);
  EXPECT_EQ(r.level, EvidenceLevel::kMeasured);
  EXPECT_EQ(Item(r, "real-input-step").status, ItemStatus::kFailed);
  EXPECT_TRUE(AnyReasonHas(r, "candidate-unfinished"));
}

TEST(VerdictDecideTest, CudaOnlyMeasuredWhenOutsideTolerance) {
  Report r = Decide(
      Load({.tracks = {{"cuda", "cuda"}, {"mps", "mps"}}, .compares = {"compare_fail.json"}}));
  EXPECT_EQ(r.verdict, Verdict::kCudaOnly);
  EXPECT_EQ(r.level, EvidenceLevel::kMeasured);
  EXPECT_EQ(Item(r, "within-tolerance").status, ItemStatus::kFailed);
}

TEST(VerdictDecideTest, ExampleWithoutRunIsCudaOnlyNamingNcclAndExtension) {
  Report r = Decide(Load({.scan = "scan_example.json", .env = "env_linux.json"}));
  EXPECT_EQ(r.verdict, Verdict::kCudaOnly);
  EXPECT_EQ(r.level, EvidenceLevel::kPredicted);
  EXPECT_TRUE(AnyReasonHas(r, "train.py:108"));
  EXPECT_TRUE(AnyReasonHas(r, "ext/setup.py:10"));
}

TEST(VerdictDecideTest, ExampleDefaultRunStopsOnFloat64AndPortableRunMovesUp) {
  // The default run makes float64 on the traced path.
  Report def = Decide(Load({.scan = "scan_example.json",
                            .env = "env_linux.json",
                            .coverage = "coverage_fallback.json",
                            .tracks = {{"cpu", "cpu"}}}));
  // The `--device` option sends the work to MPS, where float64 needs an edit and
  // multi_margin_loss falls back to the CPU: dev-only, not a stop condition.
  EXPECT_EQ(def.verdict, Verdict::kDevOnly);
  EXPECT_TRUE(AnyReasonHas(def, "dtype MPS lacks (float64)"));
  EXPECT_TRUE(AnyReasonHas(def, "fall back to the CPU"));
  EXPECT_TRUE(AnyReasonHas(def, "train.py:108"));     // NCCL, kept on the Linux GPU.
  EXPECT_TRUE(AnyReasonHas(def, "ext/setup.py:10"));  // The planted extension.
  EXPECT_TRUE(AnyReasonHas(def, "aten::multi_margin_loss"));
  ASSERT_FALSE(def.next_steps.empty());
  EXPECT_NE(def.next_steps.front().action.find("utils/metrics.py:15"), std::string::npos)
      << def.next_steps.front().action;

  // The device-agnostic variant has neither, and its run executed train.py without the NCCL path:
  // nothing stands in the way, so the prediction is mac-ready (both directions), still predicted.
  Report portable = Decide(Load({.scan = "scan_example.json",
                                 .env = "env_linux.json",
                                 .coverage = "coverage_clean.json",
                                 .tracks = {{"cpu", "cpu"}}}));
  EXPECT_EQ(portable.verdict, Verdict::kMacReady);
  EXPECT_EQ(portable.level, EvidenceLevel::kPredicted);
  EXPECT_TRUE(AnyReasonHas(portable, "mac-ready with the device option"));
  EXPECT_EQ(Item(portable, "real-input-step").status, ItemStatus::kMissing);
}

TEST(VerdictDecideTest, DevOnlyMeasuredWithMpsTrackButNoComparison) {
  Report r = Decide(Load({.coverage = "coverage_clean.json", .tracks = {{"mps", "mps"}}}));
  EXPECT_EQ(r.verdict, Verdict::kDevOnly);
  EXPECT_EQ(r.level, EvidenceLevel::kMeasured);
  EXPECT_EQ(Item(r, "within-tolerance").status, ItemStatus::kMissing);
  EXPECT_EQ(Item(r, "workload-timed").status, ItemStatus::kMissing);  // One track only.
  EXPECT_EQ(Item(r, "real-input-step").status, ItemStatus::kDone);
}

// ---- Missing evidence is reported as missing, never guessed.

TEST(VerdictDecideTest, NoEvidenceAtAllIsDevOnlyWithEverythingMissing) {
  Report r = Decide(Evidence{});
  EXPECT_EQ(r.verdict, Verdict::kDevOnly);
  EXPECT_EQ(r.level, EvidenceLevel::kPredicted);
  EXPECT_EQ(r.checklist.size(), 8u);
  for (const ChecklistItem& c : r.checklist)
    EXPECT_EQ(c.status, ItemStatus::kMissing) << ToString(c.id);
  for (const RuleResult& s : r.stops) EXPECT_EQ(s.state, RuleState::kUnknown) << ToString(s.id);
  EXPECT_TRUE(AnyReasonHas(r, "not yet known, for want of runs: whether"));
  EXPECT_FALSE(AnyReasonHas(r, "no-mps-implementation"));  // Plain words, not rule ids.
}

TEST(VerdictDecideTest, NoBaselineAndOneTrackAreMissing) {
  Report r = Decide(Load({.scan = "scan_clean.json", .tracks = {{"mps", "mps"}}}));
  EXPECT_EQ(Item(r, "baseline").status, ItemStatus::kMissing);
  EXPECT_EQ(Item(r, "within-tolerance").status, ItemStatus::kMissing);
  EXPECT_EQ(Item(r, "remote-data").status, ItemStatus::kMissing);
  EXPECT_EQ(Item(r, "mps-available").status, ItemStatus::kDone);  // From the bundle's own env.
  EXPECT_EQ(r.validity.state, ValidityState::kNotApplicable);
}

TEST(VerdictDecideTest, LinuxHostAloneDoesNotDecideMpsAvailability) {
  Report r = Decide(Load({.env = "env_linux.json"}));
  EXPECT_EQ(Item(r, "mps-available").status, ItemStatus::kMissing);
  EXPECT_NE(Item(r, "mps-available").evidence.find("Linux"), std::string::npos);
}

TEST(VerdictDecideTest, PlanPutsMultiGpuAndExtensionsOnLinux) {
  Report r = Decide(Load({.scan = "scan_example.json", .tracks = {{"cpu", "cpu"}}}));
  bool multi = false, ext = false, mac_dev = false;
  for (const PlanItem& p : r.plan) {
    if (p.where == Place::kLinuxGpu && p.what.find("Multi-GPU") != std::string::npos) multi = true;
    if (p.where == Place::kLinuxGpu && p.what.find("ext/setup.py") != std::string::npos) ext = true;
    if (p.where == Place::kMac && p.what.find("Development") != std::string::npos) mac_dev = true;
  }
  EXPECT_TRUE(multi);
  EXPECT_TRUE(ext);
  EXPECT_TRUE(mac_dev);
}

TEST(VerdictDecideTest, NextStepsAreOrderedByEffect) {
  Report r = Decide(Load({.scan = "scan_example.json",
                          .coverage = "coverage_fallback.json",
                          .tracks = {{"cpu", "cpu"}}}));
  ASSERT_GE(r.next_steps.size(), 3u);
  for (std::size_t i = 1; i < r.next_steps.size(); ++i) {
    EXPECT_GE(r.next_steps[i - 1].effect, r.next_steps[i].effect);
  }
  // The "cuda" default of the --device option needs no edit: the Mac run passes --device mps.
  bool float64 = false;
  for (const NextStep& n : r.next_steps) {
    EXPECT_EQ(n.action.find("train.py:44"), std::string::npos) << n.action;
    float64 |= n.action.find("float32") != std::string::npos;
  }
  EXPECT_TRUE(float64);
}

}  // namespace
}  // namespace dt::verdict
