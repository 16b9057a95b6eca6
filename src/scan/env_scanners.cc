#include "scan/env_scanners.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "util/fs.h"
#include "util/strings.h"

namespace dt::scan {

namespace {

bool WordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
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

// A wheel index of CUDA builds: a URL with a path segment "cu118" / "cu121" (PyTorch's
// /whl/cu118, /whl/nightly/cu121, mirrors of them), or NVIDIA's own indexes.
bool IsCudaIndexUrl(std::string_view s) {
  std::size_t scheme = s.find("://");
  if (scheme == std::string_view::npos) return false;
  for (std::size_t p = s.find("/cu", scheme); p != std::string_view::npos;
       p = s.find("/cu", p + 1)) {
    std::size_t e = p + 3;
    while (e < s.size() && s[e] >= '0' && s[e] <= '9') ++e;
    if (e - (p + 3) >= 2 && e - (p + 3) <= 3 &&
        (e == s.size() || s[e] == '/' || s[e] == ' ' || s[e] == '"' || s[e] == '\'' ||
         s[e] == '\t' || s[e] == '\\'))
      return true;
  }
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
  // nvidia-ml-py / pynvml are pure-Python NVML bindings that install anywhere.
  if (StartsWith(norm, "nvidia-ml-py")) return false;
  // conda-forge / nvidia channel libraries: libcublas, libcufft, libnpp, libnvjpeg, libnvjitlink.
  return StartsWith(norm, "nvidia-") || norm == "cudatoolkit" || norm == "pytorch-cuda" ||
         norm == "cuda-toolkit" || norm == "cudnn" || norm == "nccl" || norm == "cuda" ||
         StartsWith(norm, "cuda-") || norm == "cutensor" || StartsWith(norm, "libcu") ||
         StartsWith(norm, "libnpp") || StartsWith(norm, "libnvjpeg") ||
         StartsWith(norm, "libnvjitlink") || StartsWith(norm, "libnvrtc") ||
         StartsWith(norm, "libnccl");
}

namespace fs = std::filesystem;

}  // namespace

FolderEvidence InspectFolder(const std::string& root, std::string_view rel_dir) {
  FolderEvidence ev;
  // Only folders inside the checkout: a path from a file may name anything.
  fs::path rel_path{std::string(rel_dir)};
  if (root.empty() || rel_dir.empty() || rel_path.is_absolute() || rel_path.has_root_name())
    return ev;
  for (const auto& part : rel_path)
    if (part == "..") return ev;
  std::error_code ec;
  fs::path dir = fs::path(root) / std::string(rel_dir);
  if (!fs::is_directory(dir, ec)) return ev;
  ev.exists = true;
  ev.empty = true;
  // Bounded: a vendored tree can be large, and the first CUDA source settles it.
  std::size_t seen = 0;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec),
       end;
       !ec && it != end && seen < 5000; it.increment(ec), ++seen) {
    std::string name = it->path().filename().string();
    if (!name.empty() && name[0] == '.') {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    ev.empty = false;
    std::string ext = it->path().extension().string();
    if (ext == ".cu" || ext == ".cuh") ev.cuda_sources = true;
    if (name == "setup.py" && it.depth() <= 1) {
      auto text = ReadFile(it->path(), std::uint64_t{1} << 20);
      if (!text) continue;
      if (text->find("CUDAExtension") != std::string::npos ||
          text->find("cuda_sources") != std::string::npos)
        ev.cuda_extension = true;
      // The names the package installs: setup(name="x") and Extension(name="x._C").
      for (std::size_t q = text->find("name"); q != std::string::npos;
           q = text->find("name", q + 4)) {
        if (q > 0 &&
            (std::isalnum(static_cast<unsigned char>((*text)[q - 1])) || (*text)[q - 1] == '_'))
          continue;
        std::size_t k = q + 4;
        while (k < text->size() && (*text)[k] == ' ') ++k;
        if (k >= text->size() || (*text)[k] != '=') continue;
        ++k;
        while (k < text->size() && (*text)[k] == ' ') ++k;
        if (k >= text->size() || ((*text)[k] != '"' && (*text)[k] != '\'')) continue;
        std::size_t e = text->find((*text)[k], k + 1);
        if (e == std::string::npos || e - k - 1 > 100) continue;
        std::string v = text->substr(k + 1, e - k - 1);
        bool ident = !v.empty() && std::all_of(v.begin(), v.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
        });
        if (ident && std::find(ev.names.begin(), ev.names.end(), v) == ev.names.end())
          ev.names.push_back(v);
      }
    }
  }
  return ev;
}

std::string ImportName(std::string_view path) {
  while (!path.empty() && (path.back() == '/' || path.back() == '\\')) path.remove_suffix(1);
  auto slash = path.find_last_of("/\\");
  std::string name(slash == std::string_view::npos ? path : path.substr(slash + 1));
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

std::size_t FindWord(std::string_view s, std::string_view word, std::size_t from) {
  for (std::size_t p = s.find(word, from); p != std::string_view::npos; p = s.find(word, p + 1)) {
    bool left = p == 0 || !WordChar(s[p - 1]);
    std::size_t e = p + word.size();
    bool right = e >= s.size() || !WordChar(s[e]);
    if (left && right) return p;
  }
  return std::string_view::npos;
}

// Whether a requirement's environment marker keeps pip from installing it on a Mac
// (`; sys_platform == "linux"`, `platform_system != "Darwin"`, `platform_machine == "x86_64"`).
bool MarkerExcludesMac(std::string_view spec) {
  auto semi = spec.find(';');
  if (semi == std::string_view::npos) return false;
  std::string m;
  for (char c : spec.substr(semi + 1))
    if (c != ' ' && c != '\t' && c != '"' && c != '\'')
      m.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c);
  for (std::string_view k :
       {"sys_platform==linux", "platform_system==linux", "sys_platform!=darwin",
        "platform_system!=darwin", "platform_machine==x86_64", "platform_machine==amd64",
        "sys_platform==win32"})
    if (m.find(k) != std::string::npos) return true;
  return false;
}

void CheckRequirement(std::string_view spec, FindingSink& sink, std::uint32_t line,
                      std::uint32_t column, bool guarded) {
  spec = Trim(spec);
  if (spec.empty()) return;
  const bool off_mac = MarkerExcludesMac(spec) || guarded;
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
    CheckRequirement(spec.substr(e + 2), sink, line, column + static_cast<std::uint32_t>(e + 2),
                     guarded);
    return;
  }
  // Only a requirement if what follows the name looks like one.
  if (e < spec.size() && std::string_view("=<>!~;[ @\t,").find(spec[e]) == std::string_view::npos)
    return;
  std::string norm = NormalizePackageName(name);
  // A marker that keeps the line off a Mac is a guard: pip there never installs it.
  if (HasCudaLocalVersion(spec)) {
    sink.Add("DT401", line, column, spec, off_mac);
  } else if (IsNvidiaRuntimePackage(norm)) {
    sink.Add("DT402", line, column, name, off_mac);
  } else if (const Library* lib = sink.registry().LibraryForPackage(norm)) {
    sink.Add("DT403", line, column, std::string(name) + " (" + lib->name + ")", off_mac,
             lib->alternative);
  }
}

namespace {

// The folder a requirement names when it is a local path: "./pointops", "-e ./ext",
// "--editable=../lib", "file:./x", "submodules/diff-raster"; empty for a package or a URL.
std::string_view LocalPath(std::string_view spec) {
  spec = Trim(spec);
  bool editable = false;  // `-e x` names a folder (or a VCS URL) even without a slash.
  for (std::string_view opt : {"-e ", "-e\t", "--editable ", "--editable="}) {
    if (StartsWith(spec, opt)) {
      spec = Trim(spec.substr(opt.size()));
      editable = true;
      break;
    }
  }
  if (StartsWith(spec, "file:")) {
    spec.remove_prefix(5);
    if (StartsWith(spec, "//")) return {};  // file:///abs/path: outside the checkout.
  }
  // "pkg @ file:..." and extras "./x[cuda]".
  if (auto br = spec.find('['); br != std::string_view::npos) spec = spec.substr(0, br);
  spec = Trim(spec);
  if (spec.empty() || spec.find("://") != std::string_view::npos || spec[0] == '/' ||
      spec[0] == '-' || spec.find_first_of(" \t=<>!~;@,'\"") != std::string_view::npos)
    return {};
  if (spec == "." || StartsWith(spec, "./") || StartsWith(spec, "../") || editable) return spec;
  // A bare relative path with a folder: "submodules/diff-raster", "third_party/knn/".
  if (spec.find('/') != std::string_view::npos &&
      (std::isalnum(static_cast<unsigned char>(spec[0])) || spec[0] == '_'))
    return spec;
  return {};
}

std::string DirOf(const std::string& rel) {
  auto slash = rel.rfind('/');
  return slash == std::string::npos ? std::string() : rel.substr(0, slash);
}

// Submodule paths listed in <root>/.gitmodules.
std::vector<std::string> SubmodulePaths(const std::string& root) {
  std::vector<std::string> out;
  if (root.empty()) return out;
  auto text = ReadFile(fs::path(root) / ".gitmodules", std::uint64_t{1} << 20);
  if (!text) return out;
  ForEachLine(*text, [&](std::uint32_t, std::string_view line) {
    line = Trim(line);
    if (!StartsWith(line, "path")) return;
    auto eq = line.find('=');
    if (eq == std::string_view::npos || !Trim(line.substr(4, eq - 4)).empty()) return;
    std::string p(Trim(line.substr(eq + 1)));
    while (!p.empty() && p.back() == '/') p.pop_back();
    if (!p.empty()) out.push_back(std::move(p));
  });
  return out;
}

// A requirement that installs a local folder building a CUDA extension (.cu sources, a
// CUDAExtension, or a git submodule): DT322, and its import names declared as CUDA modules.
// True when `spec` was a local path (found or not), so that it is not read as a package.
bool CheckLocalPackage(std::string_view spec, FindingSink& sink, std::uint32_t line,
                       std::uint32_t column) {
  std::string_view path = LocalPath(spec);
  if (path.empty()) return false;
  std::string root = sink.Root();
  if (root.empty()) return true;
  // pip resolves the path from where it runs: the file's folder or the root.
  std::string rel =
      (fs::path(DirOf(sink.rel())) / std::string(path)).lexically_normal().generic_string();
  std::string from_root = fs::path(std::string(path)).lexically_normal().generic_string();
  for (std::string* r : {&rel, &from_root})
    while (!r->empty() && r->back() == '/') r->pop_back();
  std::vector<std::string> subs = SubmodulePaths(root);
  for (const std::string& cand : {rel, from_root}) {
    // The project itself (`-e .`) is reported where it is built (setup.py, pyproject).
    if (cand.empty() || cand == "." || StartsWith(cand, "..")) continue;
    FolderEvidence ev = InspectFolder(root, cand);
    bool submodule = std::find(subs.begin(), subs.end(), cand) != subs.end();
    if (!ev.exists && !submodule) continue;
    // A checked-out submodule is judged by its files, like any folder; one that is not checked
    // out cannot be, and in research code it is nearly always a CUDA extension.
    bool unseen_submodule = submodule && (!ev.exists || ev.empty);
    if (!(ev.cuda_sources || ev.cuda_extension || unseen_submodule)) return true;
    std::string why = ev.cuda_extension        ? "its setup.py builds a CUDAExtension"
                      : ev.cuda_sources        ? "it has .cu sources"
                      : ev.empty || !ev.exists ? "a git submodule, empty in this checkout"
                                               : "a git submodule";
    sink.Add("DT322", line, column, std::string(path) + " (" + why + ")", false);
    std::vector<std::string> names = {ImportName(cand)};
    for (const auto& nm : ev.names)
      if (std::find(names.begin(), names.end(), nm) == names.end()) names.push_back(nm);
    for (const auto& nm : names) sink.DeclareCudaModule(nm, line, "local package " + cand);
    return true;
  }
  return true;
}

}  // namespace

