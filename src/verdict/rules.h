// The stop conditions of the method (step 7) and the validity check of the tracks, each a rule that
// reads the evidence and says whether it holds, at which evidence level, and why.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "verdict/evidence.h"
#include "verdict/facts.h"

namespace dt::verdict {

enum class RuleState {
  kHolds,    // The stop condition applies: the work cannot move to the Mac as it is.
  kClear,    // The evidence shows it does not apply.
  kUnknown,  // The evidence needed to decide is missing.
};

const char* ToString(RuleState s);

// What an evidence item is, for the code that groups them (never matched from the English text).
enum class ItemKind {
  kOther,
  kExtension,         // A CUDA-only build or pin, kept on the Linux GPU.
  kGuarded,           // Behind a check, with another path.
  kUnreachable,       // Not reachable from the entry scripts.
  kSuiteMember,       // Reached by only some scripts or tests of the experiment.
  kLauncher,          // A launcher or build file for multi-GPU runs.
  kMultiGpuEdit,      // Multi-GPU code hard-wired into the single-process path: an edit.
  kMultiGpuOptional,  // Multi-GPU code a finished track ran without.
  kFloat64,           // float64, which MPS lacks.
  kDtype,             // Another dtype MPS lacks for the operator.
};

// One piece of evidence behind a rule, with its place in the user's code when there is one.
struct EvidenceItem {
  EvidenceItem(std::string text_ = {}, Location location_ = {}, std::string fix_ = {},
               ItemKind kind_ = ItemKind::kOther)
      : text(std::move(text_)), location(std::move(location_)), fix(std::move(fix_)), kind(kind_) {}
  std::string text;
  Location location;
  std::string fix;  // The change that would lift it, when known ("replace X by Y").
  ItemKind kind = ItemKind::kOther;
};

// The stop conditions of the method, in the order the report shows them; ToString spells the
// stable id the documents carry (blocker-on-path, no-mps-implementation, ...).
enum class StopId {
  kBlockerOnPath,
  kNoMpsImplementation,
  kOutsideTolerance,
  kCandidateUnfinished,
  kMultiGpu,
  kCannotFinish,
};
const char* ToString(StopId id);

struct RuleResult {
  StopId id = StopId::kBlockerOnPath;
  std::string title;  // The stop condition in the articles' words.
  RuleState state = RuleState::kUnknown;
  EvidenceLevel level = EvidenceLevel::kPredicted;
  std::string summary;                 // One sentence: why it holds, is clear or unknown.
  std::vector<EvidenceItem> evidence;  // What makes it hold.
  std::vector<EvidenceItem> notes;     // Considered and not stopping (guarded, optional, unused).
  // Holds for the designated (formal) run only: development runs avoid it, so the work is dev-only,
  // not cuda-only.
  bool formal_run_only = false;
};

// A blocker finding on the reachable path, unguarded, with no other path in the code.
RuleResult CheckBlockerOnPath(const Evidence& ev, const Facts& facts);
// An operation of the task with no MPS, Metal or CPU implementation: measured, an operator that
// failed on the MPS track. The coverage prediction only notes dtypes MPS lacks (float64): an edit
// before the work runs on MPS, not a missing implementation.
RuleResult CheckNoMpsImplementation(const Evidence& ev, const Facts& facts);
// Results outside tolerance (after any CPU fallback) in a comparison of the tracks.
RuleResult CheckOutsideTolerance(const Evidence& ev, const Facts& facts);
// The candidate track started but did not finish.
RuleResult CheckCandidateUnfinished(const Evidence& ev, const Facts& facts);
// Multi-GPU communication, a cluster or GPU-memory management needed on the reachable path.
RuleResult CheckMultiGpu(const Evidence& ev, const Facts& facts);

// The Mac starts but cannot finish the computation, predicted from the traced step's cost: the step
// does not fit in any named Mac's memory (every run), or the designated run takes longer than the
// lab's limit on every named Mac (the formal run only). A run that fits and finishes is never a
// reason against the Mac, however slow.
RuleResult CheckCannotFinish(const Evidence& ev, const Facts& facts);

// All stop conditions, in the order the report shows them.
std::vector<RuleResult> CheckStopConditions(const Evidence& ev, const Facts& facts);

// Validity first: the tracks (and the baseline) must share git commit, data-slice digest and seed.
struct ValidityField {
  std::string field;                                        // git commit | data-slice digest | seed
  RuleState state = RuleState::kUnknown;                    // kHolds here means "differs".
  std::vector<std::pair<std::string, std::string>> values;  // (track or "baseline", value or "")
};

// Whether the tracks ran the same code, data and seed as the baseline (ToString: ok, differs,
// unknown, not-applicable).
enum class ValidityState { kOk, kDiffers, kUnknown, kNotApplicable };
const char* ToString(ValidityState s);

struct Validity {
  ValidityState state = ValidityState::kUnknown;
  std::string summary;
  std::vector<ValidityField> fields;
};

Validity CheckValidity(const Evidence& ev);

}  // namespace dt::verdict
