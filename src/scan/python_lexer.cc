#include "scan/python_lexer.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace dt::scan {

namespace {

// Byte classes, one table load instead of a chain of comparisons per byte.
enum : std::uint8_t { kIdentStart = 1, kIdentChar = 2, kBlank = 4 };
struct ClassTable {
  std::uint8_t t[256] = {};
  constexpr ClassTable() {
    for (int c = 0; c < 256; ++c) {
      bool start = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
      if (start) t[c] |= kIdentStart | kIdentChar;
      if (c >= '0' && c <= '9') t[c] |= kIdentChar;
      if (c == ' ' || c == '\t' || c == '\f' || c == '\r') t[c] |= kBlank;
    }
  }
};
constexpr ClassTable kClass;

// What a byte starts, for the lexer's dispatch.
enum : std::uint8_t {
  kOperator,
  kIdent,
  kPrefixable,
  kDigit,
  kQuote,
  kBlankRun,
  kNewline,
  kHash,
  kBackslash,
  kDot,
};
struct DispatchTable {
  std::uint8_t t[256] = {};
  constexpr DispatchTable() {
    for (int c = 0; c < 256; ++c) {
      std::uint8_t k = kOperator;
      int l = c | 0x20;
      if (kClass.t[c] & kIdentStart)
        k = (l == 'r' || l == 'b' || l == 'u' || l == 'f' || l == 't') ? kPrefixable : kIdent;
      else if (c >= '0' && c <= '9')
        k = kDigit;
      else if (c == '"' || c == '\'')
        k = kQuote;
      else if (c == '\n')
        k = kNewline;
      else if (kClass.t[c] & kBlank)
        k = kBlankRun;
      else if (c == '#')
        k = kHash;
      else if (c == '\\')
        k = kBackslash;
      else if (c == '.')
        k = kDot;
      t[c] = k;
    }
  }
};
constexpr DispatchTable kDispatch;

inline bool IsIdentChar(unsigned char c) { return kClass.t[c] & kIdentChar; }

// Bytes that end a run of plain string content: the backslash, the newline (lines are counted),
// the quote, and for f-strings the brace. Indexed by [quote is '"'][f-string].
struct StringStops {
  bool t[2][2][256] = {};
  constexpr StringStops() {
    for (int dq = 0; dq < 2; ++dq) {
      for (int f = 0; f < 2; ++f) {
        t[dq][f][static_cast<unsigned char>('\\')] = true;
        t[dq][f][static_cast<unsigned char>('\n')] = true;
        t[dq][f][static_cast<unsigned char>(dq ? '"' : '\'')] = true;
        if (f) t[dq][f][static_cast<unsigned char>('{')] = true;
      }
    }
  }
};
constexpr StringStops kStringStops;

// The first position from i where a string's plain content stops (a byte of `stop`: the
// backslash, the newline, the quote `q`, and `{` in f-strings), or n. Docstrings and long string
// literals are most of the bytes of many files: sixteen at a time where a vector unit is sure to
// exist (SSE2 on x86-64, NEON on arm64), a byte at a time elsewhere and for the tail.
inline std::size_t PlainRun(const unsigned char* p, std::size_t i, std::size_t n, const bool* stop,
                            unsigned char q, bool fstr) {
#if defined(__SSE2__)
  const __m128i backslash = _mm_set1_epi8('\\'), newline = _mm_set1_epi8('\n');
  const __m128i quote = _mm_set1_epi8(static_cast<char>(q));
  const __m128i brace = _mm_set1_epi8(fstr ? '{' : '\\');
  for (; i + 16 <= n; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    const __m128i m =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, backslash), _mm_cmpeq_epi8(v, newline)),
                     _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, brace)));
    if (const auto mask = static_cast<unsigned>(_mm_movemask_epi8(m)); mask != 0)
      return i + static_cast<unsigned>(__builtin_ctz(mask));
  }
