#include "scan/python_scanner.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "scan/env_scanners.h"
#include "scan/prefilter.h"
#include "scan/python_lexer.h"
#include "util/strings.h"

namespace dt::scan {

namespace {
bool InAny(const std::vector<std::string>& modules, std::string_view dotted) {
  for (const auto& m : modules) {
    if (dotted.size() < m.size() || dotted.compare(0, m.size(), m) != 0) continue;
    if (dotted.size() == m.size() || dotted[m.size()] == '.') return true;
  }
  return false;
}
}  // namespace

bool CudaContext::IsModule(std::string_view dotted) const { return InAny(modules, dotted); }
bool CudaContext::IsCpuBuilt(std::string_view dotted) const { return InAny(cpu_built, dotted); }

namespace {

bool IsDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

bool Contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// Whether `s` holds `word` (lower-case letters) in any case, without a lower-case copy: `| 0x20`
// maps only 'A'-'Z' onto the letters.
bool ContainsFolded(std::string_view s, std::string_view word) {
  for (std::size_t i = 0; i + word.size() <= s.size(); ++i) {
    std::size_t k = 0;
    while (k < word.size() && (s[i + k] | 0x20) == word[k]) ++k;
    if (k == word.size()) return true;
  }
  return false;
}

bool IsNccl(std::string_view body) {
  return body.size() == 4 && (body[0] | 0x20) == 'n' && (body[1] | 0x20) == 'c' &&
         (body[2] | 0x20) == 'c' && (body[3] | 0x20) == 'l';
}

// Whether a guard expression holds only where CUDA is present (or chosen), only where it is not,
// or says nothing either way.
enum class Truth { kNone, kCuda, kNoCuda };

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

Truth Flip(Truth t) {
  return t == Truth::kCuda ? Truth::kNoCuda : t == Truth::kNoCuda ? Truth::kCuda : Truth::kNone;
}

// A function, class or the module: names resolve in their own scope first (a parameter called
// CUDA_HOME is not the import of it elsewhere).
struct Scope {
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
  std::unordered_set<std::string_view> local_names;  // Extension handles bound in this scope.
  bool kernel = false;  // A GPU kernel (a `@triton.jit` function): one finding, no body findings.
  std::size_t kernel_line = 0;  // The decorator line its finding is reported at.
};

class PythonScanner {
 public:
  PythonScanner(std::string_view src, FindingSink& sink, const PyScanOptions& opt)
      : sink_(sink),
        reg_(sink.registry()),
        opt_(opt),
        always_(opt.setup_py || !sink.registry().user_rules().empty()),
        source_(src),
        lex_(LexInto(src)) {
    if (!always_ && !opt.imports_only) triggers_ = StatementTriggers().FindAll(src);
  }

  PyScanResult Run() {
    const auto n = lex_.lines.size();
    optional_line_.assign(n, false);
    required_line_.assign(n, false);
    line_guarded_.assign(n, false);
    line_scope_.assign(n, 0);
    scopes_.push_back(Scope{});
    if (opt_.imports_only ||
        (!always_ && opt_.cuda == nullptr && !opt_.collect_calls && !TriggerInCode()))
      return ImportsAndMain();
    BuildScopes();
    if (opt_.cuda != nullptr)
      for (const std::string& m : opt_.cuda->modules)
        if (StartsWith(m, "torch.ops.")) {
          // torch.ops.<ns>.<op>(...) of an op library the project's extension registers.
          hot_names_.insert(std::string_view(m).substr(10));
          track_refs_ = true;
        }
    MarkOptionalImports();
    for (std::size_t i = 0; i < n; ++i) CollectImports(i);
    MarkKernels();
    // A second round finds guards defined from guards found later in the file (`ok = has_cuda()`
    // above `def has_cuda()`); it is needed only when the first found any.
    for (int round = 0; round < 2; ++round) {
      const std::size_t known = guard_names_.size() + guard_attrs_.size();
      for (std::size_t i = 0; i < n; ++i) CollectGuards(i);
      if (guard_names_.size() + guard_attrs_.size() == known) break;
    }
    Findings();
    GuardLibraryBranches();
    GuardDeviceFallbacks();
    GuardPrivateDefinitions();
    GuardCalledOnlyUnderChecks();
    if (opt_.collect_calls) CollectCalls();
    for (PyImport& imp : result_.imports) {
      const int top = TopOf(imp.line_index);
      imp.guarded = line_guarded_[imp.line_index] ||
                    (top >= 0 && guarded_tops_.count(static_cast<std::size_t>(top)) > 0);
    }
    PropagateLocal();
    return std::move(result_);
  }

 private:
  const Token& T(std::size_t k) const { return lex_.tokens[k]; }

  // Token tests (members: a token's text lives in the Lexed).
  template <std::size_t N>
  bool Is(const Token& t, const char (&text)[N]) const {
    return lex_.Text(t) == text;
  }
  template <std::size_t N>
  bool IsOp(const Token& t, const char (&text)[N]) const {
    return t.kind() == TokKind::kOp && lex_.Text(t) == text;
  }
  bool IsName(const Token& t) const { return t.kind() == TokKind::kName; }
  bool IsOpen(const Token& t) const {
    if (t.kind() != TokKind::kOp || t.size() != 1) return false;
    char c = lex_.src[t.offset];
    return c == '(' || c == '[' || c == '{';
  }
  bool IsClose(const Token& t) const {
    if (t.kind() != TokKind::kOp || t.size() != 1) return false;
    char c = lex_.src[t.offset];
    return c == ')' || c == ']' || c == '}';
  }

  // "cuda", "cuda:0", and f"cuda:{rank}".
  bool IsCudaDeviceString(const Token& t) const {
    if (t.kind() != TokKind::kString || IsBytes(lex_.Text(t))) return false;
    std::string_view body = StringBody(lex_.Text(t));
    if (body == "cuda") return true;
    if (!StartsWith(body, "cuda:")) return false;
    std::string_view rest = body.substr(5);
    // "cuda:0", f"cuda:{rank}", and the "cuda:{}" / "cuda:%d" of .format() and %.
    return IsDigits(rest) || StartsWith(rest, "{") || rest == "%d" || rest == "%s" || rest == "%i";
  }

  // Lexes into this thread's token storage, reused from file to file (scanners do not nest).
  static const Lexed& LexInto(std::string_view src) {
    thread_local Lexed storage;
    LexPython(src, storage);
    return storage;
  }
  TokenText First(const LogicalLine& l) const { return lex_.Text(T(l.begin)); }
  // The keyword of a line, past `async`.
  TokenText Head(const LogicalLine& l) const {
    if (First(l) == "async" && l.end - l.begin > 1) return lex_.Text(T(l.begin + 1));
    return First(l);
  }

  // The statement-level prefilter: the registry's trigger words.
  const Prefilter& StatementTriggers() const { return reg_.PythonPrefilter(); }

  // Whether some trigger word occurs in code: in a token that is not a comment, and not a string
  // statement (a docstring). Most files that hold a trigger word hold it only there ("CUDA" in a
  // docstring, "double" in a comment); nothing in them can make a finding.
  bool TriggerInCode() const {
    std::size_t k = 0;  // The last token that starts at or before the match.
    std::size_t li = 0;
    std::size_t strings_only = static_cast<std::size_t>(-1);  // A line of strings alone.
    const auto& tokens = lex_.tokens;
    for (const auto& m : triggers_) {
      while (k + 1 < tokens.size() && tokens[k + 1].offset <= m.start) ++k;
      if (k >= tokens.size() || tokens[k].offset > m.start ||
          m.start >= tokens[k].offset + tokens[k].size())
        continue;  // Between tokens: a comment.
      if (tokens[k].kind() != TokKind::kString) return true;
      while (li + 1 < lex_.lines.size() && lex_.lines[li].end <= k) ++li;
      if (li == strings_only) continue;  // Read already (once per line: matches come in order).
      if (!StringsOnly(lex_.lines[li])) return true;
      strings_only = li;
    }
    return false;
  }

  // What a file with no trigger word in its code contributes: its imports (guarded when optional,
  // for reachability) and whether it is a script. The same as the analysis would find, at a
  // fraction of its cost.
  PyScanResult ImportsAndMain() {
    bind_ = false;  // No name of this file is looked up.
    MarkOptionalImports();
    for (std::size_t i = 0; i < lex_.lines.size(); ++i) {
      const LogicalLine& l = lex_.lines[i];
      TokenText f = First(l);
      if (f == "import" || f == "from")
        CollectImports(i);
      else
        result_.has_main |= IsMainCheck(l);
    }
    for (PyImport& imp : result_.imports) imp.guarded = optional_line_[imp.line_index];
    return std::move(result_);
  }

  // --- Scopes -------------------------------------------------------------------------------

  void BuildScopes() {
    std::vector<int> stack = {0};
    for (std::size_t li = 0; li < lex_.lines.size(); ++li) {
      const auto& l = lex_.lines[li];
      while (stack.size() > 1 && scopes_[static_cast<std::size_t>(stack.back())].indent >= l.indent)
        stack.pop_back();
      line_scope_[li] = stack.back();
      for (int id : stack) scopes_[static_cast<std::size_t>(id)].last_line = li;
      TokenText head = Head(l);
      if (head != "def" && head != "class") continue;
      std::size_t name_tok = l.begin + (First(l) == "async" ? 2 : 1);
      if (name_tok >= l.end || !IsName(T(name_tok))) continue;
      Scope s;
      s.parent = stack.back();
      s.is_def = head == "def";
      s.indent = l.indent;
      s.name = lex_.Text(T(name_tok));
      s.def_line = li;
      s.first_line = li;
      while (s.first_line > 0 && First(lex_.lines[s.first_line - 1]) == "@" &&
             lex_.lines[s.first_line - 1].indent == l.indent)
        --s.first_line;
      int id = static_cast<int>(scopes_.size());
      s.top = s.parent == 0 ? id : scopes_[static_cast<std::size_t>(s.parent)].top;
      if (s.is_def) CollectParams(l, name_tok + 1, s);
      scopes_.push_back(std::move(s));
      stack.push_back(id);
      if (scopes_[static_cast<std::size_t>(id)].parent == 0) {
        top_names_.emplace(lex_.Text(T(name_tok)), id);
        top_filter_.insert(lex_.Text(T(name_tok)));
      }
    }
  }

  void CollectParams(const LogicalLine& l, std::size_t k, Scope& s) {
    if (k >= l.end || !IsOp(T(k), "(")) return;
    int depth = 0;
    for (; k < l.end; ++k) {
      const Token& t = T(k);
      if (IsOpen(t)) ++depth;
      if (IsClose(t) && --depth == 0) return;
      if (depth != 1 || !IsName(t)) continue;
      const Token& prev = T(k - 1);
      if (IsOp(prev, "(") || IsOp(prev, ",") || IsOp(prev, "*") || IsOp(prev, "**"))
        s.params.insert(lex_.Text(t));
    }
  }

  int ScopeOf(std::size_t li) const { return line_scope_[li]; }
  // The module-level definition holding line li, or -1 at module level.
  int TopOf(std::size_t li) const {
    const int scope = ScopeOf(li);
    return scope > 0 ? scopes_[static_cast<std::size_t>(scope)].top : -1;
  }
  // The physical lines of scope s, its decorators included.
  std::pair<std::uint32_t, std::uint32_t> ScopeLines(std::size_t s) const {
    const Scope& sc = scopes_[s];
    return {lex_.Line(T(lex_.lines[sc.first_line].begin)),
            lex_.Line(T(lex_.lines[sc.last_line].end - 1))};
  }
  // A CUDA-only library's import: required (DT210) when its ImportError handler only raises.
  const char* LibraryImportCode(bool guarded) const {
    return required_import_ && !guarded ? "DT210" : "DT201";
  }

  // The import target a name resolves to in scope `s`, or null (unbound or shadowed by a
  // parameter).
  const std::string* Lookup(std::string_view name, int s) const {
    if (!alias_filter_.count(name)) return nullptr;  // Bound by no import of the file (most names).
    for (; s >= 0; s = scopes_[static_cast<std::size_t>(s)].parent) {
      const Scope& sc = scopes_[static_cast<std::size_t>(s)];
      if (sc.params.count(name)) return nullptr;
      auto it = sc.alias.find(name);
      if (it != sc.alias.end()) return &it->second;
    }
    return nullptr;
  }

  void BindHandle(int scope, std::string_view name) {
    scopes_[static_cast<std::size_t>(scope)].local_names.insert(name);
    handle_filter_.insert(name);
  }
  bool IsHandle(std::string_view name, int s) const {
    if (!handle_filter_.count(name)) return false;
    for (; s >= 0; s = scopes_[static_cast<std::size_t>(s)].parent) {
      const Scope& sc = scopes_[static_cast<std::size_t>(s)];
      if (sc.local_names.count(name)) return true;
      if (sc.params.count(name) || sc.alias.count(name)) return false;
    }
    return false;
  }

  // --- Imports ------------------------------------------------------------------------------

  // What the body of an `except` does with the failure.
  struct Handler {
    // It ends in `raise` after at most reports (a print, warning or log call) or `pass`: the
    // handler names the failure, it offers no other path.
    bool only_raises = false;
    // Its last statement is a `raise`: whatever ran before it (a dump, a message), the failure
    // goes on.
    bool ends_in_raise = false;
    // It only reports (a print, a log call, a traceback, then at most `continue`): the work of the
    // try body is lost, not replaced.
    bool only_reports = false;
  };

  Handler ReadHandler(std::size_t k) const {
    const auto& lines = lex_.lines;
    const std::uint32_t indent = lines[k].indent;
    bool reports_or_pass = true, reports_or_continue = true, reported = false;
    std::string_view last;
    for (std::size_t b = k + 1; b < lines.size() && lines[b].indent > indent; ++b) {
      last = First(lines[b]);
      const bool report = IsReportHead(last);
      reported |= report;
      reports_or_pass &= report || last == "raise" || last == "pass";
      reports_or_continue &= report || last == "continue";
    }
    Handler h;
    h.ends_in_raise = last == "raise";
    h.only_raises = reports_or_pass && h.ends_in_raise;
    h.only_reports = reports_or_continue && reported;
    return h;
  }

  // `_plugin = load(...)` after `global _plugin` in the same function: a lazily acquired module
  // resource, optional like an import (its absence is what later checks test).
  bool AcquiresGlobal(std::size_t li) const {
    const auto& lines = lex_.lines;
    const auto& l = lines[li];
    if (l.end - l.begin < 3 || !IsName(T(l.begin)) || !IsOp(T(l.begin + 1), "=")) return false;
    TokenText name = lex_.Text(T(l.begin));
    for (std::size_t j = li; j-- > 0 && lines[j].indent > 0;) {
      if (First(lines[j]) == "def") return false;
      if (First(lines[j]) != "global") continue;
      for (auto t = lines[j].begin + 1; t < lines[j].end; ++t)
        if (lex_.Text(T(t)) == name) return true;
    }
    return false;
  }

  static bool IsReportHead(std::string_view f) {
    return f == "print" || f == "warnings" || f == "logger" || f == "logging" || f == "log" ||
           f == "LOGGER" || f == "traceback";
  }

