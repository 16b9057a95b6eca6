// Scans one Python source (a .py file or a notebook cell): import and alias resolution by scope,
// guard detection and the device / library / extension rules of the registry.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "scan/sink.h"
#include "util/strings.h"

namespace dt::scan {

// An import statement, kept for the project's import graph.
struct PyImport {
  std::string module;              // Dotted, without the leading dots of a relative import.
  int level = 0;                   // Number of leading dots.
  std::vector<std::string> names;  // from-import names (they may be submodules).
  // The import runs only behind a CUDA check (`if x.is_cuda:`, an ImportError fallback, or inside
  // a function this file calls only behind one): a module reached only through such imports is
  // guarded on that path. Files read for their imports alone leave it false.
  bool guarded = false;
  std::size_t line_index = 0;  // Logical line, while the file is scanned.
};

// What the rest of the project says about CUDA-only code when a file is scanned: Scan() fills it
// from the modules other files declare (FindingSink::DeclareCudaModule) and from the symbols
// earlier rounds found to depend on them.
struct CudaContext {
  std::vector<std::string> modules;  // Modules that exist only where a CUDA build ran.
  // Those of `modules` that also have a CPU build (CppExtension without CUDA, an op library of
  // .cpp sources): their uses are reported, but do not make the code around them CUDA-only.
  std::vector<std::string> cpu_built;
  // "pkg.mod.name" of project code that needs CUDA-only code: true when it reaches a compiled
  // extension, false when only GPU kernels (Triton).
  std::unordered_map<std::string, bool> symbols;
  // The modules that hold one of `symbols`, and the packages above them: a name bound to one
  // (`from pkg import ops`, `import pkg.ops`) reaches a symbol through an attribute (`ops.run()`).
  std::unordered_set<std::string, NameHash, std::equal_to<>> symbol_packages;
  // Of `symbols`, those a package's __init__.py re-exports (`from .grid import GridEncoder`):
  // their importers are reported, but the importers' own definitions do not become symbols in
  // turn (a library's namespace package re-exports hundreds of names, and following each one
  // through every importer makes half a library "CUDA").
  std::unordered_set<std::string> reexported;
  // Of `symbols`, those whose kernels the project keeps in pure PyTorch as well (a module-level
  // `*_ref` / `*_pytorch` function beside the extension calls): their callers have a replacement.
  std::unordered_set<std::string> referenced;
  // The options some file of the project declares off by default (PySettings::OffFlags): a test
  // of `self.args.NAME` in another file is an opt-in (RAFT's `--alternate_corr`).
  std::unordered_set<std::string, NameHash, std::equal_to<>> off_flags;
  // Attributes some file sets to True only behind a launcher's test (PyModel::LaunchFlags): a
  // test of one is a launch-mode test, whatever an option of the same name declares.
  std::unordered_set<std::string, NameHash, std::equal_to<>> launch_flags;
  // Module-level functions some file defines that stop the run without CUDA
  // (PyScanResult::requiring): a statement calling one guards what follows it.
  std::unordered_set<std::string, NameHash, std::equal_to<>> requiring;
  // The names of project functions some file calls with a CUDA build's arguments
  // (PyScanResult::jit_calls): a function of that name that hands its arguments to `load()`
  // (PyScanResult::jit_builders) builds CUDA code.
  std::unordered_set<std::string, NameHash, std::equal_to<>> jit_builders;
  // Of jit_builders, those some call runs unguarded (PyScanResult::jit_unguarded): a helper that
  // every caller reaches only behind a check builds only there.
  std::unordered_set<std::string, NameHash, std::equal_to<>> jit_unguarded;

