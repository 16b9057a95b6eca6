#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (fmt >= 11 keeps it here)

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "verdict/experiments.h"
#include "verdict/narrative.h"

namespace dt::verdict {

namespace {

// Collects next steps and folds them by cause: steps with the same group key (one construct in
// one file) become one step at the first location added (the root cause: the line that creates
// float64, the build or import of an extension), with the other lines listed under it.
class StepBuilder {
 public:
  void Add(int effect, const std::string& lifts, const std::string& action, const Location& loc,
           const std::string& group = {}) {
    if (!group.empty()) {
      auto it = groups_.find(group);
      if (it != groups_.end()) {
        NextStep& s = steps_[it->second];
        const bool same = s.location.file == loc.file && s.location.line == loc.line;
        const bool known = std::any_of(s.also.begin(), s.also.end(), [&](const Location& l) {
          return l.file == loc.file && l.line == loc.line;
        });
        if (!same && !known && !loc.file.empty()) s.also.push_back(loc);
        return;
      }
      groups_[group] = steps_.size();
    } else if (!seen_.insert(action + Where(loc)).second) {
      return;
    }
    steps_.push_back({effect, lifts, action, loc, {}});
  }

  std::vector<NextStep> Finish() {
    for (NextStep& s : steps_) {
      if (s.also.empty()) continue;
      std::sort(s.also.begin(), s.also.end(), [](const Location& a, const Location& b) {
        return std::tie(a.file, a.cell, a.line) < std::tie(b.file, b.cell, b.line);
      });
      std::vector<std::string> where;
      for (const Location& l : s.also) {
        if (l.file != s.location.file || l.line <= 0)
          where.push_back(Where(l));
        else
          where.push_back(l.cell ? fmt::format("cell {}:{}", *l.cell, l.line)
                                 : std::to_string(l.line));
      }
      s.action += fmt::format(" (also {}: {})", s.also.size() == 1 ? "this line" : "these lines",
                              fmt::join(where, ", "));
    }
    std::stable_sort(steps_.begin(), steps_.end(),
                     [](const NextStep& a, const NextStep& b) { return a.effect > b.effect; });
    if (steps_.size() > kMaxNextSteps) {
      const std::size_t more = steps_.size() - kMaxNextSteps;
      steps_.resize(kMaxNextSteps);
      steps_.push_back({0,
                        "",
                        fmt::format("{} more step(s) of the kinds above: see the findings and the "
                                    "operator coverage below",
                                    more),
                        {},
                        {}});
    }
    return std::move(steps_);
  }