  // Lines inside a `try:` whose handler catches ImportError (or everything) are optional imports.
  void MarkOptionalImports() {
    const auto& lines = lex_.lines;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (First(lines[i]) != "try") continue;
      std::uint32_t indent = lines[i].indent;
      std::size_t j = i + 1;
      while (j < lines.size() && lines[j].indent > indent) ++j;
      bool optional = false;
      bool required = false;  // An ImportError handler that only raises: no other path.
      bool fallback = false;  // A handler that does something else than raise or report.
      for (std::size_t k = j; k < lines.size() && lines[k].indent == indent; ++k) {
        TokenText f = First(lines[k]);
        if (f != "except") break;
        bool bare = lines[k].end - lines[k].begin <= 2;
        const Handler handler = ReadHandler(k);
        // `except ImportError: fused_relu = torch.relu`: the name has a fallback, so its uses run
        // anywhere. (`= None` is no fallback: uses need a check.)
        for (std::size_t b = k + 1; b < lines.size() && lines[b].indent > indent; ++b) {
          const auto& bl = lines[b];
          if (bl.end - bl.begin >= 3 && IsName(T(bl.begin)) && IsOp(T(bl.begin + 1), "=") &&
              !(bl.end - bl.begin == 3 && Is(T(bl.begin + 2), "None")) &&
              !Is(T(bl.begin + 2), "False"))
            fallback_names_.insert(lex_.Text(T(bl.begin)));
          if (First(bl) == "from" || First(bl) == "import")
            for (auto t = bl.begin; t < bl.end; ++t)
              if (IsName(T(t)) && t > bl.begin &&
                  (IsOp(T(t - 1), ",") || Is(T(t - 1), "import") || Is(T(t - 1), "as")))
                fallback_names_.insert(lex_.Text(T(t)));
        }
        bool catches = bare;
        for (auto t = lines[k].begin; t < lines[k].end; ++t)
          if (Is(T(t), "ImportError") || Is(T(t), "ModuleNotFoundError") || Is(T(t), "Exception") ||
              Is(T(t), "OSError") || Is(T(t), "RuntimeError"))
            catches = true;
        // `except ImportError: raise AssertionError("xFormers is required")` catches the failure
        // only to say the library is required: the import is not optional.
        if (catches && handler.only_raises)
          required = true;
        else
          optional |= catches;
        fallback |= catches && !handler.ends_in_raise && !handler.only_reports;
        while (k + 1 < lines.size() && lines[k + 1].indent > indent) ++k;
      }
      if (required && !optional) {
        for (std::size_t k = i + 1; k < j; ++k) required_line_[k] = true;
      }
      if (optional) {
        for (std::size_t k = i + 1; k < j; ++k) {
          // A handler that only re-raises or reports leaves the body's work undone on a Mac: the
          // body is no guard. Its imports stay optional (the module loads without them).
          TokenText head = First(lines[k]);
          if (fallback || head == "import" || head == "from" || AcquiresGlobal(k))
            optional_line_[k] = true;
          // `HAS_XFORMERS = True` after the import: a flag that says the library loaded.
          const auto& l = lines[k];
          if (l.end - l.begin == 3 && IsName(T(l.begin)) && IsOp(T(l.begin + 1), "=") &&
              Is(T(l.begin + 2), "True")) {
            guard_names_.insert(lex_.Text(T(l.begin)));
            hot_names_.insert(lex_.Text(T(l.begin)));
          }
        }
      }
    }
  }

  // Reads a dotted name starting at token k; returns the end index.
  std::size_t Dotted(std::size_t k, std::size_t end, std::string& out) const {
    out.clear();
    while (k < end && IsName(T(k))) {
      out.append(lex_.Text(T(k)));
      if (k + 2 < end && IsOp(T(k + 1), ".") && IsName(T(k + 2))) {
        out.push_back('.');
        k += 2;
      } else {
        return k + 1;
      }
    }
    return k;
  }

  // The absolute module of a relative import with `level` dots, or "" when unknown.
  std::string Absolute(int level, const std::string& mod) const {
    if (level == 0) return mod;
    if (opt_.package.empty() && level == 1) return mod;
    std::string base = opt_.package;
    for (int i = 1; i < level; ++i) {
      auto dot = base.rfind('.');
      if (dot == std::string::npos) return mod;
      base.resize(dot);
    }
    if (base.empty()) return mod;
    return mod.empty() ? base : base + "." + mod;
  }

  bool IsOwn(std::string_view dotted) const {
    if (opt_.own_tops == nullptr) return false;
    return opt_.own_tops->count(std::string(dotted.substr(0, dotted.find('.')))) > 0;
  }

  // The knowledge-base library of an import target, unless the project itself owns the name.
  const Library* LibraryOf(std::string_view dotted) const {
    if (IsOwn(dotted)) return nullptr;
    return reg_.LibraryForModule(dotted);
  }

  // A module that only exists where a CUDA extension was built: declared by another file (setup.py,
  // load(), a git submodule) or named like one ("fused_gelu_cuda").
  bool IsExtensionModule(std::string_view module) const {
    if (opt_.cuda != nullptr && opt_.cuda->IsModule(module)) return true;
    std::string_view top = module.substr(0, module.find('.'));
    // Named like one: most modules are not, and are turned away before any lookup.
    return ContainsFolded(top, "cuda") && reg_.LibraryForModule(module) == nullptr &&
           !IsOwn(module);
  }

  bool IsCudaSymbol(const std::string& dotted) const {
    return opt_.cuda != nullptr && opt_.cuda->symbols.count(dotted) > 0;
  }
  // A module or package with CUDA symbols inside: its attribute chains are resolved.
  bool HoldsCudaSymbols(const std::string& dotted) const {
    return opt_.cuda != nullptr && opt_.cuda->symbol_packages.count(dotted) > 0;
  }
  // Whether a symbol is defined in this file's own package (`pkg.ops.a` seen from pkg/ops/b.py)
  // and this file is itself one of the kernel library's modules (it defines kernels): calls
  // between those are the library's plumbing, reported where other code depends on it. A module
  // of the same package that only uses the kernels (whisper's timing.py importing triton_ops) is
  // such other code. Root-level scripts have no package and always see the symbol.
  bool SiblingSymbol(const std::string& dotted) const {
    if (opt_.package.empty() || kernel_lib_ == nullptr) return false;
    auto last = dotted.rfind('.');
    if (last == std::string::npos) return false;
    auto mod_end = dotted.rfind('.', last - 1);
    if (mod_end == std::string::npos) return false;
    return std::string_view(dotted).substr(0, mod_end) == opt_.package;
  }
  // DT312 for project code reaching a compiled extension, DT209 for code reaching GPU kernels only.
  const char* SymbolCode(const std::string& dotted, bool& ext) const {
    auto it = opt_.cuda->symbols.find(dotted);
    ext = it != opt_.cuda->symbols.end() && it->second;
    return ext ? "DT312" : "DT209";
  }

  void CollectImports(std::size_t li) {
    const auto& l = lex_.lines[li];
    TokenText f = First(l);
    if (f == "global") {
      for (std::size_t k = l.begin + 1; k < l.end; ++k)
        if (IsName(T(k))) globals_.insert(lex_.Text(T(k)));
      return;
    }
    bool optional = optional_line_[li];
    int scope = ScopeOf(li);
    if (f == "import") {
      std::size_t k = l.begin + 1;
      while (k < l.end) {
        std::string mod;
        std::size_t first_tok = k;
        k = Dotted(k, l.end, mod);
        if (mod.empty()) break;
        result_.imports.push_back(PyImport{mod, 0, {}, false, li});
        TokenText local = lex_.Text(T(first_tok));
        std::string target(local);
        if (k + 1 < l.end && Is(T(k), "as") && IsName(T(k + 1))) {
          local = lex_.Text(T(k + 1));
          target = mod;
          k += 2;
        }
        Bind(scope, local, target, optional, mod);
        if (k < l.end && IsOp(T(k), ","))
          ++k;
        else
          break;
      }
    } else if (f == "from") {
      std::size_t k = l.begin + 1;
      int level = 0;
      while (k < l.end && T(k).kind() == TokKind::kOp && (Is(T(k), ".") || Is(T(k), "..."))) {
        level += static_cast<int>(lex_.Text(T(k)).size());
        ++k;
      }
      std::string mod;
      // `from . import _C`: no module name (the keyword is a name token, not part of one).
      if (k < l.end && !Is(T(k), "import")) k = Dotted(k, l.end, mod);
      if (k >= l.end || !Is(T(k), "import")) return;
      ++k;
      PyImport imp{mod, level, {}, false, li};
      std::string abs = Absolute(level, mod);
      for (; k < l.end; ++k) {
        if (!IsName(T(k))) continue;
        std::string name(lex_.Text(T(k)));
        TokenText local = lex_.Text(T(k));
        if (k + 2 < l.end && Is(T(k + 1), "as") && IsName(T(k + 2))) {
          local = lex_.Text(T(k + 2));
          k += 2;
        }
        imp.names.push_back(name);
        if (level == 0 || !abs.empty())
          Bind(scope, local, abs.empty() ? name : abs + "." + name, optional, abs);
      }
      result_.imports.push_back(std::move(imp));
    }
  }

  void Bind(int scope, std::string_view local, const std::string& target, bool optional,
            const std::string& module) {
    if (!bind_) return;
    scopes_[static_cast<std::size_t>(scope)].alias[local] = target;
    alias_filter_.insert(local);
    if (optional) optional_names_.insert(local);
    const bool extension = IsExtensionModule(target);
    const bool symbol = IsCudaSymbol(target);
    if (extension) BindHandle(scope, local);
    if (optional || extension || symbol || HoldsCudaSymbols(target) || Contains(target, "cud") ||
        Contains(target, "CUD") || (module != target && IsExtensionModule(module)) ||
        LibraryOf(target) != nullptr || reg_.MatchApi(target) != nullptr ||
        StartsWith(target, "torch.utils.cpp_extension"))
      hot_names_.insert(local);
    if (extension || symbol) track_refs_ = true;
  }

  // Functions decorated by a kernel decorator of the knowledge base (`@triton.jit`).
  void MarkKernels() {
    for (std::size_t s = 1; s < scopes_.size(); ++s) {
      Scope& sc = scopes_[s];
      for (std::size_t li = sc.first_line; li < sc.def_line; ++li) {
        const auto& l = lex_.lines[li];
        if (l.end - l.begin < 2) continue;
        std::string resolved, head;
        Chain(l.begin + 1, l.end, ScopeOf(li), resolved, head);
        if (const Library* lib = reg_.KernelDecorator(resolved)) {
          // Anchored where a reader says the kernel is defined: the library's first listed
          // decorator (`@triton.jit`), even under `@triton.autotune(...)` configs, which only
          // tune it (the field corpus labels every such kernel at `@triton.jit`).
          if (!sc.kernel || resolved == lib->kernel_decorators.front()) sc.kernel_line = li;
          sc.kernel = true;
          kernel_lib_ = lib;
          track_refs_ = true;
          if (sc.parent == 0) kernel_names_.insert(sc.name);
          hot_names_.insert(sc.name);
        }
      }
      if (sc.kernel)
        for (std::size_t li = sc.first_line; li <= sc.def_line; ++li)
          decorator_kernel_[li] = static_cast<int>(s);
    }
    // The host wrappers: functions that launch a kernel of this file (`_fwd_kernel[grid](...)`).
    // The launch is their finding; the library's helpers around it (`triton.cdiv` for the grid,
    // `tl.float16` for a dtype) are part of the same launch.
    if (kernel_names_.empty()) return;
    for (std::size_t li = 0; li < lex_.lines.size(); ++li)
      if (ScopeOf(li) > 0 && InLaunch(li)) launch_scopes_.insert(ScopeOf(li));
  }

  // Whether line li lies in a kernel's body or decorators.
  bool InKernel(std::size_t li) const {
    for (int s = ScopeOf(li); s > 0; s = scopes_[static_cast<std::size_t>(s)].parent)
      if (scopes_[static_cast<std::size_t>(s)].kernel) return true;
    // Decorator lines belong to the scope around the def: test the defs that start right here.
    auto it = decorator_kernel_.find(li);
    return it != decorator_kernel_.end();
  }

  // Cheap test before any analysis of tokens [b, e): a trigger substring or a hot name.
  bool Maybe(std::size_t b, std::size_t e) const {
    if (b >= e) return false;
    if (always_) return true;
    // One search of the whole source up front (triggers_) instead of one per statement; tokens
    // are views into the source, so their offsets index it.
    auto s = static_cast<std::size_t>(lex_.Text(T(b)).data() - source_.data());
    auto f = static_cast<std::size_t>(lex_.Text(T(e - 1)).data() + lex_.Text(T(e - 1)).size() -
                                      source_.data());
    auto it =
        std::lower_bound(triggers_.begin(), triggers_.end(), s,
                         [](const Prefilter::Match& m, std::size_t v) { return m.start < v; });
    for (; it != triggers_.end() && it->start < f; ++it)
      if (it->end <= f) return true;
    // One summary test per name against the union of the sets; only a name that passes is hashed.
    std::uint64_t any[4];
    for (int w = 0; w < 4; ++w)
      any[w] = hot_names_.Bits(w) | handle_names_.Bits(w) | (track_refs_ ? top_filter_.Bits(w) : 0);
    for (std::size_t k = b; k < e; ++k) {
      if (!IsName(T(k))) continue;
      const TokenText name = lex_.Text(T(k));
      const unsigned slot = NameSet::Slot(name);
      if ((any[slot >> 6] >> (slot & 63) & 1) == 0) continue;
      if (hot_names_.count(name) || handle_names_.count(name) ||
          (track_refs_ && top_filter_.count(name)))
        return true;
    }
    return false;
  }

  // The chain of NAME(.NAME)* starting at k, resolved through the import aliases of scope `s`.
  std::size_t Chain(std::size_t k, std::size_t end, int s, std::string& resolved,
                    std::string& head) const {
    std::string raw;
    std::size_t e = Dotted(k, end, raw);
    head = std::string(lex_.Text(T(k)));
    if (const std::string* target = Lookup(lex_.Text(T(k)), s)) {
      resolved = *target + raw.substr(head.size());
    } else {
      resolved = std::move(raw);
    }
    return e;
  }

  // --- Guards -------------------------------------------------------------------------------

  // Splits [b, e) at the top-level keyword `word` ("or", "and").
  std::vector<std::pair<std::size_t, std::size_t>> SplitTop(std::size_t b, std::size_t e,
                                                            std::string_view word) const {
    std::vector<std::pair<std::size_t, std::size_t>> parts;
    int depth = 0;
    std::size_t start = b;
    for (std::size_t k = b; k < e; ++k) {
      if (IsOpen(T(k)))
        ++depth;
      else if (IsClose(T(k)))
        --depth;
      else if (depth == 0 && IsName(T(k)) && lex_.Text(T(k)) == word) {
        parts.emplace_back(start, k);
        start = k + 1;
      }
    }
    parts.emplace_back(start, e);
    return parts;
  }

  // What condition [b, e) says about CUDA: `not` binds to its operand, a conjunction holds where
  // any of its terms does, a disjunction only where all of them do.
  Truth Cond(std::size_t b, std::size_t e, int scope) const {
    if (b >= e) return Truth::kNone;
    // Most conditions have neither word: one pass rules both out before any split is built.
    bool has_or = false, has_and = false;
    int depth = 0;  // Counted as SplitTop counts it.
    for (std::size_t k = b; k < e; ++k) {
      if (IsOpen(T(k)))
        ++depth;
      else if (IsClose(T(k)))
        --depth;
      else if (depth == 0 && IsName(T(k))) {
        has_or |= lex_.Text(T(k)) == "or";
        has_and |= lex_.Text(T(k)) == "and";
      }
    }
    if (has_or) {
      auto ors = SplitTop(b, e, "or");
      // `not cuda or not flash` holds wherever CUDA is absent: what runs when it fails (an else,
      // the code after an early return) runs only with CUDA. `cuda or x` says nothing on its own.
      bool any_no = false, all_cuda = true;
      for (auto [x, y] : ors) {
        Truth t = Cond(x, y, scope);
        if (t == Truth::kCuda && any_no) return Truth::kNone;
        any_no |= t == Truth::kNoCuda;
        all_cuda &= t == Truth::kCuda;
      }
      return any_no ? Truth::kNoCuda : all_cuda ? Truth::kCuda : Truth::kNone;
    }
    if (has_and) {
      auto ands = SplitTop(b, e, "and");
      bool neg_all = true;
      for (auto [x, y] : ands) {
        Truth t = Cond(x, y, scope);
        if (t == Truth::kCuda) return Truth::kCuda;
        neg_all &= t == Truth::kNoCuda;
      }
      // `not a and not b` fails where either holds: it says nothing about CUDA on its own.
      (void)neg_all;
      return Truth::kNone;
    }
    if (IsName(T(b)) && lex_.Text(T(b)) == "not") return Flip(Cond(b + 1, e, scope));
    if (IsOp(T(b), "(") && Matching(b, e) == e - 1) return Cond(b + 1, e - 1, scope);
    return Atom(b, e, scope);
  }