#elif defined(__aarch64__)
  const uint8x16_t backslash = vdupq_n_u8('\\'), newline = vdupq_n_u8('\n');
  const uint8x16_t quote = vdupq_n_u8(q), brace = vdupq_n_u8(fstr ? '{' : '\\');
  for (; i + 16 <= n; i += 16) {
    const uint8x16_t v = vld1q_u8(p + i);
    const uint8x16_t m = vorrq_u8(vorrq_u8(vceqq_u8(v, backslash), vceqq_u8(v, newline)),
                                  vorrq_u8(vceqq_u8(v, quote), vceqq_u8(v, brace)));
    // Four bits per byte (the shift-right-narrow idiom for a NEON movemask).
    const std::uint64_t bits =
        vget_lane_u64(vreinterpret_u64_u8(vshrn_n_u16(vreinterpretq_u16_u8(m), 4)), 0);
    if (bits != 0) return i + static_cast<unsigned>(__builtin_ctzll(bits)) / 4;
  }
#endif
  while (i < n && !stop[p[i]]) ++i;
  return i;
}

// The end of the name that continues at i (ASCII letters, digits, `_`, and bytes from 0x80 on):
// sixteen bytes at a time where a vector unit is sure to exist, then a byte at a time.
inline std::size_t NameEnd(const unsigned char* p, std::size_t i, std::size_t n) {
#if defined(__SSE2__)
  const __m128i fold = _mm_set1_epi8(0x20);
  const __m128i a = _mm_set1_epi8('a'), z = _mm_set1_epi8('z');
  const __m128i d0 = _mm_set1_epi8('0'), d9 = _mm_set1_epi8('9'), us = _mm_set1_epi8('_');
  for (; i + 16 <= n; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    const __m128i l = _mm_or_si128(v, fold);
    // Unsigned x >= lo as max(x, lo) == x, x <= hi as min(x, hi) == x.
    const __m128i alpha =
        _mm_and_si128(_mm_cmpeq_epi8(_mm_max_epu8(l, a), l), _mm_cmpeq_epi8(_mm_min_epu8(l, z), l));
    const __m128i digit = _mm_and_si128(_mm_cmpeq_epi8(_mm_max_epu8(v, d0), v),
                                        _mm_cmpeq_epi8(_mm_min_epu8(v, d9), v));
    const __m128i name = _mm_or_si128(_mm_or_si128(alpha, digit), _mm_cmpeq_epi8(v, us));
    // The sign bit of v itself marks the bytes from 0x80 on.
    const auto in = static_cast<unsigned>(_mm_movemask_epi8(name) | _mm_movemask_epi8(v));
    if (in != 0xffffu) return i + static_cast<unsigned>(__builtin_ctz(~in));
  }
#endif
  while (i < n && IsIdentChar(p[i])) ++i;
  return i;
}

// Recognises a string prefix (r, b, u, f, rb, br, fr, rf, t... any case) followed by a quote.
std::size_t StringPrefixLen(std::string_view s, std::size_t i) {
  std::size_t n = 0;
  while (n < 2 && i + n < s.size()) {
    char c = static_cast<char>(s[i + n] | 0x20);
    if (c == 'r' || c == 'b' || c == 'u' || c == 'f' || c == 't') {
      ++n;
    } else {
      break;
    }
  }
  if (i + n < s.size() && (s[i + n] == '"' || s[i + n] == '\'')) return n;
  return std::string_view::npos;
}

class Lexer {
 public:
  Lexer(std::string_view src, Lexed& out) : s_(src), out_(out) {}