void ScanRequirements(std::string_view text, FindingSink& sink) {
  ForEachLine(text, [&](std::uint32_t n, std::string_view raw) {
    std::string_view line = Trim(StripHashComment(raw));
    if (line.empty()) return;
    if (CheckLocalPackage(line, sink, n, Col(raw, line))) return;
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
    if (item.size() >= 2 && (item[0] == '"' || item[0] == '\''))
      item = item.substr(1, item.size() - 2);
    std::uint32_t col = Col(raw, item);
    if (section == "channels") {
      if (item == "nvidia" || item == "pytorch" || StartsWith(item, "rapidsai"))
        sink.Add("DT408", n, col, item, false);
      return;
    }
    if (section != "dependencies") return;
    if (CheckLocalPackage(item, sink, n, col)) return;  // A pip entry that is a local folder.
    if (item[0] == '-') {  // pip options: --extra-index-url https://.../cu118
      if (IsCudaIndexUrl(item)) sink.Add("DT401", n, col, item, false);
      return;
    }
    // "pytorch=2.3.1=*cuda*" build strings select CUDA builds.
    if (Lower(item).find("cuda") != std::string::npos && StartsWith(item, "pytorch=")) {
      sink.Add("DT401", n, col, item, false);
      return;
    }
    CheckRequirement(item, sink, n, col);
  });
}

namespace {

// Keys whose strings are requirements or indexes, in any table: PEP 621 / 518 / 735, Poetry,
// PDM, uv, pixi, setuptools' own spellings.
bool IsDependencyKey(std::string_view key) {
  for (std::string_view k :
       {"dependencies", "requires", "install_requires", "install-requires", "setup_requires",
        "setup-requires", "build-requires", "dev-dependencies", "optional-dependencies",
        "extras_require", "constraint-dependencies", "override-dependencies"})
    if (key == k) return true;
  return false;
}

// Tables whose keys are all requirement names or groups of requirements.
bool IsDependencyTable(std::string_view table) {
  return table.find("dependencies") != std::string_view::npos ||
         table.find("dependency-groups") != std::string_view::npos ||
         table.find("extras") != std::string_view::npos;
}

// The key of `key = value` (bare or quoted), or empty.
std::string_view TomlKey(std::string_view line) {
  std::size_t eq = line.find('=');
  if (eq == std::string_view::npos) return {};
  std::string_view key = Trim(line.substr(0, eq));
  if (key.size() >= 2 && (key[0] == '"' || key[0] == '\'') && key.back() == key[0])
    key = key.substr(1, key.size() - 2);
  if (key.empty() || key.find_first_of(" \t\"'[") != std::string_view::npos) return {};
  return key;
}

// Bracket depth change of a TOML line outside strings.
int BracketDelta(std::string_view line) {
  int d = 0;
  char q = 0;
  for (char c : line) {
    if (q != 0) {
      if (c == q) q = 0;
      continue;
    }
    if (c == '"' || c == '\'')
      q = c;
    else if (c == '#')
      break;
    else if (c == '[')
      ++d;
    else if (c == ']')
      --d;
  }
  return d;
}

}  // namespace

void ScanPyproject(std::string_view text, FindingSink& sink) {
  std::string table;
  std::string key;  // The key whose (possibly multi-line) array is open.
  int depth = 0;    // Bracket depth of that array.
  ForEachLine(text, [&](std::uint32_t n, std::string_view raw) {
    std::string_view line = Trim(raw);
    if (line.empty() || line[0] == '#') return;
    if (depth <= 0 && line[0] == '[') {
      table = std::string(line);
      key.clear();
      depth = 0;
      return;
    }
    std::string_view value = line;
    if (depth <= 0) {
      std::string_view k = TomlKey(line);
      if (k.empty()) return;
      key = std::string(k);
      value = Trim(line.substr(line.find('=') + 1));
      depth = BracketDelta(value);
    } else {
      depth += BracketDelta(line);
    }
    if (table == "[tool.dualtrack]") return;
    bool deps_table = IsDependencyTable(table);
    // Only requirement lists are environment; `keywords`, `description`, classifiers and URLs
    // are prose (an index URL counts wherever it is).
    bool deps = deps_table || IsDependencyKey(key);
    // Poetry / pixi style: `flash-attn = "^2.5"` inside a dependencies table.
    if (deps_table && depth <= 0 && line.find('=') != std::string_view::npos && line[0] != '"' &&
        key.find('.') == std::string::npos && value.data() != line.data() &&
        (value.empty() || value[0] != '['))  // `cuda = [...]` names a group of requirements.
      CheckRequirement(key + " ", sink, n, Col(raw, line));
    // Quoted strings: PEP 508 specifiers and index URLs.
    for (std::size_t p = 0; p < value.size(); ++p) {
      char q = value[p];
      if (q == '#') break;
      if (q != '"' && q != '\'') continue;
      std::size_t e = value.find(q, p + 1);
      if (e == std::string_view::npos) break;
      std::string_view str = value.substr(p + 1, e - p - 1);
      if (IsCudaIndexUrl(str)) {
        sink.Add("DT401", n, Col(raw, str), str, false);
      } else if (deps) {
        if (!CheckLocalPackage(str, sink, n, Col(raw, str)))
          CheckRequirement(str, sink, n, Col(raw, str));
      } else if (StartsWith(table, "[tool.")) {
        // Build settings (scikit-build cmake args, cibuildwheel environments) that select
        // CUDA architectures.
        for (std::string_view arch : {"CUDA_ARCHITECTURES", "TORCH_CUDA_ARCH_LIST", "-gencode"}) {
          // A setting starts with it ("-DCMAKE_CUDA_ARCHITECTURES=80", "TORCH_CUDA_ARCH_LIST=8.0
          // ..."); prose mentions it after other words.
          std::size_t at = str.find(arch);
          if (at != std::string_view::npos &&
              str.substr(0, at).find(' ') == std::string_view::npos) {
            sink.Add("DT302", n, Col(raw, str.substr(at)), arch, false);
            break;
          }
        }
      }
      p = e;
    }
    if (depth <= 0) key.clear();
  });
}

void ScanSetupCfg(std::string_view text, FindingSink& sink) {
  std::string section;
  bool deps = false;  // Inside a requirement list: install_requires = ... and its continuation.
  ForEachLine(text, [&](std::uint32_t n, std::string_view raw) {
    std::string_view line = Trim(StripHashComment(raw));
    if (line.empty() || line[0] == ';') return;
    if (line[0] == '[') {
      section = std::string(line);
      deps = false;
      return;
    }
    bool continuation = raw[0] == ' ' || raw[0] == '\t';
    if (!continuation) {
      std::size_t eq = line.find('=');
      std::size_t colon = line.find(':');
      std::size_t sep = std::min(eq, colon);
      if (sep == std::string_view::npos) return;
      std::string_view key = Trim(line.substr(0, sep));
      // setup.cfg keys only: `torch>=2` in an extras section has '=' after a version operator.
      bool op = sep > 0 && std::string_view("<>!~=").find(line[sep - 1]) != std::string_view::npos;
      if (op) key = {};
      deps = section == "[options.extras_require]" ||
             (section == "[options]" && IsDependencyKey(key)) ||
             (section == "[options]" && key == "dependency_links");
      if (!op) line = Trim(line.substr(sep + 1));
    }
    if (IsCudaIndexUrl(line)) {
      sink.Add("DT401", n, Col(raw, line), line, false);
      return;
    }
    if (!deps || line.empty()) return;
    if (line.find(';') == std::string_view::npos) {
      // One-line lists: install_requires = torch, flash-attn
      for (auto part : Split(line, ',')) {
        part = Trim(part);
        if (!part.empty() && !CheckLocalPackage(part, sink, n, Col(raw, part)))
          CheckRequirement(part, sink, n, Col(raw, part));
      }
    } else if (!CheckLocalPackage(line, sink, n, Col(raw, line))) {
      CheckRequirement(line, sink, n, Col(raw, line));
    }
  });
}

bool IsBitsandbytesFlag(std::string_view token) {
  if (token.size() < 3 || token[0] != '-') return false;
  std::string t = Lower(token);
  std::replace(t.begin(), t.end(), '_', '-');
  for (std::string_view w : {"8bit", "4bit", "8-bit", "4-bit", "bnb", "bitsandbytes", "nf4"})
    if (t.find(w) != std::string::npos) return true;
  return false;
}