  // The index of the bracket closing the one at `open`, or e.
  std::size_t Matching(std::size_t open, std::size_t e) const {
    int depth = 0;
    for (std::size_t k = open; k < e; ++k) {
      if (IsOpen(T(k))) ++depth;
      if (IsClose(T(k)) && --depth == 0) return k;
    }
    return e;
  }

  static bool IsCudaEnvName(std::string_view body) {
    if (body.size() < 4 || body.size() > 40 || body.find("CUDA") == std::string_view::npos)
      return false;
    for (char c : body)
      if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
    return true;
  }

  bool ListHoldsMinusOne(std::size_t open, std::size_t e) const {
    std::size_t close = Matching(open, e);
    for (std::size_t k = open + 1; k + 1 < close; ++k)
      if (IsOp(T(k), "-") && T(k + 1).kind() == TokKind::kNumber && lex_.Text(T(k + 1)) == "1")
        return true;
    return false;
  }

  // The launcher's variables this file compares with -1 (`RANK != -1`, `local_rank not in [-1,
  // 0]`): here -1 is the single process, so 0 is a launched worker. Read on the first `== 0` test
  // of such a variable: most files have none.
  const std::unordered_set<std::string>& MinusOneRanks() const {
    if (minus_one_read_) return minus_one_ranks_;
    minus_one_read_ = true;
    for (const auto& l : lex_.lines) {
      const TokenText head = First(l);
      if (head != "if" && head != "elif" && head != "while") continue;
      for (auto k = l.begin + 1; k + 2 < l.end; ++k) {
        if (!IsName(T(k))) continue;
        if (!reg_.IsLaunchGuardName(lex_.Text(T(k)))) continue;
        const std::string lower = Lower(lex_.Text(T(k)));
        std::size_t v = k + 1;
        const bool compared = IsOp(T(v), "==") || IsOp(T(v), "!=");
        if (Is(T(v), "not") && v + 1 < l.end) ++v;
        if ((compared && IsOp(T(v + 1), "-") && v + 2 < l.end && lex_.Text(T(v + 2)) == "1") ||
            (Is(T(v), "in") && v + 1 < l.end && IsOpen(T(v + 1)) &&
             ListHoldsMinusOne(v + 1, l.end)))
          minus_one_ranks_.insert(lower);
      }
    }
    return minus_one_ranks_;
  }

  // One comparison or test.
  // Not behind Maybe(): flags such as `args.use_cpu` carry no trigger word, and conditions are
  // short.
  // How a test reads, whatever it tests.
  struct TestShape {
    bool negated = false;  // `!= "cuda"`, `is None`, `not in`.
    int numeric = 0;  // Against a number: +1 `> 1`, `!= -1`, `>= 1`; -1 `== 1`, `< 2`, `== -1`.
    bool eq_zero = false;       // `== 0`.
    bool says_nothing = false;  // `x in [-1, 0]`: holds in a single process and a launch alike.
  };

  TestShape ShapeOf(std::size_t b, std::size_t e) const {
    TestShape shape;
    for (std::size_t k = b; k < e; ++k) {
      const Token& t = T(k);
      if (t.kind() == TokKind::kOp &&
          (lex_.Text(t) == "==" || lex_.Text(t) == "!=" || lex_.Text(t) == "<" ||
           lex_.Text(t) == "<=" || lex_.Text(t) == ">" || lex_.Text(t) == ">=")) {
        std::size_t v = k + 1;
        if (v < e && IsOp(T(v), "-")) ++v;
        if (v < e && T(v).kind() == TokKind::kNumber) {
          shape.numeric =
              (lex_.Text(t) == "==" || lex_.Text(t) == "<" || lex_.Text(t) == "<=") ? -1 : 1;
          shape.eq_zero = lex_.Text(t) == "==" && v == k + 1 && lex_.Text(T(v)) == "0";
          continue;
        }
      }
      if (IsOp(t, "!=")) shape.negated = true;
      if (Is(t, "is") && k + 1 < e && Is(T(k + 1), "None")) shape.negated = true;
      if (Is(t, "in") && k + 1 < e && IsOpen(T(k + 1)) && ListHoldsMinusOne(k + 1, e)) {
        // `local_rank not in [-1, 0]`: only a launched worker; `in [-1, 0]` also holds in a single
        // process, so it says nothing about the launch.
        if (!(k > b && Is(T(k - 1), "not"))) {
          shape.says_nothing = true;
          return shape;
        }
        shape.numeric = 1;
        continue;
      }
      if (Is(t, "not") && k > b && k + 1 < e && Is(T(k + 1), "in")) shape.negated = true;
    }
    return shape;
  }

  // What the test's operands name: a device string compared, a CUDA check or flag, a launcher's
  // variable (then in `launch`, lower-case).
  Truth Subject(std::size_t b, std::size_t e, int scope, std::string& launch) const {
    Truth found = Truth::kNone;
    for (std::size_t k = b; k < e && found == Truth::kNone; ++k) {
      const Token& t = T(k);
      if (t.kind() == TokKind::kString) {
        std::string_view body = StringBody(lex_.Text(t));
        const bool cuda =
            ((IsCudaDeviceString(t) || IsNccl(body)) && InComparison(k, b, e)) ||
            // os.environ["WORLD_SIZE"], os.environ.get("LOCAL_RANK", -1): the launcher's variables.
            (body.size() < 40 && reg_.IsLaunchGuardName(body)) ||
            // os.getenv("FORCE_CUDA", "0") == "1", os.environ.get("CUDA_HOME"): a build switch.
            IsCudaEnvName(body);
        if (cuda) found = Truth::kCuda;
        continue;
      }
      if (!IsName(t)) continue;
      bool after_dot = k > b && IsOp(T(k - 1), ".");
      const TokenText name = lex_.Text(t);
      // A flag or launcher word (`args.use_gpu`, `LOCAL_RANK`), else nothing.
      auto flag_or_launch = [&] {
        if (FlagWord(name, found)) return;
        if (reg_.IsLaunchGuardName(name)) {
          found = Truth::kCuda;
          launch = Lower(name);
        }
      };
      if (after_dot) {
        if (name == "is_cuda" || guard_attrs_.count(name))
          found = Truth::kCuda;
        else
          flag_or_launch();
        continue;
      }
      if (guard_names_.count(name) || optional_names_.count(name)) {
        found = Truth::kCuda;
        continue;
      }
      // Every guard API is torch's: a name that is neither torch nor an import alias resolves to
      // none, and the chain need not be built.
      if (name != "torch" && Lookup(name, scope) == nullptr) {
        flag_or_launch();
        continue;
      }
      std::string resolved, head;
      std::size_t ce = Chain(k, e, scope, resolved, head);
      if (const PythonApi* api = reg_.MatchApi(resolved); api != nullptr && api->guard) {
        found = Truth::kCuda;
        break;
      }
      // Without a device type it reports CUDA autocast only (torch 2.13: False inside
      // torch.autocast("cpu")); with one it says nothing about CUDA.
      if (resolved == "torch.is_autocast_enabled" && ce + 1 < e && IsOp(T(ce), "(") &&
          IsOp(T(ce + 1), ")")) {
        found = Truth::kCuda;
        break;
      }
      if (StartsWith(resolved, "torch.")) {  // Other torch APIs (mps checks) say nothing of CUDA.
        k = ce - 1;
        continue;
      }
      if (FlagWord(name, found)) continue;
      if (reg_.IsLaunchGuardName(name)) found = Truth::kCuda;
    }
    return found;
  }

  Truth Atom(std::size_t b, std::size_t e, int scope) const {
    const TestShape shape = ShapeOf(b, e);
    if (shape.says_nothing) return Truth::kNone;
    std::string launch;  // The launcher's variable the test reads, lower-case.
    const Truth found = Subject(b, e, scope, launch);
    if (found == Truth::kNone) return found;
    // `local_rank == 0` where the file's single process is rank -1 (`local_rank not in [-1, 0]`):
    // the first launched worker, not the single process.
    if (shape.eq_zero && !launch.empty() && MinusOneRanks().count(launch)) return found;
    if (shape.numeric != 0) return shape.numeric < 0 ? Flip(found) : found;
    return shape.negated ? Flip(found) : found;
  }

  // Option and flag names: `args.cuda`, `use_gpu`, `n_gpu` hold where CUDA is chosen; `no_cuda`,
  // `cpu`, `force_cpu` where it is not. Sets `out` and returns true when the word is one.
  static bool FlagWord(std::string_view name, Truth& out) {
    // Every flag word holds "cpu", "gpu" or "cuda": names without one (most) are never lowered.
    if (!ContainsFolded(name, "cpu") && !ContainsFolded(name, "gpu") &&
        !ContainsFolded(name, "cuda"))
      return false;
    const std::string lower = Lower(name);
    if (lower == "cpu" || StartsWith(lower, "no_cuda") || StartsWith(lower, "no_gpu") ||
        StartsWith(lower, "use_cpu") || StartsWith(lower, "force_cpu") || lower == "cpu_only" ||
        StartsWith(lower, "disable_cuda")) {
      out = Truth::kNoCuda;
      return true;
    }
    if (Contains(lower, "cuda") || Contains(lower, "gpu")) {
      out = Truth::kCuda;
      return true;
    }
    return false;
  }

  bool InComparison(std::size_t k, std::size_t b, std::size_t e) const {
    if (k > b && (IsOp(T(k - 1), "==") || IsOp(T(k - 1), "!="))) return true;
    // `x.type == torch.device("cuda").type`: the only argument of a call whose value (or an
    // attribute of it) is compared.
    if (k > b + 1 && IsOp(T(k - 1), "(") && k + 1 < e && IsOp(T(k + 1), ")")) {
      std::size_t j = k + 2;
      while (j + 1 < e && IsOp(T(j), ".") && IsName(T(j + 1))) j += 2;
      if (j < e && (IsOp(T(j), "==") || IsOp(T(j), "!="))) return true;
      std::size_t h = k - 1;  // Back over the callee NAME(.NAME)*.
      while (h > b && (IsName(T(h - 1)) || IsOp(T(h - 1), "."))) --h;
      if (h > b && (IsOp(T(h - 1), "==") || IsOp(T(h - 1), "!="))) return true;
    }
    if (k + 1 < e && (IsOp(T(k + 1), "==") || IsOp(T(k + 1), "!=") || Is(T(k + 1), "in") ||
                      (Is(T(k + 1), "not") && k + 2 < e && Is(T(k + 2), "in"))))
      return true;
    // `"cuda" in (...)`, `x in ("cuda", "mps")`, `.startswith("cuda")`.
    std::size_t j = k;
    while (j > b && (T(j - 1).kind() == TokKind::kString || IsOp(T(j - 1), ","))) --j;
    if (j > b + 1 && IsOpen(T(j - 1)) && Is(T(j - 2), "in")) return true;
    if (j > b + 1 && IsOp(T(j - 1), "(") &&
        (Is(T(j - 2), "startswith") || Is(T(j - 2), "endswith") || Is(T(j - 2), "find") ||
         Is(T(j - 2), "index") || Is(T(j - 2), "count") || Is(T(j - 2), "replace") ||
         Is(T(j - 2), "split") || Is(T(j - 2), "strip")))
      return true;
    return false;
  }

  // The branches of conditional expressions that run only with CUDA: `A` of `A if check else B`,
  // `B` of `A if not check else B`. Only that branch is guarded, not the whole statement.
  void GuardedBranches(const LogicalLine& l, int scope) {
    branches_.clear();
    for (std::size_t k = l.begin + 1; k < l.end; ++k) {
      if (!Is(T(k), "if")) continue;
      std::size_t e = k + 1;
      int depth = 0;
      for (; e < l.end; ++e) {
        if (IsOpen(T(e))) ++depth;
        if (IsClose(T(e)) && --depth < 0) break;
        if (depth == 0 && Is(T(e), "else")) break;
      }
      Truth t = Cond(k + 1, e, scope);
      if (t == Truth::kNone) continue;
      if (t == Truth::kCuda) {
        // Back to the start of the element: an open bracket, a comma or `=` at this depth.
        std::size_t b = k;
        int d = 0;
        while (b > l.begin) {
          const Token& p = T(b - 1);
          if (IsClose(p))
            ++d;
          else if ((IsOpen(p) && d-- == 0) ||
                   (d == 0 && (IsOp(p, ",") || IsOp(p, "=") || Is(p, "return") || Is(p, "lambda") ||
                               IsOp(p, ":"))))
            break;
          --b;
        }
        branches_.emplace_back(b, k);
      } else if (e < l.end && Is(T(e), "else")) {
        std::size_t f = e + 1;
        int d = 0;
        for (; f < l.end; ++f) {
          if (IsOpen(T(f))) ++d;
          if (IsClose(T(f)) && --d < 0) break;
          if (d == 0 && (IsOp(T(f), ",") || Is(T(f), "if") || Is(T(f), "for"))) break;
        }
        branches_.emplace_back(e + 1, f);
      }
    }
  }
  bool InBranch(std::size_t k) const {
    for (auto [b, e] : branches_)
      if (k >= b && k < e) return true;
    return false;
  }

  std::size_t FindColon(const LogicalLine& l) const {
    int depth = 0;
    for (std::size_t k = l.begin; k < l.end; ++k) {
      if (T(k).kind() != TokKind::kOp) continue;
      if (IsOpen(T(k)))
        ++depth;
      else if (IsClose(T(k)))
        --depth;
      else if (depth == 0 && lex_.Text(T(k)) == ":")
        return k;
    }
    return l.end;
  }

  // Variables assigned from a CUDA check and functions that return one.
  void CollectGuards(std::size_t li) {
    const auto& l = lex_.lines[li];
    TokenText f = Head(l);
    int scope = ScopeOf(li);
    if (f == "def") {
      std::size_t name_tok = l.begin + (First(l) == "async" ? 2 : 1);
      if (name_tok >= l.end) return;
      TokenText name = lex_.Text(T(name_tok));
      for (std::size_t j = li + 1; j < lex_.lines.size() && lex_.lines[j].indent > l.indent; ++j) {
        const auto& body = lex_.lines[j];
        if (First(body) == "return" && Maybe(body.begin + 1, body.end) &&
            Cond(body.begin + 1, body.end, ScopeOf(j)) == Truth::kCuda) {
          guard_attrs_.insert(name);
          guard_names_.insert(name);
          hot_names_.insert(name);
          return;
        }
      }
      return;
    }
    // NAME = expr, or self.NAME = expr.
    std::size_t eq = l.begin;
    while (eq < l.end && !IsOp(T(eq), "=")) ++eq;
    if (eq >= l.end || eq == l.begin) return;
    // Only an assignment whose value names a trigger word or a hot name can be a check.
    if (!Maybe(eq + 1, l.end) || Cond(eq + 1, l.end, scope) != Truth::kCuda) return;
    const Token& target = T(eq - 1);
    if (!IsName(target)) return;
    if (eq - 1 == l.begin)
      guard_names_.insert(lex_.Text(target));
    else if (eq - 1 > l.begin && IsOp(T(eq - 2), "."))
      guard_attrs_.insert(lex_.Text(target));
    hot_names_.insert(lex_.Text(target));
  }

