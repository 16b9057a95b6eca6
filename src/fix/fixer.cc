#include "fix/fixer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "fix/diff.h"
#include "scan/notebook_scanner.h"
#include "scan/python_lexer.h"
#include "util/fs.h"
#include "util/json_fields.h"
#include "util/strings.h"

namespace dt::fix {

namespace {

using scan::Lexed;
using scan::Token;
using scan::TokKind;

constexpr std::size_t kNone = static_cast<std::size_t>(-1);

// The helpers a fixed module may need, in the order they are written. Each chooses at run time:
// CUDA where it is available (the original call, unchanged), else the Mac's GPU, else the CPU.
// No "cuda" string stands outside a CUDA check in them, so a scan of the fixed file finds nothing
// new and a second fix changes nothing.
struct Helper {
  std::string_view name;
  std::string_view text;
};

constexpr Helper kHelpers[] = {
    {"_dualtrack_device",
     "def _dualtrack_device(index=None):\n"
     "    if torch.cuda.is_available():\n"
     "        if index is None or isinstance(index, (str, torch.device)):\n"
     "            return \"cuda\" if index is None else index\n"
     "        return f\"cuda:{index}\"\n"
     "    accelerator = getattr(torch, \"accelerator\", None)  # torch >= 2.6\n"
     "    if accelerator is not None and accelerator.is_available():\n"
     "        return accelerator.current_accelerator().type\n"
     "    if torch.backends.mps.is_available():\n"
     "        return \"mps\"\n"
     "    return \"cpu\"\n"},
    {"_dualtrack_cuda",
     "def _dualtrack_cuda(name, mps_name=None, default=None):\n"
     "    # torch.cuda.<name> with CUDA, torch.mps.<mps_name> on a Mac, else a call returning "
     "default.\n"
     "    if torch.cuda.is_available():\n"
     "        return getattr(torch.cuda, name)\n"
     "    if mps_name is not None and torch.backends.mps.is_available():\n"
     "        return getattr(torch.mps, mps_name)\n"
     "    if name == \"device\":  # `with torch.cuda.device(i):` selects nothing elsewhere.\n"
     "        import contextlib\n"
     "        return lambda *args, **kwargs: contextlib.nullcontext()\n"
     "    return lambda *args, **kwargs: default\n"},
    {"_dualtrack_autocast",
     "def _dualtrack_autocast(*args, **kwargs):\n"
     "    # torch.cuda.amp.autocast(...) on the device in use; off on the CPU, as it was without "
     "CUDA.\n"
     "    device = _dualtrack_device().split(\":\")[0]\n"
     "    kwargs.update(zip((\"enabled\", \"dtype\", \"cache_enabled\"), args))\n"
     "    if device == \"cpu\":\n"
     "        kwargs[\"enabled\"] = False\n"
     "    return torch.autocast(device, **kwargs)\n"},
    {"_dualtrack_grad_scaler",
     "def _dualtrack_grad_scaler(*args, **kwargs):\n"
     "    # torch.cuda.amp.GradScaler(...) on the device in use; off on the CPU, as it was without "
     "CUDA.\n"
     "    device = _dualtrack_device().split(\":\")[0]\n"
     "    names = (\"init_scale\", \"growth_factor\", \"backoff_factor\", \"growth_interval\", "
     "\"enabled\")\n"
     "    kwargs.update(zip(names, args))\n"
     "    if device == \"cpu\":\n"
     "        kwargs[\"enabled\"] = False\n"
     "    return torch.amp.GradScaler(device, **kwargs)\n"},
    {"_dualtrack_attention",
     "def _dualtrack_attention(query, key, value, attn_bias=None, dropout_p=0.0, scale=None, "
     "causal=False):\n"
     "    # xformers / flash-attn attention through scaled_dot_product_attention, which every "
     "device\n"
     "    # has. Their tensors are [batch, seq, heads, dim] (or [batch, seq, dim]); SDPA's put "
     "heads first.\n"
     "    if type(attn_bias).__name__ == \"LowerTriangularMask\":\n"
     "        attn_bias, causal = None, True\n"
     "    elif attn_bias is not None and not isinstance(attn_bias, torch.Tensor):\n"
     "        raise NotImplementedError(f\"attention bias {type(attn_bias).__name__}: no SDPA "
     "equivalent\")\n"
     "    heads = query.dim() == 4\n"
     "    if heads:\n"
     "        query, key, value = (t.transpose(1, 2) for t in (query, key, value))\n"
     "    extra = {\"enable_gqa\": True} if heads and key.shape[1] != query.shape[1] else {}\n"
     "    out = torch.nn.functional.scaled_dot_product_attention(\n"
     "        query, key, value, attn_mask=attn_bias, dropout_p=dropout_p, is_causal=causal, "
     "scale=scale, **extra)\n"
     "    return out.transpose(1, 2) if heads else out\n"},
};

// torch.cuda functions with a run-time stand-in: the torch.mps function of the same job (empty
// when there is none) and what the call returns where neither exists.
struct CudaCall {
  std::string_view name;
  std::string_view mps;
  std::string_view fallback;  // Python literal; empty: None.
};

constexpr CudaCall kCudaCalls[] = {
    {"synchronize", "synchronize", ""},
    {"empty_cache", "empty_cache", ""},
    {"manual_seed", "manual_seed", ""},
    {"manual_seed_all", "manual_seed", ""},
    {"seed", "seed", ""},
    {"seed_all", "seed", ""},
    {"set_device", "", ""},
    {"device", "", ""},  // A context manager: the helper's stand-in is a null context.
    {"set_per_process_memory_fraction", "set_per_process_memory_fraction", ""},
    {"memory_allocated", "current_allocated_memory", "0"},
    {"max_memory_allocated", "", "0"},
    {"memory_reserved", "driver_allocated_memory", "0"},
    {"max_memory_reserved", "", "0"},
    {"reset_peak_memory_stats", "", ""},
    {"reset_max_memory_allocated", "", ""},
    {"reset_accumulated_memory_stats", "", ""},
    {"ipc_collect", "", ""},
    {"current_device", "", "0"},
    {"get_device_capability", "", "(0, 0)"},
    {"get_device_name", "", ""},
};

const CudaCall* FindCudaCall(std::string_view name) {
  for (const CudaCall& c : kCudaCalls)
    if (c.name == name) return &c;
  return nullptr;
}

// Codes whose findings the fixer rewrites; DT204 only with --unsafe-fixes.
constexpr std::string_view kFixable[] = {
    "DT101", "DT102", "DT103", "DT104", "DT105", "DT106", "DT107", "DT108", "DT112", "DT113",
    "DT115", "DT116", "DT205", "DT211", "DT305", "DT204", "DT201", "DT202", "DT206"};
// Fixes that may change results: float64 -> float32, attention libraries -> SDPA, bitsandbytes
// quantisation -> float16 weights.
constexpr std::string_view kUnsafe[] = {"DT204", "DT201", "DT202", "DT206"};

// Attention calls of xformers and flash-attn: their positional parameters after (q, k, v) and
// keywords, named as _dualtrack_attention names them; an empty name has no SDPA equivalent.
struct AttentionApi {
  std::string_view function;
  std::string_view positional[3];
  std::pair<std::string_view, std::string_view> keywords[7];
};

constexpr AttentionApi kAttentionApis[] = {
    {"memory_efficient_attention",
     {"attn_bias", "dropout_p", "scale"},
     {{"query", "query"},
      {"key", "key"},
      {"value", "value"},
      {"attn_bias", "attn_bias"},
      {"p", "dropout_p"},
      {"scale", "scale"},
      {"", ""}}},
    {"flash_attn_func",
     {"dropout_p", "scale", "causal"},
     {{"q", "query"},
      {"k", "key"},
      {"v", "value"},
      {"dropout_p", "dropout_p"},
      {"softmax_scale", "scale"},
      {"causal", "causal"},
      {"", ""}}},
};

const AttentionApi* FindAttention(std::string_view name) {
  for (const AttentionApi& a : kAttentionApis)
    if (a.function == name) return &a;
  return nullptr;
}

constexpr std::string_view kAttentionModules[] = {"xformers", "flash_attn", "flash_attn_interface"};

struct Edit {
  std::uint32_t begin;
  std::uint32_t end;
  std::string text;
  bool uses_helpers = true;  // The helpers must be defined before it (an import's wrap need not).
};

// What the fix of one source works on: the text it edits, the tokens the scan read (a notebook
// cell with its magics blanked: the same length, the same offsets), the edits made so far, the
// helpers they need, and the module's own device variable.
struct Work {
  Work(std::string_view src, std::string_view lexed, const FixOptions& opt)
      : src(src), opt(opt), lex(scan::LexPython(lexed)) {}
  std::string_view src;
  const FixOptions& opt;
  Lexed lex;
  std::vector<Edit> edits;
  std::set<std::string> needed;  // Helpers, and "torch" for fixes that name it.
  std::string device_var;        // The module's own device variable, if it has one to reuse.
  std::uint32_t device_var_end = 0;
  // Imports the unsafe attention fix wrapped in try/except (their logical line's first token):
  // removed outright at the end when every use of their names was rewritten.
  std::vector<std::size_t> wrapped_imports;
  bool placed = false;  // Some edit puts tensors or modules on the device the helpers choose.
};

// The token and edit machinery of the fixes, over one Work: token queries, edits (none may overlap
// another), the helpers and `import torch` the edits need, and what a plain "cuda" device becomes.
// The rule groups below derive from it and share its Work.
class Editor {
 public:
  explicit Editor(Work& work)
      : src_(work.src),
        opt_(work.opt),
        lex_(work.lex),
        edits_(work.edits),
        wrapped_imports_(work.wrapped_imports),
        placed_(work.placed),
        needed_(work.needed),
        device_var_(work.device_var),
        device_var_end_(work.device_var_end) {}

