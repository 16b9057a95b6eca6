#include "verdict/evidence.h"

#include <fmt/format.h>

#include <limits>
#include <system_error>

#include "bundle/bundle.h"
#include "util/fs.h"
#include "util/json_fields.h"
#include "util/strings.h"

namespace dt::verdict {

std::string Where(const Location& l) {
  if (l.file.empty()) return {};
  if (l.line <= 0) return l.file;
  if (l.cell) return fmt::format("{}:cell {}:{}", l.file, *l.cell, l.line);
  return fmt::format("{}:{}", l.file, l.line);
}

namespace {

using nlohmann::json;

// Reads typed fields leniently (absent or null is "unknown") but strictly (a field of the wrong
// type is an error naming the file and the field), remembering only the first error.
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  bool ok() const { return !error_.has_value(); }
  Error TakeError() { return std::move(*error_); }

  void Fail(const std::string& where, const std::string& what) {
    if (!error_) error_ = MakeError(ErrorCode::kInput, where + ": " + what, source_);
  }

  const json* Field(const json& obj, const char* key, const std::string& where) {
    if (!obj.is_object()) {
      Fail(where, "expected an object");
      return nullptr;
    }
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
  }

  std::string Str(const json& obj, const char* key, const std::string& where) {
    const json* v = Field(obj, key, where);
    if (v == nullptr) return {};
    if (!v->is_string()) {
      Fail(Join(where, key), "expected a string, got " + std::string(v->type_name()));
      return {};
    }
    return v->get<std::string>();
  }

  std::optional<std::string> OptStr(const json& obj, const char* key, const std::string& where) {
    const json* v = Field(obj, key, where);
    if (v == nullptr) return std::nullopt;
    if (v->is_string()) return v->get<std::string>();
    if (v->is_number() || v->is_boolean()) return v->dump();
    Fail(Join(where, key), "expected a string, got " + std::string(v->type_name()));
    return std::nullopt;
  }

  std::optional<std::int64_t> OptInt(const json& obj, const char* key, const std::string& where) {
    const json* v = Field(obj, key, where);
    if (v == nullptr) return std::nullopt;
    if (v->is_number_integer()) return v->get<std::int64_t>();
    if (v->is_number_float()) return static_cast<std::int64_t>(v->get<double>());
    Fail(Join(where, key), "expected an integer, got " + std::string(v->type_name()));
    return std::nullopt;
  }

  std::int64_t Int(const json& obj, const char* key, const std::string& where) {
    return OptInt(obj, key, where).value_or(0);
  }

  std::optional<double> OptNum(const json& obj, const char* key, const std::string& where) {
    const json* v = Field(obj, key, where);
    if (v == nullptr) return std::nullopt;
    if (v->is_number()) return v->get<double>();
    // JSON has no NaN or infinity; writers that need them use strings.
    if (v->is_string()) {
      const std::string s = v->get<std::string>();
      if (s == "NaN" || s == "nan") return std::numeric_limits<double>::quiet_NaN();
      if (s == "Infinity" || s == "inf") return std::numeric_limits<double>::infinity();
      if (s == "-Infinity" || s == "-inf") return -std::numeric_limits<double>::infinity();
    }
    Fail(Join(where, key), "expected a number, got " + std::string(v->type_name()));
    return std::nullopt;
  }

  std::optional<bool> OptBool(const json& obj, const char* key, const std::string& where) {
    const json* v = Field(obj, key, where);
    if (v == nullptr) return std::nullopt;
    if (!v->is_boolean()) {
      Fail(Join(where, key), "expected true, false or null, got " + std::string(v->type_name()));
      return std::nullopt;
    }
    return v->get<bool>();
  }

  // An array field; absent or null is an empty array.
  const json& Arr(const json& obj, const char* key, const std::string& where) {
    static const json kEmpty = json::array();
    return Typed(obj, key, where, kEmpty, "an array");
  }

  // An object field; absent or null is an empty object.
  const json& Obj(const json& obj, const char* key, const std::string& where) {
    static const json kEmpty = json::object();
    return Typed(obj, key, where, kEmpty, "an object");
  }