  // --- Findings -----------------------------------------------------------------------------

  struct Block {
    std::uint32_t indent;
    bool guarded;
  };

  // Whether the body of the `if` at line li only leaves (return / continue / break, after at most
  // a message): then the lines after it in the same block run only when the test failed. A raise
  // or exit is not a fallback: the program stops, so it guards nothing.
  bool LeavesBlock(std::size_t li) const {
    const auto& l = lex_.lines[li];
    std::size_t colon = FindColon(l);
    auto leaves = [&](std::size_t b) {
      return Is(T(b), "return") || Is(T(b), "continue") || Is(T(b), "break");
    };
    if (colon + 1 < l.end) return leaves(colon + 1);
    std::size_t j = li + 1;
    std::size_t last = li;
    for (; j < lex_.lines.size() && lex_.lines[j].indent > l.indent; ++j) last = j;
    if (last == li || last - li > 3) return false;
    return leaves(lex_.lines[last].begin);
  }

  void Findings() {
    std::vector<Block> stack = {Block{0, false}};
    bool module_level_guard = false;
    // Per indent: what the last if/elif there said about CUDA.
    std::unordered_map<std::uint32_t, Truth> last_if;
    for (std::size_t li = 0; li < lex_.lines.size(); ++li) {
      const auto& l = lex_.lines[li];
      while (stack.size() > 1 && stack.back().indent >= l.indent) stack.pop_back();
      int scope = ScopeOf(li);
      bool guarded = stack.size() > 1 ? stack.back().guarded : module_level_guard;
      TokenText f = Head(l);
      bool line_guard = guarded;
      bool compound = (f == "if" || f == "elif" || f == "else" || f == "while" || f == "for" ||
                       f == "with" || f == "def" || f == "class" || f == "try" || f == "except" ||
                       f == "finally" || f == "match" || f == "case") &&
                      FindColon(l) < l.end;
      bool block_guard = guarded;
      if (f == "if" || f == "elif" || f == "while") {
        std::size_t colon = FindColon(l);
        Truth t = Cond(l.begin + 1, colon, scope);
        if (t == Truth::kCuda) block_guard = line_guard = true;
        if (f == "elif" && last_if[l.indent] == Truth::kNoCuda) block_guard = line_guard = true;
        last_if[l.indent] = t;
        if (f == "if" && t == Truth::kNoCuda && LeavesBlock(li)) {
          // `if not torch.cuda.is_available(): return` guards the rest of its block.
          if (stack.size() > 1)
            stack.back().guarded = true;
          else
            module_level_guard = true;
        }
      } else if (f == "else") {
        if (last_if[l.indent] == Truth::kNoCuda) block_guard = line_guard = true;
      } else if (compound) {
        last_if[l.indent] = Truth::kNone;  // A for/try/with's own else is not an if's.
      }
      result_.has_main |= IsMainCheck(l);
      if (compound) stack.push_back(Block{l.indent, block_guard});
      if (InKernel(li)) {
        KernelFinding(li);
        continue;
      }
      line_guarded_[li] = line_guard || optional_line_[li];
      branches_.clear();
      const bool maybe = Maybe(l.begin, l.end);  // Once: GuardedBranches adds no hot name.
      if (!line_guard && maybe) GuardedBranches(l, scope);
      if (First(l) == "import" || First(l) == "from") {
        required_import_ = required_line_[li];
        ImportFindings(l, scope, line_guard || optional_line_[li]);
        required_import_ = false;
      } else if (maybe) {
        LineFindings(li, l, scope, line_guard || optional_line_[li]);
      }
    }
  }

  // The one finding of a kernel, at its first decorator.
  void KernelFinding(std::size_t li) {
    for (int s = ScopeOf(li); s > 0; s = scopes_[static_cast<std::size_t>(s)].parent) {
      const Scope& sc = scopes_[static_cast<std::size_t>(s)];
      if (sc.kernel) return;  // Body lines: the kernel was reported at its decorator.
    }
    auto it = decorator_kernel_.find(li);
    if (it == decorator_kernel_.end()) return;
    const Scope& sc = scopes_[static_cast<std::size_t>(it->second)];
    if (li != sc.kernel_line) return;
    const Token& at = T(lex_.lines[li].begin);
    bool guarded = optional_line_[li];
    sink_.Add("DT207", lex_.Line(at), lex_.Column(at), std::string(sc.name), guarded,
              kernel_lib_ ? std::string_view(kernel_lib_->alternative) : std::string_view());
    NoteCuda(sc.top, guarded, false);
  }

  // Whether extension module `dotted` also has a CPU build (`extension = CppExtension`,
  // CUDAExtension only where CUDA is found): the Mac gets that build.
  bool IsCpuBuilt(const std::string& dotted) const {
    return opt_.cuda != nullptr && opt_.cuda->IsCpuBuilt(dotted);
  }

  // A use of extension module `dotted` at `at` (DT305). Its definition depends on CUDA unless the
  // module also has a CPU build: then its ops run on the Mac's CPU and fail only on MPS (the
  // finding says so and is mps_only), and the ops without a CPU kernel are the C++ scanner's
  // (DT320).
  void ExtensionUse(const Token& at, const std::string& dotted, bool guarded, int scope) {
    const bool cpu = IsCpuBuilt(dotted);
    sink_.Add("DT305", lex_.Line(at), lex_.Column(at),
              cpu ? dotted + " (built for the CPU only where CUDA is missing)" : dotted, guarded,
              {}, cpu);
    if (!cpu) NoteCudaAt(scope, guarded, true);
  }

  // Marks the module-level definition `top` as reaching CUDA-only code when the use is unguarded.
  void NoteCuda(int top, bool guarded, bool ext) {
    if (guarded || top < 0) return;
    cuda_tops_[scopes_[static_cast<std::size_t>(top)].name] |= ext;
  }
  void NoteCudaAt(int scope, bool guarded, bool ext) {
    NoteCuda(scope > 0 ? scopes_[static_cast<std::size_t>(scope)].top : -1, guarded, ext);
  }

  void ImportFindings(const LogicalLine& l, int scope, bool guarded) {
    if (First(l) == "import") {
      for (std::size_t k = l.begin + 1; k < l.end;) {
        std::string mod;
        std::size_t e = Dotted(k, l.end, mod);
        if (mod.empty()) break;
        ModuleFinding(mod, T(k), scope, guarded);
        k = e;
        if (k + 1 < l.end && Is(T(k), "as")) k += 2;
        if (k < l.end && IsOp(T(k), ","))
          ++k;
        else
          break;
      }
      return;
    }
    std::size_t k = l.begin + 1;
    int level = 0;
    while (k < l.end && T(k).kind() == TokKind::kOp && (Is(T(k), ".") || Is(T(k), "..."))) {
      level += static_cast<int>(lex_.Text(T(k)).size());
      ++k;
    }
    std::size_t mod_tok = k < l.end ? k : l.begin;
    std::string mod;
    std::size_t e = k < l.end && Is(T(k), "import") ? k : Dotted(k, l.end, mod);
    std::string abs = Absolute(level, mod);
    if (abs.empty() || (level > 0 && abs == mod && opt_.package.empty() && opt_.cuda == nullptr))
      return;  // A relative import of the project's own code, with nothing known about it yet.
    if (IsExtensionModule(abs)) {
      ExtensionUse(T(mod_tok), abs, guarded, scope);
      return;
    }
    bool any = false;
    for (k = e + 1; k < l.end; ++k) {
      if (!IsName(T(k)) || Is(T(k), "as") || (k > l.begin && Is(T(k - 1), "as"))) continue;
      std::string full = abs + "." + std::string(lex_.Text(T(k)));
      bool ext = true;
      if (IsExtensionModule(full)) {
        ExtensionUse(T(k), full, guarded, scope);
        any = true;
        continue;
      } else if (IsCudaSymbol(full)) {
        const char* code = SymbolCode(full, ext);
        if (!SiblingSymbol(full))
          sink_.Add(code, lex_.Line(T(k)), lex_.Column(T(k)), full, guarded);
      } else {
        continue;
      }
      NoteCudaAt(scope, guarded, ext);
      any = true;
    }
    if (any || level > 0) return;
    if (const Library* lib = LibraryOf(abs)) {
      sink_.Add(LibraryImportCode(guarded), lex_.Line(T(mod_tok)), lex_.Column(T(mod_tok)),
                lib->name + " (" + abs.substr(0, abs.find('.')) + ")", guarded, lib->alternative);
      return;
    }
    // torch.cuda APIs are reported where they are imported too; other APIs (CUDAExtension,
    // torch.compile, transformers' BitsAndBytesConfig) where they are used.
    bool cuda_module = StartsWith(abs, "torch.cuda") || abs == "torch.backends.cudnn";
    for (k = e + 1; k < l.end; ++k) {
      if (!IsName(T(k)) || Is(T(k), "as") || (k > l.begin && Is(T(k - 1), "as"))) continue;
      std::string full = abs + "." + std::string(lex_.Text(T(k)));
      const PythonApi* api = reg_.MatchApi(full);
      if (cuda_module || (api != nullptr && api->user)) ApiFinding(full, T(k), guarded, scope);
    }
  }

  // `import x.y`: an extension module, a CUDA-only library or a torch.cuda module.
  void ModuleFinding(const std::string& mod, const Token& at, int scope, bool guarded) {
    if (IsExtensionModule(mod)) {
      ExtensionUse(at, mod, guarded, scope);
    } else if (const Library* lib = LibraryOf(mod)) {
      sink_.Add(LibraryImportCode(guarded), lex_.Line(at), lex_.Column(at),
                lib->name + " (" + mod.substr(0, mod.find('.')) + ")", guarded, lib->alternative);
    } else if (const PythonApi* api = reg_.MatchApi(mod);
               StartsWith(mod, "torch.cuda") || (api != nullptr && api->user)) {
      ApiFinding(mod, at, guarded, scope);
    }
  }

  // Registry match (or the torch.cuda catch-all) for a resolved dotted name.
  // `open`: the call's opening bracket in `l`, when the use is a call; an API that names an
  // argument that makes the call portable (`unless_argument`) is a finding only in a call that
  // does not pass it.
  bool ApiFinding(const std::string& resolved, const Token& at, bool guarded, int scope,
                  const LogicalLine* l = nullptr, std::size_t open = 0) {
    if (const PythonApi* api = reg_.MatchApi(resolved)) {
      if (api->guard) return true;
      if (!api->unless_argument.empty() &&
          (l == nullptr || open >= l->end || !IsOp(T(open), "(") || PassesArgument(open, *l, *api)))
        return true;
      sink_.Add(api->code, lex_.Line(at), lex_.Column(at), resolved, guarded, api->replacement);
      (void)scope;
      return true;
    }
    if (StartsWith(resolved, "torch.cuda.")) {
      auto third = resolved.find('.', 11);
      sink_.Add("DT110", lex_.Line(at), lex_.Column(at), resolved.substr(0, third), guarded);
      return true;
    }
    return false;
  }

  // Whether the call whose bracket is at `open` passes `api.unless_argument`: by keyword, at its
  // position, or possibly through a `*args` / `**kwargs` spread.
  bool PassesArgument(std::size_t open, const LogicalLine& l, const PythonApi& api) const {
    PyRef call;
    ReadCall(open, l.end, call);
    return call.spread || (api.unless_position >= 0 && call.positional > api.unless_position) ||
           std::find(call.keywords.begin(), call.keywords.end(), api.unless_argument) !=
               call.keywords.end();
  }

  // The name of the call whose argument list holds token k ("print", "warnings.warn"), the index
  // of its opening bracket, or nothing.
  std::size_t EnclosingOpen(std::size_t k, std::size_t b) const {
    int depth = 0;
    for (std::size_t j = k; j > b; --j) {
      const Token& t = T(j - 1);
      if (IsClose(t))
        ++depth;
      else if (IsOpen(t)) {
        if (depth == 0) return j - 1;
        --depth;
      }
    }
    return static_cast<std::size_t>(-1);
  }

  // Prose: a string that is the message of a print, a warning, a log call or an exception, or a
  // help / description text. It mentions CUDA; it uses nothing.
  bool IsProse(std::size_t k, const LogicalLine& l) const {
    if (k > l.begin + 1 && IsOp(T(k - 1), "=") && IsName(T(k - 2))) {
      std::string kw = Lower(lex_.Text(T(k - 2)));
      if (kw == "help" || kw == "description" || kw == "epilog" || kw == "msg" || kw == "message" ||
          kw == "usage" || kw == "doc" || kw == "title" || kw == "desc")
        return true;
    }
    std::size_t open = EnclosingOpen(k, l.begin);
    if (open == static_cast<std::size_t>(-1) || !IsOp(T(open), "(") || open == l.begin) {
      return First(l) == "raise" || First(l) == "assert";
    }
    const Token& callee = T(open - 1);
    if (!IsName(callee)) return false;
    std::string c = Lower(lex_.Text(callee));
    static const char* kProse[] = {
        "print",         "warn",      "warning",  "info",   "debug",
        "error",         "exception", "critical", "log",    "fatal",
        "write",         "echo",      "secho",    "format", "add_argument_group",
        "assertionerror"};
    for (const char* p : kProse)
      if (c == p) return true;
    return EndsWith(c, "error") || EndsWith(c, "exception") || EndsWith(c, "warning");
  }

  // A call's resolved callee name for the bracket at `open`.
  std::string Callee(std::size_t open, std::size_t b, int scope) const {
    if (open == static_cast<std::size_t>(-1) || open <= b || !IsOp(T(open), "(")) return {};
    std::size_t j = open;  // Walk back over NAME(.NAME)*.
    while (j > b && IsName(T(j - 1)) && j - 1 > b && IsOp(T(j - 2), ".")) j -= 2;
    if (j > b && IsName(T(j - 1))) --j;
    if (j >= open || !IsName(T(j))) return {};
    std::string resolved, head;
    Chain(j, open, scope, resolved, head);
    return resolved;
  }

  // What LineFindings knows of the statement it reads.
  struct LineRead {
    std::size_t li;
    const LogicalLine& l;
    int scope;
    bool line_guarded;
    bool launched = false;  // A kernel launch: the library names on the line are part of it.
    bool tainted = false;   // The line uses an extension handle or CUDA symbol unguarded.
  };

  // A statement that passed Maybe().
  void LineFindings(std::size_t li, const LogicalLine& l, int scope, bool guarded) {
    if (StringsOnly(l)) return;  // A docstring.
    LineRead line{li, l, scope, guarded};
    for (std::size_t k = l.begin; k < l.end; ++k) {
      const Token& t = T(k);
      const bool in_branch = line.line_guarded || (!branches_.empty() && InBranch(k));
      if (t.kind() == TokKind::kString) {
        StringTokenFindings(k, line, in_branch);
      } else if (IsName(t)) {
        k = NameFindings(k, line, in_branch);
      }
    }
    HandleAssignment(line);
  }

