// The semantic model's queries: tokens read in context, scopes, name resolution, what an import
// target is, kernels and the cheap line test.
#include "scan/python_model.h"

#include <algorithm>

namespace dt::scan {

PyModel::PyModel(std::string_view src, const Registry& reg, const PyScanOptions& opt)
    : PyTokens(LexInto(src)),
      reg_(reg),
      opt_(opt),
      always_(opt.setup_py || !reg.user_rules().empty()),
      source_(src) {
  // The statement-level prefilter: the registry's trigger words.
  if (!always_ && !opt.imports_only) triggers_ = reg_.PythonPrefilter().FindAll(src);
}

// Lexes into this thread's token storage, reused from file to file (scanners do not nest).
const Lexed& PyModel::LexInto(std::string_view src) {
  thread_local Lexed storage;
  LexPython(src, storage);
  return storage;
}

// Whether some trigger word occurs in code: in a token that is not a comment, and not a string
// statement (a docstring). Most files that hold a trigger word hold it only there ("CUDA" in a
// docstring, "double" in a comment); nothing in them can make a finding.
bool PyModel::TriggerInCode() const {
  std::size_t k = 0;  // The last token that starts at or before the match.
  std::size_t li = 0;
  std::size_t strings_only = static_cast<std::size_t>(-1);  // A line of strings alone.
  const auto& tokens = lex_.tokens;
  for (const auto& m : triggers_) {
    while (k + 1 < tokens.size() && tokens[k + 1].offset <= m.start) ++k;
    if (k >= tokens.size() || tokens[k].offset > m.start ||
        m.start >= tokens[k].offset + tokens[k].size())
      continue;  // Between tokens: a comment.
    if (tokens[k].kind() != TokKind::kString) return true;
    while (li + 1 < lex_.lines.size() && lex_.lines[li].end <= k) ++li;
    if (li == strings_only) continue;  // Read already (once per line: matches come in order).
    if (!StringsOnly(lex_.lines[li])) return true;
    strings_only = li;
  }
  return false;
}

namespace {

// Whether logical line `l` imports a kernel library's compiled module (`import rotary_emb`, `from
// amp_C import x`: Registry::IsCompiledModule), which names no trigger word: such a file is read in
// full. (Read from the tokens: ImportsOnly() runs before the imports are collected.)
bool CompiledImport(const PyModel& m, const LogicalLine& l) {
  if (l.end - l.begin < 2) return false;
  const bool from = m.Is(m.T(l.begin), "from");
  if (!from && !m.Is(m.T(l.begin), "import")) return false;
  for (std::size_t k = l.begin + 1; k < l.end; ++k) {
    if (from && k > l.begin + 1) break;  // `from X import`: X alone names a module.
    if (m.IsName(m.T(k)) && !m.IsOp(m.T(k - 1), ".") && !m.Is(m.T(k - 1), "as") &&
        m.reg().IsCompiledModule(m.Text(m.T(k))))
      return true;
  }
  return false;
}

}  // namespace

bool PyModel::ImportsOnly() const {
  if (opt_.imports_only) return true;
  if (always_ || opt_.cuda != nullptr || opt_.collect_calls || TriggerInCode()) return false;
  return std::none_of(lex_.lines.begin(), lex_.lines.end(),
                      [&](const LogicalLine& l) { return CompiledImport(*this, l); });
}

// --- Tokens and lines ----------------------------------------------------------------------------

// --- Scopes and names ----------------------------------------------------------------------------

LineRange PyModel::ScopeLines(std::size_t s) const {
  const PyScope& sc = scopes_[s];
  return {lex_.Line(T(lex_.lines[sc.first_line].begin)),
          lex_.Line(T(lex_.lines[sc.last_line].end - 1))};
}

bool PyModel::Shadowed(std::string_view name, int s) const {
  for (; s > 0; s = scopes_[static_cast<std::size_t>(s)].parent)
    if (scopes_[static_cast<std::size_t>(s)].params.count(name)) return true;
  return false;
}

const std::string* PyModel::LookupBound(std::string_view name, int s) const {
  for (; s >= 0; s = scopes_[static_cast<std::size_t>(s)].parent) {
    const PyScope& sc = scopes_[static_cast<std::size_t>(s)];
    if (sc.params.count(name)) return nullptr;
    auto it = sc.alias.find(name);
    if (it != sc.alias.end()) return &it->second;
  }
  return nullptr;
}

bool PyModel::IsHandleBound(std::string_view name, int s) const {
  for (; s >= 0; s = scopes_[static_cast<std::size_t>(s)].parent) {
    const PyScope& sc = scopes_[static_cast<std::size_t>(s)];
    if (sc.local_names.count(name)) return true;
    if (sc.params.count(name) || sc.alias.count(name)) return false;
  }
  return false;
}

std::size_t PyModel::Chain(std::size_t k, std::size_t end, int s, std::string& resolved,
                           std::string& head) const {
  std::string raw;
  std::size_t e = Dotted(k, end, raw);
  head = std::string(lex_.Text(T(k)));
  if (const std::string* target = Lookup(lex_.Text(T(k)), s)) {
    resolved = *target + raw.substr(head.size());
  } else {
    resolved = std::move(raw);
  }
  return e;
}

std::string PyModel::Callee(std::size_t open, std::size_t b, int scope) const {
  if (open == static_cast<std::size_t>(-1) || open <= b || !IsOp(T(open), "(")) return {};
  std::size_t j = open;  // Walk back over NAME(.NAME)*.
  while (j > b && IsName(T(j - 1)) && j - 1 > b && IsOp(T(j - 2), ".")) j -= 2;
  if (j > b && IsName(T(j - 1))) --j;
  if (j >= open || !IsName(T(j))) return {};
  std::string resolved, head;
  Chain(j, open, scope, resolved, head);
  return resolved;
}

// --- Imports -------------------------------------------------------------------------------------

std::string PyModel::Absolute(int level, const std::string& mod) const {
  if (level == 0) return mod;
  if (opt_.package.empty() && level == 1) return mod;
  std::string base = opt_.package;
  for (int i = 1; i < level; ++i) {
    auto dot = base.rfind('.');
    if (dot == std::string::npos) return mod;
    base.resize(dot);
  }
  if (base.empty()) return mod;
  return mod.empty() ? base : base + "." + mod;
}

bool PyModel::IsOwn(std::string_view dotted) const {
  if (opt_.own_tops == nullptr) return false;
  return opt_.own_tops->count(std::string(dotted.substr(0, dotted.find('.')))) > 0;
}

bool PyModel::IsExtensionModule(std::string_view module) const {
  if (opt_.cuda != nullptr && opt_.cuda->IsModule(module)) return true;
  std::string_view top = module.substr(0, module.find('.'));
  // Named like one: most modules are not, and are turned away before any lookup.
  return py::ContainsFolded(top, "cuda") && reg_.LibraryForModule(module) == nullptr &&
         !IsOwn(module);
}

// Whether a symbol is defined in this file's own package (`pkg.ops.a` seen from pkg/ops/b.py)
// and this file is itself one of the kernel library's modules (it defines kernels): calls
// between those are the library's plumbing, reported where other code depends on it. A module
// of the same package that only uses the kernels (whisper's timing.py importing triton_ops) is
// such other code. Root-level scripts have no package and always see the symbol.
bool PyModel::SiblingSymbol(const std::string& dotted) const {
  if (opt_.package.empty() || kernel_lib_ == nullptr) return false;
  auto last = dotted.rfind('.');
  if (last == std::string::npos) return false;
  auto mod_end = dotted.rfind('.', last - 1);
  if (mod_end == std::string::npos) return false;
  return std::string_view(dotted).substr(0, mod_end) == opt_.package;
}

// --- Kernels -------------------------------------------------------------------------------------

bool PyModel::InKernelBody(std::size_t li) const {
  for (int s = ScopeOf(li); s > 0; s = scopes_[static_cast<std::size_t>(s)].parent)
    if (scopes_[static_cast<std::size_t>(s)].kernel) return true;
  return false;
}

bool PyModel::InLaunch(std::size_t li) const {
  const auto& l = lex_.lines[li];
  for (std::size_t k = l.begin; k + 1 < l.end; ++k)
    if (IsName(T(k)) && kernel_names_.count(lex_.Text(T(k))) && IsOp(T(k + 1), "[")) return true;
  return false;
}

// --- The cheap line test -------------------------------------------------------------------------

bool PyModel::Maybe(std::size_t b, std::size_t e) const {
  if (b >= e) return false;
  if (always_) return true;
  // One search of the whole source up front (triggers_) instead of one per statement; tokens
  // are views into the source, so their offsets index it.
  auto s = static_cast<std::size_t>(lex_.Text(T(b)).data() - source_.data());
  auto f = static_cast<std::size_t>(lex_.Text(T(e - 1)).data() + lex_.Text(T(e - 1)).size() -
                                    source_.data());
  auto it = std::lower_bound(triggers_.begin(), triggers_.end(), s,
                             [](const Prefilter::Match& m, std::size_t v) { return m.start < v; });
  for (; it != triggers_.end() && it->start < f; ++it)
    if (it->end <= f) return true;
  // One summary test per name against the union of the sets; only a name that passes is hashed.
  std::uint64_t any[4];
  for (int w = 0; w < 4; ++w)
    any[w] = hot_names_.Bits(w) | handle_names_.Bits(w) | (track_refs_ ? top_filter_.Bits(w) : 0);
  for (std::size_t k = b; k < e; ++k) {
    if (!IsName(T(k))) continue;
    const TokenText name = lex_.Text(T(k));
    const unsigned slot = NameSet::Slot(name);
    if ((any[slot >> 6] >> (slot & 63) & 1) == 0) continue;
    if (hot_names_.count(name) || handle_names_.count(name) ||
        (track_refs_ && top_filter_.count(name)))
      return true;
  }
  return false;
}

}  // namespace dt::scan
