// Settings in the semantic model (python_settings.h), and values judged where they are used: a CUDA
// value read only behind checks is as guarded as the lines that read it.
#include "scan/python_settings.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "scan/python_model.h"

namespace dt::scan {

namespace {

// Names that hold a parsed namespace in a function that receives it (`def main(args):`).
bool IsNamespaceParam(std::string_view name) {
  return name == "args" || name == "opt" || name == "opts" || name == "options" ||
         name == "hparams" || name == "flags" || name == "FLAGS";
}

// The literal value of tokens [b, e) (a number, optionally negative; True, False, None; a string),
// as an option's default; kind kUnknown for any other expression.
PyValue Literal(const PyModel& m, std::size_t b, std::size_t e) {
  PyValue v;
  if (e == b + 2 && m.IsOp(m.T(b), "-") && m.T(b + 1).kind() == TokKind::kNumber) {
    v.kind = PyValue::kNumber;
    v.number = -std::strtod(std::string(m.Text(m.T(b + 1))).c_str(), nullptr);
    return v;
  }
  if (e != b + 1) return v;
  const Token& t = m.T(b);
  if (t.kind() == TokKind::kNumber) {
    v.kind = PyValue::kNumber;
    v.number = std::strtod(std::string(m.Text(t)).c_str(), nullptr);
  } else if (m.Is(t, "True") || m.Is(t, "False")) {
    v.kind = PyValue::kBool;
    v.number = m.Is(t, "True") ? 1 : 0;
  } else if (m.Is(t, "None")) {
    v.kind = PyValue::kNone;
  } else if (t.kind() == TokKind::kString && !IsBytes(m.Text(t)) && !IsFString(m.Text(t))) {
    v.kind = PyValue::kString;
    v.text = StringBody(m.Text(t));
  }
  return v;
}

// `os.getenv("PKG_JIT")` / `os.environ.get("PKG_JIT", "0")` starting at b: the variable's value
// when it is unset (None, or the literal default), and the token after the call in `after`;
// kUnknown otherwise. A launcher's variable (`RANK`) is a launch test, a CUDA one (`FORCE_CUDA`) a
// build switch (CondEvaluator::Subject): neither is an opt-in, so they are left out, as is a
// number default (`os.environ.get("LOCAL_RANK", -1)`).
PyValue EnvRead(const PyModel& m, std::size_t b, std::size_t e, std::size_t& after) {
  PyValue v;
  std::size_t k = b;
  if (k + 3 >= e || !m.Is(m.T(k), "os") || !m.IsOp(m.T(k + 1), ".")) return v;
  if (m.Is(m.T(k + 2), "getenv")) {
    k += 3;
  } else if (k + 5 < e && m.Is(m.T(k + 2), "environ") && m.IsOp(m.T(k + 3), ".") &&
             m.Is(m.T(k + 4), "get")) {
    k += 5;
  } else {
    return v;
  }
  if (!m.IsOp(m.T(k), "(") || k + 1 >= e || m.T(k + 1).kind() != TokKind::kString) return v;
  const std::size_t close = m.Matching(k, e);
  if (close >= e) return v;
  const std::string name = Upper(StringBody(m.Text(m.T(k + 1))));
  for (std::string_view word : {"CUDA", "RANK", "WORLD", "SLURM", "MASTER", "LOCAL", "NODE", "GPU"})
    if (name.find(word) != std::string::npos) return v;
  if (close == k + 2) {
    v.kind = PyValue::kNone;
  } else if (m.IsOp(m.T(k + 2), ",")) {
    v = Literal(m, k + 3, close);
    if (v.kind != PyValue::kString && v.kind != PyValue::kNone) v.kind = PyValue::kUnknown;
  }
  after = close + 1;
  return v;
}

// Calls fn(key, v, ve) for each `key=value` at the top level of the call whose brackets are
// [open, close]: the value is tokens [v, ve), up to the next comma at its depth.
template <class Fn>
void ForEachKeyword(const PyModel& m, std::size_t open, std::size_t close, Fn fn) {
  int depth = 0;
  for (std::size_t k = open + 1; k < close; ++k) {
    if (m.IsOpen(m.T(k))) ++depth;
    if (m.IsClose(m.T(k))) --depth;
    if (depth != 0 || !m.IsName(m.T(k)) || k + 1 >= close || !m.IsOp(m.T(k + 1), "=")) continue;
    std::size_t ve = k + 2;
    for (int d = 0; ve < close; ++ve) {
      if (m.IsOpen(m.T(ve))) ++d;
      if (m.IsClose(m.T(ve))) --d;
      if (d == 0 && m.IsOp(m.T(ve), ",")) break;
    }
    fn(k, k + 2, ve);
    k = ve - 1;
  }
}

}  // namespace

bool PyValue::Truthy() const {
  switch (kind) {
    case kNumber:
    case kBool:
      return number != 0;
    case kString:
      return !text.empty();
    case kNone:
      return false;
    case kUnknown:
      break;
  }
  return false;
}

// One `add_argument(...)` call whose bracket opens at `open`: its destination and default.
void PySettings::Read(const PyModel& m, std::size_t open, std::size_t e, std::uint32_t first_line,
                      std::uint32_t last_line) {
  const std::string dest = Declared(m, open, e);
  if (dest.empty()) return;  // A positional argument, or a name built at run time.
  PyValue def;
  def.kind = PyValue::kNone;  // argparse's default without `default=`.
  bool has_default = false;
  ForEachKeyword(m, open, m.Matching(open, e), [&](std::size_t k, std::size_t v, std::size_t ve) {
    const TokenText key = m.Text(m.T(k));
    if (key == "default") {
      def = Literal(m, v, ve);
      has_default = true;
    } else if (key == "action" && ve == v + 1 && !has_default) {
      const std::string_view action = StringBody(m.Text(m.T(v)));
      if (action == "store_true") def = PyValue{PyValue::kBool, 0, {}};
      if (action == "store_false") def = PyValue{PyValue::kBool, 1, {}};
    }
  });
  options_[dest] = def;
  for (std::uint32_t l = first_line; l <= last_line; ++l) option_lines_.push_back(l);
}

namespace {

// Calls that build a configuration from keywords: `HParams(fp16_run=False, ...)`,
// `EasyDict(...)`, `dict(...)`, `Namespace(...)`, `parser.set_defaults(...)`.
bool IsConfigConstructor(std::string_view name) {
  for (std::string_view c : {"HParams", "EasyDict", "edict", "AttrDict", "dict", "Namespace",
                             "SimpleNamespace", "ConfigDict", "set_defaults", "CfgNode"})
    if (name == c) return true;
  return false;
}

// A class whose fields are settings: its name says so (`TrainConfig`, `ModelArgs`).
bool IsConfigClassName(std::string_view name) {
  const std::string lower = Lower(name);
  for (std::string_view w : {"config", "args", "options", "params", "settings", "cfg"})
    if (lower.find(w) != std::string::npos) return true;
  return false;
}

}  // namespace

// Settings declared as data rather than options: the literal keywords of a config constructor
// and the literal fields of a class (annotated fields of any class, as dataclasses and pydantic
// models declare them; plain ones in a class named as a config). Their names are settings the
// run reads as `cfg.name`; a falsy default is an opt-in elsewhere in the project.
void PySettings::CollectData(const PyModel& m) {
  for (std::size_t li = 0; li < m.lines().size(); ++li) {
    const LogicalLine& l = m.lines()[li];
    const std::uint32_t first = m.Line(m.T(l.begin)), last = m.Line(m.T(l.end - 1));
    const int scope = m.ScopeOf(li);
    if (scope >= 0 && !m.scope(scope).is_def && m.IsName(m.T(l.begin)) && l.end - l.begin >= 3) {
      // A class body's `name: T = literal` or, in a config class, `name = literal`.
      std::size_t eq = l.begin + 1;
      const bool annotated = m.IsOp(m.T(eq), ":");
      if (annotated)
        while (eq < l.end && !m.IsOp(m.T(eq), "=")) ++eq;
      if (eq < l.end && m.IsOp(m.T(eq), "=") &&
          (annotated || IsConfigClassName(m.scope(scope).name))) {
        PyValue v = Literal(m, eq + 1, l.end);
        // A dataclass `field(default=16, metadata=...)` holds its default.
        if (v.kind == PyValue::kUnknown && eq + 2 < l.end && m.Is(m.T(eq + 1), "field") &&
            m.IsOp(m.T(eq + 2), "("))
          ForEachKeyword(m, eq + 2, m.Matching(eq + 2, l.end),
                         [&](std::size_t a, std::size_t kv, std::size_t ve) {
                           if (m.Is(m.T(a), "default")) v = Literal(m, kv, ve);
                         });
        if (v.kind != PyValue::kUnknown) {
          data_[std::string(m.Text(m.T(l.begin)))] = v;
          for (std::uint32_t p = first; p <= last; ++p) option_lines_.push_back(p);
        }
      }
      continue;
    }
    for (std::size_t k = l.begin; k + 1 < l.end; ++k) {
      if (!m.IsName(m.T(k)) || !m.IsOp(m.T(k + 1), "(") || !IsConfigConstructor(m.Text(m.T(k))))
        continue;
      ForEachKeyword(m, k + 1, m.Matching(k + 1, l.end),
                     [&](std::size_t a, std::size_t v, std::size_t ve) {
                       if (!(m.IsOp(m.T(a - 1), ",") || m.IsOp(m.T(a - 1), "("))) return;
                       const PyValue value = Literal(m, v, ve);
                       if (value.kind != PyValue::kUnknown)
                         data_[std::string(m.Text(m.T(a)))] = value;
                     });
      break;
    }
  }
}

void PySettings::Collect(const PyModel& m) {
  CollectData(m);
  // Module-level `JIT = os.getenv("PKG_JIT")`: an environment switch, unset by default.
  if (m.source().find("getenv") != std::string_view::npos ||
      m.source().find("environ.get") != std::string_view::npos) {
    for (std::size_t li = 0; li < m.lines().size(); ++li) {
      const LogicalLine& l = m.lines()[li];
      if (m.ScopeOf(li) != 0 || l.end - l.begin < 6 || !m.IsName(m.T(l.begin)) ||
          !m.IsOp(m.T(l.begin + 1), "="))
        continue;
      std::size_t after = 0;
      const PyValue v = EnvRead(m, l.begin + 2, l.end, after);
      if (v.kind != PyValue::kUnknown && after == l.end) env_[m.Text(m.T(l.begin))] = v;
    }
  }
  // Most files parse no options: one search of the source decides.
  const bool argparse = m.source().find("add_argument") != std::string_view::npos;
  const bool configurator = m.source().find("exec(") != std::string_view::npos;
  if (!argparse && !configurator) return;
  std::vector<std::size_t> module_settings;  // Module-level `NAME = literal` lines, in order.
  for (std::size_t li = 0; li < m.lines().size(); ++li) {
    const LogicalLine& l = m.lines()[li];
    const std::uint32_t first = m.Line(m.T(l.begin)), last = m.Line(m.T(l.end - 1));
    if (argparse) {
      for (std::size_t k = l.begin; k + 1 < l.end; ++k) {
        if (m.IsName(m.T(k)) && m.Text(m.T(k)) == "add_argument" && m.IsOp(m.T(k + 1), "("))
          Read(m, k + 1, l.end, first, last);
        // NAME = ....parse_args(...), NAME, rest = ....parse_known_args(...)
        if (m.IsName(m.T(k)) &&
            (m.Text(m.T(k)) == "parse_args" || m.Text(m.T(k)) == "parse_known_args") &&
            m.IsName(m.T(l.begin)) &&
            (m.IsOp(m.T(l.begin + 1), "=") || m.IsOp(m.T(l.begin + 1), ",")))
          namespaces_.insert(m.Text(m.T(l.begin)));
      }
    }
    if (!configurator || l.indent != 0) continue;
    if (l.end - l.begin >= 3 && m.IsName(m.T(l.begin)) && m.IsOp(m.T(l.begin + 1), "=") &&
        Literal(m, l.begin + 2, l.end).kind != PyValue::kUnknown) {
      module_settings.push_back(li);
    } else if (m.First(l) == "exec" && l.end - l.begin > 3 && m.Text(m.T(l.begin + 2)) == "open") {
      // `exec(open('configurator.py').read())`: the module settings before it are the command
      // line's defaults (nanoGPT's configurator); a later `NAME = ...` is not overridden.
      for (std::size_t s : module_settings) {
        const LogicalLine& sl = m.lines()[s];
        for (std::uint32_t p = m.Line(m.T(sl.begin)); p <= m.Line(m.T(sl.end - 1)); ++p)
          option_lines_.push_back(p);
      }
      module_settings.clear();
    }
  }
  if (!options_.empty()) {
    // Attributes assigned in the file (`args.distributed = args.world_size > 1`) are no longer
    // their option's default.
    for (const LogicalLine& l : m.lines()) {
      if (l.end - l.begin >= 4 && m.IsName(m.T(l.begin)) && m.IsOp(m.T(l.begin + 1), ".") &&
          m.IsName(m.T(l.begin + 2)) && m.IsOp(m.T(l.begin + 3), "="))
        options_.erase(std::string(m.Text(m.T(l.begin + 2))));
    }
  }
  std::sort(option_lines_.begin(), option_lines_.end());
}

const PyValue* PySettings::Default(const PyModel& m, std::size_t k) const {
  // NS . dest, NS a parsed namespace (or a parameter named like one).
  if (options_.empty() || k < 2 || !m.IsOp(m.T(k - 1), ".") || !m.IsName(m.T(k - 2)))
    return nullptr;
  if (k >= 3 && m.IsOp(m.T(k - 3), ".")) return nullptr;  // a.args.x
  const TokenText ns = m.Text(m.T(k - 2));
  if (!namespaces_.count(ns) && !IsNamespaceParam(ns)) return nullptr;
  auto it = options_.find(std::string(m.Text(m.T(k))));
  return it == options_.end() ? nullptr : &it->second;
}

std::string_view PySettings::DefaultString(const PyModel& m, std::size_t b, std::size_t e) const {
  if (e == b + 1 && m.T(b).kind() == TokKind::kString && !IsFString(m.Text(m.T(b))))
    return StringBody(m.Text(m.T(b)));
  if (e != b + 3 || !m.IsName(m.T(b)) || !m.IsOp(m.T(b + 1), ".") || !m.IsName(m.T(b + 2)))
    return {};
  const PyValue* def = Default(m, b + 2);
  return def != nullptr && def->kind == PyValue::kString ? def->text : std::string_view();
}

std::optional<bool> PySettings::Test(const PyModel& m, std::size_t b, std::size_t e) const {
  // An environment switch, read in the test or bound to a module-level name before it.
  std::size_t after = b;
  if (const PyValue env = EnvRead(m, b, e, after); env.kind != PyValue::kUnknown)
    return Compare(m, env, after, e);
  if (!env_.empty() && m.IsName(m.T(b)) && (b + 1 == e || !m.IsOp(m.T(b + 1), "."))) {
    if (auto it = env_.find(m.Text(m.T(b))); it != env_.end())
      return Compare(m, it->second, b + 1, e);
  }
  // `NS.dest`, `NS.dest is [not] None`, `NS.dest <op> literal`, under the default.
  if (e < b + 3 || !m.IsName(m.T(b)) || !m.IsOp(m.T(b + 1), ".") || !m.IsName(m.T(b + 2)))
    return std::nullopt;
  const PyValue* def = Default(m, b + 2);
  if (def == nullptr && b + 3 < e &&
      (m.Is(m.T(b + 3), "in") || m.Is(m.T(b + 3), "not") || m.IsOp(m.T(b + 3), "==") ||
       m.IsOp(m.T(b + 3), "!="))) {
    // A field this file declares as data (`bits: int = field(default=16)`), tested for equality
    // or membership (`training_args.bits in [4, 8]`): the branch of another value is an opt-in.
    if (auto it = data_.find(std::string(m.Text(m.T(b + 2)))); it != data_.end()) def = &it->second;
  }
  if (def == nullptr || def->kind == PyValue::kUnknown) return std::nullopt;
  return Compare(m, *def, b + 3, e);
}

// Whether the rest [k, e) of a test on a setting holds with the setting's default `def`: nothing
// (its truth), `is [not] None`, or a comparison with a literal.
std::optional<bool> PySettings::Compare(const PyModel& m, const PyValue& value, std::size_t k,
                                        std::size_t e) {
  const PyValue* def = &value;
  bool holds;
  if (k == e) {
    holds = def->Truthy();
  } else if (m.Is(m.T(k), "in") || (m.Is(m.T(k), "not") && k + 1 < e && m.Is(m.T(k + 1), "in"))) {
    // `in [4, 8]` / `not in ("a", "b")`: a literal list, tuple or set.
    const bool negated = m.Is(m.T(k), "not");
    const std::size_t open = k + (negated ? 2 : 1);
    if (open >= e ||
        !(m.IsOp(m.T(open), "[") || m.IsOp(m.T(open), "(") || m.IsOp(m.T(open), "{")) ||
        m.Matching(open, e) + 1 != e)
      return std::nullopt;
    bool any = false;
    for (std::size_t a = open + 1; a < e - 1;) {
      std::size_t z = a;
      while (z < e - 1 && !m.IsOp(m.T(z), ",")) ++z;
      const PyValue item = Literal(m, a, z);
      if (item.kind == PyValue::kUnknown || item.kind != def->kind) return std::nullopt;
      any = any ||
            (item.kind == PyValue::kString ? item.text == def->text : item.number == def->number);
      a = z + 1;
    }
    holds = any != negated;
  } else if (m.Is(m.T(k), "is")) {
    const bool negated = k + 1 < e && m.Is(m.T(k + 1), "not");
    if (k + (negated ? 2 : 1) + 1 != e || !m.Is(m.T(e - 1), "None")) return std::nullopt;
    holds = (def->kind == PyValue::kNone) != negated;
  } else if (m.T(k).kind() == TokKind::kOp) {
    const TokenText op = m.Text(m.T(k));
    const PyValue v = Literal(m, k + 1, e);
    if (v.kind == PyValue::kUnknown) return std::nullopt;
    // A device string keeps its meaning: `args.device == "cuda"` is a check of the device.
    if (v.kind == PyValue::kString && (StartsWith(v.text, "cuda") || py::IsNccl(v.text)))
      return std::nullopt;
    if (v.kind == PyValue::kNumber && def->kind == PyValue::kNumber) {
      const double a = def->number, c = v.number;
      if (op == "==")
        holds = a == c;
      else if (op == "!=")
        holds = a != c;
      else if (op == "<")
        holds = a < c;
      else if (op == "<=")
        holds = a <= c;
      else if (op == ">")
        holds = a > c;
      else if (op == ">=")
        holds = a >= c;
      else
        return std::nullopt;
    } else if (v.kind == PyValue::kString &&
               (def->kind == PyValue::kString || def->kind == PyValue::kNone) &&
               (op == "==" || op == "!=")) {
      holds = (def->kind == PyValue::kString && def->text == v.text) == (op == "==");
    } else {
      return std::nullopt;
    }
  } else {
    return std::nullopt;
  }
  return holds;
}

namespace {

// The one parameter of the def at line li whose default names CUDA (`backend="nccl"`), with the
// function's scope; scope -1 when none or several do.
std::pair<std::string_view, int> DefaultReadInBody(const PyModel& m, std::size_t li) {
  const LogicalLine& l = m.lines()[li];
  int fn = -1;  // The function the def line opens.
  for (std::size_t s = 1; s < m.scopes().size() && fn < 0; ++s)
    if (m.scopes()[s].is_def && m.scopes()[s].def_line == li) fn = static_cast<int>(s);
  std::size_t open = l.begin;
  while (open < l.end && !m.IsOp(m.T(open), "(")) ++open;
  if (fn < 0 || open >= l.end) return {{}, -1};
  std::string_view found;
  int count = 0;  // Parameters whose default names CUDA: the line's findings are theirs.
  ForEachKeyword(m, open, m.Matching(open, l.end),
                 [&](std::size_t a, std::size_t v, std::size_t ve) {
                   if ((m.IsOp(m.T(a - 1), "(") || m.IsOp(m.T(a - 1), ",")) && m.Maybe(v, ve)) {
                     found = m.Text(m.T(a));
                     ++count;
                   }
                 });
  if (count != 1) return {{}, -1};
  return {found, fn};
}

// Names that hold a parsed command line or a config (`self.args`, `opt`, `hps`).
bool IsNamespaceWord(std::string_view part) {
  return part == "args" || part == "opt" || part == "opts" || part == "hparams" || part == "hps" ||
         part == "flags" || part == "FLAGS" || part == "options" || part == "cfg" ||
         part == "config";
}

}  // namespace

// The end of the dotted chain `a.b.NAME` that starts at name token k (before e) when it passes
// through a namespace word before its last part; k otherwise.
std::size_t PyModel::NamespaceChain(std::size_t k, std::size_t e) const {
  bool through_namespace = false;
  std::size_t j = k;
  while (j + 2 < e + 1 && IsName(T(j))) {
    if (j + 2 >= e || !IsOp(T(j + 1), ".") || !IsName(T(j + 2))) break;
    through_namespace |= IsNamespaceWord(Text(T(j)));
    j += 2;
  }
  return through_namespace && j > k ? j + 1 : k;
}

std::optional<bool> PyModel::OptionTest(std::size_t b, std::size_t e) const {
  if (IsLaunchFlagTest(b, e)) return false;
  if (auto holds = settings_.Test(*this, b, e)) return holds;
  return ProjectFlagTest(b, e);
}

bool PyModel::IsLaunchFlagTest(std::size_t b, std::size_t e) const {
  if (opt_.cuda == nullptr || opt_.cuda->launch_flags.empty() || e < b + 3) return false;
  return NamespaceChain(b, e) == e &&
         opt_.cuda->launch_flags.find(Text(T(e - 1))) != opt_.cuda->launch_flags.end();
}

std::optional<bool> PyModel::ProjectFlagTest(std::size_t b, std::size_t e) const {
  if (opt_.cuda == nullptr || opt_.cuda->off_flags.empty() || e < b + 3) return std::nullopt;
  // A bare chain `a.args.NAME`, its last part an option off by default elsewhere.
  if (NamespaceChain(b, e) != e) return std::nullopt;
  if (opt_.cuda->off_flags.find(Text(T(e - 1))) == opt_.cuda->off_flags.end()) return std::nullopt;
  return false;
}

std::optional<bool> PyModel::ParamFlagTest(std::size_t b, std::size_t e, int scope) const {
  if (scope <= 0) return std::nullopt;
  if (e == b + 1 && IsName(T(b))) {
    // The nearest function that has the name as a parameter decides.
    for (int s = scope; s > 0; s = scopes_[static_cast<std::size_t>(s)].parent) {
      const PyScope& sc = scopes_[static_cast<std::size_t>(s)];
      if (!sc.is_def || !sc.params.count(Text(T(b)))) continue;
      if (sc.off_params.count(Text(T(b)))) return false;
      return std::nullopt;
    }
    return std::nullopt;
  }
  if (e == b + 3 && Is(T(b), "self") && IsOp(T(b + 1), ".") && IsName(T(b + 2))) {
    const PyScope& def = scopes_[static_cast<std::size_t>(scope)];
    if (!def.is_def || def.parent <= 0) return std::nullopt;
    const PyScope& cls = scopes_[static_cast<std::size_t>(def.parent)];
    if (!cls.is_def && cls.off_attrs.count(Text(T(b + 2)))) return false;
  }
  return std::nullopt;
}

std::vector<std::string> LaunchFlags(const PyModel& m) {
  enum : int { kOnGuarded = 1, kOnAnywhere = 2, kOff = 4 };
  std::unordered_map<std::string_view, int> seen;
  for (std::size_t li = 0; li < m.lines().size(); ++li) {
    const LogicalLine& l = m.lines()[li];
    if (l.end - l.begin != 5 || !m.IsName(m.T(l.begin)) || !m.IsOp(m.T(l.begin + 1), ".") ||
        !m.IsName(m.T(l.begin + 2)) || !m.IsOp(m.T(l.begin + 3), "="))
      continue;
    const bool on = m.Is(m.T(l.begin + 4), "True");
    if (!on && !m.Is(m.T(l.begin + 4), "False")) continue;
    seen[m.Text(m.T(l.begin + 2))] |= !on ? kOff : m.IsGuarded(li) ? kOnGuarded : kOnAnywhere;
  }
  std::vector<std::string> out;
  for (const auto& [name, bits] : seen)
    if (bits == (kOnGuarded | kOff)) out.emplace_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> FlagReads(const PyModel& m) {
  std::vector<std::string> out;
  for (const auto& l : m.lines()) {
    const TokenText head = m.First(l);
    if (head != "if" && head != "elif" && head != "while") continue;
    const std::size_t colon = m.FindColon(l);
    for (std::size_t k = l.begin + 1; k < colon; ++k) {
      if (!m.IsName(m.T(k)) || (k > l.begin && m.IsOp(m.T(k - 1), "."))) continue;
      const std::size_t end = m.NamespaceChain(k, colon);
      if (end == k) continue;
      // Also the file's own options: another file may set one at run time (a launch flag).
      out.emplace_back(m.Text(m.T(end - 1)));
      k = end - 1;
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::string> PySettings::Flags(bool on) const {
  std::vector<std::string> out;
  for (const auto* table : {&options_, &data_})
    for (const auto& [dest, value] : *table)
      if (value.kind != PyValue::kUnknown && value.kind != PyValue::kString && value.Truthy() == on)
        out.push_back(dest);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool PySettings::IsOptionLine(std::uint32_t line) const {
  return std::binary_search(option_lines_.begin(), option_lines_.end(), line);
}

// A value judged where it is used: an unguarded statement that assigns a CUDA value to a name
// (`backend = "nccl"`) or declares an option with one (`add_argument("--dist-backend",
// default="nccl")`) is guarded when every statement that reads it runs only behind a check.
void PyModel::GuardValuesReadOnlyBehindChecks() {
  struct Candidate {
    std::size_t line;
    std::string_view name;  // The variable, or the option's destination.
    bool attribute;         // Read as `NS.name`.
    int scope;              // Where a variable's reads count: its function, or -1 (the file).
  };
  std::vector<Candidate> candidates;
  for (std::size_t li = 0; li < lex_.lines.size(); ++li) {
    if (checked_line_[li]) continue;
    const LogicalLine& l = lex_.lines[li];
    if (l.end - l.begin < 3 || !Maybe(l.begin, l.end)) continue;
    if (IsName(T(l.begin)) && IsOp(T(l.begin + 1), "=")) {
      // A value whose making already runs CUDA (`start = torch.cuda.Event()`, `x = y.cuda()`)
      // is needed where it is made, whoever reads it.
      bool runs_cuda = false;
      for (std::size_t k = l.begin + 2; k + 1 < l.end && !runs_cuda; ++k)
        runs_cuda =
            Is(T(k), "cuda") && (IsOp(T(k + 1), "(") || (k + 3 < l.end && IsOp(T(k + 1), ".") &&
                                                         IsName(T(k + 2)) && IsOp(T(k + 3), "(")));
      const int scope = ScopeOf(li);
      if (!runs_cuda) candidates.push_back({li, Text(T(l.begin)), false, scope > 0 ? scope : -1});
      continue;
    }
    // `def launch(main, n, backend="nccl"):` whose body reads `backend` only in its
    // `if world_size > 1:` branch: the default serves the launched workers only.
    if (Head(l) == "def") {
      if (const auto param = DefaultReadInBody(*this, li); param.second > 0)
        candidates.push_back({li, param.first, false, param.second});
      continue;
    }
    for (std::size_t k = l.begin; k + 1 < l.end; ++k) {
      if (!(IsName(T(k)) && Text(T(k)) == "add_argument" && IsOp(T(k + 1), "("))) continue;
      const std::string_view dest = settings_.Key(settings_.Declared(*this, k + 1, l.end));
      if (!dest.empty()) candidates.push_back({li, dest, true, -1});
      break;
    }
  }
  if (candidates.empty()) return;
  std::unordered_map<std::string_view, std::vector<std::size_t>> reads;  // name -> lines
  std::unordered_set<std::string_view> wanted;
  for (const Candidate& c : candidates) wanted.insert(c.name);
  for (std::size_t li = 0; li < lex_.lines.size(); ++li) {
    const LogicalLine& l = lex_.lines[li];
    for (std::size_t k = l.begin; k < l.end; ++k) {
      if (!IsName(T(k)) || !wanted.count(Text(T(k)))) continue;
      const bool attribute = k > l.begin && IsOp(T(k - 1), ".");
      // A statement that binds the name again is not a read of it.
      if (!attribute && k == l.begin && k + 1 < l.end && IsOp(T(k + 1), "=")) continue;
      reads[Text(T(k))].push_back(li * 2 + (attribute ? 1 : 0));
    }
  }
  for (const Candidate& c : candidates) {
    auto it = reads.find(c.name);
    if (it == reads.end()) continue;
    std::size_t n = 0;
    bool all_guarded = true;
    for (std::size_t r : it->second) {
      const std::size_t li = r / 2;
      if ((r % 2 == 1) != c.attribute || li == c.line) continue;
      if (c.scope >= 0 && ScopeOf(li) != c.scope) continue;
      ++n;
      all_guarded &= checked_line_[li];
    }
    if (n > 0 && all_guarded) {
      checked_line_[c.line] = true;
      if (!InKernel(c.line)) line_guarded_[c.line] = true;
    }
  }
}

std::string PySettings::Declared(const PyModel& m, std::size_t open, std::size_t e) const {
  const std::size_t close = m.Matching(open, e);
  std::string dest, long_name, short_name;
  int depth = 0;
  for (std::size_t k = open + 1; k < close; ++k) {
    const Token& t = m.T(k);
    if (m.IsOpen(t)) ++depth;
    if (m.IsClose(t)) --depth;
    if (depth != 0) continue;
    if (t.kind() == TokKind::kString && (m.IsOp(m.T(k - 1), "(") || m.IsOp(m.T(k - 1), ","))) {
      const std::string_view body = StringBody(m.Text(t));
      if (StartsWith(body, "--") && long_name.empty()) long_name = std::string(body.substr(2));
      if (StartsWith(body, "-") && !StartsWith(body, "--") && short_name.empty())
        short_name = std::string(body.substr(1));
    } else if (m.IsName(t) && m.Text(t) == "dest" && k + 2 < close && m.IsOp(m.T(k + 1), "=") &&
               m.T(k + 2).kind() == TokKind::kString) {
      dest = std::string(StringBody(m.Text(m.T(k + 2))));
    }
  }
  if (dest.empty()) dest = !long_name.empty() ? long_name : short_name;
  std::replace(dest.begin(), dest.end(), '-', '_');
  return dest;
}

std::string_view PySettings::Key(const std::string& dest) const {
  auto it = options_.find(dest);
  return it == options_.end() ? std::string_view() : std::string_view(it->first);
}

}  // namespace dt::scan