namespace {

bool ArgChar(char c) {
  return c != ' ' && c != '\t' && c != '"' && c != '\'' && c != ',' && c != '[' && c != ']';
}

bool Truthy(std::string_view v) {
  std::string l = Lower(v);
  return l == "true" || l == "yes" || l == "on" || l == "1";
}

// The codes of the Python vocabulary that mean a CUDA-only library is used: directly (DT202), or
// through another package (DT206: `optim="paged_adamw_32bit"` runs bitsandbytes).
bool LibraryCode(std::string_view code) { return code == "DT202" || code == "DT206"; }

// Whether the registry's Python vocabulary reads `key: value` as a use of a CUDA-only library
// (DT202, or DT206: bitsandbytes through transformers): a config is the keyword arguments of the
// code that reads it, so `attn_implementation: flash_attention_2` selects flash-attn as the keyword
// argument does, and a value the string rules name (`flash_attention_3`) does under any key. Rules
// bound to one callee say nothing about a config's key.
bool PythonLibraryRule(const Registry& reg, std::string_view key, std::string_view v) {
  if (v.empty() || v.find_first_of(" \t[{") != std::string_view::npos) return false;
  if (const auto* rules = reg.KeywordRules(key))
    for (const auto& r : *rules) {
      if (!LibraryCode(r.code) || !r.call.empty()) continue;
      // Python's True is YAML's true / yes / on.
      if (r.value.empty() || (r.value == "True" ? Truthy(v) : GlobMatch(r.value, v))) return true;
    }
  const PythonKeyword* s = reg.StringRule(v);
  return s != nullptr && LibraryCode(s->code);
}

// The command-line argument at `p`.
std::string ArgToken(std::string_view s, std::size_t p) {
  std::size_t e = p;
  while (e < s.size() && ArgChar(s[e])) ++e;
  return std::string(s.substr(p, e - p));
}

// Where a command line turns on bitsandbytes loading: `--load-in-8bit`, `--load_4bit True`,
// `--quantize bitsandbytes`, `--quantization=bnb-nf4`; npos when it does not (or when the flag is
// given a false value). Quotes, commas and brackets separate arguments, so the list form of a
// compose `command: ["python", "x.py", "--load-in-8bit"]` reads the same.
std::size_t BitsandbytesFlagAt(std::string_view s) {
  std::vector<std::pair<std::size_t, std::string_view>> args;
  for (std::size_t i = 0; i < s.size();) {
    if (!ArgChar(s[i])) {
      ++i;
      continue;
    }
    std::size_t b = i;
    while (i < s.size() && ArgChar(s[i])) ++i;
    args.emplace_back(b, s.substr(b, i - b));
  }
  for (std::size_t k = 0; k < args.size(); ++k) {
    std::string_view a = args[k].second;
    if (a.size() < 3 || a[0] != '-') continue;
    std::size_t eq = a.find('=');
    std::string_view opt = a.substr(0, eq);
    std::string value = Lower(eq != std::string_view::npos ? a.substr(eq + 1)
                              : k + 1 < args.size()        ? args[k + 1].second
                                                           : std::string_view{});
    if (IsBitsandbytesFlag(opt)) {
      if (value == "false" || value == "0" || value == "no") continue;
      return args[k].first;
    }
    if (Lower(opt).find("quant") != std::string::npos &&
        (value.find("bitsandbytes") != std::string::npos || StartsWith(value, "bnb")))
      return args[k].first;
  }
  return std::string_view::npos;
}

// Where a command line selects a CUDA device: `--device cuda`, `--device=cuda:0`,
// `--accelerator gpu`; npos when it does not. Quotes and commas may stand between the option and
// its value, so the exec form of a compose command (`["--device", "cuda"]`) reads the same; in a
// shell line the quoted text is blanked first. `text` gets "--device cuda" when given.
std::size_t CudaDeviceFlagAt(std::string_view s, std::string* text = nullptr) {
  for (std::string_view opt : {"--device", "--accelerator"}) {
    for (std::size_t p = FindWord(s, opt); p != std::string_view::npos;
         p = FindWord(s, opt, p + 1)) {
      std::size_t v = p + opt.size();
      if (v < s.size() && s[v] == '=') ++v;
      while (v < s.size() &&
             (s[v] == ' ' || s[v] == '\t' || s[v] == '"' || s[v] == '\'' || s[v] == ','))
        ++v;
      std::size_t e = v;
      while (e < s.size() && ArgChar(s[e]) && s[e] != ';' && s[e] != '&' && s[e] != '|') ++e;
      std::string value = Lower(s.substr(v, e - v));
      bool cuda = value == "cuda" || (StartsWith(value, "cuda:") && value.size() > 5 &&
                                      std::all_of(value.begin() + 5, value.end(),
                                                  [](char c) { return c >= '0' && c <= '9'; }));
      if (cuda || (opt == "--accelerator" && value == "gpu")) {
        if (text) *text = std::string(opt) + " " + std::string(s.substr(v, e - v));
        return p;
      }
    }
  }
  return std::string_view::npos;
}

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
      if (c == '\'' || c == '"')
        q = c;
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

bool IsCudaImage(std::string_view image) {
  return image.find("nvidia/cuda") != std::string_view::npos ||
         image.find("nvcr.io/nvidia") != std::string_view::npos ||
         (image.find("pytorch/pytorch") != std::string_view::npos &&
          image.find("cuda") != std::string_view::npos);
}

// The arguments of `pip install` from `from` on: local folders (`./ext`, `-e pointops`) that
// build a CUDA extension; option values (`-r reqs.txt`) are skipped.
void PipInstallArgs(const std::string& line, std::size_t from, std::uint32_t n, FindingSink& sink,
                    bool guarded) {
  auto col = [](std::size_t p) { return static_cast<std::uint32_t>(p + 1); };
  bool skip_next = false, editable = false;
  for (std::size_t p = from; p < line.size();) {
    while (p < line.size() && (line[p] == ' ' || line[p] == '\t')) ++p;
    std::size_t e = p;
    while (e < line.size() && line[e] != ' ' && line[e] != '\t' && line[e] != ';' &&
           line[e] != '&' && line[e] != '|')
      ++e;
    if (e == p) break;  // The command ends (;, &&, |).
    std::string_view tok = std::string_view(line).substr(p, e - p);
    if (skip_next) {
      skip_next = false;
    } else if (editable && tok[0] != '-') {
      // `-e pointops`: a folder even without a slash.
      editable = false;
      std::string path(tok);
      if (path[0] != '.' && path[0] != '/' && path.find(':') == std::string::npos)
        path = "./" + path;
      CheckLocalPackage(path, sink, n, col(p));
    } else if (tok[0] == '-') {
      editable = tok == "-e" || tok == "--editable";
      // Options whose value is the next word; -e's value is the folder itself.
      for (std::string_view o : {"-r", "-c", "-f", "-i", "-t", "--index-url", "--extra-index-url",
                                 "--find-links", "--requirement", "--constraint", "--target",
                                 "--prefix", "--root", "--config-settings", "-C"})
        skip_next = skip_next || tok == o;
    } else if (!CheckLocalPackage(tok, sink, n, col(p))) {
      CheckRequirement(tok, sink, n, col(p), guarded);
    }
    p = e;
  }
}

constexpr std::string_view kNvidiaTools[] = {"nvidia-smi", "nvcc",     "nsys",         "ncu",
                                             "nvprof",     "cuda-gdb", "nvidia-docker"};

// A tool by name or by path (`/usr/local/cuda/bin/nvcc`).
bool IsNvidiaTool(std::string_view w) {
  w = w.substr(w.rfind('/') + 1);
  return std::find(std::begin(kNvidiaTools), std::end(kNvidiaTools), w) != std::end(kNvidiaTools);
}

// Quotes, `$( )`, backticks, `[ ]`, operators and redirections end a word of a test.
bool ShellSep(char c) {
  return c == ' ' || c == '\t' || c == '"' || c == '\'' || c == '$' || c == '(' || c == ')' ||
         c == '`' || c == '[' || c == ']' || c == ';' || c == '&' || c == '|' || c == '<' ||
         c == '>';
}

// The words of a shell command's text, ShellSep() separating them: `[ -x "$(command -v nvcc)" ]`
// is the words -x command -v nvcc.
std::vector<std::string_view> ShellWords(std::string_view s) {
  std::vector<std::string_view> out;
  for (std::size_t i = 0; i < s.size();) {
    if (ShellSep(s[i])) {
      ++i;
      continue;
    }
    std::size_t b = i;
    while (i < s.size() && !ShellSep(s[i])) ++i;
    out.push_back(s.substr(b, i - b));
  }
  return out;
}

// Whether the words [0, k) end with a test of whether the tool at k exists (`command -v nvcc`,
// `which nvidia-smi`, `type`, `hash`, `[ -x /usr/local/cuda/bin/nvcc ]`), which looks the tool up
// without running it.
bool ExistenceTestBefore(const std::vector<std::string_view>& w, std::size_t k) {
  if (k >= 1 && (w[k - 1] == "which" || w[k - 1] == "type" || w[k - 1] == "hash" ||
                 w[k - 1] == "whereis" || w[k - 1] == "-x" || w[k - 1] == "-f" || w[k - 1] == "-e"))
    return true;
  return k >= 2 && (w[k - 1] == "-v" || w[k - 1] == "-V") && w[k - 2] == "command";
}

enum class ShellTruth { kNone, kCuda, kNoCuda };

// What a test command says: kCuda where it holds only with an NVIDIA tool installed (`command -v
// nvidia-smi`, `[ -x "$(which nvcc)" ]`, or running the tool: `nvidia-smi -L`), kNoCuda for its
// negation (`! command -v nvcc`, `[ -z "$(command -v nvcc)" ]`); a disjunction says nothing.
ShellTruth TestTruth(std::string_view text) {
  if (text.find("||") != std::string_view::npos) return ShellTruth::kNone;
  const std::vector<std::string_view> w = ShellWords(text);
  bool found = false, negated = false;
  for (std::size_t k = 0; k < w.size(); ++k) {
    if (w[k] == "!" || w[k] == "-z") negated = !negated;
    if (!IsNvidiaTool(w[k])) continue;
    std::size_t first = 0;  // The command itself, past `!`, `test` and the test's own flags.
    while (first < k && (w[first] == "!" || w[first] == "test" || w[first][0] == '-')) ++first;
    found |= ExistenceTestBefore(w, k) || first == k;
  }
  if (!found) return ShellTruth::kNone;
  return negated ? ShellTruth::kNoCuda : ShellTruth::kCuda;
}

// The control flow of a shell script, line by line, as far as it says that the NVIDIA tools are
// installed where a command runs: the `then` branch of `if command -v nvidia-smi ...` (the `else`
// of its negation), and what follows `&&` after such a test. Findings there are guarded, as the
// Python scanner guards code behind torch.cuda.is_available().
class ShellGuards {
 public:
  // Reads blanked line `line` (raw text `raw`, same columns) from `from`; GuardedAt() then says
  // whether the command at a column of it is guarded.
  void Read(std::string_view raw, std::string_view line, std::size_t from) {
    if (in_cond_ && awaiting_then_) {
      // `if x:` of a heredoc's Python, not `if cmd` / `then` over two lines: no condition.
      const std::string_view first = Trim(line.substr(std::min(from, line.size())));
      if (first.substr(0, first.find_first_of(" \t;")) != "then") DropCondition();
    }
    awaiting_then_ = false;
    marks_.clear();
    marks_.push_back(Mark{0, Guarded(), in_cond_});
    std::size_t cmd_begin = from;  // The current simple command.
    for (std::size_t i = from; i < line.size();) {
      const char c = line[i];
      if (c == ' ' || c == '\t') {
        ++i;
        continue;
      }
      if (IsOperator(line, i)) {
        const bool pair = i + 1 < line.size() && line[i + 1] == c;
        if (in_cond_) {
          cond_.append(raw.substr(cmd_begin, i + (pair ? 2 : 1) - cmd_begin));
        } else if (c == '&' && pair) {
          // `command -v nvcc >/dev/null && nvcc ...`: the rest of the and-list has the tool.
          and_guard_ =
              and_guard_ || TestTruth(raw.substr(cmd_begin, i - cmd_begin)) == ShellTruth::kCuda;
        } else if (c != '|' || pair) {
          and_guard_ = false;  // `;`, `&`, `||`: the next command runs either way.
        }
        i += pair ? 2 : 1;
        cmd_begin = i;
        at_command_ = true;
        marks_.push_back(Mark{i, Guarded(), in_cond_});
        continue;
      }
      std::size_t e = i;
      while (e < line.size() && line[e] != ' ' && line[e] != '\t' && !IsOperator(line, e)) ++e;
      const std::string_view word = line.substr(i, e - i);
      if (at_command_) Keyword(word, e, cmd_begin);
      marks_.push_back(Mark{i, Guarded(), in_cond_});
      i = e;
    }
    const std::string_view t = Trim(line);
    if (in_cond_) {
      cond_.append(raw.substr(cmd_begin, line.size() - std::min(cmd_begin, line.size())));
      // An `if` with no `then` within a few lines is no shell if: drop it rather than read the
      // rest of the file as its condition.
      if (++cond_lines_ > kMaxConditionLines) DropCondition();
    }
    if (!t.empty() && t.back() == '\\') return;  // The command goes on on the next line.
    const std::string_view c = Trim(cond_);
    awaiting_then_ = in_cond_ && !c.empty() && c.back() != '&' && c.back() != '|';
    and_guard_ = false;
    at_command_ = true;
  }

