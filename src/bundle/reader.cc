#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <system_error>

#include "bundle/bundle.h"
#include "compare/tensor.h"
#include "util/fs.h"
#include "util/json_fields.h"
#include "util/json_number.h"
#include "util/strings.h"

namespace dt::bundle {

// Here, beside the manifest reader, so that every binary that reads bundles (the fuzz targets
// too) has them.
const char* ToString(RunStatus s) {
  switch (s) {
    case RunStatus::kOk:
      return "ok";
    case RunStatus::kFailed:
      return "failed";
    case RunStatus::kKilled:
      return "killed";
    case RunStatus::kIncomplete:
      return "incomplete";
  }
  return "incomplete";
}

std::optional<RunStatus> ParseRunStatus(std::string_view s) {
  for (RunStatus r :
       {RunStatus::kOk, RunStatus::kFailed, RunStatus::kKilled, RunStatus::kIncomplete})
    if (s == ToString(r)) return r;
  return std::nullopt;
}

const char* ToString(OpStatus s) {
  switch (s) {
    case OpStatus::kOk:
      return "ok";
    case OpStatus::kFallback:
      return "fallback";
    case OpStatus::kFailed:
      return "failed";
  }
  return "ok";
}

std::optional<OpStatus> ParseOpStatus(std::string_view s) {
  for (OpStatus o : {OpStatus::kOk, OpStatus::kFallback, OpStatus::kFailed})
    if (s == ToString(o)) return o;
  return std::nullopt;
}

const char* ToString(OutcomeKind k) {
  switch (k) {
    case OutcomeKind::kFinished:
      return "finished";
    case OutcomeKind::kFailed:
      return "failed";
    case OutcomeKind::kCrashed:
      return "crashed";
    case OutcomeKind::kCouldNotStart:
      return "could-not-start";
    case OutcomeKind::kInterrupted:
      return "interrupted";
    case OutcomeKind::kTimedOut:
      return "timed-out";
    case OutcomeKind::kTracerError:
      return "tracer-error";
  }
  return "failed";
}

std::optional<OutcomeKind> ParseOutcomeKind(std::string_view s) {
  for (OutcomeKind k : {OutcomeKind::kFinished, OutcomeKind::kFailed, OutcomeKind::kCrashed,
                        OutcomeKind::kCouldNotStart, OutcomeKind::kInterrupted,
                        OutcomeKind::kTimedOut, OutcomeKind::kTracerError})
    if (s == ToString(k)) return k;
  return std::nullopt;
}

bool IsTaskEvidence(OutcomeKind k) {
  return k == OutcomeKind::kFinished || k == OutcomeKind::kFailed || k == OutcomeKind::kCrashed;
}

namespace {

using nlohmann::json;

constexpr std::uint64_t kMaxJsonlBytes = 512u << 20;

Error InputError(const std::filesystem::path& file, std::int64_t line, std::string message) {
  return MakeError(ErrorCode::kInput, std::move(message), file.string(), line);
}

// Calls `row(json, line_number)` for each non-empty line; a parse error names the file and line.
template <class F>
Status ForEachJsonLine(const std::filesystem::path& path, F&& row) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return OkStatus();
  auto text = ReadFile(path, kMaxJsonlBytes);
  if (!text) return text.take_error();
  std::int64_t line_no = 0;
  std::size_t pos = 0;
  const std::string& s = *text;
  while (pos < s.size()) {
    std::size_t nl = s.find('\n', pos);
    if (nl == std::string::npos) nl = s.size();
    ++line_no;
    std::string_view line = Trim(std::string_view(s).substr(pos, nl - pos));
    pos = nl + 1;
    if (line.empty()) continue;
    // NaN and infinities (a diverged loss) arrive as bare tokens from older tracers.
    auto parsed = ParseJson(QuoteNonFiniteTokens(line), path.string(), line_no);
    if (!parsed.ok()) return parsed.take_error();
    const json& j = *parsed;
    if (!j.is_object()) return InputError(path, line_no, "not a JSON object");
    if (auto st = row(j, line_no); !st) return st;
  }
  return OkStatus();
}

Result<std::string> RequireString(const json& j, const char* key, const std::filesystem::path& file,
                                  std::int64_t line) {
  if (!j.contains(key) || !j[key].is_string()) {
    return InputError(file, line, std::string("field '") + key + "' is missing or not a string");
  }
  return j[key].get<std::string>();
}

}  // namespace

