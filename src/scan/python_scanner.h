// Scans one Python source (a .py file or a notebook cell): import and alias resolution by scope,
// guard detection and the device / library / extension rules of the registry.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "scan/sink.h"

namespace dt::scan {

// An import statement, kept for the project's import graph.
struct PyImport {
  std::string module;               // Dotted, without the leading dots of a relative import.
  int level = 0;                    // Number of leading dots.
  std::vector<std::string> names;   // from-import names (they may be submodules).
  // The import runs only behind a CUDA check (`if x.is_cuda:`, an ImportError fallback, or inside
  // a function this file calls only behind one): a module reached only through such imports is
  // guarded on that path. Files read for their imports alone leave it false.
  bool guarded = false;
  std::size_t line_index = 0;      // Logical line, while the file is scanned.
};

// What the rest of the project says about CUDA-only code when a file is scanned: Scan() fills it
// from the modules other files declare (FindingSink::DeclareCudaModule) and from the symbols earlier
// rounds found to depend on them.
struct CudaContext {
  std::vector<std::string> modules;          // Modules that exist only where a CUDA build ran.
  // Those of `modules` that also have a CPU build (CppExtension without CUDA, an op library of
  // .cpp sources): their uses are reported, but do not make the code around them CUDA-only.
  std::vector<std::string> cpu_built;
  // "pkg.mod.name" of project code that needs CUDA-only code: true when it reaches a compiled
  // extension, false when only GPU kernels (Triton).
  std::unordered_map<std::string, bool> symbols;

  // Whether `dotted` is one of `modules` or inside one.
  bool IsModule(std::string_view dotted) const;
  bool IsCpuBuilt(std::string_view dotted) const;
};

struct PyScanOptions {
  bool setup_py = false;     // Also checks requirement strings and extension declarations.
  std::string package;       // Dotted package of the file, for relative imports ("pkg.sub").
  // Top-level names of the project's own packages and modules: never a third-party library, even
  // when the knowledge base lists a library of the same name.
  const std::unordered_set<std::string>* own_tops = nullptr;
  const CudaContext* cuda = nullptr;
};

struct PyScanResult {
  std::vector<PyImport> imports;
  bool has_main = false;  // Has `if __name__ == "__main__":`.
  // Top-level functions, classes and module-level names of this file that reach CUDA-only code
  // (an extension, or another such symbol) with no other path.
  std::vector<std::pair<std::string, bool>> cuda_symbols;  // With CudaContext::symbols' flag.
  // Source files (base names) of the extension builds in this file, each with whether the build is
  // guarded (inside try/except with a fallback, or behind a device check).
  std::vector<std::pair<std::string, bool>> extension_sources;
};

PyScanResult ScanPython(std::string_view source, FindingSink& sink, const PyScanOptions& options);

// `is_setup_py` also checks string literals as requirement specifiers (install_requires).
PyScanResult ScanPython(std::string_view source, FindingSink& sink, bool is_setup_py);

}  // namespace dt::scan
