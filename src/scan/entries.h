// Entry discovery: the scripts a user would run, found from the project's own files. One place
// for `scan` (its guessed entries) and `audit` (its picked experiments), so both read a project
// the same way.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace dt::scan {

// The entry points a user would run, relative to the project: console scripts of pyproject.toml
// and setup.py, .py files named in the commands of the top-level documentation (README, and
// guides such as PRETRAIN.md: python X.py, torchrun X.py, ...), and top-level train*.py, *infer*,
// demo*, generate*, predict*, eval* scripts with a __main__ block; never test files, and never
// data preparation (a script under data/ or datasets/, prepare*, download*, preprocess*, ...),
// which a project may still declare as an experiment. Sorted, no duplicates.
std::vector<std::string> PickEntries(const std::filesystem::path& project);

// Test files are never experiments: test_*.py, *_test.py, conftest.py, anything under tests/ or
// test/, or a file (its text given) that calls unittest.main().
bool IsTestFile(const std::string& rel, const std::string& text = {});

// The helpers entry discovery shares with the experiments' resolution.
std::string ReadSmall(const std::filesystem::path& path);  // At most 4 MiB; "" when unreadable.
bool IsFile(const std::filesystem::path& p);
// A path relative to the project, normalised, without a leading "./".
std::string NormalRel(const std::filesystem::path& p);
// `rel` normalised when it names a file inside the project; "" otherwise.
std::string ProjectFile(const std::filesystem::path& project, const std::filesystem::path& rel);
// "pkg.mod:main" -> pkg/mod.py, pkg/mod/__init__.py or src/pkg/mod.py, whichever exists.
void AddModuleScript(const std::filesystem::path& project, std::string target,
                     std::vector<std::string>& out);

}  // namespace dt::scan
