#include "scan/scan.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "app/paths.h"
#include "scan/admission.h"
#include "scan/call_paths.h"
#include "scan/cpp_scanner.h"
#include "scan/entries.h"
#include "scan/env_scanners.h"
#include "scan/import_graph.h"
#include "scan/notebook_scanner.h"
#include "scan/prefilter.h"
#include "scan/python_lexer.h"
#include "scan/python_scanner.h"
#include "scan/registry.h"
#include "scan/walker.h"
#include "util/fs.h"
#include "util/parallel.h"
#include "util/strings.h"
#include "util/toml_fields.h"

namespace dt::scan {

namespace {

namespace fs = std::filesystem;

// A finding found, after its file was scanned, to run only behind a check: guarded code runs
// unchanged where the check fails (the sink's GuardLines, for passes over the whole project).
void MarkGuarded(Finding& f) {
  f.guarded = true;
  f.severity = Severity::kPortable;
}

struct Config {
  std::vector<std::string> exclude;
  std::vector<std::string> ignore;
  std::vector<std::string> select;
  std::vector<std::string> entry;
  std::vector<std::string> scripts;  // [project.scripts] targets as module paths.
  std::string rules;
};

Result<Config> ReadConfig(const fs::path& root) {
  Config cfg;
  fs::path file = root / "pyproject.toml";
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return cfg;
  auto text = ReadFile(file, std::uint64_t{4} << 20);
  if (!text) return text.take_error();
  toml::table tbl;
  try {
    tbl = toml::parse(*text, file.string());
  } catch (const toml::parse_error& e) {
    return MakeError(ErrorCode::kInput, std::string(e.description()), file.string(),
                     e.source().begin.line, e.source().begin.column);
  }
  if (const auto* tool = tbl["tool"]["dualtrack"].as_table()) {
    for (const auto& [key, node] : *tool) {
      std::string_view k = key.str();
      // Every key of [tool.dualtrack], whichever command reads it (run and experiments: audit's
      // experiments.cc). A misspelt key would otherwise be ignored without a word.
      static constexpr std::array<std::string_view, 11> kKeys = {
          "entry", "exclude",   "experiments",        "ignore", "rules", "run", "select", "macs",
          "steps", "max_hours", "mac_memory_fraction"};
      if (std::find(kKeys.begin(), kKeys.end(), k) == kKeys.end()) {
        return MakeError(ErrorCode::kInput,
                         UnknownKeyMessage("[tool.dualtrack]", k, {kKeys.begin(), kKeys.end()}),
                         file.string(), key.source().begin.line, key.source().begin.column);
      }
      // audit's and report's (verdict/experiments.cc).
      if (k == "run" || k == "experiments" || k == "macs" || k == "steps" || k == "max_hours" ||
          k == "mac_memory_fraction") {
        continue;
      }
      auto values = TomlStrings(node, "[tool.dualtrack] " + std::string(k), file.string());
      if (!values) return values.take_error();
      if (k == "exclude")
        cfg.exclude = std::move(*values);
      else if (k == "ignore")
        cfg.ignore = std::move(*values);
      else if (k == "select")
        cfg.select = std::move(*values);
      else if (k == "entry")
        cfg.entry = std::move(*values);
      else if (k == "rules") {
        if (values->size() != 1)
          return MakeError(ErrorCode::kInput, "[tool.dualtrack] rules must be one file name",
                           file.string(), node.source().begin.line);
        cfg.rules = (*values)[0];
      }
    }
  }
  if (const auto* scripts = tbl["project"]["scripts"].as_table()) {
    for (const auto& [key, node] : *scripts) {
      if (auto s = node.value<std::string>()) {
        std::string target = s->substr(0, s->find(':'));
        for (char& c : target)
          if (c == '.') c = '/';
        cfg.scripts.push_back(target);
      }
    }
  }
  return cfg;
}

std::vector<std::string> CppNeedles(const Registry& reg) {
  std::vector<std::string> n = {
      "cuda",         "cublas",   "cudnn",    "nccl",     "cufft",      "curand",     "cusparse",
      "cusolver",     "nvrtc",    "cutensor", "nvtx",     "__global__", "__device__", "__shared__",
      "__constant__", "<<<",      "thrust/",  "cub/",     "cutlass/",   "cute/",      "cumem",
      "cuctx",        "culaunch", "cumodule", "custream", "cudevice",
      "check_input",     // A wrapper whose CUDA check is in a header.
      "TORCH_LIBRARY"};  // An op library Python reaches as torch.ops.
  for (const auto& u : reg.user_rules())
    if (!u.text.empty()) n.push_back(u.text);
  return n;
}

struct FileResult {
  std::vector<Finding> findings;
  std::vector<PyImport> imports;
  std::vector<CudaModule> cuda_modules;  // Declared by this file (FindingSink::DeclareCudaModule).
  // Its module-level names that reach CUDA-only code (true: a compiled extension, false: kernels).
  std::vector<std::pair<std::string, bool>> cuda_symbols;
  std::vector<std::string> reexports;      // Of cuda_symbols, those re-exported (CudaContext).
  std::vector<std::string> off_flags;      // Of its options (PySettings::OffFlags).
  std::vector<std::string> on_flags;       // PySettings::OnFlags.
  std::vector<std::string> launch_flags;   // PyModel::LaunchFlags.
  std::vector<std::string> requiring;      // PyScanResult::requiring.
  std::vector<std::string> calls;          // PyScanResult::calls.
  std::vector<std::string> sys_path;       // PyScanResult::sys_path, placed in the project.
  std::vector<std::string> jit_calls;      // PyScanResult::jit_calls.
  std::vector<std::string> jit_unguarded;  // PyScanResult::jit_unguarded.
  std::vector<std::string> jit_builders;   // PyScanResult::jit_builders.
  bool tensor_dispatch = false;            // PyScanResult::tensor_dispatch.
  bool extension_used_at_import = false;   // PyScanResult::extension_used_at_import.
  bool every_run_process_group = false;    // PyScanResult::every_run_process_group.
  bool reference_impl = false;             // PyScanResult::reference_impl.
  std::vector<std::string> flag_reads;     // PyModel::FlagReads.
  std::vector<std::pair<std::string, bool>> extension_sources;  // Built sources, guarded or not.
  FileKind kind = FileKind::kPython;  // The item's kind as scanned (setup.py may be a module).
  std::vector<SuppressionProblem> suppressions;
  // Notebooks: where each line of the joined code cells comes from. Their findings keep lines of
  // the joined source (what the call paths and reruns see) until Collect places them in cells.
  std::vector<NotebookLine> notebook_lines;
  // The op namespaces it spells (`torch.ops.ns`): callers of an op library need no import.
  std::vector<std::string> op_namespaces;
  bool has_main = false;
  bool scanned = false;
  std::size_t bytes = 0;  // Its size as read.
  std::string skip_reason;
};

struct Context {
  const Registry& reg;
  const std::unordered_set<std::string>* own_tops;
  FileAdmission python;  // Looks for "__main__" too when python_main.
  bool python_main;
  Prefilter cpp;
  std::uint64_t max_file_size;
  Prefilter op_refs{std::vector<std::string>{"torch.ops."}};
  Prefilter import_word{std::vector<std::string>{"import"}};  // ImportsOnly's one search.
  // Bit c: some file holds the text of the registry's project condition c (PythonApi::only_with).
  // Shared by the scanning threads: once one file meets a condition, no other is searched for it.
  mutable std::atomic<std::uint32_t> conditions_met{0};
};

// The namespaces of `torch.ops.<ns>` in a Python file, recorded while its text is in memory:
// knowing them later (when the project turns out to register an op library) costs no second read.
void RecordOpNamespaces(const Prefilter& op_refs, std::string_view text,
                        std::vector<std::string>& out) {
  op_refs.ForEachMatch(text, [&](std::size_t start, std::size_t end) {
    if (text.compare(start, end - start, "torch.ops.") != 0) return false;
    std::size_t e = end;
    while (e < text.size() && (std::isalnum(static_cast<unsigned char>(text[e])) || text[e] == '_'))
      ++e;
    std::string ns(text.substr(start, e - start));
    if (e > end && std::find(out.begin(), out.end(), ns) == out.end()) out.push_back(std::move(ns));
    return false;
  });
}

// string_view::find stops at every first byte, and the C library's memmem goes a byte at a time.
std::size_t Find(std::string_view text, std::string_view needle, std::size_t from = 0) {
  if (from >= text.size()) return std::string_view::npos;
  return FindLiteral(text, needle, from);
}

bool Contains(std::string_view text, std::string_view needle) {
  return Find(text, needle) != std::string_view::npos;
}

// Source is nearly always ASCII: eight bytes at a time settle it before the full UTF-8 check.
bool IsAscii(std::string_view text) {
  std::size_t i = 0;
  std::uint64_t high = 0;
  for (; i + 8 <= text.size(); i += 8) {
    std::uint64_t word;
    std::memcpy(&word, text.data() + i, 8);
    high |= word;
  }
  for (; i < text.size(); ++i) high |= static_cast<unsigned char>(text[i]);
  return (high & 0x8080808080808080ULL) == 0;
}

// Whether a name token of code (not of a string or a comment) starts at `at` in `lexed`: a code
// generator's template (`Template("""... if __name__ == "__main__": ...""")`) holds lines that look
// like code.
bool IsCodeAt(const Lexed& lexed, std::size_t at) {
  auto it = std::lower_bound(lexed.tokens.begin(), lexed.tokens.end(), at,
                             [](const Token& t, std::size_t off) { return t.offset < off; });
  return it != lexed.tokens.end() && it->offset == at && it->kind() == TokKind::kName;
}

// The project folders a file's sys.path insertions name, read from the file's own folder
// (`../utils` from tools/train.py is `utils`; "." is the root); one that leaves the project is
// dropped.
std::vector<std::string> ProjectSysPath(std::string_view rel,
                                        const std::vector<std::string>& dirs) {
  std::vector<std::string> out;
  const std::size_t slash = rel.rfind('/');
  const std::string_view here = slash == std::string_view::npos ? "" : rel.substr(0, slash);
  for (const std::string& d : dirs) {
    std::vector<std::string_view> parts;
    bool outside = false;
    for (std::string_view s : {here, std::string_view(d)}) {
      for (std::size_t from = 0; from < s.size() && !outside;) {
        const std::size_t end = std::min(s.find('/', from), s.size());
        const std::string_view part = s.substr(from, end - from);
        if (part == "..") {
          outside = parts.empty();
          if (!outside) parts.pop_back();
        } else if (!part.empty() && part != ".") {
          parts.push_back(part);
        }
        from = end + 1;
      }
    }
    if (outside) continue;
    std::string joined;
    for (std::string_view p : parts) {
      if (!joined.empty()) joined += '/';
      joined += p;
    }
    out.push_back(joined.empty() ? "." : joined);
  }
  return out;
}

// Python files keep their imports even when the prefilter skipped them (reachability needs
// them): only the statements that start with `import` / `from` (with their bracketed and
// backslash continuations) and the `__main__` test are lexed, which is far cheaper than lexing the
// whole file. They are found from one search for `import`, which every import statement holds on
// its first line or on a line that a backslash continues (a search for `from` as well would meet
// every sentence of the docstrings). The test is not looked for when the caller's search found no
// "__main__" (`may_have_main` false).
void ImportsOnly(const Context& ctx, std::string_view text, const WalkItem& item, FileResult& r,
                 bool may_have_main) {
  thread_local std::vector<std::uint32_t> at_import;
  at_import.clear();
  ctx.import_word.ForEachMatch(text, [&](std::size_t start, std::size_t) {
    if (text.compare(start, 6, "import") == 0)
      at_import.push_back(static_cast<std::uint32_t>(start));
    return false;
  });
  // `import` statements first, then `from` ones, each in file order.
  std::string picked, from_lines;
  auto line_start = [&](std::size_t pos) {
    std::size_t b = text.rfind('\n', pos);
    return b == std::string_view::npos ? 0 : b + 1;
  };
  // Appends the statement that starts at `pos` to `out`; returns where it ends.
  auto take = [&](std::size_t pos, std::string& out) {
    int open = 0;
    bool continued = false;  // A backslash continuation.
    std::size_t e = pos;
    do {
      std::size_t nl = text.find('\n', e);
      std::size_t end = nl == std::string_view::npos ? text.size() : nl;
      std::string_view line = text.substr(e, end - e);
      for (char c : line) open += c == '(' ? 1 : c == ')' ? -1 : 0;
      std::string_view t = Trim(line);
      continued = !t.empty() && t.back() == '\\';
      out.append(t);
      out.push_back('\n');
      e = nl == std::string_view::npos ? text.size() : nl + 1;
    } while ((open > 0 || continued) && e < text.size());
    return e;
  };
  std::size_t import_end = 0, from_end = 0;  // Where the last statement taken of each kind ends.
  for (const std::uint32_t pos : at_import) {
    std::size_t b = line_start(pos);
    std::string_view before = Trim(text.substr(b, pos - b));
    if (before.empty() && pos >= import_end && pos + 6 < text.size() && text[pos + 6] == ' ')
      import_end = take(pos, picked);
    // `from x import y`, or `from x \` with `import y` on the line it continues (which the
    // loop above also took as an import statement of its own).
    while (before.empty() && b >= 2) {
      const std::size_t prev = line_start(b - 2);  // b - 1 is the newline that ends it.
      std::string_view line = Trim(text.substr(prev, b - 1 - prev));
      if (line.empty() || line.back() != '\\') break;
      b = prev;
      before = Trim(text.substr(b, pos - b));
    }
    if (!StartsWith(before, "from ")) continue;
    const std::size_t from = static_cast<std::size_t>(before.data() - text.data());
    if (from >= from_end) from_end = take(from, from_lines);
  }
  picked.append(from_lines);
  // sys.path insertions: the folders they add resolve the imports of the whole run. One inside a
  // function (`def add_path(path): sys.path.insert(0, path)`) is read with its callers: the whole
  // file then (SysPathDirs), a rare case.
  bool nested_sys_path = false;
  for (std::size_t p = Find(text, "sys.path."); p != std::string_view::npos;
       p = Find(text, "sys.path.", p + 1))
    if (Trim(text.substr(line_start(p), p - line_start(p))).empty()) {
      nested_sys_path |= p != line_start(p);
      take(p, picked);
    }
  if (nested_sys_path) picked.assign(text);
  // The text is lexed once, for the first line that looks like a module test: only the few files
  // with one pay for it, and a file full of such lines in strings pays once.
  thread_local Lexed lexed;
  bool lexed_now = false;
  for (std::size_t p = may_have_main ? Find(text, "__name__") : std::string_view::npos;
       p != std::string_view::npos; p = Find(text, "__name__", p + 1)) {
    std::size_t b = text.rfind('\n', p);
    b = b == std::string_view::npos ? 0 : b + 1;
    std::size_t e = text.find('\n', p);
    if (e == std::string_view::npos) e = text.size();
    std::string_view line = Trim(text.substr(b, e - b));
    if (!StartsWith(line, "if __name__") || line.find("__main__") == std::string_view::npos)
      continue;
    if (!lexed_now) LexPython(text, lexed);
    lexed_now = true;
    if (IsCodeAt(lexed, static_cast<std::size_t>(line.data() - text.data()))) {
      picked.append(line);
      picked.append(" pass\n");
      break;
    }
  }
  if (picked.empty() || !IsValidUtf8(picked)) return;
  std::vector<Finding> none;
  FindingSink sink(ctx.reg, item.rel, picked, none);
  PyScanOptions opt;
  opt.imports_only = true;
  auto py = ScanPython(picked, sink, opt);
  r.imports = std::move(py.imports);
  r.sys_path = ProjectSysPath(item.rel, py.sys_path);
  r.has_main = py.has_main;
}

// The folder of the last file a thread opened, held open: files come in walk order, several from
// each folder, and opening one by its name inside the folder spares the kernel the lookup of every
// folder above it (a tenth of the scan's system time went to those lookups).
class FolderCache {
 public:
  FolderCache() = default;
  FolderCache(const FolderCache&) = delete;
  FolderCache& operator=(const FolderCache&) = delete;
  ~FolderCache() { Close(); }

