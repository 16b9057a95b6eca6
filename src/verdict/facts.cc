#include "verdict/facts.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "util/strings.h"

namespace dt::verdict {

namespace {

bool IsPythonFile(const std::string& file) {
  // setup.py is a build file: the scan never computes its reachability.
  if (file == "setup.py" || file.ends_with("/setup.py")) return false;
  return file.size() > 3 && (file.ends_with(".py") || file.ends_with(".ipynb"));
}

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

// A blocker that only some members of a suite reach (a folder of scripts or tests given as the
// entry): they are deselected on the Mac, a replacement of the suite rather than a stop.
bool SuiteMember(const Finding& f, const ScanEvidence& scan) {
  return scan.entries.size() > 1 && f.reached_by &&
         *f.reached_by < static_cast<std::int64_t>(scan.entries.size());
}

Need NeedOf(const Finding& f, const ScanEvidence& scan) {
  if (IsMultiGpuFinding(f)) {
    // `backend="nccl"` or DDP device ids hard-wired into a path that also runs as one process is
    // an edit, and so is an NCCL group that `fix` rewrites (a formal run on several GPUs is scale,
    // not a stop). A construct rated replace or blocker otherwise is multi-GPU by design.
    if (IsSingleProcessEdit(f)) return Need::kAutomaticEdit;
    if (f.severity == scan::Severity::kReplace || f.severity == scan::Severity::kBlocker)
      return Need::kMultiGpu;
    return f.fix == FixKind::kSafe ? Need::kAutomaticEdit : Need::kManualEdit;
  }
  // Runs on the Mac's CPU as written (float64, an operator without an MPS kernel, a call into an
  // extension that also has a CPU build): an edit only once the work runs on MPS.
  if (f.mps_only && f.severity != scan::Severity::kBlocker) return Need::kMpsEdit;
  // The import of a compiled extension whose names the module only uses inside functions: `fix`
  // makes it lazy (try/except ImportError), and each use on the path is a finding of its own.
  if (f.code == "DT305" && f.in_import && f.fix == FixKind::kSafe) return Need::kAutomaticEdit;
  if (f.severity == scan::Severity::kBlocker)
    return SuiteMember(f, scan) ? Need::kReplacement : Need::kBlocker;
  if (f.severity == scan::Severity::kReplace) return Need::kReplacement;
  if (IsDeviceOptionDefault(f)) return Need::kDeviceOption;
  return f.fix == FixKind::kSafe ? Need::kAutomaticEdit : Need::kManualEdit;
}

}  // namespace

const char* ToString(Need n) {
  switch (n) {
    case Need::kDeviceOption:
      return "device option";
    case Need::kAutomaticEdit:
      return "automatic edit";
    case Need::kMpsEdit:
      return "MPS edit";
    case Need::kManualEdit:
      return "manual edit";
    case Need::kReplacement:
      return "replacement";
    case Need::kBlocker:
      return "blocker";
    case Need::kMultiGpu:
      return "multi-GPU";
  }
  return "manual edit";
}

std::vector<const Finding*> Facts::With(Need n) const {
  std::vector<const Finding*> out;
  for (const PathFinding& p : path) {
    if (p.need == n) out.push_back(p.finding);
  }
  return out;
}

std::size_t Facts::Count(Need n) const {
  return static_cast<std::size_t>(
      std::count_if(path.begin(), path.end(), [n](const PathFinding& p) { return p.need == n; }));
}

// `from corr import AlternateCorrBlock`: importing the project's own code that reaches a kernel
// runs nothing of the kernel. Where the import itself would fail (the module imports the compiled
// extension unguarded), that import is a finding of its own (DT305); the calls are DT312.
bool ImportsProjectSymbol(const Finding& f) {
  return (f.code == "DT312" || f.code == "DT314") && f.in_import;
}

bool OnPath(const Finding& f, const ScanEvidence& scan) {
  if (f.reachable) return *f.reachable;
  return scan.entries.empty() && IsPythonFile(f.file);
}

bool IsMultiGpuFinding(const Finding& f) {
  const std::string text = Lower(f.code + " " + f.message + " " + f.snippet);
  for (const char* word : {"nccl", "distributeddataparallel", "fullyshardeddataparallel", "fsdp",
                           "torchrun", "nproc_per_node", "init_process_group", "ddp"}) {
    if (text.find(word) != std::string::npos) {
      // The portable backend runs everywhere PyTorch does; it is not a reason to stay on CUDA.
      if (text.find("gloo") != std::string::npos && text.find("nccl") == std::string::npos) {
        return false;
      }
      return true;
    }
  }
  return false;
}

bool IsSingleProcessEdit(const Finding& f) { return f.code == "DT211" && f.fix == FixKind::kSafe; }

bool IsDeviceOptionDefault(const Finding& f) {
  if (f.cls != scan::FindingClass::kDevice) return false;
  // The scan knows a setting's default (an option, a configurator's module setting); a parameter
  // default or a config tree is read from the statement.
  return f.option_default || f.snippet.find("add_argument") != std::string::npos ||
         f.snippet.rfind("def ", 0) == 0 || f.snippet.rfind("async def ", 0) == 0 ||
         IsConfigTreeDefault(f.snippet);
}

Facts GatherFacts(const Evidence& ev) {
  Facts facts;
  for (const Track& t : ev.tracks) {
    if (t.IsMps()) {
      facts.candidate = facts.mps = &t;
      break;
    }
  }
  if (facts.candidate == nullptr) {
    for (const Track& t : ev.tracks) {
      if (!t.IsCuda()) {
        facts.candidate = &t;
        break;
      }
    }
  }
  bool places_on_device = false;
  if (ev.scan) {
    for (const Finding& f : ev.scan->findings) {
      if (f.severity == scan::Severity::kPortable || f.guarded.value_or(false)) continue;
      if (!OnPath(f, *ev.scan) || f.fix == FixKind::kNotNeeded || ImportsProjectSymbol(f)) continue;
      const Need need = NeedOf(f, *ev.scan);
      facts.path.push_back({&f, need});
      // A placement rewritten to the run-time choice, or a device option the user sets to mps.
      places_on_device |=
          (need == Need::kAutomaticEdit && f.placement) || need == Need::kDeviceOption;
    }
  }
  const bool path_names_mps =
      ev.scan && ev.scan->path && (ev.scan->path->mentions_mps || ev.scan->path->framework_device);
  facts.on_mps_after_edits = facts.mps != nullptr || path_names_mps || places_on_device;
  if (ev.coverage) {
    for (const CoverageOp& op : ev.coverage->ops) {
      if (coverage::FallsBackToCpu(op.cls)) facts.fallbacks.push_back(&op);
      if (!op.dtype_issues.empty()) facts.dtype_issues.push_back(&op);
    }
  }
  auto rank = [](const Track& t) { return t.IsMps() ? 0 : t.device == "cpu" ? 1 : 2; };
  for (const Track& t : ev.tracks) {
    if (t.cost && (facts.costed == nullptr || rank(t) < rank(*facts.costed))) facts.costed = &t;
  }
  if (facts.costed != nullptr) {
    facts.cost = cost::MakeView(*facts.costed->cost, facts.costed->measured_profile, ev.macs,
                                ev.run_plan, ev.calibration);
  }
  return facts;
}

std::vector<cost::ChipRow> Facts::MacChips() const {
  std::vector<cost::ChipRow> rows;
  if (!cost) return rows;
  for (const cost::ChipRow& r : cost->chips) {
    if (!r.measured_profile) rows.push_back(r);
  }
  return rows;
}

}  // namespace dt::verdict
