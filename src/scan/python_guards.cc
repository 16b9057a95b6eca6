// Guards in the semantic model: the condition evaluator, the names and attributes that hold a
// CUDA check, each line's guard state (if / elif / else / while blocks, early returns), and the
// guards found after the rules ran (library branches, device fallbacks, definitions called only
// behind checks).
//
// A new guard form goes here: a new kind of test in Subject() (what a test names) or ShapeOf()
// (how it reads), a new block form in GuardBuilder::LineGuards().
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "scan/python_model.h"

namespace dt::scan {

namespace {

bool IsCudaEnvName(std::string_view body) {
  if (body.size() < 4 || body.size() > 40 || body.find("CUDA") == std::string_view::npos)
    return false;
  for (char c : body)
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

// A switch that turns on a CUDA-only library (`self.use_apex`, `HAS_TRITON`,
// `flash_attn_enabled`): where it holds, CUDA is chosen, as with `use_gpu`. Only the library's
// own word with a switch's prefix or suffix: `flash_attn_func is None` tests a function.
bool LibraryFlag(std::string_view name) {
  static constexpr std::string_view kLibraries[] = {
      "apex", "xformers", "flash_attn", "triton", "bitsandbytes", "tcnn", "cupy"};
  static constexpr std::string_view kPrefixes[] = {"", "use_", "with_", "enable_", "has_", "is_"};
  static constexpr std::string_view kSuffixes[] = {"", "_available", "_enabled", "_installed"};
  if (name.size() < 4 || name.size() > 32) return false;
  const std::string lower = Lower(name);
  for (std::string_view lib : kLibraries) {
    const std::size_t at = lower.find(lib);
    if (at == std::string::npos) continue;
    const std::string_view prefix = std::string_view(lower).substr(0, at);
    const std::string_view suffix = std::string_view(lower).substr(at + lib.size());
    // The bare word is the module itself (`triton.__version__`), no switch.
    return lower.size() > lib.size() &&
           std::find(std::begin(kPrefixes), std::end(kPrefixes), prefix) != std::end(kPrefixes) &&
           std::find(std::begin(kSuffixes), std::end(kSuffixes), suffix) != std::end(kSuffixes);
  }
  return false;
}

// Option and flag names: `args.cuda`, `use_gpu`, `n_gpu` hold where CUDA is chosen; `no_cuda`,
// `cpu`, `force_cpu` where it is not. Sets `out` and returns true when the word is one.
bool FlagWord(std::string_view name, Truth& out) {
  // Every flag word holds "cpu", "gpu" or "cuda", or names a library: names without one (most)
  // are never lowered.
  if (!py::ContainsFolded(name, "cpu") && !py::ContainsFolded(name, "gpu") &&
      !py::ContainsFolded(name, "cuda")) {
    if (!LibraryFlag(name)) return false;
    out = Truth::kCuda;
    return true;
  }
  const std::string lower = Lower(name);
  if (lower == "cpu" || StartsWith(lower, "no_cuda") || StartsWith(lower, "no_gpu") ||
      StartsWith(lower, "use_cpu") || StartsWith(lower, "force_cpu") || lower == "cpu_only" ||
      StartsWith(lower, "disable_cuda")) {
    out = Truth::kNoCuda;
    return true;
  }
  if (py::Contains(lower, "cuda") || py::Contains(lower, "gpu")) {
    out = Truth::kCuda;
    return true;
  }
  return false;
}

}  // namespace

// --- The condition evaluator ---------------------------------------------------------------------

// Splits [b, e) at the top-level keyword `word` ("or", "and").
std::vector<std::pair<std::size_t, std::size_t>> CondEvaluator::SplitTop(
    std::size_t b, std::size_t e, std::string_view word) const {
  std::vector<std::pair<std::size_t, std::size_t>> parts;
  int depth = 0;
  std::size_t start = b;
  for (std::size_t k = b; k < e; ++k) {
    if (m_.IsOpen(m_.T(k)))
      ++depth;
    else if (m_.IsClose(m_.T(k)))
      --depth;
    else if (depth == 0 && m_.IsName(m_.T(k)) && m_.Text(m_.T(k)) == word) {
      parts.emplace_back(start, k);
      start = k + 1;
    }
  }
  parts.emplace_back(start, e);
  return parts;
}

// What condition [b, e) says about CUDA: `not` binds to its operand, a conjunction holds where
// any of its terms does, a disjunction only where all of them do.
Truth CondEvaluator::Cond(std::size_t b, std::size_t e, int scope) const {
  if (b >= e) return Truth::kNone;
  // Most conditions have neither word: one pass rules both out before any split is built.
  bool has_or = false, has_and = false;
  int depth = 0;  // Counted as SplitTop counts it.
  for (std::size_t k = b; k < e; ++k) {
    if (m_.IsOpen(m_.T(k)))
      ++depth;
    else if (m_.IsClose(m_.T(k)))
      --depth;
    else if (depth == 0 && m_.IsName(m_.T(k))) {
      has_or |= m_.Text(m_.T(k)) == "or";
      has_and |= m_.Text(m_.T(k)) == "and";
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
  if (m_.IsName(m_.T(b)) && m_.Text(m_.T(b)) == "not") return Flip(Cond(b + 1, e, scope));
  if (m_.IsOp(m_.T(b), "(") && m_.Matching(b, e) == e - 1) return Cond(b + 1, e - 1, scope);
  return Atom(b, e, scope);
}

bool CondEvaluator::ListHoldsMinusOne(std::size_t open, std::size_t e) const {
  std::size_t close = m_.Matching(open, e);
  for (std::size_t k = open + 1; k + 1 < close; ++k)
    if (m_.IsOp(m_.T(k), "-") && m_.T(k + 1).kind() == TokKind::kNumber &&
        m_.Text(m_.T(k + 1)) == "1")
      return true;
  return false;
}

// The launcher's variables this file compares with -1 (`RANK != -1`, `local_rank not in [-1,
// 0]`): here -1 is the single process, so 0 is a launched worker. Read on the first `== 0` test
// of such a variable: most files have none.
const std::unordered_set<std::string>& CondEvaluator::MinusOneRanks() const {
  if (minus_one_read_) return minus_one_ranks_;
  minus_one_read_ = true;
  for (const auto& l : m_.lines()) {
    const TokenText head = m_.First(l);
    if (head != "if" && head != "elif" && head != "while") continue;
    for (auto k = l.begin + 1; k + 2 < l.end; ++k) {
      if (!m_.IsName(m_.T(k))) continue;
      if (!m_.reg().IsLaunchGuardName(m_.Text(m_.T(k)))) continue;
      const std::string lower = Lower(m_.Text(m_.T(k)));
      std::size_t v = k + 1;
      const bool compared = m_.IsOp(m_.T(v), "==") || m_.IsOp(m_.T(v), "!=");
      if (m_.Is(m_.T(v), "not") && v + 1 < l.end) ++v;
      if ((compared && m_.IsOp(m_.T(v + 1), "-") && v + 2 < l.end && m_.Text(m_.T(v + 2)) == "1") ||
          (m_.Is(m_.T(v), "in") && v + 1 < l.end && m_.IsOpen(m_.T(v + 1)) &&
           ListHoldsMinusOne(v + 1, l.end)))
        minus_one_ranks_.insert(lower);
    }
  }
  return minus_one_ranks_;
}

// One comparison or test.
// Not behind Maybe(): flags such as `args.use_cpu` carry no trigger word, and conditions are
// short.
CondEvaluator::TestShape CondEvaluator::ShapeOf(std::size_t b, std::size_t e) const {
  TestShape shape;
  for (std::size_t k = b; k < e; ++k) {
    const Token& t = m_.T(k);
    const TokenText text = m_.Text(t);
    if (t.kind() == TokKind::kOp && (text == "==" || text == "!=" || text == "<" || text == "<=" ||
                                     text == ">" || text == ">=")) {
      std::size_t v = k + 1;
      if (v < e && m_.IsOp(m_.T(v), "-")) ++v;
      if (v < e && m_.T(v).kind() == TokKind::kNumber) {
        shape.numeric = (text == "==" || text == "<" || text == "<=") ? -1 : 1;
        shape.eq_zero = text == "==" && v == k + 1 && m_.Text(m_.T(v)) == "0";
        continue;
      }
    }
    if (m_.IsOp(t, "!=")) shape.negated = true;
    if (m_.Is(t, "is") && k + 1 < e && m_.Is(m_.T(k + 1), "None")) shape.negated = true;
    if (m_.Is(t, "in") && k + 1 < e && m_.IsOpen(m_.T(k + 1)) && ListHoldsMinusOne(k + 1, e)) {
      // `local_rank not in [-1, 0]`: only a launched worker; `in [-1, 0]` also holds in a single
      // process, so it says nothing about the launch.
      if (!(k > b && m_.Is(m_.T(k - 1), "not"))) {
        shape.says_nothing = true;
        return shape;
      }
      shape.numeric = 1;
      continue;
    }
    if (m_.Is(t, "not") && k > b && k + 1 < e && m_.Is(m_.T(k + 1), "in")) shape.negated = true;
  }
  return shape;
}

// What the test's operands name: a device string compared, a CUDA check or flag, a launcher's
// variable (then in `launch`, lower-case).
Truth CondEvaluator::Subject(std::size_t b, std::size_t e, int scope, std::string& launch) const {
  const Registry& reg = m_.reg();
  Truth found = Truth::kNone;
  for (std::size_t k = b; k < e && found == Truth::kNone; ++k) {
    const Token& t = m_.T(k);
    if (t.kind() == TokKind::kString) {
      std::string_view body = StringBody(m_.Text(t));
      const bool cuda =
          ((m_.IsCudaDeviceString(t) || py::IsNccl(body)) && m_.InComparison(k, b, e)) ||
          // os.environ["WORLD_SIZE"], os.environ.get("LOCAL_RANK", -1), "SLURM_PROCID" in
          // os.environ: the launcher's variables.
          (body.size() < 40 && (reg.IsLaunchGuardName(body) || reg.IsLaunchEnv(body))) ||
          // os.getenv("FORCE_CUDA", "0") == "1", os.environ.get("CUDA_HOME"): a build switch.
          IsCudaEnvName(body) ||
          // `attn_type == "vanilla-xformers"`, a name the value gets only behind a check.
          (m_.IsCheckedLiteral(body) && m_.InComparison(k, b, e));
      if (cuda) found = Truth::kCuda;
      continue;
    }
    if (!m_.IsName(t)) continue;
    bool after_dot = k > b && m_.IsOp(m_.T(k - 1), ".");
    const TokenText name = m_.Text(t);
    // A flag or launcher word (`args.use_gpu`, `LOCAL_RANK`), else nothing.
    auto flag_or_launch = [&] {
      if (FlagWord(name, found)) return;
      if (reg.IsLaunchGuardName(name)) {
        found = Truth::kCuda;
        launch = Lower(name);
      }
    };
    if (after_dot) {
      if (name == "is_cuda" || m_.IsGuardAttr(name))
        found = Truth::kCuda;
      else
        flag_or_launch();
      continue;
    }
    if (m_.IsGuardName(name) || m_.IsOptionalName(name)) {
      found = Truth::kCuda;
      continue;
    }
    // Every guard API is torch's: a name that is neither torch nor an import alias resolves to
    // none, and the chain need not be built.
    if (name != "torch" && m_.Lookup(name, scope) == nullptr) {
      flag_or_launch();
      continue;
    }
    std::string resolved, head;
    std::size_t ce = m_.Chain(k, e, scope, resolved, head);
    if (const PythonApi* api = reg.MatchApi(resolved); api != nullptr && api->guard) {
      found = Truth::kCuda;
      break;
    }
    // Without a device type it reports CUDA autocast only (torch 2.13: False inside
    // torch.autocast("cpu")); with one it says nothing about CUDA.
    if (resolved == "torch.is_autocast_enabled" && ce + 1 < e && m_.IsOp(m_.T(ce), "(") &&
        m_.IsOp(m_.T(ce + 1), ")")) {
      found = Truth::kCuda;
      break;
    }
    if (StartsWith(resolved, "torch.")) {  // Other torch APIs (mps checks) say nothing of CUDA.
      k = ce - 1;
      continue;
    }
    if (FlagWord(name, found)) continue;
    if (reg.IsLaunchGuardName(name)) found = Truth::kCuda;
  }
  return found;
}

Truth CondEvaluator::Atom(std::size_t b, std::size_t e, int scope) const {
  // A command-line option with a literal default: off on the default path, the branch runs only
  // when the user opts in (as a CUDA check's body runs only where CUDA is chosen); on, it runs by
  // default, whatever its name says (`args.use_gpu` defaulting to True is no guard).
  // A device flag (`args.use_cpu`, `opt.cuda`) is a device choice whatever its default: the
  // user picks the device with it, and FlagWord() reads it below.
  Truth device_flag = Truth::kNone;
  const bool flag =
      b + 2 < e && m_.IsName(m_.T(b + 2)) && FlagWord(m_.Text(m_.T(b + 2)), device_flag);
  if (!flag) {
    if (const std::optional<bool> holds = m_.OptionTest(b, e))
      return *holds ? Truth::kNone : Truth::kCuda;
    if (const std::optional<bool> holds = m_.ParamFlagTest(b, e, scope))
      return *holds ? Truth::kNone : Truth::kCuda;
  }
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

// --- Guard names and line guards -----------------------------------------------------------------

class GuardBuilder {
 public:
  explicit GuardBuilder(PyModel& model) : m_(model), lex_(model.lex_) {}

  void Build() {
    const std::size_t n = lex_.lines.size();
    // A second round finds guards defined from guards found later in the file (`ok = has_cuda()`
    // above `def has_cuda()`); it is needed only when the first found any.
    for (int round = 0; round < 2; ++round) {
      const std::size_t known = m_.guard_names_.size() + m_.guard_attrs_.size();
      for (std::size_t i = 0; i < n; ++i) CollectGuards(i);
      if (m_.guard_names_.size() + m_.guard_attrs_.size() == known) break;
    }
    CollectCheckedLiterals();
    LineGuards();
  }

 private:
  const Token& T(std::size_t k) const { return lex_.tokens[k]; }

  // The names a value gets only behind a check (`mode = "softmax-xformers" if HAS_XFORMERS else
  // "softmax"`, `if HAS_XFORMERS: attn_type = "vanilla-xformers"`): a later test of the value
  // against that name (`elif attn_type == "vanilla-xformers":`), or a registry entry under it,
  // is reached only where the check held. A name also written elsewhere as a value (a default,
  // an argument) is the user's to choose and is no such name.
  void CollectCheckedLiterals() {
    std::unordered_set<std::string_view> found;
    std::unordered_set<std::size_t> at;  // The tokens that gave them.
    auto note = [&](std::size_t k) {
      if (T(k).kind() != TokKind::kString) return;
      found.insert(StringBody(lex_.Text(T(k))));
      at.insert(k);
    };
    for (std::size_t li = 0; li < lex_.lines.size(); ++li) {
      const auto& l = lex_.lines[li];
      if (!m_.Maybe(l.begin, l.end)) continue;
      const int scope = m_.ScopeOf(li);
      for (std::size_t k = l.begin; k + 2 < l.end; ++k) {
        if (T(k).kind() != TokKind::kString || !m_.Is(T(k + 1), "if")) continue;
        // A condition is a few tokens: the bound keeps a hostile line of `"a" if "a" if ...`
        // linear.
        std::size_t e = k + 2;
        int depth = 0;
        for (; e < l.end && e < k + kCondTokens; ++e) {
          if (m_.IsOpen(T(e))) ++depth;
          if (m_.IsClose(T(e)) && --depth < 0) break;
          if (depth == 0 && m_.Is(T(e), "else")) break;
        }
        if (e < l.end && m_.Is(T(e), "else") && m_.Cond(k + 2, e, scope) == Truth::kCuda) note(k);
      }
      if (m_.Head(l) != "if" || m_.Cond(l.begin + 1, m_.FindColon(l), scope) != Truth::kCuda)
        continue;
      // The name is given at the top of the branch: a bounded look keeps nested checks linear.
      for (std::size_t j = li + 1;
           j < lex_.lines.size() && j <= li + kBodyLines && lex_.lines[j].indent > l.indent; ++j) {
        const auto& b = lex_.lines[j];
        if (b.end - b.begin == 3 && m_.IsName(T(b.begin)) && m_.IsOp(T(b.begin + 1), "="))
          note(b.begin + 2);
      }
    }
    if (found.empty()) return;
    for (const auto& l : lex_.lines)
      for (std::size_t k = l.begin; k < l.end && !found.empty(); ++k)
        if (T(k).kind() == TokKind::kString && !at.count(k) && !ValueTested(l, k))
          found.erase(StringBody(lex_.Text(T(k))));
    m_.checked_literals_ = std::move(found);
  }

  static constexpr std::size_t kCondTokens = 64;  // See CollectCheckedLiterals().
  static constexpr std::size_t kBodyLines = 16;

  // Whether string k of line l is compared, listed for a membership test, or a dict key.
  bool ValueTested(const LogicalLine& l, std::size_t k) const {
    auto op = [&](std::size_t j, std::string_view a, std::string_view b) {
      return j >= l.begin && j < l.end && (lex_.Text(T(j)) == a || lex_.Text(T(j)) == b);
    };
    if (op(k - 1, "==", "!=") || op(k + 1, "==", "!=") || op(k + 1, ":", ":")) return true;
    const std::size_t open = m_.EnclosingOpen(k, l.begin);
    return open < l.end && open > l.begin && m_.Is(T(open - 1), "in");
  }

  // Variables assigned from a CUDA check and functions that return one.
  void CollectGuards(std::size_t li) {
    const auto& l = lex_.lines[li];
    TokenText f = m_.Head(l);
    int scope = m_.ScopeOf(li);
    if (f == "def") {
      std::size_t name_tok = l.begin + (m_.First(l) == "async" ? 2 : 1);
      if (name_tok >= l.end) return;
      TokenText name = lex_.Text(T(name_tok));
      bool check = ReturnsTrueOnlyPastChecks(li);
      for (std::size_t j = li + 1;
           !check && j < lex_.lines.size() && lex_.lines[j].indent > l.indent; ++j) {
        const auto& body = lex_.lines[j];
        check = m_.First(body) == "return" && m_.Maybe(body.begin + 1, body.end) &&
                m_.Cond(body.begin + 1, body.end, m_.ScopeOf(j)) == Truth::kCuda;
      }
      if (check) {
        m_.guard_attrs_.insert(name);
        m_.guard_names_.insert(name);
        m_.hot_names_.insert(name);
      }
      return;
    }
    // NAME = expr, or self.NAME = expr.
    std::size_t eq = l.begin;
    while (eq < l.end && !m_.IsOp(T(eq), "=")) ++eq;
    if (eq >= l.end || eq == l.begin) return;
    // Only an assignment whose value names a trigger word or a hot name, or reads a launcher's
    // environment variable (`int(os.environ.get("RANK", -1)) != -1`), can be a check.
    if (!m_.Maybe(eq + 1, l.end) && !ReadsLaunchEnv(eq + 1, l.end)) return;
    if (m_.Cond(eq + 1, l.end, scope) != Truth::kCuda) return;
    const Token& target = T(eq - 1);
    if (!m_.IsName(target)) return;
    if (eq - 1 == l.begin)
      m_.guard_names_.insert(lex_.Text(target));
    else if (eq - 1 > l.begin && m_.IsOp(T(eq - 2), "."))
      m_.guard_attrs_.insert(lex_.Text(target));
    m_.hot_names_.insert(lex_.Text(target));
  }

  // Whether tokens [b, e) hold a launcher's environment variable as a string ("RANK"); asked only
  // in files that read the environment.
  bool ReadsLaunchEnv(std::size_t b, std::size_t e) {
    if (!environ_read_) {
      environ_read_ = true;
      reads_environ_ = m_.source().find("environ") != std::string_view::npos ||
                       m_.source().find("getenv") != std::string_view::npos;
    }
    if (!reads_environ_) return false;
    for (std::size_t k = b; k < e; ++k)
      if (T(k).kind() == TokKind::kString && m_.reg().IsLaunchEnv(StringBody(m_.Text(T(k)))))
        return true;
    return false;
  }

  // `def is_dist_avail_and_initialized(): if not dist.is_available(): return False / if not
  // dist.is_initialized(): return False / return True`: it returns True only past every check, and
  // one of them holds only where CUDA (or a launch) is: the function is a check itself.
  bool ReturnsTrueOnlyPastChecks(std::size_t li) const {
    const auto& lines = lex_.lines;
    if (li + 1 >= lines.size() || lines[li + 1].indent <= lines[li].indent) return false;
    const std::uint32_t indent = lines[li + 1].indent;
    bool checked = false, returns_true = false;
    for (std::size_t j = li + 1; j < lines.size() && lines[j].indent >= indent; ++j) {
      const auto& l = lines[j];
      if (l.indent > indent) continue;  // A checked body, read with its `if`.
      if (returns_true) return false;   // Something after `return True`.
      const TokenText head = m_.First(l);
      if (head == "if") {
        const std::size_t colon = m_.FindColon(l);
        // Its body only returns False (on the line itself or the next).
        const bool one_line = colon + 1 < l.end;
        const std::size_t b = one_line ? colon + 1 : lines[j + 1 < lines.size() ? j + 1 : j].begin;
        const std::size_t e = one_line ? l.end : lines[j + 1 < lines.size() ? j + 1 : j].end;
        if (!(e == b + 2 && m_.Is(T(b), "return") && m_.Is(T(b + 1), "False"))) return false;
        if (!one_line && j + 2 < lines.size() && lines[j + 2].indent > indent) return false;
        checked |= m_.Cond(l.begin + 1, colon, m_.ScopeOf(j)) == Truth::kNoCuda;
      } else if (head == "return") {
        returns_true = l.end == l.begin + 2 && m_.Is(T(l.begin + 1), "True");
        if (!returns_true) return false;
      } else if (!m_.StringsOnly(l)) {
        return false;
      }
    }
    return checked && returns_true;
  }

  // Whether the body of the `if` at line li only leaves (return / continue / break, after at most
  // a message): then the lines after it in the same block run only when the test failed. A raise
  // or exit is not a fallback: the program stops, so it guards nothing.
  bool LeavesBlock(std::size_t li) const {
    const auto& l = lex_.lines[li];
    std::size_t colon = m_.FindColon(l);
    auto leaves = [&](std::size_t b) {
      return m_.Is(T(b), "return") || m_.Is(T(b), "continue") || m_.Is(T(b), "break");
    };
    if (colon + 1 < l.end) return leaves(colon + 1);
    std::size_t j = li + 1;
    std::size_t last = li;
    for (; j < lex_.lines.size() && lex_.lines[j].indent > l.indent; ++j) last = j;
    if (last == li || last - li > 3) return false;
    // The body's own last statement: a `return` inside a function the body defines leaves nothing.
    if (lex_.lines[last].indent != lex_.lines[li + 1].indent) return false;
    return leaves(lex_.lines[last].begin);
  }

  // `if not x.is_cuda: raise NotImplementedError` at li: the code says it has no implementation
  // for other tensors, a requirement. (A bare `assert x.is_cuda` checks its input; it names no
  // gap.)
  void TensorRequirement(std::size_t li) {
    const std::size_t at = StopsBlock(li);
    if (at == std::string::npos) return;
    const LogicalLine& l = lex_.lines[at];
    if (l.end - l.begin >= 2 && m_.Is(T(l.begin), "raise") &&
        m_.Is(T(l.begin + 1), "NotImplementedError"))
      m_.requirement_[at] = PyModel::Requirement::kCuda;
  }

  // The line of the `raise` / `sys.exit()` that ends the body of the `if` / `else` at line li
  // (after at most a message), or li's own when the body is on its line; npos otherwise.
  std::size_t StopsBlock(std::size_t li) const {
    const auto& l = lex_.lines[li];
    const std::size_t colon = m_.FindColon(l);
    auto stops = [&](std::size_t b, std::size_t e) {
      if (m_.Is(T(b), "raise")) return true;
      // sys.exit(...), exit(...), quit(...), os._exit(...)
      std::size_t k = b;
      if (k + 2 < e && m_.IsName(T(k)) && m_.IsOp(T(k + 1), ".") &&
          (m_.Is(T(k), "sys") || m_.Is(T(k), "os")))
        k += 2;
      const bool exit_name = m_.Is(T(k), "exit") || m_.Is(T(k), "quit") || m_.Is(T(k), "_exit");
      return exit_name && k + 1 < e && m_.IsOp(T(k + 1), "(");
    };
    if (colon + 1 < l.end) return stops(colon + 1, l.end) ? li : std::string::npos;
    std::size_t last = li;
    for (std::size_t j = li + 1; j < lex_.lines.size() && lex_.lines[j].indent > l.indent; ++j)
      last = j;
    if (last == li || last - li > 4) return std::string::npos;
    if (lex_.lines[last].indent != lex_.lines[li + 1].indent) return std::string::npos;
    const auto& body = lex_.lines[last];
    return stops(body.begin, body.end) ? last : std::string::npos;
  }

  // Whether test [b, e) is about the tensors at hand (`x.is_cuda`, `x.device.type == "cuda"`),
  // which a function checks of its inputs, rather than about the machine or the launch.
  bool TensorTest(std::size_t b, std::size_t e) const {
    for (std::size_t k = b + 1; k < e; ++k)
      if (m_.IsOp(T(k - 1), ".") && (m_.Is(T(k), "is_cuda") || m_.Is(T(k), "device") ||
                                     m_.Is(T(k), "type") || m_.Is(T(k), "is_mps")))
        return true;
    return false;
  }

  // `x.device.type == "cpu"` (or `!=`).
  bool TestsCpuDevice(std::size_t b, std::size_t e) const {
    for (std::size_t k = b; k < e; ++k)
      if (T(k).kind() == TokKind::kString && StringBody(m_.Text(T(k))) == "cpu" &&
          m_.InComparison(k, b, e))
        return TensorTest(b, e);
    return false;
  }

  // The module-level definition holding line li dispatches to a path beside its kernel, unless
  // the branch at li only stops (`if not x.is_cuda: raise NotImplementedError`): no path, the
  // kernel is all there is.
  void NoteReferenceDispatch(std::size_t li) {
    if (StopsBlock(li) != std::string::npos) return;
    m_.reference_dispatch_ = true;
    if (const int top = m_.TopOf(li); top >= 0) m_.reference_tops_.insert(m_.scope(top).name);
  }

  // Whether test [b, e) reads a launch variable (`args.distributed`, `"RANK" in os.environ`).
  bool ReadsLaunch(std::size_t b, std::size_t e) const {
    for (std::size_t k = b; k < e; ++k) {
      const Token& t = T(k);
      if (m_.IsName(t) && m_.reg().IsLaunchGuardName(m_.Text(t))) return true;
      if (t.kind() == TokKind::kString && m_.reg().IsLaunchEnv(StringBody(m_.Text(t)))) return true;
      if (m_.Is(t, "is_initialized")) return true;
    }
    return false;
  }

  // Whether the statement at li names distributed training (`"Only DistributedDataParallel is
  // supported."`): the requirement it states is a launch.
  bool NamesLaunch(std::size_t li) const {
    const auto& l = lex_.lines[li];
    for (auto k = l.begin; k < l.end; ++k) {
      const std::string lower = Lower(m_.Text(T(k)));
      if (lower.find("distributed") != std::string::npos ||
          lower.find("ddp") != std::string::npos || lower.find("torchrun") != std::string::npos)
        return true;
    }
    return false;
  }

  // `assert torch.cuda.is_available()`: the run stops here without CUDA.
  bool AssertsCuda(std::size_t li, int scope) const {
    const auto& l = lex_.lines[li];
    if (!m_.Is(T(l.begin), "assert")) return false;
    std::size_t e = l.begin + 1;
    for (int depth = 0; e < l.end; ++e) {
      if (m_.IsOpen(T(e)))
        ++depth;
      else if (m_.IsClose(T(e)))
        --depth;
      else if (depth == 0 && m_.IsOp(T(e), ","))
        break;
    }
    // CUDA's presence or an initialised process group; launch variables in an assert check
    // consistency (`assert rank < world_size`), not the launch itself.
    bool machine = false, compares = false, number = false;
    for (std::size_t k = l.begin + 1; k < e; ++k) {
      machine |= m_.Is(T(k), "is_available") || m_.Is(T(k), "device_count") ||
                 m_.Is(T(k), "is_initialized");
      compares |= m_.IsOp(T(k), "<") || m_.IsOp(T(k), "<=") || m_.IsOp(T(k), ">") ||
                  m_.IsOp(T(k), ">=") || m_.IsOp(T(k), "==") || m_.IsOp(T(k), "!=");
      number |= T(k).kind() == TokKind::kNumber;
    }
    // `assert num_gpu <= torch.cuda.device_count()` checks a setting against the machine (it holds
    // with no GPU and num_gpu 0); `device_count() > 0` states the requirement.
    if (compares && !number) return false;
    return machine && !TensorTest(l.begin + 1, e) && m_.Cond(l.begin + 1, e, scope) == Truth::kCuda;
  }

  // Whether test [b, e) is about the machine or the launch: CUDA's presence, a device flag, a
  // launch variable; not a tensor's device, a value (`assert (w.cpu() == w0).all()`) or an
  // option's other choices (`if opt.task == "speed"`).
  bool MachineTest(std::size_t b, std::size_t e) const {
    if (TensorTest(b, e)) return false;
    if (ReadsLaunch(b, e)) return true;
    for (std::size_t k = b; k < e; ++k) {
      if (!m_.IsName(T(k))) continue;
      if (m_.Is(T(k), "is_available") || m_.Is(T(k), "device_count")) return true;
      // A device flag (`args.cuda`, `use_gpu`), not a call (`w.cpu()`), an optional import's
      // name (`selective_scan_cuda is None`: the extension, not the machine) or a library's
      // switch (`XFORMERS_AVAILABLE`).
      Truth flag = Truth::kNone;
      if (FlagWord(m_.Text(T(k)), flag) && !(k + 1 < e && m_.IsOp(T(k + 1), "(")) &&
          !m_.IsOptionalName(m_.Text(T(k))) && !LibraryFlag(m_.Text(T(k))))
        return true;
    }
    return false;
  }

  // Whether test [b, e) is only a command-line or config option off by default (`if
  // args.alternate_corr:`, `if args.seed is not None:`), not a launch flag: it guards its body
  // only where the body is the CUDA mode the option turns on. (A function's parameter switch,
  // `def __init__(self, sparse=False)`, exists to pick an implementation: it stays a guard.)
  bool OptInTest(std::size_t b, std::size_t e) const {
    if (m_.IsLaunchFlagTest(b, e)) return false;
    const std::optional<bool> holds = m_.OptionTest(b, e);
    return holds && !*holds;
  }

  // Whether every statement of the body of the compound statement at li names CUDA (a trigger
  // word or a hot name: `corr_fn = AlternateCorrBlock(...)`, `scaler =
  // torch.cuda.amp.GradScaler()`); `if args.seed is not None: random.seed(...); cudnn.deterministic
  // = True` is a seed, not a mode. A body with an `else:` / `elif` beside it is one of the option's
  // two paths: the mode. Compound statements of the body count by their header (`with
  // torch.cuda.amp.autocast():`).
  bool BodyAllCuda(std::size_t li) const {
    const auto& l = lex_.lines[li];
    const std::size_t colon = m_.FindColon(l);
    if (colon + 1 < l.end) return m_.Maybe(colon + 1, l.end);
    std::size_t j = li + 1;
    bool all = true;
    for (; j < lex_.lines.size() && lex_.lines[j].indent > l.indent; ++j) {
      const auto& body = lex_.lines[j];
      if (body.indent != lex_.lines[li + 1].indent) continue;
      all = all && (m_.StringsOnly(body) || m_.Is(T(body.begin), "pass") ||
                    m_.Maybe(body.begin, body.end));
    }
    if (j < lex_.lines.size() && lex_.lines[j].indent == l.indent &&
        (m_.Head(lex_.lines[j]) == "else" || m_.Head(lex_.lines[j]) == "elif"))
      return true;
    return all && j > li + 1;
  }

  // `except torch.cuda.OutOfMemoryError:`, `if "CUDA out of memory" in str(e):`: entered only
  // after CUDA ran out of memory.
  bool CudaOomTest(std::size_t b, std::size_t e) const {
    for (std::size_t k = b; k < e; ++k) {
      const Token& t = T(k);
      if (m_.Is(t, "not")) return false;  // `if "CUDA out of memory" not in str(e): raise`.
      if (m_.Is(t, "OutOfMemoryError") && k >= b + 2 && m_.Is(T(k - 2), "cuda")) return true;
      if (t.kind() == TokKind::kString &&
          StringBody(m_.Text(t)).find("CUDA out of memory") != std::string_view::npos)
        return true;
    }
    return false;
  }

  struct Block {
    std::uint32_t indent;
    bool guarded;
    std::string_view def;  // The module-level function whose body this is; empty otherwise.
    bool stop = false;     // Guarded only by a stop before it (PyModel::StopGuarded()).
  };

  // Whether line l is a statement that only calls a function that stops the run without CUDA
  // (`utils.init_distributed_mode(args)` whose `else:` exits, PyScanResult::requiring): what
  // follows the call runs only where CUDA is, as after the stop itself.
  // Each such statement's function name is kept (PyScanResult::calls): the files that call one
  // that another file declares requiring are scanned again knowing it.
  bool CallsRequiring(const LogicalLine& l) {
    if (l.end - l.begin < 3 || !m_.IsName(T(l.begin))) return false;
    std::size_t k = l.begin;
    while (k + 2 < l.end && m_.IsOp(T(k + 1), ".") && m_.IsName(T(k + 2))) k += 2;
    if (k + 1 >= l.end || !m_.IsOp(T(k + 1), "(") || m_.Matching(k + 1, l.end) + 1 != l.end)
      return false;
    const TokenText name = m_.Text(T(k));
    m_.statement_calls_.insert(name);
    if (std::find(m_.requiring_.begin(), m_.requiring_.end(), name) != m_.requiring_.end())
      return true;
    return m_.opt_.cuda != nullptr && m_.opt_.cuda->requiring.count(name) > 0;
  }

  // Each line's guard: the blocks around it (an if / elif / while whose test holds only with
  // CUDA, the else of one that holds only without it) and the early returns before it in its
  // block (`if not torch.cuda.is_available(): return`).
  void LineGuards() {
    m_.checked_line_.assign(lex_.lines.size(), false);
    std::vector<Block> stack = {Block{0, false, {}}};
    bool module_level_guard = false, module_level_stop = false;
    // Per indent: what the last if/elif there said about CUDA, and whether every test of the
    // chain held only with CUDA (or a launch).
    std::unordered_map<std::uint32_t, Truth> last_if;
    std::unordered_map<std::uint32_t, bool> chain_cuda;
    std::unordered_map<std::uint32_t, bool> chain_launch;  // A test of the chain read a launch.
    // A test of the chain held only with CUDA and read no launch (`elif torch.cuda.is_available():
    // single-GPU run`): a stop after it requires CUDA, not a launcher.
    std::unordered_map<std::uint32_t, bool> chain_device;
    std::unordered_map<std::uint32_t, bool> chain_tensor;  // A test of the chain read a tensor.
    // Every test of the chain is about the machine or the launch (not an option's choice).
    std::unordered_map<std::uint32_t, bool> chain_machine;
    m_.requirement_.assign(lex_.lines.size(), PyModel::Requirement::kNone);
    m_.stop_line_.assign(lex_.lines.size(), false);
    // What follows a stated requirement in its block runs only where it holds.
    // A stop (a raise, exit or assert) rather than an early return: PyModel::StopGuarded().
    auto guard_rest = [&](bool stop) {
      bool& g = stack.size() > 1 ? stack.back().guarded : module_level_guard;
      (stack.size() > 1 ? stack.back().stop : module_level_stop) = stop && !g;
      g = true;
    };
    auto require = [&](std::size_t at, bool launch) {
      m_.requirement_[at] =
          launch || NamesLaunch(at) ? PyModel::Requirement::kLaunch : PyModel::Requirement::kCuda;
      // In a module-level function's own body: every call of it stops there without CUDA.
      if (stack.size() == 2 && !stack.back().def.empty())
        m_.requiring_.emplace_back(stack.back().def);
    };
    for (std::size_t li = 0; li < lex_.lines.size(); ++li) {
      const auto& l = lex_.lines[li];
      while (stack.size() > 1 && stack.back().indent >= l.indent) stack.pop_back();
      int scope = m_.ScopeOf(li);
      bool guarded = stack.size() > 1 ? stack.back().guarded : module_level_guard;
      const bool stop = guarded && (stack.size() > 1 ? stack.back().stop : module_level_stop);
      TokenText f = m_.Head(l);
      bool line_guard = guarded;
      bool compound = (f == "if" || f == "elif" || f == "else" || f == "while" || f == "for" ||
                       f == "with" || f == "def" || f == "class" || f == "try" || f == "except" ||
                       f == "finally" || f == "match" || f == "case") &&
                      m_.FindColon(l) < l.end;
      bool block_guard = guarded;
      if (f == "if" || f == "elif" || f == "while") {
        std::size_t colon = m_.FindColon(l);
        Truth t =
            CudaOomTest(l.begin + 1, colon) ? Truth::kCuda : m_.Cond(l.begin + 1, colon, scope);
        if (t == Truth::kCuda && OptInTest(l.begin + 1, colon) && !BodyAllCuda(li))
          t = Truth::kNone;
        if (t == Truth::kCuda) block_guard = line_guard = true;
        if (f == "elif" && last_if[l.indent] == Truth::kNoCuda) block_guard = line_guard = true;
        last_if[l.indent] = t;
        chain_cuda[l.indent] = t == Truth::kCuda && (f != "elif" || chain_cuda[l.indent]);
        const bool launch = ReadsLaunch(l.begin + 1, colon);
        const bool tensor = TensorTest(l.begin + 1, colon);
        chain_launch[l.indent] = launch || (f == "elif" && chain_launch[l.indent]);
        chain_device[l.indent] =
            (t == Truth::kCuda && !launch) || (f == "elif" && chain_device[l.indent]);
        chain_tensor[l.indent] = tensor || (f == "elif" && chain_tensor[l.indent]);
        const bool machine = MachineTest(l.begin + 1, colon);
        chain_machine[l.indent] = machine && (f != "elif" || chain_machine[l.indent]);
        // `if x.device.type == "cpu": return reference(x)`: a path beside the kernel. (A CPU
        // test guards nothing: MPS tensors fail it too.)
        if (tensor && (t == Truth::kNoCuda || TestsCpuDevice(l.begin + 1, colon)))
          NoteReferenceDispatch(li);
        m_.tensor_dispatch_ |= tensor && t == Truth::kCuda;
        if (f == "if" && tensor && t == Truth::kNoCuda && !guarded) TensorRequirement(li);
        if (f == "if" && t == Truth::kNoCuda && LeavesBlock(li)) {
          // `if not torch.cuda.is_available(): return` guards the rest of its block.
          guard_rest(false);
        } else if (std::size_t at = f == "if" && t == Truth::kNoCuda && machine && !guarded
                                        ? StopsBlock(li)
                                        : std::string::npos;
                   at != std::string::npos) {
          // `if not torch.cuda.is_available(): raise ...`: a requirement.
          require(at, launch);
          guard_rest(true);
        }
      } else if (f == "else") {
        if (last_if[l.indent] == Truth::kNoCuda) block_guard = line_guard = true;
        // `if x.is_cuda: kernel(x) else: reference(x)`.
        if (chain_tensor[l.indent] && last_if[l.indent] == Truth::kCuda) NoteReferenceDispatch(li);
        // `if "RANK" in os.environ: ... elif "SLURM_PROCID" in os.environ: ... else: return`:
        // what follows the chain runs only where one of its launch (or CUDA) tests held.
        if (chain_cuda[l.indent] && LeavesBlock(li)) {
          guard_rest(false);
        } else if (std::size_t at = chain_cuda[l.indent] && chain_machine[l.indent] && !guarded
                                        ? StopsBlock(li)
                                        : std::string::npos;
                   at != std::string::npos) {
          // `if args.distributed: ... else: raise NotImplementedError(...)`: a requirement.
          require(at, chain_launch[l.indent] && !chain_device[l.indent]);
          guard_rest(true);
        }
        chain_cuda[l.indent] = false;
      } else if (f == "assert" && !guarded && AssertsCuda(li, scope)) {
        // As an early raise: what follows runs only where the assertion held.
        require(li, ReadsLaunch(l.begin + 1, l.end));
        guard_rest(true);
      } else if (!compound && !guarded && CallsRequiring(l)) {
        guard_rest(true);
      } else if (compound) {
        if (f == "except" && CudaOomTest(l.begin + 1, l.end)) block_guard = true;
        last_if[l.indent] = Truth::kNone;  // A for/try/with's own else is not an if's.
        chain_cuda[l.indent] = false;
      }
      m_.has_main_ |= m_.IsMainCheck(l);
      if (compound) {
        std::string_view def;
        if (f == "def" && stack.size() == 1 && l.begin + 1 < l.end) def = m_.Text(T(l.begin + 1));
        stack.push_back(Block{l.indent, block_guard, def, stop});
      }
      m_.checked_line_[li] = line_guard;
      m_.stop_line_[li] = stop;
      // A kernel's lines make one finding at its decorator, whatever guards them.
      if (!m_.InKernel(li)) m_.line_guarded_[li] = line_guard || m_.optional_line_[li];
    }
  }

  PyModel& m_;
  const Lexed& lex_;
  bool environ_read_ = false, reads_environ_ = false;
};

void PyModel::BuildGuards() { GuardBuilder(*this).Build(); }

// --- Guard queries -------------------------------------------------------------------------------

// The branches of conditional expressions that run only with CUDA: `A` of `A if check else B`,
// `B` of `A if not check else B`. Only that branch is guarded, not the whole statement.
// Each read of GuardedBranches is bounded (a condition, an element, a branch of a few hundred
// tokens at most): a hostile line of `"a" if "a" if ... else "b"` would otherwise read the rest of
// the line at each `if`, quadratic in its length.
constexpr std::size_t kSpan = 256;

void PyModel::GuardedBranches(const LogicalLine& l, int scope,
                              std::vector<std::pair<std::size_t, std::size_t>>& out) const {
  out.clear();
  for (std::size_t k = l.begin + 1; k < l.end; ++k) {
    if (!Is(T(k), "if")) continue;
    std::size_t e = k + 1;
    int depth = 0;
    for (; e < l.end && e < k + kSpan; ++e) {
      if (IsOpen(T(e))) ++depth;
      if (IsClose(T(e)) && --depth < 0) break;
      if (depth == 0 && Is(T(e), "else")) break;
    }
    Truth t = e == k + kSpan ? Truth::kNone : Cond(k + 1, e, scope);
    if (t == Truth::kNone) continue;
    if (t == Truth::kCuda) {
      // Back to the start of the element: an open bracket, a comma or `=` at this depth.
      std::size_t b = k;
      int d = 0;
      while (b > l.begin && b + kSpan > k) {
        const Token& p = T(b - 1);
        if (IsClose(p))
          ++d;
        else if ((IsOpen(p) && d-- == 0) ||
                 (d == 0 && (IsOp(p, ",") || IsOp(p, "=") || Is(p, "return") || Is(p, "lambda") ||
                             IsOp(p, ":"))))
          break;
        --b;
      }
      if (b + kSpan > k) out.emplace_back(b, k);
    } else if (e < l.end && Is(T(e), "else")) {
      std::size_t f = e + 1;
      int d = 0;
      for (; f < l.end && f < e + kSpan; ++f) {
        if (IsOpen(T(f))) ++d;
        if (IsClose(T(f)) && --d < 0) break;
        if (d == 0 && (IsOp(T(f), ",") || Is(T(f), "if") || Is(T(f), "for"))) break;
      }
      out.emplace_back(e + 1, f);
    }
  }
}

namespace {

// The literal that test [b, e) compares a value with (`v == "x"`, `"x" == v`, `v in ("x", "y")`:
// the first), with the value's range, or false when the test is no such comparison.
bool NamedTest(const PyModel& m, std::size_t b, std::size_t e, std::size_t& vb, std::size_t& ve,
               std::size_t& lit) {
  auto str = [&](std::size_t k) { return k < e && m.T(k).kind() == TokKind::kString; };
  for (std::size_t k = b; k < e; ++k) {
    if (m.IsOpen(m.T(k))) {
      k = m.Matching(k, e);
      continue;
    }
    if (m.IsOp(m.T(k), "==")) {
      if (str(k + 1) && k + 2 == e)
        std::tie(vb, ve, lit) = std::tuple(b, k, k + 1);
      else if (str(b) && k == b + 1)
        std::tie(vb, ve, lit) = std::tuple(k + 1, e, b);
      else
        return false;
      return vb < ve;
    }
    if (m.Is(m.T(k), "in") && k > b && k + 1 < e && m.IsOpen(m.T(k + 1)) &&
        m.Matching(k + 1, e) + 1 == e && str(k + 2)) {
      for (std::size_t j = k + 2; j + 1 < e; ++j)
        if (!str(j) && !m.IsOp(m.T(j), ",")) return false;
      std::tie(vb, ve, lit) = std::tuple(b, k, k + 2);
      return true;
    }
  }
  return false;
}

}  // namespace

bool InNamedChoice(const PyModel& m, std::size_t li) {
  const auto& ls = m.lines();
  // Asked at each use of an optional library: the walk up to the enclosing headers is bounded,
  // so that a hostile function of many such uses stays linear.
  constexpr std::size_t kWalk = 4096;
  const std::size_t stop = li > kWalk ? li - kWalk : 0;
  for (std::size_t at = li; at > stop && ls[at].indent > 0;) {
    std::size_t h = at;
    while (h > stop && ls[h].indent >= ls[at].indent) --h;
    if (ls[h].indent >= ls[at].indent) return false;
    at = h;
    const TokenText head = m.First(ls[h]);
    if (head != "if" && head != "elif") continue;
    std::size_t vb = 0, ve = 0, lit = 0;
    const std::size_t colon = m.FindColon(ls[h]);
    if (!NamedTest(m, ls[h].begin + 1, colon, vb, ve, lit)) continue;
    // One choice among several: an elif, or an if with an elif or else after its block.
    bool chain = head == "elif";
    for (std::size_t n = h + 1; !chain && n < ls.size() && ls[n].indent >= ls[h].indent; ++n) {
      if (ls[n].indent > ls[h].indent) continue;
      const TokenText f = m.First(ls[n]);
      chain = f == "elif" || f == "else";
      break;
    }
    const std::string_view def = m.settings().DefaultString(m, vb, ve);
    if (chain && (def.empty() || def != StringBody(m.Text(m.T(lit))))) return true;
  }
  return false;
}

// A branch that imports a CUDA-only library itself (`elif engine:  import tensorrt as trt`, `if
// args.flash_attn: from flash_attn import ...`) is one backend among others, taken only when the
// user picks it (a weights format, an option): the branch runs only where that CUDA path is
// chosen, so its lines are guarded, as a device check's body is. Imports at the top of a function
// or module, or under `if __name__ == "__main__":`, are not branches.
std::vector<LineRange> GuardLibraryBranches(PyModel& m) {
  std::vector<LineRange> ranges;
  const auto& lines = m.lines();
  for (PyImport& imp : m.imports()) {
    const std::size_t li = imp.line_index;
    if (lines[li].indent == 0 || m.IsGuarded(li) || m.IsOptionalLine(li)) continue;
    if (m.LibraryOf(m.Absolute(imp.level, imp.module)) == nullptr) continue;
    std::size_t h = li;
    while (h > 0 && lines[h].indent >= lines[li].indent) --h;
    if (lines[h].indent >= lines[li].indent) continue;
    const TokenText head = m.First(lines[h]);
    if (head != "if" && head != "elif" && head != "else") continue;
    bool main = false;
    for (auto k = lines[h].begin; k < lines[h].end; ++k) main |= m.Is(m.T(k), "__name__");
    if (main) continue;
    std::size_t last = h + 1;
    while (last + 1 < lines.size() && lines[last + 1].indent > lines[h].indent) ++last;
    for (std::size_t k = h + 1; k <= last; ++k) m.MarkGuarded(k);
    ranges.push_back({m.Line(m.T(lines[h + 1].begin)), m.Line(m.T(lines[last].end - 1))});
  }
  return ranges;
}

// `device = "cuda"` in a function that then tests the same variable against
// torch.cuda.is_available() and returns or reassigns when it fails (stable-baselines'
// get_device): the CUDA default has a fallback, like `"cuda" if available else "cpu"`.
std::vector<LineRange> DeviceFallbackLines(const PyModel& m) {
  std::vector<LineRange> ranges;
  const auto& lines = m.lines();
  for (std::size_t li = 0; li < lines.size(); ++li) {
    const auto& l = lines[li];
    if (l.end - l.begin != 3 || !m.IsName(m.T(l.begin)) || !m.IsOp(m.T(l.begin + 1), "=") ||
        !m.IsCudaDeviceString(m.T(l.begin + 2)) || m.IsGuarded(li))
      continue;
    TokenText var = m.Text(m.T(l.begin));
    int scope = m.ScopeOf(li);
    if (scope <= 0) continue;
    const PyScope& sc = m.scope(scope);
    for (std::size_t j = li + 1; j <= sc.last_line && j < lines.size(); ++j) {
      const auto& c = lines[j];
      if (m.First(c) != "if" || m.ScopeOf(j) != scope) continue;
      std::size_t colon = m.FindColon(c);
      bool names_var = false, checks = false;
      for (std::size_t k = c.begin + 1; k < colon; ++k) {
        names_var |= m.IsName(m.T(k)) && m.Text(m.T(k)) == var;
        if (m.IsName(m.T(k)) && m.Is(m.T(k), "is_available")) checks = true;
      }
      if (!names_var || !checks) continue;
      // The first statement of the body: after the colon, or the next, deeper line.
      std::size_t body = colon + 1, body_end = c.end;
      if (body >= c.end) {
        if (j + 1 >= lines.size() || lines[j + 1].indent <= c.indent) continue;
        body = lines[j + 1].begin;
        body_end = lines[j + 1].end;
      }
      bool fallback =
          m.Is(m.T(body), "return") || (m.IsName(m.T(body)) && m.Text(m.T(body)) == var &&
                                        body + 1 < body_end && m.IsOp(m.T(body + 1), "="));
      if (fallback) {
        ranges.push_back({m.Line(m.T(l.begin)), m.Line(m.T(l.end - 1))});
        break;
      }
    }
  }
  return ranges;
}

// The definitions with an import (of a module that the import graph then reaches only behind the
// check, when every call of the definition is behind one).
std::unordered_set<std::size_t> ImportingTops(const PyModel& m) {
  std::unordered_set<std::size_t> importing;
  for (const PyImport& imp : m.imports()) {
    const int top = m.TopOf(imp.line_index);
    if (top >= 0 && !m.IsGuarded(imp.line_index)) importing.insert(static_cast<std::size_t>(top));
  }
  return importing;
}

std::unordered_set<std::size_t> CalledOnlyUnderChecks(
    const PyModel& m, const std::unordered_map<std::string_view, std::size_t>& defs,
    std::unordered_set<std::size_t>* past_stops) {
  // Each definition's references: the line's guard, or the function the reference sits in.
  struct Ref {
    bool guarded;
    bool stop;   // Guarded only by a stop before it (PyModel::StopGuarded()).
    int in_top;  // Module-level definition holding the reference; -1 at module level.
  };
  std::unordered_map<std::size_t, std::vector<Ref>> refs;
  for (std::size_t li = 0; li < m.lines().size(); ++li) {
    const auto& l = m.lines()[li];
    const TokenText head = m.First(l);
    if (head == "def" || head == "import" || head == "from") continue;
    // A class's bases are references (`class Wrapper(MemoryEfficientCrossAttention):`), its name
    // is none.
    for (auto k = head == "class" ? l.begin + 2 : l.begin; k < l.end; ++k) {
      if (!m.IsName(m.T(k)) || (k > l.begin && m.IsOp(m.T(k - 1), "."))) continue;
      auto it = defs.find(m.Text(m.T(k)));
      if (it == defs.end()) continue;
      const int top = m.TopOf(li);
      if (top == static_cast<int>(it->second)) continue;  // Recursion says nothing.
      // A registry entry under a name the value gets only behind a check (`{"softmax-xformers":
      // MemoryEfficientCrossAttention}`) is looked up only there.
      const bool entry = k >= l.begin + 2 && m.IsOp(m.T(k - 1), ":") &&
                         m.T(k - 2).kind() == TokKind::kString &&
                         m.IsCheckedLiteral(StringBody(m.Text(m.T(k - 2))));
      refs[it->second].push_back(Ref{m.IsGuarded(li) || entry, m.StopGuarded(li), top});
    }
  }
  // The definitions called only behind checks; with `stops` false, behind checks other than a
  // stop before the call (the rest are reached on the run's only path once the stop goes).
  auto fixpoint = [&](bool stops) {
    std::unordered_set<std::size_t> guarded;
    for (bool grew = true; grew;) {
      grew = false;
      for (const auto& [s, calls] : refs) {  // A function never named here has no entry.
        if (guarded.count(s)) continue;
        const bool all = std::all_of(calls.begin(), calls.end(), [&](const Ref& r) {
          return (r.guarded && (stops || !r.stop)) ||
                 (r.in_top >= 0 && guarded.count(static_cast<std::size_t>(r.in_top)));
        });
        if (all) {
          guarded.insert(s);
          grew = true;
        }
      }
    }
    return guarded;
  };
  std::unordered_set<std::size_t> guarded = fixpoint(true);
  if (past_stops != nullptr) {
    const std::unordered_set<std::size_t> checked = fixpoint(false);
    for (std::size_t s : guarded)
      if (checked.count(s) == 0) past_stops->insert(s);
  }
  return guarded;
}

}  // namespace dt::scan
