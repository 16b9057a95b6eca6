// The semantic model of one Python file: what its code binds, imports, checks and guards, built
// once from the lexed tokens (python_lexer.h) and then queried by the rules (python_rules.h). It
// reports nothing itself: rule codes and the finding sink are the rules' business.
//
// Built in two steps (python_model_build.cc): the facts that need no guard (logical lines,
// scopes with their parameters, import aliases and handles, optional and required imports,
// kernels), then the guards (python_guards.cc: the names and attributes that hold a CUDA check,
// the condition evaluator, and per line whether it runs only behind a check). The rules add what
// they find while they read the lines in order (extension handles, hot names), which later lines'
// queries see.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "scan/prefilter.h"
#include "scan/python_lexer.h"
#include "scan/python_scanner.h"
#include "scan/python_settings.h"
#include "scan/python_tokens.h"
#include "scan/registry.h"
#include "util/strings.h"

namespace dt::scan {

// Whether a guard expression holds only where CUDA is present (or chosen), only where it is not,
// or says nothing either way.
enum class Truth { kNone, kCuda, kNoCuda };

inline Truth Flip(Truth t) {
  return t == Truth::kCuda ? Truth::kNoCuda : t == Truth::kNoCuda ? Truth::kCuda : Truth::kNone;
}

// A set of names with a 256-bit summary of their lengths and first and last bytes: Maybe() tests
// every name token of a statement against a few such sets, and the summary turns most tokens away
// without hashing them.
class NameSet {
 public:
  bool insert(std::string_view name) {
    if (name.empty()) return false;
    bits_[Slot(name) >> 6] |= std::uint64_t{1} << (Slot(name) & 63);
    if ((size_ + 1) * 2 > table_.size()) Grow();
    return Place(name);
  }
  std::size_t count(std::string_view name) const {
    if (!MayHold(name)) return 0;
    const std::size_t mask = table_.size() - 1;
    for (std::size_t i = HashName(name) & mask;; i = (i + 1) & mask) {
      if (table_[i].data() == nullptr) return 0;
      if (table_[i] == name) return 1;
    }
  }
  bool MayHold(std::string_view name) const {
    return !name.empty() && (bits_[Slot(name) >> 6] >> (Slot(name) & 63) & 1) != 0;
  }
  // Word w of the summary, for a test against the union of several sets.
  std::uint64_t Bits(int w) const { return bits_[w]; }
  // The summary bit of a non-empty name.
  static unsigned Slot(std::string_view n) {
    const std::size_t front = static_cast<unsigned char>(n.front());
    const std::size_t back = static_cast<unsigned char>(n.back());
    return static_cast<unsigned>(n.size() * 31 + front * 7 + back) & 255;
  }

 private:
  bool Place(std::string_view name) {
    const std::size_t mask = table_.size() - 1;
    for (std::size_t i = HashName(name) & mask;; i = (i + 1) & mask) {
      if (table_[i].data() == nullptr) {
        table_[i] = name;
        ++size_;
        return true;
      }
      if (table_[i] == name) return false;
    }
  }
  void Grow() {
    std::vector<std::string_view> old(std::max<std::size_t>(16, table_.size() * 2));
    old.swap(table_);
    size_ = 0;
    for (std::string_view n : old)
      if (n.data() != nullptr) Place(n);
  }

