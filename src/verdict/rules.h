// The stop conditions of the method (step 7) and the validity check of the tracks, each a rule that
// reads the evidence and says whether it holds, at which evidence level, and why.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "verdict/evidence.h"

namespace dt::verdict {

enum class RuleState {
  kHolds,    // The stop condition applies: the work cannot move to the Mac as it is.
  kClear,    // The evidence shows it does not apply.
  kUnknown,  // The evidence needed to decide is missing.
};

const char* ToString(RuleState s);

// One piece of evidence behind a rule, with its place in the user's code when there is one.
struct EvidenceItem {
  EvidenceItem(std::string text_ = {}, Location location_ = {}, std::string fix_ = {},
               std::string kind_ = {})
      : text(std::move(text_)),
        location(std::move(location_)),
        fix(std::move(fix_)),
        kind(std::move(kind_)) {}
  std::string text;
  Location location;
  std::string fix;  // The change that would lift it, when known ("replace X by Y").
  // What the item is, for the code that groups them (never matched from the English text):
  // extension (a CUDA-only build or pin kept on the Linux GPU), guarded, unreachable,
  // multi-gpu-optional, multi-gpu-edit, launcher, float64, failed-op, fallback, tolerance,
  // exception; or empty.
  std::string kind;
};

struct RuleResult {
  std::string id;     // Stable: blocker-on-path, no-mps-implementation, outside-tolerance, ...
  std::string title;  // The stop condition in the articles' words.
  RuleState state = RuleState::kUnknown;
  EvidenceLevel level = EvidenceLevel::kPredicted;
  std::string summary;                 // One sentence: why it holds, is clear or unknown.
  std::vector<EvidenceItem> evidence;  // What makes it hold.
  std::vector<EvidenceItem> notes;     // Considered and not stopping (guarded, optional, unused).
};

// The track the verdict is about: the MPS track if there is one, else the first track that is not
// CUDA; nullptr when there is none.
const Track* CandidateTrack(const Evidence& ev);

// Whether a finding is about multi-GPU communication (DDP, FSDP, NCCL, torchrun).
bool IsMultiGpuFinding(const Finding& f);

// A blocker finding on the reachable path, unguarded, with no other path in the code.
RuleResult CheckBlockerOnPath(const Evidence& ev);
// An operation or library of the task with no MPS, Metal or CPU implementation (predicted from
// coverage; measured from a failed operator of the MPS track).
RuleResult CheckNoMpsImplementation(const Evidence& ev);
// Results outside tolerance (after any CPU fallback) in a comparison of the tracks.
RuleResult CheckOutsideTolerance(const Evidence& ev);
// The candidate track started but did not finish.
RuleResult CheckCandidateUnfinished(const Evidence& ev);
// Multi-GPU communication, a cluster or GPU-memory management needed on the reachable path.
RuleResult CheckMultiGpu(const Evidence& ev);

// All stop conditions, in the order the report shows them.
std::vector<RuleResult> CheckStopConditions(const Evidence& ev);

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
