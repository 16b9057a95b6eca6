// `dualtrack fix`: rewrites CUDA-hardwired Python into code that picks CUDA, then MPS, then the
// CPU at run time, edit by edit on the scanner's own tokens (comments, quoting and layout stay as
// written). A safe fix leaves the behaviour on a CUDA machine as it was: every rewritten call is
// the original one whenever CUDA is available.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fix/diff.h"
#include "scan/scan.h"
#include "util/result.h"

namespace dt::fix {

struct FixOptions {
  bool unsafe = false;  // Also fixes that may change results (float64 -> float32).
  // Also portable lines: code that runs unchanged without CUDA (torch.cuda.manual_seed, cuDNN and
  // TF32 flags, torch.cuda.amp), left as written unless asked.
  bool all = false;
  // Helpers and `import torch` that code run before this source provides (earlier notebook cells).
  std::vector<std::string> defined;
  bool torch_imported = false;
};

// What became of one finding.
struct Outcome {
  std::string code;
  std::int64_t line = 0;
  std::optional<std::int64_t> cell;  // Notebooks: the code cell the line is in.
  bool fixed = false;
  bool unsafe = false;  // Fixed only because --unsafe-fixes was given, or left because it was not.
  // Left because nothing needs changing: an import of torch.cuda names (they exist in every
  // build of torch; their uses are what the fix rewrites).
  bool no_edit_needed = false;
  std::string note;  // What was done, or why it was left ("a device index: ...").
};

struct FileFix {
  std::string text;  // The new source; equal to the old one when nothing was fixed.
  std::vector<Outcome> outcomes;
  std::vector<Replaced> replaced;  // Where `text` differs from the source, in order.
  bool changed() const;
  std::size_t fixed() const;
};

// The fixes for one Python source and its scan findings (file, line and column as the scan
// reports them). Guarded findings need no fix (another path exists) and are not listed; findings
// of rules without a fix are listed as left.
FileFix FixPython(std::string_view source, const std::vector<scan::Finding>& findings,
                  const FixOptions& options);

// A notebook, cell by cell (findings carry their cell): the helpers go into the first cell that
// needs them, magics and shell escapes stay as written. Only the "source" values of the cells
// fixed are rewritten, in the file's own layout; every other byte is kept as written (metadata
// numbers past 2^53, line endings, key order). An error names what is malformed, or nested
// deeper than kMaxJsonDepth.
Result<FileFix> FixNotebook(std::string_view text, const std::vector<scan::Finding>& findings,
                            const FixOptions& options);

// Writes `after` over `path` (atomically) only if the file still holds `before`: a file changed
// since it was read is an error naming it, and is left as it is. Lines appended to the file
// meanwhile (a log, an autosave) are not lost: they are carried to the end of the new file, up to
// a few milliseconds after the rename.
Status WriteIfUnchanged(const std::filesystem::path& path, std::string_view before,
                        std::string_view after);

// Whether `code` has a fix, and whether it is unsafe.
bool HasFix(std::string_view code);
bool IsUnsafeFix(std::string_view code);

}  // namespace dt::fix