Result<std::vector<TensorInfo>> ParseSafetensorsHeader(std::string_view bytes,
                                                       const std::string& file_name) {
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  std::vector<compare::TensorInfo> parsed;
  if (auto s = compare::ReadSafetensors(data, bytes.size(), file_name, "", parsed); !s) {
    return s.take_error();
  }
  std::vector<TensorInfo> out;
  out.reserve(parsed.size());
  for (const compare::TensorInfo& t : parsed) {
    TensorInfo x;
    x.name = t.name;
    x.dtype = std::string(compare::SafetensorsName(t.dtype));
    for (std::uint64_t d : t.shape) x.shape.push_back(static_cast<std::int64_t>(d));
    x.begin = static_cast<std::uint64_t>(t.storage.data - data);
    x.end = x.begin + compare::StorageBytes(t);
    out.push_back(std::move(x));
  }
  return out;
}

namespace {

// The same as ForEachJsonLine, reading the file in chunks: memory holds a chunk and the longest
// line, never the whole file (a 150 MB ops.jsonl held whole, with its rows, took gigabytes).
template <class F>
Status ForEachStreamedJsonLine(const std::filesystem::path& path, F&& row) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return OkStatus();
  auto fd = OpenRegularFile(path);
  if (!fd) return fd.take_error();
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  std::string pending;  // The start of a line that continues in the next chunk.
  std::vector<char> chunk(kChunk);
  std::int64_t line_no = 0;
  auto one_line = [&](std::string_view raw) -> Status {
    ++line_no;
    std::string_view line = Trim(raw);
    if (line.empty()) return OkStatus();
    auto parsed = ParseJson(QuoteNonFiniteTokens(line), path.string(), line_no);
    if (!parsed.ok()) return parsed.take_error();
    if (!parsed->is_object()) return InputError(path, line_no, "not a JSON object");
    return row(*parsed, line_no);
  };
  for (;;) {
    const ssize_t got = ::read(fd->get(), chunk.data(), chunk.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0)
      return MakeError(ErrorCode::kIo, "cannot read: " + ErrnoMessage(errno), path.string());
    if (got == 0) break;
    std::string_view data(chunk.data(), static_cast<std::size_t>(got));
    for (std::size_t nl; (nl = data.find('\n')) != std::string_view::npos;) {
      Status st = OkStatus();
      if (pending.empty()) {
        st = one_line(data.substr(0, nl));
      } else {
        pending.append(data.substr(0, nl));
        st = one_line(pending);
        pending.clear();
      }
      if (!st) return st;
      data.remove_prefix(nl + 1);
    }
    if (pending.size() + data.size() > kMaxJsonlBytes)
      return InputError(path, line_no + 1, "line longer than 512 MiB");
    pending.append(data);
  }
  if (!pending.empty()) return one_line(pending);
  return OkStatus();
}

}  // namespace

std::optional<Location> ParseLocation(const json& j) {
  if (!j.is_object()) return std::nullopt;
  Location loc;
  loc.file = JsonString(j, "file");
  if (j.contains("line") && j["line"].is_number_integer()) loc.line = j["line"].get<std::int64_t>();
  loc.function = JsonString(j, "function");
  if (loc.file.empty()) return std::nullopt;
  return loc;
}

