// Builds the semantic model's facts that need no guard: scopes with their parameters, the imports
// with the names they bind (and whether they are optional or required), extension handles and
// kernels. The guards come after (python_guards.cc).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "scan/python_model.h"

namespace dt::scan {

class PyModelBuilder {
 public:
  explicit PyModelBuilder(PyModel& model) : m_(model), lex_(model.lex_) {}

  // The per-line tables and the module scope.
  void Start() {
    const auto n = lex_.lines.size();
    m_.optional_line_.assign(n, false);
    m_.required_line_.assign(n, false);
    m_.line_guarded_.assign(n, false);
    m_.line_scope_.assign(n, 0);
    m_.scopes_.push_back(PyScope{});
  }

  void Build() {
    BuildScopes();
    if (m_.opt_.cuda != nullptr)
      for (const std::string& mod : m_.opt_.cuda->modules)
        if (StartsWith(mod, "torch.ops.")) {
          // torch.ops.<ns>.<op>(...) of an op library the project's extension registers.
          m_.hot_names_.insert(std::string_view(mod).substr(10));
          m_.track_refs_ = true;
        }
    MarkOptionalImports();
    for (std::size_t i = 0; i < lex_.lines.size(); ++i) CollectImports(i);
    // A kernel library's compiled module names no trigger word: the names its import binds are
    // hot, so that the lines using them are read.
    for (const PyImport& imp : m_.imports_)
      if (imp.level == 0 && m_.reg_.IsCompiledModule(imp.module)) {
        const LogicalLine& l = lex_.lines[imp.line_index];
        for (std::size_t k = l.begin + 1; k < l.end; ++k)
          if (m_.IsName(T(k))) m_.AddHotName(m_.Text(T(k)));
      }
    MarkKernels();
  }

  void BuildImports() {
    m_.bind_ = false;  // No name of this file is looked up.
    // A helper that puts its parameter on sys.path is read with its scope (SysPathDirs).
    if (m_.source().find("sys.path") != std::string_view::npos) BuildScopes();
    MarkOptionalImports();
    for (std::size_t i = 0; i < lex_.lines.size(); ++i) {
      const LogicalLine& l = lex_.lines[i];
      TokenText f = m_.First(l);
      if (f == "import" || f == "from")
        CollectImports(i);
      else
        m_.has_main_ |= m_.IsMainCheck(l);
    }
    for (PyImport& imp : m_.imports_) imp.guarded = m_.optional_line_[imp.line_index];
  }

 private:
  const Token& T(std::size_t k) const { return lex_.tokens[k]; }

  // --- Scopes ------------------------------------------------------------------------------------

  void BuildScopes() {
    auto& scopes = m_.scopes_;
    std::vector<int> stack = {0};
    for (std::size_t li = 0; li < lex_.lines.size(); ++li) {
      const auto& l = lex_.lines[li];
      while (stack.size() > 1 && scopes[static_cast<std::size_t>(stack.back())].indent >= l.indent)
        stack.pop_back();
      m_.line_scope_[li] = stack.back();
      for (int id : stack) scopes[static_cast<std::size_t>(id)].last_line = li;
      TokenText head = m_.Head(l);
      if (head != "def" && head != "class") continue;
      std::size_t name_tok = l.begin + (m_.First(l) == "async" ? 2 : 1);
      if (name_tok >= l.end || !m_.IsName(T(name_tok))) continue;
      PyScope s;
      s.parent = stack.back();
      s.is_def = head == "def";
      s.indent = l.indent;
      s.name = lex_.Text(T(name_tok));
      s.def_line = li;
      s.first_line = li;
      while (s.first_line > 0 && m_.First(lex_.lines[s.first_line - 1]) == "@" &&
             lex_.lines[s.first_line - 1].indent == l.indent)
        --s.first_line;
      int id = static_cast<int>(scopes.size());
      s.top = s.parent == 0 ? id : scopes[static_cast<std::size_t>(s.parent)].top;
      if (s.is_def) CollectParams(l, name_tok + 1, s);
      scopes.push_back(std::move(s));
      stack.push_back(id);
      if (scopes[static_cast<std::size_t>(id)].parent == 0) {
        m_.top_names_.emplace(lex_.Text(T(name_tok)), id);
        m_.top_filter_.insert(lex_.Text(T(name_tok)));
      }
    }
    SettleOffParams(scopes);
  }

