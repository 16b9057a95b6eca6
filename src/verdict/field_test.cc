// The verdict expectations of the field cases (tests/verdict/fixtures/field/*/EXPECT.md), decided
// from the scan findings each EXPECT.md describes. The findings are built here, so these tests
// check the verdict's logic independently of how far the scanner has got with each construct;
// tests/verdict/test_field.py runs the same trees end to end.
#include <gtest/gtest.h>

#include "verdict/rules.h"
#include "verdict/verdict.h"

namespace dt::verdict {
namespace {

Finding F(std::string code, std::string cls, std::string severity, std::string file,
          std::int64_t line, std::optional<bool> reachable, bool guarded = false,
          std::string snippet = {}, std::string replacement = {}) {
  Finding f;
  f.code = std::move(code);
  f.cls = scan::ParseFindingClass(cls);
  f.severity = scan::ParseSeverity(severity);
  f.file = std::move(file);
  f.line = line;
  f.message = f.code + " finding";
  f.snippet = std::move(snippet);
  f.reachable = reachable;
  f.guarded = guarded;
  f.replacement = std::move(replacement);
  return f;
}

Evidence WithScan(std::vector<Finding> findings, std::string entry) {
  Evidence ev;
  ScanEvidence s;
  s.source = "test";
  s.root = ".";
  s.findings = std::move(findings);
  s.files_scanned = 5;
  s.entries = {entry};
  ev.scan = std::move(s);
  ev.entry = std::move(entry);
  return ev;
}

// A CPU track that finished, whose operators were called from `files`.
Track CpuTrack(const std::vector<std::string>& files,
               bundle::OutcomeKind outcome = bundle::OutcomeKind::kFinished) {
  Track t;
  t.name = "cpu";
  t.label = "cpu";
  t.device = "cpu";
  t.status = outcome == bundle::OutcomeKind::kFinished ? bundle::RunStatus::kOk
                                                       : bundle::RunStatus::kFailed;
  t.outcome = outcome;
  t.has_ops = true;
  t.step_wall_s = {0.1};
  for (const std::string& f : files) {
    OpRow op;
    op.op = "aten::mm";
    op.device = "cpu";
    op.count = 1;
    op.location = {f, 3};
    op.status = bundle::OpStatus::kOk;
    op.dtypes = {"float32"};
    t.ops.push_back(op);
  }
  return t;
}

const RuleResult& Stop(const Report& r, std::string_view id) {
  for (const RuleResult& s : r.stops) {
    if (ToString(s.id) == id) return s;
  }
  ADD_FAILURE() << "no rule " << id;
  return r.stops.front();
}

bool AnyReasonHas(const Report& r, const std::string& text) {
  for (const std::string& reason : r.reasons) {
    if (reason.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(VerdictFieldTest, JitExtensionWithoutCpuPathIsCudaOnlyNamingTheOp) {
  Report r = Decide(WithScan(
      {F("DT301", "extension", "blocker", "ops.py", 6, true, false, "_ext = load(...)"),
       F("DT304", "extension", "blocker", "fps.cpp", 9, std::nullopt),
       F("DT305", "extension", "blocker", "ops.py", 15, true, false,
         "return _ext.furthest_point_sample(xyz, n)", "rewrite furthest_point_sample in PyTorch"),
       F("DT305", "extension", "blocker", "model.py", 7, true, false,
         "idx = furthest_point_sample(x, 16)")},
      "train.py"));
  EXPECT_EQ(r.verdict, Verdict::kCudaOnly);
  EXPECT_EQ(r.level, EvidenceLevel::kPredicted);
  EXPECT_EQ(Stop(r, "blocker-on-path").state, RuleState::kHolds);
  ASSERT_FALSE(r.next_steps.empty());
  EXPECT_EQ(r.next_steps.front().effect, 3);
  bool names_op = false;
  for (const NextStep& n : r.next_steps) {
    names_op = names_op || n.action.find("furthest_point_sample") != std::string::npos;
  }
  EXPECT_TRUE(names_op);
}

TEST(VerdictFieldTest, CompiledExtensionPackageIsCudaOnly) {
  Report r = Decide(WithScan(
      {F("DT302", "extension", "blocker", "setup.py", 7, std::nullopt),
       F("DT303", "extension", "blocker", "setup.py", 10, std::nullopt),
       F("DT402", "environment", "blocker", "requirements.txt", 2, std::nullopt),
       F("DT304", "extension", "blocker", "pointops/_ext-src/ball_query.cpp", 7, std::nullopt),
       F("DT305", "extension", "blocker", "pointops/functions.py", 2, true),
       F("DT305", "extension", "blocker", "pointops/functions.py", 8, true),
       F("DT305", "extension", "blocker", "models/net.py", 2, true),
       F("DT305", "extension", "blocker", "models/net.py", 7, true)},
      "train.py"));
  EXPECT_EQ(r.verdict, Verdict::kCudaOnly);
  EXPECT_EQ(r.level, EvidenceLevel::kPredicted);
  // The build files are kept on the Linux GPU; the reachable uses are what stops.
  EXPECT_TRUE(AnyReasonHas(r, "setup.py:7"));
  EXPECT_EQ(Stop(r, "blocker-on-path").evidence.size(), 4u);
}

TEST(VerdictFieldTest, SubmoduleExtensionIsCudaOnly) {
  Report r =
      Decide(WithScan({F("DT306", "extension", "blocker", ".gitmodules", 1, std::nullopt),
                       F("DT306", "extension", "blocker", ".gitmodules", 4, std::nullopt),
                       F("DT402", "environment", "blocker", "environment.yml", 9, std::nullopt),
                       F("DT305", "extension", "blocker", "renderer.py", 2, true),
                       F("DT305", "extension", "blocker", "model.py", 2, true),
                       F("DT305", "extension", "blocker", "renderer.py", 7, true),
                       F("DT305", "extension", "blocker", "model.py", 6, true)},
                      "train.py"));
  EXPECT_EQ(r.verdict, Verdict::kCudaOnly);
}

TEST(VerdictFieldTest, TritonKernelOnTheOnlyPathIsCudaOnlyUnlessGuarded) {
  Report r = Decide(
      WithScan({F("DT210", "library", "blocker", "model.py", 5, true, false, "@triton.jit"),
                F("DT210", "library", "blocker", "model.py", 15, true, false, "_add_kernel[...]")},
               "model.py"));
  EXPECT_EQ(r.verdict, Verdict::kCudaOnly);
  EXPECT_EQ(r.level, EvidenceLevel::kPredicted);
  // A non-Triton path exists: the same constructs guarded do not stop the Mac.
  Report guarded = Decide(
      WithScan({F("DT210", "library", "blocker", "model.py", 5, true, true, "@triton.jit"),
                F("DT210", "library", "blocker", "model.py", 15, true, true, "_add_kernel[...]")},
               "model.py"));
  EXPECT_NE(guarded.verdict, Verdict::kCudaOnly);
  EXPECT_EQ(Stop(guarded, "blocker-on-path").state, RuleState::kClear);
}

TEST(VerdictFieldTest, HfInt8Fp16IsDevOnly) {
  Report r = Decide(WithScan(
      {F("DT211", "library", "replace", "finetune.py", 16, true, false, "load_in_8bit=True",
         "load in float16/float32 for LoRA"),
       F("DT211", "library", "replace", "finetune.py", 20, true, false,
         "prepare_model_for_int8_training(model)"),
       F("DT108", "device", "fixable", "finetune.py", 24, true, false, "fp16=True", "fp16=False"),
       F("DT109", "device", "fixable", "finetune.py", 13, true, true,
         "device_map = {\"\": int(os.environ.get(\"LOCAL_RANK\") or 0)}")},
      "finetune.py"));
  EXPECT_EQ(r.verdict, Verdict::kDevOnly);
  EXPECT_EQ(r.level, EvidenceLevel::kPredicted);
  EXPECT_TRUE(AnyReasonHas(r, "finetune.py:16"));
}

TEST(VerdictFieldTest, QloraFourBitTrainingIsNotMacReady) {
  Report r = Decide(WithScan({F("DT211", "library", "replace", "train.py", 6, true, false,
                                "BitsAndBytesConfig(load_in_4bit=True)"),
                              F("DT211", "library", "replace", "train.py", 8, true, false,
                                "prepare_model_for_kbit_training(model)"),
                              F("DT211", "library", "replace", "train.py", 9, true, false,
                                "optim=\"paged_adamw_32bit\"", "optim=\"adamw_torch\"")},
                             "train.py"));
  EXPECT_NE(r.verdict, Verdict::kMacReady);
}

TEST(VerdictFieldTest, GuardedJitExtensionDoesNotStop) {
  Report r = Decide(
      WithScan({F("DT301", "extension", "blocker", "bias_act.py", 12, true, true, "load(...)"),
                F("DT304", "extension", "blocker", "bias_act.cu", 1, std::nullopt)},
               "gen.py"));
  EXPECT_EQ(Stop(r, "blocker-on-path").state, RuleState::kClear);
  EXPECT_NE(r.verdict, Verdict::kCudaOnly);
}

TEST(VerdictFieldTest, NcclWithFallbackIsNoMultiGpuStop) {
  Report r = Decide(WithScan(
      {F("DT112", "device", "blocker", "comm.py", 6, true, true,
         "dist.barrier(device_ids=[torch.cuda.current_device()])"),
       F("DT112", "device", "blocker", "comm.py", 11, true, true,
         "dist.init_process_group(backend=\"nccl\" if dist.is_nccl_available() else \"gloo\")")},
      "comm.py"));
  EXPECT_EQ(Stop(r, "multi-gpu").state, RuleState::kClear);
  EXPECT_NE(r.verdict, Verdict::kCudaOnly);
}

TEST(VerdictFieldTest, ARunOfAnotherScriptDoesNotClearMultiGpu) {
  std::vector<Finding> nccl = {F("DT112", "device", "blocker", "comm.py", 11, true, false,
                                 "dist.init_process_group(backend=\"nccl\")")};
  // step.py ran and finished; it never executed comm.py.
  Evidence other = WithScan(nccl, "comm.py");
  other.tracks.push_back(CpuTrack({"step.py"}));
  Report r = Decide(std::move(other));
  EXPECT_EQ(Stop(r, "multi-gpu").state, RuleState::kHolds);
  EXPECT_EQ(r.verdict, Verdict::kCudaOnly);
  // A run that executed comm.py and finished shows the NCCL path optional (measured).
  Evidence same = WithScan(nccl, "comm.py");
  same.tracks.push_back(CpuTrack({"comm.py"}));
  Report cleared = Decide(std::move(same));
  EXPECT_EQ(Stop(cleared, "multi-gpu").state, RuleState::kClear);
  EXPECT_EQ(Stop(cleared, "multi-gpu").level, EvidenceLevel::kMeasured);
  ASSERT_FALSE(Stop(cleared, "multi-gpu").notes.empty());
  EXPECT_EQ(Stop(cleared, "multi-gpu").notes.front().kind, ItemKind::kMultiGpuOptional);
  // Shown optional, it no longer stands in the way of the prediction either.
  EXPECT_EQ(cleared.verdict, Verdict::kMacReady);
  EXPECT_EQ(cleared.level, EvidenceLevel::kPredicted);
}

TEST(VerdictFieldTest, ARunThatCouldNotStartIsMissingEvidenceNotCuda) {
  Evidence ev = WithScan({}, "train.py");
  Track t = CpuTrack({}, bundle::OutcomeKind::kCouldNotStart);
  t.status = bundle::RunStatus::kFailed;
  t.outcome_reason =
      "missing Python package einops_not_installed (install the project's "
      "requirements, or pass --python)";
  t.exception = Track::Exception{
      "ModuleNotFoundError", "No module named 'einops_not_installed'", {"train.py", 2}};
  ev.tracks.push_back(t);
  ev.designated_run = {"train.py"};
  Report r = Decide(std::move(ev));
  EXPECT_FALSE(r.verdict == Verdict::kCudaOnly && r.level == EvidenceLevel::kMeasured);
  EXPECT_NE(r.verdict, Verdict::kCudaOnly);
  EXPECT_EQ(Stop(r, "candidate-unfinished").state, RuleState::kUnknown);
  ASSERT_TRUE(r.evidence.missing.count("track cpu"));
  EXPECT_NE(r.evidence.missing.at("track cpu").find("einops_not_installed"), std::string::npos);
  // The declared run gave no evidence: no predicted mac-ready on the scan alone.
  EXPECT_EQ(r.verdict, Verdict::kDevOnly);
}

TEST(VerdictFieldTest, InterruptedTimedOutAndTracerErrorRunsAreMissingToo) {
  // A run the tracer broke says nothing about the project: never a measured cuda-only.
  for (bundle::OutcomeKind outcome :
       {bundle::OutcomeKind::kInterrupted, bundle::OutcomeKind::kTimedOut,
        bundle::OutcomeKind::kTracerError}) {
    Evidence ev = WithScan({}, "train.py");
    Track t = CpuTrack({"train.py"}, outcome);
    t.status = bundle::RunStatus::kKilled;
    ev.tracks.push_back(t);
    Report r = Decide(std::move(ev));
    EXPECT_NE(r.verdict, Verdict::kCudaOnly) << bundle::ToString(outcome);
    EXPECT_TRUE(r.evidence.tracks.empty()) << bundle::ToString(outcome);
  }
}

TEST(VerdictFieldTest, WithoutEntriesPythonBlockersAreOnThePathBuildFilesAreNot) {
  Evidence ev = WithScan({F("DT210", "library", "blocker", "model.py", 5, std::nullopt),
                          F("DT302", "extension", "blocker", "setup.py", 7, std::nullopt)},
                         "");
  ev.scan->entries.clear();
  Report r = Decide(std::move(ev));
  EXPECT_EQ(Stop(r, "blocker-on-path").state, RuleState::kHolds);
  ASSERT_EQ(Stop(r, "blocker-on-path").evidence.size(), 1u);
  EXPECT_EQ(Stop(r, "blocker-on-path").evidence[0].location.file, "model.py");
  ASSERT_EQ(Stop(r, "blocker-on-path").notes.size(), 1u);
  EXPECT_EQ(Stop(r, "blocker-on-path").notes[0].kind, ItemKind::kExtension);
}

// ---- Both directions.

TEST(VerdictSymmetryTest, HardWiredDeviceIsMacReadyAfterTheAutomaticEdits) {
  // A hard-wired device is not a stop condition and `dualtrack fix` removes it: mac-ready after
  // the fix, said in the first line, with the fix as the first next step.
  Finding cuda = F("DT101", "device", "fixable", "train.py", 10, true, false, "x.cuda()");
  cuda.fix = FixKind::kSafe;
  cuda.placement = true;
  Evidence ev = WithScan({cuda}, "train.py");
  ev.project = ".";
  Report r = Decide(ev);
  EXPECT_EQ(r.verdict, Verdict::kMacReady);
  EXPECT_EQ(r.automatic_edits, 1u);
  ASSERT_FALSE(r.reasons.empty());
  EXPECT_EQ(r.reasons.front().rfind("mac-ready after `dualtrack fix . --apply` (1 automatic "
                                    "edit(s): train.py:10)",
                                    0),
            0u)
      << r.reasons.front();
  ASSERT_FALSE(r.next_steps.empty());
  EXPECT_NE(r.next_steps.front().action.find("dualtrack fix . --apply"), std::string::npos)
      << r.next_steps.front().action;
  // A construct the fixer leaves (`.cuda(i, True)`) is an edit by hand that keeps the recipe:
  // still mac-ready, with the edit named in the first line.
  ev.scan->findings[0].fix = FixKind::kNone;
  Report left = Decide(ev);
  EXPECT_EQ(left.verdict, Verdict::kMacReady);
  ASSERT_FALSE(left.reasons.empty());
  EXPECT_EQ(left.reasons.front().rfind("mac-ready after 1 edit(s) by hand that keep the recipe "
                                       "(train.py:10)",
                                       0),
            0u)
      << left.reasons.front();
}

TEST(VerdictSymmetryTest, ConfigTreeDefaultIsAnOptionNotAnEdit) {
  // yacs: `_C.MODEL.DEVICE = "cuda"` is overridden by `--opts MODEL.DEVICE mps`; a device set on
  // an object in the code (`args.device`, `self.cfg.device`) is a placement that needs an edit.
  for (const char* snippet : {"_C.MODEL.DEVICE = \"cuda\"", "cfg.train.device = 'cuda'"}) {
    Evidence ev =
        WithScan({F("DT102", "device", "fixable", "config/defaults.py", 32, true, false, snippet)},
                 "demo.py");
    EXPECT_EQ(Decide(ev).verdict, Verdict::kMacReady) << snippet;
  }
  for (const char* snippet :
       {"args.device = \"cuda\"", "self.cfg.device = \"cuda\"", "_C.MODEL.DEVICE == \"cuda\""}) {
    Evidence ev = WithScan({F("DT102", "device", "fixable", "train.py", 3, true, false, snippet)},
                           "train.py");
    const Report r = Decide(ev);
    EXPECT_EQ(r.verdict, Verdict::kMacReady) << snippet;
    EXPECT_TRUE(AnyReasonHas(r, "edit(s) by hand")) << snippet;
    EXPECT_FALSE(AnyReasonHas(r, "device option")) << snippet;
  }
}

TEST(VerdictSymmetryTest, NothingInTheWayIsMacReadyPredicted) {
  Evidence ev = WithScan(
      {F("DT102", "device", "fixable", "train.py", 10, true, false,
         "p.add_argument(\"--device\", default=\"cuda\")"),          // a flag picks it
       F("DT301", "extension", "blocker", "ext.py", 3, true, true),  // guarded
       F("DT201", "library", "replace", "bench.py", 4, false),       // unreachable
       F("DT304", "extension", "blocker", "k.cu", 1, std::nullopt),  // not Python
       F("DT401", "environment", "replace", "requirements.txt", 2, std::nullopt)},  // a pin
      "train.py");
  ev.experiment = "training";
  ev.mac_command = "python train.py --device mps";
  Report r = Decide(ev);
  EXPECT_EQ(r.verdict, Verdict::kMacReady);
  EXPECT_EQ(r.level, EvidenceLevel::kPredicted);
  EXPECT_TRUE(AnyReasonHas(r, "mac-ready with the device option: python train.py --device mps"));
  // The checklist still says what has to be measured on a Mac, with the real command.
  bool run_on_mac = false;
  for (const NextStep& n : r.next_steps) {
    if (n.action.find("python train.py --device mps") != std::string::npos) run_on_mac = true;
    EXPECT_EQ(n.action.find("<entry"), std::string::npos) << n.action;
  }
  EXPECT_TRUE(run_on_mac);
  for (const ChecklistItem& c : r.checklist) {
    if (c.id == CheckId::kRealInputStep) {
      EXPECT_EQ(c.status, ItemStatus::kMissing);
    }
  }

  // A replacement on the path, or a predicted CPU fallback, stands in the way: dev-only.
  Evidence replace = ev;
  replace.scan->findings.push_back(
      F("DT201", "library", "replace", "model.py", 4, true, false, "import xformers"));
  EXPECT_EQ(Decide(replace).verdict, Verdict::kDevOnly);
  Evidence fallback = ev;
  CoverageEvidence cov;
  CoverageOp op;
  op.op = "aten::multi_margin_loss";
  op.cls = coverage::OpClass::kCpuFallback;
  op.location = {"train.py", 20};
  cov.ops.push_back(op);
  fallback.coverage = cov;
  Report fb = Decide(fallback);
  EXPECT_EQ(fb.verdict, Verdict::kDevOnly);
  EXPECT_TRUE(AnyReasonHas(fb, "fall back to the CPU"));
}

TEST(VerdictSymmetryTest, NoScanIsNeverPredictedMacReady) {
  EXPECT_EQ(Decide(Evidence{}).verdict, Verdict::kDevOnly);
}

// ---- Root causes first.

TEST(VerdictRootCauseTest, TheLineThatCreatesFloat64LeadsItsUses) {
  Evidence ev = WithScan({}, "train.py");
  Track t = CpuTrack({"train.py"});
  t.float64 = {{"utils/metrics.py", 15}};
  ev.tracks.push_back(t);
  CoverageEvidence cov;
  for (std::int64_t line : {27, 16}) {
    CoverageOp op;
    op.op = "aten::mean";
    op.cls = coverage::OpClass::kNative;
    op.dtypes = {"float64"};
    op.dtype_issues = {"MPS has no float64"};
    op.location = {"utils/metrics.py", line};
    cov.ops.push_back(op);
  }
  CoverageOp fwd;
  fwd.op = "aten::multi_margin_loss";
  fwd.cls = coverage::OpClass::kCpuFallback;
  fwd.location = {"train.py", 167};
  CoverageOp bwd = fwd;
  bwd.op = "aten::multi_margin_loss_backward";
  bwd.location = {"train.py", 174};
  cov.ops.push_back(fwd);
  cov.ops.push_back(bwd);
  ev.coverage = cov;
  Report r = Decide(std::move(ev));
  ASSERT_EQ(r.verdict, Verdict::kDevOnly);  // The CPU fallback; float64 is an edit, not a stop.
  ASSERT_FALSE(r.next_steps.empty());
  const NextStep& first = r.next_steps.front();
  EXPECT_EQ(first.location.file, "utils/metrics.py");
  EXPECT_EQ(first.location.line, 15);
  ASSERT_EQ(first.also.size(), 2u);
  EXPECT_EQ(first.also[0].line, 16);
  EXPECT_EQ(first.also[1].line, 27);
  EXPECT_NE(first.action.find("creates the float64 tensor"), std::string::npos);
  // One step for the float64 construct in that file, one for the operator and its backward.
  std::size_t f64 = 0, margin = 0;
  for (const NextStep& n : r.next_steps) {
    f64 += n.action.find("float64") != std::string::npos ? 1 : 0;
    margin += n.action.find("multi_margin_loss") != std::string::npos ? 1 : 0;
  }
  EXPECT_EQ(f64, 1u);
  EXPECT_EQ(margin, 1u);
}

TEST(VerdictRootCauseTest, OneStepPerConstructAndFileAtMostTwenty) {
  std::vector<Finding> findings;
  for (int i = 0; i < 25; ++i) {
    const std::string file = "m" + std::to_string(i) + ".py";
    findings.push_back(F("DT210", "library", "blocker", file, 3, true, false, "import triton"));
    findings.push_back(F("DT210", "library", "blocker", file, 9, true, false, "kernel[grid]()"));
  }
  Report r = Decide(WithScan(findings, "train.py"));
  ASSERT_EQ(r.verdict, Verdict::kCudaOnly);
  ASSERT_EQ(r.next_steps.size(), kMaxNextSteps + 1);
  EXPECT_EQ(r.next_steps.front().location.line, 3);  // The import leads, the call folds.
  ASSERT_EQ(r.next_steps.front().also.size(), 1u);
  EXPECT_EQ(r.next_steps.front().also[0].line, 9);
  EXPECT_NE(r.next_steps.back().action.find("more step(s)"), std::string::npos);
  // 25 construct groups and 6 evidence steps: 20 shown, 11 counted.
  EXPECT_EQ(r.next_steps.back().action.rfind("11 more step(s)", 0), 0u)
      << r.next_steps.back().action;
}

// ---- Evidence is what it claims.

TEST(VerdictDeviceTest, AnMpsLabelledCpuRunIsNotMpsEvidence) {
  Track t = CpuTrack({"train.py"});
  t.name = "mps";
  t.label = "mps";
  t.mps_available = false;
  t.device = DeviceOf(t, &t.device_note);
  EXPECT_EQ(t.device, "cpu");
  EXPECT_NE(t.device_note.find("labelled 'mps'"), std::string::npos);
  Evidence ev;
  ev.tracks.push_back(t);
  Report r = Decide(ev);
  for (const ChecklistItem& c : r.checklist) {
    if (c.id == CheckId::kRealInputStep) {
      EXPECT_EQ(c.status, ItemStatus::kMissing);
      EXPECT_NE(c.evidence.find("not MPS evidence"), std::string::npos);
    }
  }
  EXPECT_NE(r.level, EvidenceLevel::kMeasured);

  // Without a trace, the environment decides: no MPS on the host means the CPU.
  Track bare;
  bare.label = "mps";
  bare.mps_available = false;
  EXPECT_EQ(DeviceOf(bare, nullptr), "cpu");
  bare.mps_available = true;
  EXPECT_EQ(DeviceOf(bare, nullptr), "mps");
  // An operator on MPS is MPS evidence whatever the label says.
  Track real = CpuTrack({"train.py"});
  real.label = "gpu";
  real.ops.front().device = "mps";
  EXPECT_EQ(DeviceOf(real, nullptr), "mps");
}

}  // namespace
}  // namespace dt::verdict
