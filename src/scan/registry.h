// The rule registry and the knowledge base of CUDA-only libraries, both read from data/scan/ so
// that a new rule or library needs no C++ change.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "scan/prefilter.h"
#include "scan/scan.h"
#include "util/result.h"
#include "util/strings.h"

namespace dt::scan {

struct Rule {
  std::string code;
  FindingClass cls = FindingClass::kDevice;
  Severity severity = Severity::kFixable;
  std::string title;
  std::string message;  // "{name}" is replaced by what matched.
  std::string replacement;
  std::string explanation;
  // The construct runs on the CPU and fails only on MPS (float64, an operator without an MPS
  // kernel): the Mac can run the experiment as written, on its CPU; MPS needs the edit first.
  bool mps_only = false;
  // It puts tensors or modules on a device (`.cuda()`, `device="cuda"`): once `dualtrack fix`
  // rewrites it, the work runs on the run-time choice, which is MPS on a Mac.
  bool placement = false;
  // `dualtrack fix` rewrites it: "safe" (the behaviour on CUDA is unchanged) or "unsafe" (only with
  // --unsafe-fixes: results may change); empty when it has no fix. An example for the rule's page.
  std::string fix;
  std::string fix_before;
  std::string fix_after;
};

// A Python API matched by resolved dotted name (longest dotted prefix wins).
struct PythonApi {
  std::string name;
  std::string code;         // Empty for guards.
  bool guard = false;       // Calling it is a CUDA availability check, not a finding.
  std::string replacement;  // Overrides the rule's when set.
  bool user = false;        // From a user rule file: reported at its imports too.
  // A call that passes this argument, by keyword or at `unless_position` (0-based) among its
  // positional ones, is not a finding (`torch.load(f, map_location=...)`, `torch.load(f, "cpu")`);
  // a `*args` / `**kwargs` spread may pass it. Set, only calls are findings.
  std::string unless_argument;
  int unless_position = -1;
  // Text that some analysed Python file of the project must contain for a use to be a finding
  // (`torch.save(`: the checkpoints a project loads without map_location are a risk when it writes
  // them itself, from a model it trains on CUDA; a project that only loads released weights is
  // spared). Its code belongs to this API alone (checked at load). Empty: no condition.
  std::string only_with;
  // The word the prefilters look for; empty: the name's last component. A last component that
  // most code writes (`load`) would send nearly every file to the lexer.
  std::string trigger;
};

// A keyword argument that reaches CUDA-only code without naming it: `load_in_8bit=True`
// (bitsandbytes through transformers), `optim="paged_adamw_32bit"`, `TrainingArguments(fp16=True)`
// (CUDA AMP), Lightning's `Trainer(gpus=...)`.
struct PythonKeyword {
  std::string keyword;  // The argument name.
  std::string value;    // Glob on the literal value (True, a string's body, a number); empty: any.
  std::string call;  // Glob on the resolved callee ("transformers.*TrainingArguments"); empty: any.
  std::string code;
  std::string replacement;  // Overrides the rule's when set.
};

struct Library {
  std::string name;
  std::vector<std::string> modules;  // Dotted import names (the compiled ones too).
  // Modules its build installs under names of their own (flash-attention's `rotary_emb`, apex's
  // `amp_C`): not trigger words, since only an import names them, which the scan reads in every
  // file (Registry::IsCompiledModule).
  std::vector<std::string> compiled_modules;
  std::vector<std::string> packages;  // pip / conda names, '*' globs allowed, normalised.
  std::string alternative;
  // Decorators that make a function a GPU kernel of this library (`triton.jit`): the kernel is one
  // finding at its definition and one per launch, never one per call inside its body.
  std::vector<std::string> kernel_decorators;
  // Words under which run configs name the library besides its modules and packages (axolotl's
  // `flash_attention: true`): a config key or value made of one selects it.
  std::vector<std::string> config_words;
  // Alternatives that fit one part of the library (`bitsandbytes.optim` vs `bitsandbytes.nn`),
  // by dotted prefix; the longest prefix of a use wins over `alternative`.
  std::vector<std::pair<std::string, std::string>> alternatives;