  void Run() {
    out_.src = s_;
    out_.tokens.clear();
    out_.lines.clear();
    out_.line_starts.clear();
    out_.line_starts.push_back(0);
    // Python source averages a token per 8 bytes or so: reserving that avoids copying the tokens
    // as the vector grows. A large input reserves for a token per 2 bytes (dense code): growing
    // by doubling would hold the old and the new vector at once, and the pages of a reservation
    // count only once they are written.
    std::size_t want = s_.size() > (std::size_t{8} << 20) ? s_.size() / 2 : s_.size() / 6;
    out_.tokens.reserve(want + 16);
    std::uint32_t indent = Indent();
    // One jump on the byte's class per token instead of a chain of tests, each of which the
    // branch predictor missed at every change of token kind.
    while (i_ < s_.size()) {
      unsigned char c = static_cast<unsigned char>(s_[i_]);
      switch (kDispatch.t[c]) {
        case kNewline:
          NewLine();
          if (depth_ == 0) {
            EndLogical(indent);
            indent = Indent();
          }
          continue;
        case kBlankRun: {
          // Locals in the byte loops: a store to i_ could alias the bytes read (char aliases
          // everything), which would keep the loops going through memory.
          const auto* p = reinterpret_cast<const unsigned char*>(s_.data());
          std::size_t i = i_ + 1;
          while (i < s_.size() && (kClass.t[p[i]] & kBlank)) ++i;
          i_ = i;
          continue;
        }
        case kHash: {
          const void* nl = std::memchr(s_.data() + i_, '\n', s_.size() - i_);
          i_ = nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - s_.data()) : s_.size();
          continue;
        }
        case kBackslash:
          if (i_ + 1 < s_.size() && (s_[i_ + 1] == '\n' || s_[i_ + 1] == '\r')) {
            ++i_;
            if (s_[i_] == '\r') ++i_;
            if (i_ < s_.size() && s_[i_] == '\n') NewLine();
            continue;
          }
          break;           // A stray backslash is an operator.
        case kPrefixable:  // A letter that may start a string prefix (r, b, u, f, t).
          if (std::size_t pre = StringPrefixLen(s_, i_); pre != std::string_view::npos) {
            String(pre);
            continue;
          }
          [[fallthrough]];
        case kIdent: {
          std::size_t start = i_;
          i_ = NameEnd(reinterpret_cast<const unsigned char*>(s_.data()), i_ + 1, s_.size());
          Push(TokKind::kName, start);
          continue;
        }
        case kQuote:
          String(0);
          continue;
        case kDot:
          if (!(i_ + 1 < s_.size() && s_[i_ + 1] >= '0' && s_[i_ + 1] <= '9')) break;
          [[fallthrough]];
        case kDigit:
          Number();
          continue;
        default:
          break;
      }
      // `a; b` is two statements: the second gets a logical line of its own. After a compound
      // header with its body on the same line (`if x: a; b`), both are in the body, one level in.
      if (c == ';' && depth_ == 0) {
        ++i_;
        bool in_body = HasHeaderColon();
        EndLogical(indent);
        if (in_body) indent += 1;
        continue;
      }
      // Operators: brackets change the depth; multi-char operators matter only for == and !=.
      std::size_t start = i_;
      if (c == '(' || c == '[' || c == '{') {
        ++depth_;
      } else if ((c == ')' || c == ']' || c == '}') && depth_ > 0) {
        --depth_;
      }
      ++i_;
      // A second byte joins the operator: `==` `+=` `:=`, `->`, `**` `//` `<<` `>>`.
      const unsigned char d = i_ < s_.size() ? static_cast<unsigned char>(s_[i_]) : 0;
      if ((d == '=' && std::strchr("=!<>+-*/%&|^:", c) != nullptr) || (c == '-' && d == '>') ||
          ((c == '*' || c == '/' || c == '<' || c == '>') && d == c))
        ++i_;
      Push(TokKind::kOp, start);
    }
    EndLogical(indent);
  }

 private:
  // Skips the leading whitespace of a logical line; returns its width (tabs to multiples of 8).
  std::uint32_t Indent() {
    std::uint32_t indent = 0;
    std::size_t i = i_;
    // Eight spaces at a time first (deep indentation is most of the blanks of a file).
    for (std::uint64_t word; i + 8 <= s_.size(); i += 8, indent += 8) {
      std::memcpy(&word, s_.data() + i, 8);
      if (word != 0x2020202020202020ULL) break;
    }
    for (; i < s_.size() && (s_[i] == ' ' || s_[i] == '\t' || s_[i] == '\f'); ++i)
      indent = s_[i] == '\t' ? (indent / 8 + 1) * 8 : indent + 1;
    i_ = i;
    return indent;
  }

  void Number() {
    std::size_t start = i_;
    while (i_ < s_.size()) {
      unsigned char d = static_cast<unsigned char>(s_[i_]);
      // Digits, letters, `_` and `.`; a sign only as an exponent's (`1e-5`, never in `0x1e-5`).
      const bool exponent_sign =
          (d == '+' || d == '-') && (s_[i_ - 1] == 'e' || s_[i_ - 1] == 'E') &&
          !(s_[start] == '0' && i_ > start + 1 && (s_[start + 1] | 0x20) == 'x');
      if (!IsIdentChar(d) && d != '.' && !exponent_sign) break;
      ++i_;
    }
    Push(TokKind::kNumber, start);
  }

  void NewLine() {
    ++i_;
    out_.line_starts.push_back(static_cast<std::uint32_t>(i_));
  }

  void Push(TokKind kind, std::size_t start) {
    auto& toks = out_.tokens;
    if (kind == TokKind::kNumber) {
      // `n, n, n, ...` inside brackets: past kNumberRun numbers, each new one joins the last.
      bool follows = depth_ > 0 && toks.size() >= 2 + logical_begin_ &&
                     out_.Text(toks.back()) == "," &&
                     toks[toks.size() - 2].kind() == TokKind::kNumber;
      number_run_ = follows ? number_run_ + 1 : 1;
      if (number_run_ > kNumberRun) {
        toks.pop_back();
        toks.back().size_kind = Pack(TokKind::kNumber, i_ - toks.back().offset);
        return;
      }
    } else if (!(kind == TokKind::kOp && i_ - start == 1 && s_[start] == ',')) {
      number_run_ = 0;
    }
    toks.push_back(Token{static_cast<std::uint32_t>(start), Pack(kind, i_ - start)});
  }

  static std::uint32_t Pack(TokKind kind, std::size_t size) {
    return (static_cast<std::uint32_t>(kind) << 30) | static_cast<std::uint32_t>(size);
  }

  // Whether the logical line so far is a compound statement's header ending in ':' with its
  // body following on the same line.
  bool HasHeaderColon() const {
    if (out_.tokens.size() <= logical_begin_) return false;
    std::string_view first = out_.Text(out_.tokens[logical_begin_]);
    static constexpr std::string_view kCompound[] = {
        "if", "elif", "else", "for", "while", "with", "def", "class", "try", "except", "finally"};
    bool compound = false;
    for (auto k : kCompound) compound |= first == k;
    if (!compound) return false;
    int depth = 0;
    for (std::size_t k = logical_begin_; k < out_.tokens.size(); ++k) {
      const Token& t = out_.tokens[k];
      if (t.kind() != TokKind::kOp) continue;
      std::string_view x = out_.Text(t);
      if (x == "(" || x == "[" || x == "{")
        ++depth;
      else if (x == ")" || x == "]" || x == "}")
        --depth;
      else if (depth == 0 && x == ":")
        return true;
    }
    return false;
  }

  void EndLogical(std::uint32_t indent) {
    auto end = static_cast<std::uint32_t>(out_.tokens.size());
    if (end > logical_begin_) out_.lines.push_back(LogicalLine{logical_begin_, end, indent});
    logical_begin_ = end;
    depth_ = 0;
  }

  // Skips the string literal at i_ (prefix of `pre` letters) and pushes it as one token.
  void String(std::size_t pre) {
    std::size_t start = i_;
    bool raw = false, fstr = false;
    for (std::size_t k = 0; k < pre; ++k) {
      char l = static_cast<char>(s_[i_ + k] | 0x20);
      raw |= l == 'r';
      fstr |= l == 'f' || l == 't';
    }
    i_ += pre;
    SkipStringBody(raw, fstr);
    // A backslash as the input's last byte steps past its end: the token stops at the end.
    if (i_ > s_.size()) i_ = s_.size();
    Push(TokKind::kString, start);
  }

  // i_ is at the opening quote; leaves i_ after the closing quote.
  void SkipStringBody(bool raw, bool fstr) {
    char q = s_[i_];
    bool triple = i_ + 2 < s_.size() && s_[i_ + 1] == q && s_[i_ + 2] == q;
    i_ += triple ? 3 : 1;
    const bool* stop = kStringStops.t[q == '"'][fstr];
    const auto* p = reinterpret_cast<const unsigned char*>(s_.data());
    const std::size_t n = s_.size();
    while (i_ < n) {
      i_ = PlainRun(p, i_, n, stop, static_cast<unsigned char>(q), fstr);
      if (i_ >= n) break;
      char c = s_[i_];
      if (c == '\\' && !raw) {
        if (i_ + 1 < s_.size() && s_[i_ + 1] == '\n') {
          ++i_;
          NewLine();
        } else {
          i_ += 2;
        }
        continue;
      }
      if (c == '\\' && raw) {  // In raw strings a backslash still protects the quote.
        i_ += (i_ + 1 < s_.size() && s_[i_ + 1] != '\n') ? 2 : 1;
        continue;
      }
      if (c == '\n') {
        if (!triple) return;  // Unterminated single-quoted string ends at the line.
        NewLine();
        continue;
      }
      if (c == q) {
        if (!triple) {
          ++i_;
          return;
        }
        if (i_ + 2 < s_.size() && s_[i_ + 1] == q && s_[i_ + 2] == q) {
          i_ += 3;
          return;
        }
      }
      if (fstr && c == '{') {
        if (i_ + 1 < s_.size() && s_[i_ + 1] == '{') {
          i_ += 2;
          continue;
        }
        SkipReplacementField();
        continue;
      }
      ++i_;
    }
  }

  // Skips "{expr!r:spec}" in an f-string, including nested strings that may reuse the quote.
  void SkipReplacementField() {
    int depth = 0;
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (c == '{' || c == '(' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ')' || c == ']') {
        if (--depth == 0 && c == '}') {
          ++i_;
          return;
        }
      } else if (c == '\'' || c == '"') {
        std::size_t pre = 0;
        while (pre < 2 && i_ >= pre + 1 &&
               IsIdentChar(static_cast<unsigned char>(s_[i_ - pre - 1])))
          ++pre;
        bool nested_f = false;
        for (std::size_t k = 1; k <= pre; ++k) nested_f |= (s_[i_ - k] | 0x20) == 'f';
        SkipStringBody(false, nested_f);
        continue;
      } else if (c == '\n') {
        NewLine();
        continue;
      }
      ++i_;
    }
  }

  std::string_view s_;
  std::size_t i_ = 0;
  std::uint32_t number_run_ = 0;  // Numbers in the current `n, n, ...` run.
  int depth_ = 0;
  std::uint32_t logical_begin_ = 0;
  Lexed& out_;
};

}  // namespace

