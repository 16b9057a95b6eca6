// The rule registry and the knowledge base of CUDA-only libraries, both read from data/scan/ so that
// a new rule or library needs no C++ change.
#pragma once

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "scan/scan.h"
#include "util/result.h"

namespace dt::scan {

struct Rule {
  std::string code;
  std::string cls;
  Severity severity = Severity::kFixable;
  std::string title;
  std::string message;  // "{name}" is replaced by what matched.
  std::string replacement;
  std::string explanation;
};

// A Python API matched by resolved dotted name (longest dotted prefix wins).
struct PythonApi {
  std::string name;
  std::string code;         // Empty for guards.
  bool guard = false;       // Calling it is a CUDA availability check, not a finding.
  std::string replacement;  // Overrides the rule's when set.
};

struct Library {
  std::string name;
  std::vector<std::string> modules;   // Dotted import names.
  std::vector<std::string> packages;  // pip / conda names, '*' globs allowed, normalised.
  std::string alternative;
};

// A user rule from the file named by [tool.dualtrack] rules: a Python API prefix or a literal text.
struct UserRule {
  Rule rule;
  std::string python_api;
  std::string text;
  std::string files;  // Glob on the relative path; empty: every file.
};

class Registry {
 public:
  // Reads rules.json and libraries.json from `dir`.
  static Result<Registry> Load(const std::filesystem::path& dir);

  // Adds the rules of a user rule file (TOML or JSON); codes must not clash with built-in ones.
  Status AddUserRules(const std::filesystem::path& file);

  const Rule* FindRule(std::string_view code) const;
  const std::vector<Rule>& rules() const { return rules_; }
  const std::vector<Library>& libraries() const { return libraries_; }
  const std::vector<UserRule>& user_rules() const { return user_rules_; }

  // Longest registered dotted prefix of `dotted` ("torch.cuda.amp.autocast.__enter__").
  const PythonApi* MatchApi(std::string_view dotted) const;
  // The library whose module is a dotted prefix of `dotted`.
  const Library* LibraryForModule(std::string_view dotted) const;
  // The library that ships the pip / conda package `name` (any spelling).
  const Library* LibraryForPackage(std::string_view name) const;

  // Top-level module names of the knowledge base (prefilter needles).
  std::vector<std::string> ModuleNeedles() const;

 private:
  std::vector<Rule> rules_;
  std::unordered_map<std::string, std::size_t> rule_index_;
  std::vector<PythonApi> apis_;
  std::unordered_map<std::string, std::size_t> api_index_;
  std::vector<Library> libraries_;
  std::unordered_map<std::string, std::size_t> module_index_;
  // The first components of the two indexes' keys: most names a scanned file looks up (`os.path`,
  // `typing.List`) fail here without building a key string.
  std::set<std::string, std::less<>> api_tops_;
  std::set<std::string, std::less<>> module_tops_;
  std::vector<UserRule> user_rules_;
};

// pip's name normalisation: lower case, runs of '-', '_' and '.' become '-'.
std::string NormalizePackageName(std::string_view name);

// The rule's message with "{name}" replaced.
std::string FormatMessage(const Rule& rule, std::string_view name);

}  // namespace dt::scan