  std::uint64_t bits_[4] = {0, 0, 0, 0};
  // Open addressing with linear probing, at most half full (a per-file set: one allocation as it
  // grows instead of one per name). A name is never empty, so a null view marks a free slot.
  std::vector<std::string_view> table_;
  std::size_t size_ = 0;
};

// A function, class or the module: names resolve in their own scope first (a parameter called
// CUDA_HOME is not the import of it elsewhere).
struct PyScope {
  int parent = -1;
  int top = -1;  // The enclosing module-level definition (itself when at module level); -1: module.
  bool is_def = false;
  std::uint32_t indent = 0;
  std::string_view name;
  std::size_t first_line = 0;  // Its first decorator line, or its def/class line.
  std::size_t def_line = 0;
  std::size_t last_line = 0;  // Its last logical line.
  std::unordered_map<std::string_view, std::string> alias;
  std::unordered_set<std::string_view> params;
  // Parameters that default to a literal False (`sparse: bool = False`) and no call in the file
  // sets to anything else: feature switches off unless a caller turns them on. In a class: the
  // attributes its __init__ copies from such a parameter (`self.sparse = sparse`).
  std::unordered_set<std::string_view> off_params;
  std::unordered_set<std::string_view> off_attrs;
  std::unordered_set<std::string_view> local_names;  // Extension handles bound in this scope.
  bool kernel = false;  // A GPU kernel (a `@triton.jit` function): one finding, no body findings.
  std::size_t kernel_line = 0;  // The decorator line its finding is reported at.
};

// Physical lines [first, last], 1-based.
struct LineRange {
  std::uint32_t first;
  std::uint32_t last;
};

class PyModel;

// What a condition says about CUDA (python_guards.cc): `not` binds to its operand, a conjunction
// holds where any of its terms does, a disjunction only where all of them do; each comparison or
// test is read for its shape (negated, numeric) and its subject (a device string, a CUDA check,
// a flag, a launcher's variable).
class CondEvaluator {
 public:
  explicit CondEvaluator(const PyModel& model) : m_(model) {}
  Truth Cond(std::size_t b, std::size_t e, int scope) const;

 private:
  // How a test reads, whatever it tests.
  struct TestShape {
    bool negated = false;  // `!= "cuda"`, `is None`, `not in`.
    int numeric = 0;  // Against a number: +1 `> 1`, `!= -1`, `>= 1`; -1 `== 1`, `< 2`, `== -1`.
    bool eq_zero = false;       // `== 0`.
    bool says_nothing = false;  // `x in [-1, 0]`: holds in a single process and a launch alike.
  };

  std::vector<std::pair<std::size_t, std::size_t>> SplitTop(std::size_t b, std::size_t e,
                                                            std::string_view word) const;
  Truth Atom(std::size_t b, std::size_t e, int scope) const;
  TestShape ShapeOf(std::size_t b, std::size_t e) const;
  Truth Subject(std::size_t b, std::size_t e, int scope, std::string& launch) const;
  bool ListHoldsMinusOne(std::size_t open, std::size_t e) const;
  const std::unordered_set<std::string>& MinusOneRanks() const;

  const PyModel& m_;
  mutable std::unordered_set<std::string> minus_one_ranks_;  // See MinusOneRanks().
  mutable bool minus_one_read_ = false;
};

// The model of one file. Its tokens live in the thread's lexer storage, reused from file to file
// (a scanner thread lexes thousands), so a thread holds one model at a time; the names it keeps
// are views into the source, which outlives it.
class PyModel : public PyTokens {
 public:
  PyModel(std::string_view src, const Registry& reg, const PyScanOptions& opt);
  PyModel(const PyModel&) = delete;
  PyModel& operator=(const PyModel&) = delete;

  // --- Building (python_model_build.cc) ----------------------------------------------------------

  // Whether the file needs only its imports and its module test: asked so (imports_only), or no
  // trigger word stands in its code and nothing else asks for the analysis.
  bool ImportsOnly() const;
  // The imports (guarded when optional, for reachability) and whether the file is a script: the
  // same as Build() finds, at a fraction of its cost. No name of the file is bound.
  void BuildImports();
  // Every fact: scopes, bindings, imports, kernels, guards, and each line's guard state.
  void Build();

  // --- Tokens and lines: see PyTokens (python_tokens.h) ---------------------------------------

  const Registry& reg() const { return reg_; }
  std::string_view source() const { return source_; }

  // --- Scopes ------------------------------------------------------------------------------------

