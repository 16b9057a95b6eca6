#include "verdict/rules.h"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (fmt >= 11 keeps it here)

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

#include "util/strings.h"
#include "verdict/facts.h"

namespace dt::verdict {

namespace {

std::string Describe(const Finding& f) {
  std::string text = fmt::format("{} {}", f.code, f.message.empty() ? f.snippet : f.message);
  if (!f.snippet.empty() && !f.message.empty()) text += fmt::format(" (`{}`)", f.snippet);
  return text;
}

EvidenceItem FromFinding(const Finding& f, const std::string& prefix = {},
                         ItemKind kind = ItemKind::kOther) {
  return {prefix + Describe(f), {f.file, f.line, f.cell}, f.replacement, kind};
}

// A Python finding whose reachability the scan could not compute (it had no entry scripts) is taken
// to be on the path; a non-Python one (build file, .cu source, pin) never is.
std::optional<bool> Reachable(const Finding& f, const ScanEvidence& scan) {
  if (f.reachable || !scan.entries.empty()) return f.reachable;
  // setup.py is a build file: the scan never computes its reachability.
  const bool setup = f.file == "setup.py" || f.file.ends_with("/setup.py");
  const bool python = (f.file.ends_with(".py") && !setup) || f.file.ends_with(".ipynb");
  return python ? std::optional<bool>(true) : std::nullopt;
}

// A finished track that ran without CUDA and executed `file` (its traced operators were called
// from there): proof that the code in that file has a path without what the track skipped. A run
// of some other script proves nothing about it.
const Track* FinishedNonCudaTrackThrough(const Evidence& ev, const std::string& file) {
  for (const Track& t : ev.tracks) {
    if (!t.IsCuda() && t.Finished() && t.IsEvidence() && t.Executed(file)) return &t;
  }
  return nullptr;
}

}  // namespace

const char* ToString(RuleState s) {
  switch (s) {
    case RuleState::kHolds:
      return "holds";
    case RuleState::kClear:
      return "clear";
    case RuleState::kUnknown:
      return "unknown";
  }
  return "unknown";
}

const char* ToString(StopId id) {
  switch (id) {
    case StopId::kBlockerOnPath:
      return "blocker-on-path";
    case StopId::kNoMpsImplementation:
      return "no-mps-implementation";
    case StopId::kOutsideTolerance:
      return "outside-tolerance";
    case StopId::kCandidateUnfinished:
      return "candidate-unfinished";
    case StopId::kMultiGpu:
      return "multi-gpu";
    case StopId::kCannotFinish:
      return "cannot-finish";
  }
  return "unknown";
}

RuleResult CheckBlockerOnPath(const Evidence& ev, const Facts& facts) {
  RuleResult r;
  r.id = StopId::kBlockerOnPath;
  r.title = "Irreplaceable CUDA dependency on the reachable path, with no other path";
  if (!ev.scan) {
    r.summary = "No scan: whether a blocker is on the reachable path is unknown.";
    return r;
  }
  bool has_python_alternative = false;  // A guarded extension or library use: another path exists.
  for (const Finding& f : ev.scan->findings) {
    if ((f.cls == scan::FindingClass::kExtension || f.cls == scan::FindingClass::kLibrary) &&
        f.guarded.value_or(false)) {
      has_python_alternative = true;
    }
  }
  for (const Finding& scanned : ev.scan->findings) {
    if (scanned.severity != scan::Severity::kBlocker || IsMultiGpuFinding(scanned) ||
        ImportsProjectSymbol(scanned))
      continue;
    Finding f = scanned;
    f.reachable = Reachable(scanned, *ev.scan);
    if (f.reachable == std::optional<bool>(false)) {
      r.notes.push_back(
          FromFinding(f, "not reachable from the entry scripts: ", ItemKind::kUnreachable));
    } else if (f.guarded.value_or(false)) {
      r.notes.push_back(FromFinding(f, "guarded, another path exists: ", ItemKind::kGuarded));
    } else if (ev.scan->entries.size() > 1 && f.reached_by &&
               *f.reached_by < static_cast<std::int64_t>(ev.scan->entries.size())) {
      // A test suite or a folder of scripts: only some members reach the blocker; they are
      // deselected (or kept on the Linux GPU) while the others run. The plan lists it as a
      // replacement, so the experiment is dev-only, not stopped.
      r.notes.push_back(FromFinding(
          f,
          fmt::format("reached by {} of the experiment's {} scripts or tests (deselect them on "
                      "the Mac): ",
                      *f.reached_by, ev.scan->entries.size()),
          ItemKind::kSuiteMember));
    } else if (!f.reachable.has_value()) {
      // Build files, .cu sources and pins: they stop only if the Python path uses them unguarded.
      r.notes.push_back(FromFinding(
          f,
          has_python_alternative
              ? "CUDA-only build, the code has a guarded alternative path: "
              : "CUDA-only build or pin, no unguarded use on the reachable path found: ",
          ItemKind::kExtension));
    } else {
      r.evidence.push_back(FromFinding(f));
    }
  }
  const Track* cand = facts.candidate;
  if (cand != nullptr && cand->exception && !cand->exception->location.file.empty()) {
    for (const Finding& f : ev.scan->findings) {
      if (f.severity == scan::Severity::kBlocker && f.file == cand->exception->location.file &&
          f.line == cand->exception->location.line) {
        r.evidence.push_back({fmt::format("track {} failed here: {}: {}", cand->name,
                                          cand->exception->type, cand->exception->message),
                              cand->exception->location, f.replacement});
        r.level = EvidenceLevel::kMeasured;
      }
    }
  }
  if (!r.evidence.empty()) {
    r.state = RuleState::kHolds;
    r.summary = fmt::format("{} unguarded blocker(s) on the reachable path: {}", r.evidence.size(),
                            Where(r.evidence.front().location));
  } else {
    r.state = RuleState::kClear;
    r.summary = r.notes.empty() ? "The scan found no blocker."
                                : fmt::format(
                                      "No unguarded blocker on the reachable path ({} "
                                      "blocker(s) guarded, unused or outside Python).",
                                      r.notes.size());
  }
  return r;
}

RuleResult CheckNoMpsImplementation(const Evidence& ev, const Facts& facts) {
  RuleResult r;
  r.id = StopId::kNoMpsImplementation;
  r.title = "Key operation or library with no MPS, Metal or CPU implementation";
  const Track* cand = facts.candidate;
  bool decided = false;
  if (cand != nullptr && cand->IsMps() && cand->has_ops) {
    decided = true;
    r.level = EvidenceLevel::kMeasured;
    for (const OpRow& op : cand->ops) {
      if (op.status == bundle::OpStatus::kFailed) {
        r.evidence.push_back({fmt::format("{} failed on {}{}", op.op, cand->name,
                                          op.error.empty() ? "" : ": " + op.error),
                              op.location, ""});
      }
    }
  }
  if (!decided && ev.coverage) {
    // Predicted: an operator the tables know nothing of is a note; a dtype MPS lacks (float64,
    // which the CPU fallback does not cover) is an edit before the work runs on MPS, not a missing
    // implementation: the same operator runs in float32.
    decided = true;
    std::set<std::string> seen;
    for (const CoverageOp& op : ev.coverage->ops) {
      for (const std::string& issue : op.dtype_issues) {
        const std::string key = op.op + Where(op.location) + issue;
        if (!seen.insert(key).second) continue;
        const bool f64 = Lower(issue).find("float64") != std::string::npos;
        r.notes.push_back({fmt::format("{} ({}): {}", op.op, fmt::join(op.dtypes, ", "), issue),
                           op.location, f64 ? "compute in float32 instead of float64" : "",
                           ItemKind::kDtype});
      }
      if (op.cls == coverage::OpClass::kAbsent && op.count > 0) {
        r.notes.push_back(
            {fmt::format("{}: MPS support unknown to the coverage table", op.op), op.location, ""});
      }
    }
    for (const Track& t : ev.tracks) {
      for (const Location& l : t.float64) {
        const std::string key = "f64" + Where(l);
        if (!seen.insert(key).second) continue;
        r.notes.push_back({fmt::format("float64 tensor made on track {}", t.name), l,
                           "compute in float32 instead of float64", ItemKind::kFloat64});
      }
    }
  }
  if (!decided) {
    r.summary = "No coverage prediction and no traced MPS track: unknown.";
    return r;
  }
  if (!r.evidence.empty()) {
    r.state = RuleState::kHolds;
    r.summary =
        fmt::format("{} operation(s) of the task failed on MPS, even with the CPU fallback: {}",
                    r.evidence.size(), Where(r.evidence.front().location));
    return r;
  }
  r.state = RuleState::kClear;
  std::size_t dtype = 0;
  std::string root;  // Where the run made the first float64 tensor: the line to edit.
  for (const EvidenceItem& n : r.notes) {
    dtype += n.kind == ItemKind::kDtype ? 1 : 0;
    if (n.kind == ItemKind::kFloat64 && root.empty()) root = Where(n.location);
  }
  if (r.level == EvidenceLevel::kMeasured) {
    r.summary = "No operator failed on the MPS track.";
  } else if (dtype > 0) {
    r.summary = fmt::format(
        "Every traced operator has an MPS kernel, a composite or a CPU fallback; {} use a dtype "
        "MPS lacks{}: an edit before they run on MPS.",
        dtype, root.empty() ? "" : " (float64 first made at " + root + ")");
  } else {
    r.summary = "Every traced operator has an MPS kernel, a composite or a CPU fallback.";
  }
  return r;
}

RuleResult CheckOutsideTolerance(const Evidence& ev, const Facts& facts) {
  RuleResult r;
  r.id = StopId::kOutsideTolerance;
  r.title = "Results outside tolerance (after CPU fallback)";
  r.level = EvidenceLevel::kMeasured;
  if (ev.comparisons.empty()) {
    r.summary = "No comparison of two tracks: unknown.";
    return r;
  }
  const Track* cand = facts.candidate;
  std::int64_t fallbacks = 0;
  if (cand != nullptr) {
    for (const OpRow& op : cand->ops) fallbacks += op.status == bundle::OpStatus::kFallback ? 1 : 0;
  }
  for (const Comparison& c : ev.comparisons) {
    // The comparison file is named in the text: a location is kept for places in the user's code.
    const std::string from = std::filesystem::path(c.source).filename().string() + ": ";
    for (const TensorComparison& t : c.tensors) {
      if (t.status == compare::Outcome::kPass) continue;
      std::string text = fmt::format("{}{}: {}", from, t.name, OutcomeText(t.status));
      if (t.max_abs) text += fmt::format(", max |a-b| {:.3g}", *t.max_abs);
      if (t.atol) text += fmt::format(" (atol {:.3g}, rtol {:.3g})", *t.atol, t.rtol.value_or(0));
      r.evidence.push_back({text, {}, ""});
    }
    for (const MetricComparison& m : c.metrics) {
      if (m.status == compare::Outcome::kFail)
        r.evidence.push_back({from + "metric " + m.name + ": fail", {}, ""});
    }
    if (c.verdict == compare::Outcome::kFail && r.evidence.empty()) {
      r.evidence.push_back({from + "comparison verdict: fail", {}, ""});
    }
  }
  if (!r.evidence.empty()) {
    r.state = RuleState::kHolds;
    r.summary = fmt::format(
        "{} tensor(s) or metric(s) outside tolerance{}.", r.evidence.size(),
        fallbacks > 0 ? fmt::format(" with {} operator(s) on the CPU fallback", fallbacks) : "");
  } else {
    r.state = RuleState::kClear;
    r.summary = "Every compared tensor and metric is within tolerance.";
  }
  return r;
}

RuleResult CheckCandidateUnfinished(const Evidence& /*ev*/, const Facts& facts) {
  RuleResult r;
  r.id = StopId::kCandidateUnfinished;
  r.title = "The candidate track started but did not finish";
  r.level = EvidenceLevel::kMeasured;
  const Track* cand = facts.candidate;
  if (cand == nullptr) {
    r.summary = "No candidate (non-CUDA) track: unknown.";
    return r;
  }
  if (cand->Finished()) {
    r.state = RuleState::kClear;
    r.summary = fmt::format("Track {} ({}) finished {} step(s).", cand->name, cand->device,
                            cand->step_wall_s.size());
    return r;
  }
  r.state = RuleState::kHolds;
  std::string text = fmt::format("track {} ({}) status {}", cand->name, cand->device,
                                 bundle::ToString(cand->status));
  Location where;
  if (cand->exception) {
    text += fmt::format(": {}: {}", cand->exception->type, cand->exception->message);
    where = cand->exception->location;
  }
  r.evidence.push_back({text, where, ""});
  r.summary = fmt::format("Track {} did not finish{}.", cand->name,
                          where.file.empty() ? "" : " (" + Where(where) + ")");
  return r;
}

RuleResult CheckMultiGpu(const Evidence& ev, const Facts& /*facts*/) {
  RuleResult r;
  r.id = StopId::kMultiGpu;
  r.title = "Multi-GPU communication, a cluster or GPU-memory management needed";
  if (!ev.scan) {
    r.summary = "No scan: unknown.";
    return r;
  }
  for (const Finding& scanned : ev.scan->findings) {
    if (!IsMultiGpuFinding(scanned)) continue;
    Finding f = scanned;
    f.reachable = Reachable(scanned, *ev.scan);
    const Track* finished = FinishedNonCudaTrackThrough(ev, f.file);
    if (f.reachable == std::optional<bool>(false)) {
      r.notes.push_back(
          FromFinding(f, "not reachable from the entry scripts: ", ItemKind::kUnreachable));
    } else if (f.guarded.value_or(false)) {
      r.notes.push_back(FromFinding(f, "optional (guarded): ", ItemKind::kGuarded));
    } else if (!f.reachable.has_value()) {
      r.notes.push_back(
          FromFinding(f, "launcher or build file for multi-GPU runs: ", ItemKind::kLauncher));
    } else if (f.severity == scan::Severity::kFixable || f.severity == scan::Severity::kPortable ||
               IsSingleProcessEdit(f)) {
      // `backend="nccl"`, `device_ids=[LOCAL_RANK]` hard-wired into a path that also runs as one
      // process: an edit (gloo, no device ids) that the plan lists, not a need for several GPUs.
      r.notes.push_back(FromFinding(
          f, "hard-wired into the single-process path (an edit, not a need for several GPUs): ",
          ItemKind::kMultiGpuEdit));
    } else if (finished != nullptr) {
      r.notes.push_back(FromFinding(
          f,
          fmt::format("optional: track {} ran code in {} and finished without it: ", finished->name,
                      f.file),
          ItemKind::kMultiGpuOptional));
      r.level = EvidenceLevel::kMeasured;
    } else {
      r.evidence.push_back(FromFinding(f));
    }
  }
  if (!r.evidence.empty()) {
    r.state = RuleState::kHolds;
    r.summary = fmt::format(
        "Multi-GPU communication on the reachable path, not shown to be "
        "optional: {}",
        Where(r.evidence.front().location));
  } else {
    r.state = RuleState::kClear;
    r.summary = r.notes.empty() ? "No DDP, FSDP or NCCL use found."
                                : "Multi-GPU code exists but the task does not need it.";
  }
  return r;
}

std::vector<RuleResult> CheckStopConditions(const Evidence& ev, const Facts& facts) {
  return {CheckBlockerOnPath(ev, facts),    CheckNoMpsImplementation(ev, facts),
          CheckOutsideTolerance(ev, facts), CheckCandidateUnfinished(ev, facts),
          CheckMultiGpu(ev, facts),         CheckCannotFinish(ev, facts)};
}

const char* ToString(ValidityState s) {
  switch (s) {
    case ValidityState::kOk:
      return "ok";
    case ValidityState::kDiffers:
      return "differs";
    case ValidityState::kUnknown:
      return "unknown";
    case ValidityState::kNotApplicable:
      return "not-applicable";
  }
  return "unknown";
}

Validity CheckValidity(const Evidence& ev) {
  Validity v;
  const std::size_t sources = ev.tracks.size() + (ev.baseline ? 1 : 0);
  if (ev.tracks.empty() || sources < 2) {
    v.state = ValidityState::kNotApplicable;
    v.summary = ev.tracks.empty() ? "No tracks: nothing to compare."
                                  : "One track and no baseline: nothing to compare it with.";
    return v;
  }
  auto add = [&](const std::string& field, auto get_track, std::string baseline_value) {
    ValidityField f;
    f.field = field;
    if (ev.baseline) f.values.emplace_back("baseline", std::move(baseline_value));
    for (const Track& t : ev.tracks) f.values.emplace_back(t.name, get_track(t));
    std::set<std::string> known;
    bool any_missing = false;
    for (const auto& [who, value] : f.values) {
      if (value.empty()) {
        any_missing = true;
      } else {
        known.insert(value);
      }
    }
    f.state = known.size() > 1 ? RuleState::kHolds
                               : (any_missing ? RuleState::kUnknown : RuleState::kClear);
    v.fields.push_back(std::move(f));
  };
  add(
      "git commit", [](const Track& t) { return t.git_commit.value_or(""); },
      ev.baseline ? ev.baseline->commit : "");
  add(
      "data-slice digest", [](const Track& t) { return t.data_digest.value_or(""); },
      ev.baseline ? ev.baseline->data_digest : "");
  add(
      "seed", [](const Track& t) { return t.seed ? std::to_string(*t.seed) : std::string(); },
      ev.baseline && ev.baseline->seeds.size() == 1 ? std::to_string(ev.baseline->seeds[0]) : "");
  std::vector<std::string> differs, unknown;
  for (const ValidityField& f : v.fields) {
    if (f.state == RuleState::kHolds) differs.push_back(f.field);
    if (f.state == RuleState::kUnknown) unknown.push_back(f.field);
  }
  if (!differs.empty()) {
    v.state = ValidityState::kDiffers;
    v.summary = fmt::format("The tracks differ in {}: the comparison proves nothing.",
                            fmt::join(differs, ", "));
  } else if (!unknown.empty()) {
    v.state = ValidityState::kUnknown;
    v.summary = fmt::format("Not recorded for every track: {}.", fmt::join(unknown, ", "));
  } else {
    v.state = ValidityState::kOk;
    v.summary = "The tracks share git commit, data-slice digest and seed.";
  }
  return v;
}

}  // namespace dt::verdict
