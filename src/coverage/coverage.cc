#include "coverage/coverage.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "app/paths.h"
#include "bundle/bundle.h"
#include "coverage/rules.h"
#include "coverage/table.h"
#include "util/fs.h"
#include "util/json_fields.h"
#include "util/numeric.h"
#include "util/strings.h"

namespace dt::coverage {

const char* ToString(EvidenceLevel l) {
  return l == EvidenceLevel::kMeasured ? "measured" : "predicted";
}

std::optional<EvidenceLevel> ParseEvidenceLevel(std::string_view s) {
  for (EvidenceLevel l : {EvidenceLevel::kPredicted, EvidenceLevel::kMeasured})
    if (s == ToString(l)) return l;
  return std::nullopt;
}

namespace {

// The table key of a traced operator: "aten::add" + "Tensor" → "add.Tensor".
std::string TableKey(const std::string& op, const std::string& overload) {
  std::string base = StartsWith(op, "aten::") ? op.substr(6) : op;
  return overload == "default" ? base : base + "." + overload;
}

int Severity(const CoverageOp& o) {
  if (o.fails) return 0;
  switch (o.cls) {
    case OpClass::kAlwaysCpu:
      return 1;
    case OpClass::kCpuFallback:
      return 2;
    case OpClass::kAbsent:
      return 3;
    case OpClass::kComposite:
      return 4;
    default:
      return 5;
  }
}

std::string LocationText(const std::optional<CodeLocation>& l) {
  if (!l) return "(no user-code location)";
  std::string s = l->file;
  if (l->line > 0) s += ":" + std::to_string(l->line);
  if (!l->function.empty()) s += " in " + l->function;
  return s;
}

// The ops.jsonl of a bundle (a directory, whose manifest names the track and the torch that
// traced it) or an ops.jsonl itself; fills report.bundle, track and evidence.
Result<std::filesystem::path> LocateOps(const CoverageOptions& options, CoverageReport& report,
                                        std::string& traced_torch) {
  std::error_code ec;
  std::filesystem::path ops_path = options.bundle;
  report.bundle = options.bundle.string();
  report.evidence = EvidenceLevel::kPredicted;
  if (std::filesystem::is_directory(options.bundle, ec)) {
    ops_path = options.bundle / "ops.jsonl";
    std::filesystem::path manifest = options.bundle / "manifest.json";
    if (std::filesystem::exists(manifest, ec)) {
      auto text = ReadFile(manifest, 64u << 20);
      if (!text) return text.take_error();
      auto j = ParseJson(*text, manifest.string());
      if (!j.ok()) return j.take_error();
      if (!j->is_object() || JsonString(*j, "schema") != "dualtrack.bundle/1") {
        return MakeError(ErrorCode::kInput, "expected \"schema\": \"dualtrack.bundle/1\"",
                         manifest.string());
      }
      if (auto track = JsonOptString(*j, "track")) report.track = *track;
      if (auto torch = JsonOptString(*j, "torch_version")) traced_torch = *torch;
    }
    if (!std::filesystem::exists(ops_path, ec)) {
      return MakeError(ErrorCode::kInput, "not a dualtrack bundle: no ops.jsonl in the directory",
                       options.bundle.string());
    }
  } else if (!std::filesystem::exists(options.bundle, ec)) {
    return MakeError(ErrorCode::kInput, "no such bundle or ops.jsonl", options.bundle.string());
  }
  return ops_path;
}

using MergedOps =
    std::map<std::tuple<std::string, std::string, std::string, std::int64_t>, CoverageOp>;

// An operator's key in MergedOps, as views.
std::tuple<std::string_view, std::string_view, std::string_view, std::int64_t> MergeKey(
    const CoverageOp& o) {
  return {o.op, o.overload, o.location ? std::string_view(o.location->file) : std::string_view(),
          o.location ? o.location->line : 0};
}

// A row joins the operator at the same place (their dtypes and counts add up); dtype and
// dimension issues and, for a measured (MPS) trace, the status seen are attached. Rows come one at
// a time as ops.jsonl is read: only the merged operators are held, never the file or its rows.
void MergeRow(MergedOps& merged, const bundle::OpRow& r, const Rules& rules,
              const CoverageOptions& options, const CoverageReport& report) {
  // Profiler markers (record_function) are bookkeeping the tracer sees, not computation.
  if (StartsWith(r.op, "profiler::")) return;
  auto key = std::make_tuple(r.op, r.overload, r.location ? r.location->file : "",
                             r.location ? r.location->line : 0);
  auto [it, inserted] = merged.try_emplace(key);
  CoverageOp& o = it->second;
  if (inserted) {
    o.op = r.op;
    o.overload = r.overload;
    if (r.location)
      o.location = CodeLocation{r.location->file, r.location->line, r.location->function};
  }
  o.count = SaturatingAdd(o.count, r.count);
  for (const std::string& d : r.dtypes) {
    std::string n = NormalizeDtype(d);
    if (std::find(o.dtypes.begin(), o.dtypes.end(), n) == o.dtypes.end()) o.dtypes.push_back(n);
  }
  if (report.evidence == EvidenceLevel::kMeasured && r.status != bundle::OpStatus::kOk)
    o.measured_status = r.status;
  std::vector<std::string> issues =
      DtypeIssues(rules, r.dtypes, r.max_ndim, options.macos, &o.fails);
  for (std::string& s : issues) {
    if (std::find(o.dtype_issues.begin(), o.dtype_issues.end(), s) == o.dtype_issues.end()) {
      o.dtype_issues.push_back(std::move(s));
    }
  }
}

// What a release's MPS backend would run for the op (a backend variant maps to its MPS path).
OpClass Resolve(const CoverageOp& o, std::size_t v, const CapabilityTable& table,
                const Rules& rules, std::string* mps_op, std::string* note) {
  std::string key = TableKey(o.op, o.overload);
  if (const VariantRule* rule = FindVariant(rules, key)) {
    for (const std::string& target : rule->to) {
      OpClass c = table.Get(target, v);
      if (c != OpClass::kAbsent) {
        if (mps_op) *mps_op = "aten::" + target;
        if (note) *note = rule->why;
        return c;
      }
    }
  }
  return table.Get(key, v);
}

// The counts per class and of operators that fail.
void Summarise(CoverageReport& report) {
  for (const CoverageOp& o : report.ops) {
    switch (o.cls) {
      case OpClass::kNative:
      case OpClass::kExplicit:
        ++report.summary.native;
        break;
      case OpClass::kComposite:
        ++report.summary.composite;
        break;
      case OpClass::kCpuFallback:
      case OpClass::kAlwaysCpu:
        ++report.summary.fallback;
        break;
      case OpClass::kAbsent:
        ++report.summary.unknown;
        break;
    }
    if (o.fails) ++report.summary.fail;
  }
}

// The lowest newer release at which every traced operator known to the table runs on MPS; when
// none does, the lowest one with the fewest fallbacks (and how many remain).
void SuggestUpgrade(CoverageReport& report, const CapabilityTable& table, const Rules& rules,
                    std::size_t vi) {
  const CapabilityTable* tablep = &table;
  auto resolve = [&](const CoverageOp& o, std::size_t v, std::string* mps_op, std::string* note) {
    return Resolve(o, v, table, rules, mps_op, note);
  };
  if (report.summary.fallback > 0) {
    int best = report.summary.fallback;
    for (std::size_t v = vi + 1; v < tablep->versions().size(); ++v) {
      int fallbacks = 0;
      for (const CoverageOp& o : report.ops) {
        OpClass c = resolve(o, v, nullptr, nullptr);
        if (c != OpClass::kAbsent && !RunsOnMps(c)) ++fallbacks;
      }
      if (fallbacks < best) {
        best = fallbacks;
        report.upgrade_version = tablep->versions()[v];
        report.upgrade_removes = report.summary.fallback - fallbacks;
        report.upgrade_remaining = fallbacks;
        if (fallbacks == 0) break;
      }
    }
    if (!report.upgrade_version) report.upgrade_remaining = report.summary.fallback;
  }
}

}  // namespace

Result<CoverageReport> Predict(const CoverageOptions& options) {
  std::filesystem::path data = options.data_dir;
  if (data.empty()) {
    auto d = DataDir();
    if (!d) return d.take_error();
    data = *d / "coverage";
  }
  Result<CapabilityTable> loaded =
      options.table_override
          ? Result<CapabilityTable>(*options.table_override)
          : CapabilityTable::Load(options.table.empty() ? data / "ops.tsv" : options.table);
  if (!loaded) return loaded.take_error();
  const CapabilityTable* table = &*loaded;
  auto rules = LoadRules(data / "rules.json");
  if (!rules) return rules.take_error();

  CoverageReport report;
  report.known_versions = table->versions();
  report.macos = options.macos;

  std::string traced_torch;  // The torch that recorded the bundle, from its manifest.
  auto located = LocateOps(options, report, traced_torch);
  if (!located) return located.take_error();
  const std::filesystem::path ops_path = *located;
  // Predict for --torch, else for the release that recorded the trace (what the user would install
  // on the Mac), else for the newest release in the tables.
  std::size_t vi = table->versions().size() - 1;
  if (!options.torch.empty()) {
    auto found = table->FindVersion(options.torch);
    if (!found) return found.take_error();
    vi = *found;
  } else if (!traced_torch.empty()) {
    std::string release = traced_torch.substr(0, traced_torch.find_first_of("+a"));
    if (auto found = table->FindVersion(release); found.ok()) vi = *found;
  }
  report.torch = table->versions()[vi];
  if (report.track == "mps") report.evidence = EvidenceLevel::kMeasured;
  MergedOps merged;
  Status read = bundle::ForEachOpRow(ops_path, [&](bundle::OpRow&& r) {
    MergeRow(merged, r, *rules, options, report);
    return OkStatus();
  });
  if (!read) return read.take_error();

  auto resolve = [&](const CoverageOp& o, std::size_t v, std::string* mps_op, std::string* note) {
    return Resolve(o, v, *table, *rules, mps_op, note);
  };

  // Each operator moves out of the map as it is classified, so the two are not held whole at once.
  report.ops.reserve(merged.size());
  for (auto it = merged.begin(); it != merged.end(); it = merged.erase(it)) {
    CoverageOp& o = it->second;
    o.cls = resolve(o, vi, &o.mps_op, &o.mapping_note);
    // native_since: the lowest release from which every later one runs the op on MPS.
    std::optional<std::string> since;
    for (std::size_t v = table->versions().size(); v-- > 0;) {
      if (!RunsOnMps(resolve(o, v, nullptr, nullptr))) break;
      since = table->versions()[v];
    }
    o.native_since = since;
    if (o.measured_status == bundle::OpStatus::kFallback && RunsOnMps(o.cls))
      o.cls = OpClass::kCpuFallback;
    if (o.measured_status == bundle::OpStatus::kFailed) o.fails = true;
    report.ops.push_back(std::move(o));
  }
  Summarise(report);
  // Most severe first, then most frequent. The ties fall back to the merge key (unique), which
  // is the order a stable sort of the map's order gave, without stable_sort's copy of every op.
  std::sort(report.ops.begin(), report.ops.end(), [](const CoverageOp& a, const CoverageOp& b) {
    if (Severity(a) != Severity(b)) return Severity(a) < Severity(b);
    if (a.count != b.count) return a.count > b.count;
    return MergeKey(a) < MergeKey(b);
  });

  SuggestUpgrade(report, *table, *rules, vi);
  return report;
}

namespace {

nlohmann::json OpToJson(const CoverageOp& o) {
  nlohmann::json loc = nullptr;
  if (o.location) {
    loc = {
        {"file", o.location->file},
        {"line", o.location->line > 0 ? nlohmann::json(o.location->line) : nlohmann::json(nullptr)},
        {"function", o.location->function.empty() ? nlohmann::json(nullptr)
                                                  : nlohmann::json(o.location->function)}};
  }
  return {
      {"op", o.op},
      {"overload", o.overload},
      {"class", std::string(OpClassName(o.cls))},
      {"basis", std::string(OpClassBasis(o.cls))},
      {"mps_op", o.mps_op.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.mps_op)},
      {"mapping_note",
       o.mapping_note.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.mapping_note)},
      {"dtypes", o.dtypes},
      {"dtype_issues", o.dtype_issues},
      {"fails", o.fails},
      {"count", o.count},
      {"location", loc},
      {"native_since", o.native_since ? nlohmann::json(*o.native_since) : nlohmann::json(nullptr)},
      {"measured_status",
       o.measured_status ? nlohmann::json(ToString(*o.measured_status)) : nlohmann::json(nullptr)}};
}

