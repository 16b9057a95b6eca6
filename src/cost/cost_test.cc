// The FLOP and byte formulas against cases computed by hand, the cost.jsonl reader, the choice of
// the step, the roofline and the names of Macs.
#include "cost/cost.h"

#include <gtest/gtest.h>

#include <fstream>

#include "util/scoped_dir.h"

namespace dt::cost {
namespace {

using nlohmann::json;

TensorDesc T(std::vector<std::int64_t> shape, std::string dtype = "float32",
             std::optional<std::vector<std::int64_t>> stride = std::nullopt) {
  return TensorDesc{std::move(shape), std::move(stride), std::move(dtype)};
}

CostRow Row(std::string op, std::vector<TensorDesc> in, std::vector<TensorDesc> out,
            json scalars = json::array()) {
  CostRow r;
  r.op = std::move(op);
  r.inputs = std::move(in);
  r.outputs = std::move(out);
  r.scalars = std::move(scalars);
  return r;
}

TEST(CostFormulas, MatmulIsTwoFlopsPerMultiplyAdd) {
  // [8,32] @ [32,64]: 8·64 outputs, each 32 multiply-adds.
  const OpCost mm = CostOf(Row("aten::mm", {T({8, 32}), T({32, 64})}, {T({8, 64})}));
  EXPECT_EQ(mm.kind, OpKind::kMatmul);
  EXPECT_DOUBLE_EQ(mm.flops, 2.0 * 8 * 64 * 32);
  EXPECT_DOUBLE_EQ(mm.bytes, (8 * 32 + 32 * 64 + 8 * 64) * 4.0);
  EXPECT_TRUE(mm.tensor_core);
  // addmm adds the bias once per output element; its operand is the second input.
  const OpCost addmm = CostOf(Row("aten::addmm", {T({64}), T({8, 32}), T({32, 64})}, {T({8, 64})}));
  EXPECT_DOUBLE_EQ(addmm.flops, 2.0 * 8 * 64 * 32 + 8 * 64);
  // bmm: per batch.
  const OpCost bmm = CostOf(Row("aten::bmm", {T({3, 5, 7}), T({3, 7, 2})}, {T({3, 5, 2})}));
  EXPECT_DOUBLE_EQ(bmm.flops, 2.0 * 3 * 5 * 2 * 7);
  // half precision moves half the bytes.
  const OpCost half = CostOf(
      Row("aten::mm", {T({8, 32}, "float16"), T({32, 64}, "float16")}, {T({8, 64}, "float16")}));
  EXPECT_DOUBLE_EQ(half.bytes, mm.bytes / 2);
}

TEST(CostFormulas, Conv2dWithStrideAndGroups) {
  // input [1,4,8,8], weight [6, 4/2, 3, 3] (groups 2), stride 2, padding 1 → output [1,6,4,4]:
  // 96 outputs × (2·3·3 = 18) multiply-adds, plus the bias once per output.
  const json scalars = json::parse("[[2,2],[1,1],[1,1],false,[0,0],2]");
  const OpCost c = CostOf(Row("aten::convolution", {T({1, 4, 8, 8}), T({6, 2, 3, 3}), T({6})},
                              {T({1, 6, 4, 4})}, scalars));
  EXPECT_EQ(c.kind, OpKind::kConvolution);
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 96 * 18 + 96);
  EXPECT_DOUBLE_EQ(c.bytes, (256 + 108 + 6 + 96) * 4.0);
  // Without a bias.
  const OpCost nb = CostOf(
      Row("aten::convolution", {T({1, 4, 8, 8}), T({6, 2, 3, 3})}, {T({1, 6, 4, 4})}, scalars));
  EXPECT_DOUBLE_EQ(nb.flops, 2.0 * 96 * 18);
  // Transposed: each of the 64 input elements meets weight[1:] = 3·2·2 outputs.
  const json transposed = json::parse("[[2,2],[0,0],[1,1],true,[0,0],1]");
  const OpCost t = CostOf(
      Row("aten::convolution", {T({1, 4, 4, 4}), T({4, 3, 2, 2})}, {T({1, 3, 8, 8})}, transposed));
  EXPECT_DOUBLE_EQ(t.flops, 2.0 * 64 * 12);
}

TEST(CostFormulas, ConvolutionBackwardCountsEachGradientAskedFor) {
  // grad_output [1,6,4,4], input [1,4,8,8], weight [6,2,3,3]: grad_input and grad_weight are one
  // forward each (2·96·18), grad_bias sums the 96 elements of grad_output.
  const json scalars = json::parse("[[6],[2,2],[1,1],[1,1],false,[0,0],2,[true,true,true]]");
  const CostRow all =
      Row("aten::convolution_backward", {T({1, 6, 4, 4}), T({1, 4, 8, 8}), T({6, 2, 3, 3})},
          {T({1, 4, 8, 8}), T({6, 2, 3, 3}), T({6})}, scalars);
  EXPECT_DOUBLE_EQ(CostOf(all).flops, 2 * (2.0 * 96 * 18) + 96);
  CostRow weight_only = all;
  weight_only.outputs = {T({6, 2, 3, 3})};
  EXPECT_DOUBLE_EQ(CostOf(weight_only).flops, 2.0 * 96 * 18);
}

TEST(CostFormulas, ScaledDotProductAttention) {
  // q [2,4,16,8], k and v [2,4,32,8]: 8 batch-heads, Q·Kᵀ and P·V of 16·32·8 multiply-adds each.
  const OpCost fwd = CostOf(Row("aten::_scaled_dot_product_flash_attention_for_cpu",
                                {T({2, 4, 16, 8}), T({2, 4, 32, 8}), T({2, 4, 32, 8})},
                                {T({2, 4, 16, 8}), T({2, 4, 16})}));
  EXPECT_EQ(fwd.kind, OpKind::kAttention);
  EXPECT_DOUBLE_EQ(fwd.flops, 2.0 * 8 * 16 * 32 * (8 + 8));
  // Backward: (grad_out, q, k, v, ...): 2.5× the forward when E = Ev.
  const OpCost bwd = CostOf(Row("aten::_scaled_dot_product_flash_attention_for_cpu_backward",
                                {T({2, 4, 16, 8}), T({2, 4, 16, 8}), T({2, 4, 32, 8}),
                                 T({2, 4, 32, 8}), T({2, 4, 16, 8}), T({2, 4, 16})},
                                {T({2, 4, 16, 8}), T({2, 4, 32, 8}), T({2, 4, 32, 8})}));
  EXPECT_DOUBLE_EQ(bwd.flops, 2.5 * fwd.flops);
}

TEST(CostFormulas, LayerNormSoftmaxAndReductions) {
  const OpCost ln = CostOf(Row("aten::native_layer_norm", {T({4, 10}), T({10}), T({10})},
                               {T({4, 10}), T({4, 1}), T({4, 1})}, json::parse("[[10], 1e-05]")));
  EXPECT_EQ(ln.kind, OpKind::kNormalization);
  EXPECT_DOUBLE_EQ(ln.flops, 8.0 * 40);
  EXPECT_DOUBLE_EQ(ln.bytes, (40 + 10 + 10 + 40 + 4 + 4) * 4.0);
  const OpCost lnb = CostOf(Row("aten::native_layer_norm_backward",
                                {T({4, 10}), T({4, 10}), T({4, 1}), T({4, 1}), T({10}), T({10})},
                                {T({4, 10}), T({10}), T({10})}));
  EXPECT_DOUBLE_EQ(lnb.flops, 16.0 * 40);
  EXPECT_DOUBLE_EQ(CostOf(Row("aten::_softmax", {T({4, 10})}, {T({4, 10})})).flops, 5.0 * 40);
  EXPECT_DOUBLE_EQ(CostOf(Row("aten::sum", {T({4, 10})}, {T({})})).flops, 40);
}

TEST(CostFormulas, EmbeddingReadsOnlyTheRowsItGathers) {
  // weight [1000,16], indices [4,5] int64 → [4,5,16]: the indices, and 20 rows read and written.
  const OpCost e =
      CostOf(Row("aten::embedding", {T({1000, 16}), T({4, 5}, "int64")}, {T({4, 5, 16})}));
  EXPECT_EQ(e.kind, OpKind::kGather);
  EXPECT_DOUBLE_EQ(e.flops, 0);
  EXPECT_DOUBLE_EQ(e.bytes, 20 * 8.0 + 2 * 320 * 4.0);
}

TEST(CostFormulas, ElementwiseWithBroadcasting) {
  // [8,64] + [64]: one add per output element; the bias is read once, not 8 times.
  const OpCost add = CostOf(Row("aten::add", {T({8, 64}), T({64})}, {T({8, 64})}));
  EXPECT_EQ(add.kind, OpKind::kElementwise);
  EXPECT_DOUBLE_EQ(add.flops, 512);
  EXPECT_DOUBLE_EQ(add.bytes, (512 + 64 + 512) * 4.0);
  // The same broadcast as an expanded view (stride 0) spans only its distinct elements.
  const OpCost expanded =
      CostOf(Row("aten::mul", {T({8, 64}), T({8, 64}, "float32", {{0, 1}})}, {T({8, 64})}));
  EXPECT_DOUBLE_EQ(expanded.bytes, (512 + 64 + 512) * 4.0);
  // In-place variants share the formula.
  EXPECT_EQ(KindOf("aten::add_"), OpKind::kElementwise);
  EXPECT_EQ(KindOf("aten::_foreach_add_"), OpKind::kOptimizer);
  EXPECT_EQ(KindOf("aten::view"), OpKind::kView);
  EXPECT_DOUBLE_EQ(CostOf(Row("aten::view", {T({8, 64})}, {T({512})})).bytes, 0);
}

TEST(CostFormulas, UnknownOperatorIsBytesOnlyAndListed) {
  CostRow r = Row("mylib::fused_thing", {T({100})}, {T({100})});
  r.step = 1;
  const OpCost c = CostOf(r);
  EXPECT_EQ(c.kind, OpKind::kUnknown);
  EXPECT_DOUBLE_EQ(c.flops, 0);
  EXPECT_DOUBLE_EQ(c.bytes, 800);  // Never silently free.
  const auto step = CostOfStep({r}, json::object());
  ASSERT_TRUE(step.has_value());
  EXPECT_EQ(step->unknown_ops, std::vector<std::string>{"mylib::fused_thing"});
  // An unknown dtype still costs 4 bytes per element.
  EXPECT_DOUBLE_EQ(SpanBytes(T({10}, "weird8")), 40);
}

CostRow Stepped(std::int64_t step, std::string op, std::int64_t count) {
  CostRow r = Row(std::move(op), {T({256, 256}), T({256, 256})}, {T({256, 256})});
  r.step = step;
  r.count = count;
  return r;
}

TEST(CostStep, TheLastTimedStepIsCosted) {
  const json manifest = json::parse(R"({"steps": [
      {"step": 1, "wall_s": 0.9, "tracer_s": 0.1},
      {"step": 2, "wall_s": 0.5, "tracer_s": 0.05,
       "memory": {"params": 10, "grads": 10, "optimizer_state": 20, "activations": 5,
                  "step_peak": 45}}]})");
  const auto step = CostOfStep(
      {Stepped(1, "aten::mm", 9), Stepped(2, "aten::mm", 2), Stepped(3, "aten::mm", 1)}, manifest);
  ASSERT_TRUE(step.has_value());
  EXPECT_EQ(step->step, 2);  // Step 3 has no time (the run stopped in it).
  EXPECT_DOUBLE_EQ(step->calls, 2);
  EXPECT_DOUBLE_EQ(step->flops, 2 * 2.0 * 256 * 256 * 256);
  ASSERT_TRUE(step->wall_s && step->tracer_s && step->memory);
  EXPECT_DOUBLE_EQ(*step->wall_s, 0.5);
  EXPECT_DOUBLE_EQ(step->memory->step_peak, 45);
}

