#include "scan/sink.h"

#include <algorithm>
#include <cstring>
#include <tuple>

#include "scan/prefilter.h"
#include "util/result.h"
#include "util/strings.h"

namespace dt::scan {

namespace {

char Fold(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }
bool Alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool Digit(char c) { return c >= '0' && c <= '9'; }

// Position of `needle` (lower-case) in `s`, ASCII case-insensitive, or npos.
std::size_t FindFolded(std::string_view s, std::string_view needle, std::size_t from = 0) {
  if (needle.empty() || s.size() < needle.size()) return std::string_view::npos;
  for (std::size_t i = from; i + needle.size() <= s.size(); ++i) {
    if (Fold(s[i]) != needle[0]) continue;
    std::size_t k = 1;
    while (k < needle.size() && Fold(s[i + k]) == needle[k]) ++k;
    if (k == needle.size()) return i;
  }
  return std::string_view::npos;
}

std::size_t SkipBlanks(std::string_view s, std::size_t p) {
  while (p < s.size() && (s[p] == ' ' || s[p] == '\t')) ++p;
  return p;
}

// Reads a code at `p` ("DT101", "dt4", "E501"): letters then digits; empty when none.
std::string_view CodeAt(std::string_view s, std::size_t p) {
  std::size_t b = p;
  while (p < s.size() && Alpha(s[p])) ++p;
  if (p == b) return {};
  while (p < s.size() && Digit(s[p])) ++p;
  return s.substr(b, p - b);
}

void AddCode(std::string_view code, Suppression& out) {
  std::string c = Upper(code);
  if (std::find(out.codes.begin(), out.codes.end(), c) == out.codes.end())
    out.codes.push_back(std::move(c));
}

// Whether the `noqa` at `p` (no codes after it) is a marker: it opens a comment (`# noqa`,
// `//noqa`, `/* noqa`) and ends the word. A bare one drops every finding on its line, so a `noqa`
// inside prose, a name or `# flake8: noqa` (a whole-file marker of flake8's) must not count.
bool IsBareNoqa(std::string_view s, std::size_t p) {
  std::size_t e = p + 4;
  if (e < s.size() && (Alpha(s[e]) || Digit(s[e]) || s[e] == '_')) return false;
  while (p > 0 && (s[p - 1] == ' ' || s[p - 1] == '\t')) --p;
  return p > 0 &&
         (s[p - 1] == '#' || (p > 1 && s[p - 2] == '/' && (s[p - 1] == '/' || s[p - 1] == '*')));
}

}  // namespace

std::optional<Suppression> ParseSuppression(std::string_view text) {
  Suppression s;
  bool found = false;
  // `dualtrack: ignore`, `dualtrack:ignore[DT101, dt4]`.
  for (std::size_t p = FindFolded(text, "dualtrack"); p != std::string_view::npos;
       p = FindFolded(text, "dualtrack", p + 1)) {
    std::size_t q = SkipBlanks(text, p + 9);
    if (q >= text.size() || text[q] != ':') continue;
    q = SkipBlanks(text, q + 1);
    if (FindFolded(text.substr(q, 6), "ignore") != 0) continue;
    if (q + 6 < text.size() && (Alpha(text[q + 6]) || Digit(text[q + 6]) || text[q + 6] == '_'))
      continue;  // "ignored", "ignore_this": not the marker.
    q = SkipBlanks(text, q + 6);
    found = true;
    if (q >= text.size() || text[q] != '[') {
      s.all = true;
      break;
    }
    std::size_t close = text.find(']', q);
    std::string_view list = text.substr(
        q + 1, close == std::string_view::npos ? std::string_view::npos : close - q - 1);
    bool any = false;
    for (auto item : Split(list, ',')) {
      item = Trim(item);
      if (item.empty()) continue;
      AddCode(item, s);
      any = true;
    }
    if (!any) s.all = true;  // `ignore[]` reads as a bare marker.
    break;
  }
  // ruff style: `noqa: DT101, E501` (the DT codes only); `noqa: E501` is another tool's.
  bool bare_noqa = false;
  for (std::size_t p = FindFolded(text, "noqa"); p != std::string_view::npos;
       p = FindFolded(text, "noqa", p + 1)) {
    std::size_t q = SkipBlanks(text, p + 4);
    bool codes = false;
    if (q < text.size() && text[q] == ':') {
      q = SkipBlanks(text, q + 1);
      while (true) {
        std::string_view code = CodeAt(text, q);
        if (code.empty()) break;
        codes = true;
        if (code.size() > 2 && Fold(code[0]) == 'd' && Fold(code[1]) == 't' && Digit(code[2])) {
          AddCode(code, s);
          found = true;
        }
        q = SkipBlanks(text, q + code.size());
        if (q < text.size() && text[q] == ',') q = SkipBlanks(text, q + 1);
      }
    }
    if (!codes && IsBareNoqa(text, p)) bare_noqa = true;
  }
  // A bare `noqa` (flake8's and ruff's "everything on this line") covers our codes too, unless
  // the line names its dualtrack codes: `# noqa  dualtrack: ignore[DT101]` means DT101 only.
  if (!found && bare_noqa) {
    s.all = true;
    s.bare_noqa = true;
    found = true;
  }
  if (!found) return std::nullopt;
  return s;
}

std::optional<std::size_t> SuppressionCovers(const Suppression& s, std::string_view code) {
  if (s.all) return kAllItems;
  for (std::size_t i = 0; i < s.codes.size(); ++i)
    if (StartsWith(code, s.codes[i])) return i;
  return std::nullopt;
}

bool IsSuppressed(std::string_view text, std::string_view code) {
  auto s = ParseSuppression(text);
  return s && SuppressionCovers(*s, code).has_value();
}

std::string_view FindingSink::Line(std::uint32_t line) {
  if (line_starts_.empty()) {
    line_starts_.push_back(0);
    const char* p = src_.data();
    const char* end = p + src_.size();
    if (std::memchr(p, '\r', src_.size()) == nullptr) {
      while (const void* nl = std::memchr(p, '\n', static_cast<std::size_t>(end - p))) {
        p = static_cast<const char*>(nl) + 1;
        line_starts_.push_back(static_cast<std::uint32_t>(p - src_.data()));
      }
    } else {
      // "\r\n", "\n" and a lone "\r" each end a line, as ForEachLine counts them.
      for (std::size_t i = 0; i < src_.size(); ++i) {
        if (src_[i] == '\r' && i + 1 < src_.size() && src_[i + 1] == '\n')
          ++i;
        else if (src_[i] != '\r' && src_[i] != '\n')
          continue;
        line_starts_.push_back(static_cast<std::uint32_t>(i + 1));
      }
    }
  }
  if (line == 0 || line > line_starts_.size()) return {};
  std::size_t b = line_starts_[line - 1];
  std::size_t e = line < line_starts_.size() ? line_starts_[line] : src_.size();
  std::string_view s = src_.substr(b, e - b);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::string FindingSink::Root() const {
  if (abs_.empty() || rel_.empty() || abs_.size() < rel_.size() ||
      abs_.compare(abs_.size() - rel_.size(), rel_.size(), rel_) != 0)
    return {};
  std::string root = abs_.substr(0, abs_.size() - rel_.size());
  if (root.size() > 1 && root.back() == '/') root.pop_back();
  return root.empty() ? "." : root;
}

namespace {

// The scanners count columns in bytes; findings carry Unicode code points, what editors and
// SARIF's "unicodeCodePoints" column kind count: a byte that starts a UTF-8 sequence (or is not
// part of one) is a character.
std::uint32_t CodePointColumn(std::string_view line, std::uint32_t byte_column) {
  if (byte_column == 0 || byte_column - 1 > line.size()) return byte_column;
  std::uint32_t col = 1;
  for (std::size_t i = 0; i + 1 < byte_column; ++i)
    col += (static_cast<unsigned char>(line[i]) & 0xC0) != 0x80;
  return col;
}

}  // namespace

void SettleGuardedCodes(const Registry& reg, std::vector<Finding>& findings) {
  static constexpr std::string_view kEveryRun = ": every run";
  for (Finding& f : findings) {
    if (!f.guarded || f.code != "DT211") continue;
    const Rule* plain = reg.FindRule("DT205");
    if (plain == nullptr) continue;
    const std::string name = f.message.substr(0, f.message.find(kEveryRun));
    f.code = plain->code;
    f.cls = plain->cls;
    f.message = FormatMessage(*plain, name);
    f.replacement = plain->replacement;
    f.fix = plain->fix;
  }
}

void FindingSink::Add(std::string_view code, std::uint32_t line, std::uint32_t column,
                      std::string_view name, bool guarded, std::string_view replacement,
                      bool mps_only) {
  const Rule* rule = reg_.FindRule(code);
  // The registry's load checked every detector code against the data, so a miss here is a
  // detector writing a code it did not declare (scan/codes.cc): a bug, not bad input.
  DT_CHECK(rule != nullptr && !reg_.IsRetired(code));
  // One finding per line and code; environment files list several packages on one line.
  std::uint64_t key = (std::uint64_t{line} << 24) ^ std::hash<std::string_view>{}(code) ^
                      (StartsWith(code, "DT4") ? std::uint64_t{column} << 48 : 0);
  if (!seen_.insert(key).second) return;
  std::string_view text = Line(line);
  if (auto sup = ParseSuppression(text)) {
    if (auto item = SuppressionCovers(*sup, code)) {
      used_.emplace_back(line, *item);
      return;
    }
  }
  Finding f;
  f.code = rule->code;
  f.cls = rule->cls;
  f.severity = guarded ? Severity::kPortable : rule->severity;
  f.file = rel_;
  f.line = line;
  f.column = CodePointColumn(text, column);
  f.cell = cell_;
  f.message = FormatMessage(*rule, name);
  std::string_view snip = Trim(text);
  if (snip.size() > 200) snip = snip.substr(0, 200);
  f.snippet = std::string(snip);
  if (!IsValidUtf8(f.snippet)) f.snippet.clear();
  f.guarded = guarded;
  f.mps_only = rule->mps_only || mps_only;
  f.replacement = replacement.empty() ? rule->replacement : std::string(replacement);
  f.fix = rule->fix;
  f.placement = rule->placement;
  out_.push_back(std::move(f));
}

void FindingSink::CheckSuppressions(std::vector<SuppressionProblem>& out) {
  // One vectorised, case-folded search for both markers (libraries are full of `# noqa`).
  static const Prefilter markers(std::vector<std::string>{"dualtrack", "noqa"});
  std::vector<std::size_t> found;
  markers.ForEachMatch(src_, [&](std::size_t start, std::size_t) {
    found.push_back(start);
    return false;
  });
  // Each marker's positions in turn, as before: a line holding both is read once.
  std::stable_partition(found.begin(), found.end(),
                        [&](std::size_t p) { return src_[p] == 'd' || src_[p] == 'D'; });
  std::uint32_t last = 0;
  for (std::size_t p : found) {
    Line(1);  // Builds line_starts_.
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), p);
    auto line = static_cast<std::uint32_t>(it - line_starts_.begin());
    if (line == last) continue;
    last = line;
    auto sup = ParseSuppression(Line(line));
    if (!sup) continue;
    auto used = [&](std::size_t item) {
      return std::find(used_.begin(), used_.end(), std::make_pair(line, item)) != used_.end();
    };
    auto problem = [&](std::string code, const char* what) {
      for (const auto& q : out)
        if (q.file == rel_ && q.line == line && q.code == code) return;
      out.push_back(SuppressionProblem{rel_, line, std::move(code), what, std::nullopt, 0});
    };
    if (sup->all) {
      // A bare `noqa` is mostly for other linters: one that drops none of ours is not stale.
      if (!used(kAllItems) && !sup->bare_noqa) problem("", "unused");
      continue;
    }
    for (std::size_t i = 0; i < sup->codes.size(); ++i) {
      const std::string& code = sup->codes[i];
      if (!reg_.HasCodePrefix(code))
        problem(code, "unknown code");
      else if (!used(i))
        problem(code, "unused");
    }
  }
  std::sort(out.begin(), out.end(), [](const SuppressionProblem& a, const SuppressionProblem& b) {
    return std::tie(a.file, a.line, a.code) < std::tie(b.file, b.line, b.code);
  });
}

}  // namespace dt::scan
