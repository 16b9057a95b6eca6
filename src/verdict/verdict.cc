#include "verdict/verdict.h"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (fmt >= 11 keeps it here)

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "verdict/experiments.h"
#include "verdict/narrative.h"

namespace dt::verdict {

const char* ToString(Verdict v) {
  switch (v) {
    case Verdict::kMacReady:
      return "mac-ready";
    case Verdict::kDevOnly:
      return "dev-only";
    case Verdict::kCudaOnly:
      return "cuda-only";
  }
  return "dev-only";
}

const char* ToString(ItemStatus s) {
  switch (s) {
    case ItemStatus::kDone:
      return "done";
    case ItemStatus::kFailed:
      return "failed";
    case ItemStatus::kMissing:
      return "missing";
  }
  return "missing";
}

const char* ToString(CheckId id) {
  switch (id) {
    case CheckId::kBaseline:
      return "baseline";
    case CheckId::kCudaPartsMarked:
      return "cuda-parts-marked";
    case CheckId::kMpsAvailable:
      return "mps-available";
    case CheckId::kRealInputStep:
      return "real-input-step";
    case CheckId::kFallbackSeparated:
      return "fallback-separated";
    case CheckId::kWithinTolerance:
      return "within-tolerance";
    case CheckId::kWorkloadTimed:
      return "workload-timed";
    case CheckId::kRemoteData:
      return "remote-data";
  }
  return "unknown";
}

const char* ToString(Place p) { return p == Place::kMac ? "mac" : "linux-gpu"; }
const char* Title(Place p) { return p == Place::kMac ? "Mac (MPS)" : "Linux GPU (CUDA)"; }

std::string PlaceList(const std::vector<EvidenceItem>& items, std::size_t max) {
  std::vector<std::pair<std::string, std::size_t>> files;  // first place, places in that file
  std::unordered_map<std::string, std::size_t> index;      // file -> its row in `files`
  std::unordered_set<std::string> seen;
  for (const EvidenceItem& e : items) {
    const std::string w = Where(e.location);
    if (w.empty() || !seen.insert(w).second) continue;
    auto [it, added] = index.try_emplace(e.location.file, files.size());
    if (added) {
      files.emplace_back(w, 1);
    } else {
      files[it->second].second += 1;
    }
  }
  std::string out;
  for (std::size_t i = 0; i < files.size() && i < max; ++i) {
    out += (i ? ", " : "") + files[i].first;
    if (files[i].second > 1) out += fmt::format(" (+{} more there)", files[i].second - 1);
  }
  if (files.size() > max) out += fmt::format(" and {} more file(s)", files.size() - max);
  return out;
}

const RuleResult& FindStop(const std::vector<RuleResult>& rules, StopId id) {
  for (const RuleResult& r : rules) {
    if (r.id == id) return r;
  }
  DT_CHECK(false);
  return rules.front();
}

std::string FindingPlaces(const std::vector<const Finding*>& findings, std::size_t max) {
  std::vector<EvidenceItem> items;
  items.reserve(findings.size());
  for (const Finding* f : findings) items.push_back({f->code, {f->file, f->line, f->cell}});
  return PlaceList(items, max);
}

namespace {

// Runs that could not start, or were stopped from outside, are not evidence: they leave the run
// missing with their reason instead of counting as an unfinished (CUDA-only) track.
void SetAsideNonEvidence(Evidence& ev) {
  std::vector<Track> kept;
  for (Track& t : ev.tracks) {
    if (t.IsEvidence()) {
      kept.push_back(std::move(t));
      continue;
    }
    ev.missing["track " + t.name] =
        fmt::format("{}: {}", t.outcome ? bundle::ToString(*t.outcome) : "unknown",
                    t.outcome_reason.empty() ? bundle::ToString(t.status) : t.outcome_reason);
  }
  ev.tracks = std::move(kept);
}

// What a stop condition that could not be checked leaves open, in a reader's words.
std::string OpenQuestion(StopId id) {
  switch (id) {
    case StopId::kBlockerOnPath:
      return "whether a CUDA-only dependency is on the path";
    case StopId::kNoMpsImplementation:
      return "whether every operator has an MPS kernel";
    case StopId::kOutsideTolerance:
      return "whether the results match the CUDA baseline";
    case StopId::kCandidateUnfinished:
      return "whether the run finishes on the Mac";
    case StopId::kMultiGpu:
      return "whether the run needs several GPUs";
    case StopId::kCannotFinish:
      return "whether the step fits in a Mac's memory and the designated run finishes in time";
  }
  return ToString(id);
}

// "a", "a and b", "a, b and c".
std::string JoinWords(const std::vector<std::string>& words) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? " and " : ", ";
    out += words[i];
  }
  return out;
}