DeviceProfile Profile(double flops, double bw, std::vector<double> memory = {16}) {
  DeviceProfile d;
  d.id = d.name = "test";
  d.fp32_flops = flops;
  d.bytes_per_s = bw;
  d.memory_options_gb = std::move(memory);
  return d;
}

TEST(CostPredict, RooflineTakesTheSlowerOfArithmeticAndTraffic) {
  StepCost step;
  step.rows = {Stepped(1, "aten::mm", 1), Stepped(1, "aten::add", 4)};
  step.rows[1].inputs = {T({1000}), T({1000})};
  step.rows[1].outputs = {T({1000})};
  // mm: 2·256³ = 33,554,432 FLOPs, 786,432 bytes; add: 1000 FLOPs, 12,000 bytes each.
  const DeviceProfile d = Profile(1e9, 1e8);
  const Prediction p = Predict(step, d, std::nullopt, {});
  const double mm = std::max(33554432 / 1e9, 786432 / 1e8);
  const double add = std::max(1000 / 1e9, 12000 / 1e8);
  EXPECT_NEAR(p.step_s, mm + 4 * add, 1e-12);
  EXPECT_EQ(p.bound, "compute");
  ASSERT_EQ(p.top_ops.size(), 2u);
  EXPECT_EQ(p.top_ops.front().key, "aten::mm");
  // A per-operator overhead that dwarfs both is what bounds the step.
  DeviceProfile slow = d;
  slow.op_overhead_s = 1;
  EXPECT_EQ(Predict(step, slow, std::nullopt, {}).bound, "dispatch overhead");
}