std::uint32_t Lexed::Line(const Token& t) const {
  auto it = std::upper_bound(line_starts.begin(), line_starts.end(), t.offset);
  return static_cast<std::uint32_t>(it - line_starts.begin());
}

void LexPython(std::string_view src, Lexed& out) { Lexer(src, out).Run(); }

Lexed LexPython(std::string_view src) {
  Lexed out;
  LexPython(src, out);
  return out;
}

std::string_view StringBody(std::string_view lit) {
  std::size_t i = 0;
  while (i < lit.size() && lit[i] != '"' && lit[i] != '\'') ++i;
  if (i >= lit.size()) return {};
  char q = lit[i];
  std::size_t qn = (i + 2 < lit.size() && lit[i + 1] == q && lit[i + 2] == q) ? 3 : 1;
  std::size_t b = i + qn;
  if (b > lit.size()) return {};
  std::size_t e = lit.size();
  if (e >= b + qn && lit.substr(e - qn).find_first_not_of(q) == std::string_view::npos) e -= qn;
  return lit.substr(b, e - b);
}

bool IsFString(std::string_view lit) {
  for (char c : lit) {
    if (c == '"' || c == '\'') return false;
    if ((c | 0x20) == 'f') return true;
  }
  return false;
}

bool IsBytes(std::string_view lit) {
  for (char c : lit) {
    if (c == '"' || c == '\'') return false;
    if ((c | 0x20) == 'b') return true;
  }
  return false;
}

}  // namespace dt::scan
