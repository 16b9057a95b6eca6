// Device rules: where code places tensors and models on a CUDA device (`.cuda()`, `.to(0)`,
// "cuda" strings, DDP's device indexes, `device_map`), and the CUDA-only values that stand in for
// a device (the GPU count as a value).
#include <string>
#include <string_view>

#include "scan/python_rules.h"

namespace dt::scan {

namespace {

// Whether string token k is a parameter default of a function that compares the parameter with
// "cuda" (`def bias_act(x, impl="cuda")` ... `if impl == "cuda" and x.device.type == "cuda"`): a
// dispatch key, not a device placement. A parameter named for a device stays a device default.
bool IsDispatchDefault(const PyModel& m, std::size_t k, std::size_t li, const LogicalLine& l) {
  TokenText head = m.Head(l);
  if (head != "def" || k < l.begin + 2 || !m.IsOp(m.T(k - 1), "=") || !m.IsName(m.T(k - 2)))
    return false;
  TokenText param = m.Text(m.T(k - 2));
  std::string lower = Lower(param);
  if (py::Contains(lower, "device") || lower == "dev" || py::Contains(lower, "map_location"))
    return false;
  const auto& lines = m.lines();
  for (std::size_t j = li + 1; j < lines.size() && lines[j].indent > l.indent; ++j) {
    const auto& body = lines[j];
    for (std::size_t t = body.begin; t + 2 < body.end; ++t)
      if (m.IsName(m.T(t)) && m.Text(m.T(t)) == param &&
          (m.IsOp(m.T(t + 1), "==") || m.IsOp(m.T(t + 1), "!=")) &&
          m.IsCudaDeviceString(m.T(t + 2)))
        return true;
  }
  return false;
}

// `SUPPORTED = ("cuda", "mps", "cpu")`: a list of device names that includes another backend is a
// set of options, not a placement.
bool InDeviceNameList(const PyModel& m, std::size_t k, const LogicalLine& l) {
  std::size_t open = m.EnclosingOpen(k, l.begin);
  if (open == static_cast<std::size_t>(-1) || !InLiteralContainer(m, k, l)) return false;
  std::size_t close = m.Matching(open, l.end);
  for (std::size_t j = open + 1; j < close; ++j) {
    if (m.T(j).kind() != TokKind::kString || j == k) continue;
    std::string_view b = StringBody(m.Text(m.T(j)));
    if (b == "mps" || b == "cpu" || b == "xpu") return true;
  }
  return false;
}

// Whether string token k is an element of a `choices=[...]` list; sets `has_mps`.
bool InChoices(const PyModel& m, std::size_t k, const LogicalLine& l, std::size_t& at,
               bool& has_mps) {
  std::size_t open = m.EnclosingOpen(k, l.begin);
  if (open == static_cast<std::size_t>(-1) || open < l.begin + 2) return false;
  if (!m.IsOp(m.T(open - 1), "=") || !m.Is(m.T(open - 2), "choices")) return false;
  at = open - 2;
  has_mps = false;
  std::size_t close = m.Matching(open, l.end);
  for (std::size_t j = open + 1; j < close; ++j)
    if (m.T(j).kind() == TokKind::kString && StartsWith(StringBody(m.Text(m.T(j))), "mps"))
      has_mps = true;
  return true;
}

}  // namespace

void NumpyMovedBeforeCast(PyRuleContext& cx, std::size_t k, const LogicalLine& l, bool guarded) {
  const PyModel& m = cx.model;
  const TokenText name = m.Text(m.T(k));
  if (k + 1 >= l.end || !m.IsOp(m.T(k + 1), "(")) return;
  // `torch.tensor(np.linspace(0, 1, n))` copies numpy's dtype as from_numpy does.
  const bool factory = (name == "tensor" || name == "as_tensor") && k >= 2 &&
                       m.IsOp(m.T(k - 1), ".") && m.IsName(m.T(k - 2)) &&
                       (m.Text(m.T(k - 2)) == "torch" || m.Text(m.T(k - 2)) == "th");
  if (!factory && (name.find("numpy") == std::string_view::npos || !name.starts_with("from_")))
    return;
  // from_numpy(arr) . to ( device ) [index]* . float ( ...
  std::size_t j = m.Matching(k + 1, l.end) + 1;
  if (j + 2 >= l.end || !m.IsOp(m.T(j), ".") ||
      (!m.Is(m.T(j + 1), "to") && !m.Is(m.T(j + 1), "cuda")) || !m.IsOp(m.T(j + 2), "("))
    return;
  const std::size_t to_close = m.Matching(j + 2, l.end);
  for (std::size_t a = j + 3; a < to_close; ++a)  // `.to(torch.float32)` casts: no move first.
    if (m.IsName(m.T(a)) && (m.Text(m.T(a)).starts_with("float") || m.Is(m.T(a), "dtype"))) return;
  // `from_numpy(np.random.randn(1, 512)).to(device)`: numpy's samplers and ranges make float64,
  // moved as they are.
  const std::size_t arg_close = m.Matching(k + 1, l.end);
  bool numpy = false, sampled = false;
  for (std::size_t a = k + 2; a < arg_close; ++a) {
    const TokenText w = m.Text(m.T(a));
    if (w == "astype" || w == "dtype" || w.starts_with("float")) {
      sampled = false;
      break;
    }
    numpy |= w == "np" || w == "numpy";
    sampled |= numpy && m.IsOp(m.T(a - 1), ".") &&
               (w == "randn" || w == "rand" || w == "normal" || w == "uniform" ||
                w == "standard_normal" || w == "linspace" || w == "logspace");
  }
  if (factory && !sampled) return;
  j = to_close + 1;
  while (j < l.end && m.IsOp(m.T(j), "[")) j = m.Matching(j, l.end) + 1;
  if (j + 2 >= l.end || !m.IsOp(m.T(j), ".") || !m.IsOp(m.T(j + 2), "(")) {
    if (sampled)
      cx.sink.Add("DT204", m.Line(m.T(k)), m.Column(m.T(k)),
                  std::string(name) + "(numpy float64 values) moved to the device", guarded);
    return;
  }
  const TokenText cast = m.Text(m.T(j + 1));
  bool to_float = cast == "float" || cast == "half";
  if (cast == "type" || cast == "to") {
    const std::size_t close = m.Matching(j + 2, l.end);
    for (std::size_t a = j + 3; a < close && !to_float; ++a)
      to_float = m.IsName(m.T(a)) && (m.Text(m.T(a)) == "float32" || m.Text(m.T(a)) == "float16" ||
                                      m.Text(m.T(a)) == "bfloat16" || m.Text(m.T(a)) == "float");
  }
  if (to_float)
    cx.sink.Add("DT204", m.Line(m.T(k)), m.Column(m.T(k)),
                std::string(name) + "(...) moved to the device before its cast to float32",
                guarded);
}

void AttributeFindings(PyRuleContext& cx, std::size_t k, const LogicalLine& l, bool guarded) {
  const PyModel& m = cx.model;
  const Token& t = m.T(k);
  const bool call = k + 1 < l.end && m.IsOp(m.T(k + 1), "(");
  if (!call) return;
  NumpyMovedBeforeCast(cx, k, l, guarded);
  if (m.Text(t) == "cuda") {
    cx.sink.Add("DT101", m.Line(t), m.Column(t), ".cuda()", guarded);
  } else if (m.Text(t) == "double" && k + 2 < l.end && m.IsOp(m.T(k + 2), ")")) {
    cx.sink.Add("DT204", m.Line(t), m.Column(t), ".double()", guarded);
  } else if (m.Text(t) == "to") {
    // Tensor.to(device=None, dtype=None, ...): the device is the first positional argument or
    // the `device=` keyword, wherever it stands.
    const std::size_t close = m.Matching(k + 1, l.end);
    int depth = 0;
    for (std::size_t a = k + 2; a + 1 < close; ++a) {
      if (m.IsOpen(m.T(a))) ++depth;
      if (m.IsClose(m.T(a))) --depth;
      if (depth == 0 && m.IsName(m.T(a)) && m.Text(m.T(a)) == "device" && m.IsOp(m.T(a + 1), "=") &&
          (m.IsOp(m.T(a - 1), "(") || m.IsOp(m.T(a - 1), ","))) {
        IntegerDevice(cx, a + 2, l, guarded, ".to(device=");
        return;
      }
    }
    IntegerDevice(cx, k + 2, l, guarded, ".to(");
  }
}

void IntegerDevice(PyRuleContext& cx, std::size_t b, const LogicalLine& l, bool guarded,
                   std::string_view what, std::string_view close) {
  const PyModel& m = cx.model;
  if (b >= l.end) return;
  std::size_t e = b;
  int depth = 0;
  for (; e < l.end; ++e) {
    if (m.IsOpen(m.T(e))) ++depth;
    if (m.IsClose(m.T(e)) && --depth < 0) break;
    if (depth == 0 && m.IsOp(m.T(e), ",")) break;
  }
  if (e == b) return;
  if (e == b + 1 && m.T(b).kind() == TokKind::kNumber && py::IsDigits(m.Text(m.T(b)))) {
    cx.sink.Add("DT113", m.Line(m.T(b)), m.Column(m.T(b)),
                std::string(what) + std::string(m.Text(m.T(b))) + std::string(close), guarded);
    return;
  }
  // NAME(.NAME)* only, ending in an index-like name; or a getter of one
  // (`comm.get_local_rank()`).
  std::size_t name_end = e;
  if (e >= b + 3 && m.IsOp(m.T(e - 1), ")") && m.IsOp(m.T(e - 2), "(")) name_end = e - 2;
  for (std::size_t k = b; k < name_end; ++k)
    if (!(m.IsName(m.T(k)) || m.IsOp(m.T(k), "."))) return;
  if (name_end == b || !m.IsName(m.T(name_end - 1))) return;
  std::string last = Lower(m.Text(m.T(name_end - 1)));
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
      for (std::size_t k = b; k < e; ++k) idx.append(m.Text(m.T(k)));
      cx.sink.Add("DT113", m.Line(m.T(b)), m.Column(m.T(b)),
                  std::string(what) + idx + std::string(close), guarded);
      return;
    }
}