  // A string token of the statement: DDP's keywords set by key, f-strings, device strings.
  void StringTokenFindings(std::size_t k, const LineRead& line, bool guarded) {
    const LogicalLine& l = line.l;
    std::string_view sb = StringBody(lex_.Text(T(k)));
    if ((sb == "device_ids" || sb == "output_device") && k > l.begin && IsOp(T(k - 1), "[") &&
        k + 3 < l.end && IsOp(T(k + 1), "]") && IsOp(T(k + 2), "=")) {
      // kwargs["device_ids"] = [comm.get_local_rank()]: DDP's keywords, set by key.
      std::size_t v = k + 3;
      bool list = IsOp(T(v), "[");
      if (list) ++v;
      IntegerDevice(v, l, guarded, std::string(sb) + (list ? "=[" : "="), list ? "]" : "");
      return;
    }
    if (IsFString(lex_.Text(T(k)))) FStringFindings(k, line.scope, guarded);
    StringFinding(k, l, line.scope, guarded);
  }

  // `.cuda()`, `.double()`, `.to(i)`: methods of any object.
  void AttributeFindings(std::size_t k, const LogicalLine& l, bool guarded) {
    const Token& t = T(k);
    const bool call = k + 1 < l.end && IsOp(T(k + 1), "(");
    if (!call) return;
    if (lex_.Text(t) == "cuda") {
      sink_.Add("DT101", lex_.Line(t), lex_.Column(t), ".cuda()", guarded);
    } else if (lex_.Text(t) == "double" && k + 2 < l.end && IsOp(T(k + 2), ")")) {
      sink_.Add("DT204", lex_.Line(t), lex_.Column(t), ".double()", guarded);
    } else if (lex_.Text(t) == "to") {
      // Tensor.to(device=None, dtype=None, ...): the device is the first positional argument or
      // the `device=` keyword, wherever it stands.
      const std::size_t close = Matching(k + 1, l.end);
      int depth = 0;
      for (std::size_t a = k + 2; a + 1 < close; ++a) {
        if (IsOpen(T(a))) ++depth;
        if (IsClose(T(a))) --depth;
        if (depth == 0 && IsName(T(a)) && lex_.Text(T(a)) == "device" && IsOp(T(a + 1), "=") &&
            (IsOp(T(a - 1), "(") || IsOp(T(a - 1), ","))) {
          IntegerDevice(a + 2, l, guarded, ".to(device=");
          return;
        }
      }
      IntegerDevice(k + 2, l, guarded, ".to(");
    }
  }

  // Keyword arguments: the registry's keyword rules, `device_map={...}`, DDP's device indexes.
  void KeywordArgFindings(std::size_t k, const LineRead& line, bool guarded) {
    const LogicalLine& l = line.l;
    const Token& t = T(k);
    if (k + 1 < l.end && IsOp(T(k + 1), "=") && k > l.begin &&
        (IsOp(T(k - 1), "(") || IsOp(T(k - 1), ",")) && Head(l) != "def" && Head(l) != "class") {
      KeywordFinding(k, l, line.scope, guarded);
    }
    if (lex_.Text(t) == "device_map" && k + 2 < l.end && IsOp(T(k + 1), "=") &&
        IsOp(T(k + 2), "{")) {
      DeviceMap(k, l, guarded);
    }
    if ((lex_.Text(t) == "device_ids" || lex_.Text(t) == "output_device") && k + 2 < l.end &&
        IsOp(T(k + 1), "=")) {
      // DDP(model, device_ids=[local_rank], output_device=local_rank): CUDA device indexes.
      std::size_t v = k + 2;
      bool list = IsOp(T(v), "[");
      if (list) ++v;
      IntegerDevice(v, l, guarded, std::string(lex_.Text(t)) + (list ? "=[" : "="),
                    list ? "]" : "");
    }
  }

  // A name token of the statement; returns the last token it covered (a whole dotted chain when
  // it reported one).
  std::size_t NameFindings(std::size_t k, LineRead& line, bool guarded) {
    const LogicalLine& l = line.l;
    const Token& t = T(k);
    if (k > l.begin && IsOp(T(k - 1), ".")) {
      AttributeFindings(k, l, guarded);
      return k;
    }
    if (lex_.Text(t) == "def" || lex_.Text(t) == "class") return k + 1;  // Its name is no use.
    KeywordArgFindings(k, line, guarded);
    if (kernel_names_.count(lex_.Text(t)) && k + 1 < l.end && IsOp(T(k + 1), "[")) {
      sink_.Add("DT207", lex_.Line(t), lex_.Column(t), std::string(lex_.Text(t)) + "[grid](...)",
                guarded);
      NoteCudaAt(line.scope, guarded, false);
      line.launched = true;
      return k;
    }
    if (IsHandle(lex_.Text(t), line.scope)) {
      HandleUse(k, line, guarded);
      return k;
    }
    if (top_names_.count(lex_.Text(t)) && !Lookup(lex_.Text(t), line.scope)) {
      OwnReference(k, line, guarded);
      return k;
    }
    const std::string* bound = Lookup(lex_.Text(t), line.scope);
    const bool call = k + 1 < l.end && IsOp(T(k + 1), "(");
    if (bound == nullptr && call) {
      // `extension = CUDAExtension` in one branch, then `extension("pkg._C", sources)`.
      auto ev = extension_vars_.find(lex_.Text(t));
      if (ev != extension_vars_.end() && ev->second.cuda) {
        ExtensionBuild(k, k + 1, l, line.scope, guarded, "torch.utils.cpp_extension.CUDAExtension");
        return k;
      }
    }
    if (lex_.Text(t) != "torch" && bound == nullptr) return k;
    return ChainFindings(k, bound, line, guarded);
  }

  // A use of an extension handle (`_C.forward(...)`), unless it is assigned or tested for None.
  void HandleUse(std::size_t k, LineRead& line, bool guarded) {
    const LogicalLine& l = line.l;
    const Token& t = T(k);
    bool assigned = k + 1 < l.end && IsOp(T(k + 1), "=") && k == l.begin;
    bool none_test = k + 1 < l.end && Is(T(k + 1), "is");
    if (assigned || none_test) return;
    bool use_guard = guarded || fallback_names_.count(lex_.Text(t)) > 0;
    std::string resolved, head;
    Chain(k, l.end, line.scope, resolved, head);
    ExtensionUse(t, resolved, use_guard, line.scope);
    // An object a CPU-built extension made (`_C.InstanceAnnotation(...)`) is plain C++.
    line.tainted |= !use_guard && !IsCpuBuilt(resolved);
  }

  // A reference to one of this module's own definitions: the dependency graph, no finding.
  void OwnReference(std::size_t k, const LineRead& line, bool guarded) {
    const TokenText name = lex_.Text(T(k));
    int from = line.scope > 0 ? scopes_[static_cast<std::size_t>(line.scope)].top : -1;
    std::string_view from_name =
        from >= 0 ? scopes_[static_cast<std::size_t>(from)].name : std::string_view();
    if (from_name != name) ref_guards_[name] |= guarded ? 1 : 2;
    if (guarded) return;
    if (from_name.empty())
      module_refs_[line.li].push_back(name);
    else if (from_name != name)
      local_refs_[from_name].insert(name);
  }

  // Whether token k lies in the annotation of `name: Type` or `name: Type = value` (after the
  // colon, before any `=`).
  bool InVariableAnnotation(std::size_t k, const LogicalLine& l) const {
    if (l.end - l.begin < 3 || !IsName(T(l.begin)) || !IsOp(T(l.begin + 1), ":") || k < l.begin + 2)
      return false;
    for (std::size_t j = l.begin + 2; j < k; ++j)
      if (IsOp(T(j), "=")) return false;
    return true;
  }

  // A dotted chain through torch or an import alias: CUDA symbols, op-library calls, extension
  // builds, device counts, registry APIs and CUDA-only libraries. Returns the last token covered.
  std::size_t ChainFindings(std::size_t k, const std::string* bound, LineRead& line, bool guarded) {
    const LogicalLine& l = line.l;
    const int scope = line.scope;
    const Token& t = T(k);
    std::string resolved, head;
    std::size_t ce = Chain(k, l.end, scope, resolved, head);
    bool assigned = ce == k + 1 && ce < l.end && IsOp(T(ce), "=");  // `name = None` fallback.
    bool none_test = ce < l.end && Is(T(ce), "is");
    if (assigned || none_test) return k;
    bool use_guard = guarded || fallback_names_.count(lex_.Text(t)) > 0;
    if (IsCudaSymbol(resolved) || (bound && IsCudaSymbol(*bound))) {
      bool ext = true;
      const std::string& symbol = IsCudaSymbol(resolved) ? resolved : *bound;
      SymbolCode(symbol, ext);
      // A def line's names are its annotations and defaults' callees, and `name: Type` only
      // declares a type: neither is a call of the symbol.
      if (!SiblingSymbol(symbol) && Head(l) != "def" && !InVariableAnnotation(k, l))
        sink_.Add(ext ? "DT312" : "DT209", lex_.Line(t), lex_.Column(t), resolved, use_guard);
      NoteCudaAt(scope, use_guard, ext);
      line.tainted |= !use_guard;
      return ce - 1;
    }
    if (StartsWith(resolved, "torch.ops.") && IsExtensionModule(resolved) && ce > k + 4) {
      ExtensionUse(t, resolved, use_guard, scope);
      line.tainted |= !use_guard;
      return ce - 1;
    }
    ExtensionBuildChain(k, ce, resolved, line, use_guard);
    if (ce < l.end && IsOp(T(ce), "(") && EndsWith(resolved, "cuda.device_count") &&
        StartsWith(resolved, "torch.") && CountAsValue(k, ce, l)) {
      // The number of GPUs as a value (a worker count, a batch split): 0 without CUDA.
      sink_.Add("DT115", lex_.Line(t), lex_.Column(t), resolved + "()", use_guard);
      return ce - 1;
    }
    // `dist.get_backend() == dist.Backend.NCCL`, `x.dtype != torch.float64`: a value compared
    // is a test of what the program has, not a use of it.
    bool compared = (k > l.begin && (IsOp(T(k - 1), "==") || IsOp(T(k - 1), "!="))) ||
                    (ce < l.end && (IsOp(T(ce), "==") || IsOp(T(ce), "!=")));
    if (compared || ApiFinding(resolved, t, use_guard, scope, &l, ce)) return ce - 1;
    if (bound == nullptr) return k;
    if (const Library* lib = LibraryOf(resolved)) {
      if (line.launched ||
          (kernel_lib_ == lib && (InLaunch(line.li) || launch_scopes_.count(scope))))
        return k;
      sink_.Add("DT202", lex_.Line(t), lex_.Column(t), resolved, use_guard,
                lib->AlternativeFor(resolved));
      return ce - 1;
    }
    return k;
  }

  // `ext = CUDAExtension` (a variable called later) and `load(...)` / `load_inline(...)` /
  // `CUDAExtension(...)` builds.
  void ExtensionBuildChain(std::size_t k, std::size_t ce, const std::string& resolved,
                           const LineRead& line, bool use_guard) {
    const LogicalLine& l = line.l;
    if ((EndsWith(resolved, "cpp_extension.CUDAExtension") ||
         EndsWith(resolved, "cpp_extension.CppExtension")) &&
        ce == l.end && k == l.begin + 2 && IsName(T(l.begin)) && IsOp(T(l.begin + 1), "=")) {
      ExtensionVar& var = extension_vars_[lex_.Text(T(l.begin))];
      (EndsWith(resolved, "CUDAExtension") ? var.cuda : var.cpp) = true;
      hot_names_.insert(lex_.Text(T(l.begin)));
    }
    if (resolved == "torch.utils.cpp_extension.load" ||
        resolved == "torch.utils.cpp_extension.load_inline" ||
        resolved == "torch.utils.cpp_extension.CUDAExtension") {
      ExtensionBuild(k, ce, l, line.scope, use_guard, resolved);
    }
  }

  // An object built from an extension's class is a handle too (`raster = Rasterizer(...)`, then
  // `raster(...)`); what a function returns (a tensor) is not. A module-level
  // `name = BallQuery.apply` is a symbol of this module.
  void HandleAssignment(LineRead& line) {
    const LogicalLine& l = line.l;
    const int scope = line.scope;
    // find, not []: a lookup must not add an empty entry for every line.
    auto refs = module_refs_.find(line.li);
    if (!line.tainted && refs == module_refs_.end()) return;
    std::size_t eq = l.begin;
    while (eq < l.end && !IsOp(T(eq), "=")) ++eq;
    if (eq != l.begin + 1 || eq >= l.end || !IsName(T(l.begin))) return;
    TokenText target = lex_.Text(T(l.begin));
    bool constructed = false;
    if (line.tainted && eq + 1 < l.end && IsName(T(eq + 1)) &&
        IsHandle(lex_.Text(T(eq + 1)), scope)) {
      std::string dotted;
      std::size_t ce = Dotted(eq + 1, l.end, dotted);
      TokenText last = lex_.Text(T(ce - 1));
      constructed = ce < l.end && IsOp(T(ce), "(") && !last.empty() && last[0] >= 'A' &&
                    last[0] <= 'Z' && Matching(ce, l.end) == l.end - 1;
    }
    if (constructed) {
      BindHandle(scope, target);
      handle_names_.insert(target);
    }
    if (scope == 0) {
      if (constructed) cuda_tops_[target] |= true;
      if (refs != module_refs_.end())
        for (auto ref : refs->second) local_refs_[target].insert(ref);
    }
  }

  // `load(name=..., sources=[... .cu], with_cuda=True)`, `load_inline(cuda_sources=...)` and
  // `CUDAExtension(name=...)`: a CUDA build. Declares the module it makes and binds the value a
  // JIT build returns (`_ext = load(...)`) as an extension handle.
  void ExtensionBuild(std::size_t k, std::size_t ce, const LogicalLine& l, int scope, bool guarded,
                      const std::string& resolved) {
    if (ce >= l.end || !IsOp(T(ce), "(")) return;
    std::size_t close = Matching(ce, l.end);
    bool cuda = EndsWith(resolved, "CUDAExtension");
    std::string name;
    std::vector<std::string> sources;
    for (std::size_t j = ce + 1; j < close; ++j) {
      const Token& t = T(j);
      if (t.kind() == TokKind::kString) {
        std::string_view body = StringBody(lex_.Text(t));
        if (EndsWith(body, ".cu") || EndsWith(body, ".cuh")) cuda = true;
        for (std::string_view ext : {".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp"})
          if (EndsWith(body, ext)) {
            sources.emplace_back(body.substr(body.rfind('/') + 1));
            break;
          }
        bool positional = j == ce + 1 && (j + 1 == close || IsOp(T(j + 1), ","));
        if (((j > ce + 2 && IsOp(T(j - 1), "=") && Is(T(j - 2), "name")) || positional) &&
            name.empty())
          name = std::string(body);
        continue;
      }
      if (!IsName(t)) continue;
      if ((lex_.Text(t) == "with_cuda" && j + 2 < close && Is(T(j + 2), "True")) ||
          lex_.Text(t) == "extra_cuda_cflags" || lex_.Text(t) == "cuda_sources")
        cuda = true;
    }
    if (!cuda) return;
    track_refs_ = true;
    // A build at run time under a device check (`load()` only where x.is_cuda) keeps its sources
    // off the Mac. A setup script's condition (`if CUDA_HOME:`, an opt-in switch) only decides
    // whether the wheel has the extension; whether the project runs without it is decided where
    // the extension is used, so the wrapper's own findings stay unguarded.
    for (auto& src : sources)
      result_.extension_sources.emplace_back(std::move(src), guarded && !opt_.setup_py);
    if (!name.empty()) {
      auto ev = extension_vars_.find(lex_.Text(T(k)));
      bool cpu_build = ev != extension_vars_.end() && ev->second.cpp;
      sink_.DeclareCudaModule(name, lex_.Line(T(k)),
                              std::string(lex_.Text(T(k))) + "() in " + sink_.rel(), cpu_build);
    }
    if (EndsWith(resolved, "CUDAExtension")) return;  // The registry reports it (DT301).
    sink_.Add("DT301", lex_.Line(T(k)), lex_.Column(T(k)),
              resolved.substr(resolved.rfind('.') + 1) + "()", guarded);
    // The handle: `X = load(...)`, bound where `global X` says, else in this scope.
    if (l.end - l.begin > 2 && IsName(T(l.begin)) && IsOp(T(l.begin + 1), "=")) {
      TokenText target = lex_.Text(T(l.begin));
      int bind = globals_.count(target) ? 0 : scope;
      BindHandle(bind, target);
      handle_names_.insert(target);
      if (!guarded && scope == 0) cuda_tops_[target] |= true;
    }
  }

