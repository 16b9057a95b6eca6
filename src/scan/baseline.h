// Baselines for adopting dualtrack in an existing project's CI: today's findings are recorded
// once (`scan --write-baseline FILE`), and later scans (`--baseline FILE`) report and fail only on
// findings that are not in it.
#pragma once

#include <filesystem>
#include <string>

#include "scan/scan.h"
#include "util/result.h"

namespace dt::scan {

// The `dualtrack.findings-baseline/1` document of the report's findings: each finding as its
// code, file and source line (whitespace collapsed), with a count, so that edits elsewhere in the
// file, which move line numbers, keep it matched. (`dualtrack.baseline/1` is freeze's record of
// the CUDA environment, another thing.)
std::string BaselineText(const ScanReport& report);

// Removes from the report the findings that the baseline at `path` holds (as many of each as it
// counts) and returns how many were removed. Errors name the file: missing, not JSON, or not a
// baseline.
Result<std::size_t> ApplyBaseline(ScanReport& report, const std::filesystem::path& path);

}  // namespace dt::scan