  // A descriptor of `dir`, or -1 when it cannot be opened (the caller then opens by full path).
  int Get(std::string_view dir) {
    if (known_ && dir == dir_) return fd_;
    Close();
    dir_.assign(dir);
    known_ = true;
#ifdef O_PATH
    fd_ = ::open(dir_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);  // Needs no read permission.
#else
    fd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
#endif
    return fd_;
  }

 private:
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    known_ = false;
  }
  std::string dir_;
  int fd_ = -1;
  bool known_ = false;
};

// Opens a walked file (see OpenRegularFile), by name inside its folder where it can.
Result<UniqueFd> OpenWalked(const std::string& abs, struct stat* st) {
  thread_local FolderCache folder;
  const auto slash = abs.rfind('/');
  if (slash != std::string::npos && slash > 0 && slash + 1 < abs.size()) {
    const int dir = folder.Get(std::string_view(abs).substr(0, slash));
    if (dir >= 0) return OpenRegularFileAt(dir, abs.c_str() + slash + 1, abs.c_str(), st);
  }
  return OpenRegularFile(abs.c_str(), st);
}

// Small files are read into a per-thread buffer (cheaper than a mapping); large ones are mapped.
// The open's fstat (which rejects FIFOs and devices) gives the size, so a small file takes one
// read of exactly its size, with no second read to meet the end of the file, and a large one is
// mapped through the same descriptor. `max_size` (0: none) is checked here. nullopt with `skip`
// set when the file is not read.
std::optional<std::string_view> Load(const WalkItem& item, std::uint64_t max_size,
                                     MappedFile& mapped, std::string& skip) {
  // From 64 KiB a mapping (a page fault maps 16 pages) costs less than read()'s copy: measured
  // on the scan benchmark, 1 MiB and 16 KiB thresholds both took more system time.
  constexpr std::uint64_t kMapFrom = 64 << 10;
  // A file whose size says 0 may still hold bytes (some virtual file systems): read in steps.
  constexpr std::size_t kStep = 16 << 10;
  thread_local std::string buffer;
  struct stat st {};
  // Never blocks: a FIFO or device (named, or swapped in since the walk) is skipped with a note.
  auto opened = OpenWalked(item.abs, &st);
  if (!opened) {
    skip = "unreadable: " + opened.error().message;
    return std::nullopt;
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (max_size > 0 && size > max_size) {
    skip = "larger than --max-file-size (" + std::to_string(size) + " bytes)";
    return std::nullopt;
  }
  if (size >= kMapFrom) {
    auto m = MappedFile::FromFd(std::move(*opened), st, item.abs);
    if (!m) {
      skip = "unreadable: " + m.error().message;
      return std::nullopt;
    }
    mapped = std::move(*m);
    return mapped.view();
  }
  UniqueFd fd = std::move(*opened);
  // The buffer only grows: resizing it per file would zero the bytes each larger file reads.
  auto reserve = [&](std::size_t bytes) {
    if (buffer.size() < bytes) buffer.resize(bytes);
  };
  // Reads until end of file or until `limit` bytes are in `buffer`; the byte count or -errno.
  auto fill = [&](std::size_t got, std::size_t limit) -> std::int64_t {
    while (got < limit) {
      ssize_t n = ::read(fd.get(), buffer.data() + got, limit - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return -errno;
      if (n == 0) break;
      got += static_cast<std::size_t>(n);
    }
    return static_cast<std::int64_t>(got);
  };
  // The file as its fstat found it: bytes appended since are not read (a mapping ends there too).
  std::size_t limit = size > 0 ? static_cast<std::size_t>(size) : kStep;
  std::int64_t n = 0;
  for (;;) {
    reserve(limit);
    n = fill(static_cast<std::size_t>(n), limit);
    if (n < 0) {
      skip = "unreadable: " + ErrnoMessage(static_cast<int>(-n));
      return std::nullopt;
    }
    if (size > 0 || static_cast<std::size_t>(n) < limit) break;
    if (max_size > 0 && static_cast<std::uint64_t>(n) > max_size) {
      skip = "larger than --max-file-size (" + std::to_string(n) + " bytes)";
      return std::nullopt;
    }
    limit *= 2;
  }
  if (max_size > 0 && static_cast<std::uint64_t>(n) > max_size) {
    skip = "larger than --max-file-size (" + std::to_string(n) + " bytes)";
    return std::nullopt;
  }
  return std::string_view(buffer.data(), static_cast<std::size_t>(n));
}

// "pkg.sub" for "pkg/sub/mod.py" and for "pkg/sub/__init__.py": relative imports resolve from it.
std::string PackageOf(std::string_view rel) {
  auto slash = rel.rfind('/');
  if (slash == std::string_view::npos) return {};
  std::string pkg(rel.substr(0, slash));
  for (char& c : pkg)
    if (c == '/') c = '.';
  return pkg;
}

// The package a relative import starts from: the folders above `rel` that hold an __init__.py,
// up to the first that does not (a vendored package in submodules/x/pkg/ is "pkg", as Python
// sees it once installed). Without an __init__.py beside it, every folder counts (namespace
// packages and script folders).
std::string PackageIn(std::string_view rel, const std::unordered_set<std::string>& init_dirs) {
  auto slash = rel.rfind('/');
  if (slash == std::string_view::npos) return {};
  std::string dir(rel.substr(0, slash));
  if (!init_dirs.count(dir)) return PackageOf(rel);
  std::size_t top = 0;
  for (auto up = dir.rfind('/'); up != std::string::npos; up = dir.rfind('/', up - 1)) {
    if (!init_dirs.count(dir.substr(0, up))) {
      top = up + 1;
      break;
    }
    if (up == 0) break;
  }
  std::string pkg = dir.substr(top);
  for (char& c : pkg)
    if (c == '/') c = '.';
  return pkg;
}

// Every dotted name the module at `rel` may be imported as: "a.b.c", "b.c", "c" (a script's
// folder, src/ and sys.path insertions make suffixes common in research code).
std::vector<std::string> ModuleNames(std::string_view rel) {
  std::string m(rel);
  if (EndsWith(m, ".ipynb")) return {};  // A notebook is run, never imported.
  if (EndsWith(m, "/__init__.py"))
    m.resize(m.size() - 12);
  else if (EndsWith(m, ".py"))
    m.resize(m.size() - 3);
  for (char& c : m)
    if (c == '/') c = '.';
  std::vector<std::string> out;
  for (std::size_t p = 0; p != std::string::npos;) {
    out.push_back(m.substr(p));
    auto dot = m.find('.', p);
    p = dot == std::string::npos ? dot : dot + 1;
  }
  return out;
}

// Editors and old Macs save with CR alone: Python, the line-based scanners and the snippets all
// count '\n', so a lone CR becomes one (same length: offsets and columns stay right).
std::string_view NormalizeLineEnds(std::string_view text) {
  const void* cr = std::memchr(text.data(), '\r', text.size());
  if (cr == nullptr) return text;
  auto at = static_cast<std::size_t>(static_cast<const char*>(cr) - text.data());
  bool lone = false;
  for (std::size_t i = at; i < text.size() && !lone; ++i)
    lone = text[i] == '\r' && (i + 1 == text.size() || text[i + 1] != '\n');
  if (!lone) return text;
  thread_local std::string copy;
  copy.assign(text);
  for (std::size_t i = at; i < copy.size(); ++i)
    if (copy[i] == '\r' && (i + 1 == copy.size() || copy[i + 1] != '\n')) copy[i] = '\n';
  return copy;
}

// Whether a loaded file can be scanned at all (a Python source the lexer can hold, not binary);
// otherwise says why in r.
bool Scannable(std::string_view text, FileResult& r) {
  if ((r.kind == FileKind::kPython || r.kind == FileKind::kNotebook ||
       r.kind == FileKind::kSetupPy) &&
      text.size() > kMaxLexBytes) {
    r.scanned = false;
    r.skip_reason = "too large for the Python lexer (over 1 GiB)";
    return false;
  }
  if (std::memchr(text.data(), 0, std::min<std::size_t>(text.size(), 8192)) != nullptr) {
    r.scanned = false;
    r.skip_reason = "binary file";
    return false;
  }
  return true;
}

// Whether the file holds a trigger word of its kind (files without one need no analysis); sets
// has_main when "__main__" occurs in a Python file that holds none.
bool HasTrigger(const Context& ctx, const WalkItem& item, std::string_view text,
                const FileResult& r, bool& has_main) {
  has_main = false;
  if (r.kind == FileKind::kPython || r.kind == FileKind::kNotebook) {
    const bool admitted = ctx.python.Admits(text, has_main);
    // The search looked for "__main__" too unless a trigger word starts with "__".
    if (!admitted && !ctx.python_main && r.kind == FileKind::kPython)
      has_main = Contains(text, "__main__");
    return admitted;
  }
  // A .cu file is CUDA source whatever it names (reported once when nothing else is).
  if (r.kind == FileKind::kCpp && !item.rel.ends_with(".cu") && !item.rel.ends_with(".cuh"))
    return ctx.cpp.Matches(text);
  return true;
}

// A notebook's code cells, joined, scanned as one Python module (not a package's: a notebook
// runs with its own folder on sys.path, like a script).
void ScanNotebookFile(const Context& ctx, const WalkItem& item, std::string_view text,
                      FileResult& r) {
  auto nb = JoinNotebook(text, item.rel);
  if (!nb) {
    r.scanned = false;
    r.skip_reason = nb.error().message;
    return;
  }
  FindingSink sink(ctx.reg, item.rel, nb->python, r.findings);
  sink.set_path(item.abs);
  PyScanOptions opt;
  opt.own_tops = ctx.own_tops;
  auto py = ScanPython(nb->python, sink, opt);
  r.imports = std::move(py.imports);
  r.cuda_modules = std::move(sink.cuda_modules());
  sink.CheckSuppressions(r.suppressions);
  UserTextRules(ctx.reg, nb->python, item.rel, r.findings);
  r.notebook_lines = std::move(nb->lines);
}

// Runs the scanner of the file's kind over its text.
void ScanByKind(const Context& ctx, const WalkItem& item, std::string_view text, FileResult& r) {
  FindingSink sink(ctx.reg, item.rel, text, r.findings);
  sink.set_path(item.abs);
  switch (r.kind) {
    case FileKind::kPython:
    case FileKind::kSetupPy: {
      PyScanOptions opt;
      opt.setup_py = r.kind == FileKind::kSetupPy;
      opt.package = PackageOf(item.rel);
      opt.package_init = item.rel.ends_with("__init__.py");
      opt.own_tops = ctx.own_tops;
      auto py = ScanPython(text, sink, opt);
      r.imports = std::move(py.imports);
      r.has_main = py.has_main;
      r.cuda_symbols = std::move(py.cuda_symbols);
      r.off_flags = std::move(py.off_flags);
      r.on_flags = std::move(py.on_flags);
      r.launch_flags = std::move(py.launch_flags);
      r.requiring = std::move(py.requiring);
      r.calls = std::move(py.calls);
      r.sys_path = ProjectSysPath(item.rel, py.sys_path);
      r.jit_calls = std::move(py.jit_calls);
      r.jit_unguarded = std::move(py.jit_unguarded);
      r.jit_builders = std::move(py.jit_builders);
      r.tensor_dispatch = py.tensor_dispatch;
      r.extension_used_at_import = py.extension_used_at_import;
      r.every_run_process_group = py.every_run_process_group;
      r.reference_impl = py.reference_impl;
      r.flag_reads = std::move(py.flag_reads);
      r.extension_sources = std::move(py.extension_sources);
      break;
    }
    case FileKind::kNotebook:
      return ScanNotebookFile(ctx, item, text, r);
    case FileKind::kCpp:
      ScanCpp(text, sink);
      break;
    case FileKind::kCMake:
      ScanCMake(text, sink);
      break;
    case FileKind::kRequirements:
      ScanRequirements(text, sink);
      break;
    case FileKind::kConda:
      ScanCondaEnv(text, sink);
      break;
    case FileKind::kPyproject:
      ScanPyproject(text, sink);
      break;
    case FileKind::kSetupCfg:
      ScanSetupCfg(text, sink);
      break;
    case FileKind::kDocker:
      ScanDockerfile(text, sink);
      break;
    case FileKind::kShell:
      ScanShell(text, sink);
      break;
    case FileKind::kCompose:
      ScanCompose(text, sink);
      break;
    case FileKind::kConfigYaml:
      ScanConfigYaml(text, sink);
      YamlFlags(text, r.off_flags, r.on_flags);
      break;
    case FileKind::kGitmodules:
      ScanGitmodules(text, sink);
      break;
  }
  r.cuda_modules = std::move(sink.cuda_modules());
  sink.CheckSuppressions(r.suppressions);
  UserTextRules(ctx.reg, text, item.rel, r.findings);
}

void ScanOne(const Context& ctx, const WalkItem& item, FileResult& r) {
  r.kind = item.kind;
  MappedFile mapped;
  // A mapped file truncated while it was scanned read as zeros past its new end (util's SIGBUS
  // guard): what was found in it is dropped and the file is listed as skipped.
  struct DropIfChanged {
    const MappedFile& mapped;
    FileResult& r;
    ~DropIfChanged() {
      if (mapped.data() == nullptr || mapped.CheckUnchanged()) return;
      r = FileResult{};
      r.skip_reason = "changed while it was read (rewritten during the scan)";
    }
  } drop_if_changed{mapped, r};
  auto loaded = Load(item, ctx.max_file_size, mapped, r.skip_reason);
  if (!loaded) return;
  std::string_view text = *loaded;
  r.scanned = true;
  r.bytes = text.size();
  if (text.empty()) return;
  // Only a build script that calls setuptools' (or distutils') setup() is one; a module that
  // happens to be called setup.py (pkg/setup.py with helpers) is code like any other.
  if (r.kind == FileKind::kSetupPy &&
      (!Contains(text, "setup(") ||
       (!Contains(text, "setuptools") && !Contains(text, "distutils"))))
    r.kind = FileKind::kPython;
  if (!Scannable(text, r)) return;
  if (r.kind == FileKind::kPython || r.kind == FileKind::kSetupPy) {
    RecordOpNamespaces(ctx.op_refs, text, r.op_namespaces);
    // A project condition (`torch.save(`) counts wherever it is written, analysed file or not.
    const auto& conditions = ctx.reg.ProjectConditions();
    for (std::size_t c = 0; c < conditions.size(); ++c) {
      const std::uint32_t bit = std::uint32_t{1} << c;
      if ((ctx.conditions_met.load(std::memory_order_relaxed) & bit) == 0 &&
          Contains(text, conditions[c].only_with))
        ctx.conditions_met.fetch_or(bit, std::memory_order_relaxed);
    }
  }
  bool has_main = false;  // Whether "__main__" occurs, when the trigger search looked for it.
  // Notebooks are always read: few, and an entry's imports matter whatever its words.
  if (r.kind != FileKind::kNotebook && !HasTrigger(ctx, item, text, r, has_main)) {
    // Its imports still matter (reachability, modules that reach an extension) and cost less to
    // read now, from memory, than from the file again later.
    if (r.kind != FileKind::kPython) return;
    ImportsOnly(ctx, text, item, r, has_main);
    // A kernel library's compiled module (`import rotary_emb`) is named by the import alone, so
    // it is no trigger word: the file is read in full after all.
    if (std::none_of(r.imports.begin(), r.imports.end(), [&](const PyImport& imp) {
          return imp.level == 0 && ctx.reg.IsCompiledModule(imp.module);
        }))
      return;
  }
  if (!IsAscii(text) && !IsValidUtf8(text)) {
    r.scanned = false;
    r.skip_reason = "not valid UTF-8";
    return;
  }
  ScanByKind(ctx, item, NormalizeLineEnds(text), r);
}

// Walked files waiting for a scanning thread; `first` is the walk's count before them.
struct Batch {
  std::size_t first = 0;
  std::vector<WalkItem> items;
};

struct Scanned {
  std::size_t seq = 0;  // Place in the walk.
  WalkItem item;
  FileResult result;
};

class BatchQueue {
 public:
  void Push(Batch&& batch) {
    {
      std::lock_guard lock(mu_);
      batches_.push_back(std::move(batch));
    }
    cv_.notify_one();
  }
  void Close() {
    {
      std::lock_guard lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }
  // Waits for the next batch; false once the queue is closed and empty.
  bool Pop(Batch& out) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !batches_.empty() || closed_; });
    if (batches_.empty()) return false;
    out = std::move(batches_.front());
    batches_.pop_front();
    return true;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Batch> batches_;
  bool closed_ = false;
};

std::string Rel(const fs::path& p) {
  std::string s = p.generic_string();
  while (StartsWith(s, "./")) s.erase(0, 2);
  return s;
}

// An entry as given (absolute, or relative to the root) as a path relative to the root, without
// a trailing '/'.
std::string EntryRel(const std::string& entry, const fs::path& abs_root) {
  const fs::path ep(entry);
  std::string rel = Rel(ep.is_absolute() ? ep.lexically_relative(abs_root) : ep.lexically_normal());
  while (!rel.empty() && rel.back() == '/') rel.pop_back();
  return rel;
}

// Rule codes and prefixes as the user lists them: repeated, comma-separated or both, any case.
// An item that is the prefix of no rule code is an error (`--ignore DT1,DT4` used to be read as
// one code that matched nothing, and dropped nothing without a word).
Result<std::vector<std::string>> RuleCodes(const std::vector<std::string>& items,
                                           const Registry& reg, const std::string& what,
                                           const std::string& file) {
  std::vector<std::string> out;
  for (const auto& item : items) {
    for (std::string_view part : Split(item, ',')) {
      std::string code = Upper(Trim(part));
      if (code.empty()) continue;
      if (!reg.HasCodePrefix(code)) {
        const std::string hint = reg.ClosestCode(code);
        return MakeError(file.empty() ? ErrorCode::kUsage : ErrorCode::kInput,
                         what + ": '" + EscapeControl(code) +
                             "' is not a rule code or a prefix of one" +
                             (hint.empty() ? "" : "; did you mean " + hint + "?") +
                             " (dualtrack rule --list shows them)",
                         file);
      }
      out.push_back(std::move(code));
    }
  }
  return out;
}

// The top-level names the project's own code is imported by: packages and modules at the root and
// under src/, and [project].name. A library of the knowledge base with one of these names is the
// project itself (mamba's own `mamba_ssm`), scanned as project code.
std::unordered_set<std::string> OwnTops(const fs::path& root) {
  std::unordered_set<std::string> out;
  auto add_dir = [&](const fs::path& dir) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const fs::path& p = it->path();
      std::string name = p.filename().string();
      if (name.empty() || name[0] == '.') continue;
      std::error_code ec2;
      if (it->is_regular_file(ec2) && p.extension() == ".py") {
        out.insert(p.stem().string());
      } else if (it->is_directory(ec2)) {
        // A package, or a namespace package: a folder holding Python files.
        bool python = fs::exists(p / "__init__.py", ec2);
        for (fs::directory_iterator f(p, ec2), fe; !python && !ec2 && f != fe; f.increment(ec2))
          python = f->path().extension() == ".py";
        if (python) out.insert(name);
      }
    }
  };
  add_dir(root);
  std::error_code ec;
  if (fs::is_directory(root / "src", ec)) add_dir(root / "src");
  if (auto text = ReadFile(root / "pyproject.toml", std::uint64_t{4} << 20)) {
    try {
      auto tbl = toml::parse(*text);
      if (auto name = tbl["project"]["name"].value<std::string>()) {
        std::string n = *name;
        for (char& c : n)
          if (c == '-' || c == '.') c = '_';
        out.insert(n);
      }
    } catch (const toml::parse_error&) {
      // ReadConfig reports a malformed pyproject.toml.
    }
  }
  return out;
}

