// What the reports say around a decision: the checklist, the next steps and the dual-track plan,
// written from the facts, the stop conditions and the verdict (verdict.cc decides; nothing here
// changes the decision).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "verdict/facts.h"
#include "verdict/rules.h"
#include "verdict/verdict.h"

namespace dt::verdict {

// "file:line", "file" when the line is unknown, "" when the file is.
std::string Where(const Location& l);

// "a.py:3, b.cu:4 (+9 more there) and 2 more file(s)": one place per file keeps reasons short
// while naming every file up to `max`.
std::string PlaceList(const std::vector<EvidenceItem>& items, std::size_t max = 4);

// The same for findings.
std::string FindingPlaces(const std::vector<const Finding*>& findings, std::size_t max = 4);

const RuleResult& FindStop(const std::vector<RuleResult>& rules, StopId id);

// The articles' checklist, item by item.
std::vector<ChecklistItem> Checklist(const Evidence& ev, const Facts& facts,
                                     const std::vector<RuleResult>& stops);

// The command that makes the automatic edits: `dualtrack fix PROJECT --apply`.
std::string FixCommand(const Evidence& ev);

// The experiment's real command on the Mac (python train.py --device mps).
std::string MacRunCommand(const Evidence& ev);

// The next steps, grouped by root cause and ordered by effect; the automatic edits come first
// unless a stop condition holds.
std::vector<NextStep> NextSteps(const Evidence& ev, const Facts& facts, const Report& rep);

// Where each part of the work runs.
std::vector<PlanItem> Plan(const Evidence& ev, const Facts& facts, const Report& rep);

}  // namespace dt::verdict
