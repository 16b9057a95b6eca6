#include "scan/cpp_scanner.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "scan/env_scanners.h"
#include "util/fs.h"
#include "util/strings.h"

namespace dt::scan {

namespace {

// Identifier bytes by table (one load, not a chain of range tests per byte of every name).
struct IdTable {
  std::uint8_t t[256] = {};  // 1: starts a name, 2: continues one.
  constexpr IdTable() {
    for (int c = 0; c < 256; ++c) {
      const bool start = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
      t[c] = static_cast<std::uint8_t>((start ? 3 : 0) | (c >= '0' && c <= '9' ? 2 : 0));
    }
  }
};
constexpr IdTable kId;
inline bool IdStart(char c) { return kId.t[static_cast<unsigned char>(c)] & 1; }
inline bool IdChar(char c) { return kId.t[static_cast<unsigned char>(c)] & 2; }

// CUDA API families: the identifier starts with one of these and continues with an upper-case
// letter or a digit (cudaMalloc, cublasSgemm, cudnnCreate, ncclAllReduce). snake_case names
// (`cuda_enabled`, `nccl_rank`) are the project's own.
bool IsCudaApi(std::string_view id) {
  static constexpr std::string_view kPrefixes[] = {
      "cuda",     "cublas",   "cudnn",    "nccl",     "cufft",   "curand",
      "cusparse", "cusolver", "nvrtc",    "cutensor", "nvtx",    "cuMem",
      "cuCtx",    "cuLaunch", "cuModule", "cuStream", "cuDevice"};
  if (id.size() < 5 || (id[0] != 'c' && id[0] != 'n')) return false;  // Most names.
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

// One pass over a C, C++ or CUDA source: comments and strings skipped, preprocessor includes and
// check macros learned, blocks tracked (functions, CUDA branches), and the CUDA constructs
// reported. A hand-written scanner: no C++ parser fits a linter that must read any file fast.
class CppScanner {
 public:
  CppScanner(std::string_view s, FindingSink& sink)
      : s_(s),
        n_(s.size()),
        sink_(sink),
        // In .cu / .cuh files the checks guard the CUDA implementation itself (reached through a
        // wrapper that may well dispatch on the device); the wrapper is what decides.
        cuda_source_(EndsWith(sink.rel(), ".cu") || EndsWith(sink.rel(), ".cuh")) {}

  void Run() {
    while (i_ < n_) {
      const char c = s_[i_];
      if (c == '\n' || c == '\r') {
        SkipTo(i_ + 1);
        line_start_ = true;
      } else if (c == ' ' || c == '\t') {
        ++i_;
      } else if (c == '/' && i_ + 1 < n_ && s_[i_ + 1] == '/') {
        // To the line end ('\n', or a '\r' before it): two vectorised searches, not a byte loop.
        const char* at = s_.data() + i_;
        const void* nl = std::memchr(at, '\n', n_ - i_);
        std::size_t len =
            nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - at) : n_ - i_;
        if (const void* cr = std::memchr(at, '\r', len))
          len = static_cast<std::size_t>(static_cast<const char*>(cr) - at);
        i_ += len;
      } else if (c == '/' && i_ + 1 < n_ && s_[i_ + 1] == '*') {
        std::size_t e = s_.find("*/", i_ + 2);
        SkipTo(e == std::string_view::npos ? n_ : e + 2);
      } else if (c == '#' && line_start_) {
        Preprocessor();
      } else {
        line_start_ = false;
        Code(c);
      }
    }
    Finish();
  }

 private:
  std::uint32_t Col(std::size_t p) const { return static_cast<std::uint32_t>(p - line_begin_ + 1); }
  bool InCudaBranch() const { return n_cuda_ > 0; }
  bool InFunction() const { return n_function_ > 0; }
  bool IsCudaCheckMacro(std::string_view id) const {
    return std::find(cuda_check_macros_.begin(), cuda_check_macros_.end(), id) !=
           cuda_check_macros_.end();
  }

  // Advances over [i_, to) counting line ends ("\n", "\r\n" or a lone "\r").
  void SkipTo(std::size_t to) {
    to = std::min(to, n_);
    for (; i_ < to; ++i_) {
      if (s_[i_] == '\n' || (s_[i_] == '\r' && (i_ + 1 >= n_ || s_[i_ + 1] != '\n'))) {
        ++line_;
        line_begin_ = i_ + 1;
      }
    }
  }

  // A byte of code (not a comment, space or preprocessor line).
  void Code(char c) {
    if (c == '"' || c == '\'') {
      ++i_;
      while (i_ < n_ && s_[i_] != c && s_[i_] != '\n' && s_[i_] != '\r')
        i_ += (s_[i_] == '\\') ? 2 : 1;
      if (i_ < n_ && s_[i_] == c) ++i_;
    } else if (c == '<' && i_ + 2 < n_ && s_[i_ + 1] == '<' && s_[i_ + 2] == '<') {
      sink_.Add("DT303", line_, Col(i_), "<<<...>>> kernel launch", false);
      i_ += 3;
    } else if (c == '{') {
      OpenBrace();
    } else if (c == '}') {
      CloseBrace();
    } else if (c == ';') {
      Semicolon();
    } else if (IdStart(c)) {
      Identifier();
    } else {
      if (c == ')') saw_paren_ = true;
      ++i_;
    }
  }

  // Preprocessor: #include <...> / "..." names a header; #define may define a CUDA check.
  void Preprocessor() {
    std::size_t p = i_ + 1;
    while (p < n_ && (s_[p] == ' ' || s_[p] == '\t')) ++p;
    if (s_.substr(p, 7) == "include") {
      p += 7;
      while (p < n_ && (s_[p] == ' ' || s_[p] == '\t')) ++p;
      if (p < n_ && (s_[p] == '<' || s_[p] == '"') && Include(p)) return;
    } else if (s_.substr(p, 6) == "define") {
      LearnCheckMacro(s_, p + 6, cuda_check_macros_);
    }
    line_start_ = false;
    ++i_;
  }

  // The include whose opening bracket or quote is at p; false when it does not close on its line.
  bool Include(std::size_t p) {
    char close = s_[p] == '<' ? '>' : '"';
    std::size_t e = s_.find(close, p + 1);
    std::size_t nl = s_.find_first_of("\r\n", p);
    if (e == std::string_view::npos || (nl != std::string_view::npos && e > nl)) return false;
    std::string_view header = s_.substr(p + 1, e - p - 1);
    if (StartsWith(header, "thrust/") || StartsWith(header, "cub/") ||
        StartsWith(header, "cutlass/") || StartsWith(header, "cute/")) {
      sink_.Add("DT308", line_, Col(i_), header, false);
    } else if (IsCudaHeader(header)) {
      sink_.Add("DT304", line_, Col(i_), "#include <" + std::string(header) + ">", false);
    } else if (close == '"' && headers_read_ < 16) {
      ++headers_read_;
      LearnHeaderMacros(sink_.path(), header, cuda_check_macros_);
    }
    i_ = e + 1;
    line_start_ = false;
    return true;
  }

  void OpenBrace() {
    BlockKind kind = next_kind_;
    if (kind == BlockKind::kOther && saw_paren_ && n_not_scope_ == 0) kind = BlockKind::kFunction;
    blocks_.push_back(Block{kind, next_cuda_branch_});
    n_cuda_ += next_cuda_branch_ ? 1 : 0;
    n_function_ += kind == BlockKind::kFunction ? 1 : 0;
    n_not_scope_ += kind != BlockKind::kScope ? 1 : 0;
    expect_cpu_stmt_ = expect_cpu_stmt_ && prev_id_ == "else";  // `} else {` of a CUDA branch.
    next_kind_ = BlockKind::kOther;
    next_cuda_branch_ = false;
    saw_paren_ = false;
    prev_id_ = {};
    ++i_;
  }

  void CloseBrace() {
    if (!blocks_.empty()) {
      Block b = blocks_.back();
      blocks_.pop_back();
      n_cuda_ -= b.cuda_branch ? 1 : 0;
      n_function_ -= b.kind == BlockKind::kFunction ? 1 : 0;
      n_not_scope_ -= b.kind != BlockKind::kScope ? 1 : 0;
      if (b.kind == BlockKind::kFunction) EndFunction();
      expect_cpu_stmt_ = b.cuda_branch;
    }
    saw_paren_ = false;
    prev_id_ = {};
    ++i_;
  }

  void Semicolon() {
    next_kind_ = BlockKind::kOther;
    saw_paren_ = false;
    // `if (x.is_cuda()) return f_cuda(x);` ends a CUDA branch without braces.
    if (next_cuda_branch_ && i_ >= check_args_end_)
      expect_cpu_stmt_ = true;
    else if (prev_id_ != "else")
      expect_cpu_stmt_ = false;
    next_cuda_branch_ = false;
    prev_id_ = {};
    ++i_;
  }

  // Every check that rejects a non-CUDA tensor is a finding of its own: each names an input the
  // user would have to move off the extension (the text output groups them under the file).
  void EndFunction() {
    for (const auto& r : rejections_) {
      if (cuda_source_) break;
      if (r.in_cuda_branch) continue;
      bool rejects = r.fail ? r.counts : !fn_device_branch_;
      if (rejects) sink_.Add("DT320", r.line, r.col, r.what, false);
    }
    rejections_.clear();
    fn_device_branch_ = false;
  }

  // Raw string R"delim( ... )delim" starting at the quote at i_: may span lines, and quotes inside
  // do not end it. False when it is not one.
  bool RawString() {
    std::size_t open = s_.find('(', i_ + 1);
    std::size_t nl = s_.find_first_of("\r\n", i_ + 1);
    if (open == std::string_view::npos || open - (i_ + 1) > 16 ||
        (nl != std::string_view::npos && open > nl))
      return false;
    std::string close = ")" + std::string(s_.substr(i_ + 1, open - i_ - 1)) + "\"";
    std::size_t e = s_.find(close, open + 1);
    SkipTo(e == std::string_view::npos ? n_ : e + close.size());
    return true;
  }

  void Identifier() {
    const std::size_t b = i_;
    while (i_ < n_ && IdChar(s_[i_])) ++i_;
    std::string_view id = s_.substr(b, i_ - b);
    if (i_ < n_ && s_[i_] == '"' &&
        (id == "R" || id == "u8R" || id == "uR" || id == "UR" || id == "LR") && RawString())
      return;
    std::size_t after = i_;
    while (after < n_ && (s_[after] == ' ' || s_[after] == '\t')) ++after;
    const bool call = after < n_ && s_[after] == '(';
    if ((id == "if" || id == "while" || id == "for" || id == "switch") && call) {
      Condition(id, after);
    } else if (InFunction() && call &&
               (IsFailMacro(id) || IsCheckMacro(id) || IsCudaCheckMacro(id))) {
      CheckMacro(id, after, b);
    } else {
      Word(id, after, b, call);
      if (id != "else") expect_cpu_stmt_ = false;
    }
    prev_id_ = id;
  }

  // `if (x.is_cuda())`: a device test opens a CUDA branch; is_cuda() in any condition is a
  // dispatch, not a check (CUDA calls in it still count).
  void Condition(std::string_view id, std::size_t after) {
    std::string_view cond = ParenArgs(s_, after);
    if (id == "if" && IsDeviceTest(cond)) {
      if (InFunction()) fn_device_branch_ = true;
      next_cuda_branch_ = IsCudaTest(cond);
    }
    if (!cond.empty()) check_args_end_ = after + cond.size() + 2;
    if (id == "if" && prev_id_ == "else") expect_cpu_stmt_ = false;
  }

  // TORCH_CHECK(x.is_cuda(), ...), CHECK_CUDA(x), AT_ERROR(...): a rejection of non-CUDA input,
  // reported when the function ends without a device branch (or when it fails on the CPU path).
  void CheckMacro(std::string_view id, std::size_t after, std::size_t b) {
    std::string_view args = ParenArgs(s_, after);
    std::size_t comma = args.find(',');
    std::string_view first = Trim(args.substr(0, comma));
    std::string_view message =
        comma == std::string_view::npos ? std::string_view{} : args.substr(comma + 1);
    Rejection r{line_, Col(b), std::string(id), false, false, InCudaBranch()};
    if (IsFailMacro(id) || first == "false" || first == "0") {
      // A failure is the non-CUDA path when its message says so, or when it is what runs
      // right after (or in the `else` of) a branch taken for CUDA tensors.
      r.fail = true;
      r.counts = MentionsDevice(IsFailMacro(id) ? args : message) || expect_cpu_stmt_;
      rejections_.push_back(std::move(r));
    } else if (IsCudaCheckMacro(id) || ((first.find("is_cuda") != std::string_view::npos ||
                                         first.find("kCUDA") != std::string_view::npos) &&
                                        // `is_cuda() || is_cpu()` accepts more.
                                        first.find("||") == std::string_view::npos)) {
      rejections_.push_back(std::move(r));
    }
    // The check's own is_cuda() is the rejection, not a separate finding; the rest of its
    // arguments (cudaGetErrorString(err)...) are read as usual.
    if (!args.empty()) check_args_end_ = after + args.size() + 2;
    expect_cpu_stmt_ = false;
  }

  // Any other identifier: scope keywords, throws, CUDA qualifiers and namespaces, is_cuda(),
  // bindings and CUDA runtime / library APIs.
  void Word(std::string_view id, std::size_t after, std::size_t b, bool call) {
    if (id == "namespace" || id == "struct" || id == "class" || id == "union" || id == "enum" ||
        (id == "extern" && after < n_ && s_[after] == '"')) {
      next_kind_ = BlockKind::kScope;
    } else if (id == "throw" && InFunction()) {
      std::size_t e = s_.find(';', i_);
      std::string_view stmt = s_.substr(
          i_, std::min<std::size_t>(e == std::string_view::npos ? n_ - i_ : e - i_, 1024));
      if (MentionsDevice(stmt) || expect_cpu_stmt_)
        rejections_.push_back(Rejection{line_, Col(b), "throw", true, true, InCudaBranch()});
    } else if (id == "__global__" || id == "__device__" || id == "__shared__" ||
               id == "__constant__") {
      sink_.Add("DT303", line_, Col(b), id, false);
    } else if (id == "cuda" && i_ + 1 < n_ && s_[i_] == ':' && s_[i_ + 1] == ':') {
      sink_.Add("DT304", line_, Col(b), "cuda:: namespace", false);
    } else if (id == "is_cuda" && call && i_ >= check_args_end_) {
      sink_.Add("DT307", line_, Col(b), "is_cuda()", false);
    } else if (id == "PYBIND11_MODULE" || id == "TORCH_LIBRARY" || id == "TORCH_LIBRARY_IMPL" ||
               id == "TORCH_LIBRARY_FRAGMENT") {
      Binding(id, after, b, call);
    } else if (id[0] == 'c' || id[0] == 'n') {
      if (IsCudaApi(id)) sink_.Add("DT304", line_, Col(b), id, false);
    }
  }

  // PYBIND11_MODULE / TORCH_LIBRARY*: the Python binding, and the op namespace it registers.
  void Binding(std::string_view id, std::size_t after, std::size_t b, bool call) {
    has_binding_ = true;
    binding_line_ = line_;
    binding_col_ = Col(b);
    // TORCH_LIBRARY_IMPL adds kernels to a namespace defined elsewhere (often aten).
    if (id == "PYBIND11_MODULE" || id == "TORCH_LIBRARY_IMPL" || !call) return;
    // The op namespace Python reaches as torch.ops.<ns>.<op>: it exists only where the project's
    // extension was built (Scan() keeps it when the project has CUDA sources).
    std::string_view args = ParenArgs(s_, after);
    std::string_view ns = Trim(args.substr(0, args.find(',')));
    if (!ns.empty() && ns.find_first_of(" ()\"") == std::string_view::npos && !IsTorchNamespace(ns))
      sink_.DeclareCudaModule("torch.ops." + std::string(ns), line_,
                              std::string(id) + "() in " + sink_.rel(),
                              !sink_.rel().ends_with(".cu"));
  }

  void Finish() {
    if (InFunction()) EndFunction();
    if (has_binding_ && sink_.count() > 0)
      sink_.Add("DT309", binding_line_, binding_col_, "the Python binding", false);
    // A .cu file is compiled by nvcc alone, even when nothing in it names a CUDA API (a host
    // wrapper that calls kernels declared in a header): the file itself is the dependency.
    std::string_view rel = sink_.rel();
    if (sink_.count() == 0 && (rel.ends_with(".cu") || rel.ends_with(".cuh")))
      sink_.Add("DT303", 1, 1, "a CUDA source file", false);
  }

  const std::string_view s_;
  const std::size_t n_;
  FindingSink& sink_;
  const bool cuda_source_;
  std::size_t i_ = 0;
  std::uint32_t line_ = 1;
  std::size_t line_begin_ = 0;
  bool line_start_ = true;  // Only whitespace so far on this line.
  bool has_binding_ = false;
  std::uint32_t binding_line_ = 0, binding_col_ = 0;
  // Macros of this file that check for CUDA tensors (`#define CHECK_CUDA(x) TORCH_CHECK(...)`,
  // `#define CHECK_INPUT(x) CHECK_CUDA(x); ...`); CHECK_CUDA itself is near universal.
  std::vector<std::string> cuda_check_macros_ = {"CHECK_CUDA", "CHECK_IS_CUDA",
                                                 "CHECK_CUDA_TENSOR"};
  int headers_read_ = 0;
  std::vector<Block> blocks_;
  std::vector<Rejection> rejections_;
  bool fn_device_branch_ = false;
  // What the next `{` opens: set by `namespace`, `struct`..., by an `if (<cond>)`, and by `)`.
  BlockKind next_kind_ = BlockKind::kOther;
  bool next_cuda_branch_ = false;
  bool saw_paren_ = false;        // A `)` since the last statement end: a `{` may open a function.
  bool expect_cpu_stmt_ = false;  // Just after a CUDA branch closed, or in its `else`.
  std::string_view prev_id_;
  std::size_t check_args_end_ = 0;  // Inside the arguments of a check macro until here.
  // Counts over `blocks_`, kept as they change so that deep nesting stays linear.
  std::size_t n_cuda_ = 0, n_function_ = 0, n_not_scope_ = 0;
};

}  // namespace

void ScanCpp(std::string_view s, FindingSink& sink) { CppScanner(s, sink).Run(); }

namespace {

// A command of a CMake file: its name in lower case, its arguments' text, its first and last
// physical lines.
struct CMakeCommand {
  std::string name;
  std::string_view args;
  std::uint32_t first = 0, last = 0;
};

// The commands of a CMake file, with line and bracket comments (`#[[ ... ]]`) and quoted
// arguments understood, so that a command spread over lines is one command.
std::vector<CMakeCommand> CMakeCommands(std::string_view t) {
  std::vector<CMakeCommand> out;
  std::uint32_t line = 1;
  std::size_t i = 0;
  // Steps over t[i], counting line ends as ForEachLine does ("\n", "\r\n", a lone "\r").
  auto step = [&] {
    if (t[i] == '\n' || (t[i] == '\r' && (i + 1 == t.size() || t[i + 1] != '\n'))) ++line;
    ++i;
  };
  // A comment at i ('#'): to the line end, or a bracket comment to its closing bracket.
  auto comment = [&] {
    std::size_t eq = i + 1;
    if (eq < t.size() && t[eq] == '[') {
      std::size_t k = eq + 1;
      while (k < t.size() && t[k] == '=') ++k;
      if (k < t.size() && t[k] == '[') {
        const std::string close = "]" + std::string(k - eq - 1, '=') + "]";
        std::size_t end = t.find(close, k + 1);
        end = end == std::string_view::npos ? t.size() : end + close.size();
        while (i < end) step();
        return;
      }
    }
    while (i < t.size() && t[i] != '\n' && t[i] != '\r') ++i;
  };
  while (i < t.size()) {
    if (t[i] == '#') {
      comment();
      continue;
    }
    if (!IdStart(t[i]) || (i > 0 && IdChar(t[i - 1]))) {
      step();
      continue;
    }
    const std::size_t b = i;
    while (i < t.size() && IdChar(t[i])) ++i;
    CMakeCommand cmd;
    cmd.name = Lower(t.substr(b, i - b));
    cmd.first = line;
    while (i < t.size() && (t[i] == ' ' || t[i] == '\t')) ++i;
    if (i >= t.size() || t[i] != '(') continue;
    const std::size_t open = ++i;
    int depth = 1;
    while (i < t.size() && depth > 0) {
      const char c = t[i];
      if (c == '"') {
        step();
        while (i < t.size() && t[i] != '"') {
          if (t[i] == '\\' && i + 1 < t.size()) step();
          step();
        }
        if (i < t.size()) step();
        continue;
      }
      if (c == '#') {
        comment();
        continue;
      }
      if (c == '(') ++depth;
      if (c == ')') --depth;
      step();
    }
    cmd.args = t.substr(open, (depth == 0 ? i - 1 : i) - open);
    cmd.last = line;
    out.push_back(std::move(cmd));
  }
  return out;
}

enum class CMakeTruth { kNone, kCuda, kNoCuda };

CMakeTruth Flip(CMakeTruth t) {
  return t == CMakeTruth::kCuda     ? CMakeTruth::kNoCuda
         : t == CMakeTruth::kNoCuda ? CMakeTruth::kCuda
                                    : CMakeTruth::kNone;
}

// Evaluates an if() condition as CMake does, as far as it says where CUDA is: a variable that is
// set only where a CUDA compiler or toolkit was found, or an option that is OFF unless chosen.
class CMakeCondition {
 public:
  CMakeCondition(std::string_view args, const std::set<std::string, std::less<>>& off_options)
      : off_(off_options) {
    for (std::size_t i = 0; i < args.size();) {
      const char c = args[i];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++i;
      } else if (c == '(' || c == ')') {
        words_.push_back(args.substr(i++, 1));
      } else if (c == '"') {
        const std::size_t e = args.find('"', i + 1);
        const std::size_t end = e == std::string_view::npos ? args.size() : e;
        words_.push_back(args.substr(i + 1, end - i - 1));
        i = end + 1;
      } else {
        const std::size_t b = i;
        while (i < args.size() && args[i] != ' ' && args[i] != '\t' && args[i] != '\n' &&
               args[i] != '\r' && args[i] != '(' && args[i] != ')')
          ++i;
        words_.push_back(args.substr(b, i - b));
      }
    }
  }

