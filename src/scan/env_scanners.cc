#include "scan/env_scanners.h"

#include <string>

#include "util/strings.h"

namespace dt::scan {

namespace {

bool WordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  return out;
}

std::uint32_t Col(std::string_view line, std::string_view part) {
  return static_cast<std::uint32_t>(part.data() - line.data() + 1);
}

// "+cu121" in a version, or a /whl/cu121 index.
bool HasCudaLocalVersion(std::string_view s) {
  for (std::size_t p = s.find("+cu"); p != std::string_view::npos; p = s.find("+cu", p + 1))
    if (p + 3 < s.size() && s[p + 3] >= '0' && s[p + 3] <= '9') return true;
  return false;
}

bool IsCudaIndexUrl(std::string_view s) {
  for (std::size_t p = s.find("/whl/cu"); p != std::string_view::npos; p = s.find("/whl/cu", p + 1))
    if (p + 7 < s.size() && s[p + 7] >= '0' && s[p + 7] <= '9') return true;
  return s.find("pypi.nvidia.com") != std::string_view::npos ||
         s.find("developer.download.nvidia.com") != std::string_view::npos;
}

// The comment of a requirements / shell / YAML line starts at '#' at the start or after a space.
std::string_view StripHashComment(std::string_view line) {
  for (std::size_t i = 0; i < line.size(); ++i)
    if (line[i] == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t'))
      return line.substr(0, i);
  return line;
}

// NVIDIA runtime packages under pip and conda names.
bool IsNvidiaRuntimePackage(std::string_view norm) {
  return StartsWith(norm, "nvidia-") || norm == "cudatoolkit" || norm == "pytorch-cuda" ||
         norm == "cuda-toolkit" || norm == "cudnn" || norm == "nccl" || norm == "cuda" ||
         StartsWith(norm, "cuda-") || norm == "cutensor" || StartsWith(norm, "libcu");
}

}  // namespace

std::size_t FindWord(std::string_view s, std::string_view word, std::size_t from) {
  for (std::size_t p = s.find(word, from); p != std::string_view::npos; p = s.find(word, p + 1)) {
    bool left = p == 0 || !WordChar(s[p - 1]);
    std::size_t e = p + word.size();
    bool right = e >= s.size() || !WordChar(s[e]);
    if (left && right) return p;
  }
  return std::string_view::npos;
}

void CheckRequirement(std::string_view spec, FindingSink& sink, std::uint32_t line,
                      std::uint32_t column) {
  spec = Trim(spec);
  if (spec.empty()) return;
  if (IsCudaIndexUrl(spec)) {
    sink.Add("DT401", line, column, spec, false);
    return;
  }
  std::size_t e = 0;
  while (e < spec.size() && (WordChar(spec[e]) || spec[e] == '.')) ++e;
  std::string_view name = spec.substr(0, e);
  if (name.empty()) return;
  // Conda's "channel::name" prefix.
  if (e + 1 < spec.size() && spec[e] == ':' && spec[e + 1] == ':') {
    CheckRequirement(spec.substr(e + 2), sink, line, column + static_cast<std::uint32_t>(e + 2));
    return;
  }
  // Only a requirement if what follows the name looks like one.
  if (e < spec.size() && std::string_view("=<>!~;[ @\t,").find(spec[e]) == std::string_view::npos)
    return;
  std::string norm = NormalizePackageName(name);
  if (HasCudaLocalVersion(spec)) {
    sink.Add("DT401", line, column, spec, false);
  } else if (IsNvidiaRuntimePackage(norm)) {
    sink.Add("DT402", line, column, name, false);
  } else if (const Library* lib = sink.registry().LibraryForPackage(norm)) {
    sink.Add("DT403", line, column, std::string(name) + " (" + lib->name + ")", false,
             lib->alternative);
  }
}

void ScanRequirements(std::string_view text, FindingSink& sink) {
  ForEachLine(text, [&](std::uint32_t n, std::string_view raw) {
    std::string_view line = Trim(StripHashComment(raw));
    if (line.empty()) return;
    if (line[0] == '-') {
      if (IsCudaIndexUrl(line)) sink.Add("DT401", n, Col(raw, line), line, false);
      return;
    }
    CheckRequirement(line, sink, n, Col(raw, line));
  });
}

void ScanCondaEnv(std::string_view text, FindingSink& sink) {
  std::string section;
  ForEachLine(text, [&](std::uint32_t n, std::string_view raw) {
    std::string_view line = StripHashComment(raw);
    std::string_view t = Trim(line);
    if (t.empty()) return;
    if (line[0] != ' ' && line[0] != '-' && t.back() == ':') {
      section = std::string(t.substr(0, t.size() - 1));
      return;
    }
    if (line[0] != ' ' && line[0] != '-') {
      section.clear();
      return;
    }
    if (t[0] != '-') return;
    std::string_view item = Trim(t.substr(1));
    if (item.empty() || item.back() == ':') return;  // "- pip:" opens the pip list.
    if (!item.empty() && (item[0] == '"' || item[0] == '\'')) item = item.substr(1, item.size() - 2);
    std::uint32_t col = Col(raw, item);
    if (section == "channels") {
      if (item == "nvidia" || item == "pytorch" || StartsWith(item, "rapidsai"))
        sink.Add("DT408", n, col, item, false);
      return;
    }
    if (section != "dependencies") return;
    // "pytorch=2.3.1=*cuda*" build strings select CUDA builds.
    if (Lower(item).find("cuda") != std::string::npos && StartsWith(item, "pytorch=")) {
      sink.Add("DT401", n, col, item, false);
      return;
    }
    CheckRequirement(item, sink, n, col);
  });
}

void ScanPyproject(std::string_view text, FindingSink& sink) {
  std::string table;
  ForEachLine(text, [&](std::uint32_t n, std::string_view raw) {
    std::string_view line = Trim(raw);
    if (line.empty() || line[0] == '#') return;
    if (line[0] == '[') {
      table = std::string(line);
      return;
    }
    bool deps_table = table.find("dependencies") != std::string::npos;
    // Poetry / pixi style: `flash-attn = "^2.5"` inside a dependencies table.
    if (deps_table && line[0] != '"') {
      std::size_t eq = line.find('=');
      if (eq != std::string_view::npos) {
        std::string_view key = Trim(line.substr(0, eq));
        if (key.find(' ') == std::string_view::npos && key.find('"') == std::string_view::npos)
          CheckRequirement(std::string(key) + " ", sink, n, Col(raw, line));
      }
    }
    if (table == "[tool.dualtrack]") return;
    // Quoted strings: PEP 508 specifiers and index URLs.
    for (std::size_t p = 0; p < line.size(); ++p) {
      char q = line[p];
      if (q != '"' && q != '\'') continue;
      std::size_t e = line.find(q, p + 1);
      if (e == std::string_view::npos) break;
      std::string_view s = line.substr(p + 1, e - p - 1);
      if (IsCudaIndexUrl(s)) sink.Add("DT401", n, Col(raw, s), s, false);
      else CheckRequirement(s, sink, n, Col(raw, s));
      p = e;
    }
  });
}

void ScanSetupCfg(std::string_view text, FindingSink& sink) {
  ForEachLine(text, [&](std::uint32_t n, std::string_view raw) {
    std::string_view line = Trim(StripHashComment(raw));
    if (line.empty() || line[0] == '[' || line[0] == ';') return;
    std::size_t eq = line.find('=');
    if (eq != std::string_view::npos && eq + 1 < line.size() && line[eq + 1] != '=' &&
        (eq == 0 || (line[eq - 1] != '<' && line[eq - 1] != '>' && line[eq - 1] != '!' &&
                     line[eq - 1] != '~'))) {
      line = Trim(line.substr(eq + 1));
    }
    if (!line.empty()) CheckRequirement(line, sink, n, Col(raw, line));
  });
}

namespace {

// Replaces the contents of quoted strings with spaces so that prose in `echo "..."` is not
// matched, keeping the columns.
std::string BlankQuoted(std::string_view line) {
  std::string out(line);
  char q = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    char c = out[i];
    if (q == 0) {
      if (c == '\\') {
        ++i;
        continue;
      }
      if (c == '\'' || c == '"') q = c;
      else if (c == '#' && (i == 0 || out[i - 1] == ' ' || out[i - 1] == '\t')) {
        out.resize(i);
        break;
      }
      continue;
    }
    if (c == q) {
      q = 0;
      continue;
    }
    // Keep variable expansions inside double quotes: "${TORCH_CUDA_ARCH_LIST:-...}".
    if (q == '"' && c == '$') continue;
    out[i] = ' ';
  }
  return out;
}

void ShellLine(std::string_view raw, std::uint32_t n, FindingSink& sink, bool docker) {
  std::string line = BlankQuoted(raw);
  auto col = [&](std::size_t p) { return static_cast<std::uint32_t>(p + 1); };
  for (std::string_view tool : {"nvidia-smi", "nvcc", "nsys", "ncu", "nvprof", "cuda-gdb"}) {
    std::size_t p = FindWord(line, tool);
    if (p != std::string::npos) {
      sink.Add("DT405", n, col(p), tool, false);
      break;
    }
  }
  if (std::size_t p = line.find("CUDA_VISIBLE_DEVICES"); p != std::string::npos)
    sink.Add("DT406", n, col(p), "CUDA_VISIBLE_DEVICES", false);
  if (std::size_t p = line.find("TORCH_CUDA_ARCH_LIST"); p != std::string::npos)
    sink.Add("DT302", n, col(p), "TORCH_CUDA_ARCH_LIST", false);
  else if (std::size_t g = line.find("-gencode"); g != std::string::npos)
    sink.Add("DT302", n, col(g), "-gencode", false);
  std::size_t launcher = FindWord(line, "torchrun");
  if (launcher == std::string::npos) launcher = line.find("torch.distributed.launch");
  if (launcher == std::string::npos) launcher = line.find("torch.distributed.run");
  if (launcher != std::string::npos && (line.find("nproc_per_node") != std::string::npos ||
                                        line.find("nproc-per-node") != std::string::npos)) {
    sink.Add("DT407", n, col(launcher), "torchrun --nproc_per_node", false);
  }
  if (std::size_t p = line.find("setup.py"); p != std::string::npos) {
    std::string_view rest = std::string_view(line).substr(p + 8);
    for (std::string_view verb : {"install", "build_ext", "develop", "bdist_wheel"})
      if (FindWord(rest, verb) != std::string::npos) {
        sink.Add("DT310", n, col(p), "setup.py " + std::string(verb), false);
        break;
      }
  }
  if (IsCudaIndexUrl(raw) || HasCudaLocalVersion(line)) {
    std::size_t p = line.find("torch");
    sink.Add("DT401", n, col(p == std::string::npos ? 0 : p), "a CUDA wheel of torch", false);
  }
  (void)docker;
}

}  // namespace

