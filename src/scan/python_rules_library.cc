// Library rules: imports of CUDA-only libraries and extension modules, the registry's Python APIs
// and keyword arguments, the project's CUDA symbols, and GPU kernels (Triton).
#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>

#include "scan/python_rules.h"

namespace dt::scan {

namespace {

// A CUDA-only library's import: required (DT210) when its ImportError handler only raises.
const char* LibraryImportCode(bool required, bool guarded) {
  return required && !guarded ? "DT210" : "DT201";
}

// DT312 for project code reaching a compiled extension, DT209 for code reaching GPU kernels only.
const char* SymbolCode(bool ext) { return ext ? "DT312" : "DT209"; }

// DT312, or DT314 where the project keeps the kernel in pure PyTorch too (CudaContext::referenced);
// a file that uses such a symbol passes the mark on to its own definitions.
const char* SymbolCodeFor(PyRuleContext& cx, const std::string& symbol, bool ext) {
  if (!ext || cx.opt.cuda == nullptr || cx.opt.cuda->referenced.count(symbol) == 0)
    return SymbolCode(ext);
  cx.result.reference_impl = true;
  return "DT314";
}

// `import x.y`: an extension module, a CUDA-only library or a torch.cuda module.
void ModuleFinding(PyRuleContext& cx, const std::string& mod, const Token& at, int scope,
                   bool guarded, bool required) {
  const PyModel& m = cx.model;
  if (m.IsExtensionModule(mod)) {
    ExtensionUse(cx, at, mod, guarded, scope);
  } else if (const Library* lib = m.LibraryOf(mod)) {
    cx.sink.Add(LibraryImportCode(required, guarded), m.Line(at), m.Column(at),
                lib->name + " (" + mod.substr(0, mod.find('.')) + ")", guarded, lib->alternative);
  } else if (const PythonApi* api = m.reg().MatchApi(mod);
             StartsWith(mod, "torch.cuda") || (api != nullptr && api->user)) {
    ApiFinding(cx, mod, at, guarded);
  }
}

// `from x import a, b`: extension modules and CUDA symbols among the names, then the module's
// library, then torch.cuda names and the registry's user APIs.
void FromImportFindings(PyRuleContext& cx, const LogicalLine& l, int scope, bool guarded,
                        bool required) {
  const PyModel& m = cx.model;
  std::size_t k = l.begin + 1;
  int level = 0;
  while (k < l.end && m.T(k).kind() == TokKind::kOp && (m.Is(m.T(k), ".") || m.Is(m.T(k), "..."))) {
    level += static_cast<int>(m.Text(m.T(k)).size());
    ++k;
  }
  std::size_t mod_tok = k < l.end ? k : l.begin;
  std::string mod;
  std::size_t e = k < l.end && m.Is(m.T(k), "import") ? k : m.Dotted(k, l.end, mod);
  std::string abs = m.Absolute(level, mod);
  if (abs.empty() || (level > 0 && abs == mod && cx.opt.package.empty() && cx.opt.cuda == nullptr))
    return;  // A relative import of the project's own code, with nothing known about it yet.
  if (m.IsExtensionModule(abs)) {
    ExtensionUse(cx, m.T(mod_tok), abs, guarded, scope);
    return;
  }
  bool any = false;
  for (k = e + 1; k < l.end; ++k) {
    if (!m.IsName(m.T(k)) || m.Is(m.T(k), "as") || (k > l.begin && m.Is(m.T(k - 1), "as")))
      continue;
    std::string full = abs + "." + std::string(m.Text(m.T(k)));
    bool ext = true;
    if (m.IsExtensionModule(full)) {
      ExtensionUse(cx, m.T(k), full, guarded, scope);
      any = true;
      continue;
    } else if (m.IsCudaSymbol(full)) {
      ext = m.ReachesExtension(full);
      if (!m.SiblingSymbol(full))
        cx.sink.Add(SymbolCodeFor(cx, full, ext), m.Line(m.T(k)), m.Column(m.T(k)), full, guarded);
      if (m.IsReexported(full)) {  // Reported; this file's definitions do not become symbols.
        any = true;
        continue;
      }
      // A package's __init__.py re-exports its modules' symbols (`from .grid import
      // GridEncoder`): importers of the package reach them under the bound name. Only relative
      // imports of the package's own modules: an absolute import there is a dependency, and
      // following every one of those (a library's top-level namespace) would make each name it
      // gathers a CUDA symbol. One hop (CudaContext::reexported): importers are reported, their
      // own definitions do not become symbols through it.
      const bool aliased = k + 2 < l.end && m.Is(m.T(k + 1), "as") && m.IsName(m.T(k + 2));
      const TokenText bound = m.Text(m.T(aliased ? k + 2 : k));
      if (scope == 0 && !guarded && level > 0 && cx.opt.package_init && !bound.starts_with("_"))
        cx.reexports[bound] |= ext;
    } else {
      continue;
    }
    NoteCudaAt(cx, scope, guarded, ext);
    any = true;
  }
  if (any || level > 0) return;
  if (const Library* lib = m.LibraryOf(abs)) {
    cx.sink.Add(LibraryImportCode(required, guarded), m.Line(m.T(mod_tok)), m.Column(m.T(mod_tok)),
                lib->name + " (" + abs.substr(0, abs.find('.')) + ")", guarded, lib->alternative);
    return;
  }
  // torch.cuda APIs are reported where they are imported too, and so is CUDAExtension (the
  // build's dependency on nvcc starts at its import); other APIs (torch.compile, transformers'
  // BitsAndBytesConfig) where they are used.
  bool cuda_module = StartsWith(abs, "torch.cuda") || abs == "torch.backends.cudnn";
  for (k = e + 1; k < l.end; ++k) {
    if (!m.IsName(m.T(k)) || m.Is(m.T(k), "as") || (k > l.begin && m.Is(m.T(k - 1), "as")))
      continue;
    std::string full = abs + "." + std::string(m.Text(m.T(k)));
    const PythonApi* api = m.reg().MatchApi(full);
    if (cuda_module || (api != nullptr && api->user) ||
        full == "torch.utils.cpp_extension.CUDAExtension" ||
        full == "torch.utils.ffi.create_extension")
      ApiFinding(cx, full, m.T(k), guarded);
  }
}

// Whether the call whose bracket is at `open` passes `api.unless_argument`: by keyword, at its
// position, or possibly through a `*args` / `**kwargs` spread.
bool PassesArgument(const PyModel& m, std::size_t open, const LogicalLine& l,
                    const PythonApi& api) {
  PyRef call;
  m.ReadCall(open, l.end, call);
  return call.spread || (api.unless_position >= 0 && call.positional > api.unless_position) ||
         std::find(call.keywords.begin(), call.keywords.end(), api.unless_argument) !=
             call.keywords.end();
}

// Whether token k lies in the annotation of `name: Type` or `name: Type = value` (after the
// colon, before any `=`).
bool InVariableAnnotation(const PyModel& m, std::size_t k, const LogicalLine& l) {
  if (l.end - l.begin < 3 || !m.IsName(m.T(l.begin)) || !m.IsOp(m.T(l.begin + 1), ":") ||
      k < l.begin + 2)
    return false;
  for (std::size_t j = l.begin + 2; j < k; ++j)
    if (m.IsOp(m.T(j), "=")) return false;
  return true;
}

// Whether name [k, ce) is one side of a conditional expression whose other side is None
// (`fused_fn if fused else None`, `None if cpu else fused_fn`): the value handed on may be
// nothing, so its users check it. A choice between two real values (`Norm if a else FusedNorm`)
// is a use.
bool OrNone(const PyModel& m, std::size_t k, std::size_t ce, const LogicalLine& l) {
  // A condition is a few tokens: the bound keeps a hostile line of such names linear.
  constexpr std::size_t kCondTokens = 64;
  auto none_at = [&](std::size_t j) { return j < l.end && m.Is(m.T(j), "None"); };
  if (ce < l.end && m.Is(m.T(ce), "if")) {
    int depth = 0;
    for (std::size_t j = ce + 1; j < l.end && j < ce + kCondTokens; ++j) {
      if (m.IsOpen(m.T(j))) {
        ++depth;
      } else if (m.IsClose(m.T(j))) {
        if (--depth < 0) return false;
      } else if (depth == 0 && m.IsOp(m.T(j), ",")) {
        return false;
      } else if (depth == 0 && m.Is(m.T(j), "else")) {
        return none_at(j + 1);
      }
    }
    return false;
  }
  if (k == l.begin || !m.Is(m.T(k - 1), "else")) return false;
  int depth = 0;
  const std::size_t stop = k > l.begin + kCondTokens ? k - kCondTokens : l.begin;
  for (std::size_t j = k - 1; j-- > stop;) {
    if (m.IsClose(m.T(j)))
      ++depth;
    else if (m.IsOpen(m.T(j)) && --depth < 0)
      return false;
    else if (depth == 0 && m.Is(m.T(j), "if"))
      return j > l.begin && none_at(j - 1);
  }
  return false;
}

// Whether optional name [k, ce) is tested for truth, whether its import succeeded: `if
// FlashCrossAttention or hasattr(F, "sdpa"):`, `allow and FlashCrossAttention`, `A if fused_fn
// else B`. The test runs nothing of the library.
bool TruthTest(const PyModel& m, std::size_t k, std::size_t ce, const LogicalLine& l) {
  if (ce != k + 1 || !m.IsOptionalName(m.Text(m.T(k)))) return false;
  auto word = [&](std::size_t j, std::initializer_list<std::string_view> words) {
    if (j < l.begin || j >= l.end) return false;
    const TokenText w = m.Text(m.T(j));
    return std::find(words.begin(), words.end(), w) != words.end();
  };
  const TokenText head = m.Head(l);
  const bool condition = head == "if" || head == "elif" || head == "while";
  return (k > l.begin && word(k - 1, {"not", "and", "or"})) || word(ce, {"and", "or"}) ||
         (condition && k == l.begin + 1 && word(ce, {":"})) ||
         (k > l.begin && word(k - 1, {"if"}) && word(ce, {"else"}));
}

}  // namespace

void KernelFinding(PyRuleContext& cx, std::size_t li) {
  const PyModel& m = cx.model;
  if (m.InKernelBody(li)) return;  // Body lines: the kernel was reported at its decorator.
  const int kernel = m.KernelDecoratedAt(li);
  if (kernel < 0) return;
  const PyScope& sc = m.scope(kernel);
  if (li != sc.kernel_line) return;
  const Token& at = m.T(m.lines()[li].begin);
  bool guarded = m.IsOptionalLine(li);
  const Library* lib = m.kernel_lib();
  cx.sink.Add("DT207", m.Line(at), m.Column(at), std::string(sc.name), guarded,
              lib ? std::string_view(lib->alternative) : std::string_view());
  NoteCuda(cx, sc.top, guarded, false);
}

void ImportFindings(PyRuleContext& cx, const LogicalLine& l, int scope, bool guarded,
                    bool required) {
  const PyModel& m = cx.model;
  if (m.First(l) != "import") {
    FromImportFindings(cx, l, scope, guarded, required);
    return;
  }
  for (std::size_t k = l.begin + 1; k < l.end;) {
    std::string mod;
    std::size_t e = m.Dotted(k, l.end, mod);
    if (mod.empty()) break;
    ModuleFinding(cx, mod, m.T(k), scope, guarded, required);
    k = e;
    if (k + 1 < l.end && m.Is(m.T(k), "as")) k += 2;
    if (k < l.end && m.IsOp(m.T(k), ","))
      ++k;
    else
      break;
  }
}

// `open`: the call's opening bracket in `l`, when the use is a call; an API that names an
// argument that makes the call portable (`unless_argument`) is a finding only in a call that
// does not pass it.
bool ApiFinding(PyRuleContext& cx, const std::string& resolved, const Token& at, bool guarded,
                const LogicalLine* l, std::size_t open) {
  const PyModel& m = cx.model;
  if (const PythonApi* api = m.reg().MatchApi(resolved)) {
    if (api->guard) return true;
    if (!api->unless_argument.empty() &&
        (l == nullptr || open >= l->end || !m.IsOp(m.T(open), "(") ||
         PassesArgument(m, open, *l, *api)))
      return true;
    cx.sink.Add(api->code, m.Line(at), m.Column(at), resolved, guarded, api->replacement);
    return true;
  }
  if (StartsWith(resolved, "torch.cuda.")) {
    auto third = resolved.find('.', 11);
    cx.sink.Add("DT110", m.Line(at), m.Column(at), resolved.substr(0, third), guarded);
    return true;
  }
  return false;
}

void KeywordFinding(PyRuleContext& cx, std::size_t k, const LogicalLine& l, int scope,
                    bool guarded) {
  const PyModel& m = cx.model;
  const auto* rules = m.reg().KeywordRules(m.Text(m.T(k)));
  if (rules == nullptr || k + 2 >= l.end) return;
  const Token& v = m.T(k + 2);
  std::string value =
      v.kind() == TokKind::kString ? std::string(StringBody(m.Text(v))) : std::string(m.Text(v));
  bool single = k + 3 >= l.end || m.IsOp(m.T(k + 3), ",") || m.IsClose(m.T(k + 3));
  std::string callee;
  bool callee_done = false;
  for (const auto& r : *rules) {
    if (!r.value.empty() && (!single || !GlobMatch(r.value, value))) continue;
    if (!r.call.empty()) {
      if (!callee_done) {
        callee = m.Callee(m.EnclosingOpen(k, l.begin), l.begin, scope);
        callee_done = true;
      }
      if (callee.empty() || !GlobMatch(r.call, callee)) continue;
    }
    std::string name =
        std::string(m.Text(m.T(k))) + "=" + (single ? std::string(m.Text(v)) : std::string("..."));
    if (!callee.empty()) name = callee.substr(callee.rfind('.') + 1) + "(" + name + ")";
    cx.sink.Add(r.code, m.Line(m.T(k)), m.Column(m.T(k)), name, guarded, r.replacement);
    return;
  }
}

// `torch.tensor([...], dtype=torch.float64)` made on the CPU and neither moved nor registered as
// module state in its statement: a float64 constant (a Butcher tableau, a reference value) that
// reaches the device only where a later line moves it, usually with a cast
// (`.to(device, dtype=y.dtype)`). MPS lacks float64 tensors, not float64 arithmetic on the CPU.
bool CpuFloat64Constant(const PyModel& m, std::size_t k, const LogicalLine& l, int scope) {
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  if (k < l.begin + 2 || !m.IsOp(m.T(k - 1), "=") || m.Text(m.T(k - 2)) != "dtype") return false;
  const std::size_t open = m.EnclosingOpen(k, l.begin);
  if (open == kNone || !m.IsOp(m.T(open), "(")) return false;
  const std::string callee = m.Callee(open, l.begin, scope);
  const std::string_view last = std::string_view(callee).substr(callee.rfind('.') + 1);
  bool factory = false;
  for (std::string_view f : {"tensor", "zeros", "ones", "empty", "full", "arange", "linspace",
                             "logspace", "as_tensor", "eye", "rand", "randn"})
    factory |= last == f;
  if (!factory || !StartsWith(callee, "torch.")) return false;
  PyRef call;
  m.ReadCall(open, l.end, call);
  if (std::find(call.keywords.begin(), call.keywords.end(), "device") != call.keywords.end())
    return false;
  const std::size_t close = m.Matching(open, l.end);
  if (close + 2 < l.end && m.IsOp(m.T(close + 1), ".") &&
      (m.Is(m.T(close + 2), "to") || m.Is(m.T(close + 2), "cuda")))
    return false;
  for (std::size_t o = m.EnclosingOpen(open, l.begin); o != kNone;
       o = m.EnclosingOpen(o, l.begin)) {
    const std::string outer = m.Callee(o, l.begin, scope);
    if (EndsWith(outer, "register_buffer") || EndsWith(outer, "Parameter")) return false;
    if (o == l.begin) break;
  }
  return true;
}

// A dotted chain through torch or an import alias: CUDA symbols, op-library calls, extension
// builds, device counts, registry APIs and CUDA-only libraries.
std::size_t ChainFindings(PyRuleContext& cx, std::size_t k, const std::string* bound,
                          LineRead& line, bool guarded) {
  const PyModel& m = cx.model;
  const LogicalLine& l = line.l;
  const int scope = line.scope;
  const Token& t = m.T(k);
  std::string resolved, head;
  std::size_t ce = m.Chain(k, l.end, scope, resolved, head);
  bool assigned = ce == k + 1 && ce < l.end && m.IsOp(m.T(ce), "=");  // `name = None` fallback.
  bool none_test = ce < l.end && m.Is(m.T(ce), "is");
  if (assigned || none_test || TruthTest(m, k, ce, l)) return k;
  bool use_guard = guarded || m.IsFallbackName(m.Text(t));
  if (m.IsCudaSymbol(resolved) || (bound && m.IsCudaSymbol(*bound))) {
    const std::string& symbol = m.IsCudaSymbol(resolved) ? resolved : *bound;
    const bool ext = m.ReachesExtension(symbol);
    // A def line's names are its annotations and defaults' callees, and `name: Type` only
    // declares a type: neither is a call of the symbol.
    if (!m.SiblingSymbol(symbol) && m.Head(l) != "def" && !InVariableAnnotation(m, k, l))
      cx.sink.Add(SymbolCodeFor(cx, symbol, ext), m.Line(t), m.Column(t), resolved, use_guard);
    if (!m.IsReexported(symbol)) NoteCudaAt(cx, scope, use_guard, ext);
    line.tainted |= !use_guard;
    return ce - 1;
  }
  if (StartsWith(resolved, "torch.ops.") && m.IsExtensionModule(resolved) && ce > k + 4) {
    ExtensionUse(cx, t, resolved, use_guard, scope);
    line.tainted |= !use_guard;
    return ce - 1;
  }
  ExtensionBuildChain(cx, k, ce, resolved, line, use_guard);
  if (ce < l.end && m.IsOp(m.T(ce), "(") && EndsWith(resolved, "cuda.device_count") &&
      StartsWith(resolved, "torch.") && CountAsValue(m, k, ce, l)) {
    // The number of GPUs as a value (a worker count, a batch split): 0 without CUDA.
    cx.sink.Add("DT115", m.Line(t), m.Column(t), resolved + "()", use_guard);
    return ce - 1;
  }
  // `dist.get_backend() == dist.Backend.NCCL`, `x.dtype != torch.float64`: a value compared
  // is a test of what the program has, not a use of it.
  bool compared = (k > l.begin && (m.IsOp(m.T(k - 1), "==") || m.IsOp(m.T(k - 1), "!="))) ||
                  (ce < l.end && (m.IsOp(m.T(ce), "==") || m.IsOp(m.T(ce), "!=")));
  if (compared || ((resolved == "torch.float64" || resolved == "torch.double") &&
                   CpuFloat64Constant(m, k, l, scope)))
    return ce - 1;
  if (ApiFinding(cx, resolved, t, use_guard, &l, ce)) return ce - 1;
  if (bound == nullptr) return k;
  if (const Library* lib = m.LibraryOf(resolved)) {
    if (line.launched || (m.kernel_lib() == lib && (m.InLaunch(line.li) || m.IsLaunchScope(scope))))
      return k;
    // An optional import's name handed on beside None (`self.mlp = fused_mlp_func if fused else
    // None`): nothing of the library runs here and the value may be nothing, so the calls through
    // it need checks of their own.
    const bool handed_on = ce == k + 1 && m.IsOptionalName(m.Text(t)) && OrNone(m, k, ce, l);
    // An optional import used in one branch of a choice by name (`elif opt == "fusedsgd":`):
    // the other names are the fallback, and the default picks one of them.
    const bool chosen = m.IsOptionalName(m.Text(t)) && InNamedChoice(m, line.li);
    cx.sink.Add("DT202", m.Line(t), m.Column(t), resolved, use_guard || handed_on || chosen,
                lib->AlternativeFor(resolved));
    return ce - 1;
  }
  return k;
}

}  // namespace dt::scan
