// The project's page of an audit with several experiments: what a supervisor opens first. Its
// headline is the project's worst verdict, then the table of experiments, each with its verdict,
// evidence level, first reason and a relative link to its own full report.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "verdict/verdict.h"

namespace dt::verdict {

struct ProjectPage {
  std::string project;                     // The audited folder's name.
  std::vector<ExperimentRow> experiments;  // Each row's `report` is its HTML page, relative.
};

// The worst of the experiments' verdicts (cuda-only, then dev-only, then mac-ready); the first
// experiment that has it.
const ExperimentRow* WorstExperiment(const std::vector<ExperimentRow>& rows);

// `dualtrack.project-report/1`: `verdict` and `evidence_level` are the worst experiment's.
nlohmann::json ProjectJson(const ProjectPage& page);
std::string RenderProjectMarkdown(const ProjectPage& page);
// Self-contained, like the experiments' pages: inline CSS, no scripts.
std::string RenderProjectHtml(const ProjectPage& page);

}  // namespace dt::verdict
