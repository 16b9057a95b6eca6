// Reading PyTorch's native_functions.yaml and classifying every operator overload for the MPS
// backend: does it have an MPS kernel, decompose, fall back to the CPU, or always run on the CPU?
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "util/result.h"

namespace dt::coverage {

// One `KEY[, KEY...]: kernel` line of a `dispatch:` section.
struct DispatchEntry {
  std::vector<std::string> keys;
  std::string kernel;
};

// The fields of one `- func:` entry that decide where the operator runs.
struct NativeFunction {
  std::string name;       // "add.Tensor" (the schema name with its overload; no "aten::").
  std::int64_t line = 0;  // 1-based line of `- func:`.
  bool has_dispatch = false;
  std::vector<DispatchEntry> dispatch;
  std::string structured_delegate;   // "add.out" or empty.
  std::vector<std::string> autogen;  // Overloads generated from this one ("foo.out").
};

// Parses native_functions.yaml. `file` names it in errors ("file:line: message").
Result<std::vector<NativeFunction>> ParseNativeFunctions(std::string_view text,
                                                         const std::string& file);

// Where an overload runs on MPS. The letters are the ones the shipped tables store.
enum class OpClass : char {
  kNative = 'N',     // An MPS kernel.
  kExplicit = 'E',   // A CompositeExplicitAutograd kernel: one kernel for every backend.
  kComposite = 'C',  // CompositeImplicitAutograd: decomposes into other operators.
  kCpuFallback =
      'F',  // No MPS kernel: errors, or runs on the CPU with PYTORCH_ENABLE_MPS_FALLBACK=1.
  kAlwaysCpu = 'A',  // Registered to the CPU fallback in MPSFallback.mm: always runs on the CPU.
  kAbsent = '-',     // Not an operator of that release.
};

// "native", "composite", "cpu-fallback", "always-cpu" or "unknown" (the JSON class names; an
// explicit-composite kernel is reported as "native").
std::string_view OpClassName(OpClass c);
// The dispatch key (or source) that decided the class, for the report: "MPS",
// "CompositeExplicitAutograd"...
std::string_view OpClassBasis(OpClass c);
// The class a JSON class name stands for ("native" reads back as kNative); nullopt for others.
std::optional<OpClass> ParseOpClassName(std::string_view name);
bool IsValidClassLetter(char c);
// Runs on MPS without falling back (native, explicit composite or composite).
inline bool RunsOnMps(OpClass c) {
  return c == OpClass::kNative || c == OpClass::kExplicit || c == OpClass::kComposite;
}
// Runs on the CPU instead (with PYTORCH_ENABLE_MPS_FALLBACK=1, or always).
inline bool FallsBackToCpu(OpClass c) {
  return c == OpClass::kCpuFallback || c == OpClass::kAlwaysCpu;
}

// Lists from PyTorch's sources that native_functions.yaml does not show.
struct SourceLists {
  std::vector<std::string> always_cpu;       // MPSFallback.mm `m.impl(NAME, mps_fallback)`.
  std::vector<std::string> hand_registered;  // `TORCH_LIBRARY_IMPL(aten, MPS, m)` outside the YAML.
};

// Classifies every overload (structured delegates resolved, autogen overloads included).
// Names of the always-CPU list that have an MPS kernel in the YAML are dropped: PyTorch removes
// them from MPSFallback.mm when it adds the kernel, so the YAML of the release is the better
// witness.
std::unordered_map<std::string, OpClass> ClassifyOperators(const std::vector<NativeFunction>& fns,
                                                           const SourceLists& sources);

}  // namespace dt::coverage