  bool GuardedAt(std::size_t p) const { return MarkAt(p).guarded; }
  // Whether column p lies in an `if` condition: a command there is a test, and its failure picks
  // the other branch instead of stopping the script.
  bool InConditionAt(std::size_t p) const { return MarkAt(p).cond; }

  // Forgets the control flow: a Dockerfile instruction that is not a continued RUN.
  void Reset() { *this = ShellGuards(); }

 private:
  struct Mark {
    std::size_t at = 0;
    bool guarded = false;
    bool cond = false;
  };

  Mark MarkAt(std::size_t p) const {
    Mark m{0, Guarded(), in_cond_};
    for (const Mark& k : marks_) {
      if (k.at > p) break;
      m = k;
    }
    return m;
  }

  // `;`, `&`, `|` (and their pairs) at i; the `&` of a redirection (`2>&1`, `&>`) is none.
  static bool IsOperator(std::string_view line, std::size_t i) {
    const char c = line[i];
    if (c == '&' && ((i > 0 && (line[i - 1] == '>' || line[i - 1] == '<')) ||
                     (i + 1 < line.size() && line[i + 1] == '>')))
      return false;
    return c == ';' || c == '&' || c == '|';
  }

  struct Frame {
    ShellTruth truth = ShellTruth::kNone;  // Of the `if` condition.
    bool elif = false;
    bool guard = false;  // The current branch runs only where the tools are installed.
  };

  void DropCondition() {
    in_cond_ = false;
    if (!frames_.empty() && !frames_.back().elif) frames_.pop_back();
  }

  bool Guarded() const {
    if (and_guard_) return true;
    for (const Frame& f : frames_)
      if (f.guard) return true;
    return false;
  }

  // A word at command position, ending at e: the reserved words of if/then/else/fi. A Makefile
  // recipe may prefix it with `@`, `-` or `+`.
  void Keyword(std::string_view word, std::size_t e, std::size_t& cmd_begin) {
    while (!word.empty() && (word[0] == '@' || word[0] == '-' || word[0] == '+'))
      word.remove_prefix(1);
    if (word == "if" || word == "elif") {
      if (word == "if") frames_.emplace_back();
      if (word == "elif" && !frames_.empty()) {
        frames_.back().elif = true;
        frames_.back().guard = false;
      }
      in_cond_ = true;
      cond_.clear();
      cond_lines_ = 0;
      cmd_begin = e;
      return;  // The condition's first command follows.
    }
    if (word == "then" && in_cond_) {
      in_cond_ = false;
      const ShellTruth t = TestTruth(cond_);
      if (!frames_.empty()) {
        Frame& f = frames_.back();
        if (!f.elif) f.truth = t;
        f.guard = t == ShellTruth::kCuda;
      }
      cmd_begin = e;
      return;
    }
    if (word == "else") {
      if (!frames_.empty())
        frames_.back().guard = !frames_.back().elif && frames_.back().truth == ShellTruth::kNoCuda;
      cmd_begin = e;
      return;
    }
    if (word == "fi") {
      if (!frames_.empty()) frames_.pop_back();
      at_command_ = false;
      return;
    }
    if (word == "!") return;  // Part of the test it negates.
    if (word == "do" || word == "{" || word == "(" || word == "time") {
      cmd_begin = e;
      return;
    }
    at_command_ = false;
  }

  static constexpr int kMaxConditionLines = 8;
  std::vector<Frame> frames_;
  bool in_cond_ = false;        // Between `if` / `elif` and `then`.
  std::string cond_;            // The condition's raw text so far.
  int cond_lines_ = 0;          // Line ends within it.
  bool awaiting_then_ = false;  // The line ended the condition: `then` must come next.
  bool and_guard_ = false;
  bool at_command_ = true;
  std::vector<Mark> marks_;  // Where the state changes along the current line.
};

// Where a line reads CUDA_VISIBLE_DEVICES (`gpu_list="${CUDA_VISIBLE_DEVICES:-0}"`), which the
// blanked reading misses inside quotes; prose that names the variable has no `$`.
std::size_t CudaVisibleRead(std::string_view raw) {
  for (std::string_view form : {"${CUDA_VISIBLE_DEVICES", "$CUDA_VISIBLE_DEVICES"})
    if (std::size_t p = raw.find(form); p != std::string_view::npos) return p;
  return std::string_view::npos;
}

// The first NVIDIA tool that the line runs, or npos: `command -v nvidia-smi` only looks it up.
std::size_t NvidiaToolRun(std::string_view line, std::string_view& tool) {
  for (std::string_view t : kNvidiaTools)
    for (std::size_t p = FindWord(line, t); p != std::string_view::npos;
         p = FindWord(line, t, p + 1)) {
      std::size_t b = p;  // The whole word: a path to the tool is the tool.
      while (b > 0 && !ShellSep(line[b - 1])) --b;
      std::vector<std::string_view> before = ShellWords(line.substr(0, b));
      before.push_back(t);
      if (ExistenceTestBefore(before, before.size() - 1)) continue;
      tool = t;
      return p;
    }
  return std::string_view::npos;
}

// The option of an LSF or PBS job that asks for GPUs: `bsub -gpu num=1 ...`, `#BSUB -gpu
// "num=2"`, `#PBS -l select=1:ngpus=4`, `qsub -l nodes=1:gpus=2`; npos when there is none.
std::size_t LsfPbsGpuRequestAt(std::string_view line, std::string& text) {
  const std::string_view t = Trim(line);
  auto word_end = [&](std::size_t p) {
    while (p < line.size() && line[p] != ' ' && line[p] != '\t' && line[p] != '\\') ++p;
    return p;
  };
  if (StartsWith(t, "#BSUB") || FindWord(line, "bsub") != std::string_view::npos) {
    for (std::size_t p = FindWord(line, "-gpu"); p != std::string_view::npos;
         p = FindWord(line, "-gpu", p + 1)) {
      if (p + 4 >= line.size() || line[p + 4] != ' ') continue;  // `-gpu num=1`
      std::size_t v = p + 5;
      while (v < line.size() && line[v] == ' ') ++v;
      text = "-gpu " + std::string(line.substr(v, word_end(v) - v));
      return p;
    }
    return std::string_view::npos;
  }
  if (!StartsWith(t, "#PBS") && FindWord(line, "qsub") == std::string_view::npos)
    return std::string_view::npos;
  for (std::string_view key : {"ngpus=", "gpus="}) {
    for (std::size_t p = line.find(key); p != std::string_view::npos; p = line.find(key, p + 1)) {
      if (p > 0 && line[p - 1] != ':' && line[p - 1] != ' ' && line[p - 1] != ',') continue;
      text = std::string(line.substr(p, word_end(p) - p));
      text = text.substr(0, text.find(':'));
      return p;
    }
  }
  return std::string_view::npos;
}

// Where a cluster job asks for GPUs: SLURM (`#SBATCH --gres=gpu:4`, `srun --gpus-per-node=8 ...`,
// `sbatch --gpus 2`), LSF or PBS; npos when it does not. `text` gets the option as written.
std::size_t ClusterGpuRequestAt(std::string_view line, std::string& text) {
  if (std::size_t p = LsfPbsGpuRequestAt(line, text); p != std::string_view::npos) return p;
  if (!StartsWith(Trim(line), "#SBATCH") && FindWord(line, "sbatch") == std::string_view::npos &&
      FindWord(line, "srun") == std::string_view::npos &&
      FindWord(line, "salloc") == std::string_view::npos)
    return std::string_view::npos;
  for (std::string_view opt : {"--gres=gpu", "--gres gpu", "--gpus-per-node", "--gpus-per-task",
                               "--gpus=", "--gpus ", "--gres=shard"}) {
    const std::size_t p = line.find(opt);
    if (p == std::string_view::npos) continue;
    std::size_t e = p;
    while (e < line.size() && line[e] != ' ' && line[e] != '\t' && line[e] != '\\') ++e;
    if (opt.back() == ' ') {  // `--gpus 2`: the value too.
      e = p + opt.size();
      while (e < line.size() && line[e] != ' ' && line[e] != '\t') ++e;
    }
    text = std::string(line.substr(p, e - p));
    return p;
  }
  return std::string_view::npos;
}

// A path into the CUDA toolkit set for the build or the loader: `ENV CUDA_HOME=/usr/local/cuda`,
// `export LD_LIBRARY_PATH=/usr/local/cuda/lib64:...`, `ENV PATH /usr/local/cuda/bin:$PATH`; npos
// when the line sets none. Reading a variable (`$CUDA_HOME/bin/nvcc`) is not setting it.
std::size_t CudaToolkitPathAt(std::string_view line, std::string& text) {
  const std::string_view t = Trim(line);
  const std::string upper = Upper(t.substr(0, 7));
  // An ENV instruction, an `export` (also one echoed into a shell profile), a PATH assignment.
  if (!StartsWith(upper, "ENV ") && line.find("export ") == std::string_view::npos &&
      line.find("PATH=") == std::string_view::npos)
    return std::string_view::npos;
  for (std::string_view var : {"CUDA_HOME", "CUDA_ROOT", "CUDA_PATH", "CUDA_TOOLKIT_ROOT_DIR"})
    if (std::size_t p = FindWord(line, var);
        p != std::string_view::npos && (p == 0 || line[p - 1] != '$') &&
        p + var.size() < line.size() &&
        (line[p + var.size()] == '=' || line[p + var.size()] == ' ')) {
      text = std::string(var);
      return p;
    }
  if (std::size_t p = line.find("/usr/local/cuda"); p != std::string_view::npos) {
    text = "/usr/local/cuda";
    return p;
  }
  if (std::size_t p = line.find("/usr/local/nvidia"); p != std::string_view::npos) {
    text = "/usr/local/nvidia";
    return p;
  }
  return std::string_view::npos;
}

// `docker run --gpus all`, `docker run --runtime=nvidia`: the container reserves an NVIDIA GPU.
std::size_t DockerGpuAt(std::string_view line) {
  if (FindWord(line, "docker") == std::string_view::npos) return std::string_view::npos;
  for (std::string_view opt : {"--gpus", "--runtime=nvidia", "--runtime nvidia"})
    if (std::size_t p = line.find(opt); p != std::string_view::npos) return p;
  return std::string_view::npos;
}

struct SettingFinding {
  std::string code, text;
};
std::optional<SettingFinding> JudgeSetting(std::string_view raw_key, const std::string& key,
                                           std::string_view v,
                                           const std::vector<std::string>& words,
                                           const Registry& reg);
std::vector<std::string> LibraryWords(const Registry& reg);

// A shell script's own variables (`n_gpus=4`, `export GPUS=8`), so that `--gpus=${n_gpus}` reads
// as the value it is given; the last assignment before a line wins.
class ShellVars {
 public:
  void Read(std::string_view line) {
    std::string_view t = Trim(line);
    if (StartsWith(t, "export ")) t = Trim(t.substr(7));
    std::size_t e = 0;
    while (e < t.size() && (std::isalnum(static_cast<unsigned char>(t[e])) || t[e] == '_')) ++e;
    if (e == 0 || e >= t.size() || t[e] != '=' || std::isdigit(static_cast<unsigned char>(t[0])))
      return;
    std::string_view v = t.substr(e + 1);
    if (!v.empty() && (v[0] == '"' || v[0] == '\'')) {
      std::size_t close = v.find(v[0], 1);
      v = close == std::string_view::npos ? std::string_view{} : v.substr(1, close - 1);
    } else {
      v = v.substr(0, v.find_first_of(" \t;&|"));
    }
    values_[std::string(t.substr(0, e))] = std::string(v);
  }
  // `$NAME`, `${NAME}` or `${NAME:-default}` as the script set it; the text itself otherwise.
  std::string Resolve(std::string_view v) const {
    if (v.size() < 2 || v[0] != '$') return std::string(v);
    std::string_view name = v.substr(1), fallback;
    bool has_fallback = false;
    if (name[0] == '{') {
      if (name.back() != '}') return std::string(v);
      name = name.substr(1, name.size() - 2);
      if (std::size_t d = name.find(":-"); d != std::string_view::npos) {
        fallback = name.substr(d + 2);
        has_fallback = true;
        name = name.substr(0, d);
      }
    }
    if (auto it = values_.find(std::string(name)); it != values_.end()) return it->second;
    return has_fallback ? std::string(fallback) : std::string(v);
  }