// The absolute module of a relative import (`from ..ops import x` in package `pkg.models` is
// `pkg.ops`); `package` is the file's (PackageIn).
std::string AbsoluteImport(const PyImport& imp, const std::string& package) {
  std::string base = package;
  for (int up = 1; up < imp.level && !base.empty(); ++up) {
    auto dot = base.rfind('.');
    base = dot == std::string::npos ? std::string() : base.substr(0, dot);
  }
  return base.empty() ? imp.module : imp.module.empty() ? base : base + "." + imp.module;
}

// Whether an import (`import alt_cuda_corr`, `from groundingdino import _C`, `from ._C import
// fwd`) loads `module` or something inside it.
bool ImportLoads(const PyImport& imp, const std::string& package, const std::string& module) {
  const std::string abs = imp.level > 0 ? AbsoluteImport(imp, package) : imp.module;
  auto loads = [&](const std::string& name) {
    return name == module || name.starts_with(module + ".");
  };
  if (loads(abs)) return true;
  return std::any_of(imp.names.begin(), imp.names.end(),
                     [&](const std::string& n) { return loads(abs.empty() ? n : abs + "." + n); });
}

// Whether the uses of extension code (calls of a compiled module, of project code that needs
// one; imports aside) are all behind checks: in file `j` itself (`in_file`), or in the project's
// other files, where at least one such use must be.
bool ExtensionUsesGuarded(const std::vector<WalkItem>& items,
                          const std::vector<FileResult>& results, std::size_t j, bool in_file) {
  std::size_t uses = 0;
  for (std::size_t k = 0; k < results.size(); ++k) {
    if ((k == j) != in_file || (k != j && IsTestPath(items[k].rel))) continue;
    for (const Finding& f : results[k].findings) {
      const bool use = f.code == "DT305" || f.code == "DT312" || f.code == "DT314";
      if (!use || f.in_import) continue;
      if (!f.guarded) return false;
      ++uses;
    }
  }
  return in_file || uses > 0;
}