  const std::string& AlternativeFor(std::string_view dotted) const {
    const std::string* best = &alternative;
    std::size_t len = 0;
    for (const auto& [prefix, text] : alternatives)
      if (prefix.size() > len && dotted.substr(0, prefix.size()) == prefix &&
          (dotted.size() == prefix.size() || dotted[prefix.size()] == '.')) {
        best = &text;
        len = prefix.size();
      }
    return *best;
  }
};

// A user rule from the file named by [tool.dualtrack] rules: a Python API prefix or a literal text.
struct UserRule {
  Rule rule;
  std::string python_api;
  std::string text;
  std::string files;  // Glob on the relative path; empty: every file.
};

// A Python trigger word, and what else a file must hold for the word to make the file worth
// lexing and analysing (Registry::FileTriggers).
struct FileTrigger {
  std::string word;  // Lower-case.
  // Alternatives, each a set of co-words that must all occur: {{"torch"}} for torch.compile's
  // `compile` (re.compile is in every other file), {{"paged_"}, {"8bit"}, {"bnb"}} for `optim=`.
  // Empty: the word alone is enough.
  std::vector<std::vector<std::string>> needs;
  // The word counts only as a whole name, with no letter, digit or `_` on either side: an API's
  // last name (`compile` of torch.compile is not in `should_compile`), a keyword, a library's
  // module. False for the words found inside longer text (`cud`, a string value's prefix).
  bool whole = false;
};

class Registry {
 public:
  // Reads rules.json and libraries.json from `dir`.
  static Result<Registry> Load(const std::filesystem::path& dir);

  // Adds the rules of a user rule file (TOML or JSON); codes must not clash with built-in ones.
  Status AddUserRules(const std::filesystem::path& file);

  const Rule* FindRule(std::string_view code) const;
  // Whether `prefix` ("DT1", "DT101") starts some rule's code: what suppressions, --select and
  // --ignore may name.
  bool HasCodePrefix(std::string_view prefix) const;
  // The rule code closest to a mistyped one ("did you mean"), or empty.
  std::string ClosestCode(std::string_view code) const;
  // Rules marked "retired" in the data: never emitted, still valid in suppressions.
  bool IsRetired(std::string_view code) const { return retired_.count(std::string(code)) > 0; }
  const std::vector<Rule>& rules() const { return rules_; }
  const std::vector<Library>& libraries() const { return libraries_; }
  const std::vector<UserRule>& user_rules() const { return user_rules_; }

  // Longest registered dotted prefix of `dotted` ("torch.cuda.amp.autocast.__enter__").
  const PythonApi* MatchApi(std::string_view dotted) const;
  // The APIs whose findings need a project-wide text (PythonApi::only_with).
  const std::vector<PythonApi>& ProjectConditions() const { return project_conditions_; }
  // The library whose module is a dotted prefix of `dotted`.
  const Library* LibraryForModule(std::string_view dotted) const;
  // Whether `dotted` is in one of Library::compiled_modules (by its top-level name).
  bool IsCompiledModule(std::string_view dotted) const {
    return compiled_tops_.count(dotted.substr(0, dotted.find('.'))) > 0;
  }
  // The library that ships the pip / conda package `name` (any spelling).
  const Library* LibraryForPackage(std::string_view name) const;

  // Top-level module names of the knowledge base (prefilter needles).
  std::vector<std::string> ModuleNeedles() const;

  // The string-value rule whose glob matches a literal's body (`"paged_adamw_32bit"`), or null.
  const PythonKeyword* StringRule(std::string_view body) const {
    for (const auto& r : strings_)
      if (GlobMatch(r.value, body)) return &r;
    return nullptr;
  }
  // The keyword rules for argument name `keyword` (empty when none).
  const std::vector<PythonKeyword>* KeywordRules(std::string_view keyword) const;
  // Names and attributes whose truth means a launch mode that brings CUDA with it (`ddp`,
  // `LOCAL_RANK`, `world_size`): a branch on them is guarded like one on torch.cuda.is_available().
  // In any case (`LOCAL_RANK` is `local_rank`); the knowledge base lists them lower-case.
  bool IsLaunchGuardName(std::string_view name) const {
    if (name.size() >= 64) return launch_guards_.find(Lower(name)) != launch_guards_.end();
    // Asked for every name of every condition: the lengths of the few guard names turn most away
    // before any lower-case copy is made.
    if ((launch_guard_lengths_ >> name.size() & 1) == 0 ||
        (launch_guard_ends_ >> LaunchEndsSlot(name) & 1) == 0)
      return false;
    char lower[64];
    for (std::size_t i = 0; i < name.size(); ++i)
      lower[i] =
          name[i] >= 'A' && name[i] <= 'Z' ? static_cast<char>(name[i] + ('a' - 'A')) : name[i];
    return launch_guards_.find(std::string_view(lower, name.size())) != launch_guards_.end();
  }
  // Environment variables only a multi-process launcher sets (`"RANK"`, `"SLURM_PROCID"`), as a
  // string in a condition: `if "RANK" in os.environ:`. Exact spelling.
  bool IsLaunchEnv(std::string_view body) const { return launch_env_.count(body) > 0; }
  // The library whose kernel decorator `dotted` is (`triton.jit`), or null.
  const Library* KernelDecorator(std::string_view dotted) const;