// The report without its operators ("ops": []).
nlohmann::json ReportHead(const CoverageReport& r) {
  return {{"schema", "dualtrack.coverage/1"},
          {"torch", r.torch},
          {"macos", r.macos},
          {"evidence", ToString(r.evidence)},
          {"bundle", r.bundle},
          {"track", r.track.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.track)},
          {"ops", nlohmann::json::array()},
          {"summary",
           {{"native", r.summary.native},
            {"composite", r.summary.composite},
            {"fallback", r.summary.fallback},
            {"fail", r.summary.fail},
            {"unknown", r.summary.unknown}}},
          {"upgrade",
           {{"version",
             r.upgrade_version ? nlohmann::json(*r.upgrade_version) : nlohmann::json(nullptr)},
            {"removes", r.upgrade_removes},
            {"remaining", r.upgrade_remaining},
            {"complete", r.upgrade_version.has_value() && r.upgrade_remaining == 0}}},
          {"known_versions", r.known_versions},
          {"cost", r.cost}};
}

std::string Dump(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

nlohmann::json CoverageReportToJson(const CoverageReport& r) {
  nlohmann::json doc = ReportHead(r);
  for (const CoverageOp& o : r.ops) doc["ops"].push_back(OpToJson(o));
  return doc;
}

void WriteCoverageJson(const CoverageReport& r, std::ostream& out) {
  // The same text as CoverageReportToJson's dump, with the operators written one at a time: a
  // trace of a million places would otherwise exist whole as a JSON tree (most of what `coverage`
  // of a large trace cost). A JSON string escapes every quote, so the key is found only as a key.
  const std::string head = Dump(ReportHead(r));
  const std::string key = "\n  \"ops\": []";
  const std::size_t at = head.find(key);
  if (r.ops.empty() || at == std::string::npos) {
    out << head << "\n";
    return;
  }
  out << std::string_view(head).substr(0, at) << "\n  \"ops\": [";
  const char* sep = "\n    ";
  for (const CoverageOp& o : r.ops) {
    out << sep;
    sep = ",\n    ";
    for (char c : Dump(OpToJson(o))) {
      out << c;
      if (c == '\n') out << "    ";  // Nested two levels down.
    }
  }
  out << "\n  ]" << std::string_view(head).substr(at + key.size()) << "\n";
}

namespace {

// The text or Markdown report into `sink` a piece at a time (the title, each operator, the
// summary), each escaped for a terminal when `escape`: a report of a million operators is never
// one string.
void WriteText(const CoverageReport& r, bool markdown, std::ostream& sink, bool escape) {
  std::ostringstream out;
  auto emit = [&] {
    sink << (escape ? EscapeControl(out.str()) : out.str());
    out.str({});
  };
  std::string title = fmt::format("MPS coverage of {} for PyTorch {} on macOS {} ({})", r.bundle,
                                  r.torch, r.macos, ToString(r.evidence));
  if (markdown) {
    out << "## " << title << "\n\n| class | operator | count | dtypes | location | note |\n"
        << "| --- | --- | ---: | --- | --- | --- |\n";
  } else {
    out << title << "\n\n";
  }
  for (const CoverageOp& o : r.ops) {
    std::string name = o.op + (o.overload == "default" ? "" : "." + o.overload);
    std::string cls =
        o.fails ? "FAIL " + std::string(OpClassName(o.cls)) : std::string(OpClassName(o.cls));
    std::vector<std::string> notes;
    if (!o.mps_op.empty()) notes.push_back("MPS runs " + o.mps_op);
    for (const std::string& s : o.dtype_issues) notes.push_back(s);
    if (!RunsOnMps(o.cls) && o.native_since) notes.push_back("MPS kernel since " + *o.native_since);
    if (o.measured_status)
      notes.push_back(std::string("measured: ") + ToString(*o.measured_status));
    std::string dtypes;
    for (const std::string& d : o.dtypes) dtypes += (dtypes.empty() ? "" : ",") + d;
    std::string note;
    for (const std::string& n : notes) note += (note.empty() ? "" : "; ") + n;
    if (markdown) {
      out << "| " << cls << " | `" << name << "` | " << o.count << " | " << dtypes << " | "
          << LocationText(o.location) << " | " << note << " |\n";
    } else {
      out << fmt::format("  {:<18} {:<44} x{:<5} {:<20} {}\n", cls, name, o.count, dtypes,
                         LocationText(o.location));
      if (!note.empty()) out << fmt::format("  {:<18} {}\n", "", note);
    }
    emit();
  }
  out << "\n"
      << fmt::format("Summary: {} native, {} composite, {} fallback, {} fail", r.summary.native,
                     r.summary.composite, r.summary.fallback, r.summary.fail);
  if (r.summary.unknown) out << fmt::format(", {} unknown to the table", r.summary.unknown);
  out << "\n";
  if (r.summary.unknown > 0) {
    out << fmt::format(
        "{} operator{} unknown to the table (custom or extension operators): nothing says whether "
        "{} on MPS; run the task on a Mac to measure.\n",
        r.summary.unknown, r.summary.unknown == 1 ? " is" : "s are",
        r.summary.unknown == 1 ? "it runs" : "they run");
  }
  if (r.summary.fallback > 0) {
    out << "Operators without an MPS kernel error on MPS unless PYTORCH_ENABLE_MPS_FALLBACK=1, "
           "which runs "
           "them on the CPU.\n";
  }
  if (r.upgrade_version) {
    out << fmt::format("Upgrade to PyTorch >= {} removes {} fallback{}", *r.upgrade_version,
                       r.upgrade_removes, r.upgrade_removes == 1 ? "" : "s");
    out << (r.upgrade_remaining == 0 ? ": every traced operator then has an MPS kernel.\n"
                                     : fmt::format("; {} remain in every release of the tables.\n",
                                                   r.upgrade_remaining));
  } else if (r.summary.fallback > 0) {
    out << fmt::format("No release in the tables ({} to {}) removes these fallbacks.\n",
                       r.known_versions.front(), r.known_versions.back());
  }
  emit();
}

}  // namespace

std::string CoverageReportToText(const CoverageReport& r, bool markdown) {
  std::ostringstream out;
  WriteText(r, markdown, out, false);
  return out.str();
}

void WriteCoverageText(const CoverageReport& r, bool markdown, std::ostream& out) {
  WriteText(r, markdown, out, true);
}

}  // namespace dt::coverage
