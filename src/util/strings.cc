#include "util/strings.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>

namespace dt {

std::size_t EditDistance(std::string_view a, std::string_view b) {
  // Optimal string alignment: Levenshtein plus adjacent transpositions, the commonest typo.
  const std::size_t w = b.size() + 1;
  std::vector<std::size_t> d((a.size() + 1) * w);
  for (std::size_t i = 0; i <= a.size(); ++i) d[i * w] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      std::size_t v =
          std::min({d[(i - 1) * w + j] + 1, d[i * w + j - 1] + 1, d[(i - 1) * w + j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        v = std::min(v, d[(i - 2) * w + j - 2] + 1);
      }
      d[i * w + j] = v;
    }
  }
  return d[a.size() * w + b.size()];
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + ('a' - 'A'));
  return out;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - ('a' - 'A'));
  return out;
}

std::string ClosestMatch(std::string_view word, const std::vector<std::string_view>& candidates) {
  std::string best;
  std::size_t best_distance = SIZE_MAX;
  for (std::string_view c : candidates) {
    std::size_t d = EditDistance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = std::string(c);
    }
  }
  // Accept about one typo per three characters, and always a prefix of a command ("cov").
  std::size_t limit = std::max<std::size_t>(1, word.size() / 3);
  if (best_distance <= limit) return best;
  for (std::string_view c : candidates) {
    if (word.size() >= 2 && StartsWith(c, word)) return std::string(c);
  }
  return {};
}

std::string UnknownKeyMessage(std::string_view table, std::string_view key,
                              const std::vector<std::string_view>& keys) {
  const std::string hint = ClosestMatch(key, keys);
  std::string listed;
  for (std::string_view k : keys) listed += (listed.empty() ? "" : ", ") + std::string(k);
  return std::string(table) + " has no key '" + EscapeControl(key) + "'" +
         (hint.empty() ? "" : "; did you mean '" + hint + "'?") + " (keys: " + listed + ")";
}

std::string_view Trim(std::string_view s) {
  const char* ws = " \t\r\n\f\v";
  std::size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  std::size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    std::size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

bool IsValidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    unsigned char c = p[i];
    if (c < 0x80) {
      // Text is mostly ASCII even where it is not all ASCII: skip it eight bytes at a time.
      ++i;
      for (std::uint64_t word; i + 8 <= n; i += 8) {
        std::memcpy(&word, p + i, 8);
        if (word & 0x8080808080808080ULL) break;
      }
      continue;
    }
    std::size_t len;
    std::uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (std::size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += len;
  }
  return true;
}

namespace {

// Matches a '[...]' class starting at pattern[pi] (the '['); sets `next` past the ']'.
bool MatchClass(std::string_view pattern, std::size_t pi, char ch, std::size_t& next) {
  std::size_t i = pi + 1;
  bool negate = i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^');
  if (negate) ++i;
  bool matched = false;
  bool first = true;
  while (i < pattern.size() && (first || pattern[i] != ']')) {
    first = false;
    char lo = pattern[i];
    if (i + 2 < pattern.size() && pattern[i + 1] == '-' && pattern[i + 2] != ']') {
      if (ch >= lo && ch <= pattern[i + 2]) matched = true;
      i += 3;
    } else {
      if (ch == lo) matched = true;
      ++i;
    }
  }
  if (i >= pattern.size()) {  // Unterminated class: treat '[' literally.
    next = pi + 1;
    return ch == '[';
  }
  next = i + 1;
  return matched != negate;
}

}  // namespace

