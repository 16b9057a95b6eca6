#include "scan/python_scanner.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>

#include "scan/env_scanners.h"
#include "scan/prefilter.h"
#include "scan/python_lexer.h"
#include "util/strings.h"

namespace dt::scan {

namespace {

bool Is(const Token& t, std::string_view text) { return t.text == text; }
bool IsOp(const Token& t, std::string_view text) { return t.kind == TokKind::kOp && t.text == text; }
bool IsName(const Token& t) { return t.kind == TokKind::kName; }

bool IsDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// "cuda", "cuda:0", and f"cuda:{rank}".
bool IsCudaDeviceString(const Token& t) {
  if (t.kind != TokKind::kString || IsBytes(t.text)) return false;
  std::string_view body = StringBody(t.text);
  if (body == "cuda") return true;
  if (!StartsWith(body, "cuda:")) return false;
  std::string_view rest = body.substr(5);
  return IsDigits(rest) || (IsFString(t.text) && StartsWith(rest, "{"));
}

class PythonScanner {
 public:
  PythonScanner(std::string_view src, FindingSink& sink, bool is_setup_py)
      : sink_(sink),
        reg_(sink.registry()),
        setup_py_(is_setup_py),
        always_(is_setup_py || !sink.registry().user_rules().empty()),
        source_(src),
        lex_(LexInto(src)),
        triggers_(always_ ? std::vector<Prefilter::Match>{} : Triggers().FindAll(src)) {}

  PyScanResult Run() {
    const auto n = lex_.lines.size();
    optional_line_.assign(n, false);
    MarkOptionalImports();
    for (std::size_t i = 0; i < n; ++i) CollectImports(i);
    for (int round = 0; round < 2; ++round)
      for (std::size_t i = 0; i < n; ++i) CollectGuards(i);
    Findings();
    return std::move(result_);
  }

 private:
  const Token& T(std::size_t k) const { return lex_.tokens[k]; }

  // Lexes into this thread's token storage, reused from file to file (scanners do not nest).
  static const Lexed& LexInto(std::string_view src) {
    thread_local Lexed storage;
    LexPython(src, storage);
    return storage;
  }
  std::string_view First(const LogicalLine& l) const { return T(l.begin).text; }

  // Lines inside a `try:` whose handler catches ImportError (or everything) are optional imports.
  void MarkOptionalImports() {
    const auto& lines = lex_.lines;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (First(lines[i]) != "try") continue;
      std::uint32_t indent = lines[i].indent;
      std::size_t j = i + 1;
      while (j < lines.size() && lines[j].indent > indent) ++j;
      bool optional = false;
      for (std::size_t k = j; k < lines.size() && lines[k].indent == indent; ++k) {
        std::string_view f = First(lines[k]);
        if (f != "except") break;
        bool bare = lines[k].end - lines[k].begin <= 2;
        for (auto t = lines[k].begin; t < lines[k].end; ++t)
          if (Is(T(t), "ImportError") || Is(T(t), "ModuleNotFoundError") || Is(T(t), "Exception"))
            optional = true;
        optional |= bare;
        while (k + 1 < lines.size() && lines[k + 1].indent > indent) ++k;
      }
      if (optional)
        for (std::size_t k = i + 1; k < j; ++k) optional_line_[k] = true;
    }
  }

  // Reads a dotted name starting at token k; returns the end index.
  std::size_t Dotted(std::size_t k, std::size_t end, std::string& out) const {
    out.clear();
    while (k < end && IsName(T(k))) {
      out.append(T(k).text);
      if (k + 2 < end && IsOp(T(k + 1), ".") && IsName(T(k + 2))) {
        out.push_back('.');
        k += 2;
      } else {
        return k + 1;
      }
    }
    return k;
  }

