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
  if (options.collect_calls) CollectCalls(model, options, result);
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