bool GlobMatch(std::string_view pattern, std::string_view text) {
  // Iterative matcher with single-star backtracking: linear in practice, no recursion blow-up.
  std::size_t p = 0, t = 0, star_p = std::string_view::npos, star_t = 0;
  while (t < text.size()) {
    if (p < pattern.size()) {
      char pc = pattern[p];
      if (pc == '*') {
        star_p = p++;
        star_t = t;
        continue;
      }
      if (pc == '?') {
        ++p;
        ++t;
        continue;
      }
      if (pc == '[') {
        std::size_t next;
        if (MatchClass(pattern, p, text[t], next)) {
          p = next;
          ++t;
          continue;
        }
      } else if (pc == text[t]) {
        ++p;
        ++t;
        continue;
      }
    }
    if (star_p == std::string_view::npos) return false;
    p = star_p + 1;
    t = ++star_t;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

std::string EscapeControl(std::string_view s) {
  static const char* kHex = "0123456789abcdef";
  auto hex_byte = [&](std::string& out, unsigned char c) {
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 15];
  };
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
        hex_byte(out, c);
      else
        out += static_cast<char>(c);
      ++i;
      continue;
    }
    std::size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    if (n == 1 || i + n > s.size() || !IsValidUtf8(s.substr(i, n))) {
      hex_byte(out, c);
      ++i;
      continue;
    }
    if (n == 2 && c == 0xc2 && static_cast<unsigned char>(s[i + 1]) < 0xa0) {  // C1 controls.
      out += "\\u00";
      out += kHex[static_cast<unsigned char>(s[i + 1]) >> 4];
      out += kHex[static_cast<unsigned char>(s[i + 1]) & 15];
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out;
}

namespace {

// A port of git's dowild() (wildmatch.c), with the same results and the same early aborts that
// keep hostile patterns ("*a*a*a*a*b") from taking exponential time.
enum { kWmNoMatch = 1, kWmMatch = 0, kWmAbortAll = -1, kWmAbortToStarStar = -2 };

bool IsGlobSpecial(unsigned char c) { return c == '*' || c == '?' || c == '[' || c == '\\'; }

bool InClass(std::string_view name, unsigned char c) {
  if (name == "alnum") return std::isalnum(c);
  if (name == "alpha") return std::isalpha(c);
  if (name == "blank") return c == ' ' || c == '\t';
  if (name == "cntrl") return std::iscntrl(c);
  if (name == "digit") return std::isdigit(c);
  if (name == "graph") return std::isgraph(c);
  if (name == "lower") return std::islower(c);
  if (name == "print") return std::isprint(c);
  if (name == "punct") return std::ispunct(c);
  if (name == "space") return std::isspace(c);
  if (name == "upper") return std::isupper(c);
  if (name == "xdigit") return std::isxdigit(c);
  return false;
}

// The bracket expression at p (on its '[') against t_ch: advances p to the closing ']' and
// returns 1 when t_ch is in the set, 0 when not, kWmAbortAll when the pattern ends inside it.
int MatchBracket(const unsigned char*& p, unsigned char t_ch) {
  unsigned char p_ch = *++p;
  if (p_ch == '^') p_ch = '!';
  const bool negated = p_ch == '!';
  if (negated) p_ch = *++p;
  unsigned char prev_ch = 0;
  int matched = 0;
  do {
    if (!p_ch) return kWmAbortAll;
    if (p_ch == '\\') {
      p_ch = *++p;
      if (!p_ch) return kWmAbortAll;
      if (t_ch == p_ch) matched = 1;
    } else if (p_ch == '-' && prev_ch && p[1] && p[1] != ']') {
      p_ch = *++p;
      if (p_ch == '\\') {
        p_ch = *++p;
        if (!p_ch) return kWmAbortAll;
      }
      if (t_ch <= p_ch && t_ch >= prev_ch) matched = 1;
      p_ch = 0;  // So that prev_ch becomes 0.
    } else if (p_ch == '[' && p[1] == ':') {
      const unsigned char* s = p + 2;
      const unsigned char* e = s;
      while (*e && *e != ']') e++;
      if (!*e) return kWmAbortAll;
      if (e - s == 0 || e[-1] != ':') {
        // Not a class name after all: a literal '['.
        p = s - 2;
        p_ch = '[';
        if (t_ch == p_ch) matched = 1;
        continue;
      }
      std::string_view name(reinterpret_cast<const char*>(s), static_cast<std::size_t>(e - s - 1));
      if (name != "alnum" && name != "alpha" && name != "blank" && name != "cntrl" &&
          name != "digit" && name != "graph" && name != "lower" && name != "print" &&
          name != "punct" && name != "space" && name != "upper" && name != "xdigit") {
        return kWmAbortAll;  // git: a malformed [:class:] matches nothing.
      }
      if (InClass(name, t_ch)) matched = 1;
      p = e;
      p_ch = 0;
    } else if (t_ch == p_ch) {
      matched = 1;
    }
  } while (prev_ch = p_ch, (p_ch = *++p) != ']');
  return matched == static_cast<int>(negated) ? 0 : 1;
}

int DoWild(const unsigned char* p, const unsigned char* text, const unsigned char* pattern) {
  unsigned char p_ch;
  for (; (p_ch = *p) != '\0'; text++, p++) {
    int matched = 0;
    bool match_slash = false;
    unsigned char t_ch = *text;
    if (t_ch == '\0' && p_ch != '*') return kWmAbortAll;
    switch (p_ch) {
      case '\\':
        p_ch = *++p;
        [[fallthrough]];
      default:
        if (t_ch != p_ch) return kWmNoMatch;
        continue;
      case '?':
        if (t_ch == '/') return kWmNoMatch;
        continue;
      case '*':
        if (*++p == '*') {
          const unsigned char* prev_p = p - 2;
          while (*++p == '*') {
          }
          if ((prev_p < pattern || *prev_p == '/') &&
              (*p == '\0' || *p == '/' || (p[0] == '\\' && p[1] == '/'))) {
            if (p[0] == '/' && DoWild(p + 1, text, pattern) == kWmMatch) return kWmMatch;
            match_slash = true;
          } else {
            match_slash = false;
          }
        } else {
          match_slash = false;
        }
        if (*p == '\0') {
          if (!match_slash && std::strchr(reinterpret_cast<const char*>(text), '/') != nullptr) {
            return kWmNoMatch;
          }
          return kWmMatch;
        } else if (!match_slash && *p == '/') {
          const char* slash = std::strchr(reinterpret_cast<const char*>(text), '/');
          if (slash == nullptr) return kWmNoMatch;
          text = reinterpret_cast<const unsigned char*>(slash);
          break;  // The slash is consumed by the loop.
        }
        while (true) {
          if (t_ch == '\0') break;
          if (!IsGlobSpecial(*p)) {
            p_ch = *p;
            while ((t_ch = *text) != '\0' && (match_slash || t_ch != '/')) {
              if (t_ch == p_ch) break;
              text++;
            }
            if (t_ch != p_ch) return match_slash ? kWmAbortAll : kWmAbortToStarStar;
          }
          if ((matched = DoWild(p, text, pattern)) != kWmNoMatch) {
            if (!match_slash || matched != kWmAbortToStarStar) return matched;
          } else if (!match_slash && t_ch == '/') {
            return kWmAbortToStarStar;
          }
          t_ch = *++text;
        }
        return kWmAbortAll;
      case '[': {
        const int in_set = MatchBracket(p, t_ch);
        if (in_set == kWmAbortAll) return kWmAbortAll;
        if (in_set == 0 || t_ch == '/') return kWmNoMatch;
        continue;
      }
    }
  }
  return *text ? kWmNoMatch : kWmMatch;
}

}  // namespace

bool WildMatch(std::string_view pattern, std::string_view path) {
  const std::string p(pattern), t(path);  // NUL-terminated, as the algorithm walks them.
  const auto* pp = reinterpret_cast<const unsigned char*>(p.c_str());
  return DoWild(pp, reinterpret_cast<const unsigned char*>(t.c_str()), pp) == kWmMatch;
}

std::string EscapeMarkdown(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (std::string_view("\\`*_[]<>|#~!{}").find(c) != std::string_view::npos) out += '\\';
    out += c == '\n' || c == '\r' ? ' ' : c;
  }
  return out;
}

std::string PercentEncodePath(std::string_view path) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  out.reserve(path.size());
  for (char ch : path) {
    auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

bool IsTestPath(std::string_view rel) {
  const std::size_t slash = rel.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? rel : rel.substr(slash + 1);
  if (StartsWith(name, "test_") || EndsWith(name, "_test.py") || name == "conftest.py" ||
      name == "tests.py")
    return true;
  std::size_t from = 0;
  while (slash != std::string_view::npos && from < slash) {
    std::size_t end = rel.find('/', from);
    const std::string_view part = rel.substr(from, end - from);
    if (part == "tests" || part == "test" || part == "testing") return true;
    from = end + 1;
  }
  return false;
}

}  // namespace dt
