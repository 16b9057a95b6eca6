// A Python tokenizer good enough for static scanning: it knows strings (all prefixes, triple
// quotes, f-strings with nested quotes), comments, bracket and backslash continuations and
// indentation, so that nothing inside a comment or a string is mistaken for code.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace dt::scan {

enum class TokKind : std::uint8_t { kName, kNumber, kString, kOp };

// 8 bytes, not the 32 of a view plus kind, line and column: a huge one-line file holds a token
// per byte or two, and its token vector is most of what a scan costs (hostile-input class 11).
// The text, line and column come from the Lexed that holds the token.
struct Token {
  std::uint32_t offset;     // Byte offset in the source.
  std::uint32_t size_kind;  // Size in bytes (30 bits) and TokKind (top 2 bits).

  static constexpr std::uint32_t kMaxSize = (std::uint32_t{1} << 30) - 1;
  std::uint32_t size() const { return size_kind & kMaxSize; }
  TokKind kind() const { return static_cast<TokKind>(size_kind >> 30); }
};

// One logical line: tokens [begin, end) of Lexed::tokens.
struct LogicalLine {
  std::uint32_t begin;
  std::uint32_t end;
  std::uint32_t indent;  // Width of the leading whitespace of its first physical line.
};

// A token's text: a view whose comparison with a string literal is a length test and a memcmp of
// constant size, which the compiler expands inline. The analysis compares tokens with keywords and
// operators millions of times a scan; the generic comparison is an out-of-line memcmp call.
struct TokenText : std::string_view {
  using std::string_view::basic_string_view;
  constexpr TokenText(std::string_view s) : std::string_view(s) {}  // NOLINT: a view is one.
  template <std::size_t N>
  bool operator==(const char (&literal)[N]) const {
    return size() == N - 1 && std::memcmp(data(), literal, N - 1) == 0;
  }
};

struct Lexed {
  std::string_view src;
  std::vector<Token> tokens;
  std::vector<LogicalLine> lines;
  std::vector<std::uint32_t> line_starts;  // Byte offset of each physical line.

  // Strings: the whole literal, prefix and quotes included.
  // Tokens lie inside src (the lexer makes them so): no bounds check.
  TokenText Text(const Token& t) const { return TokenText(src.data() + t.offset, t.size()); }
  // 1-based line where the token starts (a binary search: called per finding, not per token).
  std::uint32_t Line(const Token& t) const;
  // 1-based byte column.
  std::uint32_t Column(const Token& t) const { return t.offset - line_starts[Line(t) - 1] + 1; }
};

// Never fails: unterminated strings run to the end of the input, stray bytes become operators.
// The input must be under kMaxLexBytes (offsets and sizes are 32-bit); the scan skips larger files
// with a note.
// A run of more than kNumberRun numbers in one bracket (`[0, 1, 0, ...]`, data written as code)
// is folded into one number token after its first kNumberRun: no rule looks that far into a
// literal, and a 100 MB data line would otherwise cost a token per two bytes.
inline constexpr std::uint32_t kNumberRun = 32;
inline constexpr std::uint64_t kMaxLexBytes = Token::kMaxSize;
Lexed LexPython(std::string_view src);
// The same into `out`, whose storage is reused (a scanner thread lexes thousands of files).
void LexPython(std::string_view src, Lexed& out);

// The body of a string literal without prefix and quotes (escapes left as written).
std::string_view StringBody(std::string_view literal);
// The prefix letters of a string literal, lower-cased flags.
bool IsFString(std::string_view literal);
bool IsBytes(std::string_view literal);

}  // namespace dt::scan
