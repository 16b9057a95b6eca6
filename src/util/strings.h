// Small string helpers that know nothing of dualtrack.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dt {

// Edit distance counting an adjacent transposition as one edit; used for "did you mean"
// suggestions.
std::size_t EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `word` if it is close enough to be a plausible typo, else empty.
std::string ClosestMatch(std::string_view word, const std::vector<std::string_view>& candidates);
// "[default] has no key 'atl'; did you mean 'atol'? (keys: atol, rtol)": a configuration key that
// `table` does not know, escaped, with the closest of `keys` when it is a plausible typo.
std::string UnknownKeyMessage(std::string_view table, std::string_view key,
                              const std::vector<std::string_view>& keys);

std::string_view Trim(std::string_view s);
// ASCII case mapping (file names, rule codes, keywords): other bytes, UTF-8 included, stay as they
// are.
std::string Lower(std::string_view s);
std::string Upper(std::string_view s);
std::vector<std::string_view> Split(std::string_view s, char sep);
// Inline: the scanners call these millions of times per large tree.
inline bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.starts_with(prefix);
}
inline bool EndsWith(std::string_view s, std::string_view suffix) { return s.ends_with(suffix); }

// FNV-1a of the bytes: for hash tables of names and dotted paths, which are a few bytes long and
// for which the standard library's hash costs a call and more.
inline std::size_t HashName(std::string_view s) {
  std::uint64_t h = 14695981039346656037ULL;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return static_cast<std::size_t>(h ^ (h >> 29));
}

// HashName as a hash table's hasher that takes views of a std::string key (with std::equal_to<>):
// a lookup by std::string_view builds no string.
struct NameHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return HashName(s); }
};

// True when `s` is valid UTF-8 (no overlongs, no surrogates).
bool IsValidUtf8(std::string_view s);

// `s` safe to print on a terminal: control characters other than newline and tab (ESC above all,
// which a hostile file or tensor name could use to rewrite the screen), C1 controls and bytes that
// are not UTF-8 become visible escapes (\x1b, \u009b). Printable text is unchanged.
std::string EscapeControl(std::string_view s);

// `s` as Markdown prose or a table cell: every character Markdown reads as markup is escaped (a
// finding about `__global__` must not turn bold, a '|' must not end the cell), newlines become
// spaces.
std::string EscapeMarkdown(std::string_view s);

// A path as the path part of a URI (RFC 3986): letters, digits, "-._~" and '/' stay, every other
// byte (spaces, '%', '#', '?', non-ASCII, invalid UTF-8) becomes %XX. Lossless for any file name.
std::string PercentEncodePath(std::string_view path);

// git's wildmatch with WM_PATHNAME, the matcher of .gitignore: '*' and '?' never match '/', '**'
// between slashes (or at either end) matches any number of folders, '[...]' classes with '!'/'^'
// negation, ranges and [:alpha:]-style names, '\\' escapes the next character.
bool WildMatch(std::string_view pattern, std::string_view path);

// Shell-style glob with '*', '?' and '[...]'; '*' matches '/' too.
bool GlobMatch(std::string_view pattern, std::string_view text);

// Whether a project-relative path names a test by its name alone (`test_x.py`, `x_test.py`,
// `conftest.py`, a file under `tests/`).
bool IsTestPath(std::string_view rel);

}  // namespace dt