  // Whether `dotted` is one of `modules` or inside one.
  bool IsModule(std::string_view dotted) const;
  bool IsCpuBuilt(std::string_view dotted) const;
};

struct PyScanOptions {
  bool setup_py = false;  // Also checks requirement strings and extension declarations.
  // Also lists the file's module-level functions and every mention of a function name that may be
  // one of the project's (PyScanResult::defs / refs), for the call paths of CallPaths().
  bool collect_calls = false;
  std::string package;  // Dotted package of the file, for relative imports ("pkg.sub").
  // The file is a package's __init__.py: its relative imports re-export names of the package.
  bool package_init = false;
  // Top-level names of the project's own packages and modules: never a third-party library, even
  // when the knowledge base lists a library of the same name.
  const std::unordered_set<std::string>* own_tops = nullptr;
  const CudaContext* cuda = nullptr;
  // Only the imports and the module test (PyScanResult::imports and has_main), no findings: what
  // a file without a trigger word contributes.
  bool imports_only = false;
};

// A module-level function (collect_calls).
struct PyTopDef {
  std::string name;
  std::uint32_t first_line = 0;  // Physical, 1-based: its first decorator ...
  std::uint32_t last_line = 0;   // ... to its body's last line.
  // A decorator that may register it under a name (`@REGISTRY.register()`, `@app.command()`):
  // called from where no reference to it can be seen.
  bool registered = false;
  // A method of a module-level class, named "Class.method": called through `self.method()` in its
  // class, or from anywhere through an attribute, or by a framework (`forward`).
  bool method = false;
  // The method's class is registered by a decorator (`@ARCH_REGISTRY.register()`): it may be
  // built from where no mention of its name can be seen.
  bool class_registered = false;
};

// A mention of a name that may be a module-level function of the project (collect_calls): a call, a
// callback passed on, or a string that may name one (`getattr(mod, "build")`).
struct PyRef {
  // "utils.torch_utils.smart_DDP" through the file's imports; the bare name for the file's own
  // definitions (`own`) and for strings (`text`).
  std::string target;
  bool own = false;
  bool text = false;
  bool guarded = false;  // The line runs only behind a CUDA or launch-mode check.
  std::string in_def;  // The module-level function holding it; empty at module level or in a class.
  bool in_class = false;
  bool in_main =
      false;  // Under `if __name__ == "__main__":`: runs only when the file is the script.
  // When the mention is called: what the call passes.
  bool call = false;
  int positional = 0;
  bool spread = false;                // `*args` or `**kwargs`: anything may be passed.
  std::vector<std::string> keywords;  // `device=...`
};

// A parameter whose default is a CUDA device (`def __init__(self, device="cuda")`): the default
// is used only by calls that pass no value for it (collect_calls).
struct PyDefault {
  std::string owner;  // The module-level function, or the module-level class of an __init__.
  std::string param;
  int index = 0;  // Among the positional parameters callers fill (after self); -1 keyword-only.
  std::uint32_t line = 0;  // Physical line of the default.
};

struct PyScanResult {
  std::vector<PyImport> imports;
  bool has_main = false;  // Has `if __name__ == "__main__":`.
  // Top-level functions, classes and module-level names of this file that reach CUDA-only code
  // (an extension, or another such symbol) with no other path.
  std::vector<std::pair<std::string, bool>> cuda_symbols;  // With CudaContext::symbols' flag.
  std::vector<std::string> reexports;     // Of cuda_symbols, the re-exported names.
  std::vector<std::string> off_flags;     // PySettings::OffFlags().
  std::vector<std::string> on_flags;      // PySettings::OnFlags().
  std::vector<std::string> launch_flags;  // PyModel::LaunchFlags().
  // Module-level functions whose body stops the run unless CUDA is there (`if not
  // torch.cuda.is_available(): sys.exit(1)`, an `else:` exit after launch and CUDA tests).
  std::vector<std::string> requiring;
  std::vector<std::string> calls;  // PyModel::StatementCalls().
  // Folders `sys.path.append(os.path.join(HERE, "models"))` adds, relative to the file's own
  // folder as written ("models", "../utils"); Scan() places them in the project.
  std::vector<std::string> sys_path;
  // The last names of the functions this file calls with a CUDA build's arguments
  // (`custom_ops.get_plugin("op", sources=srcs, extra_cuda_cflags=[...])`): JIT-build helpers.
  std::vector<std::string> jit_calls;
  std::vector<std::string> jit_unguarded;  // Of jit_calls, those with an unguarded call.
  // Its module-level functions that hand their own parameters to `load()` / `load_inline()`
  // (`def get_plugin(name, sources, **kw): load(name=name, sources=sources, **kw)`): what they
  // build is what their callers pass (CudaContext::jit_builders).
  std::vector<std::string> jit_builders;
  bool tensor_dispatch = false;  // PyModel::TensorDispatch().
  // An unguarded use of a compiled extension outside every function body: it runs when the module
  // is imported, so the import cannot be made lazy (GuardLazyExtensionUses).
  bool extension_used_at_import = false;
  // An `init_process_group(...)` call that no check keeps from a run: the process group, with the
  // backend a config file names, is every run's (GuardConfigBackends).
  bool every_run_process_group = false;
  // Its CUDA symbols reach kernels the file also keeps in pure PyTorch (`*_ref`, `*_pytorch`), or
  // symbols that do (CudaContext::referenced).
  bool reference_impl = false;
  std::vector<std::string> flag_reads;  // PyModel::FlagReads().
  // Source files (base names) of the extension builds in this file, each with whether the build is
  // guarded (inside try/except with a fallback, or behind a device check).
  std::vector<std::pair<std::string, bool>> extension_sources;
  std::vector<PyTopDef> defs;       // collect_calls only.
  std::vector<PyRef> refs;          // collect_calls only.
  std::vector<PyDefault> defaults;  // collect_calls only.
  // Attribute names used other than `self.m` / `cls.m` of the class's own method (collect_calls,
  // sorted, unique): a method so named may be called from here.
  std::vector<std::string> attrs;
  // What the file says about where and what it trains (collect_calls): it names MPS (`"mps"`,
  // `torch.backends.mps`), it places through a framework that picks MPS itself (accelerate,
  // Lightning, the transformers Trainer), its first convolution or attention layer, and its first
  // `.backward(` call. Lines are 0 when there is none.
  bool mentions_mps = false;
  bool framework_device = false;
  std::uint32_t model_line = 0;
  std::string model_api;
  std::uint32_t backward_line = 0;
  // `importlib.import_module(args.model)`: a module chosen at run time, which no import names.
  bool dynamic_import = false;
};

PyScanResult ScanPython(std::string_view source, FindingSink& sink, const PyScanOptions& options);

// `is_setup_py` also checks string literals as requirement specifiers (install_requires).
PyScanResult ScanPython(std::string_view source, FindingSink& sink, bool is_setup_py);

}  // namespace dt::scan