 private:
  std::map<std::string, std::string, std::less<>> values_;
};

// Each `--key value` / `--key=value` option of a command line (options found in blanked `line`,
// values read from `raw` at the same columns, so a quoted value counts), judged as the setting of
// that name (JudgeSetting). At most one finding per code and line.
void ShellOptions(std::string_view line, std::string_view raw, std::uint32_t n, FindingSink& sink,
                  const std::function<bool(std::size_t)>& guarded, const ShellVars* vars) {
  std::vector<std::string> words;
  std::vector<std::string> seen;
  for (std::size_t i = 0; i + 2 < line.size(); ++i) {
    if (line[i] != '-' || line[i + 1] != '-' || (i > 0 && ArgChar(line[i - 1]))) continue;
    std::size_t e = i + 2;
    while (e < line.size() &&
           (std::isalnum(static_cast<unsigned char>(line[e])) || line[e] == '_' || line[e] == '-'))
      ++e;
    std::string raw_key(line.substr(i + 2, e - i - 2));
    std::replace(raw_key.begin(), raw_key.end(), '-', '_');
    std::size_t v = e;
    if (v < raw.size() && raw[v] == '=') {
      ++v;
    } else {
      if (v < raw.size() && raw[v] != ' ' && raw[v] != '\t') continue;
      while (v < raw.size() && (raw[v] == ' ' || raw[v] == '\t')) ++v;
    }
    std::string_view value;
    if (v < raw.size() && (raw[v] == '"' || raw[v] == '\'')) {
      std::size_t close = raw.find(raw[v], v + 1);
      if (close == std::string_view::npos) continue;
      value = raw.substr(v + 1, close - v - 1);
    } else {
      // A shell word runs to a blank, a quote or a control operator: a comma is part of it
      // (`--gpus 0,1` selects two devices).
      std::size_t ve = v;
      while (ve < raw.size() && (ArgChar(raw[ve]) || raw[ve] == ',') && raw[ve] != ';' &&
             raw[ve] != '&' && raw[ve] != '|')
        ++ve;
      value = raw.substr(v, ve - v);
    }
    if (raw_key.empty() || value.empty() || value[0] == '-') continue;
    std::string resolved = vars != nullptr ? vars->Resolve(value) : std::string(value);
    if (words.empty()) words = LibraryWords(sink.registry());
    const std::string key = Lower(raw_key);
    auto f = JudgeSetting(raw_key, key, resolved, words, sink.registry());
    // A count the script takes from its caller (`--gpus $NGPU`, `--num-gpus ${GPUS}` unset here)
    // is a GPU count all the same: the option is named for it.
    if (!f && resolved[0] == '$' &&
        (key == "gpus" || key == "num_gpus" || key == "n_gpus" || key == "ngpus"))
      f = SettingFinding{"DT120", key + ": " + resolved};
    if (!f || std::find(seen.begin(), seen.end(), f->code) != seen.end()) continue;
    seen.push_back(f->code);
    std::string shown =
        "--" + std::string(line.substr(i + 2, e - i - 2)) + " " + std::string(value);
    sink.Add(f->code, n, static_cast<std::uint32_t>(i + 1), shown, guarded(i));
  }
}

// `out` (BlankQuoted(raw)) with the text of each quoted string that is itself a command line put
// back, its own quoted prose blanked: `bash -c "CUDA_VISIBLE_DEVICES=3 python train.py"`,
// `screen -dm sh -c '...'`, `sbatch --wrap="..."`, and the command string of `bsub`, `ssh` or
// `eval`. A job file that launches every run through a scheduler or a detached shell says what
// the run needs inside those quotes.
std::string ShowCommandStrings(std::string_view raw, std::string out) {
  auto words_before = [&](std::size_t open) {
    return ShellWords(std::string_view(out).substr(0, open));
  };
  char q = 0;
  std::size_t open = 0;
  for (std::size_t i = 0; i < raw.size() && i < out.size(); ++i) {
    const char c = raw[i];
    if (q == 0) {
      if (c == '\\') {
        ++i;
      } else if (c == '\'' || c == '"') {
        q = c;
        open = i;
      }
      continue;
    }
    if (c != q || (q == '"' && raw[i - 1] == '\\')) continue;
    q = 0;
    std::vector<std::string_view> before = words_before(open);
    const std::string_view last = before.empty() ? std::string_view() : before.back();
    bool code = last == "-c" || last == "-lc" || last == "--wrap" || EndsWith(last, "--wrap=");
    for (std::string_view w : before)
      if (w == "bsub" || w == "ssh" || w == "eval") code = true;
    if (!code) continue;
    std::string inner = BlankQuoted(raw.substr(open + 1, i - open - 1));
    inner.resize(i - open - 1, ' ');
    out.replace(open + 1, inner.size(), inner);
  }
  return out;
}

void ShellLine(std::string_view raw, std::uint32_t n, FindingSink& sink,
               ShellGuards* guards = nullptr, std::size_t from = 0,
               const ShellVars* vars = nullptr) {
  auto col = [&](std::size_t p) { return static_cast<std::uint32_t>(p + 1); };
  ShellGuards own;
  if (guards == nullptr) guards = &own;
  const std::string blanked = BlankQuoted(raw);
  guards->Read(raw, blanked, from);
  std::string line = ShowCommandStrings(raw, blanked);
  auto g = [&](std::size_t p) { return guards->GuardedAt(p); };
  std::string_view tool;
  if (std::size_t p = NvidiaToolRun(line, tool); p != std::string::npos)
    sink.Add("DT405", n, col(p), tool, g(p) || guards->InConditionAt(p));
  if (std::size_t p = line.find("CUDA_VISIBLE_DEVICES"); p != std::string::npos)
    sink.Add("DT406", n, col(p), "CUDA_VISIBLE_DEVICES", g(p));
  else if (std::size_t q = CudaVisibleRead(raw); q != std::string::npos)
    sink.Add("DT406", n, col(q), "CUDA_VISIBLE_DEVICES", g(q));
  std::string text;
  if (std::size_t p = ClusterGpuRequestAt(line, text); p != std::string::npos)
    sink.Add("DT409", n, col(p), text, g(p));
  if (std::size_t p = CudaToolkitPathAt(raw, text); p != std::string::npos)
    sink.Add("DT410", n, col(p), text, g(p));
  if (std::size_t p = DockerGpuAt(line); p != std::string::npos)
    sink.Add("DT420", n, col(p), "docker run " + ArgToken(line, p), g(p));
  if (std::size_t p = line.find("TORCH_CUDA_ARCH_LIST"); p != std::string::npos)
    sink.Add("DT302", n, col(p), "TORCH_CUDA_ARCH_LIST", g(p));
  else if (std::size_t q = line.find("-gencode"); q != std::string::npos)
    sink.Add("DT302", n, col(q), "-gencode", g(q));
  // FORCE_CUDA=1: the switch extension builds (detectron2, mmcv, pytorch3d) read to compile
  // their CUDA sources even where no GPU is visible.
  else if (std::size_t f = FindWord(line, "FORCE_CUDA"); f != std::string::npos)
    sink.Add("DT302", n, col(f), "FORCE_CUDA", g(f));
  std::size_t launcher = FindWord(line, "torchrun");
  if (launcher == std::string::npos) launcher = line.find("torch.distributed.launch");
  if (launcher == std::string::npos) launcher = line.find("torch.distributed.run");
  if (launcher != std::string::npos && (line.find("nproc_per_node") != std::string::npos ||
                                        line.find("nproc-per-node") != std::string::npos)) {
    sink.Add("DT407", n, col(launcher), "torchrun --nproc_per_node", g(launcher));
  }
  if (std::size_t p = line.find("setup.py"); p != std::string::npos) {
    std::string_view rest = std::string_view(line).substr(p + 8);
    for (std::string_view verb : {"install", "build_ext", "develop", "bdist_wheel"})
      if (FindWord(rest, verb) != std::string::npos) {
        sink.Add("DT310", n, col(p), "setup.py " + std::string(verb), g(p));
        break;
      }
  }
  if (std::size_t p = BitsandbytesFlagAt(line); p != std::string::npos)
    sink.Add("DT221", n, col(p), ArgToken(line, p), g(p));
  ShellOptions(line, raw, n, sink, g, vars);
  // `pip install submodules/diff-raster ./ext flash-attn`: local folders that build a CUDA
  // extension, and packages, judged as requirement lines are.
  if (std::size_t pi = FindWord(line, "pip"); pi != std::string::npos) {
    if (std::size_t inst = FindWord(line, "install", pi); inst != std::string::npos)
      PipInstallArgs(line, inst + 7, n, sink, g(pi));
  }
  // `conda install -c nvidia cuda-compiler`: NVIDIA's channel, as in an environment file.
  if (std::size_t ci = FindWord(line, "conda");
      ci != std::string::npos && FindWord(line, "install", ci) != std::string::npos) {
    for (std::string_view opt : {"-c", "--channel"})
      for (std::size_t p = FindWord(line, opt, ci); p != std::string::npos;
           p = FindWord(line, opt, p + 1)) {
        std::string ch = ArgToken(line, std::min(line.size(), p + opt.size() + 1));
        if (ch == "nvidia" || StartsWith(ch, "nvidia/")) sink.Add("DT408", n, col(p), ch, g(p));
      }
  }
  if (IsCudaIndexUrl(raw) || HasCudaLocalVersion(line)) {
    std::size_t p = line.find("torch");
    p = p == std::string::npos ? 0 : p;
    sink.Add("DT401", n, col(p), "a CUDA wheel of torch", g(p));
  }
}

}  // namespace

