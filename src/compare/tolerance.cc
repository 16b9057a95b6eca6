// Tolerances: per-dtype defaults (torch.testing.assert_close's) and the TOML override file.
#include <toml++/toml.h>

#include <cmath>

#include "compare/compare.h"
#include "util/strings.h"

namespace dt::compare {

std::pair<double, double> DefaultTolerance(DType t) {
  switch (t) {
    case DType::kF64:
      return {1e-7, 1e-7};
    case DType::kF32:
      return {kFloat32Rtol, kFloat32Atol};
    case DType::kF16:
      return {1e-3, 1e-5};
    case DType::kBF16:
      return {1.6e-2, 1e-5};
    case DType::kC64:  // assert_close's complex entries are those of their components.
      return {kFloat32Rtol, kFloat32Atol};
    case DType::kC128:
      return {1e-7, 1e-7};
    // assert_close has no entry for floats of 8 bits or fewer; half an ULP at 1.0 of each format,
    // 2^-(mantissa bits + 1).
    case DType::kF8E4M3:
    case DType::kF8E4M3FNUZ:
    case DType::kF8E5M2:
    case DType::kF8E5M2FNUZ:
    case DType::kF8E8M0:
    case DType::kF6E2M3:
    case DType::kF6E3M2:
    case DType::kF4:
      return {std::ldexp(1.0, -(MantissaBits(t) + 1)), 1e-5};
    default:
      return {0.0, 0.0};  // Integers and bool compare exactly.
  }
}

std::string_view OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kPass:
      return "pass";
    case Outcome::kFail:
      return "fail";
    case Outcome::kMissingA:
      return "missing_a";
    case Outcome::kMissingB:
      return "missing_b";
    case Outcome::kShapeMismatch:
      return "shape_mismatch";
    case Outcome::kDtypeMismatch:
      return "dtype_mismatch";
  }
  return "fail";
}

std::optional<Outcome> ParseOutcomeName(std::string_view name) {
  for (Outcome o : {Outcome::kPass, Outcome::kFail, Outcome::kMissingA, Outcome::kMissingB,
                    Outcome::kShapeMismatch, Outcome::kDtypeMismatch})
    if (name == OutcomeName(o)) return o;
  return std::nullopt;
}

std::string_view RuleName(Rule r) { return r == Rule::kEither ? "either" : "allclose"; }

std::string_view CheckName(Check c) {
  switch (c) {
    case Check::kMax:
      return "max";
    case Check::kMean:
      return "mean";
    case Check::kMedian:
      return "median";
    case Check::kP99:
      return "p99";
    default:
      return "elementwise";
  }
}

std::optional<Rule> ParseRule(std::string_view s) {
  if (s == "allclose") return Rule::kAllclose;
  if (s == "either") return Rule::kEither;
  return std::nullopt;
}

std::optional<Check> ParseCheck(std::string_view s) {
  for (Check c : {Check::kElementwise, Check::kMax, Check::kMean, Check::kMedian, Check::kP99}) {
    if (CheckName(c) == s) return c;
  }
  return std::nullopt;
}

namespace {

Result<std::optional<double>> Number(const toml::table& t, std::string_view key,
                                     const std::string& file) {
  const toml::node* n = t.get(key);
  if (!n) return std::optional<double>();
  std::optional<double> v = n->value<double>();
  if (!v || *v < 0 || !std::isfinite(*v)) {
    auto src = n->source().begin;
    return MakeError(ErrorCode::kInput, std::string(key) + " must be a non-negative number", file,
                     src.line, src.column);
  }
  return v;
}

}  // namespace

Result<ToleranceFile> ParseToleranceFile(const std::string& text, const std::string& file) {
  toml::table root;
  try {
    root = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    auto src = e.source().begin;
    return MakeError(ErrorCode::kInput, std::string(e.description()), file, src.line, src.column);
  }
  ToleranceFile out;
  for (auto&& [k, v] : root) {
    if (k != "default" && k != "tensor" && k != "metrics") {
      return MakeError(ErrorCode::kInput,
                       "unknown section '" + std::string(k.str()) +
                           "' (expected [default], [[tensor]] or [metrics])",
                       file, v.source().begin.line);
    }
  }
  // A misspelt key (`atl`) would leave the default tolerance in force without a word.
  for (const char* section : {"default", "metrics"}) {
    const toml::table* t = root[section].as_table();
    for (auto&& [k, v] : t ? *t : toml::table{}) {
      if (k == "atol" || k == "rtol") continue;
      return MakeError(
          ErrorCode::kInput,
          UnknownKeyMessage("[" + std::string(section) + "]", k.str(), {"atol", "rtol"}), file,
          v.source().begin.line, v.source().begin.column);
    }
  }
  if (auto* d = root["default"].as_table()) {
    auto a = Number(*d, "atol", file);
    if (!a) return a.take_error();
    auto r = Number(*d, "rtol", file);
    if (!r) return r.take_error();
    out.atol = *a;
    out.rtol = *r;
  }
  if (auto* m = root["metrics"].as_table()) {
    auto a = Number(*m, "atol", file);
    if (!a) return a.take_error();
    auto r = Number(*m, "rtol", file);
    if (!r) return r.take_error();
    out.metrics_atol = *a;
    out.metrics_rtol = *r;
  }
  if (const toml::node* tn = root.get("tensor")) {
    const toml::array* arr = tn->as_array();
    if (!arr) {
      return MakeError(ErrorCode::kInput, "'tensor' must be an array of tables ([[tensor]])", file,
                       tn->source().begin.line);
    }
    for (const toml::node& n : *arr) {
      const toml::table* t = n.as_table();
      auto line = n.source().begin.line;
      if (!t) return MakeError(ErrorCode::kInput, "[[tensor]] entry is not a table", file, line);
      ToleranceOverride o;
      auto name = (*t)["name"].value<std::string>();
      if (!name) {
        return MakeError(ErrorCode::kInput, "[[tensor]] needs name = \"GLOB\"", file, line);
      }
      o.glob = *name;
      auto a = Number(*t, "atol", file);
      if (!a) return a.take_error();
      auto r = Number(*t, "rtol", file);
      if (!r) return r.take_error();
      o.atol = *a;
      o.rtol = *r;
      if (auto rule = (*t)["rule"].value<std::string>()) {
        o.rule = ParseRule(*rule);
        if (!o.rule) {
          return MakeError(ErrorCode::kInput, "rule must be \"allclose\" or \"either\"", file,
                           line);
        }
      }
      if (auto check = (*t)["check"].value<std::string>()) {
        o.check = ParseCheck(*check);
        if (!o.check) {
          return MakeError(ErrorCode::kInput, "check must be elementwise, max, mean, median or p99",
                           file, line);
        }
      }
      for (auto&& [k, v] : *t) {
        if (k != "name" && k != "atol" && k != "rtol" && k != "rule" && k != "check") {
          return MakeError(
              ErrorCode::kInput,
              UnknownKeyMessage("[[tensor]]", k.str(), {"name", "atol", "rtol", "rule", "check"}),
              file, v.source().begin.line, v.source().begin.column);
        }
      }
      out.overrides.push_back(std::move(o));
    }
  }
  return out;
}

}  // namespace dt::compare
