#include "fix/fixer.h"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "scan/notebook_scanner.h"
#include "scan/python_lexer.h"
#include "util/fs.h"
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
     "        return \"cuda\" if index is None else f\"cuda:{index}\"\n"
     "    accelerator = getattr(torch, \"accelerator\", None)  # torch >= 2.6\n"
     "    if accelerator is not None and accelerator.is_available():\n"
     "        return accelerator.current_accelerator().type\n"
     "    if torch.backends.mps.is_available():\n"
     "        return \"mps\"\n"
     "    return \"cpu\"\n"},
    {"_dualtrack_cuda",
     "def _dualtrack_cuda(name, mps_name=None, default=None):\n"
     "    # torch.cuda.<name> with CUDA, torch.mps.<mps_name> on a Mac, else a call returning default.\n"
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
     "    # torch.cuda.amp.autocast(...) on the device in use; off on the CPU, as it was without CUDA.\n"
     "    device = _dualtrack_device().split(\":\")[0]\n"
     "    kwargs.update(zip((\"enabled\", \"dtype\", \"cache_enabled\"), args))\n"
     "    if device == \"cpu\":\n"
     "        kwargs[\"enabled\"] = False\n"
     "    return torch.autocast(device, **kwargs)\n"},
    {"_dualtrack_grad_scaler",
     "def _dualtrack_grad_scaler(*args, **kwargs):\n"
     "    # torch.cuda.amp.GradScaler(...) on the device in use; off on the CPU, as it was without CUDA.\n"
     "    device = _dualtrack_device().split(\":\")[0]\n"
     "    names = (\"init_scale\", \"growth_factor\", \"backoff_factor\", \"growth_interval\", \"enabled\")\n"
     "    kwargs.update(zip(names, args))\n"
     "    if device == \"cpu\":\n"
     "        kwargs[\"enabled\"] = False\n"
     "    return torch.amp.GradScaler(device, **kwargs)\n"},
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
    {"get_device_name", "", ""},
};

const CudaCall* FindCudaCall(std::string_view name) {
  for (const CudaCall& c : kCudaCalls)
    if (c.name == name) return &c;
  return nullptr;
}

// Codes whose findings the fixer rewrites; DT204 only with --unsafe-fixes.
constexpr std::string_view kFixable[] = {"DT101", "DT102", "DT103", "DT104", "DT105", "DT106",
                                         "DT107", "DT108", "DT112", "DT115", "DT205", "DT204"};

struct Edit {
  std::uint32_t begin;
  std::uint32_t end;
  std::string text;
};

class Fixer {
 public:
  // `lexed` is what the scan read (a notebook cell with its magics blanked), `src` what is edited:
  // the same length, the same offsets.
  Fixer(std::string_view src, std::string_view lexed, const FixOptions& opt)
      : src_(src), opt_(opt), lex_(scan::LexPython(lexed)) {}

  FileFix Run(const std::vector<scan::Finding>& findings) {
    FileFix out;
    for (const scan::Finding& f : findings) {
      if (f.guarded) continue;  // Another path exists already.
      Outcome o{f.code, f.line, f.cell, false, IsUnsafeFix(f.code), ""};
      if (!HasFix(f.code)) {
        o.note = "no automatic fix for " + f.code + " (see `dualtrack rule " + f.code + "`)";
      } else if (o.unsafe && !opt_.unsafe) {
        o.note = "an unsafe fix (results may change): pass --unsafe-fixes";
      } else {
        const std::size_t before = edits_.size();
        o.note = FixOne(f);
        o.fixed = edits_.size() > before;
      }
      out.outcomes.push_back(std::move(o));
    }
    out.text = Apply();
    return out;
  }