void ScanShell(std::string_view text, FindingSink& sink) {
  ForEachLine(text, [&](std::uint32_t n, std::string_view raw) {
    std::string_view t = Trim(raw);
    if (t.empty() || t[0] == '#') return;
    ShellLine(raw, n, sink, false);
  });
}

void ScanDockerfile(std::string_view text, FindingSink& sink) {
  ForEachLine(text, [&](std::uint32_t n, std::string_view raw) {
    std::string_view t = Trim(raw);
    if (t.empty() || t[0] == '#') return;
    std::string upper;
    for (std::size_t i = 0; i < t.size() && i < 5; ++i)
      upper.push_back(static_cast<char>(t[i] >= 'a' && t[i] <= 'z' ? t[i] - 32 : t[i]));
    if (StartsWith(upper, "FROM ")) {
      std::string_view image = Trim(t.substr(5));
      while (StartsWith(image, "--")) {  // --platform=...
        auto sp = image.find(' ');
        image = sp == std::string_view::npos ? std::string_view{} : Trim(image.substr(sp));
      }
      image = image.substr(0, image.find(' '));
      if (image.find("nvidia/cuda") != std::string_view::npos ||
          image.find("nvcr.io/nvidia") != std::string_view::npos ||
          (image.find("pytorch/pytorch") != std::string_view::npos &&
           image.find("cuda") != std::string_view::npos)) {
        sink.Add("DT404", n, Col(raw, image), image, false);
      }
      return;
    }
    ShellLine(raw, n, sink, true);
  });
}

}  // namespace dt::scan