  // The words whose presence makes a Python file or statement worth analysing: derived from the
  // registry and the knowledge base (API names, keywords, modules, guard names) plus the words of
  // the hand-written detectors, so that an API added to the data alone is found.
  const std::vector<std::string>& PythonTriggers() const { return python_triggers_; }
  // The same words as a prefilter (shared by every file a scan lexes).
  const Prefilter& PythonPrefilter() const { return *python_prefilter_; }
  // The words that decide whether a Python file is analysed at all: those that can make a finding
  // (not the guard words such as `hip` or `world_size`), each with the co-words its finding needs.
  const std::vector<FileTrigger>& FileTriggers() const { return file_triggers_; }

 private:
  std::vector<Rule> rules_;
  std::unordered_map<std::string, std::size_t> rule_index_;
  std::vector<PythonApi> apis_;
  // Looked up by views (each prefix of a dotted name in turn) without a string built per prefix.
  using ViewIndex = std::unordered_map<std::string, std::size_t, NameHash, std::equal_to<>>;
  ViewIndex api_index_;
  std::vector<Library> libraries_;
  ViewIndex module_index_;
  // The first components of the two indexes' keys: most names a scanned file looks up (`os.path`,
  // `typing.List`) fail here without building a key string.
  std::set<std::string, std::less<>> api_tops_;
  std::set<std::string, std::less<>> module_tops_;
  std::set<std::string, std::less<>> compiled_tops_;  // Of Library::compiled_modules.
  std::vector<PythonApi> project_conditions_;         // Copies of those apis_ entries.
  std::vector<UserRule> user_rules_;
  std::unordered_map<std::string, std::vector<PythonKeyword>> keywords_;
  std::vector<PythonKeyword> strings_;  // python_strings: only value, code and replacement.
  std::set<std::string, std::less<>> launch_guards_;
  std::set<std::string, std::less<>> launch_env_;
  std::uint64_t launch_guard_lengths_ = 0;  // Bit n: a launch guard name has n bytes (n < 64).
  std::uint64_t launch_guard_ends_ = 0;     // Bit LaunchEndsSlot(name) of each launch guard name.
  // A non-empty name's first and last letters, in any case, folded into 0..63.
  static unsigned LaunchEndsSlot(std::string_view name) {
    return ((static_cast<unsigned char>(name.front()) | 0x20) * 7 +
            (static_cast<unsigned char>(name.back()) | 0x20)) &
           63;
  }
  std::set<std::string> retired_;
  std::vector<std::string> python_triggers_;
  std::shared_ptr<Prefilter> python_prefilter_;
  std::vector<FileTrigger> file_triggers_;

  // Load()'s parts: rules.json's sections (each records the codes its entries name in
  // `referenced`), the check that detectors and data agree on the codes, libraries.json.
  Status LoadRules(const nlohmann::json& doc, const std::string& file,
                   std::set<std::string>& referenced);
  Status LoadPythonApis(const nlohmann::json& doc, const std::string& file,
                        std::set<std::string>& referenced);
  Status LoadPythonPatterns(const nlohmann::json& doc, const std::string& file,
                            std::set<std::string>& referenced);
  Status CheckCodes(std::set<std::string> referenced, const std::string& file) const;
  Status LoadLibraries(const nlohmann::json& doc, const std::string& file);
  void BuildTriggers();
};

// The codes the C++ detectors emit (scan/codes.cc). Registry::Load checks them against the data
// both ways: a detector code the data lacks, or a data rule that nothing emits, fails the load.
const std::vector<std::string_view>& DetectorCodes();

// pip's name normalisation: lower case, runs of '-', '_' and '.' become '-'.
std::string NormalizePackageName(std::string_view name);

// The rule's message with "{name}" replaced.
std::string FormatMessage(const Rule& rule, std::string_view name);

}  // namespace dt::scan
