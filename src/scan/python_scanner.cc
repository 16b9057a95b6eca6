// The Python scan of one file: the lexer's tokens (python_lexer.h), the semantic model built once
// from them (python_model.h), the rules that query it and report (python_rules.h), and the passes
// after them.
#include "scan/python_scanner.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "scan/python_model.h"
#include "scan/python_rules.h"

namespace dt::scan {

namespace {
bool InAny(const std::vector<std::string>& modules, std::string_view dotted) {
  for (const auto& m : modules) {
    if (dotted.size() < m.size() || dotted.compare(0, m.size(), m) != 0) continue;
    if (dotted.size() == m.size() || dotted[m.size()] == '.') return true;
  }
  return false;
}
// The string parts of expression [b, e) joined as a folder (`os.path.join(ROOT_DIR, "lib")` is
// "lib"); a lone name is read through its module-level assignment (`lib_path = osp.join(this_dir,
// 'lib')`), once.
std::string FolderParts(const PyModel& m, std::size_t b, std::size_t e, bool follow = true) {
  if (follow && e == b + 1 && m.IsName(m.T(b))) {
    const TokenText name = m.Text(m.T(b));
    for (std::size_t li = 0; li < m.lines().size(); ++li) {
      const LogicalLine& a = m.lines()[li];
      if (m.ScopeOf(li) == 0 && a.end - a.begin >= 3 && m.Text(m.T(a.begin)) == name &&
          m.IsOp(m.T(a.begin + 1), "="))
        return FolderParts(m, a.begin + 2, a.end, false);
    }
    return {};
  }
  std::string dir;
  for (std::size_t a = b; a < e; ++a) {
    if (m.T(a).kind() != TokKind::kString || IsFString(m.Text(m.T(a)))) continue;
    std::string_view part = StringBody(m.Text(m.T(a)));
    while (part.starts_with("./")) part.remove_prefix(2);
    if (part.empty() || part == "." || part.find_first_of("\\:") != std::string_view::npos)
      continue;
    if (!dir.empty()) dir += '/';
    dir += part;
  }
  return dir;
}

// `sys.path.append(os.path.join(ROOT_DIR, "models"))`, `sys.path.insert(0, "../lib")`: the
// string parts of the folder, joined, relative to the file (a folder named from the script's own
// place, the usual form in research code). A helper that inserts its parameter (`def
// add_path(path): sys.path.insert(0, path)`, the `_init_paths.py` of many detection projects)
// adds what the file's calls of it pass.
std::vector<std::string> SysPathDirs(const PyModel& m) {
  std::vector<std::string> out;
  if (m.source().find("sys.path") == std::string_view::npos) return out;
  for (std::size_t li = 0; li < m.lines().size(); ++li) {
    const LogicalLine& l = m.lines()[li];
    for (std::size_t k = l.begin; k + 5 < l.end; ++k) {
      if (!m.Is(m.T(k), "sys") || !m.IsOp(m.T(k + 1), ".") || !m.Is(m.T(k + 2), "path") ||
          !m.IsOp(m.T(k + 3), ".") || !(m.Is(m.T(k + 4), "append") || m.Is(m.T(k + 4), "insert")) ||
          !m.IsOp(m.T(k + 5), "("))
        continue;
      const std::size_t close = m.Matching(k + 5, l.end);
      std::size_t arg = k + 6;  // The last argument: the folder.
      for (std::size_t a = k + 6; a < close; ++a)
        if (m.IsOp(m.T(a), ",") && m.EnclosingOpen(a, k + 5) == k + 5) arg = a + 1;
      const PyScope& def = m.scope(m.ScopeOf(li));
      if (close == arg + 1 && m.IsName(m.T(arg)) && def.is_def && def.parent == 0 &&
          def.params.count(m.Text(m.T(arg))) > 0) {
        for (const LogicalLine& c : m.lines())
          for (std::size_t j = c.begin; j + 2 < c.end; ++j)
            if (m.Text(m.T(j)) == def.name && m.IsOp(m.T(j + 1), "(") &&
                (j == c.begin || !m.Is(m.T(j - 1), "def")))
              if (std::string dir = FolderParts(m, j + 2, m.Matching(j + 1, c.end)); !dir.empty())
                out.push_back(std::move(dir));
        break;
      }
      if (std::string dir = FolderParts(m, arg, close); !dir.empty()) out.push_back(std::move(dir));
      break;
    }
  }
  return out;
}

// `MODEL = importlib.import_module(FLAGS.model)` with `--model` defaulting to "votenet": the
// default run imports that module, as `import votenet` would (a literal name too).
void DynamicImports(PyModel& m) {
  if (m.source().find("import_module") == std::string_view::npos) return;
  for (std::size_t li = 0; li < m.lines().size(); ++li) {
    const LogicalLine& l = m.lines()[li];
    for (std::size_t k = l.begin; k + 2 < l.end; ++k) {
      if (!m.Is(m.T(k), "import_module") || !m.IsOp(m.T(k + 1), "(")) continue;
      if (m.Callee(k + 1, l.begin, m.ScopeOf(li)) != "importlib.import_module") continue;
      std::size_t arg = k + 2;
      while (arg < l.end && !m.IsOp(m.T(arg), ",") && !m.IsOp(m.T(arg), ")")) ++arg;
      const std::string_view name = m.settings().DefaultString(m, k + 2, arg);
      if (name.empty() || name.front() == '.') continue;
      PyImport imp;
      imp.module = std::string(name);
      imp.line_index = li;
      m.imports().push_back(std::move(imp));
    }
  }
}

// The physical lines of the file's import statements (sorted): a finding there only imports.
std::vector<std::uint32_t> ImportLines(const PyModel& m) {
  std::vector<std::uint32_t> out;
  for (const LogicalLine& l : m.lines()) {
    if (l.begin >= l.end || !(m.Is(m.T(l.begin), "import") || m.Is(m.T(l.begin), "from"))) continue;
    for (std::uint32_t n = m.Line(m.T(l.begin)); n <= m.Line(m.T(l.end - 1)); ++n) out.push_back(n);
  }
  return out;
}

}  // namespace

bool CudaContext::IsModule(std::string_view dotted) const { return InAny(modules, dotted); }
bool CudaContext::IsCpuBuilt(std::string_view dotted) const { return InAny(cpu_built, dotted); }

PyScanResult ScanPython(std::string_view source, FindingSink& sink, const PyScanOptions& options) {
  PyModel model(source, sink.registry(), options);
  PyScanResult result;
  if (model.ImportsOnly()) {
    // What a file with no trigger word in its code contributes: its imports (guarded when
    // optional, for reachability) and whether it is a script.
    model.BuildImports();
    result.sys_path = SysPathDirs(model);
    result.imports = std::move(model.imports());
    result.has_main = model.has_main();
    return result;
  }
  model.Build();
  result.off_flags = model.settings().OffFlags();
  result.launch_flags = LaunchFlags(model);
  result.requiring = model.Requiring();
  result.tensor_dispatch = model.TensorDispatch();
  result.calls.assign(model.StatementCalls().begin(), model.StatementCalls().end());
  result.on_flags = model.settings().OnFlags();
  result.flag_reads = FlagReads(model);
  PyRuleContext cx{model, sink, options, result};
  RunRules(cx);
  if (!model.settings().option_lines().empty())
    sink.MarkOptionDefaults(model.settings().option_lines());
  GuardPasses(cx);
  sink.MarkImportLines(ImportLines(model));
  RecordJitCalls(cx);
  RecordProcessGroups(cx);
  if (options.collect_calls) CollectCalls(model, options, result);
  DynamicImports(model);
  result.sys_path = SysPathDirs(model);
  for (PyImport& imp : model.imports()) imp.guarded = model.RunsBehindCheck(imp.line_index);
  result.imports = std::move(model.imports());
  result.has_main = model.has_main();
  PropagateLocal(cx);
  return result;
}

PyScanResult ScanPython(std::string_view source, FindingSink& sink, bool is_setup_py) {
  PyScanOptions opt;
  opt.setup_py = is_setup_py;
  return ScanPython(source, sink, opt);
}

}  // namespace dt::scan
