// Token-level reading of one lexed Python file, shared by the semantic model and the rules: a
// token's text and place, the brackets around it, the statement it starts. Nothing here knows what
// the code means; PyModel (python_model.h) builds the facts on top of it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "scan/python_lexer.h"
#include "scan/python_scanner.h"

namespace dt::scan {

// Text tests the model and the rules share.
namespace py {

inline bool IsDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

inline bool Contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// Whether `s` holds `word` (lower-case letters) in any case, without a lower-case copy: `| 0x20`
// maps only 'A'-'Z' onto the letters.
inline bool ContainsFolded(std::string_view s, std::string_view word) {
  for (std::size_t i = 0; i + word.size() <= s.size(); ++i) {
    std::size_t k = 0;
    while (k < word.size() && (s[i + k] | 0x20) == word[k]) ++k;
    if (k == word.size()) return true;
  }
  return false;
}

inline bool IsNccl(std::string_view body) {
  return body.size() == 4 && (body[0] | 0x20) == 'n' && (body[1] | 0x20) == 'c' &&
         (body[2] | 0x20) == 'c' && (body[3] | 0x20) == 'l';
}

}  // namespace py

class PyTokens {
 public:
  explicit PyTokens(const Lexed& lex) : lex_(lex) {}

  const Lexed& lex() const { return lex_; }
  const std::vector<LogicalLine>& lines() const { return lex_.lines; }
  const Token& T(std::size_t k) const { return lex_.tokens[k]; }
  TokenText Text(const Token& t) const { return lex_.Text(t); }
  std::uint32_t Line(const Token& t) const { return lex_.Line(t); }
  std::uint32_t Column(const Token& t) const { return lex_.Column(t); }
  template <std::size_t N>
  bool Is(const Token& t, const char (&text)[N]) const {
    return lex_.Text(t) == text;
  }
  template <std::size_t N>
  bool IsOp(const Token& t, const char (&text)[N]) const {
    return t.kind() == TokKind::kOp && lex_.Text(t) == text;
  }
  bool IsName(const Token& t) const { return t.kind() == TokKind::kName; }
  bool IsOpen(const Token& t) const {
    if (t.kind() != TokKind::kOp || t.size() != 1) return false;
    char c = lex_.src[t.offset];
    return c == '(' || c == '[' || c == '{';
  }
  bool IsClose(const Token& t) const {
    if (t.kind() != TokKind::kOp || t.size() != 1) return false;
    char c = lex_.src[t.offset];
    return c == ')' || c == ']' || c == '}';
  }
  TokenText First(const LogicalLine& l) const { return lex_.Text(T(l.begin)); }
  // The keyword of a line, past `async`.
  TokenText Head(const LogicalLine& l) const {
    if (First(l) == "async" && l.end - l.begin > 1) return lex_.Text(T(l.begin + 1));
    return First(l);
  }
  // "cuda", "cuda:0", and f"cuda:{rank}".
  bool IsCudaDeviceString(const Token& t) const;
  // A statement of string literals alone: a docstring, prose.
  bool StringsOnly(const LogicalLine& l) const;
  // `if __name__ == "__main__":`.
  bool IsMainCheck(const LogicalLine& l) const;
  // Reads a dotted name starting at token k; returns the end index.
  std::size_t Dotted(std::size_t k, std::size_t end, std::string& out) const;
  // The index of the bracket closing the one at `open`, or e.
  std::size_t Matching(std::size_t open, std::size_t e) const;
  // The first top-level `:` of the line, or its end.
  std::size_t FindColon(const LogicalLine& l) const;
  // The opening bracket whose contents hold token k (a call's, for the message of `print(...)` or
  // `warnings.warn(...)`): its index, or -1 when none does.
  std::size_t EnclosingOpen(std::size_t k, std::size_t b) const;
  // The arguments of the call that starts at `open` (when it is one): positional ones, keywords
  // and spreads, counted at the call's own depth.
  void ReadCall(std::size_t open, std::size_t e, PyRef& r) const;
  // Whether the (string) token k of [b, e) is compared, or tested for membership.
  bool InComparison(std::size_t k, std::size_t b, std::size_t e) const;

 protected:
  const Lexed& lex_;
};

}  // namespace dt::scan