  // The field when it has `empty`'s type; else `empty` (absent or null quietly, another type as an
  // error naming `what` was expected).
  const json& Typed(const json& obj, const char* key, const std::string& where, const json& empty,
                    const char* what) {
    const json* v = Field(obj, key, where);
    if (v == nullptr) return empty;
    if (v->type() != empty.type()) {
      Fail(Join(where, key), fmt::format("expected {}, got {}", what, v->type_name()));
      return empty;
    }
    return *v;
  }

  // A field spelled by one of an enum's names (`parse` reads them; `expected` lists them for the
  // message); absent or null is unknown, any other value an error.
  template <class E>
  std::optional<E> Enum(const json& obj, const char* key, const std::string& where,
                        std::optional<E> (*parse)(std::string_view), const char* expected) {
    const json* v = Field(obj, key, where);
    if (v == nullptr) return std::nullopt;
    std::optional<E> e = v->is_string() ? parse(v->get<std::string>()) : std::nullopt;
    if (!e)
      Fail(Join(where, key), fmt::format("unknown value {} (expected {})", v->dump(), expected));
    return e;
  }

  std::vector<std::string> StrList(const json& obj, const char* key, const std::string& where) {
    std::vector<std::string> out;
    const json& arr = Arr(obj, key, where);
    for (std::size_t i = 0; i < arr.size(); ++i) {
      if (arr[i].is_string()) {
        out.push_back(arr[i].get<std::string>());
      } else {
        Fail(fmt::format("{}[{}]", Join(where, key), i), "expected a string");
      }
    }
    return out;
  }

  Location Loc(const json& obj, const char* key, const std::string& where) {
    Location loc;
    const json& l = Obj(obj, key, where);
    loc.file = Str(l, "file", Join(where, key));
    loc.line = Int(l, "line", Join(where, key));
    return loc;
  }

  static std::string Join(const std::string& where, const char* key) {
    return where.empty() ? std::string(key) : where + "." + key;
  }

 private:
  std::string source_;
  std::optional<Error> error_;
};

Status CheckSchema(const json& doc, const std::string& source, std::string_view expected) {
  if (!doc.is_object()) {
    return MakeError(ErrorCode::kInput, "expected a JSON object (" + std::string(expected) + ")",
                     source);
  }
  auto it = doc.find("schema");
  if (it == doc.end() || !it->is_string()) {
    return MakeError(ErrorCode::kInput,
                     "no \"schema\" field; expected \"" + std::string(expected) + "\"", source);
  }
  const std::string got = it->get<std::string>();
  if (got != expected) {
    return MakeError(ErrorCode::kInput,
                     "schema is \"" + got + "\", expected \"" + std::string(expected) + "\"",
                     source);
  }
  return OkStatus();
}

EnvEvidence ReadEnvObject(Reader& r, const json& doc, const std::string& source,
                          const std::string& where) {
  EnvEvidence e;
  e.source = source;
  const std::string hw = Reader::Join(where, "host");
  const json& host = r.Obj(doc, "host", where);
  e.os = r.Str(host, "os", hw);
  e.os_version = r.Str(host, "os_version", hw);
  e.arch = r.Str(host, "arch", hw);
  e.cpu = r.Str(host, "cpu", hw);
  e.memory_bytes = r.OptInt(host, "memory_bytes", hw);
  const json& gpus = r.Arr(doc, "gpus", where);
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const std::string gw = fmt::format("{}[{}]", Reader::Join(where, "gpus"), i);
    Gpu g;
    g.vendor = r.Str(gpus[i], "vendor", gw);
    g.name = r.Str(gpus[i], "name", gw);
    g.driver = r.Str(gpus[i], "driver", gw);
    g.memory_bytes = r.OptInt(gpus[i], "memory_bytes", gw);
    e.gpus.push_back(std::move(g));
  }
  e.nvcc_version = r.Str(r.Obj(doc, "cuda", where), "nvcc_version", Reader::Join(where, "cuda"));
  e.python_version = r.Str(r.Obj(doc, "python", where), "version", Reader::Join(where, "python"));
  const std::string tw = Reader::Join(where, "torch");
  const json& torch = r.Obj(doc, "torch", where);
  e.torch_installed = r.OptBool(torch, "installed", tw);
  e.torch_version = r.Str(torch, "version", tw);
  e.torch_cuda_version = r.OptStr(torch, "cuda_version", tw).value_or("");
  e.cuda_available = r.OptBool(torch, "cuda_available", tw);
  e.mps_built = r.OptBool(torch, "mps_built", tw);
  e.mps_available = r.OptBool(torch, "mps_available", tw);
  e.mps_fallback = r.OptStr(r.Obj(doc, "mps_env", where), "PYTORCH_ENABLE_MPS_FALLBACK",
                            Reader::Join(where, "mps_env"));
  const json& conclusions = r.Arr(doc, "conclusions", where);
  for (std::size_t i = 0; i < conclusions.size(); ++i) {
    const std::string cw = fmt::format("{}[{}]", Reader::Join(where, "conclusions"), i);
    e.conclusions.push_back({r.Str(conclusions[i], "id", cw), r.Str(conclusions[i], "level", cw),
                             r.Str(conclusions[i], "text", cw)});
  }
  return e;
}

