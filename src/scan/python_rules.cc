// The rules' line loop: reads each statement worth reading (Maybe()) and hands its tokens to the
// rule units; then the guard passes that need the findings.
#include "scan/python_rules.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace dt::scan {

namespace {

// The module wrappers whose device keywords are CUDA device indexes.
bool IsParallelWrapper(std::string_view callee) {
  for (std::string_view w :
       {"DataParallel", "DistributedDataParallel", "DDP", "FullyShardedDataParallel", "FSDP"})
    if (callee == w || EndsWith(callee, "." + std::string(w))) return true;
  return false;
}

bool InBranch(const PyRuleContext& cx, std::size_t k) {
  for (auto [b, e] : cx.branches)
    if (k >= b && k < e) return true;
  return false;
}

// Keyword arguments: the registry's keyword rules, `device_map={...}`, DDP's device indexes.
void KeywordArgFindings(PyRuleContext& cx, std::size_t k, const LineRead& line, bool guarded) {
  const PyModel& m = cx.model;
  const LogicalLine& l = line.l;
  const Token& t = m.T(k);
  if (k + 1 < l.end && m.IsOp(m.T(k + 1), "=") && k > l.begin &&
      (m.IsOp(m.T(k - 1), "(") || m.IsOp(m.T(k - 1), ",")) && m.Head(l) != "def" &&
      m.Head(l) != "class") {
    KeywordFinding(cx, k, l, line.scope, guarded);
    if (IsCudaBuildKeyword(m.Text(t))) WrapperBuild(cx, k, line, guarded);
  }
  if (m.Text(t) == "device_map" && k + 2 < l.end && m.IsOp(m.T(k + 1), "=") &&
      m.IsOp(m.T(k + 2), "{")) {
    DeviceMap(cx, k, l, guarded);
  }
  if ((m.Text(t) == "device_ids" || m.Text(t) == "output_device" || m.Text(t) == "device_id") &&
      k + 2 < l.end && m.IsOp(m.T(k + 1), "=")) {
    // DDP(model, device_ids=[local_rank], output_device=local_rank): CUDA device indexes.
    std::size_t v = k + 2;
    bool list = m.IsOp(m.T(v), "[");
    if (list) ++v;
    const std::size_t before = cx.sink.count();
    if (m.Text(t) != "device_id")
      IntegerDevice(cx, v, l, guarded, std::string(m.Text(t)) + (list ? "=[" : "="),
                    list ? "]" : "");
    if (cx.sink.count() == before && !m.Is(m.T(k + 2), "None") &&
        IsParallelWrapper(m.Callee(m.EnclosingOpen(k, l.begin), l.begin, line.scope)))
      // DataParallel(model, device_ids=args.gpus): whatever the value, the wrapper reads GPU
      // indexes there.
      cx.sink.Add("DT113", m.Line(t), m.Column(t), std::string(m.Text(t)) + "=...", guarded);
  }
}

// A name token of the statement; returns the last token it covered (a whole dotted chain when
// it reported one).
std::size_t NameFindings(PyRuleContext& cx, std::size_t k, LineRead& line, bool guarded) {
  PyModel& m = cx.model;
  const LogicalLine& l = line.l;
  const Token& t = m.T(k);
  if (HelperBuildCall(cx, k, l)) WrapperBuild(cx, k + 2, line, guarded);
  if (k > l.begin && m.IsOp(m.T(k - 1), ".")) {
    AttributeFindings(cx, k, l, guarded);
    return k;
  }
  if (m.Text(t) == "def" || m.Text(t) == "class") return k + 1;  // Its name is no use.
  KeywordArgFindings(cx, k, line, guarded);
  NumpyMovedBeforeCast(cx, k, l, guarded);  // `from_flattened_numpy(x).to(device).float()`.
  if (m.IsKernelName(m.Text(t)) && k + 1 < l.end && m.IsOp(m.T(k + 1), "[")) {
    cx.sink.Add("DT207", m.Line(t), m.Column(t), std::string(m.Text(t)) + "[grid](...)", guarded);
    NoteCudaAt(cx, line.scope, guarded, false);
    line.launched = true;
    return k;
  }
  if (m.IsHandle(m.Text(t), line.scope)) {
    HandleUse(cx, k, line, guarded);
    return k;
  }
  if (m.TopDef(m.Text(t)) != nullptr && !m.Lookup(m.Text(t), line.scope)) {
    OwnReference(cx, k, line, guarded);
    return k;
  }
  const std::string* bound = m.Lookup(m.Text(t), line.scope);
  const bool call = k + 1 < l.end && m.IsOp(m.T(k + 1), "(");
  if (bound == nullptr && call) {
    // `extension = CUDAExtension` in one branch, then `extension("pkg._C", sources)`.
    auto ev = cx.extension_vars.find(m.Text(t));
    if (ev != cx.extension_vars.end() && ev->second.cuda) {
      ExtensionBuild(cx, k, k + 1, l, line.scope, guarded,
                     "torch.utils.cpp_extension.CUDAExtension");
      return k;
    }
  }
  if (m.Text(t) != "torch" && bound == nullptr) return k;
  return ChainFindings(cx, k, bound, line, guarded);
}

// A statement that stops the run unless CUDA (DT213) or a multi-process launch (DT212) is there:
// named by its head (`assert`, `raise NotImplementedError`, `sys.exit`).
void RequirementFinding(PyRuleContext& cx, const LogicalLine& l, bool launch, bool guarded) {
  const PyModel& m = cx.model;
  std::string name(m.Text(m.T(l.begin)));
  std::size_t k = l.begin + 1;
  while (k < l.end && (m.IsName(m.T(k)) || m.IsOp(m.T(k), ".")) && name.size() < 60) {
    if (!m.IsOp(m.T(k), ".") && !m.IsOp(m.T(k - 1), ".")) name += ' ';
    name += m.Text(m.T(k));
    ++k;
  }
  cx.sink.Add(launch ? "DT212" : "DT213", m.Line(m.T(l.begin)), m.Column(m.T(l.begin)), name,
              guarded);
}

// A statement that passed Maybe().
void LineFindings(PyRuleContext& cx, std::size_t li, const LogicalLine& l, int scope,
                  bool guarded) {
  const PyModel& m = cx.model;
  if (m.StringsOnly(l)) return;  // A docstring.
  LineRead line{li, l, scope, guarded};
  for (std::size_t k = l.begin; k < l.end; ++k) {
    const Token& t = m.T(k);
    const bool in_branch = line.line_guarded || (!cx.branches.empty() && InBranch(cx, k));
    if (t.kind() == TokKind::kString) {
      StringTokenFindings(cx, k, line, in_branch);
    } else if (m.IsName(t)) {
      k = NameFindings(cx, k, line, in_branch);
    }
  }
  HandleAssignment(cx, line);
}

// A module-level function or class whose every reference in this file runs behind a CUDA check
// (directly, or from another such definition) runs only with CUDA on the paths this file drives:
// `dtw()` calls `dtw_cuda()` under `if x.is_cuda:` with a fallback, so the kernel launch inside
// is guarded; a class registered under a name the value gets only behind a check is too.
// Unlike GuardPrivateDefinitions this covers public names too: another module may call one
// unchecked (a test of the CUDA path), which this file cannot see; the finding then reads as
// guarded there as well. A function this file never calls is left as it is.
void GuardCalledOnlyUnderChecks(PyRuleContext& cx) {
  PyModel& m = cx.model;
  // name -> scope, for the definitions with an unguarded finding or an import (of a module
  // that the import graph then reaches only behind the check).
  const std::unordered_set<std::size_t> importing = ImportingTops(m);
  std::unordered_map<std::string_view, std::size_t> defs;
  for (std::size_t s = 1; s < m.scopes().size(); ++s) {
    const PyScope& sc = m.scopes()[s];
    if (sc.parent != 0 || sc.name.empty() || sc.kernel) continue;
    const auto [first, last] = m.ScopeLines(s);
    if (importing.count(s) || cx.sink.AnyUnguarded(first, last)) defs.emplace(sc.name, s);
  }
  if (defs.empty()) return;
  std::unordered_set<std::size_t> past_stops;
  for (std::size_t s : CalledOnlyUnderChecks(m, defs, &past_stops)) {
    m.MarkGuardedTop(s);
    const auto [first, last] = m.ScopeLines(s);
    // Past a stop, an NCCL process group is still every run's (DT211).
    cx.sink.GuardLines(first, last, past_stops.count(s) > 0);
  }
}

}  // namespace

