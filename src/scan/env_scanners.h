// Scanners for environment and build files: requirements / constraints, conda environments,
// pyproject.toml and setup.cfg dependencies, Dockerfiles, shell scripts and Makefiles.
#pragma once

#include <cstdint>
#include <string_view>

#include "scan/sink.h"

namespace dt::scan {

// Checks one requirement specifier ("torch==2.3.1+cu121", "flash-attn>=2") or index URL.
void CheckRequirement(std::string_view spec, FindingSink& sink, std::uint32_t line,
                      std::uint32_t column);

void ScanRequirements(std::string_view text, FindingSink& sink);
void ScanCondaEnv(std::string_view text, FindingSink& sink);
void ScanPyproject(std::string_view text, FindingSink& sink);
void ScanSetupCfg(std::string_view text, FindingSink& sink);
void ScanDockerfile(std::string_view text, FindingSink& sink);
void ScanShell(std::string_view text, FindingSink& sink);

// Calls fn(line_number, line_text) for each physical line.
template <class Fn>
void ForEachLine(std::string_view text, Fn&& fn) {
  std::uint32_t n = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::size_t end = nl == std::string_view::npos ? text.size() : nl;
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    fn(++n, line);
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
}

// Position of `word` in `s` with no identifier-ish character ([A-Za-z0-9_-]) on either side.
std::size_t FindWord(std::string_view s, std::string_view word, std::size_t from = 0);

}  // namespace dt::scan