template <class T, class F>
Result<T> LoadWith(const std::filesystem::path& path, F parse) {
  auto text = ReadFile(path, std::uint64_t{256} << 20);
  if (!text.ok()) return text.take_error();
  auto doc = ParseJson(*text, path.string());
  if (!doc.ok()) return doc.take_error();
  return parse(*doc, path.string());
}

}  // namespace

namespace {

void ReadFinding(Reader& r, const json& f, std::size_t i, std::vector<Finding>& out) {
  const std::string w = fmt::format("findings[{}]", i);
  Finding x;
  x.code = r.Str(f, "code", w);
  x.cls =
      r.Enum(f, "class", w, scan::ParseFindingClass, "device, library, extension or environment");
  x.severity =
      r.Enum(f, "severity", w, scan::ParseSeverity, "portable, fixable, replace or blocker");
  x.file = r.Str(f, "file", w);
  x.line = r.Int(f, "line", w);
  if (f.contains("cell")) x.cell = r.OptInt(f, "cell", w);
  x.message = r.Str(f, "message", w);
  x.snippet = r.Str(f, "snippet", w);
  x.guarded = r.OptBool(f, "guarded", w);
  x.reachable = r.OptBool(f, "reachable", w);
  x.replacement = r.Str(f, "replacement", w);
  x.mps_only = r.OptBool(f, "mps_only", w).value_or(false);
  x.placement = r.OptBool(f, "placement", w).value_or(false);
  x.option_default = r.OptBool(f, "option_default", w).value_or(false);
  x.in_import = r.OptBool(f, "in_import", w).value_or(false);
  x.reached_by = r.OptInt(f, "reached_by", w);
  const std::optional<std::string> fix = r.OptStr(f, "fix", w);
  if (fix == "safe") x.fix = FixKind::kSafe;
  if (fix == "unsafe") x.fix = FixKind::kUnsafe;
  out.push_back(std::move(x));
}

}  // namespace

// One reader for scan documents: a document already decoded goes through the streamed one.
Result<ScanEvidence> ParseScan(const json& doc, const std::string& source) {
  return ParseScanText(doc.dump(-1, ' ', false, json::error_handler_t::replace), source);
}

