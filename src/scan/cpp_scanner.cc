#include "scan/cpp_scanner.h"

#include <string>

#include "scan/env_scanners.h"
#include "util/strings.h"

namespace dt::scan {

namespace {

inline bool IdStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
inline bool IdChar(char c) { return IdStart(c) || (c >= '0' && c <= '9'); }

// CUDA API families: the identifier starts with one of these and continues with an upper-case
// letter, a digit or '_' (cudaMalloc, cublasSgemm, cudnnCreate, ncclAllReduce, CUresult...).
bool IsCudaApi(std::string_view id) {
  static constexpr std::string_view kPrefixes[] = {
      "cuda", "cublas", "cudnn", "nccl", "cufft", "curand", "cusparse", "cusolver", "nvrtc",
      "cutensor", "nvtx", "cuMem", "cuCtx", "cuLaunch", "cuModule", "cuStream", "cuDevice"};
  for (std::string_view p : kPrefixes) {
    if (id.size() > p.size() && StartsWith(id, p)) {
      char c = id[p.size()];
      if ((c >= 'A' && c <= 'Z') || c == '_' || (c >= '0' && c <= '9')) return true;
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
  while (i < n) {
    char c = s[i];
    if (c == '\n') {
      ++line;
      line_begin = ++i;
      line_start = true;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && s[i + 1] == '/') {
      while (i < n && s[i] != '\n') ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      i += 2;
      while (i + 1 < n && !(s[i] == '*' && s[i + 1] == '/')) {
        if (s[i] == '\n') {
          ++line;
          line_begin = i + 1;
        }
        ++i;
      }
      i += 2;
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
          std::size_t nl = s.find('\n', p);
          if (e != std::string_view::npos && (nl == std::string_view::npos || e < nl)) {
            std::string_view header = s.substr(p + 1, e - p - 1);
            if (StartsWith(header, "thrust/") || StartsWith(header, "cub/") ||
                StartsWith(header, "cutlass/") || StartsWith(header, "cute/")) {
              sink.Add("DT308", line, col(i), header, false);
            } else if (IsCudaHeader(header)) {
              sink.Add("DT304", line, col(i), "#include <" + std::string(header) + ">", false);
            }
            i = e + 1;
            line_start = false;
            continue;
          }
        }
      }
      line_start = false;
      ++i;
      continue;
    }
    line_start = false;
    if (c == '"' || c == '\'') {
      // A raw string R"delim( ... )delim" is rare in kernels; treat it like a plain string.
      ++i;
      while (i < n && s[i] != c && s[i] != '\n') i += (s[i] == '\\') ? 2 : 1;
      ++i;
      continue;
    }
    if (c == '<' && i + 2 < n && s[i + 1] == '<' && s[i + 2] == '<') {
      sink.Add("DT303", line, col(i), "<<<...>>> kernel launch", false);
      i += 3;
      continue;
    }
    if (IdStart(c)) {
      std::size_t b = i;
      while (i < n && IdChar(s[i])) ++i;
      std::string_view id = s.substr(b, i - b);
      if (id == "__global__" || id == "__device__" || id == "__shared__" ||
          id == "__constant__") {
        sink.Add("DT303", line, col(b), id, false);
      } else if (id == "cuda" && i + 1 < n && s[i] == ':' && s[i + 1] == ':') {
        sink.Add("DT304", line, col(b), "cuda:: namespace", false);
      } else if (id == "is_cuda" && i < n && s[i] == '(') {
        sink.Add("DT307", line, col(b), "is_cuda()", false);
      } else if (id == "PYBIND11_MODULE" || id == "TORCH_LIBRARY" || id == "TORCH_LIBRARY_IMPL") {
        has_binding = true;
        binding_line = line;
        binding_col = col(b);
      } else if (id[0] == 'c' || id[0] == 'n') {
        if (IsCudaApi(id)) sink.Add("DT304", line, col(b), id, false);
      }
      continue;
    }
    ++i;
  }
  if (has_binding && sink.count() > 0)
    sink.Add("DT309", binding_line, binding_col, "the Python binding", false);
}

void ScanCMake(std::string_view text, FindingSink& sink) {
  ForEachLine(text, [&](std::uint32_t n, std::string_view raw) {
    std::string line(raw);
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::string upper = line;
    for (char& c : upper)
      if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
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
    } else if ((p = upper.find("PROJECT")) != std::string::npos && FindWord(line, "CUDA") != std::string::npos &&
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
