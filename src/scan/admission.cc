#include "scan/admission.h"

#include <algorithm>
#include <cstring>

namespace dt::scan {

namespace {

char Fold(char c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c); }

// Whether text[at, at + lower.size()) equals `lower` with ASCII case folded.
bool FoldedAt(std::string_view text, std::size_t at, std::string_view lower) {
  if (at + lower.size() > text.size()) return false;
  for (std::size_t i = 0; i < lower.size(); ++i)
    if (Fold(text[at + i]) != lower[i]) return false;
  return true;
}

}  // namespace

FileAdmission::FileAdmission(const std::vector<FileTrigger>& words, bool find_main)
    : find_main_(find_main) {
  std::vector<std::string> needles;
  std::unordered_map<std::string, std::size_t> co_index;
  for (const auto& t : words) {
    if (index_.count(t.word) > 0 || t.word.size() < 2) continue;
    index_.emplace(t.word, texts_.size());
    texts_.push_back(t.word);
    needles.push_back(t.word);
    Word w;
    for (const auto& alt : t.needs) {
      std::vector<std::size_t> ids;
      for (const auto& c : alt) {
        auto [it, fresh] = co_index.emplace(c, co_words_.size());
        if (fresh) co_words_.emplace_back(std::vector<std::string>{c});
        ids.push_back(it->second);
      }
      w.needs.push_back(std::move(ids));
    }
    words_.push_back(std::move(w));
  }
  for (std::size_t i = 0; i < texts_.size(); ++i)
    for (std::size_t j = 0; j < texts_.size(); ++j)
      if (i != j && texts_[j].size() > texts_[i].size() && texts_[j].starts_with(texts_[i]))
        words_[i].longer.push_back(j);
  if (find_main_) needles.emplace_back("__main__");
  search_ = Prefilter(needles);
}

bool FileAdmission::Satisfied(std::size_t w, std::string_view text,
                              std::vector<signed char>& seen) const {
  const Word& word = words_[w];
  if (word.needs.empty()) return true;
  for (const auto& alt : word.needs) {
    bool all = true;
    for (std::size_t c : alt) {
      if (seen[c] < 0) seen[c] = co_words_[c].Matches(text) ? 1 : 0;
      all = all && seen[c] == 1;
      if (!all) break;
    }
    if (all) return true;
  }
  return false;
}

bool FileAdmission::Admits(std::string_view text, bool& has_main) const {
  has_main = false;
  bool admitted = false;
  std::vector<signed char> seen(co_words_.size(), -1);  // Co-word searches, run when first needed.
  std::string key;
  search_.ForEachMatch(text, [&](std::size_t start, std::size_t end) {
    if (find_main_ && end - start == 8 && std::memcmp(text.data() + start, "__main__", 8) == 0) {
      has_main = true;
      return false;
    }
    key.resize(end - start);
    std::transform(text.begin() + static_cast<std::ptrdiff_t>(start),
                   text.begin() + static_cast<std::ptrdiff_t>(end), key.begin(), Fold);
    auto it = index_.find(key);
    if (it == index_.end()) return false;  // "__MAIN__": not the module test, not a word.
    admitted = Satisfied(it->second, text, seen);
    for (std::size_t l : words_[it->second].longer)
      admitted = admitted || (FoldedAt(text, start, texts_[l]) && Satisfied(l, text, seen));
    return admitted;
  });
  return admitted;
}

}  // namespace dt::scan