  const std::vector<PyScope>& scopes() const { return scopes_; }
  const PyScope& scope(int s) const { return scopes_[static_cast<std::size_t>(s)]; }
  int ScopeOf(std::size_t li) const { return line_scope_[li]; }
  // The module-level definition holding line li, or -1 at module level.
  int TopOf(std::size_t li) const {
    const int scope = ScopeOf(li);
    return scope > 0 ? scopes_[static_cast<std::size_t>(scope)].top : -1;
  }
  // The physical lines of scope s, its decorators included.
  LineRange ScopeLines(std::size_t s) const;
  // The module-level def or class of that name, or nullptr.
  const int* TopDef(std::string_view name) const {
    auto it = top_names_.find(name);
    return it == top_names_.end() ? nullptr : &it->second;
  }
  // A parameter of an enclosing function hides a module-level name of the same spelling.
  bool Shadowed(std::string_view name, int s) const;

  // --- Names -------------------------------------------------------------------------------------

  // The import target a name resolves to in scope `s`, or null (unbound or shadowed by a
  // parameter).
  const std::string* Lookup(std::string_view name, int s) const {
    if (!alias_filter_.count(name)) return nullptr;  // Bound by no import of the file (most names).
    return LookupBound(name, s);
  }
  // Whether `name` is an extension handle in scope `s`.
  bool IsHandle(std::string_view name, int s) const {
    if (!handle_filter_.count(name)) return false;
    return IsHandleBound(name, s);
  }
  // The chain of NAME(.NAME)* starting at k, resolved through the import aliases of scope `s`.
  std::size_t Chain(std::size_t k, std::size_t end, int s, std::string& resolved,
                    std::string& head) const;
  // A call's resolved callee name for the bracket at `open`.
  std::string Callee(std::size_t open, std::size_t b, int scope) const;
  // Rebound in an ImportError handler (`except ImportError: fused_relu = torch.relu`).
  bool IsFallbackName(std::string_view name) const { return fallback_names_.count(name) > 0; }
  bool IsGlobal(std::string_view name) const { return globals_.count(name) > 0; }

  // --- Imports and what they name ----------------------------------------------------------------

  std::vector<PyImport>& imports() { return imports_; }
  const std::vector<PyImport>& imports() const { return imports_; }
  bool has_main() const { return has_main_; }
  bool IsOptionalLine(std::size_t li) const { return optional_line_[li]; }
  // In a `try:` whose ImportError handler only raises.
  bool IsRequiredLine(std::size_t li) const { return required_line_[li]; }
  // The absolute module of a relative import with `level` dots, or "" when unknown.
  std::string Absolute(int level, const std::string& mod) const;
  bool IsOwn(std::string_view dotted) const;
  // The knowledge-base library of an import target, unless the project itself owns the name.
  const Library* LibraryOf(std::string_view dotted) const {
    if (IsOwn(dotted)) return nullptr;
    return reg_.LibraryForModule(dotted);
  }
  // A module that only exists where a CUDA extension was built: declared by another file (setup.py,
  // load(), a git submodule) or named like one ("fused_gelu_cuda").
  bool IsExtensionModule(std::string_view module) const;
  // Whether extension module `dotted` also has a CPU build (`extension = CppExtension`,
  // CUDAExtension only where CUDA is found): the Mac gets that build.
  bool IsCpuBuilt(const std::string& dotted) const {
    return opt_.cuda != nullptr && opt_.cuda->IsCpuBuilt(dotted);
  }
  bool IsReexported(const std::string& dotted) const {
    return opt_.cuda != nullptr && opt_.cuda->reexported.count(dotted) > 0;
  }
  bool IsCudaSymbol(const std::string& dotted) const {
    return opt_.cuda != nullptr && opt_.cuda->symbols.count(dotted) > 0;
  }
  // Whether CUDA symbol `dotted` (IsCudaSymbol) reaches a compiled extension, not only GPU kernels.
  bool ReachesExtension(const std::string& dotted) const {
    auto it = opt_.cuda->symbols.find(dotted);
    return it != opt_.cuda->symbols.end() && it->second;
  }
  // A module or package with CUDA symbols inside: its attribute chains are resolved.
  bool HoldsCudaSymbols(const std::string& dotted) const {
    return opt_.cuda != nullptr && opt_.cuda->symbol_packages.count(dotted) > 0;
  }
  bool SiblingSymbol(const std::string& dotted) const;

