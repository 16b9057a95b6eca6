#include "scan/sink.h"

#include <cstring>

#include "util/result.h"
#include "util/strings.h"

namespace dt::scan {

bool IsSuppressed(std::string_view text, std::string_view code) {
  static constexpr std::string_view kMarker = "dualtrack: ignore";
  auto pos = text.find(kMarker);
  if (pos == std::string_view::npos) return false;
  std::string_view rest = text.substr(pos + kMarker.size());
  if (rest.empty() || rest[0] != '[') return true;  // A bare marker ignores every rule.
  auto close = rest.find(']');
  std::string_view list = rest.substr(1, close == std::string_view::npos ? rest.size() - 1 : close - 1);
  for (auto item : Split(list, ',')) {
    item = Trim(item);
    if (!item.empty() && StartsWith(code, item)) return true;
  }
  return false;
}

std::string_view FindingSink::Line(std::uint32_t line) {
  if (line_starts_.empty()) {
    line_starts_.push_back(0);
    const char* p = src_.data();
    const char* end = p + src_.size();
    while (const void* nl = std::memchr(p, '\n', static_cast<std::size_t>(end - p))) {
      p = static_cast<const char*>(nl) + 1;
      line_starts_.push_back(static_cast<std::uint32_t>(p - src_.data()));
    }
  }
  if (line == 0 || line > line_starts_.size()) return {};
  std::size_t b = line_starts_[line - 1];
  std::size_t e = line < line_starts_.size() ? line_starts_[line] - 1 : src_.size();
  std::string_view s = src_.substr(b, e - b);
  if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
  return s;
}

void FindingSink::Add(std::string_view code, std::uint32_t line, std::uint32_t column,
                      std::string_view name, bool guarded, std::string_view replacement) {
  const Rule* rule = reg_.FindRule(code);
  // The registry's load checked every detector code against the data, so a miss here is a
  // detector writing a code it did not declare (scan/codes.cc): a bug, not bad input.
  DT_CHECK(rule != nullptr && !reg_.IsRetired(code));
  // One finding per line and code; environment files list several packages on one line.
  std::uint64_t key = (std::uint64_t{line} << 24) ^ std::hash<std::string_view>{}(code) ^
                      (StartsWith(code, "DT4") ? std::uint64_t{column} << 48 : 0);
  if (!seen_.insert(key).second) return;
  std::string_view text = Line(line);
  if (IsSuppressed(text, code)) return;
  Finding f;
  f.code = rule->code;
  f.cls = rule->cls;
  f.severity = guarded ? Severity::kPortable : rule->severity;
  f.file = rel_;
  f.line = line;
  f.column = column;
  f.cell = cell_;
  f.message = FormatMessage(*rule, name);
  std::string_view snip = Trim(text);
  if (snip.size() > 200) snip = snip.substr(0, 200);
  f.snippet = std::string(snip);
  if (!IsValidUtf8(f.snippet)) f.snippet.clear();
  f.guarded = guarded;
  f.replacement = replacement.empty() ? rule->replacement : std::string(replacement);
  out_.push_back(std::move(f));
}

}  // namespace dt::scan