  CMakeTruth Eval() {
    CMakeTruth t = Or();
    return k_ == words_.size() ? t : CMakeTruth::kNone;
  }

 private:
  // A disjunction holds only where CUDA is when all its terms do.
  CMakeTruth Or() {
    CMakeTruth t = And();
    while (k_ < words_.size() && words_[k_] == "OR") {
      ++k_;
      if (And() != t) t = CMakeTruth::kNone;
    }
    return t;
  }

  // A conjunction holds only where any of its terms does.
  CMakeTruth And() {
    CMakeTruth t = Not();
    while (k_ < words_.size() && words_[k_] == "AND") {
      ++k_;
      const CMakeTruth u = Not();
      if (t == CMakeTruth::kNone || u == CMakeTruth::kCuda) t = u;
    }
    return t;
  }

  CMakeTruth Not() {
    if (k_ < words_.size() && words_[k_] == "NOT") {
      ++k_;
      return Flip(Not());
    }
    if (k_ < words_.size() && words_[k_] == "(") {
      ++k_;
      CMakeTruth t = Or();
      if (k_ < words_.size() && words_[k_] == ")") ++k_;
      return t;
    }
    // A term runs to the next operator: a variable, or `TARGET name`; comparisons say nothing.
    const std::size_t b = k_;
    while (k_ < words_.size() && words_[k_] != "AND" && words_[k_] != "OR" && words_[k_] != ")")
      ++k_;
    if (k_ - b == 2 && words_[b] == "TARGET" && StartsWith(words_[b + 1], "CUDA::"))
      return CMakeTruth::kCuda;
    if (k_ - b != 1) return CMakeTruth::kNone;
    std::string_view v = words_[b];
    if (StartsWith(v, "${") && EndsWith(v, "}")) v = v.substr(2, v.size() - 3);
    // check_language(CUDA) and project(... CUDA) set the compiler only where one was found; the
    // find modules set *_FOUND.
    if (v == "CMAKE_CUDA_COMPILER" || v == "CUDAToolkit_FOUND" || v == "CUDA_FOUND")
      return CMakeTruth::kCuda;
    return off_.count(v) ? CMakeTruth::kCuda : CMakeTruth::kNone;
  }