// Whether the project imports file j's module only behind checks (and somewhere): a wrapper
// module (`window_process.py`, which imports the extension at its top) that the model imports in
// `try: ... except ImportError`.
bool ImportedOnlyGuarded(const std::vector<WalkItem>& items, const std::vector<FileResult>& results,
                         const std::unordered_set<std::string>& init_dirs, std::size_t j) {
  const std::vector<std::string> names = ModuleNames(items[j].rel);
  std::size_t imports = 0;
  for (std::size_t k = 0; k < items.size(); ++k) {
    if (k == j || items[k].kind != FileKind::kPython) continue;
    const std::string package = PackageIn(items[k].rel, init_dirs);
    for (const PyImport& imp : results[k].imports)
      for (const std::string& name : names)
        if (ImportLoads(imp, package, name)) {
          if (!imp.guarded) return false;
          ++imports;
          break;
        }
  }
  return imports > 0;
}

// An extension that the project's code only imports behind a check or with a fallback (`try:
// import alt_cuda_corr / except ImportError`, an opt-in option): the Mac takes the other path, so
// the build script that declares it and the C/C++/CUDA files beside its sources are guarded, as
// the imports are. An extension nothing imports stays as it is.
void GuardOptionalExtensions(const std::vector<WalkItem>& items, std::vector<FileResult>& results,
                             const std::unordered_set<std::string>& init_dirs) {
  for (std::size_t i = 0; i < items.size(); ++i) {
    const auto& declared = results[i].cuda_modules;
    if (items[i].kind != FileKind::kSetupPy || declared.empty()) continue;
    bool optional = true;
    // Modules that import the extension unchecked but are themselves imported only behind checks
    // (`kernels/window_process.py` under an optional import): they run only where the check held.
    std::set<std::size_t> wrappers;
    for (const CudaModule& mod : declared) {
      std::size_t imports = 0, guarded = 0;
      for (std::size_t j = 0; j < items.size(); ++j) {
        // A test of the kernel exercises the CUDA path on purpose; the project's runs do not.
        if (j == i || items[j].kind != FileKind::kPython || IsTestPath(items[j].rel)) continue;
        const std::string package = PackageIn(items[j].rel, init_dirs);
        for (const PyImport& imp : results[j].imports)
          if (ImportLoads(imp, package, mod.module)) {
            ++imports;
            // And its uses are behind checks too: in the importing file, or (a wrapper class
            // the file exports) where the rest of the project uses what depends on it. An
            // optional import whose module is then called unchecked has no other path.
            // A kernel the importer takes for CUDA tensors (`if x.is_cuda: return kernel(x)`)
            // is the default CUDA run's, replaced on the Mac: it stays in the way.
            const bool import_guarded =
                !results[j].tensor_dispatch &&
                (imp.guarded || ImportedOnlyGuarded(items, results, init_dirs, j));
            const bool uses_guarded =
                import_guarded && (ExtensionUsesGuarded(items, results, j, true) ||
                                   ExtensionUsesGuarded(items, results, j, false));
            guarded += uses_guarded ? 1 : 0;
            if (uses_guarded && !imp.guarded) wrappers.insert(j);
          }
      }
      optional = optional && imports > 0 && guarded == imports;
    }
    if (!optional) continue;
    std::set<std::string> dirs;  // The folders of the sources it builds.
    for (const auto& [name, unused] : results[i].extension_sources)
      for (std::size_t j = 0; j < items.size(); ++j)
        if (items[j].kind == FileKind::kCpp &&
            (items[j].rel == name || items[j].rel.ends_with("/" + name)))
          dirs.insert(items[j].rel.substr(0, items[j].rel.rfind('/') + 1));
    for (std::size_t j = 0; j < items.size(); ++j) {
      const std::string& rel = items[j].rel;
      const bool beside =
          items[j].kind == FileKind::kCpp && dirs.count(rel.substr(0, rel.rfind('/') + 1)) > 0;
      if (j != i && !beside && wrappers.count(j) == 0) continue;
      for (auto& f : results[j].findings) {
        MarkGuarded(f);
      }
    }
  }
}

// `backend: nccl` in a run's config file (basicsr's `dist_params`, a trainer's `dist_backend`) is
// read where the process group is created. When the project's code creates one only behind a
// launch-mode or CUDA check (`if opt['launcher'] != 'none': init_dist(...)`, `if h.num_gpus > 1:`),
// or never (a library does, under its launcher), the setting is the multi-process mode's: guarded.
// A project that creates the group on every run makes it every run's.
void GuardConfigBackends(const std::vector<WalkItem>& items, std::vector<FileResult>& results) {
  for (std::size_t j = 0; j < items.size(); ++j)
    if (items[j].kind == FileKind::kPython && results[j].every_run_process_group) return;
  for (std::size_t j = 0; j < items.size(); ++j) {
    if (items[j].kind != FileKind::kConfigYaml) continue;
    for (Finding& f : results[j].findings) {
      if (f.code != "DT205" || f.guarded) continue;
      MarkGuarded(f);
    }
  }
}

// A module that imports a compiled extension unguarded and uses it only inside its functions
// (`import awq_inference_engine` at the top, its kernels called in `WQLinear.forward`), while the
// code on the path (`on_path`: the files the entries reach; null: the whole project) reaches
// what depends on it only behind checks: once `dualtrack fix` makes the import lazy (DT305's
// fix), those uses run only where the checks hold, so they are guarded like the callers. The
// import itself stays in the way until then.
void GuardLazyExtensionUses(const std::vector<WalkItem>& items, std::vector<FileResult>& results,
                            const std::unordered_set<std::string>* on_path) {
  auto lazy_use = [](const Finding& f) { return f.code == "DT305" && !f.in_import; };
  for (std::size_t j = 0; j < items.size(); ++j) {
    // A test of the kernel exercises the CUDA path on purpose; a script runs its own functions.
    if (items[j].kind != FileKind::kPython || results[j].extension_used_at_import ||
        results[j].has_main || IsTestPath(items[j].rel))
      continue;
    const auto& fs = results[j].findings;
    const bool imports = std::any_of(fs.begin(), fs.end(), [](const Finding& f) {
      return f.code == "DT305" && f.in_import && !f.guarded;
    });
    if (!imports || !std::any_of(fs.begin(), fs.end(), lazy_use)) continue;
    std::size_t uses = 0;
    bool unguarded = false;
    for (std::size_t k = 0; k < results.size() && !unguarded; ++k) {
      if (k == j || IsTestPath(items[k].rel)) continue;
      if (on_path != nullptr && on_path->count(items[k].rel) == 0) continue;
      // What depends on the extension through the project's code; another module's own use of
      // an extension (DT305) is that module's.
      for (const Finding& f : results[k].findings) {
        const bool use = f.code == "DT312" || f.code == "DT314";
        if (!use || f.in_import || !f.reachable.value_or(true)) continue;
        ++uses;
        unguarded |= !f.guarded;
      }
    }
    if (unguarded || uses == 0) continue;
    for (Finding& f : results[j].findings)
      if (lazy_use(f) && !f.guarded) {
        MarkGuarded(f);
      }
  }
}

