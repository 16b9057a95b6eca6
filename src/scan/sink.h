// Collects the findings of one file: fills class, severity, message and replacement from the
// registry, applies inline suppressions (`dualtrack: ignore[DT101]`) and keeps one finding per
// line and code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "scan/registry.h"
#include "scan/scan.h"

namespace dt::scan {

class FindingSink {
 public:
  FindingSink(const Registry& reg, std::string rel, std::string_view source,
              std::vector<Finding>& out, std::optional<std::int64_t> cell = std::nullopt)
      : reg_(reg), rel_(std::move(rel)), src_(source), out_(out), cell_(cell) {}

  // `name` fills the message's {name}; an empty `replacement` keeps the rule's.
  void Add(std::string_view code, std::uint32_t line, std::uint32_t column, std::string_view name,
           bool guarded, std::string_view replacement = {});

  // Declares that Python module `module` (dotted import name) only exists where a CUDA extension was
  // built: a CUDAExtension / load() name, a git submodule or a local package that builds one. Scan()
  // joins these across files and reports the imports and call sites of such modules on the path.
  void DeclareCudaModule(std::string module, std::uint32_t line, std::string evidence) {
    cuda_modules_.push_back(CudaModule{std::move(module), rel_, line, std::move(evidence)});
  }
  std::vector<CudaModule>& cuda_modules() { return cuda_modules_; }

  // Marks this file's findings on lines [first, last] guarded (severity portable): code that only
  // runs behind a check found after the lines were scanned.
  void GuardLines(std::uint32_t first, std::uint32_t last) {
    for (std::size_t i = base_; i < out_.size(); ++i)
      if (out_[i].line >= first && out_[i].line <= last) {
        out_[i].guarded = true;
        out_[i].severity = Severity::kPortable;
      }
  }

  // The text of physical line `line` (1-based), without the newline.
  std::string_view Line(std::uint32_t line);

  const Registry& registry() const { return reg_; }
  const std::string& rel() const { return rel_; }
  std::size_t count() const { return out_.size() - base_; }

 private:
  const Registry& reg_;
  std::string rel_;
  std::string_view src_;
  std::vector<Finding>& out_;
  std::optional<std::int64_t> cell_;
  std::size_t base_ = out_.size();
  std::vector<std::uint32_t> line_starts_;
  std::unordered_set<std::uint64_t> seen_;
  std::vector<CudaModule> cuda_modules_;
};

// True when `line_text` carries a suppression comment covering `code`.
bool IsSuppressed(std::string_view line_text, std::string_view code);

}  // namespace dt::scan