 private:
  std::vector<NextStep> steps_;
  std::map<std::string, std::size_t> groups_;
  std::set<std::string> seen_;
};

// An operator and its backward are one construct: aten::multi_margin_loss_backward folds under
// aten::multi_margin_loss.
std::string BaseOp(std::string op) {
  constexpr std::string_view kBackward = "_backward";
  if (op.size() > kBackward.size() && op.ends_with(kBackward))
    op.resize(op.size() - kBackward.size());
  return op;
}

std::string Capitalised(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

auto At(const Location& l) { return Where(l).empty() ? std::string() : " at " + Where(l); }

// Steps that lift a holding stop condition (effect 3).
void StopSteps(const std::vector<RuleResult>& stops, StepBuilder& b) {
  for (const RuleResult& r : stops) {
    if (r.state != RuleState::kHolds) continue;
    for (const EvidenceItem& e : r.evidence) {
      if (r.id == StopId::kMultiGpu) {
        b.Add(3, ToString(r.id),
              fmt::format("Make the multi-GPU path optional{} (a single-process path, or the "
                          "gloo backend off NVIDIA GPUs)",
                          At(e.location)),
              e.location, "multi:" + e.location.file);
      } else if (r.id == StopId::kCandidateUnfinished) {
        b.Add(3, ToString(r.id),
              fmt::format("Fix the error that stopped the track{}: {}", At(e.location), e.text),
              e.location);
      } else if (r.id == StopId::kOutsideTolerance) {
        continue;  // One step for all of them, below.
      } else if (r.id == StopId::kBlockerOnPath) {
        // One step per construct and file: the first line (the import, build or definition)
        // leads; the calls below it in the same file fold under it.
        const std::string code = e.text.substr(0, e.text.find(' '));
        b.Add(3, ToString(r.id),
              e.fix.empty() ? fmt::format("Remove or replace {}{}", e.text, At(e.location))
                            : fmt::format("Replace by {}{} ({})", e.fix, At(e.location), e.text),
              e.location, "blk:" + code + ":" + e.location.file);
      } else if (!e.fix.empty()) {
        b.Add(3, ToString(r.id), Capitalised(e.fix) + At(e.location), e.location);
      } else {
        b.Add(3, ToString(r.id), fmt::format("Remove or replace {}{}", e.text, At(e.location)),
              e.location);
      }
    }
    if (r.id == StopId::kOutsideTolerance && !r.evidence.empty()) {
      // One step, however many tensors drift: the search is the same for all of them.
      std::vector<std::string> named;
      for (std::size_t i = 0; i < r.evidence.size() && i < 3; ++i)
        named.push_back(r.evidence[i].text);
      const std::size_t more = r.evidence.size() - named.size();
      b.Add(3, ToString(r.id),
            fmt::format("Find where the results drift ({}{}): compare intermediate captures, "
                        "rerun without the CPU fallback",
                        fmt::join(named, "; "),
                        more > 0 ? fmt::format("; and {} more", more) : std::string()),
            {});
    }
  }
}

// The one step that makes every automatic edit: first of all unless a stop condition holds.
void FixStep(const Evidence& ev, const Facts& facts, const Report& rep, StepBuilder& b) {
  const std::vector<const Finding*> edits = facts.With(Need::kAutomaticEdit);
  if (edits.empty()) return;
  std::string verify;
  if (!ev.designated_run.empty()) {
    verify = fmt::format("; `--verify -- python {}` proves them on this CPU",
                         fmt::join(ev.designated_run, " "));
  }
  b.Add(rep.verdict == Verdict::kCudaOnly ? 2 : 4, "cuda-parts-marked",
        fmt::format("Make the {} automatic edit(s): {} ({}{})", edits.size(), FixCommand(ev),
                    FindingPlaces(edits), verify),
        {});
}

// Edits the Mac needs that `fix --apply` does not make (effect 2): by hand, for MPS, and the
// replacements that change the recipe.
void EditSteps(const Facts& facts, StepBuilder& b) {
  for (const PathFinding& p : facts.path) {
    const Finding& f = *p.finding;
    const Location loc{f.file, f.line, f.cell};
    const std::string what = f.snippet.empty() ? f.code : "`" + f.snippet + "`";
    if (p.need == Need::kManualEdit) {
      b.Add(2, "cuda-parts-marked",
            fmt::format("Edit by hand at {} ({}): {}", Where(loc), f.code,
                        f.replacement.empty() ? f.message : f.replacement),
            loc, "man:" + f.code + ":" + f.file);
    } else if (p.need == Need::kMpsEdit) {
      // The same group as the traced run's float64 steps: one step per file either way.
      b.Add(2, "cuda-parts-marked",
            fmt::format("For MPS, {} at {}", f.replacement.empty() ? "edit " + what : f.replacement,
                        Where(loc)),
            loc, "f64:" + f.file);
    } else if (p.need == Need::kReplacement && !f.replacement.empty()) {
      b.Add(2, "cuda-parts-marked",
            fmt::format("Replace {} by {} at {}", what, f.replacement, Where(loc)), loc,
            "rep:" + f.code + ":" + f.file);
    }
  }
}

// Operators of the traced run that MPS runs on the CPU, or in a dtype it lacks (effect 2).
void OperatorSteps(const Evidence& ev, const std::vector<RuleResult>& stops, StepBuilder& b) {
  // Root causes first: the lines where the track made float64 tensors open the file's group.
  for (const EvidenceItem& e : FindStop(stops, StopId::kNoMpsImplementation).notes) {
    if (e.kind == ItemKind::kFloat64) {
      b.Add(2, "no-mps-implementation",
            "Compute in float32 instead of float64" + At(e.location) +
                " (creates the float64 tensor)",
            e.location, "f64:" + e.location.file);
    }
  }
  for (const EvidenceItem& e : FindStop(stops, StopId::kNoMpsImplementation).notes) {
    if (e.kind == ItemKind::kDtype && !e.fix.empty())
      b.Add(2, "no-mps-implementation", Capitalised(e.fix) + At(e.location), e.location,
            "f64:" + e.location.file);
  }
  if (!ev.coverage) return;
  if (ev.coverage->upgrade_version && ev.coverage->upgrade_removes > 0) {
    b.Add(2, "fallback-separated",
          fmt::format("Upgrade torch to >= {}: removes {} CPU fallback(s) on MPS",
                      *ev.coverage->upgrade_version, ev.coverage->upgrade_removes),
          {});
  }
  for (const CoverageOp& op : ev.coverage->ops) {
    if (!coverage::FallsBackToCpu(op.cls)) continue;
    if (op.native_since) {
      b.Add(
          2, "fallback-separated",
          fmt::format("Upgrade torch to >= {} for a native MPS {}{}", *op.native_since, op.op,
                      Where(op.location).empty() ? "" : " (called at " + Where(op.location) + ")"),
          op.location, "up:" + BaseOp(op.op));
    } else {
      b.Add(2, "fallback-separated",
            fmt::format("Replace {}{} by native operators (it runs on the CPU on MPS)", op.op,
                        At(op.location)),
            op.location, "fb:" + BaseOp(op.op));
    }
  }
}

// Evidence still to gather (effect 1).
void EvidenceSteps(const Evidence& ev, const std::vector<ChecklistItem>& checklist,
                   StepBuilder& b) {
  for (const ChecklistItem& c : checklist) {
    if (c.status != ItemStatus::kMissing) continue;
    if (c.id == CheckId::kBaseline) {
      b.Add(1, ToString(c.id),
            "Record the CUDA baseline: dualtrack freeze --data DATA -o baseline.json (on the CUDA "
            "machine)",
            {});
    } else if (c.id == CheckId::kMpsAvailable) {
      b.Add(1, ToString(c.id),
            "Check the Mac: dualtrack env --format json > env-mac.json (on the Mac)", {});
    } else if (c.id == CheckId::kRealInputStep) {
      b.Add(1, ToString(c.id),
            fmt::format("Run the minimal task on the Mac: dualtrack run --track mps --baseline "
                        "baseline.json -o runs/mps -- {}",
                        MacRunCommand(ev)),
            {});
    } else if (c.id == CheckId::kWithinTolerance) {
      b.Add(1, ToString(c.id),
            "Compare the tracks: dualtrack compare runs/cuda runs/mps --format json > "
            "compare.json",
            {});
    } else if (c.id == CheckId::kWorkloadTimed) {
      b.Add(1, ToString(c.id), "Time the target workload on both tracks under the same conditions",
            {});
    } else if (c.id == CheckId::kRemoteData) {
      b.Add(1, ToString(c.id),
            "If a remote Mac is used, check its data handling and say so with "
            "--remote-data-confirmed",
            {});
    }
  }
}

bool IsExtensionNote(const EvidenceItem& e) { return e.kind == ItemKind::kExtension; }

}  // namespace

std::string FixCommand(const Evidence& ev) {
  std::string root = ev.project.empty() && ev.scan ? ev.scan->root : ev.project;
  if (root.empty()) root = ".";
  std::error_code ec;
  const std::filesystem::path rel =
      std::filesystem::path(root).lexically_proximate(std::filesystem::current_path(ec));
  if (!ec && !rel.empty() && rel.string().rfind("..", 0) != 0) root = rel.string();
  return fmt::format("`dualtrack fix {} --apply`", root);
}

std::string MacRunCommand(const Evidence& ev) {
  if (!ev.mac_command.empty()) return ev.mac_command;
  Experiment e;
  std::vector<std::string> words = ev.designated_run;
  if (words.empty()) {
    for (const Track& t : ev.tracks) {
      if (!t.command.empty()) {
        words = t.command;
        break;
      }
    }
  }
  if (words.empty() && !ev.entry.empty()) e.entry = ev.entry;
  if (words.empty()) {
    // Nothing says how the project runs: say so, rather than a command with a placeholder.
    const std::string named = MacCommand(e);
    return named.empty() ? "the project's training script (no entry is named: pass --entry)"
                         : named;
  }
  std::string line;
  for (const std::string& w : words) line += (line.empty() ? "" : " ") + w;
  e.run = line;
  return MacCommand(e);
}

std::vector<NextStep> NextSteps(const Evidence& ev, const Facts& facts, const Report& rep) {
  StepBuilder b;
  StopSteps(rep.stops, b);
  FixStep(ev, facts, rep, b);
  EditSteps(facts, b);
  OperatorSteps(ev, rep.stops, b);
  EvidenceSteps(ev, rep.checklist, b);
  return b.Finish();
}

// Whether an MPS track was run and compared within tolerance: only then is the Mac "measured".
bool MpsComparedWithinTolerance(const Evidence& ev, const std::vector<RuleResult>& stops) {
  if (FindStop(stops, StopId::kOutsideTolerance).state != RuleState::kClear) return false;
  return std::any_of(ev.tracks.begin(), ev.tracks.end(),
                     [](const Track& t) { return t.device == "mps"; });
}

std::vector<PlanItem> Plan(const Evidence& ev, const Facts& facts, const Report& rep) {
  std::vector<PlanItem> plan;
  const Verdict verdict = rep.verdict;
  const std::vector<RuleResult>& stops = rep.stops;
  const Track* cand = facts.candidate;
  std::string designated;
  if (!ev.designated_run.empty()) {
    designated = fmt::format("{}", fmt::join(ev.designated_run, " "));
  } else if (cand != nullptr && !cand->command.empty()) {
    designated = fmt::format("{}", fmt::join(cand->command, " "));
  }
  std::vector<EvidenceItem> stopping;
  for (const RuleResult& r : stops) {
    if (r.state == RuleState::kHolds) {
      stopping.insert(stopping.end(), r.evidence.begin(), r.evidence.end());
    }
  }
  if (verdict == Verdict::kMacReady) {
    const std::size_t edits = facts.Count(Need::kAutomaticEdit);
    plan.push_back(
        {Place::kMac,
         "The designated experiments" + (designated.empty() ? "" : ": " + designated) +
             (edits > 0 ? fmt::format(", after {} ({} automatic edit(s))", FixCommand(ev), edits)
                        : std::string()),
         MpsComparedWithinTolerance(ev, stops)
             ? "measured on MPS within tolerance, same commit, data slice and seed"
             : "nothing on the path stands in the way; measure the MPS run against the baseline"});
  } else if (verdict == Verdict::kDevOnly) {
    plan.push_back({Place::kMac,
                    "The minimal task as a check" + (designated.empty() ? "" : ": " + designated),
                    "no stop condition shown to hold, but the Mac's results are not yet shown to "
                    "match"});
  }
  plan.push_back(
      {Place::kMac,
       verdict == Verdict::kCudaOnly
           ? "Development, debugging, unit tests and data preparation of the parts that avoid " +
                 (PlaceList(stopping).empty() ? std::string("the stopping code")
                                              : PlaceList(stopping))
           : "Development, debugging, unit tests and data-preparation checks",
       "they need no CUDA"});
  if (verdict != Verdict::kMacReady) {
    plan.push_back({Place::kLinuxGpu, "Formal training runs and every result you report",
                    verdict == Verdict::kCudaOnly
                        ? "a stop condition holds"
                        : "the Mac track is not measured against the baseline"});
  }
  if (!stopping.empty()) {
    // The subject is where the stop conditions are; a stop without a place (a drifting tensor, a
    // run that failed) is named by its condition.
    std::string where = PlaceList(stopping);
    if (where.empty()) {
      std::vector<std::string> titles;
      for (const RuleResult& r : stops)
        if (r.state == RuleState::kHolds) titles.push_back(r.title);
      where = fmt::format("the code behind: {}", fmt::join(titles, "; "));
    }
    plan.push_back({Place::kLinuxGpu, "Anything that runs " + where, "stop condition"});
  }
  std::vector<EvidenceItem> multi = FindStop(stops, StopId::kMultiGpu).notes;
  if (!multi.empty()) {
    plan.push_back({Place::kLinuxGpu, "Multi-GPU and distributed runs (" + PlaceList(multi) + ")",
                    "NCCL, DDP and multi-GPU launchers need NVIDIA GPUs"});
  }
  std::vector<EvidenceItem> ext;
  for (const EvidenceItem& e : FindStop(stops, StopId::kBlockerOnPath).notes) {
    if (IsExtensionNote(e)) ext.push_back(e);
  }
  if (!ext.empty()) {
    plan.push_back(
        {Place::kLinuxGpu,
         "Building and benchmarking the CUDA extensions and pins (" + PlaceList(ext) + ")",
         "no MPS or Metal build of them exists in the project"});
  }
  return plan;
}

}  // namespace dt::verdict