  // --- Kernels -----------------------------------------------------------------------------------

  // Whether line li lies in a kernel's body or decorators.
  bool InKernel(std::size_t li) const {
    return !decorator_kernel_.empty() && (InKernelBody(li) || KernelDecoratedAt(li) >= 0);
  }
  // Whether line li lies in a kernel's body (decorator lines belong to the scope around the def).
  bool InKernelBody(std::size_t li) const;
  // The kernel scope whose decorators or def line li is, or -1.
  int KernelDecoratedAt(std::size_t li) const {
    auto it = decorator_kernel_.find(li);
    return it == decorator_kernel_.end() ? -1 : it->second;
  }
  // The library of the file's kernels (the last found), or nullptr.
  const Library* kernel_lib() const { return kernel_lib_; }
  bool IsKernelName(std::string_view name) const { return kernel_names_.count(name) > 0; }
  // Whether line li launches a kernel (`kernel[grid](...)` anywhere on it).
  bool InLaunch(std::size_t li) const;
  // A function that launches a kernel of this file.
  bool IsLaunchScope(int scope) const { return launch_scopes_.count(scope) > 0; }

  // --- Guards (python_guards.cc) -----------------------------------------------------------------

  // What condition [b, e) says about CUDA.
  Truth Cond(std::size_t b, std::size_t e, int scope) const { return cond_.Cond(b, e, scope); }
  // Names that hold a CUDA check (`ok = torch.cuda.is_available()`, `def has_cuda()`,
  // `HAS_XFORMERS = True` after an import), attributes that do (`self.cuda_ok = ...`), and names
  // bound by optional imports (testing one tests the import).
  bool IsGuardName(std::string_view name) const { return guard_names_.count(name) > 0; }
  bool IsGuardAttr(std::string_view name) const { return guard_attrs_.count(name) > 0; }
  bool IsOptionalName(std::string_view name) const { return optional_names_.count(name) > 0; }
  // A name a value gets only behind a check (GuardBuilder::CollectCheckedLiterals): a test of
  // the value against it holds only where the check did.
  bool IsCheckedLiteral(std::string_view body) const {
    return !checked_literals_.empty() && checked_literals_.count(body) > 0;
  }
  // Cheap test before any analysis of tokens [b, e): a trigger substring or a hot name.
  bool Maybe(std::size_t b, std::size_t e) const;
  // Whether line li runs only behind a CUDA check (an if / elif / else / while on it or around it,
  // an early return before it); optional imports not counted.
  bool IsChecked(std::size_t li) const { return checked_line_[li]; }
  // Whether line li is checked only because a stop before it (`assert torch.cuda.is_available()`,
  // a call of a function that exits without CUDA) ends the run elsewhere: the run's only path.
  bool StopGuarded(std::size_t li) const { return li < stop_line_.size() && stop_line_[li]; }
  // Where the run stops unless CUDA is there or chosen (`assert torch.cuda.is_available()`, `if
  // not torch.cuda.is_available(): raise`), or unless a multi-process launcher started it (`else:
  // raise NotImplementedError("Only DistributedDataParallel is supported.")` after `if
  // args.distributed:`): a requirement, which also guards what follows it.
  enum class Requirement : char { kNone, kCuda, kLaunch };
  // A function of the file dispatches on its tensors' device to a path beside the kernel (`if
  // input.device.type == "cpu": return upfirdn2d_native(...)`): the project has a reference
  // implementation, so the file's kernels are replaced, not required.
  bool HasReferenceDispatch() const { return reference_dispatch_; }
  // Some test takes a path for CUDA tensors (`if x.is_cuda: return kernel(x)`): the default CUDA
  // run uses it, the Mac another.
  bool TensorDispatch() const { return tensor_dispatch_; }
  // The module-level definitions that hold such a dispatch: they have another path, so they do
  // not become CUDA symbols of the module.
  bool IsReferenceTop(std::string_view name) const { return reference_tops_.count(name) > 0; }
  // The module-level functions whose own body stops the run without CUDA (PyScanResult::requiring).
  const std::vector<std::string>& Requiring() const { return requiring_; }
  // The functions called as whole statements outside checks (`init_distributed_mode(args)`).
  const std::unordered_set<std::string_view>& StatementCalls() const { return statement_calls_; }
  Requirement RequirementAt(std::size_t li) const {
    return li < requirement_.size() ? requirement_[li] : Requirement::kNone;
  }
  // Whether the statement runs only behind a CUDA check or in an optional import's try body
  // (kernel lines excepted), or in a branch found later to be one (GuardLibraryBranches).
  bool IsGuarded(std::size_t li) const { return line_guarded_[li]; }
  // The line runs behind a check, or in a definition this file calls only behind one.
  bool RunsBehindCheck(std::size_t li) const {
    const int top = TopOf(li);
    return line_guarded_[li] || (top >= 0 && guarded_tops_.count(static_cast<std::size_t>(top)));
  }
  // The branches of conditional expressions on line l that run only with CUDA, as token ranges.
  void GuardedBranches(const LogicalLine& l, int scope,
                       std::vector<std::pair<std::size_t, std::size_t>>& out) const;
  // A module-level definition found to run only behind checks: its lines count as guarded.
  void MarkGuardedTop(std::size_t s) { guarded_tops_.insert(s); }
  // A line found to run only behind a check after the lines were read.
  void MarkGuarded(std::size_t li) { line_guarded_[li] = true; }