// A scan of a large tree runs to hundreds of MB of JSON, and a DOM of it costs about seven times
// that. So each finding is converted the moment the parser completes it and then dropped from the
// document: memory stays near the text plus the findings themselves.
Result<ScanEvidence> ParseScanText(const std::string& text, const std::string& source) {
  Reader r(source);
  std::vector<Finding> findings;
  std::string key;  // The last key of the top-level object.
  bool in_findings = false;
  std::size_t index = 0;
  auto on_event = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth == 1) {
      if (event == json::parse_event_t::key) key = parsed.get<std::string>();
      if (event == json::parse_event_t::array_start) in_findings = key == "findings";
      if (event == json::parse_event_t::array_end) in_findings = false;
      return true;
    }
    if (depth != 2 || !in_findings) return true;
    if (event != json::parse_event_t::object_end && event != json::parse_event_t::array_end &&
        event != json::parse_event_t::value) {
      return true;
    }
    if (r.ok()) ReadFinding(r, parsed, index, findings);
    ++index;
    return false;  // Converted: not kept in the document.
  };
  auto parsed = ParseJson(text, source, 0, on_event);
  if (!parsed.ok()) return parsed.take_error();
  json& doc = *parsed;
  // The schema is the first thing to say, before any finding's field.
  if (auto s = CheckSchema(doc, source, "dualtrack.scan/1"); !s.ok()) return s.take_error();
  ScanEvidence scan;
  scan.source = source;
  scan.root = r.Str(doc, "root", "");
  r.Arr(doc, "findings", "");  // Checks its type (the parse above left it empty).
  scan.findings = std::move(findings);
  scan.files_scanned = r.Int(r.Obj(doc, "summary", ""), "files_scanned", "summary");
  scan.entries = r.StrList(doc, "entries", "");
  if (const json& p = r.Obj(doc, "path", ""); !p.empty()) {
    auto place = [&](const char* key) -> std::optional<Location> {
      const json& o = r.Obj(p, key, "path");
      if (o.empty()) return std::nullopt;
      return r.Loc(p, key, "path");
    };
    ScanPath path;
    path.cuda_choice = place("cuda_choice");
    path.mentions_mps = r.OptBool(p, "mentions_mps", "path").value_or(false);
    path.framework_device = r.OptBool(p, "framework_device", "path").value_or(false);
    path.model = place("model");
    if (path.model) path.model_api = r.Str(r.Obj(p, "model", "path"), "api", "path.model");
    path.training = place("training");
    scan.path = std::move(path);
  }
  if (!r.ok()) return r.TakeError();
  return scan;
}

Result<EnvEvidence> ParseEnv(const json& doc, const std::string& source) {
  if (auto s = CheckSchema(doc, source, "dualtrack.env/1"); !s.ok()) return s.take_error();
  Reader r(source);
  EnvEvidence e = ReadEnvObject(r, doc, source, "");
  if (!r.ok()) return r.TakeError();
  return e;
}

Result<Baseline> ParseBaseline(const json& doc, const std::string& source) {
  if (auto s = CheckSchema(doc, source, "dualtrack.baseline/1"); !s.ok()) return s.take_error();
  Reader r(source);
  Baseline b;
  b.source = source;
  b.created = r.Str(doc, "created", "");
  const json& code = r.Obj(doc, "code", "");
  b.commit = r.Str(code, "commit", "code");
  b.dirty = r.StrList(code, "dirty", "code");
  const json& data = r.Obj(doc, "data", "");
  b.data_digest = r.Str(data, "digest", "data");
  b.data_files = r.Arr(data, "files", "data").size();
  const json& seeds = r.Arr(doc, "seeds", "");
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    if (seeds[i].is_number_integer()) {
      b.seeds.push_back(seeds[i].get<std::int64_t>());
    } else {
      r.Fail(fmt::format("seeds[{}]", i), "expected an integer");
    }
  }
  b.packages = r.Arr(doc, "packages", "").size();
  if (const json* env = r.Field(doc, "env", ""); env != nullptr && env->is_object()) {
    b.env = ReadEnvObject(r, *env, source, "env");
  }
  if (!r.ok()) return r.TakeError();
  return b;
}

Result<CoverageEvidence> ParseCoverage(const json& doc, const std::string& source) {
  if (auto s = CheckSchema(doc, source, "dualtrack.coverage/1"); !s.ok()) return s.take_error();
  Reader r(source);
  CoverageEvidence c;
  c.source = source;
  c.torch = r.OptStr(doc, "torch", "").value_or("");
  c.evidence = r.Enum(doc, "evidence", "", coverage::ParseEvidenceLevel, "predicted or measured")
                   .value_or(EvidenceLevel::kPredicted);
  const json& ops = r.Arr(doc, "ops", "");
  for (std::size_t i = 0; i < ops.size() && r.ok(); ++i) {
    const std::string w = fmt::format("ops[{}]", i);
    CoverageOp op;
    op.op = r.Str(ops[i], "op", w);
    op.overload = r.Str(ops[i], "overload", w);
    op.cls = r.Enum(ops[i], "class", w, coverage::ParseOpClassName,
                    "native, composite, cpu-fallback, always-cpu or unknown")
                 .value_or(coverage::OpClass::kAbsent);
    op.dtypes = r.StrList(ops[i], "dtypes", w);
    op.dtype_issues = r.StrList(ops[i], "dtype_issues", w);
    op.count = r.Int(ops[i], "count", w);
    op.location = r.Loc(ops[i], "location", w);
    op.native_since = r.OptStr(ops[i], "native_since", w);
    op.mps_op = r.OptStr(ops[i], "mps_op", w).value_or("");
    c.ops.push_back(std::move(op));
  }
  const json& upgrade = r.Obj(doc, "upgrade", "");
  c.upgrade_version = r.OptStr(upgrade, "version", "upgrade");
  c.upgrade_removes = r.Int(upgrade, "removes", "upgrade");
  if (!r.ok()) return r.TakeError();
  return c;
}