  void CollectImports(std::size_t li) {
    const auto& l = lex_.lines[li];
    std::string_view f = First(l);
    bool optional = optional_line_[li];
    if (f == "import") {
      std::size_t k = l.begin + 1;
      while (k < l.end) {
        std::string mod;
        std::size_t first_tok = k;
        k = Dotted(k, l.end, mod);
        if (mod.empty()) break;
        result_.imports.push_back(PyImport{mod, 0, {}});
        std::string_view local = T(first_tok).text;
        std::string target(local);
        if (k + 1 < l.end && Is(T(k), "as") && IsName(T(k + 1))) {
          local = T(k + 1).text;
          target = mod;
          k += 2;
        }
        Bind(local, target, optional, mod);
        if (k < l.end && IsOp(T(k), ",")) ++k; else break;
      }
    } else if (f == "from") {
      std::size_t k = l.begin + 1;
      int level = 0;
      while (k < l.end && T(k).kind == TokKind::kOp && (Is(T(k), ".") || Is(T(k), "..."))) {
        level += static_cast<int>(T(k).text.size());
        ++k;
      }
      std::string mod;
      k = Dotted(k, l.end, mod);
      if (k >= l.end || !Is(T(k), "import")) return;
      ++k;
      PyImport imp{mod, level, {}};
      for (; k < l.end; ++k) {
        if (!IsName(T(k))) continue;
        std::string name(T(k).text);
        std::string_view local = T(k).text;
        if (k + 2 < l.end && Is(T(k + 1), "as") && IsName(T(k + 2))) {
          local = T(k + 2).text;
          k += 2;
        }
        imp.names.push_back(name);
        if (level == 0) Bind(local, mod.empty() ? name : mod + "." + name, optional, mod);
      }
      result_.imports.push_back(std::move(imp));
    }
  }

  void Bind(std::string_view local, const std::string& target, bool optional,
            const std::string& module) {
    alias_[local] = target;
    if (optional) optional_names_.insert(local);
    if (IsExtensionModule(module)) ext_names_.insert(local);
    if (optional || IsExtensionModule(module) || reg_.LibraryForModule(target) != nullptr ||
        target.find("cud") != std::string::npos || target.find("CUD") != std::string::npos ||
        reg_.MatchApi(target) != nullptr)
      hot_names_.insert(local);
  }

  // The words that can make a statement interesting on their own.
  static const Prefilter& Triggers() {
    static const Prefilter kTriggers({"cud", "nccl", "float64", "double", "multi_margin",
                                      "multimargin", "gencode", "arch=compute_", "arch=sm_"});
    return kTriggers;
  }

  // Cheap test before any analysis of tokens [b, e): a trigger substring or a hot name.
  bool Maybe(std::size_t b, std::size_t e) const {
    if (b >= e) return false;
    if (always_) return true;
    // One search of the whole source up front (triggers_) instead of one per statement; tokens
    // are views into the source, so their offsets index it.
    auto s = static_cast<std::size_t>(T(b).text.data() - source_.data());
    auto f = static_cast<std::size_t>(T(e - 1).text.data() + T(e - 1).text.size() - source_.data());
    auto it = std::lower_bound(triggers_.begin(), triggers_.end(), s,
                               [](const Prefilter::Match& m, std::size_t v) { return m.start < v; });
    for (; it != triggers_.end() && it->start < f; ++it)
      if (it->end <= f) return true;
    if (hot_names_.empty()) return false;
    for (std::size_t k = b; k < e; ++k)
      if (IsName(T(k)) && hot_names_.count(T(k).text)) return true;
    return false;
  }

