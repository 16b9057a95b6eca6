// Collects the findings of one file: fills class, severity, message and replacement from the
// registry, applies inline suppressions (`dualtrack: ignore[DT101]`, `noqa: DT101`) and keeps one
// finding per line and code; reports suppressions that name no rule or suppress nothing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "scan/registry.h"
#include "scan/scan.h"

namespace dt::scan {

// A code that names an unguarded construct becomes its plain code once a later pass (the call
// paths, a function called only behind checks) finds the line guarded: an `init_process_group
// ("nccl")` reached only behind a launch check is the multi-GPU mode (DT205), not every run
// (DT211).
void SettleGuardedCodes(const Registry& reg, std::vector<Finding>& findings);

class FindingSink {
 public:
  FindingSink(const Registry& reg, std::string rel, std::string_view source,
              std::vector<Finding>& out, std::optional<std::int64_t> cell = std::nullopt)
      : reg_(reg), rel_(std::move(rel)), src_(source), out_(out), cell_(cell) {}

  // `name` fills the message's {name}; an empty `replacement` keeps the rule's.
  // `mps_only`: this use fails only on MPS even where the rule's constructs usually fail on the CPU
  // too (a call into an extension that has a CPU build).
  void Add(std::string_view code, std::uint32_t line, std::uint32_t column, std::string_view name,
           bool guarded, std::string_view replacement = {}, bool mps_only = false);

  // Declares that Python module `module` (dotted import name) only exists where a CUDA extension
  // was built: a CUDAExtension / load() name, a git submodule or a local package that builds one.
  // Scan() joins these across files and reports the imports and call sites of such modules on the
  // path.
  void DeclareCudaModule(std::string module, std::uint32_t line, std::string evidence,
                         bool cpu_build = false, bool beside_file = false) {
    cuda_modules_.push_back(
        CudaModule{std::move(module), rel_, line, std::move(evidence), cpu_build, beside_file});
  }
  std::vector<CudaModule>& cuda_modules() { return cuda_modules_; }

  // Raises the severity of the finding added last (an extension call that runs at import or in
  // the script's own top-level code: a blocker, whatever the rule's default).
  void RaiseLast(Severity s) {
    if (out_.size() > base_ && out_.back().severity < s) out_.back().severity = s;
  }

  // Whether this file has an unguarded finding on lines [first, last].
  bool AnyUnguarded(std::uint32_t first, std::uint32_t last) const {
    for (std::size_t i = base_; i < out_.size(); ++i)
      if (!out_[i].guarded && out_[i].line >= first && out_[i].line <= last) return true;
    return false;
  }

  // Marks this file's findings on lines [first, last] guarded (severity portable): code that only
  // runs behind a check found after the lines were scanned. With `keep_every_run`, findings of
  // what every run does (DT211) stay as they are.
  void GuardLines(std::uint32_t first, std::uint32_t last, bool keep_every_run = false) {
    for (std::size_t i = base_; i < out_.size(); ++i)
      if (out_[i].line >= first && out_[i].line <= last &&
          !(keep_every_run && out_[i].code == "DT211")) {
        out_[i].guarded = true;
        out_[i].severity = Severity::kPortable;
      }
  }

  // Marks this file's findings on the given physical lines (sorted) as settings the user overrides
  // (`Finding::option_default`).
  void MarkOptionDefaults(const std::vector<std::uint32_t>& lines) {
    for (std::size_t i = base_; i < out_.size(); ++i)
      if (std::binary_search(lines.begin(), lines.end(), static_cast<std::uint32_t>(out_[i].line)))
        out_[i].option_default = true;
  }

  // Marks this file's findings on the given physical lines (sorted) as lying in import statements
  // (`Finding::in_import`).
  void MarkImportLines(const std::vector<std::uint32_t>& lines) {
    for (std::size_t i = base_; i < out_.size(); ++i)
      if (std::binary_search(lines.begin(), lines.end(), static_cast<std::uint32_t>(out_[i].line)))
        out_[i].in_import = true;
  }

  // Knowing the file's absolute path lets a scanner look at the files around it (a submodule's
  // folder, a local package's setup.py); empty when the text has no file (tests, notebooks).
  void set_path(std::string abs) { abs_ = std::move(abs); }
  const std::string& path() const { return abs_; }
  // The scanned root on disk: path() without rel(); empty when unknown.
  std::string Root() const;

  // Appends, for each suppression comment of the file, the codes it names that no rule has
  // ("unknown code") and those that suppressed nothing on their line ("unused"). Call once, after
  // the scanner ran.
  void CheckSuppressions(std::vector<SuppressionProblem>& out);

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
  std::string abs_;
  // (line, index of the suppression item that matched; kAllItems for a bare marker).
  std::vector<std::pair<std::uint32_t, std::size_t>> used_;
};

// A suppression comment: a bare `dualtrack: ignore` covers every code; otherwise the codes or
// code prefixes listed, upper-cased ("DT101", "DT4"), from `dualtrack: ignore[...]` and from
// ruff-style `noqa: DT101, E501` (only the DT codes; `noqa: E501` alone is not ours). A bare
// `noqa` (or `noqa:` with no codes) covers every code, as in flake8 and ruff, unless the line
// names DT codes.
struct Suppression {
  bool all = false;
  bool bare_noqa = false;  // `all` comes from a bare `noqa`: never reported unused.
  std::vector<std::string> codes;
};
inline constexpr std::size_t kAllItems = ~std::size_t{0};

// The suppression `line_text` carries, or nullopt. The marker is found in any comment syntax
// (`#`, `//`, `/* */`), with or without a space after the colon, in any case.
std::optional<Suppression> ParseSuppression(std::string_view line_text);

// Which item of `s` covers `code`: kAllItems for a bare marker, the index of the first listed code
// that is a prefix of it, or nullopt.
std::optional<std::size_t> SuppressionCovers(const Suppression& s, std::string_view code);

// True when `line_text` carries a suppression comment covering `code`.
bool IsSuppressed(std::string_view line_text, std::string_view code);

}  // namespace dt::scan