  // Code inside an f-string's replacement fields (`f"{torch.cuda.max_memory_allocated() / 1e9}"`):
  // its dotted names are resolved and reported at the string.
  // Chain() for the tokens of an f-string field lexed on their own: the NAME(.NAME)* at `a`,
  // resolved through this scope's imports; returns the index of its last name.
  std::size_t SubChain(const Lexed& sub, std::size_t a, int scope, std::string& resolved) const {
    std::string dotted(sub.Text(sub.tokens[a]));
    std::size_t b = a;
    while (b + 2 < sub.tokens.size() && sub.Text(sub.tokens[b + 1]) == "." &&
           sub.tokens[b + 2].kind() == TokKind::kName) {
      dotted.append(".").append(sub.Text(sub.tokens[b + 2]));
      b += 2;
    }
    const std::string* target = Lookup(sub.Text(sub.tokens[a]), scope);
    resolved = target ? *target + dotted.substr(sub.Text(sub.tokens[a]).size()) : dotted;
    return b;
  }

  void FStringFindings(std::size_t k, int scope, bool guarded) {
    const Token& t = T(k);
    std::string_view body = StringBody(lex_.Text(t));
    if (body.find('{') == std::string_view::npos) return;
    Lexed sub;
    for (std::size_t i = 0; i < body.size(); ++i) {
      if (body[i] != '{') continue;
      if (i + 1 < body.size() && body[i + 1] == '{') {
        ++i;
        continue;
      }
      int depth = 0;
      std::size_t j = i;
      for (; j < body.size(); ++j) {
        if (body[j] == '{') ++depth;
        if (body[j] == '}' && --depth == 0) break;
      }
      std::string_view field = body.substr(i + 1, j > i + 1 ? j - i - 1 : 0);
      i = j;
      if (field.find("cuda") == std::string_view::npos) continue;
      LexPython(field, sub);
      // `{torch.cuda.memory_reserved() / 1e9 if torch.cuda.is_available() else 0}`: the value
      // before a CUDA check's `if` is computed only with CUDA.
      std::size_t cond_at = sub.tokens.size();
      bool cond_cuda = false;
      for (std::size_t a = 0; a < sub.tokens.size(); ++a) {
        if (sub.Text(sub.tokens[a]) != "if") continue;
        cond_at = a;
        for (std::size_t c = a + 1; c < sub.tokens.size() && sub.Text(sub.tokens[c]) != "else";
             ++c) {
          if (sub.Text(sub.tokens[c]) == "not") break;
          if (sub.tokens[c].kind() != TokKind::kName || sub.Text(sub.tokens[c - 1]) == ".")
            continue;
          std::string resolved;
          SubChain(sub, c, scope, resolved);
          const PythonApi* api = reg_.MatchApi(resolved);
          if ((api != nullptr && api->guard) || guard_names_.count(sub.Text(sub.tokens[c])))
            cond_cuda = true;
        }
        break;
      }
      for (std::size_t a = 0; a < sub.tokens.size(); ++a) {
        if (a >= cond_at) {
          // The condition's own names (the check) report nothing; the else value is unguarded.
          while (a < sub.tokens.size() && sub.Text(sub.tokens[a]) != "else") ++a;
          if (a >= sub.tokens.size()) break;
          cond_at = sub.tokens.size();
          cond_cuda = false;
          continue;
        }
        const Token& n = sub.tokens[a];
        if (n.kind() != TokKind::kName || (a > 0 && sub.Text(sub.tokens[a - 1]) == ".")) continue;
        std::string resolved;
        const std::size_t b = SubChain(sub, a, scope, resolved);
        if (Lookup(sub.Text(n), scope) == nullptr && sub.Text(n) != "torch") continue;
        ApiFinding(resolved, t, guarded || (cond_cuda && a < cond_at), scope);
        a = b;
      }
    }
  }

  // Whether the call starting at k (its bracket at `open`) is used as a value, not as a test: not
  // compared, not the condition of an if / while / assert, not negated.
  bool CountAsValue(std::size_t k, std::size_t open, const LogicalLine& l) const {
    std::size_t close = Matching(open, l.end);
    if (close + 1 < l.end) {
      const Token& n = T(close + 1);
      if (n.kind() == TokKind::kOp &&
          (lex_.Text(n) == "==" || lex_.Text(n) == "!=" || lex_.Text(n) == ">" ||
           lex_.Text(n) == ">=" || lex_.Text(n) == "<" || lex_.Text(n) == "<="))
        return false;
    }
    if (k > l.begin &&
        (Is(T(k - 1), "not") || Is(T(k - 1), "if") || Is(T(k - 1), "and") || Is(T(k - 1), "or")))
      return false;
    TokenText head = Head(l);
    if ((head == "if" || head == "elif" || head == "while" || head == "assert") && k < FindColon(l))
      return false;
    return true;
  }

  // Whether line li launches a kernel (`kernel[grid](...)` anywhere on it).
  bool InLaunch(std::size_t li) const {
    const auto& l = lex_.lines[li];
    for (std::size_t k = l.begin; k + 1 < l.end; ++k)
      if (IsName(T(k)) && kernel_names_.count(lex_.Text(T(k))) && IsOp(T(k + 1), "[")) return true;
    return false;
  }

  // `.to(args.gpu)`, `.to(local_rank)`, `.to(0)`: an integer device index is a CUDA device.
  // `what` is the construct up to the index ("`.to(`", "`device_ids=[`"); `close` ends it.
  void IntegerDevice(std::size_t b, const LogicalLine& l, bool guarded, std::string_view what,
                     std::string_view close = ")") {
    if (b >= l.end) return;
    std::size_t e = b;
    int depth = 0;
    for (; e < l.end; ++e) {
      if (IsOpen(T(e))) ++depth;
      if (IsClose(T(e)) && --depth < 0) break;
      if (depth == 0 && IsOp(T(e), ",")) break;
    }
    if (e == b) return;
    if (e == b + 1 && T(b).kind() == TokKind::kNumber && IsDigits(lex_.Text(T(b)))) {
      sink_.Add("DT113", lex_.Line(T(b)), lex_.Column(T(b)),
                std::string(what) + std::string(lex_.Text(T(b))) + std::string(close), guarded);
      return;
    }
    // NAME(.NAME)* only, ending in an index-like name; or a getter of one
    // (`comm.get_local_rank()`).
    std::size_t name_end = e;
    if (e >= b + 3 && IsOp(T(e - 1), ")") && IsOp(T(e - 2), "(")) name_end = e - 2;
    for (std::size_t k = b; k < name_end; ++k)
      if (!(IsName(T(k)) || IsOp(T(k), "."))) return;
    if (name_end == b || !IsName(T(name_end - 1))) return;
    std::string last = Lower(lex_.Text(T(name_end - 1)));
    if (name_end != e) {
      if (!StartsWith(last, "get_")) return;
      last = last.substr(4);
    }
    static const char* kIndexNames[] = {"gpu",       "gpu_id",      "gpu_idx",
                                        "gpu_index", "local_rank",  "device_id",
                                        "gpu_rank",  "cuda_device", "device_index"};
    for (const char* n : kIndexNames)
      if (last == n) {
        std::string idx;
        for (std::size_t k = b; k < e; ++k) idx.append(lex_.Text(T(k)));
        sink_.Add("DT113", lex_.Line(T(b)), lex_.Column(T(b)),
                  std::string(what) + idx + std::string(close), guarded);
        return;
      }
  }

  // `device_map={"": LOCAL_RANK}` / `{"": int(os.environ["LOCAL_RANK"])}`.
  void DeviceMap(std::size_t k, const LogicalLine& l, bool guarded) {
    std::size_t open = k + 2;
    std::size_t close = Matching(open, l.end);
    for (std::size_t j = open + 1; j < close; ++j) {
      const Token& t = T(j);
      if (lex_.Text(t) == "_dualtrack_device" && j + 1 < close && IsOp(T(j + 1), "(")) {
        j = Matching(j + 1, close);  // `dualtrack fix`'s run-time choice: cuda:N only with CUDA.
        continue;
      }
      std::string lower = Lower(lex_.Text(t));
      if ((t.kind() == TokKind::kName && (lower == "local_rank" || lower == "int" ||
                                          Contains(lower, "gpu") || lower == "rank")) ||
          (t.kind() == TokKind::kString && Lower(StringBody(lex_.Text(t))) == "local_rank") ||
          (t.kind() == TokKind::kNumber && IsDigits(lex_.Text(t)) && j > open + 1 &&
           IsOp(T(j - 1), ":"))) {
        sink_.Add("DT113", lex_.Line(T(k)), lex_.Column(T(k)), "device_map", guarded);
        return;
      }
    }
  }

  // A keyword argument of the registry (`load_in_8bit=True`, `optim="paged_adamw_32bit"`).
  void KeywordFinding(std::size_t k, const LogicalLine& l, int scope, bool guarded) {
    const auto* rules = reg_.KeywordRules(lex_.Text(T(k)));
    if (rules == nullptr || k + 2 >= l.end) return;
    const Token& v = T(k + 2);
    std::string value = v.kind() == TokKind::kString ? std::string(StringBody(lex_.Text(v)))
                                                     : std::string(lex_.Text(v));
    bool single = k + 3 >= l.end || IsOp(T(k + 3), ",") || IsClose(T(k + 3));
    std::string callee;
    bool callee_done = false;
    for (const auto& r : *rules) {
      if (!r.value.empty() && (!single || !GlobMatch(r.value, value))) continue;
      if (!r.call.empty()) {
        if (!callee_done) {
          callee = Callee(EnclosingOpen(k, l.begin), l.begin, scope);
          callee_done = true;
        }
        if (callee.empty() || !GlobMatch(r.call, callee)) continue;
      }
      std::string name = std::string(lex_.Text(T(k))) + "=" +
                         (single ? std::string(lex_.Text(v)) : std::string("..."));
      if (!callee.empty()) name = callee.substr(callee.rfind('.') + 1) + "(" + name + ")";
      sink_.Add(r.code, lex_.Line(T(k)), lex_.Column(T(k)), name, guarded, r.replacement);
      return;
    }
  }

  // Whether string token k is a parameter default of a function that compares the parameter with
  // "cuda" (`def bias_act(x, impl="cuda")` ... `if impl == "cuda" and x.device.type == "cuda"`): a
  // dispatch key, not a device placement. A parameter named for a device stays a device default.
  bool IsDispatchDefault(std::size_t k, std::size_t li, const LogicalLine& l) const {
    TokenText head = Head(l);
    if (head != "def" || k < l.begin + 2 || !IsOp(T(k - 1), "=") || !IsName(T(k - 2))) return false;
    TokenText param = lex_.Text(T(k - 2));
    std::string lower = Lower(param);
    if (Contains(lower, "device") || lower == "dev" || Contains(lower, "map_location"))
      return false;
    for (std::size_t j = li + 1; j < lex_.lines.size() && lex_.lines[j].indent > l.indent; ++j) {
      const auto& body = lex_.lines[j];
      for (std::size_t t = body.begin; t + 2 < body.end; ++t)
        if (IsName(T(t)) && lex_.Text(T(t)) == param &&
            (IsOp(T(t + 1), "==") || IsOp(T(t + 1), "!=")) && IsCudaDeviceString(T(t + 2)))
          return true;
    }
    return false;
  }

  // `SUPPORTED = ("cuda", "mps", "cpu")`: a list of device names that includes another backend is a
  // set of options, not a placement.
  bool InDeviceNameList(std::size_t k, const LogicalLine& l) const {
    std::size_t open = EnclosingOpen(k, l.begin);
    if (open == static_cast<std::size_t>(-1) || !InLiteralContainer(k, l)) return false;
    std::size_t close = Matching(open, l.end);
    for (std::size_t j = open + 1; j < close; ++j) {
      if (T(j).kind() != TokKind::kString || j == k) continue;
      std::string_view b = StringBody(lex_.Text(T(j)));
      if (b == "mps" || b == "cpu" || b == "xpu") return true;
    }
    return false;
  }

  // Whether string token k is an element of a `choices=[...]` list; sets `has_mps`.
  bool InChoices(std::size_t k, const LogicalLine& l, std::size_t& at, bool& has_mps) const {
    std::size_t open = EnclosingOpen(k, l.begin);
    if (open == static_cast<std::size_t>(-1) || open < l.begin + 2) return false;
    if (!IsOp(T(open - 1), "=") || !Is(T(open - 2), "choices")) return false;
    at = open - 2;
    has_mps = false;
    std::size_t close = Matching(open, l.end);
    for (std::size_t j = open + 1; j < close; ++j)
      if (T(j).kind() == TokKind::kString && StartsWith(StringBody(lex_.Text(T(j))), "mps"))
        has_mps = true;
    return true;
  }

  // "cuda" / "cuda:0" as a value: a placement (DT102), unless it is compared, prose, an option's
  // choices, a dispatch default or a list of device names; autocast's device type is DT115.
  void DeviceStringFinding(std::size_t k, const LogicalLine& l, int scope, bool guarded) {
    const Token& t = T(k);
    std::size_t li = static_cast<std::size_t>(&l - lex_.lines.data());
    if (InComparison(k, l.begin, l.end) || IsProse(k, l)) return;
    std::size_t at = 0;
    bool has_mps = false;
    if (InChoices(k, l, at, has_mps)) {
      if (!has_mps)
        sink_.Add("DT112", lex_.Line(T(at)), lex_.Column(T(at)), "the option's choices", guarded);
      return;
    }
    if (IsDispatchDefault(k, li, l) || InDeviceNameList(k, l)) return;
    // `torch.autocast("cuda")`, `torch.amp.GradScaler("cuda")`: a device type for mixed
    // precision, not a placement; without CUDA they warn and disable themselves (checked against
    // torch in tests/scan/test_registry_facts.py), so the code runs, in full precision.
    const std::string callee = Callee(EnclosingOpen(k, l.begin), l.begin, scope);
    if (StartsWith(callee, "torch.") &&
        (EndsWith(callee, ".autocast") || EndsWith(callee, ".GradScaler"))) {
      sink_.Add("DT115", lex_.Line(t), lex_.Column(t),
                callee + "(" + std::string(lex_.Text(t)) + ")", guarded,
                "torch.autocast(device_type=device.type) / torch.amp.GradScaler(device.type)");
      return;
    }
    sink_.Add("DT102", lex_.Line(t), lex_.Column(t), std::string(lex_.Text(t)), guarded);
  }

