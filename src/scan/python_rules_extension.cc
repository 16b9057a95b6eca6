// Extension rules: compiled CUDA extensions built (`load()`, `CUDAExtension`) and used (their
// modules and the handles bound to them), and the module-level names of this file that reach
// CUDA-only code, for the rest of the project (PyScanResult::cuda_symbols).
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "scan/python_rules.h"

namespace dt::scan {

// Its definition depends on CUDA unless the module also has a CPU build: then its ops run on the
// Mac's CPU and fail only on MPS (the finding says so and is mps_only), and the ops without a CPU
// kernel are the C++ scanner's (DT320).
void ExtensionUse(PyRuleContext& cx, const Token& at, const std::string& dotted, bool guarded,
                  int scope) {
  const PyModel& m = cx.model;
  const bool cpu = m.IsCpuBuilt(dotted);
  cx.sink.Add("DT305", m.Line(at), m.Column(at),
              cpu ? dotted + " (built for the CPU only where CUDA is missing)" : dotted, guarded,
              {}, cpu);
  if (!cpu) NoteCudaAt(cx, scope, guarded, true);
}

void NoteCuda(PyRuleContext& cx, int top, bool guarded, bool ext) {
  if (guarded || top < 0) return;
  cx.cuda_tops[cx.model.scope(top).name] |= ext;
}

void NoteCudaAt(PyRuleContext& cx, int scope, bool guarded, bool ext) {
  NoteCuda(cx, scope > 0 ? cx.model.scope(scope).top : -1, guarded, ext);
}

void HandleUse(PyRuleContext& cx, std::size_t k, LineRead& line, bool guarded) {
  const PyModel& m = cx.model;
  const LogicalLine& l = line.l;
  const Token& t = m.T(k);
  bool assigned = k + 1 < l.end && m.IsOp(m.T(k + 1), "=") && k == l.begin;
  bool none_test = k + 1 < l.end && m.Is(m.T(k + 1), "is");
  if (assigned || none_test) return;
  bool use_guard = guarded || m.IsFallbackName(m.Text(t));
  std::string resolved, head;
  const std::size_t ce = m.Chain(k, l.end, line.scope, resolved, head);
  // A wrapper object's own call runs the extension; an attribute of it is the project's code.
  if (cx.wrapper_objects.count(m.Text(t)) > 0 &&
      (ce != k + 1 || ce >= l.end || !m.IsOp(m.T(ce), "(")))
    return;
  ExtensionUse(cx, t, resolved, use_guard, line.scope);
  if (!use_guard) {
    bool in_def = false;
    for (int s = line.scope; s > 0 && !in_def; s = m.scope(s).parent) in_def = m.scope(s).is_def;
    cx.result.extension_used_at_import |= !in_def;
    // Outside every function (`quant_cuda.vecquant3matmul(...)` in a benchmark script's own
    // code) the call runs the kernel wherever the file runs, and no project function's callers
    // can be given another path: a blocker, as a call of a wrapper around it is (DT312). Inside
    // a function its callers carry it (DT312, or DT314 beside a reference implementation).
    if (!in_def && !m.IsCpuBuilt(resolved)) cx.sink.RaiseLast(Severity::kBlocker);
  }
  // An object a CPU-built extension made (`_C.InstanceAnnotation(...)`) is plain C++.
  line.tainted |= !use_guard && !m.IsCpuBuilt(resolved);
}

void OwnReference(PyRuleContext& cx, std::size_t k, const LineRead& line, bool guarded) {
  const PyModel& m = cx.model;
  const TokenText name = m.Text(m.T(k));
  int from = line.scope > 0 ? m.scope(line.scope).top : -1;
  std::string_view from_name = from >= 0 ? m.scope(from).name : std::string_view();
  if (from_name != name) cx.ref_guards[name] |= guarded ? 1 : 2;
  if (guarded) return;
  if (from_name.empty())
    cx.module_refs[line.li].push_back(name);
  else if (from_name != name)
    cx.local_refs[from_name].insert(name);
}

// An object built from an extension's class is a handle too (`raster = Rasterizer(...)`, then
// `raster(...)`); what a function returns (a tensor) is not. A module-level
// `name = BallQuery.apply` is a symbol of this module.
void HandleAssignment(PyRuleContext& cx, LineRead& line) {
  PyModel& m = cx.model;
  const LogicalLine& l = line.l;
  const int scope = line.scope;
  // find, not []: a lookup must not add an empty entry for every line.
  auto refs = cx.module_refs.find(line.li);
  if (!line.tainted && refs == cx.module_refs.end()) return;
  std::size_t eq = l.begin;
  while (eq < l.end && !m.IsOp(m.T(eq), "=")) ++eq;
  if (eq != l.begin + 1 || eq >= l.end || !m.IsName(m.T(l.begin))) return;
  TokenText target = m.Text(m.T(l.begin));
  bool constructed = false;
  // The class is an extension's (`_C.Rasterizer`) or a project class that wraps one
  // (`GaussianRasterizer`, a CUDA symbol reaching a compiled extension).
  bool wrapper = false;
  auto extension_class = [&]() {
    if (m.IsHandle(m.Text(m.T(eq + 1)), scope)) return true;
    std::string resolved, head;
    m.Chain(eq + 1, l.end, scope, resolved, head);
    wrapper = m.IsCudaSymbol(resolved) && m.ReachesExtension(resolved);
    return wrapper;
  };
  if (line.tainted && eq + 1 < l.end && m.IsName(m.T(eq + 1)) && extension_class()) {
    std::string dotted;
    std::size_t ce = m.Dotted(eq + 1, l.end, dotted);
    TokenText last = m.Text(m.T(ce - 1));
    constructed = ce < l.end && m.IsOp(m.T(ce), "(") && !last.empty() && last[0] >= 'A' &&
                  last[0] <= 'Z' && m.Matching(ce, l.end) == l.end - 1;
  }
  if (constructed) m.BindValueHandle(scope, target);
  if (constructed && wrapper) cx.wrapper_objects.insert(target);
  if (scope == 0) {
    if (constructed) cx.cuda_tops[target] |= true;
    if (refs != cx.module_refs.end())
      for (auto ref : refs->second) cx.local_refs[target].insert(ref);
  }
}

// PyTorch 0.x's cffi build (`torch.utils.ffi.create_extension('_ext.op', ..., with_cuda=flag,
// relative_to=__file__)`): the module lives beside the build script, and PyTorch 1.0 removed the
// API, so such an extension builds nowhere today without its CUDA objects.
namespace {
bool IsFfiBuild(std::string_view resolved) {
  return resolved == "torch.utils.ffi.create_extension";
}
}  // namespace

// `ext = CUDAExtension` (a variable called later) and `load(...)` / `load_inline(...)` /
// `CUDAExtension(...)` builds.
void ExtensionBuildChain(PyRuleContext& cx, std::size_t k, std::size_t ce,
                         const std::string& resolved, const LineRead& line, bool use_guard) {
  PyModel& m = cx.model;
  const LogicalLine& l = line.l;
  if ((EndsWith(resolved, "cpp_extension.CUDAExtension") ||
       EndsWith(resolved, "cpp_extension.CppExtension")) &&
      ce == l.end && k == l.begin + 2 && m.IsName(m.T(l.begin)) && m.IsOp(m.T(l.begin + 1), "=")) {
    ExtensionVar& var = cx.extension_vars[m.Text(m.T(l.begin))];
    (EndsWith(resolved, "CUDAExtension") ? var.cuda : var.cpp) = true;
    m.AddHotName(m.Text(m.T(l.begin)));
  }
  if (resolved == "torch.utils.cpp_extension.load" ||
      resolved == "torch.utils.cpp_extension.load_inline" ||
      resolved == "torch.utils.cpp_extension.CUDAExtension" || IsFfiBuild(resolved)) {
    ExtensionBuild(cx, k, ce, l, line.scope, use_guard, resolved);
  }
}

namespace {

// A build's source file named by string `body` goes into `sources` (its base name); returns
// whether it is CUDA.
bool SourceFile(std::string_view body, std::vector<std::string>& sources) {
  for (std::string_view ext : {".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp"})
    if (EndsWith(body, ext)) {
      sources.emplace_back(body.substr(body.rfind('/') + 1));
      break;
    }
  return EndsWith(body, ".cu") || EndsWith(body, ".cuh");
}

// The list a build's `sources=NAME` names, bound in the same scope before the build's line `l`
// (`srcs = ["op.cpp", "op.cu"]`): its files go into `sources`, and each CUDA one is reported there
// (DT301) unless the line names CUDA itself, where the string rules already read it; returns
// whether one is CUDA. Builds are few, so the walk back over the scope's lines is rare.
bool BoundSources(PyRuleContext& cx, std::string_view name, const LogicalLine& l, int scope,
                  bool guarded, std::vector<std::string>& sources) {
  const PyModel& m = cx.model;
  const auto& lines = m.lines();
  if (lines.empty() || &l < lines.data() || &l >= lines.data() + lines.size()) return false;
  const auto here = static_cast<std::size_t>(&l - lines.data());
  const std::size_t from = scope > 0 ? m.scope(scope).def_line + 1 : 0;
  bool cuda = false;
  for (std::size_t li = from; li < here; ++li) {
    const LogicalLine& b = lines[li];
    if (m.ScopeOf(li) != scope || b.end - b.begin < 3 || m.Text(m.T(b.begin)) != name ||
        !m.IsOp(m.T(b.begin + 1), "="))
      continue;
    const bool read = m.Maybe(b.begin, b.end);
    for (std::size_t j = b.begin + 2; j < b.end; ++j) {
      if (m.T(j).kind() != TokKind::kString) continue;
      const std::string_view body = StringBody(m.Text(m.T(j)));
      if (!SourceFile(body, sources)) continue;
      cuda = true;
      if (!read) CudaSourceFinding(cx, m.T(j), body, guarded);
    }
  }
  return cuda;
}

// The end of the argument that starts at token j of a call closing at `close`: its comma or close.
std::size_t ArgumentEnd(const PyModel& m, std::size_t j, std::size_t close) {
  while (j < close && !m.IsOp(m.T(j), ",")) j = m.IsOpen(m.T(j)) ? m.Matching(j, close) + 1 : j + 1;
  return std::min(j, close);
}

// The tokens [b, e) of keyword argument `kw`'s value in the call whose bracket is `open`; b == e
// when the call passes none.
std::pair<std::size_t, std::size_t> KeywordValue(const PyModel& m, std::size_t open,
                                                 std::size_t close, std::string_view kw) {
  for (std::size_t j = open + 1; j < close; j = ArgumentEnd(m, j, close) + 1)
    if (j + 1 < close && m.IsName(m.T(j)) && m.Text(m.T(j)) == kw && m.IsOp(m.T(j + 1), "="))
      return {j + 2, ArgumentEnd(m, j + 2, close)};
  return {close, close};
}

// A def's parameters in order (`def make_cuda_ext(name, module, sources):`).
std::vector<std::string_view> DefParams(const PyModel& m, const PyScope& def) {
  std::vector<std::string_view> params;
  const LogicalLine& l = m.lines()[def.def_line];
  std::size_t open = l.begin;
  while (open < l.end && !m.IsOp(m.T(open), "(")) ++open;
  if (open >= l.end) return params;
  const std::size_t close = m.Matching(open, l.end);
  for (std::size_t j = open + 1; j < close; j = ArgumentEnd(m, j, close) + 1)
    if (m.IsName(m.T(j))) params.push_back(m.Text(m.T(j)));
  return params;
}

// The parts of an extension's name that a helper makes from its parameters, read from the
// `name=` value [b, e): `'%s.%s' % (module, name)`, `'{}.{}'.format(module, name)`,
// `f'{module}.{name}'` or `module + '.' + name`. Empty when the value is anything else.
// Hand-written: these four spellings are what build helpers use, and no evaluator is needed.
std::vector<std::pair<bool, std::string>> NameParts(
    const PyModel& m, std::size_t b, std::size_t e,
    const std::unordered_set<std::string_view>& ps) {
  using Parts = std::vector<std::pair<bool, std::string>>;
  Parts parts;
  auto literal = [&](std::string_view text) {
    if (!text.empty()) parts.emplace_back(false, std::string(text));
  };
  // The holes of `body` filled in order by the parameter names among tokens [nb, ne).
  auto fill = [&](std::string_view body, std::string_view hole, std::size_t nb, std::size_t ne) {
    std::vector<std::string_view> names;
    for (std::size_t j = nb; j < ne; ++j) {
      if (m.IsOp(m.T(j), ",")) continue;
      if (!m.IsName(m.T(j)) || ps.count(m.Text(m.T(j))) == 0) return Parts{};
      names.push_back(m.Text(m.T(j)));
    }
    std::size_t at = 0;
    for (std::string_view n : names) {
      const std::size_t h = body.find(hole, at);
      if (h == std::string_view::npos) return Parts{};
      literal(body.substr(at, h - at));
      parts.emplace_back(true, std::string(n));
      at = h + hole.size();
    }
    if (body.find(hole, at) != std::string_view::npos) return Parts{};
    literal(body.substr(at));
    return parts;
  };
  if (b >= e) return parts;
  const Token& first = m.T(b);
  const bool str = first.kind() == TokKind::kString;
  const std::string_view body = str ? StringBody(m.Text(first)) : std::string_view();
  if (str && b + 2 < e && m.IsOp(m.T(b + 1), "%")) {
    if (!m.IsOp(m.T(b + 2), "(")) return fill(body, "%s", b + 2, e);
    if (m.Matching(b + 2, e) + 1 != e) return {};
    return fill(body, "%s", b + 3, e - 1);
  }
  if (str && b + 3 < e && m.IsOp(m.T(b + 1), ".") && m.Is(m.T(b + 2), "format") &&
      m.IsOp(m.T(b + 3), "(")) {
    if (m.Matching(b + 3, e) + 1 != e) return {};
    return fill(body, "{}", b + 4, e - 1);
  }
  if (str && b + 1 == e && IsFString(m.Text(first))) {
    std::size_t at = 0;
    for (std::size_t o; (o = body.find('{', at)) != std::string_view::npos;) {
      const std::size_t c = body.find('}', o);
      if (c == std::string_view::npos || ps.count(body.substr(o + 1, c - o - 1)) == 0) return {};
      literal(body.substr(at, o - at));
      parts.emplace_back(true, std::string(body.substr(o + 1, c - o - 1)));
      at = c + 1;
    }
    literal(body.substr(at));
    return parts;
  }
  for (std::size_t j = b; j < e; ++j) {  // module + "." + name
    const Token& t = m.T(j);
    if ((j - b) % 2 == 1) {
      if (!m.IsOp(t, "+")) return {};
    } else if (m.IsName(t) && ps.count(m.Text(t)) > 0) {
      parts.emplace_back(true, std::string(m.Text(t)));
    } else if (t.kind() == TokKind::kString && !IsFString(m.Text(t))) {
      literal(StringBody(m.Text(t)));
    } else {
      return {};
    }
  }
  return parts;
}

// The name a call of helper `h` (bracket `open`) gives its extension: the helper's parts, each
// parameter filled with the string the call passes for it; empty when one is not a string.
std::string HelperCallName(const PyModel& m, std::size_t open, std::size_t close,
                           const ExtensionHelper& h) {
  std::unordered_map<std::string_view, std::string_view> args;
  std::size_t pos = 0;
  for (std::size_t j = open + 1; j < close; j = ArgumentEnd(m, j, close) + 1) {
    const std::size_t e = ArgumentEnd(m, j, close);
    const bool keyword = e > j + 1 && m.IsName(m.T(j)) && m.IsOp(m.T(j + 1), "=");
    const std::size_t v = keyword ? j + 2 : j;
    std::string_view param;
    if (keyword)
      param = m.Text(m.T(j));
    else if (pos < h.params.size())
      param = h.params[pos++];
    if (!param.empty() && e == v + 1 && m.T(v).kind() == TokKind::kString &&
        !IsFString(m.Text(m.T(v))))
      args[param] = StringBody(m.Text(m.T(v)));
  }
  std::string name;
  for (const auto& [param, text] : h.parts) {
    if (!param) {
      name += text;
      continue;
    }
    auto it = args.find(text);
    if (it == args.end()) return {};
    name += it->second;
  }
  return name;
}

}  // namespace

bool HelperBuildCall(const PyRuleContext& cx, std::size_t k, const LogicalLine& l) {
  const PyModel& m = cx.model;
  return !cx.extension_helpers.empty() && k + 2 < l.end && m.IsOp(m.T(k + 1), "(") &&
         cx.extension_helpers.count(m.Text(m.T(k))) > 0;
}

void CudaSourceFinding(PyRuleContext& cx, const Token& t, std::string_view body, bool guarded) {
  const PyModel& m = cx.model;
  cx.sink.Add(m.HasReferenceDispatch() ? "DT313" : "DT301", m.Line(t), m.Column(t),
              std::string(body.substr(body.rfind('/') + 1)), guarded);
}

// A call of the project's own JIT-build helper with a CUDA build's arguments
// (`custom_ops.get_plugin("bias_act_plugin", sources=srcs, extra_cuda_cflags=[...])`): a CUDA
// build as load()'s is, whose value is the compiled module. The helper's own load() learns it
// through CudaContext::jit_builders.
void WrapperBuild(PyRuleContext& cx, std::size_t kw, const LineRead& line, bool guarded) {
  const PyModel& m = cx.model;
  const LogicalLine& l = line.l;
  const std::size_t open = m.EnclosingOpen(kw, l.begin);
  if (open == static_cast<std::size_t>(-1) || !m.IsOp(m.T(open), "(")) return;
  const std::string callee = m.Callee(open, l.begin, line.scope);
  // load() and load_inline() themselves are ExtensionBuildChain's; a call is read once.
  if (callee.empty() || StartsWith(callee, "torch.utils.cpp_extension") ||
      !cx.helper_calls.insert(open).second)
    return;
  std::size_t k = open;
  while (k > l.begin && (m.IsName(m.T(k - 1)) || m.IsOp(m.T(k - 1), "."))) --k;
  if (k == open || !m.IsName(m.T(k))) return;
  cx.jit_call_lines.emplace_back(callee.substr(callee.rfind('.') + 1), m.Line(m.T(k)));
  ExtensionBuild(cx, k, open, l, line.scope, guarded, callee);
}

void RecordJitCalls(PyRuleContext& cx) {
  for (const auto& [name, line] : cx.jit_call_lines) {
    cx.result.jit_calls.push_back(name);
    if (cx.sink.AnyUnguarded(line, line)) cx.result.jit_unguarded.push_back(name);
  }
}

// `load(name=..., sources=[... .cu], with_cuda=True)`, `load_inline(cuda_sources=...)` and
// `CUDAExtension(name=...)`: a CUDA build. Declares the module it makes and binds the value a
// JIT build returns (`_ext = load(...)`) as an extension handle.
void ExtensionBuild(PyRuleContext& cx, std::size_t k, std::size_t ce, const LogicalLine& l,
                    int scope, bool guarded, const std::string& resolved) {
  PyModel& m = cx.model;
  if (ce >= l.end || !m.IsOp(m.T(ce), "(")) return;
  std::size_t close = m.Matching(ce, l.end);
  bool cuda = EndsWith(resolved, "CUDAExtension");
  std::string name;
  std::vector<std::string> sources;
  // The call hands on parameters of the function around it (a JIT-build helper).
  bool forwards = false;
  const auto& params = m.scope(scope).params;
  for (std::size_t j = ce + 1; j < close; ++j) {
    const Token& t = m.T(j);
    if (t.kind() == TokKind::kString) {
      std::string_view body = StringBody(m.Text(t));
      cuda |= SourceFile(body, sources);
      // The name when the string is the whole argument (not a template the helper fills).
      const bool whole = (j + 1 == close || m.IsOp(m.T(j + 1), ",")) && !IsFString(m.Text(t));
      bool positional = j == ce + 1 && whole;
      if (((j > ce + 2 && whole && m.IsOp(m.T(j - 1), "=") && m.Is(m.T(j - 2), "name")) ||
           positional) &&
          name.empty())
        name = std::string(body);
      continue;
    }
    if (!m.IsName(t)) continue;
    // `with_cuda=True`; for a cffi build also a flag the script sets (`with_cuda=with_cuda`):
    // there the flag only says whether the CUDA objects are linked, and they are the kernels.
    auto with_cuda_set = [&](const Token& v) {
      return m.Is(v, "True") ||
             (IsFfiBuild(resolved) && m.IsName(v) && !m.Is(v, "False") && !m.Is(v, "None"));
    };
    if ((m.Text(t) == "with_cuda" && j + 2 < close && m.IsOp(m.T(j + 1), "=") &&
         with_cuda_set(m.T(j + 2))) ||
        IsCudaBuildKeyword(m.Text(t)))
      cuda = true;
    forwards |= scope > 0 && params.count(m.Text(t)) > 0;
    if (m.Text(t) == "sources" && j + 2 < close && m.IsOp(m.T(j + 1), "=") &&
        m.IsName(m.T(j + 2)) && (j + 3 == close || m.IsOp(m.T(j + 3), ",")))
      cuda |= BoundSources(cx, m.Text(m.T(j + 2)), l, scope, guarded, sources);
  }
  const std::string_view callee_name = std::string_view(resolved).substr(resolved.rfind('.') + 1);
  if (auto h = cx.extension_helpers.find(callee_name); h != cx.extension_helpers.end()) {
    cuda |= h->second.cuda;
    if (std::string n = HelperCallName(m, ce, close, h->second); !n.empty()) name = std::move(n);
  } else if (name.empty() && forwards && EndsWith(resolved, "Extension") && m.scope(scope).is_def &&
             m.scope(scope).parent == 0) {
    // A helper that names its extension from its parameters: its calls declare the modules.
    const auto [vb, ve] = KeywordValue(m, ce, close, "name");
    auto parts = NameParts(m, vb, ve, m.scope(scope).params);
    if (std::any_of(parts.begin(), parts.end(), [](const auto& p) { return p.first; }))
      cx.extension_helpers[m.scope(scope).name] = ExtensionHelper{
          DefParams(m, m.scope(scope)), std::move(parts), EndsWith(resolved, "CUDAExtension")};
  }
  if (!cuda && forwards && !EndsWith(resolved, "Extension")) {
    // What a helper builds is what its callers pass: CUDA when a call elsewhere passes CUDA.
    const PyScope& def = m.scope(scope);
    if (def.is_def && def.parent == 0) {
      if (cx.opt.cuda != nullptr && cx.opt.cuda->jit_builders.count(def.name) > 0) {
        cuda = true;
        guarded |= cx.opt.cuda->jit_unguarded.count(def.name) == 0;
      } else {
        cx.result.jit_builders.emplace_back(def.name);
      }
    }
  }
  if (!cuda) return;
  m.TrackRefs();
  // A build at run time under a device check (`load()` only where x.is_cuda) keeps its sources
  // off the Mac. A setup script's condition (`if CUDA_HOME:`, an opt-in switch) only decides
  // whether the wheel has the extension; whether the project runs without it is decided where
  // the extension is used, so the wrapper's own findings stay unguarded.
  for (auto& src : sources)
    cx.result.extension_sources.emplace_back(std::move(src), guarded && !cx.opt.setup_py);
  if (!name.empty()) {
    auto ev = cx.extension_vars.find(m.Text(m.T(k)));
    bool cpu_build = ev != cx.extension_vars.end() && ev->second.cpp;
    // A cffi module is named from the build script's package (`relative_to=__file__`).
    cx.sink.DeclareCudaModule(name, m.Line(m.T(k)),
                              std::string(m.Text(m.T(k))) + "() in " + cx.sink.rel(), cpu_build,
                              IsFfiBuild(resolved));
  }
  // The registry reports these (DT301).
  if (EndsWith(resolved, "CUDAExtension") || IsFfiBuild(resolved)) return;
  cx.sink.Add(m.HasReferenceDispatch() ? "DT313" : "DT301", m.Line(m.T(k)), m.Column(m.T(k)),
              resolved.substr(resolved.rfind('.') + 1) + "()", guarded);
  // The handle: `X = load(...)`, bound where `global X` says, else in this scope; only when the
  // build is the whole value (`ext_modules = [make_cuda_ext(...), ...]` is a list of builds).
  if (k == l.begin + 2 && close + 1 == l.end && m.IsName(m.T(l.begin)) &&
      m.IsOp(m.T(l.begin + 1), "=")) {
    TokenText target = m.Text(m.T(l.begin));
    int bind = m.IsGlobal(target) ? 0 : scope;
    m.BindValueHandle(bind, target);
    if (!guarded && scope == 0) cx.cuda_tops[target] |= true;
  }
}

// A private module-level function or class (`_FusedGELUFunction`) that this file only uses under
// a CUDA check runs only with CUDA: its body is guarded, and it depends on nothing for the rest
// of the project. Public names may be called unguarded from other modules, so they stay as they
// are.
void GuardPrivateDefinitions(PyRuleContext& cx) {
  PyModel& m = cx.model;
  if (!m.track_refs()) return;  // Without it, lines that name the definition were not all read.
  for (std::size_t s = 1; s < m.scopes().size(); ++s) {
    const PyScope& sc = m.scopes()[s];
    if (sc.parent != 0 || sc.name.empty() || sc.name[0] != '_') continue;
    auto it = cx.ref_guards.find(sc.name);
    if (it == cx.ref_guards.end() || it->second != 1) continue;
    const auto [first, last] = m.ScopeLines(s);
    cx.sink.GuardLines(first, last);
    m.MarkGuardedTop(s);
    cx.cuda_tops.erase(sc.name);
    cx.local_refs.erase(sc.name);
  }
}

namespace {

// A module-level function named as a pure-PyTorch version of a kernel (`ms_deform_attn_pytorch`,
// `attention_ref`, `naive_scan`) that uses no CUDA itself.
bool HasReferenceImplementation(const PyRuleContext& cx) {
  for (const PyScope& sc : cx.model.scopes()) {
    if (sc.parent != 0 || !sc.is_def || cx.cuda_tops.count(sc.name) > 0) continue;
    const std::string name = Lower(sc.name);
    for (std::string_view suffix : {"_pytorch", "_ref", "_reference", "_naive", "_python"})
      if (EndsWith(name, suffix)) return true;
    for (std::string_view prefix : {"ref_", "reference_", "naive_", "pytorch_"})
      if (StartsWith(name, prefix)) return true;
  }
  return false;
}

}  // namespace

void PropagateLocal(PyRuleContext& cx) {
  // Extension builds (load / CUDAExtension) are found per call.
  bool changed = true;
  while (changed) {
    changed = false;
    for (const auto& [from, refs] : cx.local_refs) {
      if (cx.model.IsReferenceTop(from)) continue;  // Its dispatch has another path.
      for (auto ref : refs) {
        auto it = cx.cuda_tops.find(ref);
        if (it == cx.cuda_tops.end()) continue;
        auto [f, fresh] = cx.cuda_tops.emplace(from, it->second);
        if (fresh || (it->second && !f->second)) {
          f->second = f->second || it->second;
          changed = true;
        }
      }
    }
  }
  // A file that keeps a pure-PyTorch version of its kernel beside the extension calls: the
  // project has the replacement, so its definitions' callers are replacements (DT314), no dead
  // end (DT312).
  if (!cx.cuda_tops.empty() && HasReferenceImplementation(cx)) cx.result.reference_impl = true;
  // Module-level code that runs a definition reaching the extension (a script's own calls, its
  // `__main__` block) uses it when the module runs.
  for (const auto& [li, names] : cx.module_refs)
    for (std::string_view name : names)
      if (auto it = cx.cuda_tops.find(name); it != cx.cuda_tops.end() && it->second)
        cx.result.extension_used_at_import = true;
  for (auto [name, ext] : cx.cuda_tops)
    if (!cx.model.IsReferenceTop(name)) cx.result.cuda_symbols.emplace_back(name, ext);
  for (auto [name, ext] : cx.reexports) {
    if (cx.cuda_tops.count(name) > 0) continue;  // Also a symbol of the file's own.
    cx.result.cuda_symbols.emplace_back(name, ext);
    cx.result.reexports.emplace_back(name);
  }
  std::sort(cx.result.cuda_symbols.begin(), cx.result.cuda_symbols.end());
}

}  // namespace dt::scan