 protected:
  // --- Tokens ---------------------------------------------------------------------------------
  std::string_view Text(std::size_t k) const { return lex_.Text(lex_.tokens[k]); }
  bool IsOp(std::size_t k, std::string_view op) const {
    return k < lex_.tokens.size() && lex_.tokens[k].kind() == TokKind::kOp && Text(k) == op;
  }
  bool IsName(std::size_t k) const {
    return k < lex_.tokens.size() && lex_.tokens[k].kind() == TokKind::kName;
  }
  bool IsString(std::size_t k) const {
    return k < lex_.tokens.size() && lex_.tokens[k].kind() == TokKind::kString;
  }
  std::uint32_t Begin(std::size_t k) const { return lex_.tokens[k].offset; }
  std::uint32_t End(std::size_t k) const { return lex_.tokens[k].offset + lex_.tokens[k].size(); }
  bool IsOpen(std::size_t k) const { return IsOp(k, "(") || IsOp(k, "[") || IsOp(k, "{"); }
  bool IsClose(std::size_t k) const { return IsOp(k, ")") || IsOp(k, "]") || IsOp(k, "}"); }

  // The token that starts at the finding's line and column.
  std::size_t TokenAt(std::int64_t line, std::int64_t column) const {
    if (line < 1 || static_cast<std::size_t>(line) > lex_.line_starts.size() || column < 1)
      return kNone;
    const std::uint64_t offset = lex_.line_starts[static_cast<std::size_t>(line - 1)] +
                                 static_cast<std::uint64_t>(column - 1);
    auto it = std::lower_bound(lex_.tokens.begin(), lex_.tokens.end(), offset,
                               [](const Token& t, std::uint64_t o) { return t.offset < o; });
    if (it == lex_.tokens.end() || it->offset != offset) return kNone;
    return static_cast<std::size_t>(it - lex_.tokens.begin());
  }

  std::size_t Matching(std::size_t open) const {
    int depth = 0;
    for (std::size_t k = open; k < lex_.tokens.size(); ++k) {
      if (IsOpen(k))
        ++depth;
      else if (IsClose(k) && --depth == 0)
        return k;
    }
    return kNone;
  }

  // The NAME(.NAME)* chain through token k: its first token and the one after its last.
  std::pair<std::size_t, std::size_t> ChainAround(std::size_t k) const {
    std::size_t b = k;
    while (b >= 2 && IsOp(b - 1, ".") && IsName(b - 2)) b -= 2;
    std::size_t e = k + 1;
    while (IsOp(e, ".") && IsName(e + 1)) e += 2;
    return {b, e};
  }

  // Arguments of the call opening at `open`: [begin, end) token ranges at its own depth.
  std::vector<std::pair<std::size_t, std::size_t>> Args(std::size_t open, std::size_t close) const {
    std::vector<std::pair<std::size_t, std::size_t>> args;
    int depth = 0;
    std::size_t start = open + 1;
    for (std::size_t k = open + 1; k < close; ++k) {
      if (IsOpen(k))
        ++depth;
      else if (IsClose(k))
        --depth;
      else if (depth == 0 && IsOp(k, ",")) {
        args.emplace_back(start, k);
        start = k + 1;
      }
    }
    if (start < close) args.emplace_back(start, close);
    return args;
  }
  bool IsKeywordArg(std::pair<std::size_t, std::size_t> a) const {
    return a.second > a.first + 1 && IsName(a.first) && IsOp(a.first + 1, "=");
  }

  // --- Edits ----------------------------------------------------------------------------------
  bool Add(std::uint32_t begin, std::uint32_t end, std::string text, bool uses_helpers = true) {
    for (const Edit& e : edits_)
      if (begin < e.end && e.begin < end) return false;  // Overlaps an edit already made.
    for (const Edit& e : edits_)
      if (begin == end && e.begin == e.end && e.begin == begin) return false;
    edits_.push_back(Edit{begin, end, std::move(text), uses_helpers});
    return true;
  }

