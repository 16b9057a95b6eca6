// Call paths (collect_calls): the module-level functions, and every mention of a name that may be
// one of the project's: this file's own definitions, names imported from the project
// (`from utils import f`, `utils.f`), and identifier-like strings. Scan() joins them across files
// (CallPaths). Also what the file says about where and what it trains.
#include <cctype>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "scan/python_rules.h"

namespace dt::scan {

namespace {

// Layers whose training wants an accelerator: convolutions and attention (an MLP or a graph
// convolution over a sparse matrix trains on a CPU).
bool IsHeavyLayer(std::string_view api) {
  if (!StartsWith(api, "torch.nn.")) return false;
  const std::string_view rest = api.substr(9);
  return StartsWith(rest, "Conv") || StartsWith(rest, "functional.conv") ||
         rest == "MultiheadAttention" || StartsWith(rest, "Transformer") ||
         rest == "functional.scaled_dot_product_attention";
}

// Decorator words that register a function to be called by name from elsewhere (a registry, a
// command-line or web framework, a hook, a test fixture).
// A wrapper (`@try_export`, `@torch.jit.script`) is none: the function is still called by name.
bool IsRegisteringWord(std::string_view lower) {
  for (std::string_view w : {"regist", "hook", "command", "route", "fixture", "callback", "handler",
                             "entrypoint", "custom_op"})
    if (lower.find(w) != std::string_view::npos) return true;
  return lower == "main" || lower == "task" ||
         lower == "impl";  // hydra.main, app.task, library.impl
}

class CallCollector {
 public:
  CallCollector(const PyModel& model, const PyScanOptions& opt, PyScanResult& result)
      : m_(model), opt_(opt), result_(result) {}

  void Run() {
    const ClassMethods class_methods = CollectDefs();
    NoteFrameworkDevice();
    for (std::size_t s = 1; s < m_.scopes().size(); ++s) {
      const PyScope& sc = m_.scopes()[s];
      if (!sc.is_def || sc.name.empty()) continue;
      if (sc.parent == 0) {
        CollectDefaults(s, sc.name, false);
      } else if (sc.name == "__init__") {
        const PyScope& cls = m_.scope(sc.parent);
        if (!cls.is_def && cls.parent == 0) CollectDefaults(s, cls.name, true);
      }
    }
    std::set<std::string_view> attrs;
    bool in_main = false;
    for (std::size_t li = 0; li < m_.lines().size(); ++li) {
      const auto& l = m_.lines()[li];
      if (l.indent == 0) in_main = m_.IsMainCheck(l);
      const TokenText head = m_.First(l);
      if (head == "import" || head == "from") continue;
      const std::unordered_set<std::string_view>* methods = nullptr;  // Of the class holding li.
      const PyRef where = RefContext(li, in_main, class_methods, methods);
      // The name a def/class line defines is no mention; its defaults and bases are.
      const std::size_t defined = (head == "def" || head == "class" || m_.Head(l) == "def")
                                      ? l.begin + (head == "async" ? 2 : 1)
                                      : l.end;
      for (auto k = l.begin; k < l.end; ++k) {
        const Token& t = m_.T(k);
        if (t.kind() == TokKind::kString) {
          if (IsBytes(m_.Text(t))) continue;
          const std::string_view body = StringBody(m_.Text(t));
          result_.mentions_mps |= body == "mps" || StartsWith(body, "mps:");
          AddTextRef(body, where);
          continue;
        }
        if (!m_.IsName(t) || k == defined) continue;
        result_.mentions_mps |= m_.Text(t) == "mps";
        k = NameRefs(li, k, where, methods, attrs);
      }
    }
    result_.attrs.assign(attrs.begin(), attrs.end());
  }

 private:
  using ClassMethods = std::unordered_map<int, std::unordered_set<std::string_view>>;

  const Token& T(std::size_t k) const { return m_.T(k); }

  // The module-level functions and the methods of module-level classes, as definitions of the
  // call graph; returns each class's method names.
  ClassMethods CollectDefs() {
    ClassMethods class_methods;
    for (std::size_t s = 1; s < m_.scopes().size(); ++s) {
      const PyScope& sc = m_.scopes()[s];
      if (!sc.is_def || sc.name.empty()) continue;
      const PyScope* cls = sc.parent > 0 ? &m_.scope(sc.parent) : nullptr;
      const bool method = cls != nullptr && !cls->is_def && cls->parent == 0;
      if (sc.parent != 0 && !method) continue;
      const auto [first, last] = m_.ScopeLines(s);
      // Test functions are called by the test runner, by name.
      const bool registered = Decorated(sc) || StartsWith(sc.name, "test");
      std::string name(sc.name);
      if (method) {
        name = std::string(cls->name) + "." + name;
        class_methods[sc.parent].insert(sc.name);
      }
      result_.defs.push_back(
          PyTopDef{std::move(name), first, last, registered, method, method && Decorated(*cls)});
    }
    return class_methods;
  }

  // Whether a decorator of the def or class may register it under a name.
  bool Decorated(const PyScope& sc) const {
    for (std::size_t li = sc.first_line; li < sc.def_line; ++li)
      for (auto k = m_.lines()[li].begin; k < m_.lines()[li].end; ++k)
        if (m_.IsName(T(k)) && IsRegisteringWord(Lower(m_.Text(T(k))))) return true;
    return false;
  }

