// Whether a Python file is worth lexing and analysing, decided with one search of its text.
//
// Most files that hold a trigger word produce no finding: a word such as `compile` or `float64`
// makes one only as part of torch's API (`re.compile` and NumPy's float64 are everywhere), and
// guard words such as `hip` or `world_size` make none. Each word therefore comes with the co-words
// its findings need (Registry::FileTriggers); a file is analysed when some word occurs together
// with one of its sets of co-words; a word that finds only whole names (FileTrigger::whole) counts
// only where it stands as one.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "scan/prefilter.h"
#include "scan/registry.h"

namespace dt::scan {

class FileAdmission {
 public:
  // find_main: also look for "__main__" (reported through Admits' has_main).
  FileAdmission(const std::vector<FileTrigger>& words, bool find_main);

  // True when the text holds a word with one of its sets of co-words (ASCII case-insensitive).
  // has_main is set when the search met "__main__" before it stopped: reliable when false is
  // returned, since the search then ran to the end.
  bool Admits(std::string_view text, bool& has_main) const;

 private:
  struct Word {
    std::vector<std::vector<std::size_t>> needs;  // Indexes into co_words_.
    bool whole = false;
    // Longer words that start with this one: the search reports only the shortest needle at a
    // position, so these are checked by hand where this one matches.
    std::vector<std::size_t> longer;
  };
  // Whether word w, matched at `start`, counts there and has one set of its co-words.
  bool Counts(std::size_t w, std::string_view text, std::size_t start,
              std::vector<signed char>& seen) const;
  bool Satisfied(std::size_t w, std::string_view text, std::vector<signed char>& seen) const;

  Prefilter search_;  // The words, and "__main__" when find_main_.
  bool find_main_;
  std::vector<std::string> texts_;  // Lower-case, parallel to words_.
  std::vector<Word> words_;
  // words_ by length: a match is told apart by a folded compare with the few of its length,
  // cheaper than hashing (most non-admitted files hold dozens of `compile` or `double`).
  std::vector<std::vector<std::size_t>> by_length_;
  std::vector<Prefilter> co_words_;  // One needle each.
};

}  // namespace dt::scan