TEST(CostPredict, MemoryFitAndDesignatedRun) {
  StepCost step;
  step.rows = {Stepped(1, "aten::mm", 1)};
  step.memory = StepMemory{1e9, 1e9, 2e9, 10e9, 14e9};
  const DeviceProfile d = Profile(1e12, 1e11);
  RunPlan plan;
  const Prediction small = Predict(step, d, 16.0, plan);  // 16 GiB × 0.75 = 12 GiB < 14 GB.
  ASSERT_TRUE(small.fits.has_value());
  EXPECT_FALSE(*small.fits);
  EXPECT_TRUE(*Predict(step, d, 36.0, plan).fits);
  plan.steps = 1'000'000'000;
  plan.max_hours = 1;
  const Prediction run = Predict(step, d, 36.0, plan);
  ASSERT_TRUE(run.finishes.has_value());
  EXPECT_FALSE(*run.finishes);
  EXPECT_NEAR(*run.run_s, 1e9 * run.step_s, 1e-3);
}

TEST(CostProfiles, MacNamesPickTheVariantSoldWithTheMemory) {
  DeviceProfile full = Profile(14e12, 4e11, {48, 64, 128});
  full.id = "m3-max-40";
  full.name = "M3 Max";
  full.variant = "40-core GPU";
  DeviceProfile cut = Profile(10e12, 3e11, {36, 96});
  cut.id = "m3-max-30";
  cut.name = "M3 Max";
  cut.variant = "30-core GPU";
  const std::vector<DeviceProfile> all = {full, cut};
  auto a = ResolveDevice(all, "M3 Max 36GB");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->profile.id, "m3-max-30");
  EXPECT_DOUBLE_EQ(a->memory_gb, 36);
  auto b = ResolveDevice(all, "m3  max");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->profile.id, "m3-max-40");
  EXPECT_DOUBLE_EQ(b->memory_gb, 128);
  auto c = ResolveDevice(all, "M3 Max 40-core GPU 64 GB");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->profile.id, "m3-max-40");
  auto bad = ResolveDevice(all, "M3 Mux 36GB");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("did you mean 'M3 Max'"), std::string::npos);
}

