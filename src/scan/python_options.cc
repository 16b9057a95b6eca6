// Settings in the semantic model: command-line options (argparse) with their defaults, the names
// that hold the parsed namespace, module settings a configurator overrides, and where values are
// used. A value is judged where it is used: a branch on an option that is off by default runs only
// when the user opts in, and a CUDA value that is read only behind checks is as guarded as the
// lines that read it.
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
void PyModel::ReadOption(std::size_t open, std::size_t e, std::uint32_t first_line,
                         std::uint32_t last_line) {
  const std::string dest = DeclaredOption(open, e);
  if (dest.empty()) return;  // A positional argument, or a name built at run time.
  const std::size_t close = Matching(open, e);
  PyValue def;
  def.kind = PyValue::kNone;  // argparse's default without `default=`.
  bool has_default = false;
  int depth = 0;
  for (std::size_t k = open + 1; k < close; ++k) {
    const Token& t = T(k);
    if (IsOpen(t)) ++depth;
    if (IsClose(t)) --depth;
    if (depth != 0 || !IsName(t) || k + 1 >= close || !IsOp(T(k + 1), "=")) continue;
    // The keyword's value: up to the next comma at this depth.
    std::size_t v = k + 2, ve = v;
    for (int d = 0; ve < close; ++ve) {
      if (IsOpen(T(ve))) ++d;
      if (IsClose(T(ve))) --d;
      if (d == 0 && IsOp(T(ve), ",")) break;
    }
    const TokenText key = Text(t);
    if (key == "default") {
      def = Literal(*this, v, ve);
      has_default = true;
    } else if (key == "action" && ve == v + 1 && !has_default) {
      const std::string_view action = StringBody(Text(T(v)));
      if (action == "store_true") def = PyValue{PyValue::kBool, 0, {}};
      if (action == "store_false") def = PyValue{PyValue::kBool, 1, {}};
    }
    k = ve - 1;
  }
  options_[dest] = def;
  for (std::uint32_t l = first_line; l <= last_line; ++l) option_lines_.push_back(l);
}

void PyModel::CollectOptions() {
  // Most files parse no options: one search of the source decides.
  const bool argparse = source_.find("add_argument") != std::string_view::npos;
  const bool configurator = source_.find("exec(") != std::string_view::npos;
  if (!argparse && !configurator) return;
  std::vector<std::size_t> module_settings;  // Module-level `NAME = literal` lines, in order.
  for (std::size_t li = 0; li < lex_.lines.size(); ++li) {
    const LogicalLine& l = lex_.lines[li];
    const std::uint32_t first = Line(T(l.begin)), last = Line(T(l.end - 1));
    if (argparse) {
      for (std::size_t k = l.begin; k + 1 < l.end; ++k) {
        if (IsName(T(k)) && Text(T(k)) == "add_argument" && IsOp(T(k + 1), "("))
          ReadOption(k + 1, l.end, first, last);
        // NAME = ....parse_args(...), NAME, rest = ....parse_known_args(...)
        if (IsName(T(k)) && (Text(T(k)) == "parse_args" || Text(T(k)) == "parse_known_args") &&
            IsName(T(l.begin)) && (IsOp(T(l.begin + 1), "=") || IsOp(T(l.begin + 1), ",")))
          namespaces_.insert(Text(T(l.begin)));
      }
    }
    if (!configurator || l.indent != 0) continue;
    if (l.end - l.begin >= 3 && IsName(T(l.begin)) && IsOp(T(l.begin + 1), "=") &&
        Literal(*this, l.begin + 2, l.end).kind != PyValue::kUnknown) {
      module_settings.push_back(li);
    } else if (First(l) == "exec" && l.end - l.begin > 3 && Text(T(l.begin + 2)) == "open") {
      // `exec(open('configurator.py').read())`: the module settings before it are the command
      // line's defaults (nanoGPT's configurator); a later `NAME = ...` is not overridden.
      for (std::size_t s : module_settings) {
        const LogicalLine& sl = lex_.lines[s];
        for (std::uint32_t p = Line(T(sl.begin)); p <= Line(T(sl.end - 1)); ++p)
          option_lines_.push_back(p);
      }
      module_settings.clear();
    }
  }
  if (!options_.empty()) {
    // Attributes assigned in the file (`args.distributed = args.world_size > 1`) are no longer
    // their option's default.
    for (const LogicalLine& l : lex_.lines) {
      if (l.end - l.begin >= 4 && IsName(T(l.begin)) && IsOp(T(l.begin + 1), ".") &&
          IsName(T(l.begin + 2)) && IsOp(T(l.begin + 3), "="))
        options_.erase(std::string(Text(T(l.begin + 2))));
    }
  }
  std::sort(option_lines_.begin(), option_lines_.end());
}