constexpr const char* kOutcomes =
    "pass, fail, missing_a, missing_b, shape_mismatch or dtype_mismatch";

Result<Comparison> ParseComparison(const json& doc, const std::string& source) {
  if (auto s = CheckSchema(doc, source, "dualtrack.compare/1"); !s.ok()) return s.take_error();
  Reader r(source);
  Comparison c;
  c.source = source;
  c.a = r.Str(doc, "a", "");
  c.b = r.Str(doc, "b", "");
  c.rule = r.Str(doc, "rule", "");
  c.check = r.Str(doc, "check", "");
  c.verdict = r.Enum(doc, "verdict", "", compare::ParseOutcomeName, kOutcomes);
  c.n_pass = r.Int(doc, "n_pass", "");
  c.n_fail = r.Int(doc, "n_fail", "");
  const json& tensors = r.Arr(doc, "tensors", "");
  for (std::size_t i = 0; i < tensors.size() && r.ok(); ++i) {
    const std::string w = fmt::format("tensors[{}]", i);
    const json& t = tensors[i];
    TensorComparison x;
    x.name = r.Str(t, "name", w);
    x.status = r.Enum(t, "status", w, compare::ParseOutcomeName, kOutcomes);
    x.dtype_a = r.Str(t, "dtype_a", w);
    x.dtype_b = r.Str(t, "dtype_b", w);
    for (const json& d : r.Arr(t, "shape", w)) {
      if (d.is_number_integer()) x.shape.push_back(d.get<std::int64_t>());
    }
    x.atol = r.OptNum(t, "atol", w);
    x.rtol = r.OptNum(t, "rtol", w);
    x.max_abs = r.OptNum(t, "max_abs", w);
    x.mean_abs = r.OptNum(t, "mean_abs", w);
    x.max_rel = r.OptNum(t, "max_rel", w);
    x.frac_outside = r.OptNum(t, "frac_outside", w);
    x.cosine = r.OptNum(t, "cosine", w);
    const json& hist = r.Obj(t, "histogram", w);
    const std::string hw = w + ".histogram";
    for (const json& e : r.Arr(hist, "log10_edges", hw)) {
      if (e.is_number()) x.hist_log10_edges.push_back(e.get<double>());
    }
    for (const json& n : r.Arr(hist, "counts", hw)) {
      if (n.is_number()) x.hist_counts.push_back(n.get<std::int64_t>());
    }
    c.tensors.push_back(std::move(x));
  }
  const json& metrics = r.Arr(doc, "metrics", "");
  for (std::size_t i = 0; i < metrics.size() && r.ok(); ++i) {
    const std::string w = fmt::format("metrics[{}]", i);
    MetricComparison m;
    m.name = r.Str(metrics[i], "name", w);
    m.status = r.Enum(metrics[i], "status", w, compare::ParseOutcomeName, kOutcomes);
    const json& steps = r.Arr(metrics[i], "steps", w);
    for (std::size_t k = 0; k < steps.size(); ++k) {
      const std::string sw = fmt::format("{}.steps[{}]", w, k);
      m.steps.push_back({r.Int(steps[k], "step", sw), r.OptNum(steps[k], "a", sw),
                         r.OptNum(steps[k], "b", sw), r.OptNum(steps[k], "diff", sw)});
    }
    c.metrics.push_back(std::move(m));
  }
  if (!r.ok()) return r.TakeError();
  return c;
}

