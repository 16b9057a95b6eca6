// String rules: what a string literal says about CUDA. Device strings and NCCL, the code inside
// f-string fields, commands and NVIDIA tools the program runs, CUDA build flags, the registry's
// string values, and requirement strings; prose (messages, help texts) says nothing.
#include <cctype>
#include <string>
#include <string_view>

#include "scan/env_scanners.h"
#include "scan/python_rules.h"

namespace dt::scan {

namespace {

// The NVIDIA tool a string names, alone or as the last part of a path; empty when none.
std::string_view NvidiaTool(std::string_view body) {
  // A command line names its program first: "nvidia-smi -L", "nvcc --version".
  body = body.substr(0, body.find(' '));
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
bool IsDistributionName(const Registry& reg, std::string_view body) {
  std::size_t e = 0;
  while (e < body.size() && (std::isalnum(static_cast<unsigned char>(body[e])) || body[e] == '-' ||
                             body[e] == '_' || body[e] == '.'))
    ++e;
  if (e == 0 || e > 60 ||
      (e < body.size() && std::string_view("=<>!~").find(body[e]) == std::string_view::npos))
    return false;
  std::string name(body.substr(0, e));
  if (name.find('-') == std::string::npos) return false;
  const Library* lib = reg.LibraryForPackage(name);
  if (lib == nullptr) return false;
  for (const auto& mod : lib->modules)
    if (mod == name) return false;
  return true;
}

// Code inside an f-string's replacement fields (`f"{torch.cuda.max_memory_allocated() / 1e9}"`):
// its dotted names are resolved and reported at the string.
// Chain() for the tokens of an f-string field lexed on their own: the NAME(.NAME)* at `a`,
// resolved through this scope's imports; returns the index of its last name.
std::size_t SubChain(const PyModel& m, const Lexed& sub, std::size_t a, int scope,
                     std::string& resolved) {
  std::string dotted(sub.Text(sub.tokens[a]));
  std::size_t b = a;
  while (b + 2 < sub.tokens.size() && sub.Text(sub.tokens[b + 1]) == "." &&
         sub.tokens[b + 2].kind() == TokKind::kName) {
    dotted.append(".").append(sub.Text(sub.tokens[b + 2]));
    b += 2;
  }
  const std::string* target = m.Lookup(sub.Text(sub.tokens[a]), scope);
  resolved = target ? *target + dotted.substr(sub.Text(sub.tokens[a]).size()) : dotted;
  return b;
}

// `{torch.cuda.memory_reserved() / 1e9 if torch.cuda.is_available() else 0}`: the value before a
// CUDA check's `if` is computed only with CUDA. Returns the index of the field's `if` (or its
// size) and sets `cond_cuda` when the condition is such a check.
std::size_t FieldCondition(const PyModel& m, const Lexed& sub, int scope, bool& cond_cuda) {
  std::size_t cond_at = sub.tokens.size();
  cond_cuda = false;
  for (std::size_t a = 0; a < sub.tokens.size(); ++a) {
    if (sub.Text(sub.tokens[a]) != "if") continue;
    cond_at = a;
    for (std::size_t c = a + 1; c < sub.tokens.size() && sub.Text(sub.tokens[c]) != "else"; ++c) {
      if (sub.Text(sub.tokens[c]) == "not") break;
      if (sub.tokens[c].kind() != TokKind::kName || sub.Text(sub.tokens[c - 1]) == ".") continue;
      std::string resolved;
      SubChain(m, sub, c, scope, resolved);
      const PythonApi* api = m.reg().MatchApi(resolved);
      if ((api != nullptr && api->guard) || m.IsGuardName(sub.Text(sub.tokens[c])))
        cond_cuda = true;
    }
    break;
  }
  return cond_at;
}

// The position in the scanned source of a token of `sub`, a field lexed on its own: `sub.src` is
// a view into the source, so the finding lands on the field's own line and column.
Token InSource(const PyModel& m, const Lexed& sub, const Token& n) {
  const auto base = static_cast<std::uint32_t>(sub.src.data() - m.source().data());
  return Token{base + n.offset, n.size_kind};
}

void FStringFindings(PyRuleContext& cx, std::string_view literal, int scope, bool guarded,
                     int depth);

// One replacement field's expression, lexed into `sub`: dotted names resolved through the file's
// imports, `.cuda()` on anything, and the f-strings nested in it.
void FieldFindings(PyRuleContext& cx, const Lexed& sub, int scope, bool guarded, int depth) {
  const PyModel& m = cx.model;
  bool cond_cuda = false;
  std::size_t cond_at = FieldCondition(m, sub, scope, cond_cuda);
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
    const bool field_guarded = guarded || (cond_cuda && a < cond_at);
    if (n.kind() == TokKind::kString && IsFString(sub.Text(n))) {
      FStringFindings(cx, sub.Text(n), scope, field_guarded, depth + 1);
      continue;
    }
    if (n.kind() != TokKind::kName) continue;
    if (a > 0 && sub.Text(sub.tokens[a - 1]) == ".") {
      if (sub.Text(n) == "cuda" && a + 1 < sub.tokens.size() && sub.Text(sub.tokens[a + 1]) == "(")
        cx.sink.Add("DT101", m.Line(InSource(m, sub, n)), m.Column(InSource(m, sub, n)), ".cuda()",
                    field_guarded);
      continue;
    }
    std::string resolved;
    const std::size_t b = SubChain(m, sub, a, scope, resolved);
    if (m.Lookup(sub.Text(n), scope) == nullptr && sub.Text(n) != "torch") continue;
    ApiFinding(cx, resolved, InSource(m, sub, n), field_guarded);
    a = b;
  }
}

// The end (past the closing quote) of the string literal that opens at body[i].
std::size_t SkipQuoted(std::string_view body, std::size_t i) {
  const char q = body[i];
  const bool triple = body.substr(i, 3) == std::string(3, q);
  std::size_t j = i + (triple ? 3 : 1);
  for (; j < body.size(); ++j) {
    if (body[j] == '\\') {
      ++j;
    } else if (body[j] == q && (!triple || body.substr(j, 3) == std::string(3, q))) {
      return j + (triple ? 3 : 1);
    } else if (body[j] == '\n' && !triple) {
      return j;
    }
  }
  return body.size();
}

// The replacement field whose expression starts at body[i] (past its `{`): hands the expression
// to `on_expr`, then the fields nested in its format spec (`{x:>{width}}`); returns the position
// past its `}`. `!r` and `:spec` end the expression at bracket depth 0; strings inside it (nested
// quotes, Python 3.12's reused ones) are skipped whole. Python nests fields in specs two deep;
// past that (hostile input) a brace is text, so the recursion stays bounded.
template <class F>
std::size_t ReplacementField(std::string_view body, std::size_t i, F& on_expr, int nest = 0) {
  const std::size_t start = i;
  int depth = 0;
  for (; i < body.size(); ++i) {
    const char c = body[i];
    if (c == '\'' || c == '"') {
      i = SkipQuoted(body, i) - 1;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if ((c == ')' || c == ']' || c == '}') && depth > 0) {
      --depth;
    } else if (c == '}' || (depth == 0 && c == ':') ||
               (depth == 0 && c == '!' && body.substr(i, 2) != "!=")) {
      break;
    }
  }
  on_expr(body.substr(start, i - start));
  // The conversion and the format spec, whose own fields are expressions too.
  while (i < body.size() && body[i] != '}') {
    if (body[i] == '{' && nest < 2)
      i = ReplacementField(body, i + 1, on_expr, nest + 1);
    else
      ++i;
  }
  return i + 1;
}

// Code inside an f-string's replacement fields (`f"{x.cuda()}"`, `f"{torch.cuda.memory_allocated()
// / 1e9:.1f}"`), nested f-strings included; the literal text around them is not code. Only fields
// that mention "cuda" are lexed, so plain f-strings cost one search.
void FStringFindings(PyRuleContext& cx, std::string_view literal, int scope, bool guarded,
                     int depth) {
  std::string_view body = StringBody(literal);
  if (depth > 8 || body.find('{') == std::string_view::npos) return;  // Bounded nesting.
  Lexed sub;
  auto on_expr = [&](std::string_view expr) {
    if (expr.find("cuda") == std::string_view::npos) return;
    LexPython(expr, sub);
    FieldFindings(cx, sub, scope, guarded, depth);
  };
  for (std::size_t i = 0; i < body.size();) {
    if (body[i] != '{') {
      ++i;
    } else if (i + 1 < body.size() && body[i + 1] == '{') {
      i += 2;
    } else {
      i = ReplacementField(body, i + 1, on_expr);
    }
  }
}

// A string that names something CUDA-only to run or build with: a command with
// CUDA_VISIBLE_DEVICES, CUDA architecture flags, nvcc's flags, an NVIDIA tool, the
// CUDA_VISIBLE_DEVICES variable. Returns whether the string was one of those.
bool CommandFinding(PyRuleContext& cx, std::size_t k, const LogicalLine& l, int scope,
                    bool guarded) {
  const PyModel& m = cx.model;
  const Token& t = m.T(k);
  std::string_view body = StringBody(m.Text(t));
  // A command line the script launches: f"CUDA_VISIBLE_DEVICES={gpu} python train.py ...".
  if (body.find("CUDA_VISIBLE_DEVICES=") != std::string_view::npos && !IsProse(m, k, l)) {
    cx.sink.Add("DT406", m.Line(t), m.Column(t), "CUDA_VISIBLE_DEVICES in a command", guarded);
    return true;
  }
  if (body.size() > 200) return false;
  // IsProse walks back to the enclosing call: only for the strings that would be a finding, so
  // a line holding a table of thousands of strings stays linear.
  for (std::string_view key :
       {"TORCH_CUDA_ARCH_LIST", "-gencode", "arch=compute_", "arch=sm_", "CUDA_ARCHITECTURES"}) {
    if (body.find(key) != std::string_view::npos) {
      if (!IsProse(m, k, l)) cx.sink.Add("DT302", m.Line(t), m.Column(t), key, guarded);
      return true;
    }
  }
  // The nvcc entry of extra_compile_args: {"nvcc": [...]} or args["nvcc"] = [...].
  if (body == "nvcc" && k + 1 < l.end &&
      (m.IsOp(m.T(k + 1), ":") ||
       (k > l.begin && m.IsOp(m.T(k - 1), "[") && m.IsOp(m.T(k + 1), "]")))) {
    cx.sink.Add("DT302", m.Line(t), m.Column(t), "nvcc flags", guarded);
    return true;
  }
  // A CUDA source the code builds: sources=["k.cu"] on its own line, srcs = ["csrc/x.cu"] for a
  // CUDAExtension further down, glob("src/cuda/*.cu").
  if ((EndsWith(body, ".cu") || EndsWith(body, ".cuh")) && body.size() > 3 &&
      body.find(' ') == std::string_view::npos && !IsProse(m, k, l)) {
    CudaSourceFinding(cx, t, body, guarded);
    return true;
  }
  // A program the code runs: os.path.join(CUDA_HOME, "bin", "nvcc"), [cuda_dir + "/bin/nvcc",
  // "-V"].
  if (std::string_view tool = NvidiaTool(body); !tool.empty() && !IsProse(m, k, l)) {
    // shutil.which("nvidia-smi") looks for the tool: a test, not a run.
    const std::string callee = m.Callee(m.EnclosingOpen(k, l.begin), l.begin, scope);
    if (!EndsWith(callee, "which") && !EndsWith(callee, "find_executable"))
      cx.sink.Add("DT405", m.Line(t), m.Column(t), tool, guarded);
    return true;
  }
  // os.environ["CUDA_VISIBLE_DEVICES"] = ..., os.environ.setdefault("CUDA_VISIBLE_DEVICES", ...).
  if (body == "CUDA_VISIBLE_DEVICES" && !m.InComparison(k, l.begin, l.end) && !IsProse(m, k, l)) {
    cx.sink.Add("DT406", m.Line(t), m.Column(t), "CUDA_VISIBLE_DEVICES", guarded);
    return true;
  }
  return false;
}

// `parser.add_argument("--use_cuda", default=True)`: a switch that turns CUDA on unless the user
// turns it off (action="store_false" too). A switch off by default (`--cuda`, store_true) or one
// that turns CUDA off (`--no_cuda`, `--cpu`) selects nothing by default.
bool CudaSwitchOnByDefault(const PyModel& m, std::size_t k, const LogicalLine& l, int scope) {
  std::string dest(StringBody(m.Text(m.T(k))));
  if (!dest.starts_with("--") || k == 0 || !m.IsOp(m.T(k - 1), "(")) return false;
  dest = Lower(dest.substr(2));
  for (char& c : dest)
    if (c == '-') c = '_';
  const bool cuda_word = dest.find("cuda") != std::string::npos || dest == "gpu" ||
                         dest == "use_gpu" || dest == "gpu_mode";
  if (!cuda_word || dest.starts_with("no_") || dest.starts_with("disable") ||
      dest.find("cpu") != std::string::npos)
    return false;
  if (!EndsWith(m.Callee(k - 1, l.begin, scope), "add_argument")) return false;
  const std::size_t close = m.Matching(k - 1, l.end);
  for (std::size_t a = k + 1; a + 2 < close; ++a) {
    if (m.Is(m.T(a), "default") && m.IsOp(m.T(a + 1), "=") && m.Is(m.T(a + 2), "True")) return true;
    if (m.Is(m.T(a), "action") && m.IsOp(m.T(a + 1), "=") &&
        StringBody(m.Text(m.T(a + 2))) == "store_false")
      return true;
  }
  return false;
}

void StringFinding(PyRuleContext& cx, std::size_t k, const LineRead& line, bool guarded) {
  const LogicalLine& l = line.l;
  const int scope = line.scope;
  const PyModel& m = cx.model;
  const Token& t = m.T(k);
  if (IsBytes(m.Text(t))) return;
  std::string_view body = StringBody(m.Text(t));
  if (m.IsCudaDeviceString(t)) {
    DeviceStringFinding(cx, k, l, scope, guarded);
    return;
  }
  if (py::IsNccl(body)) {
    if (m.InComparison(k, l.begin, l.end) || IsProse(m, k, l)) return;
    // In an unchecked `init_process_group(...)`: every run is a process group (DT211). Past a
    // stop (`assert torch.cuda.is_available()`) it is still every run's.
    const std::size_t open = m.EnclosingOpen(k, l.begin);
    const bool init = (!guarded || m.StopGuarded(line.li)) &&
                      open != static_cast<std::size_t>(-1) &&
                      EndsWith(m.Callee(open, l.begin, scope), "init_process_group");
    cx.sink.Add(init ? "DT211" : "DT205", m.Line(t), m.Column(t), std::string(m.Text(t)),
                guarded && !init);
    return;
  }
  if (CommandFinding(cx, k, l, scope, guarded) || body.size() > 200) return;
  if (CudaSwitchOnByDefault(m, k, l, scope)) {
    cx.sink.Add("DT120", m.Line(t), m.Column(t), std::string(body) + " (on by default)", guarded);
    return;
  }
  if (const PythonKeyword* r = m.reg().StringRule(body); r != nullptr && !IsProse(m, k, l)) {
    cx.sink.Add(r->code, m.Line(t), m.Column(t), std::string(m.Text(t)), guarded, r->replacement);
    return;
  }
  if (cx.opt.setup_py && !body.empty() && InLiteralContainer(m, k, l)) {
    CheckRequirement(body, cx.sink, m.Line(t), m.Column(t));
  } else if (IsDistributionName(m.reg(), body) && !IsProse(m, k, l)) {
    // check_requirements("onnxruntime-gpu"), pip install at run time: a package only a
    // distribution name can mean (no module of that name), so the string is a requirement.
    CheckRequirement(body, cx.sink, m.Line(t), m.Column(t), guarded);
  }
}

}  // namespace

void StringTokenFindings(PyRuleContext& cx, std::size_t k, const LineRead& line, bool guarded) {
  const PyModel& m = cx.model;
  const LogicalLine& l = line.l;
  std::string_view sb = StringBody(m.Text(m.T(k)));
  if ((sb == "device_ids" || sb == "output_device") && k > l.begin && m.IsOp(m.T(k - 1), "[") &&
      k + 3 < l.end && m.IsOp(m.T(k + 1), "]") && m.IsOp(m.T(k + 2), "=")) {
    // kwargs["device_ids"] = [comm.get_local_rank()]: DDP's keywords, set by key.
    std::size_t v = k + 3;
    bool list = m.IsOp(m.T(v), "[");
    if (list) ++v;
    IntegerDevice(cx, v, l, guarded, std::string(sb) + (list ? "=[" : "="), list ? "]" : "");
    return;
  }
  if (IsFString(m.Text(m.T(k)))) FStringFindings(cx, m.Text(m.T(k)), line.scope, guarded, 0);
  StringFinding(cx, k, line, guarded);
}

bool IsProse(const PyModel& m, std::size_t k, const LogicalLine& l) {
  if (k > l.begin + 1 && m.IsOp(m.T(k - 1), "=") && m.IsName(m.T(k - 2))) {
    std::string kw = Lower(m.Text(m.T(k - 2)));
    if (kw == "help" || kw == "description" || kw == "epilog" || kw == "msg" || kw == "message" ||
        kw == "usage" || kw == "doc" || kw == "title" || kw == "desc")
      return true;
  }
  std::size_t open = m.EnclosingOpen(k, l.begin);
  if (open == static_cast<std::size_t>(-1) || !m.IsOp(m.T(open), "(") || open == l.begin) {
    return m.First(l) == "raise" || m.First(l) == "assert";
  }
  const Token& callee = m.T(open - 1);
  if (!m.IsName(callee)) return false;
  std::string c = Lower(m.Text(callee));
  static const char* kProse[] = {
      "print",         "warn",      "warning",  "info",   "debug",
      "error",         "exception", "critical", "log",    "fatal",
      "write",         "echo",      "secho",    "format", "add_argument_group",
      "assertionerror"};
  for (const char* p : kProse)
    if (c == p) return true;
  return EndsWith(c, "error") || EndsWith(c, "exception") || EndsWith(c, "warning");
}

bool InLiteralContainer(const PyModel& m, std::size_t k, const LogicalLine& l) {
  std::size_t open = m.EnclosingOpen(k, l.begin);
  if (open == static_cast<std::size_t>(-1)) return false;
  if (m.IsOp(m.T(open), "[") || m.IsOp(m.T(open), "{"))
    return open == l.begin || !m.IsName(m.T(open - 1));
  // A tuple: an opening parenthesis not preceded by a callee.
  return open == l.begin || !(m.IsName(m.T(open - 1)) || m.IsClose(m.T(open - 1)));
}

}  // namespace dt::scan