  void CollectParams(const LogicalLine& l, std::size_t k, PyScope& s) const {
    if (k >= l.end || !m_.IsOp(T(k), "(")) return;
    int depth = 0;
    for (; k < l.end; ++k) {
      const Token& t = T(k);
      if (m_.IsOpen(t)) ++depth;
      if (m_.IsClose(t) && --depth == 0) return;
      if (depth != 1 || !m_.IsName(t)) continue;
      const Token& prev = T(k - 1);
      if (!(m_.IsOp(prev, "(") || m_.IsOp(prev, ",") || m_.IsOp(prev, "*") || m_.IsOp(prev, "**")))
        continue;
      s.params.insert(lex_.Text(t));
      // `name=False` or `name: bool = False`, the default ending the parameter.
      std::size_t d = k + 1;
      if (d + 2 < l.end && m_.IsOp(T(d), ":") && m_.IsName(T(d + 1))) d += 2;
      if (d + 2 < l.end && m_.IsOp(T(d), "=") && m_.Is(T(d + 1), "False") &&
          (m_.IsOp(T(d + 2), ",") || m_.IsOp(T(d + 2), ")")))
        s.off_params.insert(lex_.Text(t));
    }
  }

  // Switches a caller of the file turns on (`f(x, sparse=True)`, `sparse=flag`) are not off;
  // a class's __init__ that copies an off switch into `self.NAME` makes NAME off in the class.
  void SettleOffParams(std::vector<PyScope>& scopes) const {
    bool any = false;
    for (const PyScope& s : scopes) any |= !s.off_params.empty();
    if (!any) return;
    std::unordered_set<std::string_view> set_on;
    for (std::size_t li = 0; li < lex_.lines.size(); ++li) {
      const LogicalLine& l = lex_.lines[li];
      if (m_.Head(l) == "def") continue;
      const int sc = m_.line_scope_[li];
      for (std::size_t k = l.begin + 1; k + 2 < l.end; ++k) {
        if (!m_.IsName(T(k)) || !m_.IsOp(T(k + 1), "=") ||
            !(m_.IsOp(T(k - 1), "(") || m_.IsOp(T(k - 1), ",")) || m_.Is(T(k + 2), "False"))
          continue;
        // `Block(..., fused=fused)` in a layer's __init__ whose own `fused` is off: it hands
        // down its switch, off as it is.
        if (k + 3 < l.end && sc > 0 && lex_.Text(T(k + 2)) == lex_.Text(T(k)) &&
            (m_.IsOp(T(k + 3), ",") || m_.IsOp(T(k + 3), ")")) &&
            scopes[static_cast<std::size_t>(sc)].off_params.count(lex_.Text(T(k))))
          continue;
        set_on.insert(lex_.Text(T(k)));
      }
    }
    for (PyScope& s : scopes)
      for (auto it = s.off_params.begin(); it != s.off_params.end();)
        it = set_on.count(*it) ? s.off_params.erase(it) : std::next(it);
    for (std::size_t li = 0; li < lex_.lines.size(); ++li) {
      const LogicalLine& l = lex_.lines[li];
      const int sc = m_.line_scope_[li];
      if (sc <= 0 || l.end - l.begin != 5) continue;
      const PyScope& def = scopes[static_cast<std::size_t>(sc)];
      if (def.name != "__init__" || def.parent <= 0 || def.off_params.empty()) continue;
      if (m_.Is(T(l.begin), "self") && m_.IsOp(T(l.begin + 1), ".") &&
          m_.IsOp(T(l.begin + 3), "=") && def.off_params.count(lex_.Text(T(l.begin + 4))))
        scopes[static_cast<std::size_t>(def.parent)].off_attrs.insert(lex_.Text(T(l.begin + 2)));
    }
  }

  // --- Imports -----------------------------------------------------------------------------------

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
    // Its other path is CUDA as well: it imports a module or a name that exists only where a CUDA
    // extension was built, or JIT-builds CUDA sources (`load(..., sources=['k.cu'])`). A
    // `try/except ImportError` whose fallback is the same kernels is no guard.
    bool cuda_fallback = false;
  };