std::string PathName(const Evidence& ev) {
  return ev.entry.empty() ? std::string("the project") : ev.entry + "'s path";
}

// What stands in the way of a predicted mac-ready once the automatic edits are made: replacements
// that change the recipe, constructs that fail on MPS when the work runs there,
// predicted CPU fallbacks, and a declared run that gave no evidence. Device options, the
// automatic edits and device edits by hand that keep the recipe do not (ReadyHeadline names them);
// guarded, unreachable, non-Python and portable findings never do.
std::vector<std::string> Obstacles(const Evidence& ev, const Facts& facts,
                                   const std::vector<RuleResult>& stops) {
  std::vector<std::string> out;
  if (auto r = facts.With(Need::kReplacement); !r.empty()) {
    out.push_back(fmt::format(
        "{} construct(s) on the path have only a replacement that changes speed, memory or "
        "numerics of the recipe: {}",
        r.size(), FindingPlaces(r)));
  }

  // The traced run shows which operators really compute in float64; a float64 construct the scan
  // sees may stay on the CPU (a schedule cast to float32 before it reaches the device), so it is
  // said beside the verdict (MpsOnlyEdits) rather than held against it.
  if (facts.on_mps_after_edits) {
    if (!facts.dtype_issues.empty()) {
      std::vector<EvidenceItem> ops;
      for (const CoverageOp* op : facts.dtype_issues) ops.push_back({op->op, op->location});
      out.push_back(fmt::format("{} traced operator(s) compute in a dtype MPS lacks (float64){}",
                                ops.size(), PlaceList(ops).empty() ? "" : ": " + PlaceList(ops)));
    }
  }
  if (!facts.fallbacks.empty()) {
    std::vector<EvidenceItem> fb;
    for (const CoverageOp* op : facts.fallbacks) fb.push_back({op->op, op->location});
    out.push_back(fmt::format("{} traced operator(s) would fall back to the CPU on MPS{}",
                              fb.size(), PlaceList(fb).empty() ? "" : ": " + PlaceList(fb)));
  }
  if (ev.tracks.empty()) {
    // A declared run (or a given track) that gave no evidence: the prediction lacks its traced run.
    for (const auto& [piece, why] : ev.missing) {
      if (piece == "run" && !ev.designated_run.empty()) {
        out.push_back("the declared run gave no evidence (" + why + ")");
      } else if (piece.rfind("track ", 0) == 0) {
        out.push_back(piece + " gave no evidence (" + why + ")");
      }
    }
  }
  if (FindStop(stops, StopId::kMultiGpu).state == RuleState::kUnknown && ev.scan) {
    out.push_back("the multi-GPU condition could not be checked");
  }
  return out;
}