Status ForEachJsonObjectLine(const std::filesystem::path& path,
                             const std::function<Status(const json&, std::int64_t)>& each) {
  return ForEachStreamedJsonLine(path, each);
}

Status ForEachOpRow(const std::filesystem::path& path, const std::function<Status(OpRow&&)>& each) {
  return ForEachStreamedJsonLine(path, [&](const json& j, std::int64_t line) -> Status {
    OpRow r;
    auto op = RequireString(j, "op", path, line);
    if (!op) return op.take_error();
    if (op->empty()) return InputError(path, line, "field 'op' is empty");
    r.op = std::move(*op);
    r.overload = JsonString(j, "overload");
    if (r.overload.empty()) r.overload = "default";
    r.device = JsonString(j, "device");
    if (j.contains("dtypes") && !j["dtypes"].is_null()) {
      if (!j["dtypes"].is_array())
        return InputError(path, line, "'dtypes' must be a list of strings");
      for (const json& d : j["dtypes"]) {
        if (!d.is_string()) return InputError(path, line, "'dtypes' must be a list of strings");
        r.dtypes.push_back(d.get<std::string>());
      }
    }
    r.count = 1;  // A hand-written trace may list each call once.
    if (j.contains("count")) {
      if (!j["count"].is_number_integer() || j["count"].get<std::int64_t>() < 0) {
        return InputError(path, line, "field 'count' must be a non-negative integer");
      }
      r.count = j["count"].get<std::int64_t>();
    }
    if (j.contains("location") && !j["location"].is_null()) {
      if (!j["location"].is_object()) {
        return InputError(path, line, "field 'location' must be an object or null");
      }
      r.location = ParseLocation(j["location"]);
    }
    if (j.contains("status") && !j["status"].is_null()) {
      const auto status =
          j["status"].is_string() ? ParseOpStatus(j["status"].get<std::string>()) : std::nullopt;
      if (!status) return InputError(path, line, "field 'status' must be ok, fallback or failed");
      r.status = *status;
    }
    r.error = JsonString(j, "error");
    for (const char* key : {"max_ndim", "ndim"}) {
      if (j.contains(key) && j[key].is_number_integer()) {
        r.max_ndim = std::max(r.max_ndim, j[key].get<std::int64_t>());
      }
    }
    return each(std::move(r));
  });
}

Result<std::vector<OpRow>> ReadOpsJsonl(const std::filesystem::path& path) {
  std::vector<OpRow> rows;
  Status st = ForEachOpRow(path, [&](OpRow&& r) {
    rows.push_back(std::move(r));
    return OkStatus();
  });
  if (!st) return st.take_error();
  return rows;
}

