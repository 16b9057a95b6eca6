#include "scan/python_tokens.h"

#include "util/strings.h"

namespace dt::scan {

bool PyTokens::IsCudaDeviceString(const Token& t) const {
  if (t.kind() != TokKind::kString || IsBytes(lex_.Text(t))) return false;
  std::string_view body = StringBody(lex_.Text(t));
  if (body == "cuda") return true;
  if (!StartsWith(body, "cuda:")) return false;
  std::string_view rest = body.substr(5);
  // "cuda:0", f"cuda:{rank}", and the "cuda:{}" / "cuda:%d" of .format() and %.
  // "cuda:" alone is the head of a built name ('cuda:' + str(args.gpu)): a quoted "cuda:" in a
  // message is prose, which the rules drop before they look at device strings.
  return rest.empty() || py::IsDigits(rest) || StartsWith(rest, "{") || rest == "%d" ||
         rest == "%s" || rest == "%i";
}

bool PyTokens::StringsOnly(const LogicalLine& l) const {
  for (auto k = l.begin; k < l.end; ++k)
    if (T(k).kind() != TokKind::kString) return false;
  return true;
}

bool PyTokens::IsMainCheck(const LogicalLine& l) const {
  if (First(l) != "if" || l.end - l.begin < 2 || !Is(T(l.begin + 1), "__name__")) return false;
  for (auto k = l.begin; k < l.end; ++k)
    if (T(k).kind() == TokKind::kString && StringBody(lex_.Text(T(k))) == "__main__") return true;
  return false;
}

std::size_t PyTokens::Dotted(std::size_t k, std::size_t end, std::string& out) const {
  out.clear();
  while (k < end && IsName(T(k))) {
    out.append(lex_.Text(T(k)));
    if (k + 2 < end && IsOp(T(k + 1), ".") && IsName(T(k + 2))) {
      out.push_back('.');
      k += 2;
    } else {
      return k + 1;
    }
  }
  return k;
}

std::size_t PyTokens::Matching(std::size_t open, std::size_t e) const {
  int depth = 0;
  for (std::size_t k = open; k < e; ++k) {
    if (IsOpen(T(k))) ++depth;
    if (IsClose(T(k)) && --depth == 0) return k;
  }
  return e;
}

std::size_t PyTokens::FindColon(const LogicalLine& l) const {
  int depth = 0;
  for (std::size_t k = l.begin; k < l.end; ++k) {
    if (T(k).kind() != TokKind::kOp) continue;
    if (IsOpen(T(k)))
      ++depth;
    else if (IsClose(T(k)))
      --depth;
    else if (depth == 0 && lex_.Text(T(k)) == ":")
      return k;
  }
  return l.end;
}

std::size_t PyTokens::EnclosingOpen(std::size_t k, std::size_t b) const {
  int depth = 0;
  for (std::size_t j = k; j > b; --j) {
    const Token& t = T(j - 1);
    if (IsClose(t))
      ++depth;
    else if (IsOpen(t)) {
      if (depth == 0) return j - 1;
      --depth;
    }
  }
  return static_cast<std::size_t>(-1);
}

void PyTokens::ReadCall(std::size_t open, std::size_t e, PyRef& r) const {
  if (open >= e || !IsOp(T(open), "(")) return;
  r.call = true;
  const std::size_t close = Matching(open, e);
  bool fresh = true;  // At the start of an argument.
  int depth = 0;
  for (std::size_t k = open + 1; k < close; ++k) {
    const Token& t = T(k);
    if (depth == 0 && fresh) {
      fresh = false;
      if (IsOp(t, "*") || IsOp(t, "**"))
        r.spread = true;
      else if (IsName(t) && k + 1 < close && IsOp(T(k + 1), "="))
        r.keywords.emplace_back(lex_.Text(t));
      else
        ++r.positional;
    }
    if (IsOpen(t))
      ++depth;
    else if (IsClose(t))
      --depth;
    else if (depth == 0 && IsOp(t, ","))
      fresh = true;
  }
}

bool PyTokens::InComparison(std::size_t k, std::size_t b, std::size_t e) const {
  if (k > b && (IsOp(T(k - 1), "==") || IsOp(T(k - 1), "!="))) return true;
  // `x.type == torch.device("cuda").type`: the only argument of a call whose value (or an
  // attribute of it) is compared.
  if (k > b + 1 && IsOp(T(k - 1), "(") && k + 1 < e && IsOp(T(k + 1), ")")) {
    std::size_t j = k + 2;
    while (j + 1 < e && IsOp(T(j), ".") && IsName(T(j + 1))) j += 2;
    if (j < e && (IsOp(T(j), "==") || IsOp(T(j), "!="))) return true;
    std::size_t h = k - 1;  // Back over the callee NAME(.NAME)*.
    while (h > b && (IsName(T(h - 1)) || IsOp(T(h - 1), "."))) --h;
    if (h > b && (IsOp(T(h - 1), "==") || IsOp(T(h - 1), "!="))) return true;
  }
  if (k + 1 < e && (IsOp(T(k + 1), "==") || IsOp(T(k + 1), "!=") || Is(T(k + 1), "in") ||
                    (Is(T(k + 1), "not") && k + 2 < e && Is(T(k + 2), "in"))))
    return true;
  // `"cuda" in (...)`, `x in ("cuda", "mps")`, `.startswith("cuda")`.
  std::size_t j = k;
  while (j > b && (T(j - 1).kind() == TokKind::kString || IsOp(T(j - 1), ","))) --j;
  if (j > b + 1 && IsOpen(T(j - 1)) && Is(T(j - 2), "in")) return true;
  if (j > b + 1 && IsOp(T(j - 1), "(") &&
      (Is(T(j - 2), "startswith") || Is(T(j - 2), "endswith") || Is(T(j - 2), "find") ||
       Is(T(j - 2), "index") || Is(T(j - 2), "count") || Is(T(j - 2), "replace") ||
       Is(T(j - 2), "split") || Is(T(j - 2), "strip")))
    return true;
  return false;
}

}  // namespace dt::scan