// C/C++/CUDA sources that only guarded builds compile (`try: load(..., sources=[...cu]) except:
// fallback`) are guarded: the Mac takes the fallback, so their kernels do not stop it.
void GuardBuiltSources(const std::vector<WalkItem>& items, std::vector<FileResult>& results) {
  std::unordered_map<std::string, bool> all_guarded;  // Source base name -> every build guarded.
  for (const auto& r : results)
    for (const auto& [name, guarded] : r.extension_sources) {
      auto [it, fresh] = all_guarded.emplace(name, guarded);
      if (!fresh) it->second = it->second && guarded;
    }
  if (all_guarded.empty()) return;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (items[i].kind != FileKind::kCpp) continue;
    std::string_view rel = items[i].rel;
    auto it = all_guarded.find(std::string(rel.substr(rel.rfind('/') + 1)));
    if (it == all_guarded.end() || !it->second) continue;
    for (auto& f : results[i].findings) {
      MarkGuarded(f);
    }
  }
}

// Drops the findings of an API whose project condition (PythonApi::only_with) no analysed file
// meets: `torch.load` without map_location where the project writes no checkpoint of its own.
void DropUnmetConditions(const Context& ctx, std::vector<FileResult>& results) {
  const auto& conditions = ctx.reg.ProjectConditions();
  const std::uint32_t met = ctx.conditions_met.load();
  for (std::size_t c = 0; c < conditions.size(); ++c) {
    if ((met >> c) & 1u) continue;
    for (auto& r : results)
      std::erase_if(r.findings, [&](const Finding& f) { return f.code == conditions[c].code; });
  }
}

// A folder some module puts on sys.path holds top-level modules of the project too: `from corr
// import AlternateCorrBlock` after `sys.path.append("core")` is the project's own code.
void AddSysPathTops(const std::vector<WalkItem>& items, const std::vector<FileResult>& results,
                    std::unordered_set<std::string>& own_tops) {
  std::set<std::string> dirs;
  for (const FileResult& r : results)
    for (const std::string& d : r.sys_path)
      if (d != ".") dirs.insert(d + "/");
  if (dirs.empty()) return;
  for (const WalkItem& item : items) {
    if (item.kind != FileKind::kPython) continue;
    for (const std::string& d : dirs) {
      if (!item.rel.starts_with(d)) continue;
      std::string rest = item.rel.substr(d.size());
      const std::size_t slash = rest.find('/');
      if (slash != std::string::npos)
        rest.resize(slash);
      else if (rest.ends_with(".py"))
        rest.resize(rest.size() - 3);
      if (!rest.empty()) own_tops.insert(rest);
    }
  }
}

// The packages' folders: those holding an __init__.py (relative imports resolve against them).
std::unordered_set<std::string> InitDirs(const std::vector<WalkItem>& items) {
  std::unordered_set<std::string> dirs;
  for (const auto& item : items)
    if (item.rel.ends_with("/__init__.py")) dirs.insert(item.rel.substr(0, item.rel.size() - 12));
  return dirs;
}

// A Python file the first pass read, read again and scanned with `opt` (its package and the
// project's top-level names filled in) after the first pass learnt more; fn(src, sink, findings,
// result) sees it. Nothing happens for a file that cannot be read again or is not UTF-8: the
// return says whether it was read.
bool ReadPython(const Context& ctx, const WalkItem& item,
                const std::unordered_set<std::string>& init_dirs, PyScanOptions opt,
                const std::function<void(std::string_view, FindingSink&, std::vector<Finding>&,
                                         PyScanResult&)>& fn) {
  MappedFile mapped;
  std::string skip;
  auto text = Load(item, 0, mapped, skip);
  if (!text || (!IsAscii(*text) && !IsValidUtf8(*text))) return false;
  std::string_view src = NormalizeLineEnds(*text);
  std::optional<NotebookSource> nb;
  if (item.kind == FileKind::kNotebook) {
    auto joined = JoinNotebook(src, item.rel);
    if (!joined) return false;
    nb = std::move(*joined);
    src = nb->python;
  }
  std::vector<Finding> findings;
  FindingSink sink(ctx.reg, item.rel, src, findings);
  opt.package = nb ? "" : PackageIn(item.rel, init_dirs);
  opt.package_init = item.rel.ends_with("__init__.py");
  opt.own_tops = ctx.own_tops;
  PyScanResult py = ScanPython(src, sink, opt);
  fn(src, sink, findings, py);
  return true;
}

// The settings some file declares off by default and none declares on (a YAML config, a
// dataclass and an argparse option may all name one), into cuda.off_flags.
void ProjectOffFlags(const std::vector<FileResult>& results, CudaContext& cuda) {
  std::unordered_set<std::string> on;
  for (const FileResult& r : results) on.insert(r.on_flags.begin(), r.on_flags.end());
  for (const FileResult& r : results) {
    for (const std::string& f : r.off_flags)
      if (on.count(f) == 0) cuda.off_flags.insert(f);
    cuda.requiring.insert(r.requiring.begin(), r.requiring.end());
    cuda.jit_builders.insert(r.jit_calls.begin(), r.jit_calls.end());
    cuda.jit_unguarded.insert(r.jit_unguarded.begin(), r.jit_unguarded.end());
    for (const std::string& f : r.launch_flags) {
      cuda.launch_flags.insert(f);
      cuda.off_flags.insert(f);  // Files that read one are read again (FollowProjectFlags).
    }
  }
}

// The modules that exist only where a CUDA extension was built, as the files declare them, into
// cuda.modules and cuda.cpu_built, and the project's options off by default into cuda.off_flags;
// returns the op namespaces (`torch.ops.ns`) among the modules.
std::vector<std::string> DeclaredCudaModules(const std::vector<WalkItem>& items,
                                             const std::vector<FileResult>& results,
                                             CudaContext& cuda) {
  ProjectOffFlags(results, cuda);
  std::set<std::string> modules;
  // A package that brings an extension (a local package in requirements, a submodule) is often
  // Python code around one compiled module: when the project holds Python sources under that name,
  // only the builds' own names (CUDAExtension / load) say which module is compiled. The folders
  // are listed on first need: most declared modules come from a build.
  std::set<std::string> python_dirs;
  bool dirs_built = false;
  auto python_under = [&](const std::string& path) {
    if (!dirs_built)
      for (const auto& item : items) {
        if (item.kind != FileKind::kPython) continue;
        const std::string& rel = item.rel;
        for (auto slash = rel.find('/'); slash != std::string::npos;
             slash = rel.find('/', slash + 1))
          python_dirs.insert(rel.substr(0, slash));
        python_dirs.insert(rel.substr(0, rel.size() - 3));  // "pkg/mod" for pkg/mod.py.
      }
    dirs_built = true;
    if (python_dirs.count(path) > 0) return true;
    // A sub-project's package (`ops_lib/fastops` for `fastops`, `src/pkg`): installed from its
    // own folder, imported by its name.
    const std::string tail = "/" + path;
    return std::any_of(python_dirs.begin(), python_dirs.end(),
                       [&](const std::string& d) { return d.ends_with(tail); });
  };
  bool has_cu = false;  // An op library (TORCH_LIBRARY) counts when the project compiles CUDA.
  for (const auto& item : items) has_cu |= item.rel.ends_with(".cu") || item.rel.ends_with(".cuh");
  std::vector<std::string> op_namespaces;
  std::set<std::string> cpu_built;
  for (const auto& r : results) {
    // A build script that stops where CUDA is missing (`else: raise NotImplementedError`, DT213)
    // builds no CPU variant, whatever its default extension class says.
    const bool refuses_cpu =
        std::any_of(r.findings.begin(), r.findings.end(),
                    [](const Finding& f) { return f.code == "DT213" && !f.guarded; });
    for (const auto& m : r.cuda_modules) {
      if (m.cpu_build && !refuses_cpu) cpu_built.insert(m.module);
      if (m.module.starts_with("torch.ops.")) {
        if (has_cu && modules.insert(m.module).second) op_namespaces.push_back(m.module);
        continue;
      }
      bool built = m.evidence.find("()") != std::string::npos;
      std::string path = m.module;
      for (char& c : path)
        if (c == '.') c = '/';
      if (built || !python_under(path)) modules.insert(m.module);
    }
  }
  cuda.modules.assign(modules.begin(), modules.end());
  cuda.cpu_built.assign(cpu_built.begin(), cpu_built.end());
  return op_namespaces;
}

// An import of a file, its module resolved to an absolute name, and the name's hash (HashName),
// taken once for the rounds' tests of which modules changed.
struct ImportedModule {
  std::string_view module;
  const std::vector<std::string>* names;
  std::size_t hash;
};

// The absolute module of each import of each Python file, resolved once (relative ones built into
// `storage`, a deque per worker whose addresses stay put; others viewed in place).
std::vector<std::vector<ImportedModule>> ResolveImports(
    const std::vector<WalkItem>& items, const std::vector<FileResult>& results,
    const std::unordered_set<std::string>& init_dirs, unsigned threads,
    std::vector<std::deque<std::string>>& storage) {
  std::vector<std::vector<ImportedModule>> imported(items.size());
  storage.resize(std::max(1u, threads));
  constexpr std::size_t kChunk = 1024;  // Files per task (a project has thousands).
  ParallelForChunks(
      items.size(), kChunk, threads, [&](std::size_t b, std::size_t e, unsigned worker) {
        for (std::size_t i = b; i < e; ++i) {
          const bool py = items[i].kind == FileKind::kPython || items[i].kind == FileKind::kSetupPy;
          if (!py || !results[i].skip_reason.empty()) continue;
          std::string package;
          bool package_known = false;
          for (const auto& imp : results[i].imports) {
            std::string_view mod = imp.module;
            if (imp.level > 0) {
              if (!package_known) package = PackageIn(items[i].rel, init_dirs);
              package_known = true;
              mod = storage[worker].emplace_back(AbsoluteImport(imp, package));
            }
            imported[i].push_back(ImportedModule{mod, &imp.names, HashName(mod)});
          }
        }
      });
  return imported;
}

// Scans the files `order` names again, knowing the CUDA modules and symbols found so far.
void RescanKnowingCuda(const Context& ctx, const std::vector<WalkItem>& items,
                       std::vector<FileResult>& results,
                       const std::unordered_set<std::string>& init_dirs, unsigned threads,
                       const CudaContext& cuda, const std::vector<std::size_t>& order) {
  ParallelFor(order.size(), threads, [&](std::size_t k, unsigned) {
    const std::size_t i = order[k];
    PyScanOptions opt;
    opt.setup_py = items[i].kind == FileKind::kSetupPy;
    opt.cuda = &cuda;
    ReadPython(ctx, items[i], init_dirs, opt,
               [&](std::string_view src, FindingSink& sink, std::vector<Finding>& findings,
                   PyScanResult& py) {
                 results[i].suppressions.clear();
                 sink.CheckSuppressions(results[i].suppressions);
                 UserTextRules(ctx.reg, src, items[i].rel, findings);
                 results[i].findings = std::move(findings);
                 // A file first read for its imports alone knew no guard of them. (The imports
                 // themselves stay: the rounds hold views of them.)
                 auto& imports = results[i].imports;
                 if (imports.size() == py.imports.size())
                   for (std::size_t k = 0; k < imports.size(); ++k)
                     imports[k].guarded = py.imports[k].guarded;
                 results[i].cuda_symbols = std::move(py.cuda_symbols);
                 results[i].reexports = std::move(py.reexports);
                 results[i].reference_impl = py.reference_impl;
                 results[i].tensor_dispatch = py.tensor_dispatch;
                 results[i].extension_used_at_import = py.extension_used_at_import;
                 results[i].scanned = true;
               });
  });
}