  const std::set<std::string, std::less<>>& off_;
  std::vector<std::string_view> words_;
  std::size_t k_ = 0;
};

bool CMakeFalse(std::string_view v) {
  const std::string u = Upper(v);
  return u.empty() || u == "OFF" || u == "FALSE" || u == "NO" || u == "N" || u == "0" ||
         u == "IGNORE" || EndsWith(u, "-NOTFOUND");
}

// Per line (index = line number): true where every command starting or continuing on it runs only
// where CUDA is present or chosen: in the body of if() on such a condition (`if(WITH_CUDA)` for an
// option that is OFF by default, `if(CMAKE_CUDA_COMPILER)` after check_language(CUDA)), in the
// else() of its negation, and after `if(NOT ...) return() endif()`.
std::vector<bool> CMakeGuardedLines(std::string_view text) {
  struct Frame {
    bool is_if = false;
    CMakeTruth truth = CMakeTruth::kNone;  // Of the if() itself.
    bool elif = false, in_else = false;
    bool guard = false;    // The current branch runs only with CUDA.
    bool returns = false;  // The if() branch ends the file or function (`return()`).
    bool rest = false;     // What follows in this block runs only with CUDA (an early return).
  };
  std::vector<Frame> stack(1);  // The file itself at the bottom.
  std::set<std::string, std::less<>> off_options;
  std::vector<int> state;  // -1: no command on the line yet.
  auto guarded = [&] {
    for (const Frame& f : stack)
      if (f.guard || f.rest) return true;
    return false;
  };
  for (const CMakeCommand& c : CMakeCommands(text)) {
    const bool g = guarded();
    if (state.size() <= c.last) state.resize(c.last + 1, -1);
    for (std::uint32_t l = c.first; l <= c.last; ++l)
      state[l] = state[l] == -1 ? g : (state[l] != 0 && g);
    const std::string& n = c.name;
    if (n == "option" || n == "cmake_dependent_option" || n == "set") {
      // option(NAME "help" [value]), cmake_dependent_option(NAME "help" value ...),
      // set(NAME value ...): the option is OFF unless a value turns it on.
      std::string_view a = Trim(c.args);
      const std::size_t name_end = std::min(a.find_first_of(" \t\r\n"), a.size());
      const std::string name(a.substr(0, name_end));
      std::string_view rest = Trim(a.substr(name_end));
      if (n != "set" && !rest.empty() && rest[0] == '"') {
        const std::size_t q = rest.find('"', 1);
        rest = q == std::string_view::npos ? std::string_view{} : Trim(rest.substr(q + 1));
      } else if (n != "set") {
        rest = Trim(rest.substr(std::min(rest.find_first_of(" \t\r\n"), rest.size())));
      }
      std::string_view value = rest.substr(0, rest.find_first_of(" \t\r\n"));
      if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
        value = value.substr(1, value.size() - 2);
      if (n == "set" && value.empty()) continue;  // Unsets it: no longer an option we know.
      if (n != "set" && CMakeFalse(value))
        off_options.insert(name);
      else if (!CMakeFalse(value))
        off_options.erase(name);
    } else if (n == "if") {
      Frame f;
      f.is_if = true;
      f.truth = CMakeCondition(c.args, off_options).Eval();
      f.guard = f.truth == CMakeTruth::kCuda;
      stack.push_back(f);
    } else if (n == "elseif" && stack.size() > 1 && stack.back().is_if) {
      stack.back().elif = true;
      stack.back().guard = CMakeCondition(c.args, off_options).Eval() == CMakeTruth::kCuda;
    } else if (n == "else" && stack.size() > 1 && stack.back().is_if) {
      Frame& f = stack.back();
      f.in_else = true;
      f.guard = !f.elif && f.truth == CMakeTruth::kNoCuda;
    } else if (n == "endif" && stack.size() > 1 && stack.back().is_if) {
      const Frame f = stack.back();
      stack.pop_back();
      // `if(NOT CMAKE_CUDA_COMPILER) return() endif()`: the rest runs only with CUDA.
      if (f.truth == CMakeTruth::kNoCuda && f.returns && !f.elif && !f.in_else)
        stack.back().rest = true;
    } else if (n == "return") {
      Frame& f = stack.back();
      if (f.is_if && !f.elif && !f.in_else) f.returns = true;
    } else if (n == "function" || n == "macro" || n == "foreach" || n == "while" || n == "block") {
      stack.emplace_back();
    } else if ((n == "endfunction" || n == "endmacro" || n == "endforeach" || n == "endwhile" ||
                n == "endblock") &&
               stack.size() > 1 && !stack.back().is_if) {
      stack.pop_back();
    }
  }
  std::vector<bool> out(state.size(), false);
  for (std::size_t l = 0; l < state.size(); ++l) out[l] = state[l] == 1;
  return out;
}

// `if(TARGET CUDA::cudart)` (or elseif) at `at`: a test of whether the target exists, which needs
// no toolkit; what it guards is found as a guard by CMakeGuardedLines.
bool TestsTarget(std::string_view upper, std::size_t at) {
  const std::string_view head = Trim(upper);
  return EndsWith(Trim(upper.substr(0, at)), "TARGET") &&
         (StartsWith(head, "IF") || StartsWith(head, "ELSEIF"));
}

}  // namespace

