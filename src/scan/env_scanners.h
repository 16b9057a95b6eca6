// Scanners for environment and build files: requirements / constraints, conda environments,
// pyproject.toml and setup.cfg dependencies, Dockerfiles, shell scripts and Makefiles.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "scan/sink.h"

namespace dt::scan {

// Checks one requirement specifier ("torch==2.3.1+cu121", "flash-attn>=2") or index URL.
// `guarded`: the requirement is only installed behind a CUDA check (a run-time install in code).
void CheckRequirement(std::string_view spec, FindingSink& sink, std::uint32_t line,
                      std::uint32_t column, bool guarded = false);

void ScanRequirements(std::string_view text, FindingSink& sink);
void ScanCondaEnv(std::string_view text, FindingSink& sink);
void ScanPyproject(std::string_view text, FindingSink& sink);
void ScanSetupCfg(std::string_view text, FindingSink& sink);
void ScanDockerfile(std::string_view text, FindingSink& sink);
void ScanShell(std::string_view text, FindingSink& sink);
// docker-compose / compose files: GPU reservations, the NVIDIA runtime, and what `command:` runs.
void ScanCompose(std::string_view text, FindingSink& sink);
// A YAML config of a run: keys and values that select CUDA devices or a CUDA-only library.
void ScanConfigYaml(std::string_view text, FindingSink& sink);
// The keys of a run-configuring YAML file whose values are off (false, no, off, null, 0) or on
// (true, yes, on, a non-zero integer): settings the project reads as `cfg.key`.
void YamlFlags(std::string_view text, std::vector<std::string>& off, std::vector<std::string>& on);
// .gitmodules: one finding per submodule, and its import names declared as CUDA modules.
void ScanGitmodules(std::string_view text, FindingSink& sink);

// What a folder of the checkout holds, for submodules and local packages.
struct FolderEvidence {
  bool exists = false;
  bool empty = false;              // No file (hidden ones aside): a submodule not checked out.
  bool cuda_sources = false;       // .cu / .cuh files.
  bool cuda_extension = false;     // Its setup.py names CUDAExtension.
  std::vector<std::string> names;  // name= strings of its setup.py (package and extensions).
};
// Looks at <root>/<rel_dir> with std::filesystem; nothing when root is empty or it is missing.
FolderEvidence InspectFolder(const std::string& root, std::string_view rel_dir);

// The module a folder would be imported as: its last component, '-' read as '_'.
std::string ImportName(std::string_view path);

// True for option tokens that load a model through bitsandbytes: --load-in-8bit, --load_4bit,
// --8bit, --bnb-4bit, --quantize bitsandbytes (the value is checked by the caller).
bool IsBitsandbytesFlag(std::string_view token);

// Calls fn(line_number, line_text) for each physical line. A line ends at "\n", "\r\n" or a lone
// "\r" (old Mac files and some Windows editors' output), as Python counts them.
template <class Fn>
void ForEachLine(std::string_view text, Fn&& fn) {
  std::uint32_t n = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find_first_of("\r\n", pos);
    if (end == std::string_view::npos) end = text.size();
    fn(++n, text.substr(pos, end - pos));
    if (end == text.size()) break;
    pos = end + ((text[end] == '\r' && end + 1 < text.size() && text[end + 1] == '\n') ? 2 : 1);
    if (pos == text.size()) break;  // A final line ending opens no further line.
  }
}

// The project's own text rules ([tool.dualtrack] rules with `text`): a finding on each line that
// holds the text and is not a comment, in files matching the rule's `files` glob. Notebooks pass
// each code cell with its number.
void UserTextRules(const Registry& reg, std::string_view text, const std::string& rel,
                   std::vector<Finding>& out, std::optional<std::int64_t> cell = std::nullopt);

// Position of `word` in `s` with no identifier-ish character ([A-Za-z0-9_-]) on either side.
std::size_t FindWord(std::string_view s, std::string_view word, std::size_t from = 0);

}  // namespace dt::scan