  // Whether a handler's statement (logical line b) reaches CUDA-only code.
  bool CudaStatement(std::size_t b) const {
    const TokenText head = m_.First(lex_.lines[b]);
    const auto& l = lex_.lines[b];
    if (head == "from" || head == "import") {
      // `from .backend import _backend`, `from pkg import _C`, `import fused_cuda as k`.
      std::size_t t = l.begin + 1;
      int level = 0;
      while (t < l.end && (m_.IsOp(T(t), ".") || m_.IsOp(T(t), "..."))) {
        level += m_.IsOp(T(t), "...") ? 3 : 1;
        ++t;
      }
      std::string mod;
      for (; t < l.end && !m_.Is(T(t), "import") && !m_.Is(T(t), "as") && !m_.IsOp(T(t), ","); ++t)
        mod += lex_.Text(T(t));
      const std::string base = m_.Absolute(level, mod);
      if (head == "import") return !base.empty() && m_.IsExtensionModule(base);
      if (!base.empty() && m_.IsExtensionModule(base)) return true;
      for (++t; t < l.end; ++t) {
        if (!m_.IsName(T(t)) || m_.Is(T(t - 1), "as")) continue;
        const std::string name =
            base.empty() ? std::string(lex_.Text(T(t))) : base + "." + std::string(lex_.Text(T(t)));
        if (m_.IsExtensionModule(name) || m_.IsCudaSymbol(name)) return true;
      }
      return false;
    }
    // A JIT build of CUDA code: a `.cu` source, CUDA flags, or `with_cuda=True`.
    bool build = false, cuda = false;
    for (auto t = l.begin; t < l.end; ++t) {
      const TokenText text = lex_.Text(T(t));
      build |= text == "load" || text == "load_inline" || text == "CUDAExtension";
      cuda |= text == "extra_cuda_cflags" || text == "cuda_sources" ||
              (text == "with_cuda" && t + 2 < l.end && m_.Is(T(t + 2), "True")) ||
              ((text.ends_with(".cu'") || text.ends_with(".cu\"")) && text.size() > 4);
    }
    return build && cuda;
  }

  Handler ReadHandler(std::size_t k) const {
    const auto& lines = lex_.lines;
    const std::uint32_t indent = lines[k].indent;
    bool reports_or_pass = true, reports_or_continue = true, reported = false;
    bool cuda_fallback = false;
    std::string_view last;
    for (std::size_t b = k + 1; b < lines.size() && lines[b].indent > indent; ++b) {
      last = m_.First(lines[b]);
      const bool report = IsReportHead(last);
      reported |= report;
      // `if not getattr(builtins, "__SETUP__", False): raise ImportError(...)`: a condition on
      // the raise binds nothing either.
      reports_or_pass &= report || last == "raise" || last == "pass" || last == "if";
      reports_or_continue &= report || last == "continue";
      cuda_fallback |= CudaStatement(b);
    }
    Handler h;
    h.cuda_fallback = cuda_fallback;
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
    if (l.end - l.begin < 3 || !m_.IsName(T(l.begin)) || !m_.IsOp(T(l.begin + 1), "="))
      return false;
    TokenText name = lex_.Text(T(l.begin));
    for (std::size_t j = li; j-- > 0 && lines[j].indent > 0;) {
      if (m_.First(lines[j]) == "def") return false;
      if (m_.First(lines[j]) != "global") continue;
      for (auto t = lines[j].begin + 1; t < lines[j].end; ++t)
        if (lex_.Text(T(t)) == name) return true;
    }
    return false;
  }

  static bool IsReportHead(std::string_view f) {
    return f == "print" || f == "warnings" || f == "logger" || f == "logging" || f == "log" ||
           f == "LOGGER" || f == "traceback";
  }

  // `except ImportError: fused_relu = torch.relu`: the name has a fallback, so its uses run
  // anywhere. (`= None` is no fallback: uses need a check.)
  void NoteFallbackNames(std::size_t k, std::uint32_t indent) {
    const auto& lines = lex_.lines;
    for (std::size_t b = k + 1; b < lines.size() && lines[b].indent > indent; ++b) {
      const auto& bl = lines[b];
      if (bl.end - bl.begin >= 3 && m_.IsName(T(bl.begin)) && m_.IsOp(T(bl.begin + 1), "=") &&
          !(bl.end - bl.begin == 3 && m_.Is(T(bl.begin + 2), "None")) &&
          !m_.Is(T(bl.begin + 2), "False"))
        m_.fallback_names_.insert(lex_.Text(T(bl.begin)));
      if (m_.First(bl) == "from" || m_.First(bl) == "import")
        for (auto t = bl.begin; t < bl.end; ++t)
          if (m_.IsName(T(t)) && t > bl.begin &&
              (m_.IsOp(T(t - 1), ",") || m_.Is(T(t - 1), "import") || m_.Is(T(t - 1), "as")))
            m_.fallback_names_.insert(lex_.Text(T(t)));
    }
  }