  // Whether a framework places the model on its device (accelerate, Lightning, HF's Trainer).
  void NoteFrameworkDevice() {
    for (const PyImport& imp : m_.imports()) {
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
    const int top = m_.TopOf(li);
    PyRef where;
    where.guarded = m_.RunsBehindCheck(li);
    where.in_main = in_main;
    methods = nullptr;
    if (top < 0) return where;
    const PyScope& sc = m_.scope(top);
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
    const auto& l = m_.lines()[li];
    const Token& t = T(k);
    const int scope = m_.ScopeOf(li);
    const int top = m_.TopOf(li);
    if (k > l.begin && m_.IsOp(T(k - 1), ".") && m_.Text(t) == "backward" && k + 1 < l.end &&
        m_.IsOp(T(k + 1), "(") && result_.backward_line == 0)
      result_.backward_line = m_.Line(t);
    if (k > l.begin && m_.IsOp(T(k - 1), ".")) {
      // `self.m()` of the class's own method, or an attribute that may name any method.
      const bool own = methods != nullptr && k >= l.begin + 2 && methods->count(m_.Text(t)) &&
                       (m_.Is(T(k - 2), "self") || m_.Is(T(k - 2), "cls")) &&
                       !(k >= l.begin + 3 && m_.IsOp(T(k - 3), "."));
      if (!own) {
        attrs.insert(m_.Text(t));
        return k;
      }
      PyRef r = where;
      r.target = std::string(m_.scope(top).name) + "." + std::string(m_.Text(t));
      r.own = true;
      m_.ReadCall(k + 1, l.end, r);
      if (r.in_def != r.target) result_.refs.push_back(std::move(r));  // Recursion says nothing.
      return k;
    }
    const TokenText name = m_.Text(t);
    if (m_.Shadowed(name, scope)) return k;
    if (const std::string* target = m_.Lookup(name, scope))
      return ImportedRef(k, l, scope, *target, where);
    const int* def = m_.TopDef(name);
    if (def == nullptr || *def == top) return k;  // Recursion says nothing.
    PyRef r = where;
    r.target = std::string(name);
    r.own = true;
    m_.ReadCall(k + 1, l.end, r);
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
      const std::size_t e = m_.Chain(k, l.end, scope, resolved, head_name);
      result_.dynamic_import |= resolved == "importlib.import_module" && e + 1 < l.end &&
                                m_.IsOp(T(e), "(") && T(e + 1).kind() != TokKind::kString;
      return k;
    }
    if (StartsWith(target, "torch")) {
      if (result_.model_line == 0) {
        std::string resolved, head_name;
        m_.Chain(k, l.end, scope, resolved, head_name);
        if (IsHeavyLayer(resolved)) {
          result_.model_line = m_.Line(t);
          result_.model_api = resolved;
        }
      }
      return k;
    }
    if (!IsOwnTarget(target)) return k;
    PyRef r = where;
    std::string head_name;
    std::size_t e = m_.Chain(k, l.end, scope, r.target, head_name);
    m_.ReadCall(e, l.end, r);
    result_.refs.push_back(std::move(r));
    return e - 1;
  }

  // Past the annotation of the parameter at k to its default: the token of its `=`, or of the
  // `,` or `close` that ends it.
  std::size_t DefaultOf(std::size_t k, std::size_t close) const {
    std::size_t v = k + 1;
    if (v < close && m_.IsOp(T(v), ":")) {
      int d = 0;
      for (++v; v < close; ++v) {
        if (m_.IsOpen(T(v)))
          ++d;
        else if (m_.IsClose(T(v)))
          --d;
        else if (d == 0 && (m_.IsOp(T(v), "=") || m_.IsOp(T(v), ",")))
          break;
      }
    }
    return v;
  }

  // Parameters of scope s whose default is a CUDA device string; `method` skips `self`.
  void CollectDefaults(std::size_t s, std::string_view owner, bool method) {
    const auto& l = m_.lines()[m_.scopes()[s].def_line];
    std::size_t k = l.begin;
    while (k < l.end && !m_.IsOp(T(k), "(")) ++k;
    if (k >= l.end) return;
    const std::size_t close = m_.Matching(k, l.end);
    int index = method ? -1 : 0;  // Of the parameter being read.
    bool keyword_only = false;
    int depth = 0;
    bool fresh = true;
    for (++k; k < close; ++k) {
      const Token& t = T(k);
      if (depth == 0 && fresh) {
        fresh = false;
        if (m_.IsOp(t, "*") || m_.IsOp(t, "**")) {
          keyword_only = true;
        } else if (m_.IsName(t)) {
          const TokenText param = m_.Text(t);
          const std::size_t v = DefaultOf(k, close);
          if (v + 1 < close && m_.IsOp(T(v), "=") && m_.IsCudaDeviceString(T(v + 1)))
            result_.defaults.push_back(PyDefault{std::string(owner), std::string(param),
                                                 keyword_only ? -1 : index, m_.Line(T(v + 1))});
          ++index;
        }
      }
      if (m_.IsOpen(t))
        ++depth;
      else if (m_.IsClose(t))
        --depth;
      else if (depth == 0 && m_.IsOp(t, ","))
        fresh = true;
    }
  }

  // "Class.method" for a line inside a method (or a function nested in one) of the module-level
  // class `top`; empty in the class body itself.
  std::string MethodOf(std::size_t li, int top) const {
    for (int s = m_.ScopeOf(li); s > 0; s = m_.scope(s).parent) {
      const PyScope& sc = m_.scope(s);
      if (sc.parent == top)
        return sc.is_def ? std::string(m_.scope(top).name) + "." + std::string(sc.name)
                         : std::string();
    }
    return {};
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

  const PyModel& m_;
  const PyScanOptions& opt_;
  PyScanResult& result_;
};

}  // namespace

void CollectCalls(const PyModel& m, const PyScanOptions& opt, PyScanResult& result) {
  CallCollector(m, opt, result).Run();
}

}  // namespace dt::scan
