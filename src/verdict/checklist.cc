#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (fmt >= 11 keeps it here)

#include <algorithm>

#include "cost/render.h"
#include "verdict/narrative.h"

namespace dt::verdict {

namespace {

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

// The scan: how many findings need a change, and who makes it (`dualtrack fix`, a hand edit, a
// replacement), on the experiment's path.
ChecklistItem CudaPartsItem(const Evidence& ev, const Facts& facts) {
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
        "{} finding(s) in {} file(s) scanned; {} need a change, {} with a suggested alternative",
        ev.scan->findings.size(), ev.scan->files_scanned, needing, with_alt);
    if (!facts.path.empty()) {
      c.evidence += fmt::format(
          "; on the experiment's path: {} automatic edit(s) (`dualtrack fix --apply`), {} device "
          "option(s), {} edit(s) by hand, {} MPS-only edit(s), {} replacement(s), {} blocker(s)",
          facts.Count(Need::kAutomaticEdit), facts.Count(Need::kDeviceOption),
          facts.Count(Need::kManualEdit), facts.Count(Need::kMpsEdit),
          facts.Count(Need::kReplacement),
          facts.Count(Need::kBlocker) + facts.Count(Need::kMultiGpu));
    }
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
ChecklistItem WorkloadTimedItem(const Evidence& ev, const Facts& facts) {
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
  // Beside the measurements, the prediction for the Macs the lab names (the report's "Time and
  // memory on a Mac" has the table and the chart).
  if (const Track* t = facts.costed; t != nullptr && !ev.macs.empty()) {
    std::vector<std::string> chips;
    for (const cost::ChipRow& row : facts.MacChips()) {
      const cost::Prediction& p = row.prediction;
      std::string text = fmt::format("{} {} per step", row.label, cost::Seconds(p.step_s));
      if (p.fits) text += *p.fits ? ", fits" : ", does not fit in memory";
      if (p.finishes) text += *p.finishes ? "" : ", designated run over the limit";
      chips.push_back(std::move(text));
    }
    c.evidence +=
        fmt::format("; predicted from track {}'s traced step: {}", t->name, fmt::join(chips, "; "));
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

std::vector<ChecklistItem> Checklist(const Evidence& ev, const Facts& facts,
                                     const std::vector<RuleResult>& stops) {
  const Track* mps = facts.mps;
  return {BaselineItem(ev),
          CudaPartsItem(ev, facts),
          MpsAvailableItem(ev),
          RealInputStepItem(ev, stops, mps),
          FallbackItem(ev, mps),
          ToleranceItem(ev, stops),
          WorkloadTimedItem(ev, facts),
          RemoteDataItem(ev)};
}

}  // namespace dt::verdict
