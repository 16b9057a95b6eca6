#include "scan/cpp_scanner.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "scan/env_scanners.h"
#include "util/fs.h"
#include "util/strings.h"

namespace dt::scan {

namespace {

inline bool IdStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
inline bool IdChar(char c) { return IdStart(c) || (c >= '0' && c <= '9'); }

// CUDA API families: the identifier starts with one of these and continues with an upper-case
// letter or a digit (cudaMalloc, cublasSgemm, cudnnCreate, ncclAllReduce). snake_case names
// (`cuda_enabled`, `nccl_rank`) are the project's own.
bool IsCudaApi(std::string_view id) {
  static constexpr std::string_view kPrefixes[] = {
      "cuda",     "cublas",   "cudnn",    "nccl",     "cufft",   "curand",
      "cusparse", "cusolver", "nvrtc",    "cutensor", "nvtx",    "cuMem",
      "cuCtx",    "cuLaunch", "cuModule", "cuStream", "cuDevice"};
  for (std::string_view p : kPrefixes) {
    if (id.size() > p.size() && StartsWith(id, p)) {
      char c = id[p.size()];
      if ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
    }
  }
  return false;
}

bool IsCudaHeader(std::string_view h) {
  std::string lower(h);
  for (char& c : lower)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  return lower.find("cuda") != std::string::npos || StartsWith(lower, "cublas") ||
         StartsWith(lower, "cudnn") || StartsWith(lower, "nccl") || StartsWith(lower, "cufft") ||
         StartsWith(lower, "curand") || StartsWith(lower, "cusparse") ||
         StartsWith(lower, "cusolver") || StartsWith(lower, "nvrtc") || StartsWith(lower, "nvtx");
}

// A statement that fails outright: `AT_ERROR(...)`, or a check macro whose condition is `false`.
bool IsFailMacro(std::string_view id) { return id == "AT_ERROR"; }
// Check macros: a condition then a message.
bool IsCheckMacro(std::string_view id) {
  return id == "AT_ASSERT" || id == "AT_ASSERTM" || id == "TORCH_CHECK" || id == "AT_CHECK" ||
         id == "TORCH_INTERNAL_ASSERT" || id == "TORCH_CHECK_NOT_IMPLEMENTED" || id == "assert";
}

// The text between the '(' at `open` and its matching ')', skipping string and character
// literals; empty when it is not closed within 4 KiB (a condition or a check is short, and an
// unclosed one must not make the scan quadratic).
std::string_view ParenArgs(std::string_view s, std::size_t open) {
  int depth = 0;
  std::size_t end = std::min(s.size(), open + 4096);
  for (std::size_t i = open; i < end; ++i) {
    char c = s[i];
    if (c == '"' || c == '\'') {
      for (++i; i < end && s[i] != c && s[i] != '\n'; ++i)
        if (s[i] == '\\') ++i;
    } else if (c == '(') {
      ++depth;
    } else if (c == ')' && --depth == 0) {
      return s.substr(open + 1, i - open - 1);
    }
  }
  return {};
}

// Whether `b` follows `a` in `l`, starting at most `within` characters after it.
bool Near(std::string_view l, std::string_view a, std::string_view b, std::size_t within) {
  for (std::size_t p = l.find(a); p != std::string_view::npos; p = l.find(a, p + 1)) {
    std::size_t from = p + a.size();
    std::size_t q = l.find(b, from);
    if (q != std::string_view::npos && q - from <= within) return true;
  }
  return false;
}

// A message that says the op has no CPU path ("CPU not supported", "not implemented on CPU",
// "no CPU implementation") or needs CUDA ("only CUDA tensors", "GPU only", "requires CUDA",
// "must be a CUDA tensor"). A message that merely names CUDA ("CUDA driver error", "kernel_cuda
// handles only int64") is an error of the CUDA path itself, not a rejection of other devices.
bool MentionsDevice(std::string_view args) {
  std::string l = Lower(args);
  if (l.find("cpu") != std::string::npos) {
    for (std::string_view neg :
         {"not supported", "not implemented", "unsupported", "unimplemented", "not available",
          "no cpu", "not support", "n't support", "only", "not yet"})
      if (l.find(neg) != std::string::npos) return true;
  }
  for (std::string_view dev : {"cuda", "gpu"}) {
    if (Near(l, "only", dev, 24) || Near(l, dev, "only", 3) || Near(l, "requires", dev, 8) ||
        Near(l, "require", dev, 8) || Near(l, "must be", dev, 12) || Near(l, "needs", dev, 8) ||
        Near(l, "expected", dev, 8) || Near(l, "not on", dev, 8))
      return true;
  }
  return false;
}

// A condition that tests a tensor's device: x.is_cuda(), x.device().is_cuda(), x.is_cpu(),
// x.device().type() == at::kCUDA, x.device().is_mps().
bool IsDeviceTest(std::string_view cond) {
  return cond.find("is_cuda") != std::string_view::npos ||
         cond.find("is_cpu") != std::string_view::npos ||
         cond.find("is_mps") != std::string_view::npos ||
         cond.find("kCUDA") != std::string_view::npos ||
         cond.find("kCPU") != std::string_view::npos ||
         cond.find("DeviceType::CUDA") != std::string_view::npos ||
         cond.find("DeviceType::CPU") != std::string_view::npos;
}
bool IsCudaTest(std::string_view cond) {
  return (cond.find("is_cuda") != std::string_view::npos ||
          cond.find("kCUDA") != std::string_view::npos ||
          cond.find("DeviceType::CUDA") != std::string_view::npos) &&
         cond.find('!') == std::string_view::npos;
}

// Per function body: where the wrapper turns away non-CUDA tensors. Reported at the end of the
// function, once, because a device branch anywhere in it (`if (x.is_cuda()) ... else cpu(x)`)
// means a CUDA check inside the CUDA branch rejects nothing.
struct Rejection {
  std::uint32_t line = 0, col = 0;
  std::string what;
  bool fail = false;    // Fails outright (AT_ERROR, TORCH_CHECK(false, ...)).
  bool counts = false;  // A fail that is known to be the non-CUDA path.
  bool in_cuda_branch = false;
};

// Reads `#define NAME(...) body` from `p` (just after "define"): a macro whose body checks for
// CUDA tensors (is_cuda, or a check macro already known) is itself such a check.
void LearnCheckMacro(std::string_view s, std::size_t p, std::vector<std::string>& macros) {
  const std::size_t n = s.size();
  while (p < n && (s[p] == ' ' || s[p] == '\t')) ++p;
  std::size_t b = p;
  while (p < n && IdChar(s[p])) ++p;
  std::string_view name = s.substr(b, p - b);
  std::size_t e = p;  // End of the definition, over backslash continuations.
  while (e < n && s[e] != '\n' && s[e] != '\r') {
    if (s[e] == '\\' && e + 1 < n && (s[e + 1] == '\n' || s[e + 1] == '\r')) {
      e += (s[e + 1] == '\r' && e + 2 < n && s[e + 2] == '\n') ? 3 : 2;
      continue;
    }
    ++e;
  }
  std::string_view body = s.substr(p, e - p);
  bool checks = !name.empty() && body.find("is_cuda") != std::string_view::npos;
  for (std::size_t k = 0; !checks && k < macros.size(); ++k)
    checks = FindWord(body, macros[k]) != std::string_view::npos;
  if (checks && std::find(macros.begin(), macros.end(), name) == macros.end())
    macros.emplace_back(name);
}

// The CUDA check macros a project header defines (`#include "utils.h"` with CHECK_INPUT in it):
// read from disk beside the including file, one level deep, bounded.
void LearnHeaderMacros(const std::string& including_abs, std::string_view header,
                       std::vector<std::string>& macros) {
  if (including_abs.empty() || header.empty() || header.find("..") != std::string_view::npos ||
      header[0] == '/')
    return;
  std::filesystem::path path =
      std::filesystem::path(including_abs).parent_path() / std::string(header);
  auto text = ReadFile(path, std::uint64_t{256} << 10);
  if (!text) return;
  std::string_view t = *text;
  for (std::size_t d = t.find("define"); d != std::string_view::npos; d = t.find("define", d + 6)) {
    std::size_t h = d;
    while (h > 0 && (t[h - 1] == ' ' || t[h - 1] == '\t')) --h;
    if (h > 0 && t[h - 1] == '#') LearnCheckMacro(t, d + 6, macros);
  }
}

enum class BlockKind : std::uint8_t { kScope, kFunction, kOther };
struct Block {
  BlockKind kind = BlockKind::kOther;
  bool cuda_branch = false;  // The body of `if (<tests for CUDA>)`.
};

// Op namespaces PyTorch defines itself (its own sources and codegen templates register them):
// never a project's extension, even in a tree that vendors PyTorch's sources.
bool IsTorchNamespace(std::string_view ns) {
  for (std::string_view t : {"aten",
                             "prim",
                             "prims",
                             "cuda",
                             "quantized",
                             "_quantized",
                             "sparse",
                             "_caffe2",
                             "inductor",
                             "c10d",
                             "_c10d_functional",
                             "profiler",
                             "mkldnn",
                             "onednn",
                             "fbgemm",
                             "higher_order",
                             "_dtensor",
                             "debugprims",
                             "rngprims",
                             "quantized_decomposed",
                             "xnnpack",
                             "mkl"})
    if (ns == t) return true;
  return false;
}

}  // namespace

void ScanCpp(std::string_view s, FindingSink& sink) {
  std::uint32_t line = 1;
  std::size_t line_begin = 0;
  bool line_start = true;  // Only whitespace so far on this line.
  bool has_binding = false;
  std::uint32_t binding_line = 0, binding_col = 0;
  auto col = [&](std::size_t p) { return static_cast<std::uint32_t>(p - line_begin + 1); };
  std::size_t i = 0;
  const std::size_t n = s.size();
  // Advances over [from, to) counting line ends ("\n", "\r\n" or a lone "\r").
  auto skip_to = [&](std::size_t to) {
    to = std::min(to, n);
    for (; i < to; ++i) {
      if (s[i] == '\n' || (s[i] == '\r' && (i + 1 >= n || s[i + 1] != '\n'))) {
        ++line;
        line_begin = i + 1;
      }
    }
  };
  // Macros of this file that check for CUDA tensors (`#define CHECK_CUDA(x) TORCH_CHECK(...)`,
  // `#define CHECK_INPUT(x) CHECK_CUDA(x); ...`); CHECK_CUDA itself is near universal.
  std::vector<std::string> cuda_check_macros = {"CHECK_CUDA", "CHECK_IS_CUDA", "CHECK_CUDA_TENSOR"};
  int headers_read = 0;
  auto is_cuda_check_macro = [&](std::string_view id) {
    return std::find(cuda_check_macros.begin(), cuda_check_macros.end(), id) !=
           cuda_check_macros.end();
  };
  std::vector<Block> blocks;
  std::vector<Rejection> rejections;
  bool fn_device_branch = false;
  // What the next `{` opens: set by `namespace`, `struct`..., by an `if (<cond>)`, and by `)`.
  BlockKind next_kind = BlockKind::kOther;
  bool next_cuda_branch = false;
  bool saw_paren = false;  // A `)` since the last statement end: a `{` now may open a function.
  bool expect_cpu_stmt = false;  // Just after a CUDA branch closed, or in its `else`.
  std::string_view prev_id;
  std::size_t check_args_end = 0;  // Inside the arguments of a check macro until here.
  // Counts over `blocks`, kept as they change so that deep nesting stays linear.
  std::size_t n_cuda = 0, n_function = 0, n_not_scope = 0;
  auto in_cuda_branch = [&] { return n_cuda > 0; };
  auto in_function = [&] { return n_function > 0; };
  // In .cu / .cuh files the checks guard the CUDA implementation itself (reached through a
  // wrapper that may well dispatch on the device); the wrapper is what decides.
  const bool cuda_source = EndsWith(sink.rel(), ".cu") || EndsWith(sink.rel(), ".cuh");
  // Every check that rejects a non-CUDA tensor is a finding of its own: each names an input the
  // user would have to move off the extension (the text output groups them under the file).
  auto end_function = [&] {
    for (const auto& r : rejections) {
      if (cuda_source) break;
      if (r.in_cuda_branch) continue;
      bool rejects = r.fail ? r.counts : !fn_device_branch;
      if (rejects) sink.Add("DT320", r.line, r.col, r.what, false);
    }
    rejections.clear();
    fn_device_branch = false;
  };
  while (i < n) {
    char c = s[i];
    if (c == '\n' || c == '\r') {
      skip_to(i + 1);
      line_start = true;
      continue;
    }
    if (c == ' ' || c == '\t') {
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && s[i + 1] == '/') {
      while (i < n && s[i] != '\n' && s[i] != '\r') ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      std::size_t e = s.find("*/", i + 2);
      skip_to(e == std::string_view::npos ? n : e + 2);
      continue;
    }
    if (c == '#' && line_start) {
      // Preprocessor: #include <...> / "..." names a header.
      std::size_t p = i + 1;
      while (p < n && (s[p] == ' ' || s[p] == '\t')) ++p;
      if (s.substr(p, 7) == "include") {
        p += 7;
        while (p < n && (s[p] == ' ' || s[p] == '\t')) ++p;
        if (p < n && (s[p] == '<' || s[p] == '"')) {
          char close = s[p] == '<' ? '>' : '"';
          std::size_t e = s.find(close, p + 1);
          std::size_t nl = s.find_first_of("\r\n", p);
          if (e != std::string_view::npos && (nl == std::string_view::npos || e < nl)) {
            std::string_view header = s.substr(p + 1, e - p - 1);
            if (StartsWith(header, "thrust/") || StartsWith(header, "cub/") ||
                StartsWith(header, "cutlass/") || StartsWith(header, "cute/")) {
              sink.Add("DT308", line, col(i), header, false);
            } else if (IsCudaHeader(header)) {
              sink.Add("DT304", line, col(i), "#include <" + std::string(header) + ">", false);
            } else if (close == '"' && headers_read < 16) {
              ++headers_read;
              LearnHeaderMacros(sink.path(), header, cuda_check_macros);
            }
            i = e + 1;
            line_start = false;
            continue;
          }
        }
      } else if (s.substr(p, 6) == "define") {
        LearnCheckMacro(s, p + 6, cuda_check_macros);
      }
      line_start = false;
      ++i;
      continue;
    }
    line_start = false;
    if (c == '"' || c == '\'') {
      ++i;
      while (i < n && s[i] != c && s[i] != '\n' && s[i] != '\r') i += (s[i] == '\\') ? 2 : 1;
      if (i < n && s[i] == c) ++i;
      continue;
    }
    if (c == '<' && i + 2 < n && s[i + 1] == '<' && s[i + 2] == '<') {
      sink.Add("DT303", line, col(i), "<<<...>>> kernel launch", false);
      i += 3;
      continue;
    }
    if (c == '{') {
      BlockKind kind = next_kind;
      if (kind == BlockKind::kOther && saw_paren && n_not_scope == 0) kind = BlockKind::kFunction;
      blocks.push_back(Block{kind, next_cuda_branch});
      n_cuda += next_cuda_branch ? 1 : 0;
      n_function += kind == BlockKind::kFunction ? 1 : 0;
      n_not_scope += kind != BlockKind::kScope ? 1 : 0;
      expect_cpu_stmt = expect_cpu_stmt && prev_id == "else";  // `} else {` of a CUDA branch.
      next_kind = BlockKind::kOther;
      next_cuda_branch = false;
      saw_paren = false;
      prev_id = {};
      ++i;
      continue;
    }
    if (c == '}') {
      if (!blocks.empty()) {
        Block b = blocks.back();
        blocks.pop_back();
        n_cuda -= b.cuda_branch ? 1 : 0;
        n_function -= b.kind == BlockKind::kFunction ? 1 : 0;
        n_not_scope -= b.kind != BlockKind::kScope ? 1 : 0;
        if (b.kind == BlockKind::kFunction) end_function();
        expect_cpu_stmt = b.cuda_branch;
      }
      saw_paren = false;
      prev_id = {};
      ++i;
      continue;
    }
    if (c == ';') {
      next_kind = BlockKind::kOther;
      saw_paren = false;
      // `if (x.is_cuda()) return f_cuda(x);` ends a CUDA branch without braces.
      if (next_cuda_branch && i >= check_args_end)
        expect_cpu_stmt = true;
      else if (prev_id != "else")
        expect_cpu_stmt = false;
      next_cuda_branch = false;
      prev_id = {};
      ++i;
      continue;
    }
    if (c == ')') saw_paren = true;
    if (IdStart(c)) {
      std::size_t b = i;
      while (i < n && IdChar(s[i])) ++i;
      std::string_view id = s.substr(b, i - b);
      if (i < n && s[i] == '"' &&
          (id == "R" || id == "u8R" || id == "uR" || id == "UR" || id == "LR")) {
        // Raw string R"delim( ... )delim": may span lines, and quotes inside do not end it.
        std::size_t open = s.find('(', i + 1);
        std::size_t nl = s.find_first_of("\r\n", i + 1);
        if (open != std::string_view::npos && open - (i + 1) <= 16 &&
            (nl == std::string_view::npos || open < nl)) {
          std::string close = ")" + std::string(s.substr(i + 1, open - i - 1)) + "\"";
          std::size_t e = s.find(close, open + 1);
          skip_to(e == std::string_view::npos ? n : e + close.size());
          continue;
        }
      }
      std::size_t after = i;
      while (after < n && (s[after] == ' ' || s[after] == '\t')) ++after;
      bool call = after < n && s[after] == '(';
      if (id == "namespace" || id == "struct" || id == "class" || id == "union" || id == "enum" ||
          (id == "extern" && after < n && s[after] == '"')) {
        next_kind = BlockKind::kScope;
      } else if ((id == "if" || id == "while" || id == "for" || id == "switch") && call) {
        std::string_view cond = ParenArgs(s, after);
        if (id == "if" && IsDeviceTest(cond)) {
          if (in_function()) fn_device_branch = true;
          next_cuda_branch = IsCudaTest(cond);
        }
        // is_cuda() in the condition is a dispatch, not a check; CUDA calls in it still count.
        if (!cond.empty()) check_args_end = after + cond.size() + 2;
        if (id == "if" && prev_id == "else") expect_cpu_stmt = false;
        prev_id = id;
        continue;
      } else if (in_function() && call &&
                 (IsFailMacro(id) || IsCheckMacro(id) || is_cuda_check_macro(id))) {
        std::string_view args = ParenArgs(s, after);
        std::size_t comma = args.find(',');
        std::string_view first = Trim(args.substr(0, comma));
        std::string_view message =
            comma == std::string_view::npos ? std::string_view{} : args.substr(comma + 1);
        Rejection r{line, col(b), std::string(id), false, false, in_cuda_branch()};
        if (IsFailMacro(id) || first == "false" || first == "0") {
          // A failure is the non-CUDA path when its message says so, or when it is what runs
          // right after (or in the `else` of) a branch taken for CUDA tensors.
          r.fail = true;
          r.counts = MentionsDevice(IsFailMacro(id) ? args : message) || expect_cpu_stmt;
          rejections.push_back(std::move(r));
        } else if (is_cuda_check_macro(id) ||
                   ((first.find("is_cuda") != std::string_view::npos ||
                     first.find("kCUDA") != std::string_view::npos) &&
                    first.find("||") ==
                        std::string_view::npos)) {  // `is_cuda() || is_cpu()` accepts more
          rejections.push_back(std::move(r));
        }
        // The check's own is_cuda() is the rejection, not a separate finding; the rest of its
        // arguments (cudaGetErrorString(err)...) are read as usual.
        if (!args.empty()) check_args_end = after + args.size() + 2;
        expect_cpu_stmt = false;
        prev_id = id;
        continue;
      } else if (id == "throw" && in_function()) {
        std::size_t e = s.find(';', i);
        std::string_view stmt =
            s.substr(i, std::min<std::size_t>(e == std::string_view::npos ? n - i : e - i, 1024));
        if (MentionsDevice(stmt) || expect_cpu_stmt)
          rejections.push_back(Rejection{line, col(b), "throw", true, true, in_cuda_branch()});
      } else if (id == "__global__" || id == "__device__" || id == "__shared__" ||
                 id == "__constant__") {
        sink.Add("DT303", line, col(b), id, false);
      } else if (id == "cuda" && i + 1 < n && s[i] == ':' && s[i + 1] == ':') {
        sink.Add("DT304", line, col(b), "cuda:: namespace", false);
      } else if (id == "is_cuda" && call && i >= check_args_end) {
        sink.Add("DT307", line, col(b), "is_cuda()", false);
      } else if (id == "PYBIND11_MODULE" || id == "TORCH_LIBRARY" || id == "TORCH_LIBRARY_IMPL" ||
                 id == "TORCH_LIBRARY_FRAGMENT") {
        has_binding = true;
        binding_line = line;
        binding_col = col(b);
        // TORCH_LIBRARY_IMPL adds kernels to a namespace defined elsewhere (often aten).
        if (id != "PYBIND11_MODULE" && id != "TORCH_LIBRARY_IMPL" && call) {
          // The op namespace Python reaches as torch.ops.<ns>.<op>: it exists only where the
          // project's extension was built (Scan() keeps it when the project has CUDA sources).
          std::string_view args = ParenArgs(s, after);
          std::string_view ns = Trim(args.substr(0, args.find(',')));
          if (!ns.empty() && ns.find_first_of(" ()\"") == std::string_view::npos &&
              !IsTorchNamespace(ns))
            sink.DeclareCudaModule("torch.ops." + std::string(ns), line,
                                   std::string(id) + "() in " + sink.rel(),
                                   !sink.rel().ends_with(".cu"));
        }
      } else if (id[0] == 'c' || id[0] == 'n') {
        if (IsCudaApi(id)) sink.Add("DT304", line, col(b), id, false);
      }
      if (id != "else") expect_cpu_stmt = false;
      prev_id = id;
      continue;
    }
    ++i;
  }
  if (in_function()) end_function();
  if (has_binding && sink.count() > 0)
    sink.Add("DT309", binding_line, binding_col, "the Python binding", false);
  // A .cu file is compiled by nvcc alone, even when nothing in it names a CUDA API (a host
  // wrapper that calls kernels declared in a header): the file itself is the dependency.
  std::string_view rel = sink.rel();
  if (sink.count() == 0 && (rel.ends_with(".cu") || rel.ends_with(".cuh")))
    sink.Add("DT303", 1, 1, "a CUDA source file", false);
}

void ScanCMake(std::string_view text, FindingSink& sink) {
  ForEachLine(text, [&](std::uint32_t n, std::string_view raw) {
    std::string line(raw);
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    const std::string upper = Upper(line);
    auto col = [](std::size_t p) { return static_cast<std::uint32_t>(p + 1); };
    std::size_t p;
    if ((p = upper.find("ENABLE_LANGUAGE")) != std::string::npos &&
        upper.find("CUDA", p) != std::string::npos) {
      sink.Add("DT306", n, col(p), "enable_language(CUDA)", false);
    } else if ((p = upper.find("FIND_PACKAGE")) != std::string::npos &&
               (upper.find("(CUDA", p) != std::string::npos ||
                upper.find("( CUDA", p) != std::string::npos)) {
      sink.Add("DT306", n, col(p), "find_package(CUDA...)", false);
    } else if ((p = upper.find("CUDA_ADD_")) != std::string::npos) {
      sink.Add("DT306", n, col(p), "cuda_add_*()", false);
    } else if ((p = line.find("CUDA::")) != std::string::npos) {
      sink.Add("DT306", n, col(p), "a CUDA:: target", false);
    } else if ((p = upper.find("PROJECT")) != std::string::npos &&
               FindWord(line, "CUDA") != std::string::npos &&
               upper.find("LANGUAGES", p) != std::string::npos) {
      sink.Add("DT306", n, col(p), "project(... LANGUAGES CUDA)", false);
    }
    if ((p = upper.find("CUDA_ARCHITECTURES")) != std::string::npos)
      sink.Add("DT302", n, col(p), "CUDA_ARCHITECTURES", false);
    else if ((p = line.find("-gencode")) != std::string::npos)
      sink.Add("DT302", n, col(p), "-gencode", false);
    else if ((p = line.find("TORCH_CUDA_ARCH_LIST")) != std::string::npos)
      sink.Add("DT302", n, col(p), "TORCH_CUDA_ARCH_LIST", false);
  });
}

}  // namespace dt::scan
