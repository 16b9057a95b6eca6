// Capability tables: for each operator overload, its OpClass in each PyTorch release. Shipped as
// data/coverage/ops.tsv; `coverage --probe` and `coverage --yaml --write-table` write the same
// format.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "coverage/native_functions.h"
#include "util/result.h"

namespace dt::coverage {

class CapabilityTable {
 public:
  // Parses the text format (header `op<TAB>v1<TAB>v2...`, then `name<TAB>letters`).
  static Result<CapabilityTable> Parse(std::string_view text, const std::string& file);
  static Result<CapabilityTable> Load(const std::filesystem::path& path);
  // One release built from a classification (the YAML path).
  static CapabilityTable FromClasses(const std::string& version,
                                     const std::unordered_map<std::string, OpClass>& classes);

  std::string Serialize() const;

  // Releases in ascending order.
  const std::vector<std::string>& versions() const { return versions_; }
  // Index of the release `want` names: exact ("2.4.1") or a prefix of dot-separated parts ("2.4"
  // picks the newest 2.4.x). Error listing the known releases otherwise.
  Result<std::size_t> FindVersion(std::string_view want) const;
  // The class of `op` ("add.Tensor", "relu"; no "aten::") in release `v`; kAbsent when unknown.
  OpClass Get(std::string_view op, std::size_t v) const;
  bool Has(std::string_view op) const { return rows_.count(std::string(op)) != 0; }
  // Overload names of `base` ("add" → "add", "add.Tensor", ...), sorted.
  std::vector<std::string> Overloads(std::string_view base) const;
  std::size_t size() const { return rows_.size(); }

 private:
  std::vector<std::string> versions_;
  std::unordered_map<std::string, std::string> rows_;  // op → one letter per version.
};

// Orders "2.10.0" after "2.9.1".
bool VersionLess(std::string_view a, std::string_view b);

// The always-CPU and hand-registered lists of one release, from data/coverage/sources.json.
struct ReleaseSources {
  SourceLists lists;
  std::string provenance;  // Where the lists come from, in words.
  bool exact = false;      // False when taken from the nearest stored source revision.
};

// Reads sources.json and picks `version`'s entry; a release it does not list gets the newest
// revision's lists with exact=false.
Result<ReleaseSources> LoadReleaseSources(const std::filesystem::path& path,
                                          std::string_view version);

}  // namespace dt::coverage