void ScanShell(std::string_view text, FindingSink& sink) {
  ShellGuards guards;
  ShellVars vars;
  ForEachLine(text, [&](std::uint32_t n, std::string_view raw) {
    std::string_view t = Trim(raw);
    std::string text;
    // `#SBATCH --gres=gpu:4`, `#BSUB -gpu num=1`, `#PBS -l ngpus=4`: directives, not comments.
    const bool directive =
        StartsWith(t, "#SBATCH") || StartsWith(t, "#BSUB") || StartsWith(t, "#PBS");
    if (std::size_t p = directive ? ClusterGpuRequestAt(t, text) : std::string::npos;
        p != std::string::npos)
      sink.Add("DT409", n, Col(raw, t) + static_cast<std::uint32_t>(p), text, false);
    if (t.empty() || t[0] == '#') return;
    ShellLine(raw, n, sink, &guards, 0, &vars);
    vars.Read(raw);
  });
}

void ScanDockerfile(std::string_view text, FindingSink& sink) {
  ShellGuards guards;
  bool continued = false;  // The previous line ended in `\`: this one goes on with its RUN.
  ForEachLine(text, [&](std::uint32_t n, std::string_view raw) {
    std::string_view t = Trim(raw);
    if (t.empty() || t[0] == '#') return;
    const bool instruction = !continued;
    continued = t.back() == '\\';
    const std::string upper = Upper(t.substr(0, 5));
    if (instruction) guards.Reset();
    if (StartsWith(upper, "FROM ")) {
      std::string_view image = Trim(t.substr(5));
      while (StartsWith(image, "--")) {  // --platform=...
        auto sp = image.find(' ');
        image = sp == std::string_view::npos ? std::string_view{} : Trim(image.substr(sp));
      }
      image = image.substr(0, image.find(' '));
      if (IsCudaImage(image)) sink.Add("DT404", n, Col(raw, image), image, false);
      return;
    }
    // The shell command of a RUN starts after the instruction word.
    std::size_t from = 0;
    if (instruction && StartsWith(upper, "RUN "))
      from = static_cast<std::size_t>(t.data() - raw.data()) + 4;
    ShellLine(raw, n, sink, &guards, from);
  });
}

