#include "verdict/verdict.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "verdict/experiments.h"

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

namespace {

std::string Where(const Location& l) {
  if (l.file.empty()) return {};
  return l.line > 0 ? fmt::format("{}:{}", l.file, l.line) : l.file;
}

// "a.py:3, b.cu:4 (+9 more there) and 2 more files": one place per file keeps reasons short while
// naming every file up to `max`.
std::string PlaceList(const std::vector<EvidenceItem>& items, std::size_t max = 4) {
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

bool IsExtensionNote(const EvidenceItem& e) { return e.kind == ItemKind::kExtension; }

std::string HumanBytes(std::int64_t b) {
  if (b >= (std::int64_t{1} << 30)) return fmt::format("{:.2f} GiB", b / double(1 << 30));
  if (b >= (std::int64_t{1} << 20)) return fmt::format("{:.1f} MiB", b / double(1 << 20));
  return fmt::format("{} B", b);
}

std::string StepTime(const Track& t) {
  if (t.step_wall_s.empty()) return "no step times";
  std::vector<double> s = t.step_wall_s;
  std::sort(s.begin(), s.end());
  return fmt::format("median step {:.3f} s over {} step(s)", s[s.size() / 2], s.size());
}

std::string Memory(const Track& t) {
  std::string out;
  if (t.peak_rss_bytes) out += "peak RSS " + HumanBytes(*t.peak_rss_bytes);
  if (t.peak_device_bytes) {
    out +=
        (out.empty() ? "" : ", ") + std::string("peak device ") + HumanBytes(*t.peak_device_bytes);
  }
  return out.empty() ? "memory not recorded" : out;
}

std::vector<const EnvEvidence*> AllEnvs(const Evidence& ev) {
  std::vector<const EnvEvidence*> envs;
  if (ev.env) envs.push_back(&*ev.env);
  if (ev.baseline && ev.baseline->env) envs.push_back(&*ev.baseline->env);
  for (const Track& t : ev.tracks) {
    if (t.env) envs.push_back(&*t.env);
  }
  return envs;
}

namespace {

// A CUDA baseline (freeze) with its commit, packages and data digest.
ChecklistItem BaselineItem(const Evidence& ev) {
  ChecklistItem c{CheckId::kBaseline, "CUDA baseline saved", ItemStatus::kMissing, "", false};
  if (ev.baseline) {
    const Baseline& b = *ev.baseline;
    if (b.commit.empty()) {
      c.status = ItemStatus::kFailed;
      c.evidence = fmt::format("{} records no git commit", b.source);
    } else {
      c.status = ItemStatus::kDone;
      c.evidence = fmt::format(
          "{}: commit {}{}, {} package(s), {} data file(s){}", b.source, b.commit.substr(0, 12),
          b.dirty.empty() ? "" : " (dirty)", b.packages, b.data_files,
          b.data_digest.empty() ? ", no data-slice digest"
                                : ", data digest " + b.data_digest.substr(0, 12));
    }
  } else {
    c.evidence = "no baseline given (run 'dualtrack freeze' on the CUDA machine)";
  }
  return c;
}

// The scan: how many findings need a change, how many have an alternative.
ChecklistItem CudaPartsItem(const Evidence& ev) {
  ChecklistItem c{CheckId::kCudaPartsMarked, "CUDA-only parts marked, with alternatives",
                  ItemStatus::kMissing, "", false};
  if (ev.scan) {
    std::size_t needing = 0, with_alt = 0;
    for (const Finding& f : ev.scan->findings) {
      if (f.severity == scan::Severity::kPortable) continue;
      ++needing;
      with_alt += f.replacement.empty() ? 0 : 1;
    }
    c.status = ItemStatus::kDone;
    c.evidence = fmt::format(
        "{} finding(s) in {} file(s) scanned; {} need a change, {} with a "
        "suggested alternative",
        ev.scan->findings.size(), ev.scan->files_scanned, needing, with_alt);
  } else {
    c.evidence =
        ev.missing.count("scan") ? "scan missing: " + ev.missing.at("scan") : "no scan given";
  }
  return c;
}

// A Mac environment with MPS built and available.
ChecklistItem MpsAvailableItem(const Evidence& ev) {
  ChecklistItem c{CheckId::kMpsAvailable, "MPS built and available", ItemStatus::kMissing, "",
                  false};
  const EnvEvidence* mac = nullptr;
  for (const EnvEvidence* e : AllEnvs(ev)) {
    if (e->IsMac()) mac = e;
  }
  if (mac != nullptr) {
    const bool ok = mac->mps_built.value_or(false) && mac->mps_available.value_or(false);
    c.status = ok ? ItemStatus::kDone : ItemStatus::kFailed;
    c.evidence = fmt::format(
        "{} {} ({}), torch {}: mps_built={}, mps_available={}", mac->os, mac->os_version, mac->arch,
        mac->torch_version, mac->mps_built ? (*mac->mps_built ? "true" : "false") : "unknown",
        mac->mps_available ? (*mac->mps_available ? "true" : "false") : "unknown");
  } else if (ev.env) {
    c.evidence = fmt::format(
        "this host is {} {}; no Mac environment recorded (run 'dualtrack "
        "env' on the Mac)",
        ev.env->os, ev.env->arch);
  } else {
    c.evidence = "no environment recorded";
  }
  return c;
}

// An MPS track that finished a training step on real input.
ChecklistItem RealInputStepItem(const Evidence& ev, const std::vector<RuleResult>& stops,
                                const Track* mps) {
  ChecklistItem c{CheckId::kRealInputStep, "Forward, backward and update ran on real input (MPS)",
                  ItemStatus::kMissing, "", false};
  if (mps != nullptr) {
    if (mps->Finished() && !mps->step_wall_s.empty()) {
      c.status = ItemStatus::kDone;
      c.evidence =
          fmt::format("track {} (mps) finished {} step(s)", mps->name, mps->step_wall_s.size());
    } else if (mps->Finished()) {
      c.status = ItemStatus::kFailed;
      c.evidence = fmt::format("track {} (mps) exited without recording a step", mps->name);
    } else {
      c.status = ItemStatus::kFailed;
      c.evidence = FindStop(stops, StopId::kCandidateUnfinished).summary;
    }
  } else {
    c.evidence = "no MPS track";
    for (const Track& t : ev.tracks) {
      if (!t.IsCuda()) {
        c.evidence +=
            fmt::format("; track {} ({}) {} {} step(s) — not MPS evidence{}", t.name, t.device,
                        t.Finished() ? "finished" : "did not finish", t.step_wall_s.size(),
                        t.device_note.empty() ? "" : " (" + t.device_note + ")");
      }
    }
  }
  return c;
}

// The MPS track's operator trace separates MPS from CPU-fallback execution.
ChecklistItem FallbackItem(const Evidence& ev, const Track* mps) {
  ChecklistItem c{CheckId::kFallbackSeparated, "CPU fallback separated from MPS execution",
                  ItemStatus::kMissing, "", false};
  if (mps != nullptr) {
    if (!mps->has_ops) {
      c.status = ItemStatus::kFailed;
      c.evidence = fmt::format(
          "track {} has no operator trace (ops.jsonl): MPS and CPU-fallback "
          "execution cannot be told apart",
          mps->name);
    } else {
      std::int64_t on_mps = 0, fallback = 0, failed = 0;
      std::vector<std::string> names;
      for (const OpRow& op : mps->ops) {
        if (op.status == bundle::OpStatus::kFallback) {
          ++fallback;
          if (names.size() < 5) names.push_back(op.op);
        } else if (op.status == bundle::OpStatus::kFailed) {
          ++failed;
        } else {
          ++on_mps;
        }
      }
      c.status = ItemStatus::kDone;
      c.evidence = fmt::format(
          "{} operator(s) ran on MPS, {} fell back to the CPU{}{}; "
          "PYTORCH_ENABLE_MPS_FALLBACK={}",
          on_mps, fallback, names.empty() ? "" : " (",
          names.empty() ? "" : fmt::format("{})", fmt::join(names, ", ")),
          mps->mps_fallback.value_or("unset"));
      if (failed > 0) c.evidence += fmt::format(", {} failed", failed);
    }
  } else if (ev.coverage) {
    std::int64_t fb = 0;
    for (const CoverageOp& op : ev.coverage->ops) {
      fb += coverage::FallsBackToCpu(op.cls) ? 1 : 0;
    }
    c.evidence =
        fmt::format("no MPS track; predicted: {} operator(s) would fall back to the CPU", fb);
  } else {
    c.evidence = "no MPS track and no coverage prediction";
  }
  return c;
}

// The comparison of the tracks: outputs and gradients within tolerance.
ChecklistItem ToleranceItem(const Evidence& ev, const std::vector<RuleResult>& stops) {
  ChecklistItem c{CheckId::kWithinTolerance, "Outputs and gradients within tolerance",
                  ItemStatus::kMissing, "", false};
  const RuleResult& tol = FindStop(stops, StopId::kOutsideTolerance);
  if (!ev.comparisons.empty()) {
    std::int64_t tensors = 0, grads = 0, outputs = 0;
    for (const Comparison& cmp : ev.comparisons) {
      for (const TensorComparison& t : cmp.tensors) {
        ++tensors;
        grads += t.name.rfind("grad/", 0) == 0 ? 1 : 0;
        outputs += (t.name.rfind("output/", 0) == 0 || t.name.rfind("loss/", 0) == 0) ? 1 : 0;
      }
    }
    c.status = tol.state == RuleState::kHolds ? ItemStatus::kFailed : ItemStatus::kDone;
    c.evidence = fmt::format("{} ({} tensor(s): {} output/loss, {} gradient)", tol.summary, tensors,
                             outputs, grads);
    if (c.status == ItemStatus::kDone && (grads == 0 || outputs == 0)) {
      c.evidence += "; note: outputs and gradients were not both compared";
    }
  } else {
    c.evidence = "no comparison given (run 'dualtrack compare' on the two bundles)";
  }
  return c;
}

// Step times of at least two tracks, side by side.
ChecklistItem WorkloadTimedItem(const Evidence& ev) {
  ChecklistItem c{CheckId::kWorkloadTimed, "Target workload timed on both tracks",
                  ItemStatus::kMissing, "", false};
  std::vector<std::string> timed;
  for (const Track& t : ev.tracks) {
    if (!t.step_wall_s.empty()) {
      timed.push_back(fmt::format("{} ({}): {}, {}", t.name, t.device, StepTime(t), Memory(t)));
    }
  }
  if (timed.size() >= 2) {
    c.status = ItemStatus::kDone;
    c.evidence =
        fmt::format("{} (side by side; no speed claim beyond these runs)", fmt::join(timed, "; "));
  } else if (timed.size() == 1) {
    c.evidence = "only one track timed: " + timed.front();
  } else {
    c.evidence = "no track with step times";
  }
  return c;
}

// The user's statement that the remote machine's data handling was checked.
ChecklistItem RemoteDataItem(const Evidence& ev) {
  ChecklistItem c{CheckId::kRemoteData, "Data handling on a remote machine checked",
                  ItemStatus::kMissing, "", false};
  if (ev.remote_data_confirmed) {
    c.status = ItemStatus::kDone;
    c.user_statement = true;
    c.evidence = "stated by the user (--remote-data-confirmed); dualtrack did not verify it";
  } else {
    c.evidence =
        "no statement (pass --remote-data-confirmed once the remote machine's data "
        "handling is checked)";
  }
  return c;
}

}  // namespace

std::vector<ChecklistItem> Checklist(const Evidence& ev, const std::vector<RuleResult>& stops) {
  const Track* cand = CandidateTrack(ev);
  const Track* mps = (cand != nullptr && cand->IsMps()) ? cand : nullptr;
  return {BaselineItem(ev),      CudaPartsItem(ev),
          MpsAvailableItem(ev),  RealInputStepItem(ev, stops, mps),
          FallbackItem(ev, mps), ToleranceItem(ev, stops),
          WorkloadTimedItem(ev), RemoteDataItem(ev)};
}

// The experiment's real command on the Mac (python train.py --device mps); what audit knew of it,
// else the designated run or a track's command with the device set to mps.
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
  if (words.empty()) return "python <entry script> --device mps";
  std::string line;
  for (const std::string& w : words) line += (line.empty() ? "" : " ") + w;
  e.run = line;
  return MacCommand(e);
}

bool IsPythonFile(const std::string& file) {
  // setup.py is a build file: the scan never computes its reachability.
  if (file == "setup.py" || file.ends_with("/setup.py")) return false;
  return file.size() > 3 && (file.ends_with(".py") || file.ends_with(".ipynb"));
}

// Whether a finding is on the judged experiment's path: reachable from its entry; a Python
// finding of a scan without entries (reachability unknown) is taken to be on the path.
bool OnPath(const Finding& f, const ScanEvidence& scan) {
  if (f.reachable) return *f.reachable;
  return scan.entries.empty() && IsPythonFile(f.file);
}

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
        return a.file != b.file ? a.file < b.file : a.line < b.line;
      });
      std::vector<std::string> where;
      for (const Location& l : s.also) {
        where.push_back(l.file == s.location.file && l.line > 0 ? std::to_string(l.line)
                                                                : Where(l));
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

std::vector<NextStep> NextSteps(const Evidence& ev, const std::vector<RuleResult>& stops,
                                const std::vector<ChecklistItem>& checklist) {
  StepBuilder b;
  auto at = [](const Location& l) { return Where(l).empty() ? "" : " at " + Where(l); };
  for (const RuleResult& r : stops) {
    if (r.state != RuleState::kHolds) continue;
    if (r.id == StopId::kNoMpsImplementation) {
      // Root causes first: the lines where the track made float64 tensors come before the
      // operators that then computed with them, so they open the file's group.
      for (const EvidenceItem& e : r.notes) {
        if (e.kind == ItemKind::kFloat64) {
          b.Add(3, ToString(r.id),
                "Compute in float32 instead of float64" + at(e.location) +
                    " (creates the float64 tensor)",
                e.location, "f64:" + e.location.file);
        }
      }
    }
    for (const EvidenceItem& e : r.evidence) {
      if (r.id == StopId::kMultiGpu) {
        b.Add(3, ToString(r.id),
              fmt::format("Make the multi-GPU path optional{} (a single-process path, or the "
                          "gloo backend off NVIDIA GPUs)",
                          at(e.location)),
              e.location, "multi:" + e.location.file);
      } else if (r.id == StopId::kCandidateUnfinished) {
        b.Add(3, ToString(r.id),
              fmt::format("Fix the error that stopped the track{}: {}", at(e.location), e.text),
              e.location);
      } else if (r.id == StopId::kOutsideTolerance) {
        b.Add(3, ToString(r.id),
              "Find where the results drift (" + e.text +
                  "): compare intermediate captures, rerun without the CPU fallback",
              {});
      } else if (r.id == StopId::kNoMpsImplementation && e.kind == ItemKind::kFloat64) {
        b.Add(3, ToString(r.id), "Compute in float32 instead of float64" + at(e.location),
              e.location, "f64:" + e.location.file);
      } else if (r.id == StopId::kNoMpsImplementation && !e.fix.empty()) {
        b.Add(3, ToString(r.id), Capitalised(e.fix) + at(e.location), e.location);
      } else if (r.id == StopId::kBlockerOnPath) {
        // One step per construct and file: the first line (the import, build or definition)
        // leads; the calls below it in the same file fold under it.
        const std::string code = e.text.substr(0, e.text.find(' '));
        b.Add(3, ToString(r.id),
              e.fix.empty() ? fmt::format("Remove or replace {}{}", e.text, at(e.location))
                            : fmt::format("Replace by {}{} ({})", e.fix, at(e.location), e.text),
              e.location, "blk:" + code + ":" + e.location.file);
      } else if (!e.fix.empty()) {
        b.Add(3, ToString(r.id), fmt::format("Replace by {}{}", e.fix, at(e.location)), e.location);
      } else {
        b.Add(3, ToString(r.id), fmt::format("Remove or replace {}{}", e.text, at(e.location)),
              e.location);
      }
    }
  }
  // Float64 made on a CPU track would fail on MPS; the fix is the same even when not yet stopping.
  if (FindStop(stops, StopId::kNoMpsImplementation).state != RuleState::kHolds) {
    for (const EvidenceItem& e : FindStop(stops, StopId::kNoMpsImplementation).notes) {
      if (e.kind == ItemKind::kFloat64) {
        b.Add(2, "no-mps-implementation", "Compute in float32 instead of float64" + at(e.location),
              e.location, "f64:" + e.location.file);
      }
    }
  }
  if (ev.coverage) {
    if (ev.coverage->upgrade_version && ev.coverage->upgrade_removes > 0) {
      b.Add(2, "fallback-separated",
            fmt::format("Upgrade torch to >= {}: removes {} CPU fallback(s) on MPS",
                        *ev.coverage->upgrade_version, ev.coverage->upgrade_removes),
            {});
    }
    for (const CoverageOp& op : ev.coverage->ops) {
      if (!coverage::FallsBackToCpu(op.cls)) continue;
      if (op.native_since) {
        b.Add(2, "fallback-separated",
              fmt::format(
                  "Upgrade torch to >= {} for a native MPS {}{}", *op.native_since, op.op,
                  Where(op.location).empty() ? "" : " (called at " + Where(op.location) + ")"),
              op.location, "up:" + BaseOp(op.op));
      } else {
        b.Add(2, "fallback-separated",
              fmt::format("Replace {}{} by native operators (it runs on the CPU on MPS)", op.op,
                          at(op.location)),
              op.location, "fb:" + BaseOp(op.op));
      }
    }
  }
  if (ev.scan) {
    // Only what is on the experiment's own path: pins, build files and other scripts are kept on
    // the Linux GPU (the reasons and the plan say so), they are not steps for this experiment.
    for (const Finding& f : ev.scan->findings) {
      if (!OnPath(f, *ev.scan) || f.guarded.value_or(false)) continue;
      if (f.severity == scan::Severity::kReplace && !f.replacement.empty()) {
        b.Add(2, "cuda-parts-marked",
              fmt::format("Replace `{}` by {} at {}:{}", f.snippet.empty() ? f.code : f.snippet,
                          f.replacement, f.file, f.line),
              {f.file, f.line}, "rep:" + f.code + ":" + f.file);
      }
    }
    for (const Finding& f : ev.scan->findings) {
      if (!OnPath(f, *ev.scan) || f.guarded.value_or(false)) continue;
      if (f.severity == scan::Severity::kFixable && f.cls == scan::FindingClass::kDevice) {
        b.Add(2, "cuda-parts-marked",
              fmt::format("Set the device at run time (cuda, else mps, else cpu) at {}:{}", f.file,
                          f.line),
              {f.file, f.line}, "dev:" + f.file);
      } else if (f.severity == scan::Severity::kFixable && f.mps_only) {
        // The same group as the traced run's float64 steps: one step per file either way.
        b.Add(
            2, "cuda-parts-marked",
            fmt::format("For MPS, compute in float32 instead of float64 at {}:{}", f.file, f.line),
            {f.file, f.line}, "f64:" + f.file);
      }
    }
  }
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
  return b.Finish();
}

std::vector<PlanItem> Plan(const Evidence& ev, Verdict verdict,
                           const std::vector<RuleResult>& stops) {
  std::vector<PlanItem> plan;
  const Track* cand = CandidateTrack(ev);
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
    plan.push_back({Place::kMac,
                    "The designated experiments" + (designated.empty() ? "" : ": " + designated),
                    "measured on MPS within tolerance, same commit, data slice and seed"});
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
    plan.push_back(
        {Place::kLinuxGpu, "Anything that runs " + PlaceList(stopping), "stop condition"});
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

bool IsMpsTrack(const Track* cand) { return cand != nullptr && cand->IsMps(); }

// A "cuda" default of a command-line option (`add_argument("--device", default="cuda")`) or of a
// parameter (`def build(device="cuda")`, which callers pass the option to): the user picks the
// device with a flag, which mac-ready allows.
// A default in a config tree: `_C.MODEL.DEVICE = "cuda"` (yacs), `cfg.train.device = "cuda"`: an
// assignment to an attribute chain two levels deep or more, not through `self`. Config files and
// `--opts MODEL.DEVICE mps` override it, like an argparse default.
bool IsConfigTreeDefault(std::string_view snippet) {
  std::size_t eq = snippet.find('=');
  if (eq == std::string_view::npos || eq + 1 >= snippet.size() || snippet[eq + 1] == '=')
    return false;
  std::string_view target = snippet.substr(0, eq);
  while (!target.empty() && target.back() == ' ') target.remove_suffix(1);
  if (target.empty() || target.rfind("self.", 0) == 0) return false;
  int dots = 0;
  for (char c : target) {
    if (c == '.')
      ++dots;
    else if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
      return false;
  }
  std::string_view value = snippet.substr(eq + 1);
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  return dots >= 2 && (value.rfind("\"cuda", 0) == 0 || value.rfind("'cuda", 0) == 0);
}

bool IsDeviceOptionDefault(const Finding& f) {
  if (f.cls != scan::FindingClass::kDevice) return false;
  return f.snippet.find("add_argument") != std::string::npos || f.snippet.rfind("def ", 0) == 0 ||
         f.snippet.rfind("async def ", 0) == 0 || IsConfigTreeDefault(f.snippet);
}

std::string CpuOnlyTraining(const ScanPath& p);

// What stands in the way of a predicted mac-ready when no stop condition holds: unguarded
// replace/blocker findings on the path (they have an alternative but no build for the Mac as
// written), unguarded fixable ones (a hard-coded device needs an edit; a device option's default
// does not; NCCL or DDP device ids hard-wired into a single-process path are edits too), predicted
// CPU fallbacks of the traced run, and a declared run that gave no evidence. Guarded and
// unreachable findings, non-Python files, portable findings and constructs that fail only on MPS
// (float64, an operator without an MPS kernel: the Mac runs them on its CPU as written) do not;
// the last are listed by MpsOnlyEdits.
std::vector<std::string> PredictedObstacles(const Evidence& ev,
                                            const std::vector<RuleResult>& stops) {
  std::vector<std::string> out;
  if (ev.scan) {
    std::vector<EvidenceItem> replace, edit;
    for (const Finding& f : ev.scan->findings) {
      if (f.severity == scan::Severity::kPortable || f.mps_only) continue;
      if (f.guarded.value_or(false) || !OnPath(f, *ev.scan)) continue;
      EvidenceItem item{f.code + " " + (f.snippet.empty() ? f.message : f.snippet),
                        {f.file, f.line},
                        f.replacement};
      if (f.severity == scan::Severity::kReplace || f.severity == scan::Severity::kBlocker) {
        if (IsMultiGpuFinding(f)) continue;  // The multi-GPU condition decides those.
        replace.push_back(std::move(item));
      } else if (!IsDeviceOptionDefault(f)) {
        // mac-ready means "runs as written, or with only a device flag": a hard-coded .cuda() or
        // "cuda" placement needs an edit first (dualtrack fix), so the experiment is dev-only.
        edit.push_back(std::move(item));
      }
    }
    if (!replace.empty()) {
      out.push_back(
          fmt::format("{} construct(s) on the path need a replacement before they can "
                      "run on the Mac: {}",
                      replace.size(), PlaceList(replace)));
    }
    if (!edit.empty()) {
      out.push_back(
          fmt::format("{} CUDA-hardwired line(s) on the path need a mechanical edit before "
                      "they run without CUDA: {}",
                      edit.size(), PlaceList(edit)));
    }
  }
  if (ev.scan && ev.scan->path) {
    if (std::string cpu_only = CpuOnlyTraining(*ev.scan->path); !cpu_only.empty())
      out.push_back(cpu_only);
  }
  if (ev.coverage) {
    std::vector<EvidenceItem> fb;
    for (const CoverageOp& op : ev.coverage->ops) {
      if (coverage::FallsBackToCpu(op.cls)) fb.push_back({op.op, op.location});
    }
    if (!fb.empty()) {
      out.push_back(fmt::format("{} traced operator(s) would fall back to the CPU on MPS{}",
                                fb.size(), PlaceList(fb).empty() ? "" : ": " + PlaceList(fb)));
    }
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

// cpu-only-training (docs/report.md): the experiment trains a convolution or attention model, and
// its device choice is CUDA behind a check with nothing else but the CPU (MPS is never named and no
// framework places the model). On a Mac it trains on the CPU as written: development runs, while
// formal runs stay on CUDA, or go to the Mac's GPU once the device choice gains an MPS branch.
std::string CpuOnlyTraining(const ScanPath& p) {
  if (!p.cuda_choice || p.mentions_mps || p.framework_device || !p.model || !p.training) return {};
  const std::string training =
      p.training->line > 0
          ? fmt::format("{}:{} calls backward()", p.training->file, p.training->line)
          : p.training->file + " is a training script";
  return fmt::format(
      "on a Mac it trains on the CPU only: the device choice ({}:{}) is CUDA or the CPU and MPS is "
      "named nowhere on the path, and {} for a model with {} ({}:{}), which wants an accelerator "
      "for formal runs. Development runs fit the Mac's CPU; an MPS branch in the device choice "
      "would let its GPU train it",
      p.cuda_choice->file, p.cuda_choice->line, training, p.model_api, p.model->file,
      p.model->line);
}

// Unguarded constructs on the path that run on the CPU but fail on MPS (float64, an operator
// without an MPS kernel): the Mac runs the experiment as written on its CPU; on MPS they need the
// edit first. Said beside the verdict, never a reason against mac-ready (predicted).
std::string MpsOnlyEdits(const Evidence& ev) {
  if (!ev.scan) return {};
  std::vector<EvidenceItem> items;
  for (const Finding& f : ev.scan->findings) {
    if (!f.mps_only || f.severity == scan::Severity::kPortable || f.guarded.value_or(false))
      continue;
    if (!OnPath(f, *ev.scan)) continue;
    items.push_back({f.code, {f.file, f.line}, f.replacement});
  }
  if (items.empty()) return {};
  return fmt::format(
      "On MPS (not on the Mac's CPU), {} line(s) on the path need an edit first "
      "(float64 or an operator without an MPS kernel): {}",
      items.size(), PlaceList(items));
}

std::string PredictedReadyReason(const Evidence& ev, const std::vector<RuleResult>& stops) {
  std::size_t guarded = 0, unreachable = 0, minor = 0, off_path = 0;
  for (const Finding& f : ev.scan->findings) {
    if (f.guarded.value_or(false)) {
      ++guarded;
    } else if (f.reachable == std::optional<bool>(false)) {
      ++unreachable;
    } else if (!OnPath(f, *ev.scan)) {
      ++off_path;
    } else {
      ++minor;
    }
  }
  std::string path = ev.entry.empty() ? std::string("the project") : ev.entry + "'s path";
  std::string text = fmt::format(
      "Predicted mac-ready: no stop condition and nothing on {} without an MPS path ({} guarded, "
      "{} unreachable, {} outside Python and {} portable or device-option finding(s) do not stand "
      "in "
      "the way)",
      path, guarded, unreachable, off_path, minor);
  if (ev.coverage) {
    text += "; every traced operator has an MPS kernel";
  } else {
    text += "; no traced run, so operator coverage was not predicted";
  }
  (void)stops;
  return text + ".";
}

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

}  // namespace

namespace {

// A stop condition holds: cuda-only, measured when any holding condition was.
void DecideCudaOnly(const std::vector<const RuleResult*>& holding, Report& rep) {
  rep.verdict = Verdict::kCudaOnly;
  rep.level = EvidenceLevel::kPredicted;
  for (const RuleResult* r : holding) {
    if (r->level == EvidenceLevel::kMeasured) rep.level = EvidenceLevel::kMeasured;
    rep.reasons.push_back(fmt::format("Stop condition ({}, {}): {}", ToString(r->id),
                                      ToString(r->level), r->summary));
  }
}

// dev-only: what stands in the way of mac-ready, and which stop conditions could not be checked.
void DecideDevOnly(const Evidence& ev, const Track* cand, const std::vector<std::string>& obstacles,
                   bool mps_finished, bool compared, bool valid, bool ops_ok, Report& rep) {
  rep.verdict = Verdict::kDevOnly;
  for (const std::string& o : obstacles) rep.reasons.push_back("Not mac-ready: " + o);
  rep.level =
      (cand != nullptr && cand->IsMps()) ? EvidenceLevel::kMeasured : EvidenceLevel::kPredicted;
  std::vector<std::string> unknown;
  for (const RuleResult& r : rep.stops) {
    if (r.state == RuleState::kUnknown) unknown.push_back(ToString(r.id));
  }
  rep.reasons.push_back(
      unknown.empty()
          ? std::string("No stop condition holds on the evidence given.")
          : fmt::format("No stop condition shown to hold; {} of {} could not be checked for "
                        "missing evidence ({}).",
                        unknown.size(), rep.stops.size(), fmt::join(unknown, ", ")));
  if (!mps_finished) {
    rep.reasons.push_back(
        "Not mac-ready: no finished MPS track, so the evidence for the Mac "
        "is predicted.");
  }
  if (!compared) {
    rep.reasons.push_back("Not mac-ready: no comparison of the tracks within tolerance.");
  }
  if (!valid && !ev.tracks.empty()) {
    rep.reasons.push_back("Not mac-ready: validity " + std::string(ToString(rep.validity.state)) +
                          ": " + rep.validity.summary);
  }
  if (!ops_ok) {
    rep.reasons.push_back("Not mac-ready: " +
                          FindStop(rep.stops, StopId::kNoMpsImplementation).summary);
  }
}

// No stop condition holds: mac-ready when measured on MPS (finished, compared within tolerance,
// valid, every operator on MPS) or when nothing predicted stands in the way; else dev-only.
void DecideWithoutStops(const Evidence& ev, const Track* cand, Report& rep) {
  const bool mps_finished = cand != nullptr && cand->IsMps() && cand->Finished();
  const bool compared = FindStop(rep.stops, StopId::kOutsideTolerance).state == RuleState::kClear;
  const bool valid = rep.validity.state == ValidityState::kOk;
  const bool ops_ok = FindStop(rep.stops, StopId::kNoMpsImplementation).state == RuleState::kClear;
  if (mps_finished && compared && valid && ops_ok) {
    rep.verdict = Verdict::kMacReady;
    rep.level = EvidenceLevel::kMeasured;
    rep.reasons.push_back(fmt::format("Track {} (mps) finished {} step(s) on real input.",
                                      cand->name, cand->step_wall_s.size()));
    rep.reasons.push_back(FindStop(rep.stops, StopId::kOutsideTolerance).summary);
    rep.reasons.push_back(rep.validity.summary);
    return;
  }
  auto obstacles = PredictedObstacles(ev, rep.stops);
  if (!IsMpsTrack(cand) && ev.scan && obstacles.empty()) {
    // Both directions: nothing predicted stands in the way on this experiment's path, so the
    // prediction is mac-ready, as freely as it says cuda-only; the checklist keeps saying what
    // must still be measured on a Mac.
    rep.verdict = Verdict::kMacReady;
    rep.level = EvidenceLevel::kPredicted;
    rep.reasons.push_back(PredictedReadyReason(ev, rep.stops));
    rep.reasons.push_back(
        "To be measured on a Mac before it is more than a prediction: the "
        "MPS run, and its comparison with the CUDA baseline (see the "
        "checklist).");
    return;
  }
  DecideDevOnly(ev, cand, obstacles, mps_finished, compared, valid, ops_ok, rep);
}

// What keeps parts of the work on the Linux GPU even when it does not stop the Mac track: CUDA
// extensions, a multi-GPU path, predicted CPU fallbacks; and the run the verdict was judged for.
void AddContextReasons(const Evidence& ev, Report& rep) {
  std::vector<EvidenceItem> ext;
  for (const EvidenceItem& e : FindStop(rep.stops, StopId::kBlockerOnPath).notes) {
    if (IsExtensionNote(e)) ext.push_back(e);
  }
  if (!ext.empty()) {
    rep.reasons.push_back(
        "Custom CUDA extension or CUDA-only build with no MPS build, kept on the "
        "Linux GPU: " +
        PlaceList(ext));
  }
  const RuleResult& multi = FindStop(rep.stops, StopId::kMultiGpu);
  if (multi.state != RuleState::kHolds && !multi.notes.empty()) {
    rep.reasons.push_back(
        "Multi-GPU path (NCCL / DDP) not needed by the task, kept on the Linux "
        "GPU: " +
        PlaceList(multi.notes));
  }
  if (ev.coverage) {
    std::vector<EvidenceItem> fb;
    for (const CoverageOp& op : ev.coverage->ops) {
      if (coverage::FallsBackToCpu(op.cls)) {
        fb.push_back({op.op, op.location, ""});
      }
    }
    if (!fb.empty()) {
      std::vector<std::string> names;
      names.reserve(fb.size());
      for (const auto& e : fb) names.push_back(e.text);
      rep.reasons.push_back(fmt::format("Predicted CPU fallback on MPS ({} torch {}): {}{}",
                                        ToString(ev.coverage->evidence), ev.coverage->torch,
                                        fmt::join(names, ", "),
                                        PlaceList(fb).empty() ? "" : " at " + PlaceList(fb)));
    }
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
  rep.stops = CheckStopConditions(ev);
  rep.validity = CheckValidity(ev);
  const Track* cand = CandidateTrack(ev);

  std::vector<const RuleResult*> holding;
  for (const RuleResult& r : rep.stops) {
    if (r.state == RuleState::kHolds) holding.push_back(&r);
  }
  if (rep.validity.state == ValidityState::kDiffers) {
    rep.reasons.push_back("Validity: " + rep.validity.summary);
  }
  if (!holding.empty())
    DecideCudaOnly(holding, rep);
  else
    DecideWithoutStops(ev, cand, rep);
  if (!(rep.verdict == Verdict::kMacReady && rep.level == EvidenceLevel::kMeasured)) {
    if (std::string mps = MpsOnlyEdits(ev); !mps.empty()) rep.reasons.push_back(mps);
  }
  AddContextReasons(ev, rep);
  rep.checklist = Checklist(ev, rep.stops);
  rep.plan = Plan(ev, rep.verdict, rep.stops);
  rep.next_steps = NextSteps(ev, rep.stops, rep.checklist);
  rep.evidence = std::move(evidence);
  return rep;
}

}  // namespace dt::verdict
