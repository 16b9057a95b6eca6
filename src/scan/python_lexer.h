// A Python tokenizer good enough for static scanning: it knows strings (all prefixes, triple
// quotes, f-strings with nested quotes), comments, bracket and backslash continuations and
// indentation, so that nothing inside a comment or a string is mistaken for code.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace dt::scan {

enum class TokKind : std::uint8_t { kName, kNumber, kString, kOp };

struct Token {
  TokKind kind;
  std::uint32_t line;    // 1-based.
  std::uint32_t column;  // 1-based byte column.
  std::string_view text;  // Strings: the whole literal, prefix and quotes included.
};

// One logical line: tokens [begin, end) of Lexed::tokens.
struct LogicalLine {
  std::uint32_t begin;
  std::uint32_t end;
  std::uint32_t indent;  // Width of the leading whitespace of its first physical line.
};

struct Lexed {
  std::vector<Token> tokens;
  std::vector<LogicalLine> lines;
};

// Never fails: unterminated strings run to the end of the input, stray bytes become operators.
Lexed LexPython(std::string_view src);
// The same into `out`, whose storage is reused (a scanner thread lexes thousands of files).
void LexPython(std::string_view src, Lexed& out);

// The body of a string literal without prefix and quotes (escapes left as written).
std::string_view StringBody(std::string_view literal);
// The prefix letters of a string literal, lower-cased flags.
bool IsFString(std::string_view literal);
bool IsBytes(std::string_view literal);

}  // namespace dt::scan