namespace {

// One line of a YAML document, read without a YAML library: block structure is all these
// scanners need, and a line-based reading cannot fail on a malformed document.
struct YamlLine {
  std::size_t indent = 0;    // Of the key, or of the item's content for "- x".
  bool item = false;         // A block sequence entry "- ...".
  std::string_view key;      // Empty when the line is not "key: value".
  std::string_view value;    // Unquoted when the whole value was quoted; empty for "key:".
  std::string_view content;  // The line without indentation, "- " and comment.
};

std::string_view Unquote(std::string_view v) {
  if (v.size() >= 2 && (v[0] == '"' || v[0] == '\'') && v.back() == v[0])
    return v.substr(1, v.size() - 2);
  return v;
}

YamlLine ReadYamlLine(std::string_view raw) {
  YamlLine y;
  std::string_view line = StripHashComment(raw);
  std::size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  if (i < line.size() && line[i] == '-' && (i + 1 == line.size() || line[i + 1] == ' ')) {
    y.item = true;
    ++i;
    while (i < line.size() && line[i] == ' ') ++i;
  }
  y.indent = i;
  std::string_view t = Trim(line.substr(std::min(i, line.size())));
  y.content = t;
  // "key:" or "key: value"; the colon of a URL or "cuda:0" has no space after it.
  std::size_t c = 0;
  for (; c < t.size(); ++c) {
    if (t[c] == ':' && (c + 1 == t.size() || t[c + 1] == ' ' || t[c + 1] == '\t')) break;
    if (t[c] == '"' || t[c] == '\'' || t[c] == '{' || t[c] == '[') {
      c = t.size();
      break;
    }
  }
  if (c < t.size() && c > 0) {
    y.key = Trim(t.substr(0, c));
    y.value = Unquote(Trim(t.substr(c + 1)));
  } else if (y.item) {
    y.value = Unquote(t);
  }
  return y;
}

bool IsInteger(std::string_view v, bool allow_negative) {
  if (allow_negative && !v.empty() && v[0] == '-') v.remove_prefix(1);
  return !v.empty() && v.size() <= 9 &&
         std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The items of a flow sequence "[a, 'b']"; nullopt when `v` is not one.
std::optional<std::vector<std::string_view>> FlowItems(std::string_view v) {
  if (v.size() < 2 || v.front() != '[' || v.back() != ']') return std::nullopt;
  std::vector<std::string_view> out;
  for (auto part : Split(v.substr(1, v.size() - 2), ',')) {
    part = Unquote(Trim(part));
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

// A device list or count that asks for CUDA GPUs: [0], [0, 1], 2, -1 (all), "0,1". `gpus: 0`
// (none), [] and null select no GPU; gpu_ids uses -1 for the CPU.
bool SelectsGpus(std::string_view key, std::string_view v) {
  bool ids = key == "gpu_ids";
  if (key != "gpus" && !ids) {  // A count: num_gpus, n_gpu, ngpus.
    if (IsInteger(v, false)) return std::stol(std::string(v)) > 0;
    return false;
  }
  if (auto items = FlowItems(v)) {
    for (auto it : *items)
      if (IsInteger(it, false)) return true;
    return false;
  }
  if (IsInteger(v, true)) {
    long x = std::stol(std::string(v));
    return ids ? x >= 0 : x != 0;
  }
  // "0,1" / "0," strings of indices.
  return v.find(',') != std::string_view::npos &&
         std::all_of(v.begin(), v.end(),
                     [](char c) { return (c >= '0' && c <= '9') || c == ',' || c == ' '; }) &&
         v.find_first_of("0123456789") != std::string_view::npos;
}

// Module and package names of the CUDA-only libraries, lower-case with '_' for '-' (one name,
// no dots or globs: a dotted module such as numba.cuda is not named by a config value).
std::vector<std::string> LibraryWords(const Registry& reg) {
  std::vector<std::string> out;
  auto add = [&](std::string_view w) {
    if (w.empty() || w.find_first_of(".*") != std::string_view::npos) return;
    std::string l = Lower(w);
    std::replace(l.begin(), l.end(), '-', '_');
    if (l.size() >= 4 && std::find(out.begin(), out.end(), l) == out.end()) out.push_back(l);
  };
  for (const auto& lib : reg.libraries()) {
    for (const auto& m : lib.modules) add(m);
    for (const auto& p : lib.packages) add(p);
    for (const auto& w : lib.config_words) add(w);
  }
  return out;
}

// The library a config value names: the whole value ("flash-attn") or one of its words
// ("vanilla-xformers", "apex.optimizers.FusedAdam"); empty when none.
std::string NamedLibrary(std::string_view v, const std::vector<std::string>& words) {
  std::string l = Lower(v);
  std::string norm = l;
  std::replace(norm.begin(), norm.end(), '-', '_');
  for (const auto& w : words)
    if (norm == w) return w;
  for (std::size_t i = 0; i < l.size();) {
    auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    if (!word_char(l[i])) {
      ++i;
      continue;
    }
    std::size_t b = i;
    while (i < l.size() && word_char(l[i])) ++i;
    std::string_view tok = std::string_view(l).substr(b, i - b);
    for (const auto& w : words)
      if (tok == w) return w;
  }
  return {};
}

// A key that turns a library on: use_xformers, enable_flash_attn, xformers (with a true value).
std::string KeyLibrary(std::string_view key, const std::vector<std::string>& words) {
  std::string l = Lower(key);
  std::replace(l.begin(), l.end(), '-', '_');
  for (const auto& w : words) {
    for (std::size_t p = l.find(w); p != std::string::npos; p = l.find(w, p + 1)) {
      bool left = p == 0 || l[p - 1] == '_';
      bool right = p + w.size() == l.size() || l[p + w.size()] == '_';
      if (left && right) return w;
    }
  }
  return {};
}

bool IsProseKey(std::string_view key) {
  std::string l = Lower(key);
  for (std::string_view k :
       {"description", "desc",   "help",    "doc",   "docs",     "comment", "comments",
        "note",        "notes",  "summary", "title", "message",  "text",    "prompt",
        "caption",     "author", "authors", "url",   "homepage", "citation"})
    if (l == k) return true;
  return false;
}

}  // namespace

void ScanCompose(std::string_view text, FindingSink& sink) {
  std::string list_key;  // A key whose block sequence follows ("command:", "capabilities:").
  std::size_t list_indent = 0;
  // The previous entry of a command's block sequence, where `- --device` and `- cuda` put an
  // option and its value on two lines.
  std::string prev_arg;
  std::uint32_t prev_line = 0, prev_col = 0;
  ForEachLine(text, [&](std::uint32_t n, std::string_view raw) {
    YamlLine y = ReadYamlLine(raw);
    if (y.content.empty()) return;
    auto col = [&](std::string_view part) { return Col(raw, part); };
    if (!list_key.empty() && !(y.item && y.indent >= list_indent) &&
        !(y.key.empty() && y.indent > list_indent))
      list_key.clear();
    std::string key = Lower(y.key);
    std::string_view v = y.value;
    if (!list_key.empty() && y.key.empty()) key = list_key;  // An entry of that list.
    if (key == "driver" && Lower(v) == "nvidia") {
      sink.Add("DT420", n, col(y.content), "driver: nvidia", false);
    } else if (key == "runtime" && Lower(v) == "nvidia") {
      sink.Add("DT420", n, col(y.content), "runtime: nvidia", false);
    } else if (key == "gpus" && !v.empty()) {
      sink.Add("DT420", n, col(y.content), "gpus: " + std::string(v), false);
    } else if (key == "gpu" && Lower(v) == "true") {  // Cog's `build: gpu: true`.
      sink.Add("DT420", n, col(y.content), "gpu: true", false);
    } else if (key == "capabilities") {
      auto items = FlowItems(v);
      bool gpu =
          items ? std::find(items->begin(), items->end(), "gpu") != items->end() : v == "gpu";
      if (gpu) sink.Add("DT420", n, col(y.content), "capabilities: [gpu]", false);
    } else if (key == "nvidia.com/gpu" && !v.empty() && v != "0") {
      sink.Add("DT420", n, col(y.content), "nvidia.com/gpu", false);
    } else if (key == "image" && IsCudaImage(v)) {
      sink.Add("DT404", n, col(v), v, false);
    }
    if (std::size_t p = y.content.find("NVIDIA_VISIBLE_DEVICES"); p != std::string_view::npos)
      sink.Add("DT420", n, col(y.content.substr(p)), "NVIDIA_VISIBLE_DEVICES", false);
    if (std::size_t p = y.content.find("CUDA_VISIBLE_DEVICES"); p != std::string_view::npos)
      sink.Add("DT406", n, col(y.content.substr(p)), "CUDA_VISIBLE_DEVICES", false);
    if (key == "command" || key == "entrypoint" || key == "environment" || key == "args") {
      // What the container runs: the same checks as a shell line.
      ShellLine(raw, n, sink);
      std::string_view body = y.item ? y.content : v;
      if (std::size_t p = BitsandbytesFlagAt(body); p != std::string_view::npos)
        sink.Add("DT221", n, col(body.substr(p)), ArgToken(body, p), false);
      // The exec form's arguments are quoted, which the shell reading above blanks.
      std::string flag;
      if (std::size_t p = CudaDeviceFlagAt(body, &flag); p != std::string_view::npos) {
        sink.Add("DT120", n, col(body.substr(p)), flag, false);
      } else if (y.item && !prev_arg.empty()) {
        const std::string joined = prev_arg + " " + std::string(y.value);
        if (CudaDeviceFlagAt(joined, &flag) == 0)
          sink.Add("DT120", prev_line, prev_col, flag, false);
      }
      prev_arg = y.item ? std::string(y.value) : std::string();
      prev_line = n;
      prev_col = col(y.content);
    } else {
      prev_arg.clear();
    }
    if (!y.key.empty() && v.empty()) {
      list_key = key;
      list_indent = y.indent;
    }
  });
}

namespace {

// What a setting selects, read the same way from a configuration's "key: value" pair and from a
// command line's `--key value` (a script's options are the settings of the code it runs): GPU
// counts and lists, accelerator and device selections, an NCCL backend, TF32, Kubernetes GPU
// limits, values or switches naming a CUDA-only library. `key` is lower-case.
std::optional<SettingFinding> JudgeSetting(std::string_view raw_key, const std::string& key,
                                           std::string_view v,
                                           const std::vector<std::string>& words,
                                           const Registry& reg) {
  auto found = [&](std::string code, std::string text) {
    return std::optional<SettingFinding>(SettingFinding{std::move(code), std::move(text)});
  };
  const std::string pair = key + ": " + std::string(v);
  if (key == "nvidia.com/gpu" && IsInteger(v, false) && v != "0")  // Kubernetes limits.
    return found("DT420", pair);
  if (raw_key == "CUDA_VISIBLE_DEVICES") return found("DT406", "CUDA_VISIBLE_DEVICES");
  if (key == "num_gpus" || key == "n_gpus" || key == "n_gpu" || key == "ngpus" || key == "ngpu" ||
      key == "gpus" || key == "gpu_ids") {
    return SelectsGpus(key, v) ? found("DT120", pair) : std::nullopt;
  }
  std::string lv = Lower(v);
  if (key == "accelerator" && (lv == "gpu" || lv == "cuda")) return found("DT120", pair);
  if ((key == "device" || EndsWith(key, "_device") || key == "device_type") &&
      (lv == "cuda" || (StartsWith(lv, "cuda:") && IsInteger(lv.substr(5), false))))
    return found("DT120", pair);
  if ((key == "backend" || EndsWith(key, "_backend") || key == "dist_backend") && lv == "nccl")
    return found("DT205", "nccl");
  // TF32 matmuls (transformers' `tf32`, `allow_tf32`) are a CUDA backend flag.
  if ((key == "tf32" || key == "allow_tf32") && Truthy(v)) return found("DT106", pair);
  if (PythonLibraryRule(reg, raw_key, v)) return found("DT220", pair);
  // A value naming a CUDA-only library; prose (a value with spaces) is not a selection.
  bool single = v.find_first_of(" \t") == std::string_view::npos;
  auto items = FlowItems(v);
  if (items) {
    single = std::all_of(items->begin(), items->end(), [](std::string_view it) {
      return it.find_first_of(" \t") == std::string_view::npos;
    });
  }
  if (!v.empty() && single && !NamedLibrary(v, words).empty()) return found("DT220", pair);
  if (Truthy(v) && !KeyLibrary(key, words).empty()) return found("DT220", pair);
  return std::nullopt;
}

void ConfigPairFinding(const YamlLine& y, const std::string& key, std::uint32_t n, std::uint32_t at,
                       const std::vector<std::string>& words, FindingSink& sink) {
  if (auto f = JudgeSetting(y.key, key, y.value, words, sink.registry()))
    sink.Add(f->code, n, at, f->text, false);
}

}  // namespace

void ScanConfigYaml(std::string_view text, FindingSink& sink) {
  const std::vector<std::string> words = LibraryWords(sink.registry());
  std::size_t block_indent = std::string_view::npos;  // Inside a "|" / ">" block scalar (prose).
  std::string list_key;                               // "gpus:" whose block sequence follows.
  std::uint32_t list_line = 0, list_col = 0;
  std::size_t list_indent = 0;
  ForEachLine(text, [&](std::uint32_t n, std::string_view raw) {
    if (raw.size() > 4096) return;  // Data, not configuration.
    YamlLine y = ReadYamlLine(raw);
    if (y.content.empty()) return;
    if (block_indent != std::string_view::npos) {
      std::size_t ind = raw.find_first_not_of(" \t");
      if (ind != std::string_view::npos && ind > block_indent) return;
      block_indent = std::string_view::npos;
    }
    if (!list_key.empty()) {
      if (y.item && y.indent >= list_indent) {
        if (IsInteger(y.value, false)) {  // An index: GPU 0 is a GPU in a list.
          sink.Add("DT120", list_line, list_col, list_key + ": [" + std::string(y.value) + "]",
                   false);
          list_key.clear();
        }
        return;
      }
      list_key.clear();
    }
    if (y.key.empty()) {
      // A sequence entry naming a library: "plugins: [...]" in block form.
      if (y.item && y.value.find_first_of(" \t") == std::string_view::npos) {
        std::string lib = NamedLibrary(y.value, words);
        if (!lib.empty()) sink.Add("DT220", n, Col(raw, y.content), std::string(y.value), false);
      }
      return;
    }
    std::string key = Lower(y.key);
    std::string_view v = y.value;
    auto at = Col(raw, y.content);
    if (!v.empty() && (v[0] == '|' || v[0] == '>')) {
      block_indent = y.indent;
      return;
    }
    if (IsProseKey(key)) return;
    if ((key == "gpus" || key == "gpu_ids") && v.empty()) {
      list_key = key;
      list_line = n;
      list_col = at;
      list_indent = y.indent;
      return;
    }
    ConfigPairFinding(y, key, n, at, words, sink);
  });
}

namespace {

// For each set of import names, the first Python file under `root` (outside `skip` folders,
// hidden folders and build output) that imports one of them (`import x`, `from x.y import z`), as
// "file (as name)"; empty where none does. One bounded walk for all sets: at most 20,000 entries
// and 1 MiB per file.
std::vector<std::string> FindImporters(const std::string& root,
                                       const std::vector<std::vector<std::string>>& sets,
                                       const std::vector<std::string>& skip) {
  std::vector<std::string> found(sets.size());
  auto open = static_cast<std::size_t>(
      std::count_if(sets.begin(), sets.end(), [](const auto& v) { return !v.empty(); }));
  std::error_code ec;
  std::size_t seen = 0;
  auto word_end = [](const std::string& t, std::size_t e) {
    return e >= t.size() || !(std::isalnum(static_cast<unsigned char>(t[e])) || t[e] == '_');
  };
  for (fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec),
       end;
       open > 0 && !ec && it != end && seen < 20000; it.increment(ec), ++seen) {
    std::string name = it->path().filename().string();
    std::string rel = it->path().lexically_relative(root).generic_string();
    if (it->is_directory(ec)) {
      if (name.empty() || name[0] == '.' || name == "node_modules" || name == "build" ||
          name == "dist" || name == "__pycache__" ||
          std::find(skip.begin(), skip.end(), rel) != skip.end())
        it.disable_recursion_pending();
      continue;
    }
    if (!EndsWith(name, ".py") && !EndsWith(name, ".ipynb")) continue;
    auto text = ReadFile(it->path(), std::uint64_t{1} << 20);
    if (!text) continue;
    for (std::size_t k = 0; k < sets.size(); ++k) {
      if (!found[k].empty()) continue;
      for (const auto& mod : sets[k]) {
        for (std::string_view kw : {"import ", "from "}) {
          std::string pat = std::string(kw) + mod;
          for (std::size_t p = text->find(pat); p != std::string::npos && found[k].empty();
               p = text->find(pat, p + 1)) {
            bool starts = p == 0 || (*text)[p - 1] == '\n' || (*text)[p - 1] == ' ' ||
                          (*text)[p - 1] == '\t' || (*text)[p - 1] == '"';
            char after = p + pat.size() < text->size() ? (*text)[p + pat.size()] : '\n';
            if (starts && (word_end(*text, p + pat.size()) || after == '.')) {
              found[k] = rel + " (as " + mod + ")";
              --open;
            }
          }
        }
        if (!found[k].empty()) break;
      }
    }
  }
  return found;
}

// Of the submodule `paths`, those the project installs as packages (a compiled extension is built
// where it is installed): named on a requirement or environment line (`- submodules/diff-raster`
// under `pip:`), or on a line of a build file, script or install text that runs pip or setup.py
// (`pip install submodules/x`, README's "cd x then `pip install .`"). A submodule imported only as
// source (`sys.path.insert(0, "tacotron2")`) is Python the checkout lacks, not a build.
std::vector<bool> InstalledSubmodules(const std::string& root,
                                      const std::vector<std::string>& paths) {
  std::vector<bool> installed(paths.size(), false);
  std::error_code ec;
  std::size_t seen = 0;
  for (fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec),
       end;
       !ec && it != end && seen < 20000; it.increment(ec), ++seen) {
    const std::string name = it->path().filename().string();
    const std::string rel = it->path().lexically_relative(root).generic_string();
    if (it->is_directory(ec)) {
      if (name.empty() || name[0] == '.' || name == "node_modules" || name == "__pycache__" ||
          std::find(paths.begin(), paths.end(), rel) != paths.end())
        it.disable_recursion_pending();
      continue;
    }
    const std::string lower = Lower(name);
    const bool listing = StartsWith(lower, "requirements") || StartsWith(lower, "environment") ||
                         EndsWith(lower, ".yml") || EndsWith(lower, ".yaml");
    const bool runs = StartsWith(lower, "dockerfile") || EndsWith(lower, ".sh") ||
                      lower == "setup.py" || lower == "makefile" || EndsWith(lower, ".md") ||
                      EndsWith(lower, ".rst") || lower == "install" || EndsWith(lower, ".txt");
    if (!listing && !runs) continue;
    auto text = ReadFile(it->path(), std::uint64_t{1} << 20);
    if (!text) continue;
    ForEachLine(*text, [&](std::uint32_t, std::string_view line) {
      const bool installs = listing || line.find("pip") != std::string_view::npos ||
                            line.find("setup.py") != std::string_view::npos;
      if (!installs) return;
      for (std::size_t k = 0; k < paths.size(); ++k) {
        if (installed[k]) continue;
        const std::size_t at = line.find(paths[k]);
        const std::size_t after = at + paths[k].size();
        installed[k] =
            at != std::string_view::npos &&
            (at == 0 || !(std::isalnum(static_cast<unsigned char>(line[at - 1])) ||
                          line[at - 1] == '_' || line[at - 1] == '-')) &&
            (after >= line.size() || !(std::isalnum(static_cast<unsigned char>(line[after])) ||
                                       line[after] == '_' || line[after] == '-'));
      }
    });
  }
  return installed;
}

}  // namespace

void ScanGitmodules(std::string_view text, FindingSink& sink) {
  struct Module {
    std::uint32_t line = 0, col = 0;
    std::string name, path;
  };
  std::vector<Module> mods;
  ForEachLine(text, [&](std::uint32_t n, std::string_view raw) {
    std::string_view t = Trim(raw);
    if (t.empty() || t[0] == '#' || t[0] == ';') return;
    if (t[0] == '[') {
      Module m{n, Col(raw, t), {}, {}};
      // [submodule "name"]
      std::size_t q = t.find('"');
      std::size_t e = q == std::string_view::npos ? q : t.find('"', q + 1);
      if (StartsWith(t, "[submodule") && e != std::string_view::npos)
        m.name = std::string(t.substr(q + 1, e - q - 1));
      if (!m.name.empty()) mods.push_back(std::move(m));
      return;
    }
    if (mods.empty()) return;
    std::size_t eq = t.find('=');
    if (eq == std::string_view::npos) return;
    if (Trim(t.substr(0, eq)) == "path") mods.back().path = std::string(Trim(t.substr(eq + 1)));
  });
  std::string root = sink.Root();
  std::vector<std::string> paths;
  for (auto& m : mods) {
    std::string path = m.path.empty() ? m.name : m.path;
    while (!path.empty() && path.back() == '/') path.pop_back();
    m.path = path;
    if (!path.empty()) paths.push_back(path);
  }
  std::vector<FolderEvidence> evs;
  std::vector<std::vector<std::string>> names_of;
  std::vector<std::vector<std::string>> unseen_names;  // Of the submodules not checked out.
  for (auto& m : mods) {
    evs.push_back(InspectFolder(root, m.path));
    std::vector<std::string> names = {ImportName(m.path)};
    for (const auto& nm : evs.back().names)
      if (std::find(names.begin(), names.end(), nm) == names.end()) names.push_back(nm);
    names_of.push_back(names);
    bool unseen = !evs.back().exists || evs.back().empty;
    unseen_names.push_back(unseen && !root.empty() && !m.path.empty() ? names
                                                                      : std::vector<std::string>{});
  }
  // Nothing to judge an empty submodule by but whether the project imports it: an evaluation
  // harness or a dataset tool that nothing imports is not a dependency of the model.
  bool any_unseen = std::any_of(unseen_names.begin(), unseen_names.end(),
                                [](const auto& v) { return !v.empty(); });
  std::vector<std::string> importers =
      any_unseen ? FindImporters(root, unseen_names, paths) : std::vector<std::string>(mods.size());
  std::vector<std::string> mod_paths;  // One per module, as `mods` (paths skips empty ones).
  mod_paths.reserve(mods.size());
  for (const auto& m : mods) mod_paths.push_back(m.path);
  const std::vector<bool> installed =
      any_unseen ? InstalledSubmodules(root, mod_paths) : std::vector<bool>(mods.size(), true);
  for (std::size_t k = 0; k < mods.size(); ++k) {
    const Module& m = mods[k];
    const std::string& path = m.path;
    if (path.empty()) continue;
    const FolderEvidence& ev = evs[k];
    const std::vector<std::string>& names = names_of[k];
    std::string why;
    if (root.empty()) {
      why = "not inspected";
    } else if (!ev.exists || ev.empty) {
      const std::string& importer = importers[k];
      if (importer.empty() || !installed[k]) continue;
      why =
          "its folder is empty in this checkout (clone with --recursive to scan it); installed as "
          "a package and imported by " +
          importer;
    } else if (ev.cuda_extension) {
      why = "its setup.py builds a CUDAExtension";
    } else if (ev.cuda_sources) {
      why = "it has .cu sources";
    } else {
      continue;  // Checked out with no CUDA code: its files are scanned like the project's.
    }
    sink.Add("DT321", m.line, m.col, path + " (" + why + ")", false);
    for (const auto& nm : names) sink.DeclareCudaModule(nm, m.line, "git submodule " + path);
  }
}

void UserTextRules(const Registry& reg, std::string_view text, const std::string& rel,
                   std::vector<Finding>& out, std::optional<std::int64_t> cell) {
  if (reg.user_rules().empty()) return;
  FindingSink sink(reg, rel, text, out, cell);
  for (const auto& u : reg.user_rules()) {
    if (u.text.empty()) continue;
    if (!u.files.empty() && !GlobMatch(u.files, rel)) continue;
    ForEachLine(text, [&](std::uint32_t n, std::string_view line) {
      std::string_view t = Trim(line);
      if (StartsWith(t, "#") || StartsWith(t, "//")) return;
      auto p = line.find(u.text);
      if (p != std::string_view::npos)
        sink.Add(u.rule.code, n, static_cast<std::uint32_t>(p + 1), u.text, false);
    });
  }
}

void YamlFlags(std::string_view text, std::vector<std::string>& off, std::vector<std::string>& on) {
  // A key with no value whose next line is not its block (`distributed_port:` then a key at the
  // same indent) is null: Hydra's way to leave an option unset.
  std::string_view pending;
  std::size_t pending_indent = 0;
  ForEachLine(text, [&](std::uint32_t, std::string_view raw) {
    if (raw.size() > 4096) return;
    const YamlLine y = ReadYamlLine(raw);
    if (y.content.empty()) return;
    if (!pending.empty() && (y.indent < pending_indent || (y.indent == pending_indent && !y.item)))
      off.emplace_back(pending);
    pending = {};
    if (y.key.empty()) return;
    if (y.value.empty()) {
      if (y.content.back() == ':') {  // Not `key: # comment` or a quoted empty string.
        pending = y.key;
        pending_indent = y.indent;
      }
      return;
    }
    const std::string v = Lower(y.value);
    bool is_on;
    if (v == "false" || v == "no" || v == "off" || v == "null" || v == "~" || v == "0") {
      is_on = false;
    } else if (v == "true" || v == "yes" || v == "on" || IsInteger(y.value, false)) {
      is_on = true;
    } else {
      return;
    }
    (is_on ? on : off).emplace_back(y.key);
  });
  if (!pending.empty()) off.emplace_back(pending);
  for (auto* list : {&off, &on}) {
    std::sort(list->begin(), list->end());
    list->erase(std::unique(list->begin(), list->end()), list->end());
  }
}

}  // namespace dt::scan