std::string_view ClassText(const std::optional<scan::FindingClass>& c) {
  return c ? scan::FindingClassName(*c) : std::string_view();
}

std::string_view SeverityText(const std::optional<scan::Severity>& s) {
  return s ? scan::SeverityName(*s) : std::string_view();
}

std::string_view OutcomeText(const std::optional<compare::Outcome>& o) {
  return o ? compare::OutcomeName(*o) : std::string_view();
}

Result<ScanEvidence> LoadScan(const std::filesystem::path& path) {
  auto text = ReadFile(path, std::uint64_t{256} << 20);
  if (!text.ok()) return text.take_error();
  return ParseScanText(*text, path.string());
}
Result<EnvEvidence> LoadEnv(const std::filesystem::path& path) {
  return LoadWith<EnvEvidence>(path, ParseEnv);
}
Result<Baseline> LoadBaseline(const std::filesystem::path& path) {
  return LoadWith<Baseline>(path, ParseBaseline);
}
Result<CoverageEvidence> LoadCoverage(const std::filesystem::path& path) {
  return LoadWith<CoverageEvidence>(path, ParseCoverage);
}
Result<Comparison> LoadComparison(const std::filesystem::path& path) {
  return LoadWith<Comparison>(path, ParseComparison);
}

namespace {

// The run's facts from its manifest: what it was, how it ended, its times and memory.
void ReadRunFacts(Reader& r, const json& doc, Track& t) {
  t.label = r.Str(doc, "track", "");
  t.mps_available = r.OptBool(doc, "mps_available", "");
  t.outcome_reason = r.Str(doc, "outcome_reason", "");
  t.missing_package = r.Str(doc, "missing_package", "");
  t.stderr_tail = r.Str(doc, "stderr_tail", "");
  t.command = r.StrList(doc, "command", "");
  t.git_commit = r.OptStr(doc, "git_commit", "");
  t.data_digest = r.OptStr(doc, "data_digest", "");
  if (!t.data_digest) {
    if (const json* data = r.Field(doc, "data", ""); data != nullptr && data->is_object()) {
      t.data_digest = r.OptStr(*data, "digest", "data");
    }
  }
  if (const json* data = r.Field(doc, "data", ""); data != nullptr && data->is_object()) {
    t.data_source = r.Str(*data, "source", "data");
  }
  t.seed = r.OptInt(doc, "seed", "");
  t.exit_code = r.OptInt(doc, "exit_code", "");
  if (const json* ex = r.Field(doc, "exception", ""); ex != nullptr) {
    Track::Exception e;
    e.type = r.Str(*ex, "type", "exception");
    e.message = r.Str(*ex, "message", "exception");
    e.location.file = r.Str(*ex, "file", "exception");
    e.location.line = r.Int(*ex, "line", "exception");
    t.exception = std::move(e);
  }
  const json& steps = r.Arr(doc, "steps", "");
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (auto w = r.OptNum(steps[i], "wall_s", fmt::format("steps[{}]", i))) {
      t.step_wall_s.push_back(*w);
    }
  }
  t.peak_rss_bytes = r.OptInt(doc, "peak_rss_bytes", "");
  t.peak_device_bytes = r.OptInt(doc, "peak_device_bytes", "");
  t.mps_fallback = r.OptStr(r.Obj(doc, "env_vars", ""), "PYTORCH_ENABLE_MPS_FALLBACK", "env_vars");
}

// What the tracer recorded in the manifest: CUDA redirects, float64 sites, the environment.
void ReadTracerRecords(Reader& r, const json& doc, const std::string& source, Track& t) {
  const json& redirects = r.Arr(doc, "redirects", "");
  for (std::size_t i = 0; i < redirects.size(); ++i) {
    const std::string w = fmt::format("redirects[{}]", i);
    Track::Redirect x;
    x.what = r.Str(redirects[i], "what", w);
    x.to = r.Str(redirects[i], "to", w);
    x.location.file = r.Str(redirects[i], "file", w);
    x.location.line = r.Int(redirects[i], "line", w);
    x.count = r.Int(redirects[i], "count", w);
    t.redirects.push_back(std::move(x));
  }
  const json& f64 = r.Arr(doc, "float64", "");
  for (std::size_t i = 0; i < f64.size(); ++i) {
    const std::string w = fmt::format("float64[{}]", i);
    t.float64.push_back({r.Str(f64[i], "file", w), r.Int(f64[i], "line", w), std::nullopt});
  }
  if (const json* env = r.Field(doc, "env", "");
      env != nullptr && env->is_object() && !env->empty()) {
    t.env = ReadEnvObject(r, *env, source, "env");
  }
}

