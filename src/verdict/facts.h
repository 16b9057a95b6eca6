// The facts of one experiment, computed once before anything is decided: which track the verdict
// is about, what each unguarded finding on the experiment's path asks of the Mac once
// `dualtrack fix --apply` has made its safe edits, and what the traced run predicts for MPS. The
// stop conditions (rules.h), the decision and the narrative (verdict.h) only read them.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "cost/render.h"
#include "verdict/evidence.h"

namespace dt::verdict {

// What an unguarded finding on the path needs before the experiment runs on the Mac.
enum class Need {
  kDeviceOption,   // A "cuda" default the user overrides (`--device mps`, a config value).
  kAutomaticEdit,  // `dualtrack fix --apply` rewrites it, keeping the behaviour on CUDA.
  kMpsEdit,        // Fails only on MPS (float64, an operator without an MPS kernel).
  kManualEdit,     // A change by hand that keeps the recipe (`fix` leaves it, or only unsafely).
  kReplacement,    // A known alternative that changes speed, memory or numerics of the recipe.
  kBlocker,        // CUDA code with no replacement in the project (the blocker stop decides).
  kMultiGpu,       // Multi-GPU communication (the multi-GPU stop condition decides).
};

// How the reports name a need ("automatic edit", "manual edit", ...).
const char* ToString(Need n);

struct PathFinding {
  const Finding* finding = nullptr;
  Need need = Need::kManualEdit;
};

struct Facts {
  // The track the verdict is about: the first that ran on MPS, else the first not on CUDA.
  const Track* candidate = nullptr;
  const Track* mps = nullptr;  // `candidate` when it ran on MPS, else null.
  // Unguarded, non-portable findings on the experiment's path, in scan order, with their need.
  std::vector<PathFinding> path;
  // The Mac runs the work on MPS (not on its CPU) once the automatic edits are made: the path
  // names MPS or a framework places the model, or an automatic edit turns a CUDA placement into
  // the run-time choice (which picks MPS on a Mac). Constructs that fail only on MPS matter then.
  bool on_mps_after_edits = false;
  // Traced operators of the run predicted to run on the CPU on MPS, and those with a dtype MPS
  // lacks (float64): from the coverage prediction, when there is one.
  std::vector<const CoverageOp*> fallbacks;
  std::vector<const CoverageOp*> dtype_issues;
  // The track whose traced step is costed (the MPS track, else a CPU one, else any with a cost
  // table) and its view: the predictions for the traced machine and the named Macs, made once for
  // the stop condition, the checklist and the report.
  const Track* costed = nullptr;
  std::optional<cost::CostView> cost;

  // The predictions for the named Macs (the traced machine's own row left out).
  std::vector<cost::ChipRow> MacChips() const;
  // The findings of one need, in scan order.
  std::vector<const Finding*> With(Need n) const;
  std::size_t Count(Need n) const;
};

// Whether a finding is on the judged experiment's path: reachable from its entry; a Python
// finding of a scan without entries (reachability unknown) is taken to be on it.
bool OnPath(const Finding& f, const ScanEvidence& scan);

// Whether a finding is about multi-GPU communication (DDP, FSDP, NCCL, torchrun).
bool IsMultiGpuFinding(const Finding& f);
// An NCCL group every run creates (DT211) that `fix` gives its gloo branch: one process makes a
// world of one, which needs no communication, so the group is an edit rather than a stop.
bool IsSingleProcessEdit(const Finding& f);
// An import statement of project code that reaches a kernel (DT312 / DT314 on `from x import y`):
// the import runs none of it, so it is never what stands in the way.
bool ImportsProjectSymbol(const Finding& f);

// A "cuda" default of a command-line option (`add_argument("--device", default="cuda")`), of a
// function parameter callers pass the option to, or of a config tree (`_C.MODEL.DEVICE = "cuda"`):
// the user picks the device with a flag or a config value.
bool IsDeviceOptionDefault(const Finding& f);

Facts GatherFacts(const Evidence& ev);

}  // namespace dt::verdict
