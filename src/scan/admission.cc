#include "scan/admission.h"

#include <algorithm>
#include <cstring>

namespace dt::scan {

namespace {

char Fold(char c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c); }

// An ASCII letter, digit or underscore: a byte that continues a name. Other bytes end one (a
// non-ASCII letter counts as an end, which can only admit more).
bool NameByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

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
    if (t.word.size() < 2 || std::find(texts_.begin(), texts_.end(), t.word) != texts_.end())
      continue;
    if (by_length_.size() <= t.word.size()) by_length_.resize(t.word.size() + 1);
    by_length_[t.word.size()].push_back(texts_.size());
    texts_.push_back(t.word);
    needles.push_back(t.word);
    Word w;
    w.whole = t.whole;
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

bool FileAdmission::Counts(std::size_t w, std::string_view text, std::size_t start,
                           std::vector<signed char>& seen) const {
  if (words_[w].whole) {
    const std::size_t end = start + texts_[w].size();
    if ((start > 0 && NameByte(text[start - 1])) || (end < text.size() && NameByte(text[end])))
      return false;
  }
  return Satisfied(w, text, seen);
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
  search_.ForEachMatch(text, [&](std::size_t start, std::size_t end) {
    if (find_main_ && end - start == 8 && std::memcmp(text.data() + start, "__main__", 8) == 0) {
      has_main = true;
      return false;
    }
    if (end - start >= by_length_.size()) return false;
    for (std::size_t w : by_length_[end - start]) {
      if (!FoldedAt(text, start, texts_[w])) continue;
      admitted = Counts(w, text, start, seen);
      for (std::size_t l : words_[w].longer)
        admitted = admitted || (FoldedAt(text, start, texts_[l]) && Counts(l, text, start, seen));
      break;
    }
    return admitted;  // "__MAIN__" matches no word: not the module test either.
  });
  return admitted;
}

}  // namespace dt::scan