const PyValue* PyModel::OptionDefault(std::size_t k) const {
  // NS . dest, NS a parsed namespace (or a parameter named like one).
  if (options_.empty() || k < 2 || !IsOp(T(k - 1), ".") || !IsName(T(k - 2))) return nullptr;
  if (k >= 3 && IsOp(T(k - 3), ".")) return nullptr;  // a.args.x
  const TokenText ns = Text(T(k - 2));
  if (!namespaces_.count(ns) && !IsNamespaceParam(ns)) return nullptr;
  auto it = options_.find(std::string(Text(T(k))));
  return it == options_.end() ? nullptr : &it->second;
}

std::optional<bool> PyModel::OptionTest(std::size_t b, std::size_t e) const {
  // `NS.dest`, `NS.dest is [not] None`, `NS.dest <op> literal`, under the default.
  if (e < b + 3 || !IsName(T(b)) || !IsOp(T(b + 1), ".") || !IsName(T(b + 2))) return std::nullopt;
  const PyValue* def = OptionDefault(b + 2);
  if (def == nullptr || def->kind == PyValue::kUnknown) return std::nullopt;
  std::size_t k = b + 3;
  bool holds;
  if (k == e) {
    holds = def->Truthy();
  } else if (Is(T(k), "is")) {
    const bool negated = k + 1 < e && Is(T(k + 1), "not");
    if (k + (negated ? 2 : 1) + 1 != e || !Is(T(e - 1), "None")) return std::nullopt;
    holds = (def->kind == PyValue::kNone) != negated;
  } else if (T(k).kind() == TokKind::kOp) {
    const TokenText op = Text(T(k));
    const PyValue v = Literal(*this, k + 1, e);
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

bool PyModel::IsOptionLine(std::uint32_t line) const {
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
      const int scope = ScopeOf(li);
      candidates.push_back({li, Text(T(l.begin)), false, scope > 0 ? scope : -1});
      continue;
    }
    for (std::size_t k = l.begin; k + 1 < l.end; ++k) {
      if (!(IsName(T(k)) && Text(T(k)) == "add_argument" && IsOp(T(k + 1), "("))) continue;
      std::string dest = DeclaredOption(k + 1, l.end);
      if (dest.empty()) break;
      auto it = options_.find(dest);
      if (it != options_.end()) candidates.push_back({li, it->first, true, -1});
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

// The destination of the `add_argument(` call whose bracket opens at `open`, as ReadOption names
// it.
std::string PyModel::DeclaredOption(std::size_t open, std::size_t e) const {
  const std::size_t close = Matching(open, e);
  std::string dest, long_name, short_name;
  int depth = 0;
  for (std::size_t k = open + 1; k < close; ++k) {
    const Token& t = T(k);
    if (IsOpen(t)) ++depth;
    if (IsClose(t)) --depth;
    if (depth != 0) continue;
    if (t.kind() == TokKind::kString && (IsOp(T(k - 1), "(") || IsOp(T(k - 1), ","))) {
      const std::string_view body = StringBody(Text(t));
      if (StartsWith(body, "--") && long_name.empty()) long_name = std::string(body.substr(2));
      if (StartsWith(body, "-") && !StartsWith(body, "--") && short_name.empty())
        short_name = std::string(body.substr(1));
    } else if (IsName(t) && Text(t) == "dest" && k + 2 < close && IsOp(T(k + 1), "=") &&
               T(k + 2).kind() == TokKind::kString) {
      dest = std::string(StringBody(Text(T(k + 2))));
    }
  }
  if (dest.empty()) dest = !long_name.empty() ? long_name : short_name;
  std::replace(dest.begin(), dest.end(), '-', '_');
  return dest;
}

}  // namespace dt::scan
