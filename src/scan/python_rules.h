// The Python rules: small units that read a statement through the semantic model (python_model.h)
// and report to the finding sink. RunRules() reads the file's lines in order and hands each token
// of a statement worth reading to the unit for its kind (python_rules.cc); the units live by what
// they report:
//   python_rules_device.cc     device placement: .cuda(), .to(i), device strings and indexes
//   python_rules_library.cc    imports, registry APIs and keywords, CUDA-only libraries, kernels
//   python_rules_extension.cc  compiled extensions: builds, handles, the module's CUDA symbols
//   python_rules_strings.cc    string literals: f-strings, prose, tools, flags, requirements
// A new rule goes into the unit of its kind and is called from the dispatch in python_rules.cc;
// what it needs to know about the file is a query of the model (a new fact goes there).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "scan/python_model.h"
#include "scan/python_scanner.h"
#include "scan/sink.h"

namespace dt::scan {

// Names bound to an extension class (`extension = CppExtension`, then `= CUDAExtension` where
// CUDA is found): which classes each was given.
struct ExtensionVar {
  bool cuda = false;
  bool cpp = false;
};

// A function that builds an extension whose name it makes from its parameters (OpenPCDet's and
// mmdet's `make_cuda_ext(name, module, sources)` returning `CUDAExtension(name='%s.%s' % (module,
// name), ...)`): its parameters in order and the name's parts, each a literal or a parameter.
struct ExtensionHelper {
  std::vector<std::string_view> params;
  std::vector<std::pair<bool, std::string>> parts;  // (is a parameter, text)
  bool cuda = false;                                // It builds a CUDAExtension.
};

// What every rule reads and writes: the model, the sink, the options and the result, and what
// the rules find as they read the lines in order, for later lines and the passes after them.
struct PyRuleContext {
  PyModel& model;
  FindingSink& sink;
  const PyScanOptions& opt;
  PyScanResult& result;
  std::unordered_map<std::string_view, ExtensionVar> extension_vars{};
  // Module-level names that reach CUDA-only code: true for a compiled extension, false for kernels.
  std::unordered_map<std::string_view, bool> cuda_tops{};
  std::unordered_map<std::string_view, std::unordered_set<std::string_view>> local_refs{};
  std::unordered_map<std::size_t, std::vector<std::string_view>> module_refs{};
  // Per module-level name: 1 when referenced under a guard, 2 when unguarded (bits or-ed).
  std::unordered_map<std::string_view, int> ref_guards{};
  std::vector<std::pair<std::size_t, std::size_t>> branches{};  // Guarded token ranges of the line.
  // Objects built from a project class that wraps an extension (`GaussianRasterizer(...)`): a call
  // of the object runs the extension; its other methods may not.
  std::unordered_set<std::string_view> wrapper_objects{};
  // Names a package's __init__.py re-exports from its modules (CudaContext::reexported).
  std::unordered_map<std::string_view, bool> reexports{};
  // Calls of JIT-build helpers (WrapperBuild): the helper's last name and the call's line.
  std::vector<std::pair<std::string, std::uint32_t>> jit_call_lines{};
  // Helpers of this file that build an extension named from their parameters (ExtensionHelper),
  // by def name; and the brackets of the build calls WrapperBuild read (once each, however many
  // CUDA keywords a call has).
  std::unordered_map<std::string_view, ExtensionHelper> extension_helpers{};
  std::unordered_set<std::size_t> helper_calls{};
};

// What LineFindings knows of the statement it reads.
struct LineRead {
  std::size_t li;
  const LogicalLine& l;
  int scope;
  bool line_guarded;
  bool launched = false;  // A kernel launch: the library names on the line are part of it.
  bool tainted = false;   // The line uses an extension handle or CUDA symbol unguarded.
};

// --- python_rules.cc -----------------------------------------------------------------------------

// Every line's findings, in order.
void RunRules(PyRuleContext& cx);
// The guards found once every line was read: library branches, device fallbacks, private
// definitions and functions called only behind checks. Marks the findings on their lines guarded.
void GuardPasses(PyRuleContext& cx);

// --- python_rules_device.cc ----------------------------------------------------------------------

// `th.from_numpy(arr).to(device)[t].float()`: a numpy array (float64 unless told otherwise) moved
// to the device before the cast that the code itself makes (DT204); the cast belongs before `.to`.
void NumpyMovedBeforeCast(PyRuleContext& cx, std::size_t k, const LogicalLine& l, bool guarded);
// `.cuda()`, `.double()`, `.to(i)`: methods of any object.
void AttributeFindings(PyRuleContext& cx, std::size_t k, const LogicalLine& l, bool guarded);
// `.to(args.gpu)`, `.to(local_rank)`, `.to(0)`: an integer device index is a CUDA device.
// `what` is the construct up to the index ("`.to(`", "`device_ids=[`"); `close` ends it.
void IntegerDevice(PyRuleContext& cx, std::size_t b, const LogicalLine& l, bool guarded,
                   std::string_view what, std::string_view close = ")");
// `device_map={"": LOCAL_RANK}` / `{"": int(os.environ["LOCAL_RANK"])}`.
void DeviceMap(PyRuleContext& cx, std::size_t k, const LogicalLine& l, bool guarded);
// "cuda" / "cuda:0" as a value.
void DeviceStringFinding(PyRuleContext& cx, std::size_t k, const LogicalLine& l, int scope,
                         bool guarded);
// Whether the call starting at k (its bracket at `open`) is used as a value, not as a test: not
// compared, not the condition of an if / while / assert, not negated.
bool CountAsValue(const PyModel& m, std::size_t k, std::size_t open, const LogicalLine& l);

// --- python_rules_library.cc ---------------------------------------------------------------------

// The one finding of a kernel, at its first decorator.
void KernelFinding(PyRuleContext& cx, std::size_t li);
// An import statement; `required`: it is in a `try:` whose ImportError handler only raises.
void ImportFindings(PyRuleContext& cx, const LogicalLine& l, int scope, bool guarded,
                    bool required);
// Registry match (or the torch.cuda catch-all) for a resolved dotted name.
bool ApiFinding(PyRuleContext& cx, const std::string& resolved, const Token& at, bool guarded,
                const LogicalLine* l = nullptr, std::size_t open = 0);
// A keyword argument of the registry (`load_in_8bit=True`, `optim="paged_adamw_32bit"`).
void KeywordFinding(PyRuleContext& cx, std::size_t k, const LogicalLine& l, int scope,
                    bool guarded);
// A dotted chain through torch or an import alias. Returns the last token covered.
std::size_t ChainFindings(PyRuleContext& cx, std::size_t k, const std::string* bound,
                          LineRead& line, bool guarded);

// --- python_rules_extension.cc -------------------------------------------------------------------

// A use of extension module `dotted` at `at` (DT305).
void ExtensionUse(PyRuleContext& cx, const Token& at, const std::string& dotted, bool guarded,
                  int scope);
// Marks the module-level definition `top` as reaching CUDA-only code when the use is unguarded.
void NoteCuda(PyRuleContext& cx, int top, bool guarded, bool ext);
void NoteCudaAt(PyRuleContext& cx, int scope, bool guarded, bool ext);
// A use of an extension handle (`_C.forward(...)`), unless it is assigned or tested for None.
void HandleUse(PyRuleContext& cx, std::size_t k, LineRead& line, bool guarded);
// A reference to one of this module's own definitions: the dependency graph, no finding.
void OwnReference(PyRuleContext& cx, std::size_t k, const LineRead& line, bool guarded);
// What an assignment binds once its line was read (handles, module-level symbols).
void HandleAssignment(PyRuleContext& cx, LineRead& line);
// `ext = CUDAExtension` and `load(...)` / `load_inline(...)` / `CUDAExtension(...)` builds.
void ExtensionBuildChain(PyRuleContext& cx, std::size_t k, std::size_t ce,
                         const std::string& resolved, const LineRead& line, bool use_guard);
void ExtensionBuild(PyRuleContext& cx, std::size_t k, std::size_t ce, const LogicalLine& l,
                    int scope, bool guarded, const std::string& resolved);
// A keyword argument that only a CUDA build takes: `extra_cuda_cflags=`, `cuda_sources=`, and the
// `sources_cuda=` of the mmcv family's `make_cuda_ext`.
inline bool IsCudaBuildKeyword(std::string_view name) {
  return name == "extra_cuda_cflags" || name == "cuda_sources" || name == "sources_cuda";
}
// A CUDA source string a build takes (`"ops/k.cu"`, token `t`, text `body`): DT301, or DT313 where
// the file keeps a reference implementation beside the kernel.
void CudaSourceFinding(PyRuleContext& cx, const Token& t, std::string_view body, bool guarded);
// A call of a JIT-build helper with CUDA build arguments, found at its keyword `kw`
// (`extra_cuda_cflags=`, `cuda_sources=`).
void WrapperBuild(PyRuleContext& cx, std::size_t kw, const LineRead& line, bool guarded);
// Whether name token `k` calls an ExtensionHelper of this file (`make_cuda_ext(...)`, with
// arguments): a build WrapperBuild reads, whatever its arguments' kinds.
bool HelperBuildCall(const PyRuleContext& cx, std::size_t k, const LogicalLine& l);
// Into the result, once the guard passes ran: the helpers called, and those called unguarded.
void RecordJitCalls(PyRuleContext& cx);
// Sets PyScanResult::every_run_process_group (after GuardPasses, which find the checks).
void RecordProcessGroups(PyRuleContext& cx);
void GuardPrivateDefinitions(PyRuleContext& cx);
// Module-level names reaching CUDA-only code through other module-level names of this file.
void PropagateLocal(PyRuleContext& cx);

// --- python_rules_strings.cc ---------------------------------------------------------------------

// A string token of the statement: DDP's keywords set by key, f-strings, device strings.
void StringTokenFindings(PyRuleContext& cx, std::size_t k, const LineRead& line, bool guarded);
// Prose: a string that is the message of a print, a warning, a log call or an exception, or a
// help / description text. It mentions CUDA; it uses nothing.
bool IsProse(const PyModel& m, std::size_t k, const LogicalLine& l);
// A string that is an element of a list, set, dict or tuple literal (a requirement list), not an
// argument of a call (a message).
bool InLiteralContainer(const PyModel& m, std::size_t k, const LogicalLine& l);

// --- python_calls.cc -----------------------------------------------------------------------------

// The module-level functions, and every mention of a name that may be one of the project's, for
// the call paths (PyScanOptions::collect_calls).
void CollectCalls(const PyModel& m, const PyScanOptions& opt, PyScanResult& result);

}  // namespace dt::scan
