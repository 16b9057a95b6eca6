// The traced step's cost and its predictions per device, as `show`, `coverage`, `report` and
// `audit` print them (text, JSON; the report renders the same view as tables and a chart).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cost/cost.h"

namespace dt::cost {

// One device's prediction in a view: the traced machine's own (measured peaks) or a named Mac.
struct ChipRow {
  std::string label;
  bool measured_profile = false;
  Prediction prediction;
  std::string source;  // Where the device's figures come from.
};

struct CostView {
  StepCost step;                       // Totals (its rows are dropped once summed).
  std::vector<CostGroup> by_location;  // Most predicted time first, at most 20.
  std::string ranked_on;               // The device by_location's times are for.
  std::vector<ChipRow> chips;          // The traced machine first (when measured), then the Macs.
  RunPlan plan;
  std::optional<Calibration> calibration;
};

// The Macs a lab names when it names none: a small, a middle and a large one.
const std::vector<std::string>& DefaultMacs();
// Resolves lab names against the shipped profiles (DefaultMacs() when `names` is empty).
Result<std::vector<NamedDevice>> ResolveMacs(const std::vector<std::string>& names);
// The shipped calibration (data/devices/calibration.json), when there is one.
std::optional<Calibration> ShippedCalibration();

std::vector<ChipRow> PredictAll(const StepCost& step, const std::optional<DeviceProfile>& measured,
                                const std::vector<NamedDevice>& macs, const RunPlan& plan);
CostView MakeView(StepCost step, const std::optional<DeviceProfile>& measured,
                  const std::vector<NamedDevice>& macs, const RunPlan& plan,
                  std::optional<Calibration> calibration);

// The view of a bundle directory's cost.jsonl (its manifest gives the step times, memory and
// measured peaks); none when the bundle has no cost table (an older tracer, a hand-written trace).
Result<std::optional<CostView>> CostViewOf(const std::filesystem::path& bundle_dir,
                                           const std::vector<std::string>& macs,
                                           const RunPlan& plan = {});
// The same for a bundle already loaded (its manifest is not read again).
Result<std::optional<CostView>> CostViewOf(const bundle::Bundle& bundle,
                                           const std::vector<std::string>& macs,
                                           const RunPlan& plan = {});

nlohmann::json CostJson(const CostView& v);
std::string CostText(const CostView& v, std::size_t top);

// Readable units: "1.23 GFLOP", "45.6 MB", "12.3 ms", "3.4 h", "7.5 GB" (binary gigabytes).
std::string Flops(double v);
std::string Bytes(double v);
std::string GiB(double v);
std::string Seconds(double s);
// The step time's range under the calibration band: the operators' part scaled by the band's
// ends, the framework's measured part as it is; none without a calibration.
std::optional<std::pair<double, double>> BandOf(const CostView& v, const Prediction& p);
// "0.12 s (0.08–0.20 s)" with the calibration band, else the time alone.
std::string StepTimeWithBand(const CostView& v, const Prediction& p);
// "fits: 3.1 GB of 12.0 GB usable" / "DOES NOT FIT: …"; empty without a memory size.
std::string MemoryFit(const Prediction& p);
// The designated run's predicted time, "(over the 72 h limit)" when it is; empty when undeclared.
std::string RunTime(const Prediction& p, const RunPlan& plan);
// The measured step without the tracer's own work.
std::optional<double> UntracedStep(const StepCost& step);

}  // namespace dt::cost