// Options another file declares off by default (`--use_amp`, `--alternate_corr`), read by a file
// as `self.args.use_amp` in a test: the files with findings that read one are scanned again knowing
// them, so that the branch reads as an opt-in there too.
void FollowProjectFlags(const Context& ctx, const std::vector<WalkItem>& items,
                        std::vector<FileResult>& results,
                        const std::unordered_set<std::string>& init_dirs, unsigned threads) {
  CudaContext flags;
  ProjectOffFlags(results, flags);
  if (flags.off_flags.empty() && flags.requiring.empty() && flags.jit_builders.empty()) return;
  auto reads = [&](const std::vector<std::string>& names, const auto& set) {
    return std::any_of(names.begin(), names.end(),
                       [&](const std::string& n) { return set.count(n) > 0; });
  };
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < items.size(); ++i) {
    // A JIT-build helper that callers elsewhere give CUDA sources builds them: read it again.
    if (reads(results[i].jit_builders, flags.jit_builders)) {
      order.push_back(i);
      continue;
    }
    if (results[i].findings.empty()) continue;
    if (reads(results[i].flag_reads, flags.off_flags) || reads(results[i].calls, flags.requiring))
      order.push_back(i);
  }
  if (!order.empty()) RescanKnowingCuda(ctx, items, results, init_dirs, threads, flags, order);
}

// A module declared beside its build script (CudaModule::beside_file) gets the script's package.
void NameModulesBesideFiles(const std::vector<WalkItem>& items, std::vector<FileResult>& results,
                            const std::unordered_set<std::string>& init_dirs) {
  for (std::size_t i = 0; i < items.size(); ++i)
    for (CudaModule& m : results[i].cuda_modules)
      if (m.beside_file) {
        const std::string package = PackageIn(items[i].rel, init_dirs);
        if (!package.empty()) m.module = package + "." + m.module;
        m.beside_file = false;
      }
}

// Follows modules that exist only where a CUDA extension was built (declared by setup.py, load(),
// git submodules, local packages) through the project: files that import one, or a project symbol
// that depends on one, are scanned again knowing it, which reports their imports and call sites
// and the symbols of their own that now depend on CUDA. Rounds run until nothing new is found.
void FollowCudaModules(const Context& ctx, std::vector<WalkItem>& items,
                       std::vector<FileResult>& results,
                       const std::unordered_set<std::string>& init_dirs, unsigned threads) {
  CudaContext cuda;
  const std::vector<std::string> op_namespaces = DeclaredCudaModules(items, results, cuda);
  // Modules (any name variant) with symbols, looked up by views in the rounds.
  std::unordered_set<std::string, NameHash, std::equal_to<>> symbol_modules;
  // Hashes (HashName) of the modules whose symbols grew since the last count: only their
  // importers can count more in the next round.
  std::unordered_set<std::size_t> changed;
  auto add_symbols = [&](std::size_t i) {
    bool added = false;
    if (results[i].cuda_symbols.empty()) return added;  // Most files: no module name is built.
    for (const auto& mod : ModuleNames(items[i].rel)) {
      bool grew = false;
      for (const auto& name : results[i].reexports) cuda.reexported.insert(mod + "." + name);
      for (const auto& [name, ext] : results[i].cuda_symbols) {
        if (results[i].reference_impl) cuda.referenced.insert(mod + "." + name);
        auto [it, fresh] = cuda.symbols.emplace(mod + "." + name, ext);
        added |= fresh || (ext && !it->second);
        grew |= fresh;
        it->second |= ext;
      }
      grew |= symbol_modules.insert(mod).second;
      if (!grew) continue;
      // The module and the packages above it: an import of any of them may count more now.
      for (std::size_t end = mod.size(); end != std::string::npos && end > 0;
           end = mod.rfind('.', end - 1)) {
        const std::string_view up = std::string_view(mod).substr(0, end);
        changed.insert(HashName(up));
        cuda.symbol_packages.emplace(up);
      }
    }
    return added;
  };
  auto is_py = [&](std::size_t i) {
    return items[i].kind == FileKind::kPython || items[i].kind == FileKind::kSetupPy ||
           items[i].kind == FileKind::kNotebook;
  };
  for (std::size_t i = 0; i < items.size(); ++i)
    if (is_py(i)) add_symbols(i);
  if (cuda.modules.empty() && cuda.symbols.empty()) return;
  // Files that spell an op namespace of the project's op library call it without an import.
  std::vector<char> spells_ops(items.size(), 0);
  for (std::size_t i = 0; i < items.size(); ++i)
    for (const auto& ns : op_namespaces)
      if (std::find(results[i].op_namespaces.begin(), results[i].op_namespaces.end(), ns) !=
          results[i].op_namespaces.end())
        spells_ops[i] = 1;
  std::vector<std::deque<std::string>> storage;
  const auto imported = ResolveImports(items, results, init_dirs, threads, storage);
  // How many of a file's imports touch what is known; a file is scanned again when that grows.
  // `mod.name` can be a CUDA module, a known symbol or a module with symbols only when `mod` holds
  // symbols or is a package above such a module or a CUDA module: most imports are turned away
  // before any key is built.
  std::vector<std::size_t> touched(items.size(), 0);
  auto touches = [&](std::size_t i) {
    std::size_t n = 0;
    std::string key;
    for (const auto& [mod, names, hash] : imported[i]) {
      const bool in_cuda = cuda.IsModule(mod);
      const bool symbols = symbol_modules.count(mod) > 0;
      if (in_cuda || symbols) ++n;
      if (in_cuda) {
        n += names->size();
        continue;
      }
      // Holds symbols, or is a package above them.
      bool above = cuda.symbol_packages.count(mod) > 0;
      for (const auto& m : cuda.modules)
        above |= m.size() > mod.size() && m.starts_with(mod) && m[mod.size()] == '.';
      if (!above) continue;
      // `from pkg import ops` binds a module with symbols, reached as `ops.run()`.
      for (const auto& name : *names) {
        key.assign(mod).append(".").append(name);
        if (cuda.IsModule(key) || cuda.symbols.count(key) > 0 || symbol_modules.count(key) > 0) ++n;
      }
    }
    return n + static_cast<std::size_t>(spells_ops[i]);
  };
  // Whether an import of file i is of a module in `changed` (after the first round, the only
  // files whose count can grow).
  auto imports_changed = [&](std::size_t i) {
    for (const auto& imp : imported[i])
      if (changed.count(imp.hash) > 0) return true;
    return false;
  };
  std::vector<std::size_t> now(items.size(), 0);
  constexpr std::size_t kChunk = 1024;  // Files per task of the count (a project has thousands).
  for (int round = 0; round < 16; ++round) {
    ParallelForChunks(items.size(), kChunk, threads, [&](std::size_t b, std::size_t e, unsigned) {
      for (std::size_t i = b; i < e; ++i) {
        if (!is_py(i) || !results[i].skip_reason.empty())
          now[i] = 0;
        else if (round == 0 || imports_changed(i))
          now[i] = touches(i);
        else
          now[i] = touched[i];
      }
    });
    changed.clear();
    std::vector<std::size_t> again;
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (now[i] > touched[i]) {
        touched[i] = now[i];
        again.push_back(i);
      }
    }
    if (again.empty()) break;
    // Largest first, so that no thread is left alone with a big module at the end of a round.
    std::vector<std::size_t> order = again;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return results[a].bytes > results[b].bytes;
    });
    RescanKnowingCuda(ctx, items, results, init_dirs, threads, cuda, order);
    bool grew = false;
    for (std::size_t i : again) grew |= add_symbols(i);
    if (!grew && round > 0) break;
  }
}

// Findings inside module-level functions that the entries' run never calls leave the path
// (reachable false); those called only behind a CUDA or launch-mode check are guarded. Only for
// entries the user named (an experiment, --entry): then each reachable module is read once more
// for its calls.
void FollowCalls(const Context& ctx, const std::vector<WalkItem>& items,
                 std::vector<FileResult>& results, const std::unordered_set<std::string>& init_dirs,
                 const std::unordered_set<std::string>& reachable,
                 const std::vector<std::string>& entries, unsigned threads, PathTraits& traits) {
  PyScanOptions collect;
  collect.collect_calls = true;
  // The project's opt-in options and requiring functions, so that a call behind
  // `if self.args.alternate_corr:` reads as guarded here as in the scan.
  CudaContext flags;
  ProjectOffFlags(results, flags);
  collect.cuda = &flags;
  std::vector<std::size_t> files;  // Reachable Python files, in item order.
  for (std::size_t i = 0; i < items.size(); ++i)
    if ((items[i].kind == FileKind::kPython || items[i].kind == FileKind::kNotebook) &&
        results[i].skip_reason.empty() && reachable.count(items[i].rel))
      files.push_back(i);
  std::vector<CallModule> modules(files.size());
  std::vector<char> read(files.size(), 0);
  struct FileTraits {
    std::int64_t cuda_choice = 0;  // Line of a guarded CUDA placement.
    bool mps = false, framework = false;
    std::uint32_t model = 0, backward = 0;
    std::string model_api;
    bool dynamic = false;
  };
  std::vector<FileTraits> file_traits(files.size());
  ParallelFor(files.size(), threads, [&](std::size_t k, unsigned) {
    const std::size_t i = files[k];
    const auto take = [&](std::string_view, FindingSink&, std::vector<Finding>& discarded,
                          PyScanResult& py) {
      CallModule& m = modules[k];
      m.names = ModuleNames(items[i].rel);
      m.entry = std::find(entries.begin(), entries.end(), items[i].rel) != entries.end();
      m.defs = std::move(py.defs);
      m.refs = std::move(py.refs);
      m.defaults = std::move(py.defaults);
      m.attrs = std::move(py.attrs);
      FileTraits& ft = file_traits[k];
      for (const Finding& f : discarded)
        if (f.guarded && (f.code == "DT101" || f.code == "DT102") && ft.cuda_choice == 0)
          ft.cuda_choice = f.line;
      ft.mps = py.mentions_mps;
      ft.framework = py.framework_device;
      ft.model = py.model_line;
      ft.model_api = std::move(py.model_api);
      ft.backward = py.backward_line;
      ft.dynamic = py.dynamic_import;
    };
    read[k] = static_cast<char>(ReadPython(ctx, items[i], init_dirs, collect, take));
  });
  // A file that could not be read again hides its calls: then nothing is concluded.
  if (std::find(read.begin(), read.end(), 0) != read.end()) return;
  for (std::size_t k = 0; k < files.size(); ++k) {
    const FileTraits& ft = file_traits[k];
    const std::string& rel = items[files[k]].rel;
    if (ft.cuda_choice && !traits.cuda_choice) traits.cuda_choice = PathPlace{rel, ft.cuda_choice};
    if (ft.model && !traits.model) {
      traits.model = PathPlace{rel, ft.model};
      traits.model_api = ft.model_api;
    }
    traits.mentions_mps |= ft.mps;
    traits.framework_device |= ft.framework;
    if (!modules[k].entry || traits.training) continue;
    const std::string base = rel.substr(rel.rfind('/') + 1);
    if (ft.backward)
      traits.training = PathPlace{rel, ft.backward};
    else if (base.find("train") != std::string::npos)
      traits.training = PathPlace{rel, 0};
  }
  // A model module imported by a name chosen at run time (`importlib.import_module(args.model)`)
  // is one of the project's: with none on the path, the project's first layer stands for it.
  const bool dynamic = std::any_of(file_traits.begin(), file_traits.end(),
                                   [](const FileTraits& t) { return t.dynamic; });
  if (dynamic && !traits.model) {
    for (std::size_t i = 0; i < items.size() && !traits.model; ++i) {
      if (items[i].kind != FileKind::kPython || reachable.count(items[i].rel) ||
          !results[i].skip_reason.empty())
        continue;  // Files the scan skipped (too large, unreadable) stay unread.
      ReadPython(ctx, items[i], init_dirs, collect,
                 [&](std::string_view, FindingSink&, std::vector<Finding>&, PyScanResult& py) {
                   if (py.model_line) {
                     traits.model = PathPlace{items[i].rel, py.model_line};
                     traits.model_api = py.model_api;
                   }
                 });
    }
  }
  const auto paths = CallPaths(modules);
  for (std::size_t k = 0; k < files.size(); ++k) {
    const auto& defs = modules[k].defs;
    for (Finding& f : results[files[k]].findings) {
      for (std::size_t d = 0; d < modules[k].defaults.size(); ++d)
        if (paths.overridden[k][d] && f.line == modules[k].defaults[d].line && f.code == "DT102")
          f.reachable = false;  // The default no call on the path uses.
      for (std::size_t d = 0; d < defs.size(); ++d) {
        if (f.line < defs[d].first_line || f.line > defs[d].last_line) continue;
        if (!paths.defs[k][d].reached) {
          f.reachable = false;
        } else if (paths.defs[k][d].guarded && !f.guarded) {
          MarkGuarded(f);
        }
        break;
      }
    }
  }
}

}  // namespace