  // A compiled CUDA extension: a top-level module named like one ("fused_gelu_cuda"), not a
  // known library or part of torch.
  bool IsExtensionModule(std::string_view module) const {
    std::string_view top = module.substr(0, module.find('.'));
    if (top == "torch" || reg_.LibraryForModule(module) != nullptr) return false;
    std::string lower;
    for (char c : top) lower.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c));
    return lower.find("cuda") != std::string::npos;
  }

  // The chain of NAME(.NAME)* starting at k, resolved through the import aliases.
  std::size_t Chain(std::size_t k, std::size_t end, std::string& resolved, std::string& head) const {
    std::string raw;
    std::size_t e = Dotted(k, end, raw);
    head = std::string(T(k).text);
    auto it = alias_.find(T(k).text);
    if (it != alias_.end()) {
      resolved = it->second + raw.substr(head.size());
    } else {
      resolved = std::move(raw);
    }
    return e;
  }

  bool InComparison(std::size_t k, std::size_t b, std::size_t e) const {
    if (k > b && (IsOp(T(k - 1), "==") || IsOp(T(k - 1), "!="))) return true;
    if (k + 1 < e && (IsOp(T(k + 1), "==") || IsOp(T(k + 1), "!=") || Is(T(k + 1), "in")))
      return true;
    std::size_t j = k;
    while (j > b && (T(j - 1).kind == TokKind::kString || IsOp(T(j - 1), ","))) --j;
    return j > b + 1 && (IsOp(T(j - 1), "(") || IsOp(T(j - 1), "[") || IsOp(T(j - 1), "{")) &&
           Is(T(j - 2), "in");
  }

  // Whether tokens [b, e) test for CUDA.
  bool IsCheck(std::size_t b, std::size_t e) const {
    if (!Maybe(b, e)) return false;
    for (std::size_t k = b; k < e; ++k) {
      const Token& t = T(k);
      if (t.kind == TokKind::kString) {
        if (IsCudaDeviceString(t) && InComparison(k, b, e)) return true;
        continue;
      }
      if (!IsName(t)) continue;
      bool after_dot = k > b && IsOp(T(k - 1), ".");
      if (after_dot) {
        if (t.text == "is_cuda") return true;
        if (guard_attrs_.count(t.text)) return true;
        continue;
      }
      if (guard_names_.count(t.text) || optional_names_.count(t.text)) return true;
      if (t.text != "torch" && !alias_.count(t.text)) continue;
      std::string resolved, head;
      std::size_t ce = Chain(k, e, resolved, head);
      if (const PythonApi* api = reg_.MatchApi(resolved); api != nullptr && api->guard) return true;
      k = ce - 1;
    }
    return false;
  }

  // Conditional expressions (`a if check else b`) anywhere in the line.
  bool HasGuardedConditional(const LogicalLine& l) const {
    for (std::size_t k = l.begin + 1; k < l.end; ++k) {
      if (!Is(T(k), "if")) continue;
      std::size_t e = k + 1;
      int depth = 0;
      for (; e < l.end; ++e) {
        std::string_view s = T(e).text;
        if (T(e).kind == TokKind::kOp && (s == "(" || s == "[" || s == "{")) ++depth;
        if (T(e).kind == TokKind::kOp && (s == ")" || s == "]" || s == "}") && --depth < 0) break;
        if (depth == 0 && s == "else") break;
      }
      if (IsCheck(k + 1, e)) return true;
    }
    return false;
  }

  std::size_t FindColon(const LogicalLine& l) const {
    int depth = 0;
    for (std::size_t k = l.begin; k < l.end; ++k) {
      std::string_view s = T(k).text;
      if (T(k).kind != TokKind::kOp) continue;
      if (s == "(" || s == "[" || s == "{") ++depth;
      else if (s == ")" || s == "]" || s == "}") --depth;
      else if (depth == 0 && s == ":") return k;
    }
    return l.end;
  }

  // Variables assigned from a CUDA check and functions that return one.
  void CollectGuards(std::size_t li) {
    const auto& l = lex_.lines[li];
    std::string_view f = First(l);
    if (f == "def") {
      if (l.end - l.begin < 2) return;
      std::string_view name = T(l.begin + 1).text;
      for (std::size_t j = li + 1; j < lex_.lines.size() && lex_.lines[j].indent > l.indent; ++j) {
        const auto& body = lex_.lines[j];
        if (First(body) == "return" && IsCheck(body.begin + 1, body.end)) {
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
    if (!IsCheck(eq + 1, l.end)) return;  // IsCheck starts with the cheap Maybe().
    const Token& target = T(eq - 1);
    if (!IsName(target)) return;
    if (eq - 1 == l.begin) guard_names_.insert(target.text);
    else if (eq - 1 > l.begin && IsOp(T(eq - 2), ".")) guard_attrs_.insert(target.text);
    hot_names_.insert(target.text);
  }

  struct Block {
    std::uint32_t indent;
    bool guarded;
  };

  void Findings() {
    std::vector<Block> stack;
    // Per indent: whether the last if/elif there was a negated check (`if not cuda:`).
    std::unordered_map<std::uint32_t, int> last_if;
    for (std::size_t li = 0; li < lex_.lines.size(); ++li) {
      const auto& l = lex_.lines[li];
      while (!stack.empty() && stack.back().indent >= l.indent) stack.pop_back();
      bool guarded = !stack.empty() && stack.back().guarded;
      std::string_view f = First(l);
      bool line_guard = guarded;
      bool compound = (f == "if" || f == "elif" || f == "else" || f == "while" || f == "for" ||
                       f == "with" || f == "def" || f == "class" || f == "try" || f == "except" ||
                       f == "finally" || f == "async" || f == "match" || f == "case") &&
                      FindColon(l) < l.end;
      bool block_guard = guarded;
      if (f == "if" || f == "elif" || f == "while") {
        std::size_t colon = FindColon(l);
        bool negated = l.begin + 1 < l.end && Is(T(l.begin + 1), "not");
        bool check = IsCheck(l.begin + 1, colon);
        if (check && !negated) block_guard = line_guard = true;
        last_if[l.indent] = check ? (negated ? 2 : 1) : 0;
      } else if (f == "else") {
        if (last_if[l.indent] == 2) block_guard = line_guard = true;
      }
      if (f == "if" && Is(T(l.begin + 1), "__name__")) {
        for (auto k = l.begin; k < l.end; ++k)
          if (T(k).kind == TokKind::kString && StringBody(T(k).text) == "__main__")
            result_.has_main = true;
      }
      if (compound) stack.push_back(Block{l.indent, block_guard});
      if (!line_guard && HasGuardedConditional(l)) line_guard = true;
      if (f == "import" || f == "from") {
        ImportFindings(l, line_guard || optional_line_[li]);
      } else {
        LineFindings(l, line_guard);
      }
    }
  }

  void ImportFindings(const LogicalLine& l, bool guarded) {
    std::string_view f = First(l);
    std::vector<std::pair<std::string, std::size_t>> names;  // Full dotted name, token.
    if (f == "import") {
      for (std::size_t k = l.begin + 1; k < l.end;) {
        std::string mod;
        std::size_t e = Dotted(k, l.end, mod);
        if (mod.empty()) break;
        names.emplace_back(mod, k);
        k = e;
        if (k + 1 < l.end && Is(T(k), "as")) k += 2;
        if (k < l.end && IsOp(T(k), ",")) ++k; else break;
      }
    } else {
      std::size_t k = l.begin + 1;
      if (k < l.end && IsOp(T(k), ".")) return;  // Relative imports are the project's own.
      std::string mod;
      std::size_t e = Dotted(k, l.end, mod);
      if (mod.empty()) return;
      names.emplace_back(mod, k);
      for (k = e + 1; k < l.end; ++k) {
        if (!IsName(T(k))) continue;
        if (k > l.begin && Is(T(k - 1), "as")) continue;
        names.emplace_back(mod + "." + std::string(T(k).text), k);
      }
    }
    for (const auto& [full, k] : names) {
      const Token& t = T(k);
      if (const Library* lib = reg_.LibraryForModule(full)) {
        sink_.Add("DT201", t.line, t.column, lib->name + " (" + full + ")", guarded,
                  lib->alternative);
        continue;
      }
      if (IsExtensionModule(full)) {
        sink_.Add("DT305", t.line, t.column, full.substr(0, full.find('.')), guarded);
        continue;
      }
      ApiFinding(full, t, guarded);
    }
  }

  // Registry match (or the torch.cuda catch-all) for a resolved dotted name.
  bool ApiFinding(const std::string& resolved, const Token& at, bool guarded) {
    if (const PythonApi* api = reg_.MatchApi(resolved)) {
      if (api->guard) return true;
      sink_.Add(api->code, at.line, at.column, resolved, guarded, api->replacement);
      return true;
    }
    if (StartsWith(resolved, "torch.cuda.")) {
      auto third = resolved.find('.', 11);
      sink_.Add("DT110", at.line, at.column, resolved.substr(0, third), guarded);
      return true;
    }
    return false;
  }

  void LineFindings(const LogicalLine& l, bool guarded) {
    if (!Maybe(l.begin, l.end)) return;
    bool docstring = true;
    for (auto k = l.begin; k < l.end; ++k) docstring &= T(k).kind == TokKind::kString;
    if (docstring) return;
    for (std::size_t k = l.begin; k < l.end; ++k) {
      const Token& t = T(k);
      if (t.kind == TokKind::kString) {
        StringFinding(k, l, guarded);
        continue;
      }
      if (!IsName(t)) continue;
      bool after_dot = k > l.begin && IsOp(T(k - 1), ".");
      if (after_dot) {
        bool call = k + 1 < l.end && IsOp(T(k + 1), "(");
        if (t.text == "cuda" && call) {
          sink_.Add("DT101", t.line, t.column, ".cuda()", guarded);
        } else if (t.text == "is_cuda") {
          sink_.Add("DT109", t.line, t.column, ".is_cuda", true);
        } else if (t.text == "double" && call && k + 2 < l.end && IsOp(T(k + 2), ")")) {
          sink_.Add("DT204", t.line, t.column, ".double()", guarded);
        }
        continue;
      }
      if (t.text == "def" || t.text == "class") {
        ++k;  // The defined name is not a use.
        continue;
      }
      if (t.text != "torch" && !alias_.count(t.text)) continue;
      std::string resolved, head;
      std::size_t ce = Chain(k, l.end, resolved, head);
      bool assigned = ce == k + 1 && ce < l.end && IsOp(T(ce), "=");  // `name = None` fallback.
      bool none_test = ce < l.end && Is(T(ce), "is");
      bool imported = alias_.count(t.text) > 0;
      if (!assigned && !none_test) {
        bool use_guard = guarded || optional_names_.count(t.text) > 0;
        if (!ApiFinding(resolved, t, guarded) && imported) {
          if (const Library* lib = reg_.LibraryForModule(resolved)) {
            sink_.Add("DT202", t.line, t.column, resolved, use_guard, lib->alternative);
          } else if (ext_names_.count(t.text)) {
            sink_.Add("DT305", t.line, t.column, resolved, use_guard);
          }
        }
      }
    }
  }

  void StringFinding(std::size_t k, const LogicalLine& l, bool guarded) {
    const Token& t = T(k);
    if (IsBytes(t.text)) return;
    if (IsCudaDeviceString(t)) {
      if (InComparison(k, l.begin, l.end)) {
        sink_.Add("DT109", t.line, t.column, std::string(t.text), true);
      } else {
        sink_.Add("DT102", t.line, t.column, std::string(t.text), guarded);
      }
      return;
    }
    std::string_view body = StringBody(t.text);
    if (body == "nccl") {
      sink_.Add("DT205", t.line, t.column, std::string(t.text), guarded);
      return;
    }
    for (std::string_view key : {"TORCH_CUDA_ARCH_LIST", "-gencode", "arch=compute_", "arch=sm_",
                                 "CUDA_ARCHITECTURES"}) {
      if (body.find(key) != std::string_view::npos) {
        sink_.Add("DT302", t.line, t.column, key, guarded);
        return;
      }
    }
    if (setup_py_ && !body.empty() && body.size() < 200) {
      CheckRequirement(body, sink_, t.line, t.column);
    }
  }

  FindingSink& sink_;
  const Registry& reg_;
  bool setup_py_;
  bool always_;  // setup.py strings and user rules bypass the cheap line test.
  std::string_view source_;
  const Lexed& lex_;
  std::vector<Prefilter::Match> triggers_;  // Where the trigger words occur in the source.
  PyScanResult result_;
  std::vector<bool> optional_line_;
  // Keys are views into the source, which outlives the scanner.
  std::unordered_map<std::string_view, std::string> alias_;
  std::unordered_set<std::string_view> optional_names_;
  std::unordered_set<std::string_view> ext_names_;
  std::unordered_set<std::string_view> guard_names_;
  std::unordered_set<std::string_view> guard_attrs_;
  // Names whose mention can make a line interesting (library, extension, optional and guard
  // names); lines with none of them and none of kNeedles are skipped without analysis.
  std::unordered_set<std::string_view> hot_names_;
};

}  // namespace

PyScanResult ScanPython(std::string_view source, FindingSink& sink, bool is_setup_py) {
  return PythonScanner(source, sink, is_setup_py).Run();
}

}  // namespace dt::scan