// The first line of a predicted mac-ready: as written, with the device option, or after the
// automatic edits, and what the scan set aside.
std::string ReadyHeadline(const Evidence& ev, const Facts& facts) {
  const std::size_t edits = facts.Count(Need::kAutomaticEdit);
  const std::size_t options = facts.Count(Need::kDeviceOption);
  const std::size_t by_hand = facts.Count(Need::kManualEdit);
  std::string how;
  if (edits > 0) {
    how = fmt::format("mac-ready after {} ({} automatic edit(s): {})", FixCommand(ev), edits,
                      FindingPlaces(facts.With(Need::kAutomaticEdit)));
  } else if (options > 0) {
    how = fmt::format("mac-ready with the device option: {} (the \"cuda\" default at {})",
                      MacRunCommand(ev), FindingPlaces(facts.With(Need::kDeviceOption)));
  } else {
    how = by_hand > 0 ? "mac-ready" : "mac-ready as written";
  }
  // Device edits `fix` does not make (a CUDA stream, an `assert torch.cuda.is_available()`) keep
  // the recipe: they are work to do, named here, not a reason the formal runs stay on CUDA.
  if (by_hand > 0) {
    how += fmt::format("{} {} edit(s) by hand that keep the recipe ({})",
                       edits + options > 0 ? ", and" : " after", by_hand,
                       FindingPlaces(facts.With(Need::kManualEdit)));
  }
  std::size_t guarded = 0, off_path = 0;
  for (const Finding& f : ev.scan->findings) {
    if (f.guarded.value_or(false)) {
      ++guarded;
    } else if (!OnPath(f, *ev.scan)) {
      ++off_path;
    }
  }
  return fmt::format(
      "{}, predicted: no stop condition, and nothing else on {} stands in the way ({} guarded "
      "finding(s) and {} off the path or outside Python do not){}.",
      how, PathName(ev), guarded, off_path,
      ev.coverage ? "; every traced operator has an MPS kernel"
                  : "; no traced run, so operator coverage was not predicted");
}

// Constructs the scan sees that fail only on MPS (float64, an operator without an MPS kernel, a
// call into an extension with a CPU build): said beside the verdict, never held against it; the
// traced run, or the MPS run, decides.
std::string MpsOnlyEdits(const Facts& facts) {
  std::vector<const Finding*> m = facts.With(Need::kMpsEdit);
  if (m.empty()) return {};
  return fmt::format(
      "{}, {} line(s) on the path may need an edit first (float64 or an operator without an MPS "
      "kernel; a traced run shows whether they reach the device): {}",
      facts.on_mps_after_edits ? "On MPS, where the work runs after the edits"
                               : "On MPS (not on the Mac's CPU, where it runs as written)",
      m.size(), FindingPlaces(m));
}

// A stop condition holds: cuda-only, measured when any holding condition was.
void DecideCudaOnly(const std::vector<const RuleResult*>& holding, Report& rep) {
  rep.verdict = Verdict::kCudaOnly;
  rep.level = EvidenceLevel::kPredicted;
  for (const RuleResult* r : holding) {
    if (r->level == EvidenceLevel::kMeasured) rep.level = EvidenceLevel::kMeasured;
  }
  for (const RuleResult* r : holding) {
    rep.reasons.push_back(fmt::format("Stop condition ({}, {}): {}", ToString(r->id),
                                      ToString(r->level), r->summary));
  }
}