void ScanCMake(std::string_view text, FindingSink& sink) {
  const std::vector<bool> guarded_lines = CMakeGuardedLines(text);
  ForEachLine(text, [&](std::uint32_t n, std::string_view raw) {
    const bool guarded = n < guarded_lines.size() && guarded_lines[n];
    std::string line(raw);
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    const std::string upper = Upper(line);
    auto col = [](std::size_t p) { return static_cast<std::uint32_t>(p + 1); };
    std::size_t p;
    if ((p = upper.find("ENABLE_LANGUAGE")) != std::string::npos &&
        upper.find("CUDA", p) != std::string::npos) {
      sink.Add("DT306", n, col(p), "enable_language(CUDA)", guarded);
    } else if ((p = upper.find("FIND_PACKAGE")) != std::string::npos &&
               (upper.find("(CUDA", p) != std::string::npos ||
                upper.find("( CUDA", p) != std::string::npos)) {
      sink.Add("DT306", n, col(p), "find_package(CUDA...)", guarded);
    } else if ((p = upper.find("CUDA_ADD_")) != std::string::npos) {
      sink.Add("DT306", n, col(p), "cuda_add_*()", guarded);
    } else if ((p = line.find("CUDA::")) != std::string::npos && !TestsTarget(upper, p)) {
      sink.Add("DT306", n, col(p), "a CUDA:: target", guarded);
    } else if ((p = upper.find("PROJECT")) != std::string::npos &&
               FindWord(line, "CUDA") != std::string::npos &&
               upper.find("LANGUAGES", p) != std::string::npos) {
      sink.Add("DT306", n, col(p), "project(... LANGUAGES CUDA)", guarded);
    }
    if ((p = upper.find("CUDA_ARCHITECTURES")) != std::string::npos)
      sink.Add("DT302", n, col(p), "CUDA_ARCHITECTURES", guarded);
    else if ((p = line.find("-gencode")) != std::string::npos)
      sink.Add("DT302", n, col(p), "-gencode", guarded);
    else if ((p = line.find("TORCH_CUDA_ARCH_LIST")) != std::string::npos)
      sink.Add("DT302", n, col(p), "TORCH_CUDA_ARCH_LIST", guarded);
  });
}

}  // namespace dt::scan