  void StringFinding(std::size_t k, const LogicalLine& l, int scope, bool guarded) {
    const Token& t = T(k);
    if (IsBytes(lex_.Text(t))) return;
    std::string_view body = StringBody(lex_.Text(t));
    if (IsCudaDeviceString(t)) {
      DeviceStringFinding(k, l, scope, guarded);
      return;
    }
    if (IsNccl(body)) {
      if (InComparison(k, l.begin, l.end) || IsProse(k, l)) return;
      sink_.Add("DT205", lex_.Line(t), lex_.Column(t), std::string(lex_.Text(t)), guarded);
      return;
    }
    // A command line the script launches: f"CUDA_VISIBLE_DEVICES={gpu} python train.py ...".
    if (body.find("CUDA_VISIBLE_DEVICES=") != std::string_view::npos && !IsProse(k, l)) {
      sink_.Add("DT406", lex_.Line(t), lex_.Column(t), "CUDA_VISIBLE_DEVICES in a command",
                guarded);
      return;
    }
    if (body.size() > 200) return;
    // IsProse walks back to the enclosing call: only for the strings that would be a finding, so
    // a line holding a table of thousands of strings stays linear.
    for (std::string_view key :
         {"TORCH_CUDA_ARCH_LIST", "-gencode", "arch=compute_", "arch=sm_", "CUDA_ARCHITECTURES"}) {
      if (body.find(key) != std::string_view::npos) {
        if (!IsProse(k, l)) sink_.Add("DT302", lex_.Line(t), lex_.Column(t), key, guarded);
        return;
      }
    }
    // The nvcc entry of extra_compile_args: {"nvcc": [...]} or args["nvcc"] = [...].
    if (body == "nvcc" && k + 1 < l.end &&
        (IsOp(T(k + 1), ":") || (k > l.begin && IsOp(T(k - 1), "[") && IsOp(T(k + 1), "]")))) {
      sink_.Add("DT302", lex_.Line(t), lex_.Column(t), "nvcc flags", guarded);
      return;
    }
    // A program the code runs: os.path.join(CUDA_HOME, "bin", "nvcc"), [cuda_dir + "/bin/nvcc",
    // "-V"].
    if (std::string_view tool = NvidiaTool(body); !tool.empty() && !IsProse(k, l)) {
      // shutil.which("nvidia-smi") looks for the tool: a test, not a run.
      const std::string callee = Callee(EnclosingOpen(k, l.begin), l.begin, scope);
      if (!EndsWith(callee, "which") && !EndsWith(callee, "find_executable"))
        sink_.Add("DT405", lex_.Line(t), lex_.Column(t), tool, guarded);
      return;
    }
    // os.environ["CUDA_VISIBLE_DEVICES"] = ..., os.environ.setdefault("CUDA_VISIBLE_DEVICES", ...).
    if (body == "CUDA_VISIBLE_DEVICES" && !InComparison(k, l.begin, l.end) && !IsProse(k, l)) {
      sink_.Add("DT406", lex_.Line(t), lex_.Column(t), "CUDA_VISIBLE_DEVICES", guarded);
      return;
    }
    if (const PythonKeyword* r = reg_.StringRule(body); r != nullptr && !IsProse(k, l)) {
      sink_.Add(r->code, lex_.Line(t), lex_.Column(t), std::string(lex_.Text(t)), guarded,
                r->replacement);
      return;
    }
    if (opt_.setup_py && !body.empty() && InLiteralContainer(k, l)) {
      CheckRequirement(body, sink_, lex_.Line(t), lex_.Column(t));
    } else if (IsDistributionName(body) && !IsProse(k, l)) {
      // check_requirements("onnxruntime-gpu"), pip install at run time: a package only a
      // distribution name can mean (no module of that name), so the string is a requirement.
      CheckRequirement(body, sink_, lex_.Line(t), lex_.Column(t), guarded);
    }
  }

  // The NVIDIA tool a string names, alone or as the last part of a path; empty when none.
  static std::string_view NvidiaTool(std::string_view body) {
    std::string_view base = body.substr(
        body.find_last_of('/') == std::string_view::npos ? 0 : body.find_last_of('/') + 1);
    for (std::string_view tool :
         {"nvcc", "nvidia-smi", "cuobjdump", "nvprof", "nsys", "ncu", "cuda-gdb", "nvdisasm"})
      if (base == tool) return tool;
    return {};
  }

  // "onnxruntime-gpu", "paddlepaddle-gpu>=2": the name (before any version) of a CUDA-only
  // package of the knowledge base that is not also an import name, where a plain word such as
  // "triton" could be anything else (a backend option, a find_spec() test).
  bool IsDistributionName(std::string_view body) const {
    std::size_t e = 0;
    while (e < body.size() && (std::isalnum(static_cast<unsigned char>(body[e])) ||
                               body[e] == '-' || body[e] == '_' || body[e] == '.'))
      ++e;
    if (e == 0 || e > 60 ||
        (e < body.size() && std::string_view("=<>!~").find(body[e]) == std::string_view::npos))
      return false;
    std::string name(body.substr(0, e));
    if (name.find('-') == std::string::npos) return false;
    const Library* lib = reg_.LibraryForPackage(name);
    if (lib == nullptr) return false;
    for (const auto& m : lib->modules)
      if (m == name) return false;
    return true;
  }

  // A string that is an element of a list, set, dict or tuple literal (a requirement list), not an
  // argument of a call (a message).
  bool InLiteralContainer(std::size_t k, const LogicalLine& l) const {
    std::size_t open = EnclosingOpen(k, l.begin);
    if (open == static_cast<std::size_t>(-1)) return false;
    if (IsOp(T(open), "[") || IsOp(T(open), "{")) return open == l.begin || !IsName(T(open - 1));
    // A tuple: an opening parenthesis not preceded by a callee.
    return open == l.begin || !(IsName(T(open - 1)) || IsClose(T(open - 1)));
  }

  // `device = "cuda"` in a function that then tests the same variable against
  // torch.cuda.is_available() and returns or reassigns when it fails (stable-baselines'
  // get_device): the CUDA default has a fallback, like `"cuda" if available else "cpu"`.
  void GuardDeviceFallbacks() {
    const auto& lines = lex_.lines;
    for (std::size_t li = 0; li < lines.size(); ++li) {
      const auto& l = lines[li];
      if (l.end - l.begin != 3 || !IsName(T(l.begin)) || !IsOp(T(l.begin + 1), "=") ||
          !IsCudaDeviceString(T(l.begin + 2)) || line_guarded_[li])
        continue;
      TokenText var = lex_.Text(T(l.begin));
      int scope = ScopeOf(li);
      if (scope <= 0) continue;
      const Scope& sc = scopes_[static_cast<std::size_t>(scope)];
      for (std::size_t j = li + 1; j <= sc.last_line && j < lines.size(); ++j) {
        const auto& c = lines[j];
        if (First(c) != "if" || ScopeOf(j) != scope) continue;
        std::size_t colon = FindColon(c);
        bool names_var = false, checks = false;
        for (std::size_t k = c.begin + 1; k < colon; ++k) {
          names_var |= IsName(T(k)) && lex_.Text(T(k)) == var;
          if (IsName(T(k)) && Is(T(k), "is_available")) checks = true;
        }
        if (!names_var || !checks) continue;
        // The first statement of the body: after the colon, or the next, deeper line.
        std::size_t body = colon + 1, body_end = c.end;
        if (body >= c.end) {
          if (j + 1 >= lines.size() || lines[j + 1].indent <= c.indent) continue;
          body = lines[j + 1].begin;
          body_end = lines[j + 1].end;
        }
        bool fallback = Is(T(body), "return") || (IsName(T(body)) && lex_.Text(T(body)) == var &&
                                                  body + 1 < body_end && IsOp(T(body + 1), "="));
        if (fallback) {
          sink_.GuardLines(lex_.Line(T(l.begin)), lex_.Line(T(l.end - 1)));
          break;
        }
      }
    }
  }

  // A private module-level function or class (`_FusedGELUFunction`) that this file only uses under
  // a CUDA check runs only with CUDA: its body is guarded, and it depends on nothing for the rest
  // of the project. Public names may be called unguarded from other modules, so they stay as they
  // are.
  void GuardPrivateDefinitions() {
    if (!track_refs_) return;  // Without it, lines that name the definition were not all read.
    for (std::size_t s = 1; s < scopes_.size(); ++s) {
      const Scope& sc = scopes_[s];
      if (sc.parent != 0 || sc.name.empty() || sc.name[0] != '_') continue;
      auto it = ref_guards_.find(sc.name);
      if (it == ref_guards_.end() || it->second != 1) continue;
      const auto [first, last] = ScopeLines(s);
      sink_.GuardLines(first, last);
      guarded_tops_.insert(s);
      cuda_tops_.erase(sc.name);
      local_refs_.erase(sc.name);
    }
  }

  // A branch that imports a CUDA-only library itself (`elif engine:  import tensorrt as trt`, `if
  // args.flash_attn: from flash_attn import ...`) is one backend among others, taken only when the
  // user picks it (a weights format, an option): the branch runs only where that CUDA path is
  // chosen, so its lines are guarded, as a device check's body is. Imports at the top of a function
  // or module, or under `if __name__ == "__main__":`, are not branches.
  void GuardLibraryBranches() {
    const auto& lines = lex_.lines;
    for (PyImport& imp : result_.imports) {
      const std::size_t li = imp.line_index;
      if (lines[li].indent == 0 || line_guarded_[li] || optional_line_[li]) continue;
      if (LibraryOf(Absolute(imp.level, imp.module)) == nullptr) continue;
      std::size_t h = li;
      while (h > 0 && lines[h].indent >= lines[li].indent) --h;
      if (lines[h].indent >= lines[li].indent) continue;
      const TokenText head = First(lines[h]);
      if (head != "if" && head != "elif" && head != "else") continue;
      bool main = false;
      for (auto k = lines[h].begin; k < lines[h].end; ++k) main |= Is(T(k), "__name__");
      if (main) continue;
      std::size_t last = h + 1;
      while (last + 1 < lines.size() && lines[last + 1].indent > lines[h].indent) ++last;
      for (std::size_t k = h + 1; k <= last; ++k) line_guarded_[k] = true;
      sink_.GuardLines(lex_.Line(T(lines[h + 1].begin)), lex_.Line(T(lines[last].end - 1)));
    }
  }

  // A module-level function whose every call in this file runs behind a CUDA check (directly, or
  // from another such function) runs only with CUDA on the paths this file drives: `dtw()` calls
  // `dtw_cuda()` under `if x.is_cuda:` with a fallback, so the kernel launch inside is guarded.
  // Unlike GuardPrivateDefinitions this covers public names too: another module may call one
  // unchecked (a test of the CUDA path), which this file cannot see; the finding then reads as
  // guarded there as well. A function this file never calls is left as it is.
  void GuardCalledOnlyUnderChecks() {
    // name -> scope, for the definitions with an unguarded finding or an import (of a module
    // that the import graph then reaches only behind the check).
    std::unordered_set<std::size_t> importing;
    for (const PyImport& imp : result_.imports) {
      const int top = TopOf(imp.line_index);
      if (top >= 0 && !line_guarded_[imp.line_index])
        importing.insert(static_cast<std::size_t>(top));
    }
    std::unordered_map<std::string_view, std::size_t> defs;
    for (std::size_t s = 1; s < scopes_.size(); ++s) {
      const Scope& sc = scopes_[s];
      if (sc.parent != 0 || !sc.is_def || sc.name.empty() || sc.kernel) continue;
      const auto [first, last] = ScopeLines(s);
      if (importing.count(s) || sink_.AnyUnguarded(first, last)) defs.emplace(sc.name, s);
    }
    if (defs.empty()) return;
    // Each definition's references: the line's guard, or the function the reference sits in.
    struct Ref {
      bool guarded;
      int in_top;  // Module-level definition holding the reference; -1 at module level.
    };
    std::unordered_map<std::size_t, std::vector<Ref>> refs;
    for (std::size_t li = 0; li < lex_.lines.size(); ++li) {
      const auto& l = lex_.lines[li];
      const TokenText head = First(l);
      if (head == "def" || head == "class" || head == "import" || head == "from") continue;
      for (auto k = l.begin; k < l.end; ++k) {
        if (!IsName(T(k)) || (k > l.begin && IsOp(T(k - 1), "."))) continue;
        auto it = defs.find(lex_.Text(T(k)));
        if (it == defs.end()) continue;
        const int top = TopOf(li);
        if (top == static_cast<int>(it->second)) continue;  // Recursion says nothing.
        refs[it->second].push_back(Ref{static_cast<bool>(line_guarded_[li]), top});
      }
    }
    std::unordered_set<std::size_t> guarded;
    for (bool grew = true; grew;) {
      grew = false;
      for (const auto& [s, calls] : refs) {  // A function never named here has no entry.
        if (guarded.count(s)) continue;
        const bool all = std::all_of(calls.begin(), calls.end(), [&](const Ref& r) {
          return r.guarded || (r.in_top >= 0 && guarded.count(static_cast<std::size_t>(r.in_top)));
        });
        if (all) {
          guarded.insert(s);
          grew = true;
        }
      }
    }
    for (std::size_t s : guarded) {
      guarded_tops_.insert(s);
      const auto [first, last] = ScopeLines(s);
      sink_.GuardLines(first, last);
    }
  }

  // --- Call paths (collect_calls) -------------------------------------------------------------

  // The module-level functions, and every mention of a name that may be one of the project's:
  // this file's own definitions, names imported from the project (`from utils import f`,
  // `utils.f`), and identifier-like strings. Scan() joins them across files (CallPaths).
  using ClassMethods = std::unordered_map<int, std::unordered_set<std::string_view>>;

  void CollectCalls() {
    const ClassMethods class_methods = CollectDefs();
    NoteFrameworkDevice();
    for (std::size_t s = 1; s < scopes_.size(); ++s) {
      const Scope& sc = scopes_[s];
      if (!sc.is_def || sc.name.empty()) continue;
      if (sc.parent == 0) {
        CollectDefaults(s, sc.name, false);
      } else if (sc.name == "__init__") {
        const Scope& cls = scopes_[static_cast<std::size_t>(sc.parent)];
        if (!cls.is_def && cls.parent == 0) CollectDefaults(s, cls.name, true);
      }
    }
    std::set<std::string_view> attrs;
    bool in_main = false;
    for (std::size_t li = 0; li < lex_.lines.size(); ++li) {
      const auto& l = lex_.lines[li];
      if (l.indent == 0) in_main = IsMainCheck(l);
      const TokenText head = First(l);
      if (head == "import" || head == "from") continue;
      const std::unordered_set<std::string_view>* methods = nullptr;  // Of the class holding li.
      const PyRef where = RefContext(li, in_main, class_methods, methods);
      // The name a def/class line defines is no mention; its defaults and bases are.
      const std::size_t defined = (head == "def" || head == "class" || Head(l) == "def")
                                      ? l.begin + (head == "async" ? 2 : 1)
                                      : l.end;
      for (auto k = l.begin; k < l.end; ++k) {
        const Token& t = T(k);
        if (t.kind() == TokKind::kString) {
          if (IsBytes(lex_.Text(t))) continue;
          const std::string_view body = StringBody(lex_.Text(t));
          result_.mentions_mps |= body == "mps" || StartsWith(body, "mps:");
          AddTextRef(body, where);
          continue;
        }
        if (!IsName(t) || k == defined) continue;
        result_.mentions_mps |= lex_.Text(t) == "mps";
        k = NameRefs(li, k, where, methods, attrs);
      }
    }
    result_.attrs.assign(attrs.begin(), attrs.end());
  }

  // The module-level functions and the methods of module-level classes, as definitions of the
  // call graph; returns each class's method names.
  ClassMethods CollectDefs() {
    ClassMethods class_methods;
    for (std::size_t s = 1; s < scopes_.size(); ++s) {
      const Scope& sc = scopes_[s];
      if (!sc.is_def || sc.name.empty()) continue;
      const Scope* cls = sc.parent > 0 ? &scopes_[static_cast<std::size_t>(sc.parent)] : nullptr;
      const bool method = cls != nullptr && !cls->is_def && cls->parent == 0;
      if (sc.parent != 0 && !method) continue;
      const auto [first, last] = ScopeLines(s);
      bool registered = false;
      for (std::size_t li = sc.first_line; li < sc.def_line; ++li)
        for (auto k = lex_.lines[li].begin; k < lex_.lines[li].end; ++k)
          if (IsName(T(k))) registered |= IsRegisteringWord(Lower(lex_.Text(T(k))));
      // Test functions are called by the test runner, by name.
      registered |= StartsWith(sc.name, "test");
      std::string name(sc.name);
      if (method) {
        name = std::string(cls->name) + "." + name;
        class_methods[sc.parent].insert(sc.name);
      }
      result_.defs.push_back(PyTopDef{std::move(name), first, last, registered, method});
    }
    return class_methods;
  }