  // --- Settings (python_options.cc) --------------------------------------------------------------

  // The file's command-line options and settings (python_settings.h).
  const PySettings& settings() const { return settings_; }
  // What test [b, e) says on the default path when it reads a setting: a launch flag (false), the
  // file's option, a flag another file declares off (`self.args.alternate_corr`), a parameter
  // switch off by default (`sparse` / `self.sparse`, PyScope::off_params).
  std::optional<bool> OptionTest(std::size_t b, std::size_t e) const;
  std::optional<bool> ProjectFlagTest(std::size_t b, std::size_t e) const;
  bool IsLaunchFlagTest(std::size_t b, std::size_t e) const;  // CudaContext::launch_flags.
  std::optional<bool> ParamFlagTest(std::size_t b, std::size_t e, int scope) const;
  std::size_t NamespaceChain(std::size_t k, std::size_t e) const;

  // --- What the rules find as they read the lines ------------------------------------------------

  // Whether this file reaches CUDA-only code (an extension, a kernel, a CUDA symbol): then lines
  // that name its own module-level definitions are analysed too, to follow the dependency inside
  // it.
  bool track_refs() const { return track_refs_; }
  void TrackRefs() { track_refs_ = true; }
  // A name whose mention makes a line worth reading.
  void AddHotName(std::string_view name) { hot_names_.insert(name); }
  // A value an extension made (`_ext = load(...)`, `raster = Rasterizer(...)`), bound in `scope`:
  // a handle there.
  void BindValueHandle(int scope, std::string_view name) {
    BindHandle(scope, name);
    handle_names_.insert(name);
  }

 private:
  friend class PyModelBuilder;
  friend class GuardBuilder;

  static const Lexed& LexInto(std::string_view src);
  bool TriggerInCode() const;
  void BuildGuards();                      // python_guards.cc
  void GuardValuesReadOnlyBehindChecks();  // python_settings.cc
  const std::string* LookupBound(std::string_view name, int s) const;
  bool IsHandleBound(std::string_view name, int s) const;
  void BindHandle(int scope, std::string_view name) {
    scopes_[static_cast<std::size_t>(scope)].local_names.insert(name);
    handle_filter_.insert(name);
  }

