// What the traced step costs and what it would cost elsewhere (docs/cost.md): floating-point
// operations and bytes moved per operator, from the shapes, dtypes and strides the tracer records
// in cost.jsonl; the step's memory; and a roofline prediction of the step per device profile
// (data/devices/*.json, or the traced machine's own measured peaks).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bundle/bundle.h"
#include "util/result.h"

namespace dt::cost {

// One tensor of an operator call as the tracer saw it.
struct TensorDesc {
  std::vector<std::int64_t> shape;
  std::optional<std::vector<std::int64_t>> stride;  // None for layouts without strides.
  std::string dtype;                                // torch's spelling: float32, bfloat16, int64...
};

// Elements of the tensor (1 for a scalar tensor, 0 when a dimension is 0).
double Numel(const TensorDesc& t);
// Bytes per element of a torch dtype; 0 for one this table does not know.
double ElementBytes(std::string_view dtype);
// Bytes of memory the tensor's elements span: a broadcast (stride-0) dimension is read once, a
// padded or transposed layout spans what its strides reach. Without strides, numel × element size.
double SpanBytes(const TensorDesc& t);

// One row of cost.jsonl: the calls of one operator overload with one signature in one step.
struct CostRow {
  std::int64_t step = 0;
  std::string op;  // "aten::addmm"
  std::string overload = "default";
  std::string device;
  std::vector<TensorDesc> inputs;   // Tensors among the arguments, lists flattened, in order.
  std::vector<TensorDesc> outputs;  // Tensors among the results.
  nlohmann::json scalars = nlohmann::json::array();  // bool/int/float/int-list arguments in order.
  std::int64_t count = 1;
  double time_s = 0;  // Summed wall time of the calls (on a GPU: launch time).
  std::optional<bundle::Location> location;
};

// What a family of operators does, which decides its formula (docs/cost.md lists each).
enum class OpKind {
  kMatmul,
  kConvolution,
  kAttention,
  kNormalization,
  kSoftmax,
  kReduction,
  kElementwise,
  kOptimizer,  // The optimizers' fused and _foreach_ kernels.
  kGather,     // Embedding and indexing: bytes of the rows touched, no arithmetic.
  kCopy,       // Copies, concatenation, creation: bytes only.
  kView,       // Views and metadata: neither arithmetic nor traffic.
  kUnknown,    // Not in the tables: counted as bytes only and listed, never as free.
};
const char* ToString(OpKind k);
OpKind KindOf(std::string_view op);

// One call's cost.
struct OpCost {
  double flops = 0;
  double bytes = 0;
  OpKind kind = OpKind::kUnknown;
  bool tensor_core = false;  // Matmul-like: eligible for a device's half-precision peak.
};
OpCost CostOf(const CostRow& row);

// Reads a bundle's cost.jsonl (missing file: no rows); a malformed line is a kInput error naming
// the file and line.
Result<std::vector<CostRow>> ReadCostJsonl(const std::filesystem::path& path);

// The step's memory as the tracer measured it (steps[].memory in the manifest), bytes.
struct StepMemory {
  double params = 0, grads = 0, optimizer_state = 0, activations = 0, step_peak = 0;
};

// Cost of the calls at one user location (or of one operator), summed over the step.
struct CostGroup {
  std::string key;  // "model.py:40 forward" or "aten::addmm".
  double flops = 0, bytes = 0, calls = 0;
  double predicted_s = 0;  // On the profile the group was ranked for.
};

// The traced step, costed.
struct StepCost {
  std::int64_t step = 0;
  std::string device;  // The device most of its calls ran on.
  double flops = 0, bytes = 0, calls = 0;
  std::vector<CostRow> rows;             // This step's rows.
  std::vector<std::string> unknown_ops;  // Operators costed as bytes only.
  std::optional<double> wall_s;          // Measured step time (traced).
  std::optional<double> tracer_s;        // The tracer's own share of it.
  std::optional<StepMemory> memory;
  // Σ time_s: the operators' own measured time. On the CPU, where operators run synchronously, the
  // rest of the untraced step is the framework's time outside them (Python, autograd, the data
  // loader's hand-over): measured here, and assumed the same on the Mac, whose CPU runs it too.
  std::optional<double> op_time_s;
  std::optional<double> framework_s;
  bool truncated = false;  // The tracer stopped adding rows (cost_truncated).
};

// The last captured step that has both cost rows and a step time in the manifest (a step-1-only
// run is costed from step 1, whose time includes warm-up); none when the bundle has no cost.jsonl.
Result<std::optional<StepCost>> CostOfBundle(const bundle::Bundle& bundle);
// The same from rows and a manifest already read.
std::optional<StepCost> CostOfStep(std::vector<CostRow> rows, const nlohmann::json& manifest);

// A device: its peak arithmetic rates, memory bandwidth and memory sizes.
struct DeviceProfile {
  std::string id, name, variant, vendor;
  std::vector<std::string> aliases;
  double fp32_flops = 0;
  std::optional<double> fp16_flops, bf16_flops;
  double bytes_per_s = 0;
  std::vector<double> memory_options_gb;
  double op_overhead_s = 0;  // Per-operator dispatch cost (measured on the traced machine).
  bool measured = false;     // The traced machine's own measured peaks, not a datasheet.
  std::string source;        // URL (and date) of the figures, or "measured by the tracer".
};

// All profiles under `dir` (*.json, schema dualtrack.devices/1), in file then list order.
Result<std::vector<DeviceProfile>> LoadProfiles(const std::filesystem::path& dir);
// The traced machine's own profile from the manifest's device_peak; none when it was not measured.
std::optional<DeviceProfile> MeasuredProfile(const nlohmann::json& manifest);

// A Mac as a lab names it ("M3 Max 36GB", "M2 Pro"): the chip and the memory size.
struct NamedDevice {
  std::string label;  // As the lab wrote it.
  DeviceProfile profile;
  double memory_gb = 0;  // The size named, else the chip's largest option.
};
// Resolves a name against `profiles` (case-insensitive name or alias, then an optional "<N>GB");
// a name that matches nothing is a kInput error listing the closest names.
Result<NamedDevice> ResolveDevice(const std::vector<DeviceProfile>& profiles,
                                  std::string_view name);

// macOS keeps part of unified memory for itself and other programs; a step is taken to fit when it
// needs at most this share of the Mac's memory (docs/cost.md says why; [tool.dualtrack]
// mac_memory_fraction overrides it).
inline constexpr double kDefaultMemoryFraction = 0.75;
// A designated run longer than this is one the Mac "cannot finish" ([tool.dualtrack] max_hours).
inline constexpr double kDefaultMaxHours = 72;

// The roofline prediction of a step on one device.
struct Prediction {
  std::string label;
  // Σ over calls of max(flops / peak, bytes / bandwidth) + overhead, plus framework_s.
  double step_s = 0;
  double compute_s = 0, memory_s = 0, overhead_s = 0;  // Σ of each term alone.
  double framework_s = 0;  // The traced step's measured time outside operators (StepCost).
  double operators_s = 0;  // The operators' part: step_s without framework_s.
  std::string bound;       // "compute", "memory" or "dispatch overhead": the largest of the three.
  std::vector<CostGroup> top_ops;  // The five operators with the most predicted time.
  std::optional<double> memory_needed, memory_available;  // Bytes.
  std::optional<bool> fits;
  std::optional<double> run_s;  // Designated run: steps × step time.
  std::optional<bool> finishes;
};

struct RunPlan {
  std::optional<std::int64_t> steps;  // The designated run's steps, when declared.
  double max_hours = kDefaultMaxHours;
  double memory_fraction = kDefaultMemoryFraction;
};

Prediction Predict(const StepCost& step, const DeviceProfile& device,
                   std::optional<double> memory_gb, const RunPlan& plan);

// The step's cost grouped by user location, most predicted time first (on `device`).
std::vector<CostGroup> GroupByLocation(const StepCost& step, const DeviceProfile& device);

// The error band of the method: measured / predicted step time on the calibration models
// (data/devices/calibration.json, written by bench/cost/calibrate.py).
struct Calibration {
  double low = 0, high = 0;  // Measured ÷ predicted, smallest and largest.
  std::int64_t models = 0;
  std::string date, where;
};
std::optional<Calibration> LoadCalibration(const std::filesystem::path& dir);

}  // namespace dt::cost