// A finished MPS track, compared within tolerance on valid evidence: mac-ready, measured. Anything
// less on an MPS track leaves it dev-only with what is missing.
void DecideMeasured(const Facts& facts, Report& rep) {
  const Track* mps = facts.mps;
  const bool finished = mps->Finished();
  const bool compared = FindStop(rep.stops, StopId::kOutsideTolerance).state == RuleState::kClear;
  const bool valid = rep.validity.state == ValidityState::kOk;
  const bool ops_ok = FindStop(rep.stops, StopId::kNoMpsImplementation).state == RuleState::kClear;
  rep.level = EvidenceLevel::kMeasured;
  if (finished && compared && valid && ops_ok) {
    rep.verdict = Verdict::kMacReady;
    rep.reasons.push_back(
        fmt::format("mac-ready, measured: track {} (mps) finished {} step(s) on "
                    "real input.",
                    mps->name, mps->step_wall_s.size()));
    rep.reasons.push_back(FindStop(rep.stops, StopId::kOutsideTolerance).summary);
    rep.reasons.push_back(rep.validity.summary);
    return;
  }
  rep.verdict = Verdict::kDevOnly;
  rep.reasons.push_back(fmt::format("dev-only, measured: track {} (mps) {}.", mps->name,
                                    finished ? "finished" : "did not finish"));
  if (!compared)
    rep.reasons.push_back("Not mac-ready: no comparison of the tracks within tolerance.");
  if (!valid) {
    rep.reasons.push_back("Not mac-ready: validity " + std::string(ToString(rep.validity.state)) +
                          ": " + rep.validity.summary);
  }
  if (!ops_ok) {
    rep.reasons.push_back("Not mac-ready: " +
                          FindStop(rep.stops, StopId::kNoMpsImplementation).summary);
  }
}

// No stop condition and no MPS track: the prediction, in both directions. mac-ready when nothing
// but the automatic edits and device options stands in the way; dev-only otherwise.
void DecidePredicted(const Evidence& ev, const Facts& facts, Report& rep) {
  rep.level = EvidenceLevel::kPredicted;
  const std::vector<std::string> obstacles = Obstacles(ev, facts, rep.stops);
  if (ev.scan && obstacles.empty()) {
    rep.verdict = Verdict::kMacReady;
    rep.reasons.push_back(ReadyHeadline(ev, facts));
    rep.reasons.push_back(
        "To be measured on a Mac before it is more than a prediction: the MPS run, and its "
        "comparison with the CUDA baseline (see the checklist).");
    return;
  }
  rep.verdict = Verdict::kDevOnly;
  if (!ev.scan) {
    rep.reasons.push_back("dev-only, predicted: no scan, so nothing can be said of the code.");
  } else {
    rep.reasons.push_back(fmt::format("dev-only, predicted: {}.", obstacles.front()));
    for (std::size_t i = 1; i < obstacles.size(); ++i)
      rep.reasons.push_back("Also in the way: " + obstacles[i] + ".");
  }
  if (const std::size_t edits = facts.Count(Need::kAutomaticEdit); edits > 0) {
    rep.reasons.push_back(fmt::format("{} automatic edit(s) by {} come first ({}).", edits,
                                      FixCommand(ev),
                                      FindingPlaces(facts.With(Need::kAutomaticEdit))));
  }
  std::vector<std::string> unknown;
  for (const RuleResult& r : rep.stops) {
    if (r.state == RuleState::kUnknown) unknown.push_back(OpenQuestion(r.id));
  }
  if (!unknown.empty()) {
    rep.reasons.push_back(
        fmt::format("No stop condition holds on what was checked; not yet known, "
                    "for want of runs: {}.",
                    JoinWords(unknown)));
  }
}

