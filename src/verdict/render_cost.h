// The report's "Time and memory on a Mac" section (render_cost.cc), shared by the three formats.
#pragma once

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cost/render.h"
#include "verdict/render.h"
#include "verdict/verdict.h"

namespace dt::verdict {

// A track's measured step: the costed step without the tracer's own work where the trace says,
// else its last step's wall time.
struct MeasuredStep {
  std::string track, device;
  double seconds = 0;
};
std::vector<MeasuredStep> MeasuredSteps(const Evidence& ev);

// Step time per device as horizontal bars on a log axis, measured tracks marked; "" when there
// is nothing to draw.
std::string StepTimeChartSvg(const cost::CostView& v, const std::vector<MeasuredStep>& measured);

nlohmann::json CostReportJson(const Report& r);  // null when the report has no cost view
void MarkdownCost(std::ostringstream& os, const Report& r);
void HtmlCost(std::ostringstream& os, const Report& r);

}  // namespace dt::verdict
