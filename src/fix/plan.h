// What `dualtrack fix` would change in a scanned tree, without writing anything: the new text of
// each file and what became of each finding. `fix` prints or writes it; `audit` reads it to judge
// an experiment after the safe automatic edits.
#pragma once

#include <filesystem>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "fix/fixer.h"
#include "scan/scan.h"
#include "util/result.h"

namespace dt::fix {

struct Change {
  std::filesystem::path path;
  std::string before, after;
  std::vector<Replaced> replaced;  // Where `after` differs from `before`.
};

// One finding the fixer looked at (unguarded, in a Python file or notebook).
struct PlannedFinding {
  std::string file;
  Outcome outcome;
};

struct FixPlan {
  std::filesystem::path root;             // The project folder, symbolic links resolved.
  std::map<std::string, Change> changes;  // By the scan's relative file name.
  std::size_t fixed = 0, left = 0, failed = 0;
  std::vector<std::string> left_lines;   // "file:line: DT101 why", for --show-left.
  std::vector<PlannedFinding> findings;  // Fixed and left alike.
};

// An error when `path`, its symbolic links resolved, is not inside `root` (resolved): a link in the
// project that leads out of it. Fix never writes there.
Status CheckInsideRoot(const std::filesystem::path& path, const std::filesystem::path& root);

// The fixes for the scan's unguarded Python and notebook findings. A file that changed since it
// was scanned, or a notebook that cannot be read, is left alone, counted as failed and named on
// `warnings`.
Result<FixPlan> PlanFixes(const scan::ScanReport& report, const FixOptions& options,
                          std::ostream& warnings);

}  // namespace dt::fix