TEST(CostProfiles, MalformedProfileFilesNameTheFileAndTheDevice) {
  auto dir = TempDir::Make("dualtrack_profiles_test_");
  ASSERT_TRUE(dir.ok());
  const auto path = dir->path() / "lab.json";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{", "lab.json"},
      {R"({"schema": "other/1", "devices": []})", "schema dualtrack.devices/1"},
      {R"({"schema": "dualtrack.devices/1", "devices": [{"id": "x", "name": "X",
          "fp32_flops": 1e12, "memory_bytes_per_s": 1e11}]})",
       "no source"},
      {R"({"schema": "dualtrack.devices/1", "devices": [{"id": "x", "name": "X",
          "fp32_flops": -1, "memory_bytes_per_s": 1e11, "sources": [{"url": "u"}]}]})",
       "device 1: 'fp32_flops'"},
  };
  for (const auto& [text, expected] : cases) {
    std::ofstream(path) << text;
    auto profiles = LoadProfiles(dir->path());
    ASSERT_FALSE(profiles.ok()) << text;
    EXPECT_EQ(profiles.error().code, ErrorCode::kInput);
    const std::string all = profiles.error().message + " " + profiles.error().file;
    EXPECT_NE(all.find(expected), std::string::npos) << all;
  }
}

TEST(CostReader, MalformedLinesNameTheFileAndLine) {
  auto dir = TempDir::Make("dualtrack_cost_test_");
  ASSERT_TRUE(dir.ok());
  const auto path = dir->path() / "cost.jsonl";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json", "cost.jsonl"},
      {R"({"op": "aten::mm"})", "'step'"},
      {R"({"step": 1, "op": "aten::mm", "inputs": [{"shape": [-1]}]})", "negative"},
      {R"({"step": 1, "op": "aten::mm", "inputs": [{"shape": [2, 2], "stride": [1]}]})",
       "differ in length"},
      {R"({"step": 1, "op": "aten::mm", "count": -3})", "'count'"},
      {R"({"step": 1, "op": "aten::mm", "time_s": "fast"})", "'time_s'"},
      {R"({"step": 1, "op": "aten::mm", "inputs": {"shape": [1]}})", "list of tensors"},
  };
  for (const auto& [line, expected] : cases) {
    std::ofstream(path) << R"({"step": 1, "op": "aten::mm"})"
                        << "\n"
                        << line << "\n";
    auto rows = ReadCostJsonl(path);
    ASSERT_FALSE(rows.ok()) << line;
    EXPECT_EQ(rows.error().line, 2) << line;
    const std::string text = rows.error().message + rows.error().file;
    EXPECT_NE(text.find(expected), std::string::npos) << line << ": " << text;
  }
  std::ofstream(path) << R"({"step": 2, "op": "aten::add", "overload": "Tensor", "count": 3,)"
                      << R"( "inputs": [{"shape": [4], "dtype": "float32", "stride": [1]}]})"
                      << "\n";
  auto rows = ReadCostJsonl(path);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].overload, "Tensor");
  EXPECT_EQ((*rows)[0].count, 3);
  EXPECT_FALSE(ReadCostJsonl(dir->path() / "absent.jsonl").value().size() > 0);
}

}  // namespace
}  // namespace dt::cost