 private:
  // --- Tokens ---------------------------------------------------------------------------------
  std::string_view Text(std::size_t k) const { return lex_.Text(lex_.tokens[k]); }
  bool IsOp(std::size_t k, std::string_view op) const {
    return k < lex_.tokens.size() && lex_.tokens[k].kind() == TokKind::kOp && Text(k) == op;
  }
  bool IsName(std::size_t k) const { return k < lex_.tokens.size() && lex_.tokens[k].kind() == TokKind::kName; }
  bool IsString(std::size_t k) const {
    return k < lex_.tokens.size() && lex_.tokens[k].kind() == TokKind::kString;
  }
  std::uint32_t Begin(std::size_t k) const { return lex_.tokens[k].offset; }
  std::uint32_t End(std::size_t k) const { return lex_.tokens[k].offset + lex_.tokens[k].size(); }
  bool IsOpen(std::size_t k) const { return IsOp(k, "(") || IsOp(k, "[") || IsOp(k, "{"); }
  bool IsClose(std::size_t k) const { return IsOp(k, ")") || IsOp(k, "]") || IsOp(k, "}"); }

  // The token that starts at the finding's line and column.
  std::size_t TokenAt(std::int64_t line, std::int64_t column) const {
    if (line < 1 || static_cast<std::size_t>(line) > lex_.line_starts.size() || column < 1) return kNone;
    const std::uint64_t offset = lex_.line_starts[static_cast<std::size_t>(line - 1)] + static_cast<std::uint64_t>(column - 1);
    auto it = std::lower_bound(lex_.tokens.begin(), lex_.tokens.end(), offset,
                               [](const Token& t, std::uint64_t o) { return t.offset < o; });
    if (it == lex_.tokens.end() || it->offset != offset) return kNone;
    return static_cast<std::size_t>(it - lex_.tokens.begin());
  }