// The traced operators, in the verdict's terms.
void TakeOps(bundle::Bundle& bundle, Track& t) {
  for (bundle::OpRow& row : bundle.ops) {
    OpRow op;
    op.op = std::move(row.op);
    op.overload = std::move(row.overload);
    op.device = std::move(row.device);
    op.dtypes = std::move(row.dtypes);
    op.count = row.count;
    if (row.location)
      op.location = {std::move(row.location->file), row.location->line, std::nullopt};
    op.status = row.status;
    op.error = row.error.value_or("");
    t.ops.push_back(std::move(op));
  }
}

}  // namespace

Result<Track> LoadTrack(const std::string& name, const std::filesystem::path& dir) {
  // The bundle stage's reader checks the manifest's schema and status and reads ops.jsonl and
  // metrics.jsonl (errors name file and line); this function picks what the verdict needs.
  auto bundle = bundle::LoadBundle(dir);
  if (!bundle.ok()) return bundle.take_error();
  const json& doc = bundle->manifest;
  const std::string source = (dir / "manifest.json").string();

  Reader r(source);
  Track t;
  t.name = name;
  t.dir = dir.string();
  t.status = bundle->status;
  t.outcome = bundle->outcome;
  ReadRunFacts(r, doc, t);
  ReadTracerRecords(r, doc, source, t);
  if (!r.ok()) return r.TakeError();

  std::error_code ec;
  t.has_ops = std::filesystem::exists(dir / "ops.jsonl", ec);
  TakeOps(*bundle, t);
  auto step = cost::CostOfBundle(*bundle);
  if (!step.ok()) return step.take_error();
  t.cost = std::move(*step);
  t.measured_profile = cost::MeasuredProfile(doc);
  for (const bundle::MetricRow& m : bundle->metrics) t.metrics.push_back({m.step, m.name, m.value});
  t.device = DeviceOf(t, &t.device_note);
  return t;
}

bool Track::Executed(const std::string& file) const {
  for (const OpRow& op : ops) {
    if (op.location.file == file) return true;
  }
  return false;
}

std::string DeviceOf(const Track& t, std::string* note) {
  bool mps = false, cuda = false, cpu = false;
  for (const OpRow& op : t.ops) {
    mps = mps || op.device == "mps";
    cuda = cuda || StartsWith(op.device, "cuda");
    cpu = cpu || op.device == "cpu";
  }
  std::string device;
  if (mps) {
    device = "mps";
  } else if (cuda) {
    device = "cuda";
  } else if (cpu) {
    device = "cpu";
  }
  if (!device.empty()) {
    if (device != t.label && note != nullptr) {
      *note = fmt::format("labelled '{}', but every traced operator ran on {}", t.label, device);
    }
    return device;
  }
  // No operator with a device: judge from the environment the run recorded.
  // Plain flags: GCC 12 warns (maybe-uninitialized) on comparisons of optional<bool> here.
  const bool mps_known = t.mps_available.has_value() || (t.env && t.env->mps_available);
  const bool mps_yes = t.mps_available.has_value()
                           ? *t.mps_available
                           : (t.env && t.env->mps_available.value_or(false));
  const bool cuda_no = t.env && t.env->cuda_available.has_value() && !*t.env->cuda_available;
  if (t.label == "mps" && !mps_yes) {
    if (note != nullptr) {
      *note = mps_known ? "labelled 'mps', but MPS was not available on its host: it ran on the CPU"
                        : "labelled 'mps', but nothing shows MPS was used (no traced operator, MPS "
                          "availability not recorded)";
    }
    return mps_known ? "cpu" : "unknown";
  }
  if (t.label == "cuda" && cuda_no) {
    if (note != nullptr) *note = "labelled 'cuda', but CUDA was not available on its host";
    return "cpu";
  }
  return t.label;
}

}  // namespace dt::verdict