namespace {

// manifest.json: JSON, of the bundle schema, with a known status and a track; every file it lists
// must still be in the folder.
Status ReadManifest(const std::filesystem::path& dir, Bundle& b) {
  std::error_code ec;
  const auto manifest_path = dir / "manifest.json";
  if (!std::filesystem::exists(manifest_path, ec)) {
    return MakeError(ErrorCode::kInput, "no manifest.json: not a dualtrack bundle", dir.string());
  }
  auto text = ReadFile(manifest_path, 64u << 20);
  if (!text) return text.take_error();
  auto manifest = ParseJson(*text, manifest_path.string());
  if (!manifest.ok()) return manifest.take_error();
  b.manifest = std::move(*manifest);
  if (!b.manifest.is_object()) return InputError(manifest_path, 0, "not a JSON object");
  auto schema = RequireString(b.manifest, "schema", manifest_path, 0);
  if (!schema) return schema.take_error();
  if (*schema != kManifestSchema) {
    return InputError(manifest_path, 0,
                      "schema is '" + *schema + "', expected '" + kManifestSchema + "'");
  }
  auto status = RequireString(b.manifest, "status", manifest_path, 0);
  if (!status) return status.take_error();
  const auto parsed = ParseRunStatus(*status);
  if (!parsed) return InputError(manifest_path, 0, "unknown status '" + *status + "'");
  b.status = *parsed;
  auto track = RequireString(b.manifest, "track", manifest_path, 0);
  if (!track) return track.take_error();
  b.track = *track;
  // Bundles written before the outcome was recorded have none; a value nobody writes is an error.
  if (const auto it = b.manifest.find("outcome"); it != b.manifest.end() && !it->is_null()) {
    const auto outcome = it->is_string() ? ParseOutcomeKind(it->get<std::string>()) : std::nullopt;
    if (!outcome) {
      return InputError(manifest_path, 0,
                        "unknown outcome " + it->dump() +
                            " (expected finished, failed, crashed, could-not-start, interrupted, "
                            "timed-out or tracer-error)");
    }
    b.outcome = *outcome;
  }
  // The files the run recorded must still be there: a bundle whose ops.jsonl was lost must not
  // read as a run of zero operators.
  if (b.manifest.contains("files") && b.manifest["files"].is_object()) {
    for (const auto& [name, size] : b.manifest["files"].items()) {
      if (name.find('/') != std::string::npos || name == ".." || name == ".") continue;
      if (!std::filesystem::exists(dir / name, ec)) {
        return InputError(manifest_path, 0,
                          "the manifest lists '" + name +
                              "' but the bundle folder no longer holds it: the bundle is "
                              "incomplete (copy the whole folder, or run again)");
      }
    }
  }
  return OkStatus();
}

// metrics.jsonl: one {"step", "name", "value"} per line; NaN and infinities as string tokens.
Status ReadMetrics(const std::filesystem::path& metrics_path, std::vector<MetricRow>& out) {
  return ForEachJsonLine(metrics_path, [&](const json& j, std::int64_t line) -> Status {
    MetricRow m;
    auto name = RequireString(j, "name", metrics_path, line);
    if (!name) return name.take_error();
    m.name = *name;
    if (!j.contains("step") || !j["step"].is_number_integer()) {
      return InputError(metrics_path, line, "field 'step' is missing or not an integer");
    }
    m.step = j["step"].get<std::int64_t>();
    auto value = j.contains("value") ? JsonNumberOrNonFinite(j["value"]) : std::nullopt;
    if (!value) {
      return InputError(metrics_path, line,
                        "field 'value' is missing or not a number (nor \"NaN\", \"Infinity\", "
                        "\"-Infinity\")");
    }
    m.value = *value;
    out.push_back(std::move(m));
    return OkStatus();
  });
}

// tensors.safetensors' header, when the file is there.
Status ReadTensorIndex(const std::filesystem::path& tensors_path, std::vector<TensorInfo>& out) {
  std::error_code ec;
  if (!std::filesystem::exists(tensors_path, ec)) return OkStatus();
  auto mapped = MappedFile::Open(tensors_path);
  if (!mapped) return mapped.take_error();
  auto tensors = ParseSafetensorsHeader(mapped->view(), tensors_path.string());
  // Truncated while read: the header may have been read as zeros (util's map guard).
  if (auto st = mapped->CheckUnchanged(); !st) return st.take_error();
  if (!tensors) return tensors.take_error();
  out = std::move(*tensors);
  return OkStatus();
}

}  // namespace

Result<Bundle> LoadBundle(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return MakeError(ErrorCode::kInput, "not a bundle directory", dir.string());
  }
  Bundle b;
  b.dir = dir;
  if (auto st = ReadManifest(dir, b); !st) return st.take_error();
  auto ops = ReadOpsJsonl(dir / "ops.jsonl");
  if (!ops) return ops.take_error();
  b.ops = std::move(*ops);
  if (auto st = ReadMetrics(dir / "metrics.jsonl", b.metrics); !st) return st.take_error();
  if (auto st = ReadTensorIndex(dir / "tensors.safetensors", b.tensors); !st)
    return st.take_error();
  return b;
}

}  // namespace dt::bundle