double Readiness(const std::vector<Finding>& findings) {
  if (findings.empty()) return 1.0;
  std::size_t ok = 0;
  for (const auto& f : findings)
    if (f.severity <= Severity::kFixable) ++ok;
  return static_cast<double>(ok) / static_cast<double>(findings.size());
}

ScanOptions TreeSelection::Options() const {
  ScanOptions opt;
  for (const auto& p : paths) opt.paths.emplace_back(p);
  if (opt.paths.empty()) opt.paths.emplace_back(".");
  opt.entries = entries;
  opt.exclude = exclude;
  opt.ignore_codes = ignore;
  opt.select_codes = select;
  opt.honour_gitignore = !no_gitignore;
  opt.read_pyproject = !no_config;
  return opt;
}

namespace {

// The registry of `data_dir`, with the project's own rules ([tool.dualtrack] rules) added. A
// scanned repository is untrusted: its rules file must lie inside it (links resolved), so a
// pyproject.toml cannot make dualtrack read any file of the host.
Result<Registry> LoadRegistry(const ScanOptions& options, const fs::path& root, const Config& cfg) {
  fs::path data_dir;
  if (options.data_dir) {
    data_dir = *options.data_dir;
  } else {
    auto d = DataDir();
    if (!d) return d.take_error();
    data_dir = *d / "scan";
  }
  auto reg = Registry::Load(data_dir);
  if (!reg || cfg.rules.empty()) return reg;
  fs::path rules = fs::path(cfg.rules).is_absolute() ? fs::path(cfg.rules) : root / cfg.rules;
  std::error_code ec;
  const fs::path real_root = fs::weakly_canonical(fs::absolute(root, ec), ec);
  const fs::path real_rules = fs::weakly_canonical(fs::absolute(rules, ec), ec);
  const fs::path rel = real_rules.lexically_relative(real_root);
  if (ec || rel.empty() || *rel.begin() == ".." || rel.is_absolute()) {
    return MakeError(ErrorCode::kInput,
                     "[tool.dualtrack] rules must name a file inside the project (got '" +
                         EscapeControl(cfg.rules) + "')",
                     (root / "pyproject.toml").string());
  }
  if (auto st = reg->AddUserRules(rules); !st) return st.take_error();
  return reg;
}

// The files of the walk with what the first pass found in each, in path order, each file once.
struct Walked {
  std::vector<WalkItem> items;
  std::vector<FileResult> results;
};

// The walk (serial, bound by directory syscalls) runs on this thread and hands batches of files to
// the scanning threads, so scanning starts with the first files found.
Walked WalkAndScan(const Context& ctx, const ScanOptions& options, const WalkOptions& wopt,
                   const fs::path& abs_root, unsigned threads, std::vector<Skipped>& skipped) {
  std::error_code ec;
  BatchQueue queue;
  // Per thread, in chunks of fixed capacity: a growing vector would move (and fault in the pages
  // of) every result made so far each time it doubled.
  constexpr std::size_t kChunk = 256;
  std::vector<std::vector<std::vector<Scanned>>> done(threads);
  std::size_t walked = 0;
  {
    // Closing the queue ends the scanning threads however the walk ends.
    ScopedThreads pool(
        threads,
        [&](unsigned t) {
          Batch batch;
          while (queue.Pop(batch)) {
            for (std::size_t k = 0; k < batch.items.size(); ++k) {
              auto& chunks = done[t];
              if (chunks.empty() || chunks.back().size() == kChunk) {
                chunks.emplace_back();
                chunks.back().reserve(kChunk);
              }
              Scanned& x = chunks.back().emplace_back(
                  Scanned{batch.first + k, std::move(batch.items[k]), FileResult{}});
              ScanOne(ctx, x.item, x.result);
            }
          }
        },
        [&] { queue.Close(); });
    Batch batch;
    auto on_item = [&](WalkItem&& item) {
      batch.items.push_back(std::move(item));
      if (batch.items.size() >= 32) {
        walked += batch.items.size();
        queue.Push(std::exchange(batch, Batch{walked, {}}));
      }
    };
    for (const auto& p : options.paths) {
      fs::path abs = fs::absolute(p, ec).lexically_normal();
      fs::path rel = abs.lexically_relative(abs_root);
      std::string rel_s = Rel(rel);
      while (rel_s.size() > 1 && rel_s.back() == '/') rel_s.pop_back();  // "notebooks/" as given.
      if (rel_s == ".") rel_s.clear();
      if (rel.empty() || StartsWith(rel_s, "..")) rel_s = p.generic_string();
      Walk(p, rel_s, wopt, on_item, skipped);
    }
    walked += batch.items.size();
    if (!batch.items.empty()) queue.Push(std::move(batch));
  }
  // Back into walk order, which is path order for one root (the walker sorts so); several roots,
  // or symlinked folders the walker could not place, need a sort. The same file named twice
  // (overlapping paths) counts once.
  Walked out;
  out.items.resize(walked);
  out.results.resize(walked);
  for (auto& chunks : done) {
    for (auto& chunk : chunks)
      for (auto& x : chunk) {
        out.items[x.seq] = std::move(x.item);
        out.results[x.seq] = std::move(x.result);
      }
    chunks = {};
  }
  auto by_rel = [](const WalkItem& a, const WalkItem& b) { return a.rel < b.rel; };
  if (!std::is_sorted(out.items.begin(), out.items.end(), by_rel)) {
    std::vector<std::size_t> order(walked);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return out.items[a].rel < out.items[b].rel;
    });
    Walked sorted;
    sorted.items.reserve(walked);
    sorted.results.reserve(walked);
    for (std::size_t i : order) {
      sorted.items.push_back(std::move(out.items[i]));
      sorted.results.push_back(std::move(out.results[i]));
    }
    out = std::move(sorted);
  }
  std::size_t kept = 0;
  for (std::size_t i = 0; i < out.items.size(); ++i) {
    if (kept > 0 && out.items[kept - 1].rel == out.items[i].rel) continue;
    if (i != kept) {
      out.items[kept] = std::move(out.items[i]);
      out.results[kept] = std::move(out.results[i]);
    }
    const FileResult& r = out.results[kept];
    if (r.scanned || !r.skip_reason.empty()) out.items[kept].kind = r.kind;
    ++kept;
  }
  out.items.resize(kept);
  out.results.resize(kept);
  return out;
}

// The entry scripts: --entry (or [tool.dualtrack] entry), a folder meaning every Python file
// under it; else [project.scripts]; else every script with a `__main__` block (`guessed`: then no
// path is known).
struct Entries {
  std::vector<std::string> files;
  bool guessed = false;
};

Result<Entries> ChooseEntries(const ScanOptions& options, const Config& cfg,
                              const std::vector<WalkItem>& items,
                              const std::vector<std::string>& mains, const fs::path& abs_root) {
  auto is_python_file = [&](const std::string& rel) {  // items are sorted by rel.
    auto it = std::lower_bound(items.begin(), items.end(), rel,
                               [](const WalkItem& a, const std::string& r) { return a.rel < r; });
    return it != items.end() && it->rel == rel &&
           (it->kind == FileKind::kPython || it->kind == FileKind::kSetupPy ||
            it->kind == FileKind::kNotebook);
  };
  Entries out;
  std::vector<std::string>& entries = out.files;
  const std::vector<std::string>& declared = options.entries.empty() ? cfg.entry : options.entries;
  for (const auto& e : declared) {
    const std::string rel = EntryRel(e, abs_root);
    if (!is_python_file(rel)) {
      // A folder (a test suite, a scripts/ directory): every Python file under it is an entry.
      std::size_t before = entries.size();
      const std::string prefix = rel == "." || rel.empty() ? "" : rel + "/";
      for (const auto& item : items)
        if (item.kind == FileKind::kPython && item.rel.starts_with(prefix))
          entries.push_back(item.rel);
      if (entries.size() == before)
        return MakeError(
            ErrorCode::kInput,
            "entry script not found among the scanned Python files (nor a folder that holds some)",
            e);
      continue;
    }
    entries.push_back(rel);
  }
  if (options.entries.empty()) {
    for (const auto& s : cfg.scripts) {
      for (const std::string& cand : {s + ".py", s + "/__init__.py", "src/" + s + ".py"})
        if (is_python_file(cand)) entries.push_back(cand);
    }
    if (entries.empty()) {
      // The scripts a user would run, found as audit finds its experiments (scan/entries.h); a
      // project that names none anywhere: every script with a __main__ block.
      for (const std::string& rel : PickEntries(abs_root))
        if (is_python_file(rel)) entries.push_back(rel);
      if (entries.empty()) entries = mains;
      out.guessed = true;
    }
  }
  std::sort(entries.begin(), entries.end());
  entries.erase(std::unique(entries.begin(), entries.end()), entries.end());
  return out;
}

// Which codes the report keeps: [tool.dualtrack] ignore plus --ignore; --select replaces the
// configured selection, as --entry replaces the configured entries. Empty `select`: every code.
struct CodeFilter {
  std::vector<std::string> ignore, select;
  bool Keeps(std::string_view code) const {
    for (const auto& c : ignore)
      if (StartsWith(code, c)) return false;
    if (select.empty()) return true;
    return std::any_of(select.begin(), select.end(),
                       [&](const std::string& c) { return StartsWith(code, c); });
  }
};

