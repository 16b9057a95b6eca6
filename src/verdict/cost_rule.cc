// The stop condition "the Mac starts but cannot finish the computation", judged from the traced
// step's predicted time and memory on the Macs the lab names (docs/cost.md), never from the kind of
// model.
#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join

#include <algorithm>

#include "cost/render.h"
#include "verdict/rules.h"

namespace dt::verdict {

namespace {

std::string ChipText(const cost::ChipRow& c, const cost::RunPlan& plan) {
  std::string text = fmt::format("{}: {} per step", c.label, cost::Seconds(c.prediction.step_s));
  if (const std::string fit = cost::MemoryFit(c.prediction); !fit.empty()) text += "; " + fit;
  if (const std::string run = cost::RunTime(c.prediction, plan); !run.empty()) {
    text += fmt::format("; {} steps: {}", *plan.steps, run);
  }
  return text;
}

}  // namespace

RuleResult CheckCannotFinish(const Evidence& ev, const Facts& facts) {
  RuleResult r;
  r.id = StopId::kCannotFinish;
  r.title = "The Mac starts but cannot finish the computation";
  const Track* t = facts.costed;
  if (t == nullptr || ev.macs.empty()) {
    r.summary =
        "No traced step with a cost table (dualtrack run records one), so neither memory nor time "
        "on a Mac is known.";
    return r;
  }
  const std::vector<cost::ChipRow> chips = facts.MacChips();
  std::vector<const cost::ChipRow*> no_room, too_slow, fine;
  for (const cost::ChipRow& c : chips) {
    if (c.prediction.fits == std::optional<bool>(false)) {
      no_room.push_back(&c);
    } else if (c.prediction.finishes == std::optional<bool>(false)) {
      too_slow.push_back(&c);
    } else {
      fine.push_back(&c);
    }
  }
  for (const cost::ChipRow& c : chips) {
    EvidenceItem item(ChipText(c, ev.run_plan));
    (std::find(fine.begin(), fine.end(), &c) == fine.end() ? r.evidence : r.notes)
        .push_back(std::move(item));
  }
  const std::string from =
      fmt::format("predicted from track {}'s traced step {}", t->name, t->cost->step);
  if (fine.empty() && too_slow.empty()) {
    r.state = RuleState::kHolds;
    std::vector<std::string> named;
    for (const cost::NamedDevice& m : ev.macs) named.push_back(m.label);
    r.summary =
        fmt::format("The step needs {} and none of the named Macs has room for it ({}; {}).",
                    cost::GiB(no_room.front()->prediction.memory_needed.value_or(0)),
                    fmt::join(named, ", "), from);
    return r;
  }
  if (fine.empty()) {
    const auto* fastest = *std::min_element(too_slow.begin(), too_slow.end(), [](auto* a, auto* b) {
      return a->prediction.step_s < b->prediction.step_s;
    });
    r.state = RuleState::kHolds;
    r.formal_run_only = true;
    r.summary = fmt::format(
        "The designated run ({} steps) would take {} even on {}, over the {:g} h limit; "
        "development runs of a few steps are not affected ({}).",
        ev.run_plan.steps.value_or(0), cost::Seconds(fastest->prediction.run_s.value_or(0)),
        fastest->label, ev.run_plan.max_hours, from);
    return r;
  }
  r.state = RuleState::kClear;
  std::vector<std::string> ok;
  ok.reserve(fine.size());
  for (const cost::ChipRow* c : fine) ok.push_back(c->label);
  const bool memory_known = t->cost->memory.has_value();
  r.summary = fmt::format(
      "{} on {}{} ({}).",
      memory_known ? "The step fits in memory" : "The step's memory was not recorded; its time is",
      fmt::join(ok, ", "),
      ev.run_plan.steps ? fmt::format(" and the designated run of {} steps finishes within {:g} h",
                                      *ev.run_plan.steps, ev.run_plan.max_hours)
                        : "",
      from);
  return r;
}

}  // namespace dt::verdict
