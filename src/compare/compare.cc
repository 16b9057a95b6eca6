#include "compare/compare.h"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (fmt >= 11 keeps it here)

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "util/fs.h"
#include "util/json_number.h"
#include "util/strings.h"

namespace dt::compare {

namespace {

// A's name as B calls it: exact renames first, then prefix renames ("old.*=new.*").
std::string MapName(const std::string& name,
                    const std::vector<std::pair<std::string, std::string>>& map) {
  for (const auto& [from, to] : map) {
    if (from == name) return to;
  }
  for (const auto& [from, to] : map) {
    if (EndsWith(from, "*") && EndsWith(to, "*") &&
        StartsWith(name, std::string_view(from).substr(0, from.size() - 1))) {
      return to.substr(0, to.size() - 1) + name.substr(from.size() - 1);
    }
  }
  return name;
}

bool Selected(const CompareOptions& o, const std::string& name_a, const std::string& name_b) {
  if (o.only.empty()) return true;
  for (const std::string& g : o.only) {
    if (GlobMatch(g, name_a) || GlobMatch(g, name_b)) return true;
  }
  return false;
}

bool Passes(const TensorStats& s, const TensorComparison& t) {
  if (t.check == Check::kElementwise) return s.n_outside == 0;
  if (s.nonfinite_outside > 0) return false;
  if (s.finite_pairs == 0) return true;
  if (t.rule == Rule::kEither) {
    switch (t.check) {
      case Check::kMax:
        return s.max_abs <= t.atol || s.max_rel <= t.rtol;
      case Check::kMean:
        return s.mean_abs <= t.atol || s.mean_rel <= t.rtol;
      case Check::kMedian:
        return s.median_abs <= t.atol || s.median_rel <= t.rtol;
      default:
        return s.p99_abs <= t.atol || s.p99_rel <= t.rtol;
    }
  }
  switch (t.check) {
    case Check::kMax:
      return s.n_outside == 0;
    case Check::kMean:
      return s.mean_excess <= t.atol;
    case Check::kMedian:
      return s.median_excess <= t.atol;
    default:
      return s.p99_excess <= t.atol;
  }
}

int StatusRank(Outcome s) {
  if (s == Outcome::kPass) return 1;
  return IsMissing(s) ? 2 : 0;
}

// The status column of the text table: ok / FAIL stand out; the rest as named.
std::string StatusCell(Outcome s) {
  if (s == Outcome::kPass) return "ok";
  if (s == Outcome::kFail) return "FAIL";
  return std::string(OutcomeName(s));
}

std::string Num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return "0";
  return fmt::format("{:.3g}", v);
}

std::string ShapeStr(const std::vector<std::uint64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

nlohmann::json JsonNum(double v) {
  if (std::isfinite(v)) return v;
  return nullptr;
}

void CompareMetrics(const TensorFile& fa, const TensorFile& fb, double atol, double rtol,
                    CompareReport& r) {
  std::map<std::string, std::map<std::int64_t, MetricStep>> by_name;
  std::vector<std::string> order;
  auto add = [&](const TensorFile& f, bool is_a) {
    for (const MetricPoint& p : f.metrics) {
      if (!by_name.count(p.name)) order.push_back(p.name);
      MetricStep& st = by_name[p.name][p.step];
      st.step = p.step;
      (is_a ? st.a : st.b) = p.value;
    }
  };
  add(fa, true);
  add(fb, false);
  for (const std::string& name : order) {
    MetricComparison m;
    m.name = name;
    m.atol = atol;
    m.rtol = rtol;
    bool any_a = false, any_b = false, fail = false;
    for (auto& [step, st] : by_name[name]) {
      any_a |= st.a.has_value();
      any_b |= st.b.has_value();
      m.non_finite_a += st.a && !std::isfinite(*st.a);
      m.non_finite_b += st.b && !std::isfinite(*st.b);
      if (st.a && st.b) {
        double d = *st.a - *st.b;
        st.diff = d;
        double ad = std::fabs(d);
        if (!(ad <= atol + rtol * std::fabs(*st.b))) fail = true;
        if (!(ad <= m.max_abs_diff)) m.max_abs_diff = ad;
      } else {
        fail = true;
      }
      m.steps.push_back(st);
    }
    if (!m.steps.empty()) {
      const MetricStep& last = m.steps.back();
      m.final_a = last.a;
      m.final_b = last.b;
      m.final_diff = last.diff;
    }
    m.status = !any_a   ? Outcome::kMissingA
               : !any_b ? Outcome::kMissingB
               : fail   ? Outcome::kFail
                        : Outcome::kPass;
    if (m.status == Outcome::kFail) ++r.metrics_fail;
    r.metrics.push_back(std::move(m));
  }
}

}  // namespace

std::optional<DType> UlpDType(DType a, DType b) {
  if (IsComplex(a) && IsComplex(b)) return UlpDType(ComponentDType(a), ComponentDType(b));
  if (!IsFloat(a) || !IsFloat(b) || DTypeBits(a) <= 8 || DTypeBits(b) <= 8) return std::nullopt;
  return MantissaBits(a) <= MantissaBits(b) ? a : b;
}

namespace {

// One pair of tensors of the same name: its tolerances (the dtypes' defaults, the file's, the
// command line's, a matching override), then shape and dtype checks, then the statistics.
Result<TensorComparison> ComparePair(const TensorInfo& ta, const TensorInfo& tb, TensorComparison c,
                                     const CompareOptions& o, const ToleranceFile& tf,
                                     const TensorFile& fa, const TensorFile& fb,
                                     const std::string& file_a, const std::string& file_b) {
  const std::string& name = c.name;
  auto [ra, aa] = DefaultTolerance(ta.dtype);
  auto [rb, ab] = DefaultTolerance(tb.dtype);
  c.rtol = o.rtol ? *o.rtol : tf.rtol ? *tf.rtol : std::max(ra, rb);
  c.atol = o.atol ? *o.atol : tf.atol ? *tf.atol : std::max(aa, ab);
  for (const ToleranceOverride& ov : tf.overrides) {
    if (!GlobMatch(ov.glob, name) && !GlobMatch(ov.glob, ta.name)) continue;
    if (ov.atol) c.atol = *ov.atol;
    if (ov.rtol) c.rtol = *ov.rtol;
    if (ov.rule) c.rule = *ov.rule;
    if (ov.check) c.check = *ov.check;
  }
  if (ta.shape != tb.shape) {
    c.status = Outcome::kShapeMismatch;
    c.severity = INFINITY;
    return c;
  }
  if (IsComplex(ta.dtype) != IsComplex(tb.dtype)) {
    c.status = Outcome::kDtypeMismatch;
    c.note = fmt::format("a {} tensor cannot be compared with a real {} one",
                         IsComplex(ta.dtype) ? DTypeName(ta.dtype) : DTypeName(tb.dtype),
                         IsComplex(ta.dtype) ? DTypeName(tb.dtype) : DTypeName(ta.dtype));
    c.severity = INFINITY;
    return c;
  }
  if (o.strict_dtype && ta.dtype != tb.dtype) {
    c.status = Outcome::kDtypeMismatch;
    c.severity = INFINITY;
    return c;
  }
  StatsConfig cfg;
  cfg.atol = c.atol;
  cfg.rtol = c.rtol;
  cfg.rule = c.rule;
  cfg.equal_nan = o.equal_nan;
  cfg.inf_equal = o.inf_equal;
  cfg.percentiles = c.check == Check::kMedian || c.check == Check::kP99;
  cfg.threads = o.threads;
  cfg.ulp_dtype = UlpDType(ta.dtype, tb.dtype);
  auto stats = ComputeStats(ta, tb, cfg, file_a, file_b);
  if (!stats) {
    // A deflated member read as zeros because its file shrank is "changed", not "corrupt".
    for (const TensorFile* f : {&fa, &fb}) {
      for (const auto& m : f->maps) {
        if (auto st = m->CheckUnchanged(); !st) return st.take_error();
      }
    }
    return stats.take_error();
  }
  c.status = Passes(*stats, c) ? Outcome::kPass : Outcome::kFail;
  c.severity =
      stats->frac_outside * 1e6 + (c.atol > 0 ? stats->min_passing_atol / c.atol : stats->max_abs);
  if (std::isnan(c.severity)) c.severity = INFINITY;
  c.stats = std::move(*stats);
  return c;
}

// Failures first, then passes, then tensors on one side only; within each, the worst first.
void SortWorstFirst(std::vector<TensorComparison>& tensors) {
  std::stable_sort(tensors.begin(), tensors.end(),
                   [](const TensorComparison& x, const TensorComparison& y) {
                     int rx = StatusRank(x.status), ry = StatusRank(y.status);
                     if (rx != ry) return rx < ry;
                     if (x.severity != y.severity) return x.severity > y.severity;
                     // Tensors inside tolerance with no excess tie above; the larger relative,
                     // then absolute error is still the one to look at first.
                     if (!x.stats || !y.stats) return false;
                     if (x.stats->max_rel != y.stats->max_rel) {
                       return x.stats->max_rel > y.stats->max_rel;
                     }
                     return x.stats->max_abs > y.stats->max_abs;
                   });
}

// The one-line summary: PASS or FAIL, how many tensors passed, the worst one, what is missing.
std::string Summary(const CompareReport& r, int compared, int metrics_compared, bool nothing) {
  std::string s = r.verdict == Outcome::kPass ? "PASS: " : "FAIL: ";
  if (nothing) {
    if (r.tensors.empty()) {
      s += "nothing to compare: neither side holds a tensor or a metric";
    } else {
      s += fmt::format(
          "no tensor name in common ({} only in A, {} only in B; --map OLD=NEW pairs renamed "
          "keys)",
          r.n_missing_b, r.n_missing_a);
    }
  } else {
    s += fmt::format("{} of {} tensors within tolerance", r.n_pass, compared);
    if (r.n_fail > 0) {
      const TensorComparison& w = r.tensors.front();
      s += fmt::format("; worst {} ({})", w.name, OutcomeName(w.status));
      if (w.stats) {
        s += fmt::format(", max |a-b| {} at {}, {} outside", Num(w.stats->max_abs),
                         ShapeStr(w.stats->max_abs_index), w.stats->n_outside);
      }
    }
  }
  if (r.n_missing_a + r.n_missing_b > 0) {
    s += fmt::format("; {} only in A, {} only in B", r.n_missing_b, r.n_missing_a);
  }
  if (!r.metrics.empty()) {
    int metrics_pass = 0;
    for (const auto& m : r.metrics) metrics_pass += m.status == Outcome::kPass;
    s += fmt::format("; metrics: {} of {} series within tolerance", metrics_pass, metrics_compared);
  }
  return s;
}

}  // namespace

// Pairs A's tensors with B's by (mapped) name and compares each pair; a tensor of one side only
// is missing on the other.
Status CompareTensors(const CompareOptions& o, const ToleranceFile& tf, const TensorFile& fa,
                      const TensorFile& fb, CompareReport& r) {
  // The file each side's tensors live in, for errors met while streaming them.
  const std::string file_a = fa.maps.empty() ? o.a : fa.maps.front()->path();
  const std::string file_b = fb.maps.empty() ? o.b : fb.maps.front()->path();
  // Two single-tensor files (typically .npy, named after the file) are each other's match.
  std::vector<std::pair<std::string, std::string>> map = o.map;
  if (fa.tensors.size() == 1 && fb.tensors.size() == 1 && map.empty()) {
    map.emplace_back(fa.tensors[0].name, fb.tensors[0].name);
  }
  std::map<std::string, const TensorInfo*> b_by_name;
  for (const TensorInfo& t : fb.tensors) b_by_name[t.name] = &t;
  std::set<std::string> matched_b;
  for (const TensorInfo& ta : fa.tensors) {
    std::string name = MapName(ta.name, map);
    if (!Selected(o, ta.name, name)) continue;
    TensorComparison c;
    c.name = name;
    c.name_a = ta.name;
    c.dtype_a = ta.dtype;
    c.shape_a = ta.shape;
    c.rule = o.rule;
    c.check = o.check;
    auto it = b_by_name.find(name);
    if (it == b_by_name.end()) {
      c.status = Outcome::kMissingB;
      r.tensors.push_back(std::move(c));
      continue;
    }
    matched_b.insert(name);
    const TensorInfo& tb = *it->second;
    c.dtype_b = tb.dtype;
    c.shape_b = tb.shape;
    auto compared_pair = ComparePair(ta, tb, std::move(c), o, tf, fa, fb, file_a, file_b);
    if (!compared_pair) return compared_pair.take_error();
    r.tensors.push_back(std::move(*compared_pair));
  }
  for (const TensorInfo& tb : fb.tensors) {
    if (matched_b.count(tb.name) || !Selected(o, tb.name, tb.name)) continue;
    TensorComparison c;
    c.name = tb.name;
    c.status = Outcome::kMissingA;
    c.dtype_b = tb.dtype;
    c.shape_b = tb.shape;
    r.tensors.push_back(std::move(c));
  }
  return OkStatus();
}

// A filter that keeps nothing is a mistyped pattern far more often than an intended no-op.
Status CheckSelection(const CompareOptions& o, const TensorFile& fa, const TensorFile& fb,
                      const CompareReport& r) {
  if (o.only.empty() || !r.tensors.empty() || (fa.tensors.empty() && fb.tensors.empty()))
    return OkStatus();
  std::vector<std::string> some;
  for (const TensorFile* f : {&fa, &fb}) {
    for (const TensorInfo& t : f->tensors) {
      if (some.size() < 4 && std::find(some.begin(), some.end(), t.name) == some.end()) {
        some.push_back(t.name);
      }
    }
  }
  return MakeError(ErrorCode::kUsage,
                   fmt::format("--only {} selects none of the {} tensors of A and {} of B (they "
                               "are named like {})",
                               fmt::join(o.only, ", "), fa.tensors.size(), fb.tensors.size(),
                               fmt::join(some, ", ")));
}

// Counts the outcomes into r; returns how many pairs were compared (not missing).
int CountOutcomes(CompareReport& r) {
  int compared = 0;
  for (const TensorComparison& c : r.tensors) {
    if (c.status == Outcome::kPass)
      ++r.n_pass, ++compared;
    else if (c.status == Outcome::kMissingA)
      ++r.n_missing_a;
    else if (c.status == Outcome::kMissingB)
      ++r.n_missing_b;
    else
      ++r.n_fail, ++compared;
  }
  return compared;
}

Result<CompareReport> Compare(const CompareOptions& o) {
  ToleranceFile tf;
  if (!o.tolerance_file.empty()) {
    auto text = ReadFile(o.tolerance_file, 16u << 20);
    if (!text) return text.take_error();
    auto parsed = ParseToleranceFile(*text, o.tolerance_file);
    if (!parsed) return parsed.take_error();
    tf = std::move(*parsed);
  }
  auto fa = OpenTensorFile(o.a);
  if (!fa) return fa.take_error();
  auto fb = OpenTensorFile(o.b);
  if (!fb) return fb.take_error();
  CompareReport r;
  r.a = o.a;
  r.b = o.b;
  r.kind_a = fa->kind;
  r.kind_b = fb->kind;
  r.rule = o.rule;
  r.check = o.check;
  r.equal_nan = o.equal_nan;
  r.inf_equal = o.inf_equal;
  if (auto st = CompareTensors(o, tf, *fa, *fb, r); !st) return st.take_error();
  if (auto st = CheckSelection(o, *fa, *fb, r); !st) return st.take_error();
  SortWorstFirst(r.tensors);
  const int compared = CountOutcomes(r);
  if (fa->has_metrics && fb->has_metrics) {
    double matol = tf.metrics_atol ? *tf.metrics_atol : o.atol ? *o.atol : kFloat32Atol;
    double mrtol = tf.metrics_rtol ? *tf.metrics_rtol : o.rtol ? *o.rtol : kFloat32Rtol;
    CompareMetrics(*fa, *fb, matol, mrtol, r);
  }
  int metrics_compared = 0;
  for (const auto& m : r.metrics) metrics_compared += !IsMissing(m.status);
  bool nothing = compared == 0 && metrics_compared == 0;
  r.verdict = (r.n_fail > 0 || r.metrics_fail > 0 || nothing) ? Outcome::kFail : Outcome::kPass;

  r.summary = Summary(r, compared, metrics_compared, nothing);
  // A file truncated or rewritten while compared was read partly as zeros (util's SIGBUS guard):
  // the statistics are void.
  for (const TensorFile* f : {&*fa, &*fb}) {
    for (const auto& m : f->maps) {
      if (auto st = m->CheckUnchanged(); !st) return st.take_error();
      r.input_files.push_back(m->path());
    }
  }
  if (!o.tolerance_file.empty()) r.input_files.push_back(o.tolerance_file);
  return r;
}

namespace {

using nlohmann::json;

// The statistics of a compared pair.
void AddStatsJson(const TensorComparison& c, json& t) {
  const TensorStats& s = *c.stats;
  t["numel"] = s.numel;
  // Complex pairs: errors are moduli |a - b|, and stats_a / stats_b describe |a| and |b|.
  t["complex"] = c.dtype_a && IsComplex(*c.dtype_a);
  t["finite_pairs"] = s.finite_pairs;
  t["max_abs"] = JsonNum(s.max_abs);
  t["max_abs_index"] = s.max_abs_index;
  t["mean_abs"] = JsonNum(s.mean_abs);
  t["rmse"] = JsonNum(s.rmse);
  t["max_rel"] = JsonNum(s.max_rel);
  t["max_rel_infinite"] = std::isinf(s.max_rel);
  t["mean_rel"] = JsonNum(s.mean_rel);
  t["n_outside"] = s.n_outside;
  t["frac_outside"] = s.frac_outside;
  t["cosine"] = JsonNum(s.cosine);
  t["pearson"] = JsonNum(s.pearson);
  t["max_ulp"] = s.max_ulp ? json(*s.max_ulp) : json(nullptr);
  t["nan_a"] = s.nan_a;
  t["nan_b"] = s.nan_b;
  t["inf_a"] = s.posinf_a + s.neginf_a;
  t["inf_b"] = s.posinf_b + s.neginf_b;
  t["posinf_a"] = s.posinf_a;
  t["neginf_a"] = s.neginf_a;
  t["posinf_b"] = s.posinf_b;
  t["neginf_b"] = s.neginf_b;
  t["nan_mismatch"] = s.nan_mismatch;
  t["equal"] = s.equal;
  t["min_passing_atol"] = JsonNum(s.min_passing_atol);
  t["min_passing_rtol"] = JsonNum(s.min_passing_rtol);
  t["mean_excess"] = JsonNum(s.mean_excess);
  if (c.check == Check::kMedian || c.check == Check::kP99) {
    t["percentiles"] = {
        {"median_abs", JsonNum(s.median_abs)},       {"p99_abs", JsonNum(s.p99_abs)},
        {"median_rel", JsonNum(s.median_rel)},       {"p99_rel", JsonNum(s.p99_rel)},
        {"median_excess", JsonNum(s.median_excess)}, {"p99_excess", JsonNum(s.p99_excess)}};
  }
  auto side = [](const SideStats& x) {
    return json{{"min", JsonNum(x.min)},
                {"max", JsonNum(x.max)},
                {"mean", JsonNum(x.mean)},
                {"std", JsonNum(x.std)}};
  };
  t["stats_a"] = side(s.a);
  t["stats_b"] = side(s.b);
  json edges = json::array();
  if (!s.histogram.counts.empty()) {
    for (std::size_t i = 0; i <= s.histogram.counts.size(); ++i) {
      edges.push_back(s.histogram.first_decade + static_cast<int>(i));
    }
  }
  t["histogram"] = {
      {"log10_edges", edges}, {"counts", s.histogram.counts}, {"zero", s.histogram.zero}};
}

json TensorJson(const TensorComparison& c) {
  json t;
  t["name"] = c.name;
  t["name_a"] = c.name_a.empty() ? json(nullptr) : json(c.name_a);
  t["status"] = OutcomeName(c.status);
  t["dtype_a"] = c.dtype_a ? json(DTypeName(*c.dtype_a)) : json(nullptr);
  t["dtype_b"] = c.dtype_b ? json(DTypeName(*c.dtype_b)) : json(nullptr);
  t["shape"] = c.status == Outcome::kMissingA ? c.shape_b : c.shape_a;
  if (c.status == Outcome::kShapeMismatch) t["shape_b"] = c.shape_b;
  if (!c.note.empty()) t["note"] = c.note;
  if (IsMissing(c.status)) return t;
  t["atol"] = c.atol;
  t["rtol"] = c.rtol;
  t["rule"] = RuleName(c.rule);
  t["check"] = CheckName(c.check);
  if (c.stats) AddStatsJson(c, t);
  return t;
}

json MetricJson(const MetricComparison& m) {
  json steps = json::array();
  for (const MetricStep& st : m.steps) {
    // A diverged loss is the finding: NaN and infinities are kept as string tokens.
    steps.push_back({{"step", st.step},
                     {"a", st.a ? JsonNumberOrToken(*st.a) : json(nullptr)},
                     {"b", st.b ? JsonNumberOrToken(*st.b) : json(nullptr)},
                     {"diff", st.diff ? JsonNumberOrToken(*st.diff) : json(nullptr)}});
  }
  return {{"name", m.name},
          {"steps", steps},
          {"status", OutcomeName(m.status)},
          {"atol", m.atol},
          {"rtol", m.rtol},
          {"max_abs_diff", JsonNum(m.max_abs_diff)},
          {"final_a", m.final_a ? JsonNumberOrToken(*m.final_a) : json(nullptr)},
          {"final_b", m.final_b ? JsonNumberOrToken(*m.final_b) : json(nullptr)},
          {"final_diff", m.final_diff ? JsonNumberOrToken(*m.final_diff) : json(nullptr)},
          {"non_finite_a", m.non_finite_a},
          {"non_finite_b", m.non_finite_b}};
}

}  // namespace

nlohmann::json CompareReportToJson(const CompareReport& r) {
  json j;
  j["schema"] = "dualtrack.compare/1";
  j["a"] = r.a;
  j["b"] = r.b;
  j["kind_a"] = r.kind_a;
  j["kind_b"] = r.kind_b;
  j["rule"] = RuleName(r.rule);
  j["check"] = CheckName(r.check);
  j["equal_nan"] = r.equal_nan;
  j["inf_equal"] = r.inf_equal;
  json tensors = json::array();
  for (const TensorComparison& c : r.tensors) tensors.push_back(TensorJson(c));
  j["tensors"] = std::move(tensors);
  json metrics = json::array();
  for (const MetricComparison& m : r.metrics) metrics.push_back(MetricJson(m));
  j["metrics"] = std::move(metrics);
  j["verdict"] = OutcomeName(r.verdict);
  j["n_pass"] = r.n_pass;
  j["n_fail"] = r.n_fail;
  j["n_missing_a"] = r.n_missing_a;
  j["n_missing_b"] = r.n_missing_b;
  j["summary"] = r.summary;
  return j;
}

namespace {

struct Row {
  std::vector<std::string> cells;
};

std::vector<Row> TableRows(const CompareReport& r) {
  std::vector<Row> rows;
  for (const TensorComparison& c : r.tensors) {
    std::string dtype = c.dtype_a ? std::string(DTypeName(*c.dtype_a)) : "-";
    if (c.dtype_b && (!c.dtype_a || *c.dtype_a != *c.dtype_b)) {
      dtype += "/" + std::string(DTypeName(*c.dtype_b));
    }
    std::string shape = ShapeStr(c.status == Outcome::kMissingA ? c.shape_b : c.shape_a);
    if (c.status == Outcome::kShapeMismatch) shape += " vs " + ShapeStr(c.shape_b);
    Row row;
    row.cells = {StatusCell(c.status), c.name, dtype, shape};
    if (c.stats) {
      const TensorStats& s = *c.stats;
      row.cells.push_back(Num(s.max_abs));
      row.cells.push_back(Num(s.mean_abs));
      row.cells.push_back(Num(s.max_rel));
      row.cells.push_back(fmt::format("{} ({})", s.n_outside, Num(s.frac_outside)));
      row.cells.push_back(std::isnan(s.cosine) ? "-" : fmt::format("{:.6f}", s.cosine));
      row.cells.push_back(s.max_ulp ? std::to_string(*s.max_ulp) : "-");
      row.cells.push_back(Num(s.min_passing_atol));
      row.cells.push_back(fmt::format("{}/{}", Num(c.atol), Num(c.rtol)));
    } else {
      for (int i = 0; i < 8; ++i) row.cells.push_back("-");
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

const std::vector<std::string> kHeader = {"status",  "tensor",   "dtype",     "shape",
                                          "max_abs", "mean_abs", "max_rel",   "outside",
                                          "cosine",  "max_ulp",  "need_atol", "atol/rtol"};

std::string MetricLine(const MetricComparison& m) {
  std::string line =
      fmt::format("{} {}: {} steps, max |a-b| {}, final a={} b={}", StatusCell(m.status), m.name,
                  m.steps.size(), Num(m.max_abs_diff), m.final_a ? Num(*m.final_a) : "-",
                  m.final_b ? Num(*m.final_b) : "-");
  if (m.non_finite_a + m.non_finite_b > 0) {
    line += fmt::format(" (non-finite: {} step(s) in A, {} in B)", m.non_finite_a, m.non_finite_b);
  }
  return line;
}

}  // namespace

std::string CompareReportToText(const CompareReport& r, std::size_t summary) {
  std::vector<Row> rows = TableRows(r);
  // Hundreds of tensors (a whole checkpoint): how many of each status, then the worst (the rows
  // come worst first) and how many more the JSON holds.
  std::size_t left_out = 0;
  std::string counts;
  if (summary > 0 && rows.size() > summary) {
    std::map<std::string, std::size_t> by_status;
    for (const Row& row : rows) ++by_status[row.cells[0]];
    for (const auto& [status, n] : by_status)
      counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", status, n);
    left_out = rows.size() - summary;
    rows.resize(summary);
  }
  std::vector<std::size_t> width(kHeader.size());
  for (std::size_t i = 0; i < kHeader.size(); ++i) width[i] = kHeader[i].size();
  for (const Row& row : rows) {
    for (std::size_t i = 0; i < row.cells.size(); ++i)
      width[i] = std::max(width[i], row.cells[i].size());
  }
  std::ostringstream os;
  os << "compare " << r.a << " (A) against " << r.b << " (B, reference); rule " << RuleName(r.rule)
     << ", check " << CheckName(r.check) << "\n\n";
  if (!counts.empty())
    os << rows.size() + left_out << " tensors: " << counts << "; the " << rows.size()
       << " worst:\n";
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (i) s += "  ";
      s += cells[i];
      if (i + 1 < cells.size()) s += std::string(width[i] - cells[i].size(), ' ');
    }
    os << s << '\n';
  };
  if (!rows.empty()) {
    line(kHeader);
    for (const Row& row : rows) line(row.cells);
  }
  if (left_out > 0) os << "... " << left_out << " more (every tensor: --format json)\n";
  for (std::size_t i = 0; i < r.tensors.size() && i < rows.size(); ++i) {
    const TensorComparison& c = r.tensors[i];
    if (!c.note.empty()) os << "note: " << c.name << ": " << c.note << '\n';
  }
  if (!r.metrics.empty()) {
    os << "\nmetrics:\n";
    for (const MetricComparison& m : r.metrics) os << "  " << MetricLine(m) << '\n';
  }
  if (!rows.empty() || !r.metrics.empty()) os << '\n';
  os << r.summary << '\n';
  return os.str();
}

std::string CompareReportToMarkdown(const CompareReport& r) {
  std::ostringstream os;
  os << "## Comparison: `" << r.a << "` vs `" << r.b << "` (reference)\n\n";
  os << "Rule `" << RuleName(r.rule) << "`, check `" << CheckName(r.check) << "`.\n\n";
  std::vector<Row> rows = TableRows(r);
  if (!rows.empty()) {
    os << '|';
    for (const auto& h : kHeader) os << ' ' << h << " |";
    os << "\n|";
    for (std::size_t i = 0; i < kHeader.size(); ++i) os << " --- |";
    os << '\n';
    for (const Row& row : rows) {
      os << '|';
      for (const auto& c : row.cells) {
        std::string cell = c;
        std::string esc;
        for (char ch : cell) {
          if (ch == '|')
            esc += "\\|";
          else
            esc += ch;
        }
        os << ' ' << esc << " |";
      }
      os << '\n';
    }
  }
  for (const TensorComparison& c : r.tensors) {
    if (!c.note.empty()) os << "\nNote: `" << c.name << "`: " << c.note << '\n';
  }
  if (!r.metrics.empty()) {
    os << "\n**Metrics**\n\n";
    for (const MetricComparison& m : r.metrics) os << "- " << MetricLine(m) << '\n';
  }
  os << "\n**" << r.summary << "**\n";
  return os.str();
}

}  // namespace dt::compare