Result<CodeFilter> MakeCodeFilter(const ScanOptions& options, const Config& cfg,
                                  const Registry& reg, const std::string& config_file) {
  auto cfg_ignore = RuleCodes(cfg.ignore, reg, "[tool.dualtrack] ignore", config_file);
  if (!cfg_ignore) return cfg_ignore.take_error();
  auto cli_ignore = RuleCodes(options.ignore_codes, reg, "--ignore", "");
  if (!cli_ignore) return cli_ignore.take_error();
  CodeFilter out;
  out.ignore = std::move(*cfg_ignore);
  out.ignore.insert(out.ignore.end(), cli_ignore->begin(), cli_ignore->end());
  auto select = options.select_codes.empty()
                    ? RuleCodes(cfg.select, reg, "[tool.dualtrack] select", config_file)
                    : RuleCodes(options.select_codes, reg, "--select", "");
  if (!select) return select.take_error();
  out.select = std::move(*select);
  return out;
}

// Where the import graph puts each file: reachable from the entries, reached only behind a CUDA
// check, and (several entries) by how many of them.
struct Reach {
  std::unordered_set<std::string> reachable, behind_checks;
  std::unordered_map<std::string, std::int64_t> reached_by;
};

// The report's findings, skips, suppressions and counts from the files' results, each finding
// placed on the path (reachable, reached_by, guarded when reached only behind a check).
void Collect(std::vector<WalkItem>& items, std::vector<FileResult>& results,
             const CodeFilter& filter, const std::vector<std::string>& entries, const Reach& reach,
             ScanReport& report) {
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto& r = results[i];
    if (!r.skip_reason.empty()) report.skipped.push_back({items[i].rel, r.skip_reason});
    if (r.scanned) ++report.files_scanned;
    // setup.py is build code, not runtime; a notebook is a script.
    const bool is_py = items[i].kind == FileKind::kPython || items[i].kind == FileKind::kNotebook;
    if (!r.notebook_lines.empty()) {
      PlaceInCells(r.notebook_lines, r.findings);
      for (auto& s : r.suppressions)
        if (s.line >= 1 && static_cast<std::size_t>(s.line) <= r.notebook_lines.size()) {
          const NotebookLine& at = r.notebook_lines[static_cast<std::size_t>(s.line - 1)];
          s.cell = at.cell;
          s.cell_line = at.line;
          s.line = at.file_line;
        }
    }
    for (auto& s : r.suppressions) report.suppressions.push_back(std::move(s));
    for (auto& f : r.findings) {
      if (!filter.Keeps(f.code)) continue;
      if (is_py && !entries.empty()) {
        // FollowCalls may have found the function holding it never called.
        f.reachable = reach.reachable.count(items[i].rel) > 0 && f.reachable.value_or(true);
        if (!reach.reached_by.empty()) {
          // Entries that reach the file, but none reach a finding that is off every path (a
          // function no entry calls, an overridden default): reached_by > 0 means reachable.
          auto it = reach.reached_by.find(items[i].rel);
          f.reached_by = it == reach.reached_by.end() || !*f.reachable ? 0 : it->second;
        }
        // Reached only through imports behind a CUDA check (`if x.is_cuda: from .triton_ops
        // import ...`): on these entries' paths the module runs only with CUDA.
        if (*f.reachable && !f.guarded && reach.behind_checks.count(items[i].rel) > 0) {
          MarkGuarded(f);
        }
      }
      report.findings.push_back(std::move(f));
    }
  }
  std::sort(report.findings.begin(), report.findings.end(), [](const Finding& a, const Finding& b) {
    return std::tie(a.file, a.cell, a.line, a.column, a.code) <
           std::tie(b.file, b.cell, b.line, b.column, b.code);
  });
  std::sort(report.skipped.begin(), report.skipped.end(),
            [](const Skipped& a, const Skipped& b) { return a.file < b.file; });
}

}  // namespace

// The scan's root: the first path when it is a folder, else its folder.
Result<fs::path> ScanRoot(const ScanOptions& options) {
  if (options.paths.empty()) return MakeError(ErrorCode::kUsage, "no path to scan");
  std::error_code ec;
  for (const auto& p : options.paths) {
    if (!fs::exists(fs::symlink_status(p, ec)))
      return MakeError(ErrorCode::kInput, "no such file or directory", p.string());
  }
  const fs::path& first = options.paths.front();
  fs::path root = fs::is_directory(first, ec) ? first : first.parent_path();
  if (root.empty()) root = ".";
  return root;
}

// The search context: the registry's trigger words as prefilters. "__main__" joins the Python
// trigger words unless a trigger word could start where it does (only the shortest needle at a
// position is reported).
Context MakeContext(const Registry& reg, const std::unordered_set<std::string>* own_tops,
                    std::uint64_t max_file_size) {
  const auto& words = reg.FileTriggers();
  bool python_main = std::none_of(words.begin(), words.end(),
                                  [](const FileTrigger& t) { return StartsWith(t.word, "__"); });
  return Context{reg,
                 own_tops,
                 FileAdmission(words, python_main),
                 python_main,
                 Prefilter(CppNeedles(reg)),
                 max_file_size};
}

// Which modules the entries reach (and, for several entries, how many reach each), with the
// call paths when the entries were named rather than guessed.
Reach ReachFromEntries(const Context& ctx, const std::vector<WalkItem>& items,
                       std::vector<FileResult>& results,
                       const std::unordered_set<std::string>& init_dirs,
                       const std::vector<PyModule>& modules, const Entries& entries,
                       unsigned threads, ScanReport& report) {
  Reach reach;
  reach.reachable = ReachableModules(modules, entries.files, &reach.behind_checks);
  report.entries = entries.files;
  if (!entries.guessed && !entries.files.empty()) {
    report.path.emplace();
    FollowCalls(ctx, items, results, init_dirs, reach.reachable, entries.files, threads,
                *report.path);
  }
  // Several entries (a folder, a test suite): which of them reach each module, so that a member
  // that alone needs CUDA can be told from code every member needs. Bounded: one graph walk each.
  if (entries.files.size() > 1 && entries.files.size() <= 256) {
    for (const auto& entry : entries.files) {
      std::unordered_set<std::string> behind;  // Reached only behind a check: not needed there.
      for (const auto& rel : ReachableModules(modules, {entry}, &behind))
        if (!behind.count(rel)) ++reach.reached_by[rel];
    }
  }
  return reach;
}

namespace {

// ScanReport::inputs: the walked files, and beside them what the scan reads to decide (its
// configuration, the ignore files of each folder, the top-level documents PickEntries reads).
std::vector<std::string> ScanInputs(const std::vector<WalkItem>& items, const fs::path& abs_root) {
  std::vector<std::string> inputs;
  inputs.reserve(items.size() + 8);
  std::unordered_set<std::string> dirs;
  for (const WalkItem& item : items) {
    inputs.push_back(item.abs);
    dirs.insert(fs::path(item.abs).parent_path().string());
  }
  dirs.insert(abs_root.string());
  for (const std::string& d : dirs) inputs.push_back((fs::path(d) / ".gitignore").string());
  for (const char* name : {"pyproject.toml", ".git/info/exclude"})
    inputs.push_back((abs_root / name).string());
  std::error_code ec;
  for (fs::directory_iterator it(abs_root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string ext = it->path().extension().string();
    if (ext == ".md" || ext == ".rst" || ext == ".txt" || ext == ".cfg" || ext == ".toml")
      inputs.push_back(it->path().string());
  }
  return inputs;
}

}  // namespace

Result<ScanReport> Scan(const ScanOptions& options) {
  auto root_or = ScanRoot(options);
  if (!root_or) return root_or.take_error();
  const fs::path root = *root_or;
  std::error_code ec;
  ScanReport report;
  report.root = Rel(root.lexically_normal());
  if (report.root.empty() || report.root == "/") report.root = root.generic_string();
  while (report.root.size() > 1 && report.root.back() == '/') report.root.pop_back();
  Config cfg;
  if (options.read_pyproject) {
    auto c = ReadConfig(root);
    if (!c) return c.take_error();
    cfg = std::move(*c);
  }
  auto reg = LoadRegistry(options, root, cfg);
  if (!reg) return reg.take_error();
  const std::string config_file = (root / "pyproject.toml").string();
  auto filter = MakeCodeFilter(options, cfg, *reg, config_file);
  if (!filter) return filter.take_error();

  WalkOptions wopt;
  wopt.exclude = cfg.exclude;
  wopt.exclude.insert(wopt.exclude.end(), options.exclude.begin(), options.exclude.end());
  wopt.honour_gitignore = options.honour_gitignore;
  wopt.max_file_size = options.max_file_size;
  std::unordered_set<std::string> own_tops = OwnTops(root);
  const Context ctx = MakeContext(*reg, &own_tops, options.max_file_size);
  const unsigned threads = DefaultThreads(options.threads);
  const fs::path abs_root = fs::absolute(root, ec).lexically_normal();
  wopt.root_real = fs::canonical(abs_root, ec).string();
  for (const auto& e : options.entries.empty() ? cfg.entry : options.entries)
    wopt.named.push_back(EntryRel(e, abs_root));
  auto [items, results] = WalkAndScan(ctx, options, wopt, abs_root, threads, report.skipped);
  std::unordered_set<std::string> init_dirs = InitDirs(items);
  AddSysPathTops(items, results, own_tops);
  FollowProjectFlags(ctx, items, results, init_dirs, threads);
  NameModulesBesideFiles(items, results, init_dirs);
  FollowCudaModules(ctx, items, results, init_dirs, threads);
  GuardBuiltSources(items, results);
  GuardOptionalExtensions(items, results, init_dirs);
  DropUnmetConditions(ctx, results);

  // Reachability over the project's own modules.
  std::vector<PyModule> modules;
  std::vector<std::string> mains;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (items[i].kind != FileKind::kPython && items[i].kind != FileKind::kSetupPy &&
        items[i].kind != FileKind::kNotebook)
      continue;
    modules.push_back(
        PyModule{items[i].rel, std::move(results[i].imports), std::move(results[i].sys_path)});
    if (results[i].has_main && items[i].kind == FileKind::kPython) mains.push_back(items[i].rel);
  }
  auto entries = ChooseEntries(options, cfg, items, mains, abs_root);
  if (!entries) return entries.take_error();
  Reach reach =
      ReachFromEntries(ctx, items, results, init_dirs, modules, *entries, threads, report);
  GuardLazyExtensionUses(items, results, entries->files.empty() ? nullptr : &reach.reachable);
  GuardConfigBackends(items, results);
  for (FileResult& r : results) SettleGuardedCodes(ctx.reg, r.findings);
  Collect(items, results, *filter, entries->files, reach, report);
  if (options.collect_inputs) report.inputs = ScanInputs(items, abs_root);
  // The per-file state (every file's imports, paths, the import graph) is freed while the caller
  // formats the report (on a large tree its frees take longer than the output), or not at all
  // when the process exits after the report.
  struct Leftovers {
    std::vector<WalkItem> items;
    std::vector<FileResult> results;
    std::vector<PyModule> modules;
    Reach reach;
    std::unordered_set<std::string> init_dirs;
  };
  auto leftovers = std::make_shared<Leftovers>(Leftovers{std::move(items), std::move(results),
                                                         std::move(modules), std::move(reach),
                                                         std::move(init_dirs)});
  if (options.process_exits_after)
    KeepUntilExit(std::move(leftovers));
  else
    ReleaseInBackground(std::move(leftovers));
  if (report.files_scanned == 0) {
    return MakeError(ErrorCode::kInput,
                     "nothing was scanned: no Python, notebook, C/C++/CUDA, build or environment "
                     "file found" +
                         std::string(report.skipped.empty() ? "" : " (some were skipped)"),
                     options.paths.front().string());
  }
  return report;
}

}  // namespace dt::scan