  // Whether a framework places the model on its device (accelerate, Lightning, HF's Trainer).
  void NoteFrameworkDevice() {
    for (const PyImport& imp : result_.imports) {
      const std::string_view top = std::string_view(imp.module).substr(0, imp.module.find('.'));
      result_.framework_device |=
          top == "accelerate" || top == "lightning" || top == "pytorch_lightning";
      if (top == "transformers")
        for (const std::string& n : imp.names)
          result_.framework_device |= n.find("Trainer") != std::string::npos;
    }
  }

  // Where the references of line li sit: its guard, the definition (or method) holding it, and
  // (in `methods`) the method names of the class holding it.
  PyRef RefContext(std::size_t li, bool in_main, const ClassMethods& class_methods,
                   const std::unordered_set<std::string_view>*& methods) const {
    const int top = TopOf(li);
    PyRef where;
    where.guarded =
        line_guarded_[li] || (top >= 0 && guarded_tops_.count(static_cast<std::size_t>(top)));
    where.in_main = in_main;
    methods = nullptr;
    if (top < 0) return where;
    const Scope& sc = scopes_[static_cast<std::size_t>(top)];
    if (sc.is_def) {
      where.in_def = std::string(sc.name);
    } else {
      where.in_class = true;
      where.in_def = MethodOf(li, top);
      if (auto it = class_methods.find(top); it != class_methods.end()) methods = &it->second;
    }
    return where;
  }

  // The references a name token makes: an own method through self, an attribute, an import of
  // the project, torch's heavy layers, importlib, or a definition of this module. Returns the
  // last token it covered.
  std::size_t NameRefs(std::size_t li, std::size_t k, const PyRef& where,
                       const std::unordered_set<std::string_view>* methods,
                       std::set<std::string_view>& attrs) {
    const auto& l = lex_.lines[li];
    const Token& t = T(k);
    const int scope = ScopeOf(li);
    const int top = TopOf(li);
    if (k > l.begin && IsOp(T(k - 1), ".") && lex_.Text(t) == "backward" && k + 1 < l.end &&
        IsOp(T(k + 1), "(") && result_.backward_line == 0)
      result_.backward_line = lex_.Line(t);
    if (k > l.begin && IsOp(T(k - 1), ".")) {
      // `self.m()` of the class's own method, or an attribute that may name any method.
      const bool own = methods != nullptr && k >= l.begin + 2 && methods->count(lex_.Text(t)) &&
                       (Is(T(k - 2), "self") || Is(T(k - 2), "cls")) &&
                       !(k >= l.begin + 3 && IsOp(T(k - 3), "."));
      if (!own) {
        attrs.insert(lex_.Text(t));
        return k;
      }
      PyRef r = where;
      r.target = std::string(scopes_[static_cast<std::size_t>(top)].name) + "." +
                 std::string(lex_.Text(t));
      r.own = true;
      ReadCall(k + 1, l.end, r);
      if (r.in_def != r.target) result_.refs.push_back(std::move(r));  // Recursion says nothing.
      return k;
    }
    const TokenText name = lex_.Text(t);
    if (Shadowed(name, scope)) return k;
    if (const std::string* target = Lookup(name, scope))
      return ImportedRef(k, l, scope, *target, where);
    auto it = top_names_.find(name);
    if (it == top_names_.end() || it->second == top) return k;  // Recursion says nothing.
    PyRef r = where;
    r.target = std::string(name);
    r.own = true;
    ReadCall(k + 1, l.end, r);
    result_.refs.push_back(std::move(r));
    return k;
  }

  // A name bound by an import: importlib's dynamic imports, torch's heavy layers (where the
  // model starts) and calls into the project's own modules.
  std::size_t ImportedRef(std::size_t k, const LogicalLine& l, int scope, const std::string& target,
                          const PyRef& where) {
    const Token& t = T(k);
    if (StartsWith(target, "importlib")) {
      std::string resolved, head_name;
      const std::size_t e = Chain(k, l.end, scope, resolved, head_name);
      result_.dynamic_import |= resolved == "importlib.import_module" && e + 1 < l.end &&
                                IsOp(T(e), "(") && T(e + 1).kind() != TokKind::kString;
      return k;
    }
    if (StartsWith(target, "torch")) {
      if (result_.model_line == 0) {
        std::string resolved, head_name;
        Chain(k, l.end, scope, resolved, head_name);
        if (IsHeavyLayer(resolved)) {
          result_.model_line = lex_.Line(t);
          result_.model_api = resolved;
        }
      }
      return k;
    }
    if (!IsOwnTarget(target)) return k;
    PyRef r = where;
    std::string head_name;
    std::size_t e = Chain(k, l.end, scope, r.target, head_name);
    ReadCall(e, l.end, r);
    result_.refs.push_back(std::move(r));
    return e - 1;
  }

  // The arguments of the call that starts at `open` (when it is one): positional ones, keywords
  // and spreads, counted at the call's own depth.
  void ReadCall(std::size_t open, std::size_t e, PyRef& r) const {
    if (open >= e || !IsOp(T(open), "(")) return;
    r.call = true;
    const std::size_t close = Matching(open, e);
    bool fresh = true;  // At the start of an argument.
    int depth = 0;
    for (std::size_t k = open + 1; k < close; ++k) {
      const Token& t = T(k);
      if (depth == 0 && fresh) {
        fresh = false;
        if (IsOp(t, "*") || IsOp(t, "**"))
          r.spread = true;
        else if (IsName(t) && k + 1 < close && IsOp(T(k + 1), "="))
          r.keywords.emplace_back(lex_.Text(t));
        else
          ++r.positional;
      }
      if (IsOpen(t))
        ++depth;
      else if (IsClose(t))
        --depth;
      else if (depth == 0 && IsOp(t, ","))
        fresh = true;
    }
  }

  // Parameters of scope s whose default is a CUDA device string; `method` skips `self`.
  void CollectDefaults(std::size_t s, std::string_view owner, bool method) {
    const auto& l = lex_.lines[scopes_[s].def_line];
    std::size_t k = l.begin;
    while (k < l.end && !IsOp(T(k), "(")) ++k;
    if (k >= l.end) return;
    const std::size_t close = Matching(k, l.end);
    int index = method ? -1 : 0;  // Of the parameter being read.
    bool keyword_only = false;
    int depth = 0;
    bool fresh = true;
    for (++k; k < close; ++k) {
      const Token& t = T(k);
      if (depth == 0 && fresh) {
        fresh = false;
        if (IsOp(t, "*") || IsOp(t, "**"))
          keyword_only = true;
        else if (IsName(t)) {
          const TokenText param = lex_.Text(t);
          std::size_t v = k + 1;
          if (v < close && IsOp(T(v), ":")) {  // Past the annotation, to its default.
            int d = 0;
            for (++v; v < close; ++v) {
              if (IsOpen(T(v)))
                ++d;
              else if (IsClose(T(v)))
                --d;
              else if (d == 0 && (IsOp(T(v), "=") || IsOp(T(v), ",")))
                break;
            }
          }
          if (v + 1 < close && IsOp(T(v), "=") && IsCudaDeviceString(T(v + 1)))
            result_.defaults.push_back(PyDefault{std::string(owner), std::string(param),
                                                 keyword_only ? -1 : index, lex_.Line(T(v + 1))});
          ++index;
        }
      }
      if (IsOpen(t))
        ++depth;
      else if (IsClose(t))
        --depth;
      else if (depth == 0 && IsOp(t, ","))
        fresh = true;
    }
  }

  // "Class.method" for a line inside a method (or a function nested in one) of the module-level
  // class `top`; empty in the class body itself.
  std::string MethodOf(std::size_t li, int top) const {
    for (int s = ScopeOf(li); s > 0; s = scopes_[static_cast<std::size_t>(s)].parent) {
      const Scope& sc = scopes_[static_cast<std::size_t>(s)];
      if (sc.parent == top)
        return sc.is_def ? std::string(scopes_[static_cast<std::size_t>(top)].name) + "." +
                               std::string(sc.name)
                         : std::string();
    }
    return {};
  }

  // Layers whose training wants an accelerator: convolutions and attention (an MLP or a graph
  // convolution over a sparse matrix trains on a CPU).
  static bool IsHeavyLayer(std::string_view api) {
    if (!StartsWith(api, "torch.nn.")) return false;
    const std::string_view rest = api.substr(9);
    return StartsWith(rest, "Conv") || StartsWith(rest, "functional.conv") ||
           rest == "MultiheadAttention" || StartsWith(rest, "Transformer") ||
           rest == "functional.scaled_dot_product_attention";
  }

  // A statement of string literals alone: a docstring, prose.
  bool StringsOnly(const LogicalLine& l) const {
    for (auto k = l.begin; k < l.end; ++k)
      if (T(k).kind() != TokKind::kString) return false;
    return true;
  }

  // `if __name__ == "__main__":`.
  bool IsMainCheck(const LogicalLine& l) const {
    if (First(l) != "if" || l.end - l.begin < 2 || !Is(T(l.begin + 1), "__name__")) return false;
    for (auto k = l.begin; k < l.end; ++k)
      if (T(k).kind() == TokKind::kString && StringBody(lex_.Text(T(k))) == "__main__") return true;
    return false;
  }

  // Decorator words that register a function to be called by name from elsewhere (a registry, a
  // command-line or web framework, a hook, a test fixture).
  // A wrapper (`@try_export`, `@torch.jit.script`) is none: the function is still called by name.
  static bool IsRegisteringWord(std::string_view lower) {
    for (std::string_view w : {"regist", "hook", "command", "route", "fixture", "callback",
                               "handler", "entrypoint", "custom_op"})
      if (lower.find(w) != std::string_view::npos) return true;
    return lower == "main" || lower == "task" ||
           lower == "impl";  // hydra.main, app.task, library.impl
  }

  // A parameter of an enclosing function hides a module-level name of the same spelling.
  bool Shadowed(std::string_view name, int s) const {
    for (; s > 0; s = scopes_[static_cast<std::size_t>(s)].parent)
      if (scopes_[static_cast<std::size_t>(s)].params.count(name)) return true;
    return false;
  }

  // An import target inside the project (relative imports resolve into it; a top-level name the
  // project owns); without the project's names every target may be.
  bool IsOwnTarget(std::string_view target) const {
    if (opt_.own_tops == nullptr) return true;
    const std::string top(target.substr(0, target.find('.')));
    return opt_.own_tops->count(top) > 0 ||
           (!opt_.package.empty() && StartsWith(target, opt_.package));
  }

  // `getattr(module, "build_model")`, a config's `"models.yolo.Model"`: an identifier-like string
  // may name a function, which is then called from where no reference shows.
  void AddTextRef(std::string_view body, const PyRef& where) {
    if (body.empty() || body.size() > 128) return;
    for (char c : body)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return;
    const auto dot = body.rfind('.');
    const std::string_view last = dot == std::string_view::npos ? body : body.substr(dot + 1);
    if (last.empty() || std::isdigit(static_cast<unsigned char>(last.front()))) return;
    PyRef r = where;
    r.target = std::string(last);
    r.text = true;
    result_.refs.push_back(std::move(r));
  }

  // Module-level names reaching CUDA-only code through other module-level names of this file.
  void PropagateLocal() {
    // Extension builds (load / CUDAExtension) are found per call.
    bool changed = true;
    while (changed) {
      changed = false;
      for (const auto& [from, refs] : local_refs_) {
        for (auto ref : refs) {
          auto it = cuda_tops_.find(ref);
          if (it == cuda_tops_.end()) continue;
          auto [f, fresh] = cuda_tops_.emplace(from, it->second);
          if (fresh || (it->second && !f->second)) {
            f->second = f->second || it->second;
            changed = true;
          }
        }
      }
    }
    for (auto [name, ext] : cuda_tops_) result_.cuda_symbols.emplace_back(name, ext);
    std::sort(result_.cuda_symbols.begin(), result_.cuda_symbols.end());
  }

  FindingSink& sink_;
  const Registry& reg_;
  const PyScanOptions& opt_;
  bool always_;  // setup.py strings and user rules bypass the cheap line test.
  std::string_view source_;
  const Lexed& lex_;
  std::vector<Prefilter::Match> triggers_;  // Where the trigger words occur in the source.
  bool bind_ = true;  // Whether imports bind names (ImportsAndMain needs only the imports).
  PyScanResult result_;
  std::vector<bool> optional_line_;
  // Names bound to an extension class (`extension = CppExtension`, then `= CUDAExtension` where
  // CUDA is found): which classes each was given.
  struct ExtensionVar {
    bool cuda = false;
    bool cpp = false;
  };
  std::unordered_map<std::string_view, ExtensionVar> extension_vars_;
  std::vector<bool> line_guarded_;  // The statement runs only behind a CUDA check (Findings()).
  std::unordered_set<std::size_t> guarded_tops_;  // Definitions called only behind such checks.
  std::vector<bool> required_line_;  // In a `try:` whose ImportError handler only raises.
  bool required_import_ = false;     // The import being read is such a line.
  std::vector<int> line_scope_;
  std::unordered_set<int> launch_scopes_;  // Functions that launch a kernel of this file.
  std::vector<Scope> scopes_;
  // Keys are views into the source, which outlives the scanner.
  std::unordered_map<std::string_view, int> top_names_;  // Module-level def/class names.
  NameSet top_filter_;                                   // The same names, for Maybe().
  std::unordered_set<std::string_view> optional_names_;
  std::unordered_set<std::string_view> fallback_names_;  // Rebound in an ImportError handler.
  std::unordered_set<std::string_view> guard_names_;
  mutable std::unordered_set<std::string> minus_one_ranks_;  // See MinusOneRanks().
  mutable bool minus_one_read_ = false;
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
  // Whether this file reaches CUDA-only code (an extension, a kernel, a CUDA symbol): then lines
  // that name its own module-level definitions are analysed too, to follow the dependency inside
  // it.
  bool track_refs_ = false;  // Every name bound to an extension value.
  // Module-level names that reach CUDA-only code: true for a compiled extension, false for kernels.
  std::unordered_map<std::string_view, bool> cuda_tops_;
  std::unordered_map<std::string_view, std::unordered_set<std::string_view>> local_refs_;
  std::unordered_map<std::size_t, std::vector<std::string_view>> module_refs_;
  // Per module-level name: 1 when referenced under a guard, 2 when unguarded (bits or-ed).
  std::unordered_map<std::string_view, int> ref_guards_;
  // Names whose mention can make a line interesting (library, extension, optional and guard
  // names); lines with none of them and none of the trigger words are skipped without analysis.
  NameSet hot_names_;
  std::vector<std::pair<std::size_t, std::size_t>> branches_;  // Guarded token ranges of the line.
};

}  // namespace

PyScanResult ScanPython(std::string_view source, FindingSink& sink, const PyScanOptions& options) {
  return PythonScanner(source, sink, options).Run();
}

PyScanResult ScanPython(std::string_view source, FindingSink& sink, bool is_setup_py) {
  PyScanOptions opt;
  opt.setup_py = is_setup_py;
  return ScanPython(source, sink, opt);
}

}  // namespace dt::scan
