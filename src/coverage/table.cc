#include "coverage/table.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "util/fs.h"
#include "util/json_fields.h"
#include "util/strings.h"

namespace dt::coverage {
namespace {

constexpr std::string_view kHeader =
    "# dualtrack coverage table 1: one line per operator overload, one class letter per release\n"
    "# N MPS kernel, E CompositeExplicitAutograd kernel, C CompositeImplicitAutograd "
    "(decomposes),\n"
    "# F no MPS kernel (cpu-fallback), A always on the CPU (MPSFallback.mm), - not in that "
    "release\n";

std::vector<long> VersionParts(std::string_view v) {
  std::vector<long> parts;
  for (std::string_view p : Split(v, '.')) {
    long n = 0;
    auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), n);
    (void)ptr;
    parts.push_back(ec == std::errc() ? n : -1);
  }
  return parts;
}

}  // namespace

bool VersionLess(std::string_view a, std::string_view b) {
  return VersionParts(a) < VersionParts(b);
}

Result<CapabilityTable> CapabilityTable::Parse(std::string_view text, const std::string& file) {
  CapabilityTable t;
  std::int64_t lineno = 0;
  std::size_t pos = 0;
  bool header_seen = false;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++lineno;
    if (line.empty() || line.front() == '#') continue;
    std::vector<std::string_view> cols = Split(line, '\t');
    if (!header_seen) {
      if (cols.size() < 2 || cols[0] != "op") {
        return MakeError(ErrorCode::kInput, "coverage table: expected a header 'op<TAB>version...'",
                         file, lineno);
      }
      for (std::size_t i = 1; i < cols.size(); ++i) t.versions_.emplace_back(cols[i]);
      if (!std::is_sorted(
              t.versions_.begin(), t.versions_.end(),
              [](const std::string& a, const std::string& b) { return VersionLess(a, b); })) {
        return MakeError(ErrorCode::kInput, "coverage table: releases must be in ascending order",
                         file, lineno);
      }
      header_seen = true;
      continue;
    }
    if (cols.size() != 2 || cols[0].empty() || cols[1].size() != t.versions_.size()) {
      return MakeError(ErrorCode::kInput,
                       "coverage table: expected 'operator<TAB>" +
                           std::to_string(t.versions_.size()) + " class letters'",
                       file, lineno);
    }
    for (char c : cols[1]) {
      if (!IsValidClassLetter(c)) {
        return MakeError(ErrorCode::kInput,
                         std::string("coverage table: unknown class letter '") + c + "'", file,
                         lineno);
      }
    }
    t.rows_.emplace(std::string(cols[0]), std::string(cols[1]));
  }
  if (!header_seen) {
    return MakeError(ErrorCode::kInput, "coverage table: empty (no header line)", file);
  }
  return t;
}

Result<CapabilityTable> CapabilityTable::Load(const std::filesystem::path& path) {
  auto text = ReadFile(path, 64u << 20);
  if (!text) return text.take_error();
  return Parse(*text, path.string());
}

CapabilityTable CapabilityTable::FromClasses(
    const std::string& version, const std::unordered_map<std::string, OpClass>& classes) {
  CapabilityTable t;
  t.versions_.push_back(version);
  for (const auto& [name, c] : classes) t.rows_.emplace(name, std::string(1, static_cast<char>(c)));
  return t;
}

std::string CapabilityTable::Serialize() const {
  std::vector<const std::pair<const std::string, std::string>*> rows;
  rows.reserve(rows_.size());
  for (const auto& r : rows_) rows.push_back(&r);
  std::sort(rows.begin(), rows.end(), [](auto* a, auto* b) { return a->first < b->first; });
  std::string out(kHeader);
  out += "op";
  for (const std::string& v : versions_) out += "\t" + v;
  out += "\n";
  for (const auto* r : rows) out += r->first + "\t" + r->second + "\n";
  return out;
}

Result<std::size_t> CapabilityTable::FindVersion(std::string_view want) const {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < versions_.size(); ++i) {
    const std::string& v = versions_[i];
    if (v == want || (StartsWith(v, want) && v.size() > want.size() && v[want.size()] == '.')) {
      best = i;  // Ascending order: the last match is the newest patch release.
    }
  }
  if (best) return *best;
  std::string known;
  for (const std::string& v : versions_) known += (known.empty() ? "" : ", ") + v;
  return MakeError(ErrorCode::kUsage, "unknown PyTorch release '" + std::string(want) +
                                          "'; the coverage tables know: " + known);
}

OpClass CapabilityTable::Get(std::string_view op, std::size_t v) const {
  auto it = rows_.find(std::string(op));
  if (it == rows_.end() || v >= it->second.size()) return OpClass::kAbsent;
  return static_cast<OpClass>(it->second[v]);
}

std::vector<std::string> CapabilityTable::Overloads(std::string_view base) const {
  std::vector<std::string> out;
  for (const auto& [name, letters] : rows_) {
    if (name == base ||
        (StartsWith(name, base) && name.size() > base.size() && name[base.size()] == '.')) {
      out.push_back(name);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<ReleaseSources> LoadReleaseSources(const std::filesystem::path& path,
                                          std::string_view version) {
  auto text = ReadFile(path, 16u << 20);
  if (!text) return text.take_error();
  auto parsed = ParseJson(*text, path.string());
  if (!parsed.ok()) return parsed.take_error();
  const nlohmann::json& j = *parsed;
  ReleaseSources out;
  try {
    const auto& revisions = j.at("revisions");
    std::string rev_name;
    const auto& releases = j.at("releases");
    if (releases.contains(std::string(version))) {
      const auto& rel = releases.at(std::string(version));
      rev_name = rel.at("always_cpu").get<std::string>();
      out.exact = rel.value("exact", false);
      out.provenance = rel.value("note", "");
    } else {
      rev_name = j.at("newest_revision").get<std::string>();
      out.exact = false;
      out.provenance = "release not listed in sources.json; using the newest stored revision";
    }
    const auto& rev = revisions.at(rev_name);
    out.lists.always_cpu = rev.at("always_cpu").get<std::vector<std::string>>();
    out.provenance = rev.at("source").get<std::string>() +
                     (out.provenance.empty() ? "" : " (" + out.provenance + ")");
    out.lists.hand_registered = j.at("hand_registered").at("ops").get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    return MakeError(ErrorCode::kInput, std::string("unexpected sources.json layout: ") + e.what(),
                     path.string());
  }
  return out;
}

}  // namespace dt::coverage