  const Registry& reg_;
  const PyScanOptions& opt_;
  bool always_;  // setup.py strings and user rules bypass the cheap line test.
  std::string_view source_;
  std::vector<Prefilter::Match> triggers_;  // Where the trigger words occur in the source.
  CondEvaluator cond_{*this};
  bool bind_ = true;  // Whether imports bind names (BuildImports needs only the imports).
  std::vector<PyImport> imports_;
  bool has_main_ = false;  // Has `if __name__ == "__main__":`.
  std::vector<bool> optional_line_;
  std::vector<bool> required_line_;       // In a `try:` whose ImportError handler only raises.
  std::vector<bool> checked_line_;        // See IsChecked().
  std::vector<bool> stop_line_;           // See StopGuarded().
  std::vector<Requirement> requirement_;  // See RequirementAt().
  std::vector<std::string> requiring_;    // See Requiring().
  std::unordered_set<std::string_view> statement_calls_;  // See StatementCalls().
  bool reference_dispatch_ = false;                       // See HasReferenceDispatch().
  bool tensor_dispatch_ = false;                          // See TensorDispatch().
  std::unordered_set<std::string_view> reference_tops_;   // See IsReferenceTop().
  std::vector<bool> line_guarded_;                        // See IsGuarded().
  std::unordered_set<std::size_t> guarded_tops_;  // Definitions called only behind such checks.
  std::vector<int> line_scope_;
  std::unordered_set<int> launch_scopes_;  // Functions that launch a kernel of this file.
  std::vector<PyScope> scopes_;
  // Keys are views into the source, which outlives the model.
  std::unordered_map<std::string_view, int> top_names_;  // Module-level def/class names.
  NameSet top_filter_;                                   // The same names, for Maybe().
  std::unordered_set<std::string_view> optional_names_;
  std::unordered_set<std::string_view> fallback_names_;  // Rebound in an ImportError handler.
  std::unordered_set<std::string_view> guard_names_;
  std::unordered_set<std::string_view> checked_literals_;  // See IsCheckedLiteral().
  std::unordered_set<std::string_view> guard_attrs_;
  std::unordered_set<std::string_view> kernel_names_;
  std::unordered_map<std::size_t, int> decorator_kernel_;  // Decorator line -> kernel scope.
  const Library* kernel_lib_ = nullptr;
  NameSet handle_names_;
  // Every name an import binds, and every extension handle, in any scope: Lookup() and IsHandle()
  // turn other names away with one test instead of a hash per enclosing scope.
  NameSet alias_filter_;
  NameSet handle_filter_;
  std::unordered_set<std::string_view> globals_;  // Names of `global` statements.
  bool track_refs_ = false;                       // See track_refs().
  // Names whose mention can make a line interesting (library, extension, optional and guard
  // names); lines with none of them and none of the trigger words are skipped without analysis.
  NameSet hot_names_;
  PySettings settings_;
};

// The NAMEs of `a.args.NAME` tests (files reading a flag declared off elsewhere are rescanned);
// attributes set False somewhere, True only behind a launcher's test: launch flags
// (python_settings.cc).
std::vector<std::string> FlagReads(const PyModel& m);
std::vector<std::string> LaunchFlags(const PyModel& m);

// --- Guards found after the rules ran (python_guards.cc) -----------------------------------------

// Whether line li runs only in one branch of a choice by name: an if/elif chain whose test
// compares a value with string literals (`elif opt_lower == "fusedsgd":`), beside other branches,
// where the file does not show the value's default picking it.
bool InNamedChoice(const PyModel& m, std::size_t li);
// The branches that import a CUDA-only library themselves: marks their lines guarded and returns
// them.
std::vector<LineRange> GuardLibraryBranches(PyModel& m);
// `device = "cuda"` lines whose function falls back when the device is missing.
std::vector<LineRange> DeviceFallbackLines(const PyModel& m);
// The module-level definitions that import something unguarded.
std::unordered_set<std::size_t> ImportingTops(const PyModel& m);
// Of `defs` (name -> module-level scope), those whose every reference in this file runs behind a
// CUDA check, directly or from another such definition; into `past_stops`, those of them that
// some reference reaches only past a stop (`assert torch.cuda.is_available()` before the call).
std::unordered_set<std::size_t> CalledOnlyUnderChecks(
    const PyModel& m, const std::unordered_map<std::string_view, std::size_t>& defs,
    std::unordered_set<std::size_t>* past_stops = nullptr);

}  // namespace dt::scan