void AddContextReasons(const Evidence& ev, const Facts& facts, Report& rep) {
  std::vector<EvidenceItem> ext;
  for (const EvidenceItem& e : FindStop(rep.stops, StopId::kBlockerOnPath).notes) {
    if (e.kind == ItemKind::kExtension) ext.push_back(e);
  }
  if (!ext.empty()) {
    rep.reasons.push_back(
        "Custom CUDA extension or CUDA-only build with no MPS build, kept on the "
        "Linux GPU: " +
        PlaceList(ext));
  }
  // CUDA-only libraries and extensions the path reaches only behind a check, a fallback or an
  // option that is off by default (`if opt.tcnn: from net_tcnn import ...`): the Mac runs without
  // them; choosing them stays on the Linux GPU.
  if (ev.scan) {
    std::vector<const Finding*> optional;
    for (const Finding& f : ev.scan->findings) {
      if (f.guarded.value_or(false) && OnPath(f, *ev.scan) &&
          (f.cls == scan::FindingClass::kLibrary || f.cls == scan::FindingClass::kExtension) &&
          !f.mps_only)
        optional.push_back(&f);
    }
    if (!optional.empty()) {
      rep.reasons.push_back(
          "Optional CUDA-only code on the path (behind a check, a fallback or an option that is "
          "off by default), kept on the Linux GPU when chosen: " +
          FindingPlaces(optional));
    }
  }
  const RuleResult& multi = FindStop(rep.stops, StopId::kMultiGpu);
  if (multi.state != RuleState::kHolds && !multi.notes.empty()) {
    rep.reasons.push_back(
        "Multi-GPU path (NCCL / DDP) not needed by the task, kept on the Linux "
        "GPU: " +
        PlaceList(multi.notes));
  }
  if (ev.coverage && !facts.fallbacks.empty()) {
    std::vector<EvidenceItem> fb;
    std::vector<std::string> names;
    for (const CoverageOp* op : facts.fallbacks) {
      fb.push_back({op->op, op->location, ""});
      names.push_back(op->op);
    }
    rep.reasons.push_back(fmt::format("Predicted CPU fallback on MPS ({} torch {}): {}{}",
                                      ToString(ev.coverage->evidence), ev.coverage->torch,
                                      fmt::join(names, ", "),
                                      PlaceList(fb).empty() ? "" : " at " + PlaceList(fb)));
  }
  if (!ev.designated_run.empty()) {
    rep.reasons.push_back(
        fmt::format("Judged for the designated run: {}", fmt::join(ev.designated_run, " ")));
  }
}

}  // namespace

Report Decide(Evidence evidence) {
  SetAsideNonEvidence(evidence);
  Report rep;
  const Evidence& ev = evidence;
  // One way: the facts, then the stop conditions, then the decision, then the narrative.
  const Facts facts = GatherFacts(ev);
  rep.stops = CheckStopConditions(ev, facts);
  rep.validity = CheckValidity(ev);
  std::vector<const RuleResult*> holding, formal_only;
  for (const RuleResult& r : rep.stops) {
    if (r.state == RuleState::kHolds) (r.formal_run_only ? formal_only : holding).push_back(&r);
  }
  if (rep.validity.state == ValidityState::kDiffers) {
    rep.reasons.push_back("Validity: " + rep.validity.summary);
  }
  if (!holding.empty()) {
    DecideCudaOnly(holding, rep);
  } else if (facts.mps != nullptr) {
    DecideMeasured(facts, rep);
  } else {
    DecidePredicted(ev, facts, rep);
  }
  // A stop condition of the formal run only (too long on every named Mac): the Mac serves
  // development runs, the formal one stays on CUDA.
  for (const RuleResult* r : formal_only) {
    if (rep.verdict == Verdict::kMacReady) {
      rep.verdict = Verdict::kDevOnly;
      rep.reasons.insert(
          rep.reasons.begin(),
          fmt::format("dev-only, {}: the formal run stays on CUDA.", ToString(r->level)));
    }
    rep.reasons.push_back(fmt::format("Stop condition for the formal run ({}, {}): {}",
                                      ToString(r->id), ToString(r->level), r->summary));
  }
  rep.automatic_edits = facts.Count(Need::kAutomaticEdit);
  if (!(rep.verdict == Verdict::kMacReady && rep.level == EvidenceLevel::kMeasured)) {
    if (std::string mps = MpsOnlyEdits(facts); !mps.empty()) rep.reasons.push_back(mps);
  }
  AddContextReasons(ev, facts, rep);
  if (facts.costed != nullptr) {
    rep.cost = facts.cost;
    rep.cost_track = facts.costed->name;
  }
  rep.checklist = Checklist(ev, facts, rep.stops);
  rep.plan = Plan(ev, facts, rep);
  rep.next_steps = NextSteps(ev, facts, rep);
  rep.evidence = std::move(evidence);
  return rep;
}

}  // namespace dt::verdict