  // Lines inside a `try:` whose handler catches ImportError (or everything) are optional imports.
  void MarkOptionalImports() {
    const auto& lines = lex_.lines;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (m_.First(lines[i]) != "try") continue;
      std::uint32_t indent = lines[i].indent;
      std::size_t j = i + 1;
      while (j < lines.size() && lines[j].indent > indent) ++j;
      bool optional = false;
      bool required = false;  // An ImportError handler that only raises: no other path.
      bool fallback = false;  // A handler that does something else than raise or report.
      for (std::size_t k = j; k < lines.size() && lines[k].indent == indent; ++k) {
        TokenText f = m_.First(lines[k]);
        if (f != "except") break;
        bool bare = lines[k].end - lines[k].begin <= 2;
        const Handler handler = ReadHandler(k);
        // Names a CUDA fallback binds are CUDA whichever branch bound them.
        if (!handler.cuda_fallback) NoteFallbackNames(k, indent);
        bool catches = bare;
        for (auto t = lines[k].begin; t < lines[k].end; ++t)
          if (m_.Is(T(t), "ImportError") || m_.Is(T(t), "ModuleNotFoundError") ||
              m_.Is(T(t), "Exception") || m_.Is(T(t), "OSError") || m_.Is(T(t), "RuntimeError"))
            catches = true;
        // `except ImportError: raise AssertionError("xFormers is required")` catches the failure
        // only to say the library is required: the import is not optional.
        if (catches && (handler.only_raises || handler.cuda_fallback))
          required = true;
        else
          optional |= catches;
        fallback |= catches && !handler.ends_in_raise && !handler.only_reports;
        while (k + 1 < lines.size() && lines[k + 1].indent > indent) ++k;
      }
      if (required && !optional) {
        for (std::size_t k = i + 1; k < j; ++k) m_.required_line_[k] = true;
      }
      if (optional) MarkOptionalBody(i + 1, j, fallback);
    }
  }

  // The body [b, e) of a `try:` with an ImportError handler.
  void MarkOptionalBody(std::size_t b, std::size_t e, bool fallback) {
    for (std::size_t k = b; k < e; ++k) {
      // A handler that only re-raises or reports leaves the body's work undone on a Mac: the
      // body is no guard. Its imports stay optional (the module loads without them).
      TokenText head = m_.First(lex_.lines[k]);
      if (fallback || head == "import" || head == "from" || AcquiresGlobal(k))
        m_.optional_line_[k] = true;
      // `HAS_XFORMERS = True` after the import: a flag that says the library loaded.
      const auto& l = lex_.lines[k];
      if (l.end - l.begin == 3 && m_.IsName(T(l.begin)) && m_.IsOp(T(l.begin + 1), "=") &&
          m_.Is(T(l.begin + 2), "True")) {
        m_.guard_names_.insert(lex_.Text(T(l.begin)));
        m_.hot_names_.insert(lex_.Text(T(l.begin)));
      }
    }
  }

  void CollectImports(std::size_t li) {
    const auto& l = lex_.lines[li];
    TokenText f = m_.First(l);
    if (f == "global") {
      for (std::size_t k = l.begin + 1; k < l.end; ++k)
        if (m_.IsName(T(k))) m_.globals_.insert(lex_.Text(T(k)));
      return;
    }
    if (f == "import")
      CollectImport(li);
    else if (f == "from")
      CollectFromImport(li);
  }

  // `import a.b, c as d`.
  void CollectImport(std::size_t li) {
    const auto& l = lex_.lines[li];
    const bool optional = m_.optional_line_[li];
    const int scope = m_.ScopeOf(li);
    std::size_t k = l.begin + 1;
    while (k < l.end) {
      std::string mod;
      std::size_t first_tok = k;
      k = m_.Dotted(k, l.end, mod);
      if (mod.empty()) break;
      m_.imports_.push_back(PyImport{mod, 0, {}, false, li});
      TokenText local = lex_.Text(T(first_tok));
      std::string target(local);
      if (k + 1 < l.end && m_.Is(T(k), "as") && m_.IsName(T(k + 1))) {
        local = lex_.Text(T(k + 1));
        target = mod;
        k += 2;
      }
      Bind(scope, local, target, optional, mod);
      if (k < l.end && m_.IsOp(T(k), ","))
        ++k;
      else
        break;
    }
  }

  // `from ..a.b import c as d, e`.
  void CollectFromImport(std::size_t li) {
    const auto& l = lex_.lines[li];
    const bool optional = m_.optional_line_[li];
    const int scope = m_.ScopeOf(li);
    std::size_t k = l.begin + 1;
    int level = 0;
    while (k < l.end && T(k).kind() == TokKind::kOp && (m_.Is(T(k), ".") || m_.Is(T(k), "..."))) {
      level += static_cast<int>(lex_.Text(T(k)).size());
      ++k;
    }
    std::string mod;
    // `from . import _C`: no module name (the keyword is a name token, not part of one).
    if (k < l.end && !m_.Is(T(k), "import")) k = m_.Dotted(k, l.end, mod);
    if (k >= l.end || !m_.Is(T(k), "import")) return;
    ++k;
    PyImport imp{mod, level, {}, false, li};
    std::string abs = m_.Absolute(level, mod);
    for (; k < l.end; ++k) {
      if (!m_.IsName(T(k))) continue;
      std::string name(lex_.Text(T(k)));
      TokenText local = lex_.Text(T(k));
      if (k + 2 < l.end && m_.Is(T(k + 1), "as") && m_.IsName(T(k + 2))) {
        local = lex_.Text(T(k + 2));
        k += 2;
      }
      imp.names.push_back(name);
      if (level == 0 || !abs.empty())
        Bind(scope, local, abs.empty() ? name : abs + "." + name, optional, abs);
    }
    m_.imports_.push_back(std::move(imp));
  }

  void Bind(int scope, std::string_view local, const std::string& target, bool optional,
            const std::string& module) {
    if (!m_.bind_) return;
    m_.scopes_[static_cast<std::size_t>(scope)].alias[local] = target;
    m_.alias_filter_.insert(local);
    if (optional) m_.optional_names_.insert(local);
    const bool extension = m_.IsExtensionModule(target);
    const bool symbol = m_.IsCudaSymbol(target);
    if (extension) m_.BindHandle(scope, local);
    if (optional || extension || symbol || m_.HoldsCudaSymbols(target) ||
        py::Contains(target, "cud") || py::Contains(target, "CUD") ||
        (module != target && m_.IsExtensionModule(module)) || m_.LibraryOf(target) != nullptr ||
        m_.reg_.MatchApi(target) != nullptr || StartsWith(target, "torch.utils.cpp_extension"))
      m_.hot_names_.insert(local);
    if (extension || symbol) m_.track_refs_ = true;
  }

  // --- Kernels -----------------------------------------------------------------------------------

  // Functions decorated by a kernel decorator of the knowledge base (`@triton.jit`).
  void MarkKernels() {
    for (std::size_t s = 1; s < m_.scopes_.size(); ++s) {
      PyScope& sc = m_.scopes_[s];
      for (std::size_t li = sc.first_line; li < sc.def_line; ++li) {
        const auto& l = lex_.lines[li];
        if (l.end - l.begin < 2) continue;
        std::string resolved, head;
        m_.Chain(l.begin + 1, l.end, m_.ScopeOf(li), resolved, head);
        if (const Library* lib = m_.reg_.KernelDecorator(resolved)) {
          // Anchored where a reader says the kernel is defined: the library's first listed
          // decorator (`@triton.jit`), even under `@triton.autotune(...)` configs, which only
          // tune it (the field corpus labels every such kernel at `@triton.jit`).
          if (!sc.kernel || resolved == lib->kernel_decorators.front()) sc.kernel_line = li;
          sc.kernel = true;
          m_.kernel_lib_ = lib;
          m_.track_refs_ = true;
          if (sc.parent == 0) m_.kernel_names_.insert(sc.name);
          m_.hot_names_.insert(sc.name);
        }
      }
      if (sc.kernel)
        for (std::size_t li = sc.first_line; li <= sc.def_line; ++li)
          m_.decorator_kernel_[li] = static_cast<int>(s);
    }
    // The host wrappers: functions that launch a kernel of this file (`_fwd_kernel[grid](...)`).
    // The launch is their finding; the library's helpers around it (`triton.cdiv` for the grid,
    // `tl.float16` for a dtype) are part of the same launch.
    if (m_.kernel_names_.empty()) return;
    for (std::size_t li = 0; li < lex_.lines.size(); ++li)
      if (m_.ScopeOf(li) > 0 && m_.InLaunch(li)) m_.launch_scopes_.insert(m_.ScopeOf(li));
  }

  PyModel& m_;
  const Lexed& lex_;
};

void PyModel::BuildImports() {
  PyModelBuilder builder(*this);
  builder.Start();
  builder.BuildImports();
}

void PyModel::Build() {
  PyModelBuilder builder(*this);
  builder.Start();
  builder.Build();
  settings_.Collect(*this);
  BuildGuards();
  GuardValuesReadOnlyBehindChecks();
}

}  // namespace dt::scan