void RunRules(PyRuleContext& cx) {
  PyModel& m = cx.model;
  for (std::size_t li = 0; li < m.lines().size(); ++li) {
    const auto& l = m.lines()[li];
    if (m.InKernel(li)) {
      KernelFinding(cx, li);
      continue;
    }
    const int scope = m.ScopeOf(li);
    const bool line_guard = m.IsChecked(li);
    cx.branches.clear();
    const bool maybe = m.Maybe(l.begin, l.end);  // Once: GuardedBranches adds no hot name.
    if (!line_guard && maybe) m.GuardedBranches(l, scope, cx.branches);
    if (const auto req = m.RequirementAt(li); req != PyModel::Requirement::kNone) {
      RequirementFinding(cx, l, req == PyModel::Requirement::kLaunch, line_guard);
    }
    if (m.First(l) == "import" || m.First(l) == "from") {
      ImportFindings(cx, l, scope, line_guard || m.IsOptionalLine(li), m.IsRequiredLine(li));
    } else if (maybe) {
      LineFindings(cx, li, l, scope, line_guard || m.IsOptionalLine(li));
    }
  }
}

void RecordProcessGroups(PyRuleContext& cx) {
  const PyModel& m = cx.model;
  for (std::size_t li = 0; li < m.lines().size() && !cx.result.every_run_process_group; ++li) {
    const LogicalLine& l = m.lines()[li];
    if (m.First(l) == "def" || m.First(l) == "import" || m.First(l) == "from") continue;
    for (std::size_t k = l.begin; k + 1 < l.end; ++k) {
      if (!m.IsName(m.T(k)) || m.Text(m.T(k)) != "init_process_group" || !m.IsOp(m.T(k + 1), "(") ||
          m.RunsBehindCheck(li))
        continue;
      // `def _init_dist_pytorch(backend): dist.init_process_group(backend=backend)`: a helper
      // whose backend is its parameter leaves the decision to its callers (in other files).
      std::size_t v = k + 2;
      if (v + 2 < l.end && m.Text(m.T(v)) == "backend" && m.IsOp(m.T(v + 1), "=")) v += 2;
      const int scope = m.ScopeOf(li);
      if (v < l.end && scope >= 0 && m.IsName(m.T(v)) &&
          m.scopes()[static_cast<std::size_t>(scope)].params.count(m.Text(m.T(v))))
        continue;
      cx.result.every_run_process_group = true;
      break;
    }
  }
}

void GuardPasses(PyRuleContext& cx) {
  for (const LineRange& r : GuardLibraryBranches(cx.model)) cx.sink.GuardLines(r.first, r.last);
  for (const LineRange& r : DeviceFallbackLines(cx.model)) cx.sink.GuardLines(r.first, r.last);
  GuardPrivateDefinitions(cx);
  GuardCalledOnlyUnderChecks(cx);
}

}  // namespace dt::scan