  std::size_t Matching(std::size_t open) const {
    int depth = 0;
    for (std::size_t k = open; k < lex_.tokens.size(); ++k) {
      if (IsOpen(k)) ++depth;
      else if (IsClose(k) && --depth == 0) return k;
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
      if (IsOpen(k)) ++depth;
      else if (IsClose(k)) --depth;
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
  bool Add(std::uint32_t begin, std::uint32_t end, std::string text) {
    for (const Edit& e : edits_)
      if (begin < e.end && e.begin < end) return false;  // Overlaps an edit already made.
    for (const Edit& e : edits_)
      if (begin == end && e.begin == e.end && e.begin == begin) return false;
    edits_.push_back(Edit{begin, end, std::move(text)});
    return true;
  }

  std::string Apply() {
    if (edits_.empty()) return std::string(src_);
    InsertHelpers();
    std::sort(edits_.begin(), edits_.end(), [](const Edit& a, const Edit& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    std::string out;
    out.reserve(src_.size() + 1024);
    std::uint32_t at = 0;
    for (const Edit& e : edits_) {
      out.append(src_.substr(at, e.begin - at));
      out.append(e.text);
      at = e.end;
    }
    out.append(src_.substr(at));
    return out;
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
    for (const Edit& e : edits_) first_edit = std::min(first_edit, e.begin);
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
      for (std::size_t p = at; p < src_.size() && src_[p] == '\n' && blank < 2; ++p) ++blank;
      if (at < src_.size()) text += std::string(2 - blank, '\n');
    }
    if (at > 0 && src_[at - 1] != '\n') text = "\n" + text;  // A last line without its newline.
    edits_.push_back(Edit{at, at, std::move(text)});
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

  // --- Rules ----------------------------------------------------------------------------------
  // Returns what was done, or why nothing was.
  std::string FixOne(const scan::Finding& f) {
    const std::size_t k = TokenAt(f.line, f.column);
    if (k == kNone) return "the finding's position holds no token: the file changed since the scan";
    if (f.code == "DT101") return WithSiblings(k, &Fixer::FixDotCuda);
    if (f.code == "DT102") return WithSiblings(k, &Fixer::FixDeviceString);
    if (f.code == "DT205") return FixNccl(k);
    if (f.code == "DT112") return FixChoices(k);
    if (f.code == "DT204") return FixFloat64(k);
    if (f.code == "DT106") return FixBackendFlag(k);
    if ((f.code == "DT105" || f.code == "DT115") && IsName(k) && IsOp(k + 1, "=")) return FixFp16(k);
    if (IsName(k)) return FixCudaApi(k);
    return "not a call this fix knows";
  }

  // The scan reports one finding per rule and statement: `a.cuda(), b.cuda()` is one DT101. The
  // fix of the reported construct also fixes its like in the same statement, unless a conditional
  // expression there may put one of them behind a check.
  std::string WithSiblings(std::size_t k, std::string (Fixer::*fix)(std::size_t)) {
    std::string note = (this->*fix)(k);
    auto line = std::find_if(lex_.lines.begin(), lex_.lines.end(),
                             [&](const scan::LogicalLine& l) { return l.begin <= k && k < l.end; });
    if (line == lex_.lines.end()) return note;
    for (std::size_t t = line->begin; t < line->end; ++t)
      if (Text(t) == "if" || Text(t) == "while" || Text(t) == "lambda") return note;
    for (std::size_t t = line->begin; t < line->end; ++t) {
      if (t == k) continue;
      const bool like = fix == &Fixer::FixDotCuda ? Text(t) == "cuda" && t > 0 && IsOp(t - 1, ".") && IsOp(t + 1, "(")
                                                  : IsString(t) && scan::StringBody(Text(t)).starts_with("cuda");
      if (like) (void)(this->*fix)(t);
    }
    return note;
  }

  // x.cuda() -> x.to(_dualtrack_device()); x.cuda(non_blocking=True) keeps its keyword.
  std::string FixDotCuda(std::size_t k) {
    if (!(k >= 1 && IsOp(k - 1, ".") && Text(k) == "cuda" && IsOp(k + 1, "(")))
      return "not a .cuda(...) call";
    const std::size_t close = Matching(k + 1);
    if (close == kNone) return "unbalanced brackets";
    const auto args = Args(k + 1, close);
    for (const auto& a : args)
      if (!IsKeywordArg(a))
        return ".cuda(index) names a CUDA device: left for review (use .to(device))";
    needed_.insert("_dualtrack_device");
    std::string text = "to(_dualtrack_device()";
    if (!args.empty()) text += ", ";
    return Add(Begin(k), End(k + 1), text) ? "x.cuda() -> x.to(_dualtrack_device())" : "overlaps another fix";
  }

  // "cuda" / "cuda:N" where a device is chosen -> _dualtrack_device() / _dualtrack_device(N).
  std::string FixDeviceString(std::size_t k) {
    if (!IsString(k) || scan::IsFString(Text(k)) || scan::IsBytes(Text(k))) return "not a plain string";
    const std::string_view body = scan::StringBody(Text(k));
    std::string index;
    if (body.starts_with("cuda:")) {
      index = std::string(body.substr(5));
      if (index.empty() || !std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return "not a device string";
    } else if (body != "cuda") {
      return "not a device string";
    }
    const std::size_t prev = k - 1;
    const std::size_t next = k + 1;
    auto is_compare = [&](std::size_t t) {
      return IsOp(t, "==") || IsOp(t, "!=") || Text(t) == "in" || Text(t) == "is" || Text(t) == "not";
    };
    if (k == 0 || is_compare(prev) || (next < lex_.tokens.size() && is_compare(next)))
      return "a comparison: a check, not a choice";
    if (IsOp(next, ":")) return "a mapping key";
    // torch.device("cuda", index): the index goes with the device type.
    if (IsOp(prev, "(") && IsOp(next, ",") && prev >= 1 && Text(prev - 1) == "device")
      return "torch.device(\"cuda\", index): left for review";
    const bool value_before = IsOp(prev, "(") || IsOp(prev, ",") || IsOp(prev, "=") ||
                              IsOp(prev, "[") || IsOp(prev, ":") || Text(prev) == "return";
    const bool value_after = next >= lex_.tokens.size() || IsOp(next, ")") || IsOp(next, ",") ||
                             IsOp(next, "]") || IsOp(next, "}") || IsOp(next, ";") ||
                             lex_.Line(lex_.tokens[next]) != lex_.Line(lex_.tokens[k]);
    if (!value_before || !value_after) return "the string is part of a larger expression";
    needed_.insert("_dualtrack_device");
    return Add(Begin(k), End(k), "_dualtrack_device(" + index + ")")
               ? "\"" + std::string(body) + "\" -> _dualtrack_device(" + index + ")"
               : "overlaps another fix";
  }

  // backend="nccl" -> ("nccl" if torch.cuda.is_available() else "gloo").
  std::string FixNccl(std::size_t k) {
    if (!IsString(k) || scan::IsFString(Text(k)) || scan::StringBody(Text(k)) != "nccl")
      return "not the \"nccl\" string";
    const char quote = Text(k).back();
    std::string gloo = std::string(1, quote) + "gloo" + std::string(1, quote);
    needed_.insert("torch");
    return Add(Begin(k), End(k), "(" + std::string(Text(k)) + " if torch.cuda.is_available() else " + gloo + ")")
               ? "\"nccl\" -> nccl with CUDA, else gloo"
               : "overlaps another fix";
  }

  // choices=["cuda", "cpu"] -> choices=["cuda", "cpu", "mps"], in the statement of the finding.
  std::string FixChoices(std::size_t k) {
    auto line = std::find_if(lex_.lines.begin(), lex_.lines.end(),
                             [&](const scan::LogicalLine& l) { return l.begin <= k && k < l.end; });
    if (line == lex_.lines.end()) return "no statement at the finding";
    for (std::size_t c = line->begin; c + 2 < line->end; ++c) {
      if (Text(c) != "choices" || !IsOp(c + 1, "=") || !(IsOp(c + 2, "[") || IsOp(c + 2, "(") || IsOp(c + 2, "{")))
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

  // fp16=True (Hugging Face) -> fp16=torch.cuda.is_available().
  std::string FixFp16(std::size_t k) {
    if (Text(k) != "fp16" || !IsOp(k + 1, "=") || Text(k + 2) != "True") return "not fp16=True";
    needed_.insert("torch");
    return Add(Begin(k + 2), End(k + 2), "torch.cuda.is_available()") ? "fp16=True -> fp16 only with CUDA"
                                                                       : "overlaps another fix";
  }

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
      if (!c->fallback.empty()) text += std::string(c->mps.empty() ? ", None" : "") + ", " + std::string(c->fallback);
      text += ")";
      needed_.insert("_dualtrack_cuda");
    } else {
      return "no device-generic stand-in for torch.cuda." + std::string(name) + " yet";
    }
    return Add(Begin(b), End(e - 1), text) ? std::string(name) + "(...) -> " + text + "(...)"
                                           : "overlaps another fix";
  }

  // torch.backends.cudnn.benchmark = True -> if torch.cuda.is_available(): torch.backends...: the
  // setting of one physical line, set where it means something.
  std::string FixBackendFlag(std::size_t k) {
    auto line = std::find_if(lex_.lines.begin(), lex_.lines.end(),
                             [&](const scan::LogicalLine& l) { return l.begin == k; });
    if (line == lex_.lines.end()) return "not a statement of its own";
    const auto [b, e] = ChainAround(k);
    if (b != k || !IsOp(e, "=") || e + 1 >= line->end) return "not a setting (an assignment to the flag)";
    if (lex_.Line(lex_.tokens[line->begin]) != lex_.Line(lex_.tokens[line->end - 1]))
      return "a setting over several lines: left for review";
    needed_.insert("torch");
    return Add(Begin(k), Begin(k), "if torch.cuda.is_available(): ") ? "set only with CUDA"
                                                                    : "overlaps another fix";
  }

  // Unsafe: torch.float64 / torch.double -> torch.float32, x.double() -> x.float().
  std::string FixFloat64(std::size_t k) {
    const auto [b, e] = ChainAround(k);
    const std::string_view last = Text(e - 1);
    if (last == "double" && b + 1 < e && IsOp(e, "(") && IsOp(e + 1, ")") && IsOp(e - 2, "."))
      return Add(Begin(e - 1), End(e - 1), "float") ? ".double() -> .float()" : "overlaps another fix";
    if ((last == "float64" || last == "double") && e - b == 3 && Text(b) == "torch")
      return Add(Begin(e - 1), End(e - 1), "float32") ? "torch." + std::string(last) + " -> torch.float32"
                                                      : "overlaps another fix";
    return "not torch.float64 or .double()";
  }

  std::string_view src_;
  const FixOptions& opt_;
  Lexed lex_;
  std::vector<Edit> edits_;
  std::set<std::string> needed_;  // Helpers, and "torch" for fixes that name it.
};

}  // namespace

bool FileFix::changed() const { return fixed() > 0; }

std::size_t FileFix::fixed() const {
  return static_cast<std::size_t>(std::count_if(outcomes.begin(), outcomes.end(), [](const Outcome& o) { return o.fixed; }));
}

Status WriteIfUnchanged(const std::filesystem::path& path, std::string_view before, std::string_view after) {
  auto now = ReadFile(path);
  if (!now) return now.error();
  if (*now != before)
    return MakeError(ErrorCode::kInput, "changed since it was read; not written", path.string());
  return WriteFileAtomic(path, after);
}

bool HasFix(std::string_view code) {
  return std::find(std::begin(kFixable), std::end(kFixable), code) != std::end(kFixable);
}

bool IsUnsafeFix(std::string_view code) { return code == "DT204"; }

FileFix FixPython(std::string_view source, const std::vector<scan::Finding>& findings, const FixOptions& options) {
  return Fixer(source, source, options).Run(findings);
}

Result<FileFix> FixNotebook(std::string_view text, const std::vector<scan::Finding>& findings,
                            const FixOptions& options) {
  nlohmann::ordered_json doc;
  try {
    doc = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return MakeError(ErrorCode::kInput, std::string("invalid notebook JSON: ") + e.what());
  }
  if (!doc.is_object() || !doc.contains("cells") || !doc["cells"].is_array())
    return MakeError(ErrorCode::kInput, "not a notebook: no \"cells\" list");
  FileFix out;
  FixOptions opt = options;
  bool changed = false;
  std::int64_t index = 0;
  for (auto& cell : doc["cells"]) {
    ++index;
    if (!cell.is_object() || cell.value("cell_type", std::string()) != "code") continue;
    auto it = cell.find("source");
    if (it == cell.end() || !(it->is_string() || it->is_array())) continue;
    std::string source;
    if (it->is_string()) {
      source = it->get<std::string>();
    } else {
      for (const auto& part : *it)
        if (part.is_string()) source += part.get<std::string>();
    }
    // The scan blanked magics and shell escapes (%time, !pip): lex what it lexed.
    const std::string lexed = scan::BlankMagics(source);
    std::vector<scan::Finding> mine;
    for (const auto& f : findings)
      if (f.cell && *f.cell == index) mine.push_back(f);
    FileFix cell_fix = Fixer(source, lexed, opt).Run(mine);
    for (auto& o : cell_fix.outcomes) out.outcomes.push_back(std::move(o));
    // What this cell defines and imports serves the cells after it.
    const std::string& now = cell_fix.text;
    for (const Helper& h : kHelpers)
      if (now.find("def " + std::string(h.name) + "(") != std::string::npos) opt.defined.emplace_back(h.name);
    opt.torch_imported |= now.find("import torch\n") != std::string::npos || now.ends_with("import torch");
    if (now == source) continue;
    changed = true;
    if (it->is_string()) {
      *it = now;
    } else {
      nlohmann::ordered_json lines = nlohmann::ordered_json::array();
      for (std::size_t pos = 0; pos < now.size();) {
        std::size_t nl = now.find('\n', pos);
        std::size_t end = nl == std::string::npos ? now.size() : nl + 1;
        lines.push_back(now.substr(pos, end - pos));
        pos = end;
      }
      *it = std::move(lines);
    }
  }
  if (!changed) {
    out.text = std::string(text);
    return out;
  }
  // The file's own indentation (nbformat writes 1 space), key order and a final newline.
  int indent = 1;
  if (auto nl = text.find('\n'); nl != std::string_view::npos) {
    std::size_t spaces = 0;
    while (nl + 1 + spaces < text.size() && text[nl + 1 + spaces] == ' ') ++spaces;
    if (spaces > 0 && spaces <= 8) indent = static_cast<int>(spaces);
  }
  out.text = doc.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  if (text.ends_with("\n")) out.text += "\n";
  return out;
}

}  // namespace dt::fix