  // The edited text; `replaced` receives where each edit landed (for a diff of the changed lines
  // only). Lines an edit adds end as the line they go into ends: a CRLF file stays CRLF.
  std::string Apply(std::vector<Replaced>& replaced) {
    if (edits_.empty()) return std::string(src_);
    InsertHelpers();
    std::stable_sort(edits_.begin(), edits_.end(), [](const Edit& a, const Edit& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    const bool has_cr = src_.find('\r') != std::string_view::npos;
    std::string out;
    out.reserve(src_.size() + 1024);
    std::uint32_t at = 0;
    for (const Edit& e : edits_) {
      out.append(src_.substr(at, e.begin - at));
      const std::size_t begin = out.size();
      if (has_cr && LineEndsInCrLf(e.begin))
        AppendWithCrLf(out, e.text);
      else
        out.append(e.text);
      replaced.push_back(Replaced{e.begin, e.end, begin, out.size()});
      at = e.end;
    }
    out.append(src_.substr(at));
    return out;
  }

  // Whether the line holding byte `at` ends in CR LF (a last line without an end: the line
  // before it).
  bool LineEndsInCrLf(std::uint32_t at) const {
    std::size_t nl = src_.find('\n', at);
    if (nl == std::string_view::npos) nl = at > 0 ? src_.rfind('\n', at - 1) : nl;
    return nl != std::string_view::npos && nl > 0 && src_[nl - 1] == '\r';
  }

  static void AppendWithCrLf(std::string& out, std::string_view text) {
    for (std::size_t k = 0; k < text.size(); ++k) {
      if (text[k] == '\n' && (k == 0 || text[k - 1] != '\r')) out += '\r';
      out += text[k];
    }
  }

  // The helpers go after the module's leading imports (and its docstring and __future__ imports),
  // or before the first statement an edit touches when that comes earlier: they must be defined
  // before module-level code and parameter defaults use them.
  void InsertHelpers() {
    std::set<std::string_view> defined(opt_.defined.begin(), opt_.defined.end());
    for (std::size_t k = 0; k + 1 < lex_.tokens.size(); ++k)
      if (Text(k) == "def" && IsName(k + 1)) defined.insert(Text(k + 1));
    std::string helpers;
    for (const Helper& h : kHelpers)
      if (needed_.count(std::string(h.name)) && !defined.count(h.name)) {
        helpers += "\n\n";
        helpers += h.text;
      }
    const std::string import_line =
        !needed_.empty() && !opt_.torch_imported && !ImportsTorch() ? "import torch\n" : "";
    if (helpers.empty() && import_line.empty()) return;
    std::uint32_t first_edit = static_cast<std::uint32_t>(src_.size());
    for (const Edit& e : edits_)
      if (e.uses_helpers) first_edit = std::min(first_edit, e.begin);
    // End of the import header: the line after its last import.
    std::uint32_t at = 0;
    bool docstring_allowed = true;
    for (const scan::LogicalLine& l : lex_.lines) {
      if (l.begin >= l.end) continue;
      const std::string_view head = Text(l.begin);
      const bool docstring = docstring_allowed && l.end == l.begin + 1 && IsString(l.begin);
      docstring_allowed = false;
      if (l.indent != 0) continue;
      if (!(docstring || head == "import" || head == "from")) break;
      if (End(l.end - 1) > first_edit) break;
      at = LineEndAfter(End(l.end - 1));
    }
    if (at > first_edit) at = static_cast<std::uint32_t>(src_.rfind('\n', first_edit) + 1);
    std::string text = import_line;
    if (!helpers.empty()) {
      // Two blank lines above and below each definition, as PEP 8 has them; below, the file's
      // own blank lines count.
      text += at == 0 && import_line.empty() ? helpers.substr(2) : helpers;
      std::size_t blank = 0;
      for (std::size_t p = at; p < src_.size() && blank < 2; ++p, ++blank) {
        if (src_[p] == '\r' && p + 1 < src_.size() && src_[p + 1] == '\n') ++p;  // CRLF
        if (src_[p] != '\n') break;
      }
      if (at < src_.size()) text += std::string(2 - blank, '\n');
    }
    if (at > 0 && src_[at - 1] != '\n') text = "\n" + text;  // A last line without its newline.
    edits_.push_back(Edit{at, at, std::move(text)});
  }

  // The names an import statement binds (`import a.b` binds a; `as` names win), in order.
  std::vector<std::string_view> BoundNames(const scan::LogicalLine& l) const {
    std::vector<std::string_view> bound;
    const bool from = Text(l.begin) == "from";
    std::size_t t = l.begin + 1;
    if (from) {
      while (t < l.end && Text(t) != "import") ++t;
      ++t;
    }
    for (; t < l.end; ++t) {
      if (!IsName(t)) continue;
      std::size_t end = t + 1;
      while (!from && IsOp(end, ".") && IsName(end + 1)) end += 2;
      std::string_view name = Text(t);
      if (end < l.end && Text(end) == "as" && IsName(end + 1)) name = Text(end + 1), end += 2;
      bound.push_back(name);
      t = end;
    }
    return bound;
  }

  // The import statement holding token k, alone on its physical line (the forms the try/except
  // wrap below rewrites), or a note why not.
  const scan::LogicalLine* ImportAt(std::size_t k, std::string& why) const {
    auto line = std::find_if(lex_.lines.begin(), lex_.lines.end(),
                             [&](const scan::LogicalLine& l) { return l.begin <= k && k < l.end; });
    why = "no statement at the finding";
    if (line == lex_.lines.end()) return nullptr;
    const std::size_t first = line->begin;
    why = "not an import statement";
    if (Text(first) != "import" && Text(first) != "from") return nullptr;
    why = "an import over several lines or with other statements: left for review";
    if (lex_.Line(lex_.tokens[first]) != lex_.Line(lex_.tokens[line->end - 1]) ||
        LineEndAfter(End(line->end - 1)) != LineEndAfter(Begin(first)) ||
        src_.find(';', Begin(first)) < LineEndAfter(Begin(first)))
      return nullptr;
    return &*line;
  }

  // The import statement `l` inside try/except ImportError, the names it binds None without the
  // module; `why` comments the except. The keyword itself is replaced, not a point before it: the
  // `except` of an import wrapped on the line above is inserted at that point.
  bool WrapImport(const scan::LogicalLine& l, const std::vector<std::string_view>& bound,
                  std::string_view why) {
    const std::size_t first = l.begin;
    const std::uint32_t at = static_cast<std::uint32_t>(src_.rfind('\n', Begin(first)) + 1);
    const std::string indent(src_.substr(at, Begin(first) - at));
    std::string names;
    for (std::string_view n : bound) names += std::string(n) + " = ";
    if (!Add(Begin(first), End(first), "try:\n" + indent + "    " + std::string(Text(first)),
             false))
      return false;
    const std::uint32_t end = LineEndAfter(Begin(first));
    const bool newline = end > 0 && src_[end - 1] == '\n';
    (void)Add(end, end,
              std::string(newline ? "" : "\n") + indent + "except ImportError:  # " +
                  std::string(why) + "\n" + indent + "    " + names + "None\n",
              false);
    return true;
  }

  // Whether every use of the names (a name token not after a dot, outside the statement `l`) lies
  // inside a replacement an edit makes, and there is at least one: the statement binding them is
  // then dead code after the fix (ruff F401 / F841 if it stayed).
  bool AllUsesRewritten(const std::vector<std::string_view>& names,
                        const scan::LogicalLine& l) const {
    // A module's import is seen by the whole module; a function's own import by the rest of its
    // block (up to the first statement indented less).
    std::size_t scope_end = lex_.tokens.size();
    if (l.indent > 0) {
      for (const scan::LogicalLine& next : lex_.lines)
        if (next.begin >= l.end && next.indent < l.indent) {
          scope_end = next.begin;
          break;
        }
    }
    const std::size_t scope_begin = l.indent > 0 ? l.end : 0;
    std::size_t uses = 0;
    for (std::size_t u = scope_begin; u < scope_end; ++u) {
      if (u >= l.begin && u < l.end) continue;
      if (!IsName(u) || (u > 0 && IsOp(u - 1, ".")) ||
          std::find(names.begin(), names.end(), Text(u)) == names.end())
        continue;
      ++uses;
      const bool covered = std::any_of(edits_.begin(), edits_.end(), [&](const Edit& e) {
        return e.begin < e.end && e.begin <= Begin(u) && End(u) <= e.end;
      });
      if (!covered) return false;
    }
    return uses > 0;
  }

  // Removes the statement of logical line `i` (alone on its physical lines): the lines go, or
  // become `pass` where the statement is the only one of its block.
  bool DeleteStatement(std::size_t i) {
    const scan::LogicalLine& l = lex_.lines[i];
    const std::uint32_t start = static_cast<std::uint32_t>(src_.rfind('\n', Begin(l.begin)) + 1);
    const std::uint32_t end = LineEndAfter(End(l.end - 1));
    const bool opens_block = i > 0 && IsOp(lex_.lines[i - 1].end - 1, ":");
    const bool block_ends = i + 1 == lex_.lines.size() || lex_.lines[i + 1].indent < l.indent;
    if (l.indent > 0 && opens_block && block_ends)
      return Add(Begin(l.begin), End(l.end - 1), "pass", false);
    return Add(start, end, "", false);
  }

  // Offset just past the newline ending the physical line that holds `offset`.
  std::uint32_t LineEndAfter(std::uint32_t offset) const {
    std::size_t nl = src_.find('\n', offset);
    return static_cast<std::uint32_t>(nl == std::string_view::npos ? src_.size() : nl + 1);
  }

  // `import torch` (or `import torch, ...`) at module level: the name torch is the module.
  bool ImportsTorch() const {
    for (const scan::LogicalLine& l : lex_.lines) {
      if (l.indent != 0 || Text(l.begin) != "import") continue;
      for (std::size_t k = l.begin + 1; k < l.end; ++k)
        if (Text(k) == "torch" && (IsOp(k - 1, ",") || k == l.begin + 1) &&
            (k + 1 == l.end || IsOp(k + 1, ",")))
          return true;
    }
    return false;
  }

  // --- The module's own device choice ---------------------------------------------------------
  // `NAME = torch.device("cuda" if torch.cuda.is_available() else "cpu")` (or the bare conditional)
  // at module level, bound nowhere else in the module: it is "cuda" wherever CUDA is available, so
  // after it `.to(NAME)` is the original `.cuda()` there, and the module keeps its own choice.
  void FindDeviceVariable() {
    for (const scan::LogicalLine& l : lex_.lines) {
      if (l.indent != 0 || l.end < l.begin + 13 || !IsName(l.begin) || !IsOp(l.begin + 1, "="))
        continue;
      std::size_t t = l.begin + 2;
      std::size_t end = l.end;
      if (Text(t) == "torch" && IsOp(t + 1, ".") && Text(t + 2) == "device" && IsOp(t + 3, "(") &&
          Matching(t + 3) == end - 1) {
        t += 4;
        --end;
      }
      static constexpr std::string_view kShape[] = {
          "", "if", "torch", ".", "cuda", ".", "is_available", "(", ")", "else", ""};
      if (end - t != std::size(kShape) || !IsString(t) || scan::StringBody(Text(t)) != "cuda" ||
          !IsString(end - 1))
        continue;
      bool shape = true;
      for (std::size_t i = 1; i + 1 < std::size(kShape); ++i) shape &= Text(t + i) == kShape[i];
      if (!shape || BoundElsewhere(Text(l.begin), l.begin)) continue;
      device_var_ = std::string(Text(l.begin));
      device_var_end_ = End(l.end - 1);
      return;
    }
  }

  // Whether `name` is bound anywhere but at token `def`: an assignment target, a parameter, a loop
  // or `with ... as` / import name, `global`, a walrus.
  bool BoundElsewhere(std::string_view name, std::size_t def) const {
    for (const scan::LogicalLine& l : lex_.lines) {
      const std::string_view head = Text(l.begin);
      std::size_t target_end = l.begin;  // Tokens before the first top-level `=` are targets.
      int depth = 0;
      for (std::size_t t = l.begin; t < l.end; ++t) {
        if (IsOpen(t))
          ++depth;
        else if (IsClose(t))
          --depth;
        else if (depth == 0 && IsOp(t, "=")) {
          target_end = t;
          break;
        }
      }
      for (std::size_t t = l.begin; t < l.end; ++t) {
        if (t == def || !IsName(t) || Text(t) != name || (t > 0 && IsOp(t - 1, "."))) continue;
        const bool target =
            t < target_end || head == "def" || head == "global" || head == "nonlocal" ||
            head == "import" || head == "from" || IsOp(t + 1, ":=") ||
            (t > 0 && (Text(t - 1) == "as" || Text(t - 1) == "for" || Text(t - 1) == "lambda"));
        if (target) return true;
      }
    }
    return false;
  }

  // What a plain "cuda" device becomes at `offset`: the module's device variable after it, else
  // the helper's choice.
  std::string DeviceAt(std::uint32_t offset) {
    placed_ = true;
    if (!device_var_.empty() && offset > device_var_end_) return device_var_;
    needed_.insert("_dualtrack_device");
    return "_dualtrack_device()";
  }

  std::string_view src_;
  const FixOptions& opt_;
  const Lexed& lex_;
  std::vector<Edit>& edits_;
  std::vector<std::size_t>& wrapped_imports_;
  bool& placed_;
  std::set<std::string>& needed_;
  std::string& device_var_;
  std::uint32_t& device_var_end_;
};

// Device placement (DT101, DT102, DT112, DT113): .cuda(), "cuda" strings, integer device
// indices and device_map values become the device in use; "mps" joins a device option's choices.
class DeviceFixes : protected Editor {
 public:
  using Editor::Editor;

  // x.cuda() -> x.to(_dualtrack_device()); x.cuda(non_blocking=True) keeps its keyword.
  std::string FixDotCuda(std::size_t k) {
    if (!(k >= 1 && IsOp(k - 1, ".") && Text(k) == "cuda" && IsOp(k + 1, "(")))
      return "not a .cuda(...) call";
    const std::size_t close = Matching(k + 1);
    if (close == kNone) return "unbalanced brackets";
    const auto args = Args(k + 1, close);
    // .cuda(i) / .cuda(device=i) -> .to(_dualtrack_device(i)): with CUDA the same device.
    std::size_t index_arg = kNone;
    for (std::size_t a = 0; a < args.size(); ++a) {
      const bool keyword = IsKeywordArg(args[a]);
      if (!keyword && a > 0)
        return ".cuda(i, non_blocking) with positional arguments: left for review";
      if (!keyword || Text(args[a].first) == "device") index_arg = a;
    }
    if (index_arg == kNone) {
      const std::string device = DeviceAt(Begin(k));
      std::string text = "to(" + device;
      if (!args.empty()) text += ", ";
      return Add(Begin(k), End(k + 1), text) ? "x.cuda() -> x.to(" + device + ")"
                                             : "overlaps another fix";
    }
    needed_.insert("_dualtrack_device");
    const auto [first, last] = args[index_arg];
    const std::size_t value = IsKeywordArg(args[index_arg]) ? first + 2 : first;
    if (!Add(Begin(k), End(k), "to")) return "overlaps another fix";
    (void)Add(Begin(value), Begin(value), "_dualtrack_device(");
    (void)Add(End(last - 1), End(last - 1), ")");
    return "x.cuda(i) -> x.to(_dualtrack_device(i))";
  }

  // "cuda" / "cuda:N" where a device is chosen -> _dualtrack_device() / _dualtrack_device(N).
  std::string FixDeviceString(std::size_t k) {
    if (!IsString(k) || scan::IsFString(Text(k)) || scan::IsBytes(Text(k)))
      return "not a plain string";
    const std::string_view body = scan::StringBody(Text(k));
    std::string index;
    if (body.starts_with("cuda:")) {
      index = std::string(body.substr(5));
      if (index.empty() ||
          !std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return "not a device string";
    } else if (body != "cuda") {
      return "not a device string";
    }
    const std::size_t prev = k - 1;
    const std::size_t next = k + 1;
    auto is_compare = [&](std::size_t t) {
      return IsOp(t, "==") || IsOp(t, "!=") || Text(t) == "in" || Text(t) == "is" ||
             Text(t) == "not";
    };
    if (k == 0 || is_compare(prev) || (next < lex_.tokens.size() && is_compare(next)))
      return "a comparison: a check, not a choice";
    if (IsOp(next, ":")) return "a mapping key";
    // torch.device("cuda", index): the index goes with the device type.
    if (IsOp(prev, "(") && IsOp(next, ",") && prev >= 1 && Text(prev - 1) == "device")
      return FixDeviceWithIndex(prev);
    const bool value_before = IsOp(prev, "(") || IsOp(prev, ",") || IsOp(prev, "=") ||
                              IsOp(prev, "[") || IsOp(prev, ":") || Text(prev) == "return";
    const bool value_after = next >= lex_.tokens.size() || IsOp(next, ")") || IsOp(next, ",") ||
                             IsOp(next, "]") || IsOp(next, "}") || IsOp(next, ";") ||
                             lex_.Line(lex_.tokens[next]) != lex_.Line(lex_.tokens[k]);
    if (!value_before || !value_after) return "the string is part of a larger expression";
    const std::string device =
        index.empty() ? DeviceAt(Begin(k)) : "_dualtrack_device(" + index + ")";
    if (!index.empty()) needed_.insert("_dualtrack_device");
    return Add(Begin(k), End(k), device) ? "\"" + std::string(body) + "\" -> " + device
                                         : "overlaps another fix";
  }

  // An integer device index: x.to(args.gpu) -> x.to(_dualtrack_device(args.gpu)), and the values
  // of device_map={"": local_rank}. With CUDA the same device (cuda:N); DDP's device_ids stay (off
  // CUDA they must be None, not a device).
  std::string FixIndex(std::size_t k) {
    if (Text(k) == "device_map" && IsOp(k + 1, "=") && IsOp(k + 2, "{")) return FixDeviceMap(k + 2);
    if (!(k >= 3 && IsOp(k - 1, "(") && Text(k - 2) == "to" && IsOp(k - 3, ".")))
      return "a device index outside .to(...) (DDP's device_ids): left for review";
    const std::size_t close = Matching(k - 1);
    if (close == kNone) return "unbalanced brackets";
    const auto args = Args(k - 1, close);
    if (args.empty() || args[0].first != k) return "not the first argument of .to(...)";
    return WrapInDevice(args[0]) ? "x.to(i) -> x.to(_dualtrack_device(i))" : "overlaps another fix";
  }

  // choices=["cuda", "cpu"] -> choices=["cuda", "cpu", "mps"], in the statement of the finding.
  std::string FixChoices(std::size_t k) {
    auto line = std::find_if(lex_.lines.begin(), lex_.lines.end(),
                             [&](const scan::LogicalLine& l) { return l.begin <= k && k < l.end; });
    if (line == lex_.lines.end()) return "no statement at the finding";
    for (std::size_t c = line->begin; c + 2 < line->end; ++c) {
      if (Text(c) != "choices" || !IsOp(c + 1, "=") ||
          !(IsOp(c + 2, "[") || IsOp(c + 2, "(") || IsOp(c + 2, "{")))
        continue;
      const std::size_t close = Matching(c + 2);
      if (close == kNone) return "unbalanced brackets";
      char quote = '"';
      for (std::size_t t = c + 3; t < close; ++t) {
        if (!IsString(t)) return "the choices are not all strings";
        if (scan::StringBody(Text(t)) == "mps") return "mps is already a choice";
        quote = Text(t).back();
        if (IsOp(t + 1, ",")) ++t;
      }
      if (close == c + 3) return "an empty choices list";
      const std::size_t last = close - 1;
      const std::string item = std::string(1, quote) + "mps" + std::string(1, quote);
      const bool trailing_comma = IsOp(last, ",");
      return Add(End(last), End(last), trailing_comma ? " " + item + "," : ", " + item)
                 ? "added \"mps\" to the choices"
                 : "overlaps another fix";
    }
    return "no choices= list in the statement";
  }

 private:
  // torch.device("cuda", i) / torch.device("cuda", index=i) -> torch.device(_dualtrack_device(i)).
  std::string FixDeviceWithIndex(std::size_t open) {
    const std::size_t close = Matching(open);
    if (close == kNone) return "unbalanced brackets";
    const auto args = Args(open, close);
    if (args.size() != 2 || (IsKeywordArg(args[1]) && Text(args[1].first) != "index"))
      return "torch.device(\"cuda\", ...) with other arguments: left for review";
    const std::size_t value = IsKeywordArg(args[1]) ? args[1].first + 2 : args[1].first;
    needed_.insert("_dualtrack_device");
    return Add(Begin(open + 1), Begin(value), "_dualtrack_device(") &&
                   Add(End(args[1].second - 1), End(args[1].second - 1), ")")
               ? "torch.device(\"cuda\", i) -> torch.device(_dualtrack_device(i))"
               : "overlaps another fix";
  }

  std::string FixDeviceMap(std::size_t open) {
    const std::size_t close = Matching(open);
    if (close == kNone) return "unbalanced brackets";
    std::size_t wrapped = 0;
    for (const auto& entry : Args(open, close)) {
      std::size_t colon = kNone;
      int depth = 0;
      for (std::size_t t = entry.first; t < entry.second && colon == kNone; ++t) {
        if (IsOpen(t))
          ++depth;
        else if (IsClose(t))
          --depth;
        else if (depth == 0 && IsOp(t, ":"))
          colon = t;
      }
      if (colon == kNone || colon + 1 >= entry.second)
        return "a device_map that is not key: value pairs";
      if (colon + 2 == entry.second && IsString(colon + 1)) continue;  // "auto", "cpu", "disk".
      wrapped += WrapInDevice({colon + 1, entry.second}) ? 1 : 0;
    }
    return wrapped > 0 ? "device_map values -> _dualtrack_device(i)"
                       : "no device index in the device_map";
  }

  bool WrapInDevice(std::pair<std::size_t, std::size_t> range) {
    needed_.insert("_dualtrack_device");
    return Add(Begin(range.first), Begin(range.first), "_dualtrack_device(") &&
           Add(End(range.second - 1), End(range.second - 1), ")");
  }
};

// CUDA API calls and CUDA-only settings (DT103-DT108, DT115, DT205): torch.cuda calls through a
// device-generic stand-in, flags and settings made only with CUDA, nccl only with CUDA.
class CudaFixes : protected Editor {
 public:
  using Editor::Editor;

  // torch.cuda.<api>(...) calls: amp, synchronisation, memory, seeds, device management.
  std::string FixCudaApi(std::size_t k) {
    const auto [b, e] = ChainAround(k);
    if (!IsOp(e, "(")) return "not a call (a reference is left as it is)";
    const std::string_view name = Text(e - 1);
    std::string text;
    if (name == "autocast") {
      text = "_dualtrack_autocast";
      needed_.insert("_dualtrack_autocast");
      needed_.insert("_dualtrack_device");
    } else if (name == "GradScaler") {
      text = "_dualtrack_grad_scaler";
      needed_.insert("_dualtrack_grad_scaler");
      needed_.insert("_dualtrack_device");
    } else if (const CudaCall* c = FindCudaCall(name)) {
      bool in_cuda = false;  // The chain names torch.cuda (or a name imported from it).
      for (std::size_t t = b; t + 1 < e; t += 2) in_cuda |= Text(t) == "cuda";
      if (!in_cuda && e - b > 1) return "not a torch.cuda call";
      text = "_dualtrack_cuda(\"" + std::string(c->name) + "\"";
      if (!c->mps.empty()) text += ", \"" + std::string(c->mps) + "\"";
      if (!c->fallback.empty())
        text += std::string(c->mps.empty() ? ", None" : "") + ", " + std::string(c->fallback);
      text += ")";
      needed_.insert("_dualtrack_cuda");
    } else {
      return "no device-generic stand-in for torch.cuda." + std::string(name) + " yet";
    }
    return Add(Begin(b), End(e - 1), text) ? std::string(name) + "(...) -> " + text + "(...)"
                                           : "overlaps another fix";
  }

  // fp16=True (Hugging Face), pin_memory=True (DataLoader) -> ...=torch.cuda.is_available().
  std::string FixOnlyWithCuda(std::size_t k) {
    const std::string_view name = Text(k);
    if ((name != "fp16" && name != "pin_memory") || !IsOp(k + 1, "=") || Text(k + 2) != "True")
      return "not fp16=True or pin_memory=True";
    needed_.insert("torch");
    return Add(Begin(k + 2), End(k + 2), "torch.cuda.is_available()")
               ? std::string(name) + "=True -> only with CUDA"
               : "overlaps another fix";
  }

  // torch.backends.cudnn.benchmark = True -> if torch.cuda.is_available(): torch.backends...: the
  // setting of one physical line, set where it means something.
  std::string FixBackendFlag(std::size_t k) {
    auto line = std::find_if(lex_.lines.begin(), lex_.lines.end(),
                             [&](const scan::LogicalLine& l) { return l.begin == k; });
    if (line == lex_.lines.end()) return "not a statement of its own";
    const auto [b, e] = ChainAround(k);
    if (b != k || !IsOp(e, "=") || e + 1 >= line->end)
      return "not a setting (an assignment to the flag)";
    if (lex_.Line(lex_.tokens[line->begin]) != lex_.Line(lex_.tokens[line->end - 1]))
      return "a setting over several lines: left for review";
    // The statement must have its physical line to itself: the block form below indents it, and
    // a `; other` after it would move into the block.
    const std::size_t row = static_cast<std::size_t>(lex_.Line(lex_.tokens[k]) - 1);
    const std::uint32_t row_begin = static_cast<std::uint32_t>(lex_.line_starts[row]);
    const std::string_view indent = src_.substr(row_begin, Begin(k) - row_begin);
    if (indent.find_first_not_of(" \t") != std::string_view::npos)
      return "shares its line with another statement: left for review";
    const std::string_view rest = src_.substr(End(line->end - 1));
    const std::string_view tail = rest.substr(0, rest.find('\n'));
    const std::size_t code = tail.find_first_not_of(" \t\r");
    if (code != std::string_view::npos && tail[code] != '#')
      return "shares its line with another statement: left for review";
    needed_.insert("torch");
    // A block, not `if ...: stmt` on one line (pycodestyle E701, which ruff and flake8 report).
    const std::string unit = indent.empty() || indent.front() != '\t' ? "    " : "\t";
    return Add(Begin(k), Begin(k), "if torch.cuda.is_available():\n" + std::string(indent) + unit)
               ? "set only with CUDA"
               : "overlaps another fix";
  }

  // backend="nccl" -> ("nccl" if torch.cuda.is_available() else "gloo").
  std::string FixNccl(std::size_t k) {
    if (!IsString(k) || scan::IsFString(Text(k)) || scan::StringBody(Text(k)) != "nccl")
      return "not the \"nccl\" string";
    const char quote = Text(k).back();
    std::string gloo = std::string(1, quote) + "gloo" + std::string(1, quote);
    needed_.insert("torch");
    return Add(Begin(k), End(k),
               "(" + std::string(Text(k)) + " if torch.cuda.is_available() else " + gloo + ")")
               ? "\"nccl\" -> nccl with CUDA, else gloo"
               : "overlaps another fix";
  }
};

// Imports of compiled CUDA extensions (DT305): the import fails where the extension was never
// built, though the code on the path may never call it.
class ExtensionFixes : protected Editor {
 public:
  using Editor::Editor;

  // A module-level `import my_ext` whose names the module only uses inside functions -> the
  // import in try/except ImportError, binding them to None: the module imports without the
  // extension, and a call still needs it (each call on the path is a finding of its own). With
  // the extension built nothing changes.
  std::string FixImport(std::size_t k) {
    std::string why;
    const scan::LogicalLine* line = ImportAt(k, why);
    if (line == nullptr)
      return why == "not an import statement"
                 ? "a use of the extension: it needs a PyTorch fallback or a Metal kernel"
                 : why;
    if (line->indent != 0) return "a function's own import: the function needs the extension";
    for (std::size_t t = line->begin; t < line->end; ++t)
      if (IsOp(t, "*")) return "a star import: the names it binds are unknown";
    const std::vector<std::string_view> bound = BoundNames(*line);
    if (bound.empty()) return "an import that binds no name";
    for (std::size_t u = 0; u < lex_.tokens.size(); ++u) {
      if ((u >= line->begin && u < line->end) || !IsName(u) || (u > 0 && IsOp(u - 1, ".")) ||
          std::find(bound.begin(), bound.end(), Text(u)) == bound.end())
        continue;
      if (!InFunctionBody(u))
        return "the module uses " + std::string(Text(u)) + " when it is imported: left for review";
    }
    if (!WrapImport(*line, bound, "built only with CUDA: each call still needs it"))
      return "overlaps another fix";
    return "import inside try/except ImportError (the calls still need the extension)";
  }

 private:
  // Whether token u lies in the body of a function (a `def` whose block holds its line), so that
  // it runs only when the function is called: not module code, a class body, a decorator or a
  // default value (those run when the module is imported).
  bool InFunctionBody(std::size_t u) const {
    auto it = std::find_if(lex_.lines.begin(), lex_.lines.end(),
                           [&](const scan::LogicalLine& l) { return l.begin <= u && u < l.end; });
    if (it == lex_.lines.end()) return false;
    std::uint32_t indent = it->indent;
    while (indent > 0 && it != lex_.lines.begin()) {
      --it;
      if (it->begin >= it->end || it->indent >= indent) continue;
      indent = it->indent;
      const std::size_t b = it->begin;
      if (Text(b) == "def" || (Text(b) == "async" && b + 1 < it->end && Text(b + 1) == "def"))
        return true;
    }
    return false;
  }
};

// Checkpoint loads (DT116): torch.load gets a map_location.
class LoadFixes : protected Editor {
 public:
  using Editor::Editor;

  // torch.load(f) -> torch.load(f, map_location="cpu") where it feeds load_state_dict; elsewhere
  // map_location=(None if torch.cuda.is_available() else _dualtrack_device()): with CUDA every
  // tensor still returns to the device it was saved from, as before.
  std::string FixLoad(std::size_t k) {
    const std::size_t load = LoadCall(k);
    if (load == kNone) return "not a torch.load(...) call";
    const std::size_t close = Matching(load + 1);
    if (close == kNone) return "unbalanced brackets";
    const auto args = Args(load + 1, close);
    for (const auto& a : args)
      if (IsKeywordArg(a) && Text(a.first) == "map_location") return "map_location already given";
    std::size_t positional = 0;
    for (const auto& a : args) positional += IsKeywordArg(a) || IsOp(a.first, "**") ? 0 : 1;
    if (positional != 1) return "not one positional argument";
    const bool feeds = LoadFeedsStateDict(k);
    std::string where = "\"cpu\"";
    if (!feeds) {
      needed_.insert("torch");
      where = "(None if torch.cuda.is_available() else " + DeviceAt(Begin(load)) + ")";
    }
    if (!Add(End(args.back().second - 1), End(args.back().second - 1), ", map_location=" + where,
             !feeds))
      return "overlaps another fix";
    return feeds ? "torch.load(f) -> map_location=\"cpu\" (only load_state_dict reads it)"
                 : "torch.load(f) -> map_location: as saved with CUDA, else the device in use";
  }

 private:
  // The `load(` of the torch.load call at or after token k in its statement, or kNone.
  std::size_t LoadCall(std::size_t k) const {
    if (k == kNone) return kNone;
    auto line = std::find_if(lex_.lines.begin(), lex_.lines.end(),
                             [&](const scan::LogicalLine& l) { return l.begin <= k && k < l.end; });
    if (line == lex_.lines.end()) return kNone;
    for (std::size_t t = k; t + 1 < line->end; ++t)
      if (IsName(t) && Text(t) == "load" && IsOp(t + 1, "(")) return t;
    return kNone;
  }

  // Whether what torch.load returns only feeds load_state_dict: the call is an argument of
  // `.load_state_dict(`, or its statement binds a name (`ckpt = torch.load(f)`, also subscripted)
  // that a later `load_state_dict(...)` of the file passes on. Where the tensors land then does not
  // matter: load_state_dict copies them onto the module's (or the optimizer's) own device.
  bool LoadFeedsStateDict(std::size_t k) const {
    const std::size_t load = LoadCall(k);
    if (load == kNone) return false;
    auto line = std::find_if(lex_.lines.begin(), lex_.lines.end(), [&](const scan::LogicalLine& l) {
      return l.begin <= load && load < l.end;
    });
    int depth = 0;
    for (std::size_t t = load; t-- > line->begin;) {
      if (IsClose(t)) ++depth;
      if (IsOpen(t) && depth-- == 0 && t > 0 && Text(t - 1) == "load_state_dict") return true;
    }
    if (line->end - line->begin < 3 || !IsName(line->begin) || !IsOp(line->begin + 1, "="))
      return false;
    const std::string_view name = Text(line->begin);
    bool used = false;
    for (std::size_t t = line->end; t + 1 < lex_.tokens.size(); ++t) {
      if (!(Text(t) == "load_state_dict" && IsOp(t + 1, "("))) {
        // Any other use of the name: the tensors are read where they land.
        if (IsName(t) && Text(t) == name && !(t > 0 && IsOp(t - 1, "."))) {
          if (!used) return false;
        }
        continue;
      }
      const std::size_t close = Matching(t + 1);
      if (close == kNone) return false;
      for (std::size_t a = t + 2; a < close; ++a) used |= IsName(a) && Text(a) == name;
      t = close;
    }
    return used;
  }
};

// The unsafe fixes, which may change results (DT201, DT202, DT204, DT206): attention libraries
// -> scaled_dot_product_attention, bitsandbytes quantisation -> float16 weights, float64 ->
// float32.
class UnsafeFixes : protected Editor {
 public:
  using Editor::Editor;

  // Unsafe: an import of xformers / flash-attn whose every use in the module is an attention call
  // the fix rewrites -> the import inside try/except ImportError, its names None without it.
  std::string FixAttentionImport(std::size_t k) {
    std::string why;
    const scan::LogicalLine* line = ImportAt(k, why);
    if (line == nullptr) return why;
    const std::size_t first = line->begin;
    if (!IsName(first + 1) || std::find(std::begin(kAttentionModules), std::end(kAttentionModules),
                                        Text(first + 1)) == std::end(kAttentionModules))
      return "no automatic fix for DT201 on this library (see `dualtrack rule DT201`)";
    const std::vector<std::string_view> bound = BoundNames(*line);
    if (bound.empty()) return "an import that binds no name";
    for (std::size_t u = 0; u < lex_.tokens.size(); ++u) {
      if (u >= line->begin && u < line->end) continue;
      if (!IsName(u) || (u > 0 && IsOp(u - 1, ".")) ||
          std::find(bound.begin(), bound.end(), Text(u)) == bound.end())
        continue;
      std::vector<Edit> unused;
      if (!AttentionEdits(u, unused).empty())
        return "the module uses " + std::string(Text(u)) +
               " for more than attention calls: left for review";
    }
    if (!WrapImport(*line, bound, "attention runs through SDPA")) return "overlaps another fix";
    wrapped_imports_.push_back(first);
    return "import inside try/except ImportError";
  }

  // Unsafe: xformers.ops.memory_efficient_attention(q, k, v, ...) and flash_attn_func(q, k, v, ...)
  // -> _dualtrack_attention(q, k, v, ...) (scaled_dot_product_attention); attn_implementation=
  // "flash_attention_2" and use_flash_attention_2=True -> attn_implementation="sdpa".
  std::string FixAttention(std::size_t k) {
    if (IsString(k)) return ReplaceString(k, "sdpa");
    if (Text(k) == "attn_implementation" && IsOp(k + 1, "=") && IsString(k + 2))
      return ReplaceString(k + 2, "sdpa");
    if (Text(k) == "use_flash_attention_2" && IsOp(k + 1, "=") && Text(k + 2) == "True")
      return Add(Begin(k), End(k + 2), "attn_implementation=\"sdpa\"")
                 ? "-> attn_implementation=\"sdpa\""
                 : "overlaps another fix";
    std::vector<Edit> edits;
    std::string note = AttentionEdits(k, edits);
    if (!note.empty()) return note;
    const bool unbind = edits.front().text == "torch.unbind";
    for (Edit& e : edits)
      if (!Add(e.begin, e.end, std::move(e.text))) return "overlaps another fix";
    needed_.insert(unbind ? "torch" : "_dualtrack_attention");
    return unbind ? "unbind -> torch.unbind"
                  : "attention -> _dualtrack_attention (scaled_dot_product_attention)";
  }

  // Unsafe: bitsandbytes through Hugging Face. load_in_8bit=True / load_in_4bit=True -> float16
  // weights (torch_dtype=torch.float16, or the flag off where the call names a dtype already);
  // optim="paged_adamw_8bit" and the like -> "adamw_torch".
  std::string FixQuantised(std::size_t k) {
    const std::string_view name = Text(k);
    if (IsString(k))
      return ReplaceString(
          k, scan::StringBody(name).starts_with("rmsprop") ? "rmsprop" : "adamw_torch");
    if (!IsName(k) || !IsOp(k + 1, "=")) return "not a keyword argument this fix knows";
    if (name == "optim" && IsString(k + 2)) return ReplaceString(k + 2, "adamw_torch");
    if ((name != "load_in_8bit" && name != "load_in_4bit") || Text(k + 2) != "True")
      return "no float16 stand-in for this bitsandbytes use";
    std::size_t open = k;
    int depth = 0;
    while (open > 0 && !(depth == 0 && IsOp(open - 1, "("))) {
      --open;
      if (IsClose(open))
        ++depth;
      else if (IsOpen(open))
        --depth;
    }
    if (open >= 2 && Text(open - 2) == "BitsAndBytesConfig")
      return "inside BitsAndBytesConfig: drop the quantization_config by hand";
    bool has_dtype = false;
    if (open > 0)
      if (const std::size_t close = Matching(open - 1); close != kNone)
        for (const auto& a : Args(open - 1, close)) {
          if (IsKeywordArg(a) && Text(a.first) == "quantization_config")
            return "the call also passes a quantization_config: left for review";
          has_dtype |=
              IsKeywordArg(a) && (Text(a.first) == "torch_dtype" || Text(a.first) == "dtype");
        }
    if (has_dtype)
      return Add(Begin(k + 2), End(k + 2), "False") ? std::string(name) + "=False"
                                                    : "overlaps another fix";
    needed_.insert("torch");
    return Add(Begin(k), End(k + 2), "torch_dtype=torch.float16")
               ? std::string(name) + "=True -> torch_dtype=torch.float16"
               : "overlaps another fix";
  }

  // Unsafe: torch.float64 / torch.double -> torch.float32, x.double() -> x.float().
  std::string FixFloat64(std::size_t k) {
    if (Text(k) == "double" && k > 0 && IsOp(k - 1, ".") && IsOp(k + 1, "(") && IsOp(k + 2, ")"))
      return Add(Begin(k), End(k), "float") ? ".double() -> .float()" : "overlaps another fix";
    const auto [b, e] = ChainAround(k);
    const std::string_view last = Text(e - 1);
    if ((last == "float64" || last == "double") && e - b == 3 && Text(b) == "torch")
      return Add(Begin(e - 1), End(e - 1), "float32")
                 ? "torch." + std::string(last) + " -> torch.float32"
                 : "overlaps another fix";
    return "not torch.float64 or .double()";
  }

 private:
  // The edits that turn the attention call whose chain starts at k into _dualtrack_attention;
  // a non-empty note says why it cannot be.
  std::string AttentionEdits(std::size_t k, std::vector<Edit>& edits) const {
    const auto [b, e] = ChainAround(k);
    if (!IsOp(e, "(")) return "not a call (a reference is left as it is)";
    if (Text(e - 1) == "unbind") {  // xformers.ops.unbind: torch.unbind without the copy it saves.
      edits.push_back(Edit{Begin(b), End(e - 1), "torch.unbind"});
      return "";
    }
    const AttentionApi* api = FindAttention(Text(e - 1));
    if (api == nullptr) return "no SDPA stand-in for this library call";
    const std::size_t close = Matching(e);
    if (close == kNone) return "unbalanced brackets";
    const auto args = Args(e, close);
    edits.push_back(Edit{Begin(b), End(e - 1), "_dualtrack_attention"});
    for (std::size_t a = 0; a < args.size(); ++a) {
      if (IsKeywordArg(args[a])) {
        const auto* kw = std::find_if(
            std::begin(api->keywords), std::end(api->keywords),
            [&](const auto& p) { return !p.first.empty() && p.first == Text(args[a].first); });
        if (kw == std::end(api->keywords))
          return "argument " + std::string(Text(args[a].first)) +
                 "= has no SDPA equivalent: left for review";
        if (kw->first != kw->second)
          edits.push_back(Edit{Begin(args[a].first), End(args[a].first), std::string(kw->second)});
      } else if (IsOp(args[a].first, "*") || IsOp(args[a].first, "**")) {
        return "unpacked arguments: left for review";
      } else if (a >= 6) {
        return "more positional arguments than SDPA takes: left for review";
      } else if (a >= 3 && api->positional[a - 3] != kAttentionApis[0].positional[a - 3]) {
        edits.push_back(Edit{Begin(args[a].first), Begin(args[a].first),
                             std::string(api->positional[a - 3]) + "="});
      }
    }
    if (args.size() < 3) return "fewer than query, key and value: left for review";
    return "";
  }

  // A plain string literal -> `value`, in the same quotes.
  std::string ReplaceString(std::size_t k, std::string_view value) {
    const std::string_view text = Text(k);
    if (scan::IsFString(text) || scan::IsBytes(text) || text.size() < 2 ||
        text.front() != text.back())
      return "not a plain string";
    const std::string quote(1, text.back());
    return Add(Begin(k), End(k), quote + std::string(value) + quote)
               ? "\"" + std::string(scan::StringBody(text)) + "\" -> \"" + std::string(value) + "\""
               : "overlaps another fix";
  }
};

// The fix of one source: each finding to the rule group that fixes it, then the edits applied.
class Fixer : protected Editor {
 public:
  explicit Fixer(Work& work)
      : Editor(work), device_(work), cuda_(work), ext_(work), load_(work), unsafe_(work) {}

  FileFix Run(const std::vector<scan::Finding>& findings) {
    FindDeviceVariable();
    FileFix out;
    for (const scan::Finding& f : findings) {
      if (f.guarded) continue;  // Another path exists already.
      const std::string amp = MixedPrecisionApi(f);
      Outcome o{f.code, f.line, f.cell, false, IsUnsafeFix(f.code) || !amp.empty(), false, ""};
      if (!HasFix(f.code)) {
        o.note = "no automatic fix for " + f.code + " (see `dualtrack rule " + f.code + "`)";
      } else if (f.severity == scan::Severity::kPortable && !opt_.all) {
        // A line that runs as written without CUDA: a rewrite is churn a reviewer has to read.
        o.note = "runs unchanged without CUDA: left as written (--all rewrites portable lines)";
      } else if (!amp.empty() && !opt_.unsafe) {
        o.note = amp +
                 " disables itself without CUDA; the rewrite turns fp16 mixed precision "
                 "on for MPS, a change of the Mac run's numerics: pass --unsafe-fixes";
      } else if (o.unsafe && !opt_.unsafe) {
        o.note = "an unsafe fix (results may change): pass --unsafe-fixes";
      } else {
        const std::size_t before = edits_.size();
        o.note = FixOne(f);
        o.fixed = edits_.size() > before;
        o.no_edit_needed = !o.fixed && InImport(TokenAt(f.line, f.column));
      }
      out.outcomes.push_back(std::move(o));
    }
    if (placed_) AlignSelfPlacingCalls();
    DropDeadImports(out);
    out.text = Apply(out.replaced);
    return out;
  }

  // Library calls that choose the device themselves ("cuda" if available, else the CPU): once the
  // fix puts the project's tensors on the Mac's GPU, a model they load would stay on the Mac's CPU,
  // a device mismatch at its first forward. They get the device the rewritten code uses; with
  // CUDA that is "cuda", what they chose before. (Libraries whose default is the CPU are left: the
  // project moves their models itself.)
  void AlignSelfPlacingCalls() {
    struct SelfPlacing {
      std::string_view module, function;
      std::size_t device_position;  // Of the `device` parameter, 0-based.
    };
    static constexpr SelfPlacing kCalls[] = {{"clip", "load", 1}, {"whisper", "load_model", 1}};
    for (std::size_t k = 2; k + 1 < lex_.tokens.size(); ++k) {
      if (!IsOp(k + 1, "(") || !IsOp(k - 1, ".") || !IsName(k - 2)) continue;
      if (k >= 3 && IsOp(k - 3, ".")) continue;  // `x.clip.load(`: not the library.
      const auto* call = std::find_if(std::begin(kCalls), std::end(kCalls), [&](const auto& c) {
        return Text(k - 2) == c.module && Text(k) == c.function;
      });
      if (call == std::end(kCalls)) continue;
      const std::size_t close = Matching(k + 1);
      if (close == kNone) continue;
      const auto args = Args(k + 1, close);
      if (args.empty()) continue;
      std::size_t positional = 0;
      bool given = false;
      for (const auto& a : args) {
        if (IsOp(a.first, "*") || IsOp(a.first, "**")) given = true;  // Unknown: leave it.
        if (IsKeywordArg(a))
          given |= Text(a.first) == "device";
        else
          ++positional;
      }
      if (given || positional > call->device_position) continue;
      (void)Add(End(args.back().second - 1), End(args.back().second - 1),
                ", device=" + DeviceAt(Begin(k - 2)));
    }
  }

  // `from torch.cuda.amp import autocast`, `from torch.cuda import amp`, `import torch.cuda.amp as
  // amp`: the names it binds are torch.cuda.amp's (a bare `import torch.cuda.amp` binds torch).
  bool ImportsCudaAmp(const scan::LogicalLine& l) const {
    auto chain = [&](std::size_t t, std::initializer_list<std::string_view> parts) {
      std::size_t i = 0;
      for (std::string_view p : parts) {
        if (t >= l.end || Text(t) != p) return false;
        if (++i < parts.size() && !IsOp(t + 1, ".")) return false;
        t += 2;  // The name, then the dot.
      }
      return t - 1 >= l.end || !IsOp(t - 1, ".");  // The whole module path, not its start.
    };
    const std::string_view head = Text(l.begin);
    if (head == "from" && chain(l.begin + 1, {"torch", "cuda", "amp"})) return true;
    if (head == "from" && chain(l.begin + 1, {"torch", "cuda"}) && l.end > l.begin + 4 &&
        Text(l.begin + 4) == "import") {
      for (std::size_t t = l.begin + 5; t < l.end; ++t)
        if (IsName(t) && Text(t) != "amp" && Text(t) != "as" && (t == 0 || Text(t - 1) != "as"))
          return false;
      return true;
    }
    return head == "import" && chain(l.begin + 1, {"torch", "cuda", "amp"}) &&
           l.end == l.begin + 8 && Text(l.begin + 6) == "as";
  }

  // Imports whose every use the fix rewrote would be dead code in the fixed file (ruff F401, and
  // F841 for a function's own import): `from torch.cuda.amp import autocast` once each autocast is
  // `_dualtrack_autocast`, an attention library's import once each call runs through SDPA (its
  // try/except wrapper then has nothing left to guard). They are removed; an import with a use
  // left stays as it is.
  void DropDeadImports(FileFix& out) {
    for (std::size_t i = 0; i < lex_.lines.size(); ++i) {
      const scan::LogicalLine& l = lex_.lines[i];
      if (l.begin >= l.end) continue;
      const bool wrapped = std::find(wrapped_imports_.begin(), wrapped_imports_.end(), l.begin) !=
                           wrapped_imports_.end();
      const bool amp = ImportsCudaAmp(l);
      if (!wrapped && !amp) continue;
      if (!AllUsesRewritten(BoundNames(l), l)) continue;
      const std::uint32_t line_end = LineEndAfter(End(l.end - 1));
      if (wrapped) {  // Its try/except edits go: the statement itself goes instead.
        std::erase_if(edits_, [&](const Edit& e) {
          return (e.begin == Begin(l.begin) && e.end == End(l.begin)) ||
                 (e.begin == line_end && e.end == line_end &&
                  e.text.find("except ImportError:  # attention") != std::string::npos);
        });
      }
      if (!DeleteStatement(i)) continue;
      const std::int64_t line = lex_.Line(lex_.tokens[l.begin]);
      for (Outcome& o : out.outcomes)
        if (o.line == line && (o.code == "DT201" || o.code == "DT115")) {
          o.fixed = true;
          o.no_edit_needed = false;
          o.note = "import removed: every use of its names was rewritten";
        }
    }
  }

 private:
  // "torch.cuda.amp.autocast" or "torch.cuda.amp.GradScaler" when the finding is that call (any
  // spelling: `amp.autocast`, `from torch.cuda.amp import autocast`); empty otherwise. Off CUDA
  // the original runs in full precision, while the rewrite enables fp16 autocast and loss scaling
  // on MPS: not the same numerics, so the rewrite is an unsafe fix.
  std::string MixedPrecisionApi(const scan::Finding& f) const {
    if (f.code != "DT115") return "";  // The registry's code of torch.cuda.amp.
    const std::size_t k = TokenAt(f.line, f.column);
    if (k == kNone || !IsName(k) || InImport(k)) return "";
    const auto [b, e] = ChainAround(k);
    const std::string_view last = Text(e - 1);
    if (last != "autocast" && last != "GradScaler") return "";
    bool torch_amp = false;  // torch.amp / torch.autocast take a device type: not this rewrite.
    for (std::size_t t = b; t + 1 < e; t += 2) torch_amp |= Text(t) == "cuda";
    if (!torch_amp && e - b > 1) return "";
    return "torch.cuda.amp." + std::string(last);
  }

  // Returns what was done, or why nothing was.
  std::string FixOne(const scan::Finding& f) {
    const std::size_t k = TokenAt(f.line, f.column);
    if (k == kNone) return "the finding's position holds no token: the file changed since the scan";
    if (f.code == "DT101") return WithSiblings(k, f.code, device_, &DeviceFixes::FixDotCuda);
    if (f.code == "DT102") return WithSiblings(k, f.code, device_, &DeviceFixes::FixDeviceString);
    if (f.code == "DT205" || f.code == "DT211") return cuda_.FixNccl(k);
    if (f.code == "DT112") return device_.FixChoices(k);
    if (f.code == "DT204") return WithSiblings(k, f.code, unsafe_, &UnsafeFixes::FixFloat64);
    if (f.code == "DT106") return cuda_.FixBackendFlag(k);
    if (f.code == "DT113") return device_.FixIndex(k);
    if (f.code == "DT206") return unsafe_.FixQuantised(k);
    if (f.code == "DT116") return load_.FixLoad(k);
    if (f.code == "DT305") return ext_.FixImport(k);
    if (f.code == "DT201") return unsafe_.FixAttentionImport(k);
    if (f.code == "DT202") return unsafe_.FixAttention(k);
    if ((f.code == "DT105" || f.code == "DT115") && IsName(k) && IsOp(k + 1, "="))
      return cuda_.FixOnlyWithCuda(k);
    if (IsName(k)) return cuda_.FixCudaApi(k);
    return "not a call this fix knows";
  }

  // The scan reports one finding per rule and statement: `a.cuda(), b.cuda()` is one DT101. The
  // fix of the reported construct also fixes its like in the same statement, unless a conditional
  // expression there may put one of them behind a check.
  template <class Rules>
  std::string WithSiblings(std::size_t k, std::string_view code, Rules& rules,
                           std::string (Rules::*fix)(std::size_t)) {
    std::string note = (rules.*fix)(k);
    auto line = std::find_if(lex_.lines.begin(), lex_.lines.end(),
                             [&](const scan::LogicalLine& l) { return l.begin <= k && k < l.end; });
    if (line == lex_.lines.end()) return note;
    for (std::size_t t = line->begin; t < line->end; ++t)
      if (Text(t) == "if" || Text(t) == "while" || Text(t) == "lambda") return note;
    for (std::size_t t = line->begin; t < line->end; ++t)
      if (t != k && Like(code, t)) (void)(rules.*fix)(t);
    return note;
  }

  // Whether token t starts a construct the fix of `code` rewrites.
  bool Like(std::string_view code, std::size_t t) const {
    const bool method = t > 0 && IsOp(t - 1, ".") && IsOp(t + 1, "(");
    if (code == "DT101") return method && Text(t) == "cuda";
    if (code == "DT102") return IsString(t) && scan::StringBody(Text(t)).starts_with("cuda");
    if (code == "DT204")
      return (method && Text(t) == "double" && IsOp(t + 2, ")")) ||
             ((Text(t) == "float64" || Text(t) == "double") && t >= 2 && IsOp(t - 1, ".") &&
              Text(t - 2) == "torch");
    return false;
  }

  // Whether token k stands in an import statement.
  bool InImport(std::size_t k) const {
    if (k == kNone) return false;
    auto line = std::find_if(lex_.lines.begin(), lex_.lines.end(),
                             [&](const scan::LogicalLine& l) { return l.begin <= k && k < l.end; });
    return line != lex_.lines.end() &&
           (Text(line->begin) == "import" || Text(line->begin) == "from");
  }

  DeviceFixes device_;
  CudaFixes cuda_;
  ExtensionFixes ext_;
  LoadFixes load_;
  UnsafeFixes unsafe_;
};

}  // namespace

bool FileFix::changed() const { return fixed() > 0; }

std::size_t FileFix::fixed() const {
  return static_cast<std::size_t>(
      std::count_if(outcomes.begin(), outcomes.end(), [](const Outcome& o) { return o.fixed; }));
}

namespace {

// The replacement of one file whose original another process may be appending to (a log, a
// notebook autosave). `seen` is what the new text was made from; lines appended to the original
// after that are carried over to the end of the new file, before and after the rename, so none
// is lost. Any other change leaves the file as it is (before) or is reported (after).
class AppendSafeReplace {
 public:
  AppendSafeReplace(const std::filesystem::path& path, int original, std::string seen)
      : path_(path), original_(original), seen_(std::move(seen)) {}

  // Right before the rename: appends so far go into the temporary, until the original holds
  // still (a few rounds; a file that keeps changing is left alone).
  Status BeforeRename(int tmp) {
    for (int round = 0; round < 16; ++round) {
      auto extra = Appended();
      if (!extra) return Changed("not written");
      if (extra->empty()) return OkStatus();
      if (WriteAll(tmp, *extra) != 0 || ::fsync(tmp) != 0)
        return MakeError(ErrorCode::kInput, "cannot write the temporary file", path_.string());
    }
    return Changed("not written");
  }

  // Right after it: an append that reached the original between the last check and the rename
  // is in the replaced file only, and is copied to the end of the new one.
  // When the file was seen growing, an appender may hold the original open across the rename and
  // write a moment later: the original is watched for a few milliseconds more.
  Status AfterRename(int tmp) {
    int quiet = 0;
    for (int round = 0; round < 64 && quiet < (appending_ ? 3 : 1); ++round) {
      if (round > 0) ::usleep(2000);
      auto extra = Appended();
      if (!extra) return Changed("written, but that change is not in the new file");
      if (extra->empty()) {
        ++quiet;
        continue;
      }
      quiet = 0;
      const int flags = ::fcntl(tmp, F_GETFL);
      // O_APPEND: the appender may already be writing to the new file too.
      if (flags < 0 || ::fcntl(tmp, F_SETFL, flags | O_APPEND) != 0 || WriteAll(tmp, *extra) != 0)
        return MakeError(ErrorCode::kInput, "lines appended while fix wrote the file are lost",
                         path_.string());
    }
    return OkStatus();
  }

 private:
  // What was appended to the original since `seen_` (empty: nothing), and `seen_` updated;
  // nullopt when it changed otherwise.
  std::optional<std::string> Appended() {
    auto now = ReadWholeFd(original_, path_);
    if (!now || !now->starts_with(seen_)) return std::nullopt;
    std::string extra = now->substr(seen_.size());
    appending_ |= !extra.empty();
    seen_ = std::move(*now);
    return extra;
  }
  Error Changed(const std::string& what) const {
    return MakeError(ErrorCode::kInput,
                     "changed while fix was writing it; " + what + " (run fix again)",
                     path_.string());
  }

  const std::filesystem::path& path_;
  int original_;
  std::string seen_;
  bool appending_ = false;
};

}  // namespace

Status WriteIfUnchanged(const std::filesystem::path& path, std::string_view before,
                        std::string_view after) {
  struct stat st {};
  auto original = OpenRegularFile(path, &st);
  if (!original) return original.take_error();
  auto now = ReadWholeFd(original->get(), path);
  if (!now) return now.take_error();
  // Lines appended since the plan read the file are carried over like those appended later.
  if (!now->starts_with(before))
    return MakeError(ErrorCode::kInput, "changed since it was read; not written", path.string());
  AppendSafeReplace replace(path, original->get(), std::string(before));
  AtomicWriteHooks hooks;
  hooks.before_rename = [&](int fd) { return replace.BeforeRename(fd); };
  hooks.after_rename = [&](int fd) { return replace.AfterRename(fd); };
  return WriteFileAtomic(path, after, {}, hooks);
}

bool HasFix(std::string_view code) {
  return std::find(std::begin(kFixable), std::end(kFixable), code) != std::end(kFixable);
}

bool IsUnsafeFix(std::string_view code) {
  return std::find(std::begin(kUnsafe), std::end(kUnsafe), code) != std::end(kUnsafe);
}

FileFix FixPython(std::string_view source, const std::vector<scan::Finding>& findings,
                  const FixOptions& options) {
  // A UTF-8 byte order mark stays the file's first bytes: the edits (and the helpers inserted
  // before the first statement) go after it, or Python no longer reads the file.
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  if (source.starts_with(kBom)) {
    std::vector<scan::Finding> shifted = findings;
    for (scan::Finding& f : shifted)
      if (f.line == 1 && f.column > 3) f.column -= 3;  // Columns counted the mark's bytes.
    FileFix fix = FixPython(source.substr(kBom.size()), shifted, options);
    fix.text.insert(0, kBom);
    for (Replaced& r : fix.replaced) {
      r.before_begin += kBom.size(), r.before_end += kBom.size();
      r.after_begin += kBom.size(), r.after_end += kBom.size();
    }
    return fix;
  }
  Work work(source, source, options);
  return Fixer(work).Run(findings);
}

namespace {

// A JSON string literal of `s` (UTF-8 as is, as nbformat writes it).
std::string JsonLiteral(std::string_view s) {
  return nlohmann::json(std::string(s))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The text that replaces a cell's source value (`span` in `text`, parsed as `old`) with `now`.
// A list keeps its own layout (the bytes between '[' and its first string, between strings and
// before ']': indentation, line endings), and each line whose text did not change keeps its own
// bytes (escapes as written).
std::string NewSource(std::string_view text, const scan::SourceSpan& span,
                      const nlohmann::json& old, std::string_view now) {
  if (!span.list) return JsonLiteral(now);
  std::vector<std::string_view> lines;
  for (std::size_t pos = 0; pos < now.size();) {
    const std::size_t nl = now.find('\n', pos);
    const std::size_t end = nl == std::string_view::npos ? now.size() : nl + 1;
    lines.push_back(now.substr(pos, end - pos));
    pos = end;
  }
  const auto& parts = span.parts;
  const bool layout = !parts.empty() && parts.size() == old.size();  // Only strings in the list.
  auto raw = [&](std::size_t k) {
    return text.substr(parts[k].first, parts[k].second - parts[k].first);
  };
  std::string_view opener, closer;
  std::string sep = ", ";
  if (layout) {
    opener = text.substr(span.begin + 1, parts.front().first - span.begin - 1);
    closer = text.substr(parts.back().second, span.end - 1 - parts.back().second);
    if (parts.size() >= 2)
      sep = std::string(text.substr(parts[0].second, parts[1].first - parts[0].second));
    else if (!opener.empty())
      sep = "," + std::string(opener);
  }
  std::string out = "[" + std::string(opener);
  const std::size_t n = lines.size(), m = old.size();
  for (std::size_t k = 0; k < n; ++k) {
    if (k > 0) out += sep;
    const std::size_t from_end = m + k >= n ? m + k - n : m;  // The old line as far from the end.
    auto same = [&](std::size_t o) {
      return layout && o < m && old[o].is_string() &&
             old[o].get_ref<const std::string&>() == lines[k];
    };
    if (same(k))
      out += raw(k);
    else if (same(from_end))
      out += raw(from_end);
    else
      out += JsonLiteral(lines[k]);
  }
  return out + std::string(closer) + "]";
}

// Whether `span` holds the value the parser read (a key spelled with escapes, a repeated key:
// then the walk over the text found another value, and the cell is not rewritten in place).
bool SpanHolds(std::string_view text, const scan::SourceSpan& span, const nlohmann::json& value) {
  if (!span.found || span.end <= span.begin || span.end > text.size()) return false;
  try {
    return nlohmann::json::parse(text.substr(span.begin, span.end - span.begin)) == value;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

// A cell's source as one text (a list's strings joined).
std::string CellSource(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  std::string source;
  for (const auto& part : value)
    if (part.is_string()) source += part.get_ref<const std::string&>();
  return source;
}

}  // namespace

Result<FileFix> FixNotebook(std::string_view text, const std::vector<scan::Finding>& findings,
                            const FixOptions& options) {
  if (auto st = CheckJsonDepth(text, ""); !st)
    return MakeError(ErrorCode::kInput, st.error().message);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return MakeError(ErrorCode::kInput, std::string("invalid notebook JSON: ") + e.what());
  }
  if (!doc.is_object() || !doc.contains("cells") || !doc["cells"].is_array())
    return MakeError(ErrorCode::kInput, "not a notebook: no \"cells\" list");
  std::map<std::int64_t, std::vector<scan::Finding>> by_cell;
  for (const auto& f : findings)
    if (f.cell) by_cell[*f.cell].push_back(f);
  const std::vector<scan::SourceSpan> spans = scan::CellSourceSpans(text);
  // Only the source values of fixed cells are rewritten; every other byte of the file (metadata
  // numbers past 2^53, key order, line endings) is copied as it was.
  FileFix out;
  FixOptions opt = options;
  std::size_t copied = 0;  // text[0, copied) is in out.text.
  std::int64_t index = 0;
  for (const auto& cell : doc["cells"]) {
    ++index;
    // A comparison, not value<std::string>(): a cell_type of another type must not throw.
    if (!cell.is_object() || !cell.contains("cell_type") || cell["cell_type"] != "code") continue;
    auto it = cell.find("source");
    if (it == cell.end() || !(it->is_string() || it->is_array())) continue;
    const std::string source = CellSource(*it);
    // The scan blanked magics and shell escapes (%time, !pip): lex what it lexed.
    const std::string lexed = scan::BlankMagics(source);
    Work work(source, lexed, opt);
    FileFix cell_fix = Fixer(work).Run(by_cell[index]);
    for (auto& o : cell_fix.outcomes) out.outcomes.push_back(std::move(o));
    // What this cell defines and imports serves the cells after it.
    const std::string& now = cell_fix.text;
    for (const Helper& h : kHelpers)
      if (now.find("def " + std::string(h.name) + "(") != std::string::npos)
        opt.defined.emplace_back(h.name);
    opt.torch_imported |=
        now.find("import torch\n") != std::string::npos || now.ends_with("import torch");
    if (now == source) continue;
    const auto k = static_cast<std::size_t>(index - 1);
    if (k >= spans.size() || !SpanHolds(text, spans[k], *it) || spans[k].begin < copied)
      return MakeError(ErrorCode::kInput, "cell " + std::to_string(index) +
                                              ": its source is written in a way fix cannot "
                                              "rewrite in place (a repeated or escaped key)");
    const scan::SourceSpan& span = spans[k];
    out.text.append(text.substr(copied, span.begin - copied));
    const std::size_t begin = out.text.size();
    out.text += NewSource(text, span, *it, now);
    out.replaced.push_back(Replaced{span.begin, span.end, begin, out.text.size()});
    copied = span.end;
  }
  if (out.replaced.empty()) {
    out.text = std::string(text);
    return out;
  }
  out.text.append(text.substr(copied));
  return out;
}

}  // namespace dt::fix
