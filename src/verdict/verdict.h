// The decision of step 8: the verdict with its reasons and evidence level, the articles' checklist
// item by item, the dual-track plan and the next steps. docs/report.md states the logic in words.
#pragma once

#include <string>
#include <vector>

#include "cost/render.h"
#include "verdict/evidence.h"
#include "verdict/rules.h"

namespace dt::verdict {

// A checklist item's state; ToString spells it (done, failed, missing) in every format.
enum class ItemStatus { kMissing, kDone, kFailed };
const char* ToString(ItemStatus s);

// The articles' checklist, in order; ToString spells the stable id the documents carry.
enum class CheckId {
  kBaseline,
  kCudaPartsMarked,
  kMpsAvailable,
  kRealInputStep,
  kFallbackSeparated,
  kWithinTolerance,
  kWorkloadTimed,
  kRemoteData,
};
const char* ToString(CheckId id);

struct ChecklistItem {
  CheckId id = CheckId::kBaseline;
  std::string title;
  ItemStatus status = ItemStatus::kMissing;
  std::string evidence;
  bool user_statement = false;  // Decided by the user's own statement (a flag), not by dualtrack.
};

// Where a part of the work runs in the dual-track plan; ToString spells it (mac, linux-gpu) and
// Title names it for a reader ("Mac (MPS)").
enum class Place { kMac, kLinuxGpu };
const char* ToString(Place p);
const char* Title(Place p);

struct PlanItem {
  Place where = Place::kMac;
  std::string what;
  std::string why;
};

struct NextStep {
  int effect = 1;      // 3 lifts a stop condition, 2 removes a replacement or fallback, 1 evidence.
  std::string lifts;   // The rule or checklist item it addresses.
  std::string action;  // "Replace X by Y at file:line", "Upgrade torch to >= 2.6", ...
  Location location;   // The root cause: the line that creates the problem.
  std::vector<Location> also;  // Downstream uses and other lines of the same construct and file.
};

// At most this many next steps are listed; the rest are counted in a last "N more" step.
inline constexpr std::size_t kMaxNextSteps = 20;

// What the verdict says of an experiment, as reports spell it (ToString): it runs on the Mac,
// the Mac is for development only, or it needs the Linux GPU.
enum class Verdict { kMacReady, kDevOnly, kCudaOnly };
const char* ToString(Verdict v);

// One row of the project summary `audit` writes: the verdict of one designated experiment.
struct ExperimentRow {
  std::string name;
  std::string entry;
  std::string run;     // The run that was traced, empty when none.
  std::string source;  // declared | --entry | [tool.dualtrack] entry | picked | --run
  Verdict verdict = Verdict::kDevOnly;
  EvidenceLevel level = EvidenceLevel::kPredicted;
  std::string reason;  // The first reason.
  std::string report;  // The file with its full report.
};

struct Report {
  Verdict verdict = Verdict::kDevOnly;
  EvidenceLevel level = EvidenceLevel::kPredicted;
  // The unguarded findings on the path that `dualtrack fix --apply` rewrites: a mac-ready verdict
  // with some is "mac-ready after `dualtrack fix --apply`".
  std::size_t automatic_edits = 0;
  std::vector<std::string> reasons;
  Validity validity;
  std::vector<RuleResult> stops;
  std::vector<ChecklistItem> checklist;
  std::vector<PlanItem> plan;
  std::vector<NextStep> next_steps;
  Evidence evidence;  // What it was decided from; the renderers show it.
  // The traced step's cost and its predictions per Mac (the checklist's "target workload timed"),
  // from track `cost_track`; none without a cost table.
  std::optional<cost::CostView> cost;
  std::string cost_track;
  std::vector<ExperimentRow> experiments;  // The project's table (audit); empty for `report`.
  std::string project_page;  // The project's page this report hangs off (relative), if any.
  // The folder the report is written to: its links to source files are relative to it, so a
  // copied or shared report folder beside the project keeps working. Empty: absolute links.
  std::string report_dir;
};

// Decides from whatever evidence is present; missing evidence stays missing.
Report Decide(Evidence evidence);

}  // namespace dt::verdict