void DeviceMap(PyRuleContext& cx, std::size_t k, const LogicalLine& l, bool guarded) {
  const PyModel& m = cx.model;
  std::size_t open = k + 2;
  std::size_t close = m.Matching(open, l.end);
  for (std::size_t j = open + 1; j < close; ++j) {
    const Token& t = m.T(j);
    if (m.Text(t) == "_dualtrack_device" && j + 1 < close && m.IsOp(m.T(j + 1), "(")) {
      j = m.Matching(j + 1, close);  // `dualtrack fix`'s run-time choice: cuda:N only with CUDA.
      continue;
    }
    std::string lower = Lower(m.Text(t));
    if ((t.kind() == TokKind::kName && (lower == "local_rank" || lower == "int" ||
                                        py::Contains(lower, "gpu") || lower == "rank")) ||
        (t.kind() == TokKind::kString && Lower(StringBody(m.Text(t))) == "local_rank") ||
        (t.kind() == TokKind::kNumber && py::IsDigits(m.Text(t)) && j > open + 1 &&
         m.IsOp(m.T(j - 1), ":"))) {
      cx.sink.Add("DT113", m.Line(m.T(k)), m.Column(m.T(k)), "device_map", guarded);
      return;
    }
  }
}

// "cuda" / "cuda:0" as a value: a placement (DT102), unless it is compared, prose, an option's
// choices, a dispatch default or a list of device names; autocast's device type is DT115.
void DeviceStringFinding(PyRuleContext& cx, std::size_t k, const LogicalLine& l, int scope,
                         bool guarded) {
  const PyModel& m = cx.model;
  const Token& t = m.T(k);
  std::size_t li = static_cast<std::size_t>(&l - m.lines().data());
  if (m.InComparison(k, l.begin, l.end) || IsProse(m, k, l)) return;
  std::size_t at = 0;
  bool has_mps = false;
  if (InChoices(m, k, l, at, has_mps)) {
    if (!has_mps)
      cx.sink.Add("DT112", m.Line(m.T(at)), m.Column(m.T(at)), "the option's choices", guarded);
    return;
  }
  if (IsDispatchDefault(m, k, li, l) || InDeviceNameList(m, k, l)) return;
  // `torch.autocast("cuda")`, `torch.amp.GradScaler("cuda")`: a device type for mixed
  // precision, not a placement; without CUDA they warn and disable themselves (checked against
  // torch in tests/scan/test_registry_facts.py), so the code runs, in full precision.
  const std::string callee = m.Callee(m.EnclosingOpen(k, l.begin), l.begin, scope);
  if (StartsWith(callee, "torch.") &&
      (EndsWith(callee, ".autocast") || EndsWith(callee, ".GradScaler"))) {
    cx.sink.Add("DT115", m.Line(t), m.Column(t), callee + "(" + std::string(m.Text(t)) + ")",
                guarded,
                "torch.autocast(device_type=device.type) / torch.amp.GradScaler(device.type)");
    return;
  }
  cx.sink.Add("DT102", m.Line(t), m.Column(t), std::string(m.Text(t)), guarded);
}

bool CountAsValue(const PyModel& m, std::size_t k, std::size_t open, const LogicalLine& l) {
  std::size_t close = m.Matching(open, l.end);
  if (close + 1 < l.end) {
    const Token& n = m.T(close + 1);
    if (n.kind() == TokKind::kOp && (m.Text(n) == "==" || m.Text(n) == "!=" || m.Text(n) == ">" ||
                                     m.Text(n) == ">=" || m.Text(n) == "<" || m.Text(n) == "<="))
      return false;
  }
  if (k > l.begin && (m.Is(m.T(k - 1), "not") || m.Is(m.T(k - 1), "if") ||
                      m.Is(m.T(k - 1), "and") || m.Is(m.T(k - 1), "or")))
    return false;
  TokenText head = m.Head(l);
  if ((head == "if" || head == "elif" || head == "while" || head == "assert") && k < m.FindColon(l))
    return false;
  return true;
}

}  // namespace dt::scan
