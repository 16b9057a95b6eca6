#include "fix/diff.h"

#include <algorithm>

#include "util/strings.h"

namespace dt::fix {

namespace {

using LineList = std::vector<std::string_view>;

LineList Lines(std::string_view text) {
  LineList lines;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t nl = text.find('\n', at);
    std::size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
    lines.push_back(text.substr(at, end - at));
    at = end;
  }
  return lines;
}

enum class Op : unsigned char { kKeep, kDelete, kInsert };

// Beyond this many differing lines in one stretch, the stretch is shown as all its old lines
// removed and all its new ones added: Myers' trace holds O(D^2) integers, which must stay small.
constexpr int kMaxEditDistance = 2000;

// The walk back through Myers' saved frontiers, appending the script of a[0, x) -> b[0, y).
void Backtrack(const std::vector<std::vector<int>>& trace, int found_d, int x, int y,
               std::vector<Op>& ops) {
  const std::size_t first = ops.size();
  for (int d = found_d; d > 0; --d) {
    const std::vector<int>& pv = trace[static_cast<std::size_t>(d)];
    auto at = [&](int diagonal) { return pv[static_cast<std::size_t>(diagonal + d)]; };
    const int k = x - y;
    const int prev_k = (k == -d || (k != d && at(k - 1) < at(k + 1))) ? k + 1 : k - 1;
    const int prev_x = at(prev_k);
    const int prev_y = prev_x - prev_k;
    for (; x > prev_x && y > prev_y; --x, --y) ops.push_back(Op::kKeep);
    ops.push_back(x == prev_x ? Op::kInsert : Op::kDelete);
    x = prev_x;
    y = prev_y;
  }
  for (; x > 0 && y > 0; --x, --y) ops.push_back(Op::kKeep);
  std::reverse(ops.begin() + static_cast<std::ptrdiff_t>(first), ops.end());
}

// Myers' O((N+M)D) shortest edit script of a -> b, appended to `ops`. Written here because a fix
// changes a few lines of a long file (D is small), and no Debian/Homebrew diff library fits a C++
// build this size. Past kMaxEditDistance it gives up on a minimal script (see above).
void EditScript(const std::string_view* a, int n, const std::string_view* b, int m,
                std::vector<Op>& ops) {
  const int max = std::min(n + m, kMaxEditDistance);
  std::vector<int> v(2 * static_cast<std::size_t>(max) + 3, 0);
  std::vector<std::vector<int>> trace;
  const int offset = max + 1;
  for (int d = 0; d <= max; ++d) {
    // The frontier before step d, over diagonals -d..d only: O(D^2) memory, not O(D(N+M)).
    trace.emplace_back(v.begin() + (offset - d), v.begin() + (offset + d + 1));
    for (int k = -d; k <= d; k += 2) {
      auto vk = [&](int diagonal) { return v[static_cast<std::size_t>(offset + diagonal)]; };
      int x = (k == -d || (k != d && vk(k - 1) < vk(k + 1))) ? vk(k + 1) : vk(k - 1) + 1;
      int y = x - k;
      while (x < n && y < m && a[x] == b[y]) ++x, ++y;
      v[static_cast<std::size_t>(offset + k)] = x;
      if (x >= n && y >= m) return Backtrack(trace, d, n, m, ops);
    }
  }
  ops.insert(ops.end(), static_cast<std::size_t>(n), Op::kDelete);
  ops.insert(ops.end(), static_cast<std::size_t>(m), Op::kInsert);
}

// The script of a[a0, a1) -> b[b0, b1): equal leading and trailing lines kept without a search.
void DiffRange(const LineList& a, std::size_t a0, std::size_t a1, const LineList& b, std::size_t b0,
               std::size_t b1, std::vector<Op>& ops) {
  std::size_t head = 0;
  while (a0 + head < a1 && b0 + head < b1 && a[a0 + head] == b[b0 + head]) ++head;
  std::size_t tail = 0;
  while (a1 - tail > a0 + head && b1 - tail > b0 + head && a[a1 - tail - 1] == b[b1 - tail - 1])
    ++tail;
  ops.insert(ops.end(), head, Op::kKeep);
  EditScript(a.data() + a0 + head, static_cast<int>(a1 - tail - a0 - head), b.data() + b0 + head,
             static_cast<int>(b1 - tail - b0 - head), ops);
  ops.insert(ops.end(), tail, Op::kKeep);
}

bool AtLineStart(std::string_view t, std::size_t at) { return at == 0 || t[at - 1] == '\n'; }

// The replacements widened to whole lines (on both sides by the same bytes: what lies between
// replacements is equal in both texts) and merged where they then touch.
std::vector<Replaced> WholeLines(std::string_view a, std::string_view b,
                                 const std::vector<Replaced>& replaced) {
  std::vector<Replaced> out;
  for (Replaced r : replaced) {
    while (!AtLineStart(a, r.before_begin) || !AtLineStart(b, r.after_begin)) {
      if (r.before_begin == 0 || r.after_begin == 0) break;
      --r.before_begin, --r.after_begin;
    }
    while ((r.before_end < a.size() && !AtLineStart(a, r.before_end)) ||
           (r.after_end < b.size() && !AtLineStart(b, r.after_end))) {
      if (r.before_end >= a.size() || r.after_end >= b.size()) break;
      ++r.before_end, ++r.after_end;
    }
    if (!out.empty() && r.before_begin <= out.back().before_end) {
      out.back().before_end = std::max(out.back().before_end, r.before_end);
      out.back().after_end = std::max(out.back().after_end, r.after_end);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

// The index of the line starting at byte `at` (the line count at the end of the text).
std::size_t LineIndex(const LineList& lines, std::string_view text, std::size_t at) {
  auto it =
      std::lower_bound(lines.begin(), lines.end(), at, [&](std::string_view l, std::size_t o) {
        return static_cast<std::size_t>(l.data() - text.data()) < o;
      });
  return static_cast<std::size_t>(it - lines.begin());
}

void AppendLine(std::string& out, char mark, std::string_view line) {
  out += mark;
  out += line;
  if (line.empty() || line.back() != '\n') out += "\n\\ No newline at end of file\n";
}

// The hunks of a whole-file script, with `context` kept lines around each run of changes.
std::string Hunks(const LineList& a, const LineList& b, const std::vector<Op>& ops, int context) {
  // Positions in a and b before each op.
  std::vector<std::pair<int, int>> pos;
  pos.reserve(ops.size() + 1);
  int x = 0, y = 0;
  for (Op op : ops) {
    pos.emplace_back(x, y);
    if (op != Op::kInsert) ++x;
    if (op != Op::kDelete) ++y;
  }
  pos.emplace_back(x, y);
  const auto ctx = static_cast<std::size_t>(context);
  std::string out;
  const std::size_t count = ops.size();
  for (std::size_t i = 0; i < count;) {
    if (ops[i] == Op::kKeep) {
      ++i;
      continue;
    }
    // A hunk: from `context` keeps before this change to `context` keeps after the last change
    // that lies within 2 * context keeps of the previous one.
    std::size_t start = i >= ctx ? i - ctx : 0;
    while (start < i && ops[start] != Op::kKeep) ++start;
    std::size_t end = i;
    for (std::size_t j = i; j < count; ++j) {
      if (ops[j] != Op::kKeep) {
        end = j + 1;
        continue;
      }
      if (j - end >= 2 * ctx) break;
    }
    const std::size_t stop = std::min(count, end + ctx);
    int a_len = 0, b_len = 0;
    for (std::size_t j = start; j < stop; ++j) {
      if (ops[j] != Op::kInsert) ++a_len;
      if (ops[j] != Op::kDelete) ++b_len;
    }
    const int a_start = pos[start].first + (a_len > 0 ? 1 : 0);
    const int b_start = pos[start].second + (b_len > 0 ? 1 : 0);
    out += "@@ -" + std::to_string(a_start) + (a_len == 1 ? "" : "," + std::to_string(a_len)) +
           " +" + std::to_string(b_start) + (b_len == 1 ? "" : "," + std::to_string(b_len)) +
           " @@\n";
    for (std::size_t j = start; j < stop; ++j) {
      const auto [ax, by] = pos[j];
      if (ops[j] == Op::kKeep)
        AppendLine(out, ' ', a[static_cast<std::size_t>(ax)]);
      else if (ops[j] == Op::kDelete)
        AppendLine(out, '-', a[static_cast<std::size_t>(ax)]);
      else
        AppendLine(out, '+', b[static_cast<std::size_t>(by)]);
    }
    i = stop;
  }
  return out;
}

}  // namespace

std::string UnifiedDiff(std::string_view before, std::string_view after, std::string_view name,
                        int context) {
  return UnifiedDiff(before, after, name, {Replaced{0, before.size(), 0, after.size()}}, context);
}

std::string UnifiedDiff(std::string_view before, std::string_view after, std::string_view name,
                        const std::vector<Replaced>& replaced, int context) {
  if (before == after) return {};
  const LineList a = Lines(before);
  const LineList b = Lines(after);
  std::vector<Op> ops;
  ops.reserve(std::max(a.size(), b.size()));
  std::size_t la = 0, lb = 0;  // The lines before these are scripted.
  for (const Replaced& r : WholeLines(before, after, replaced)) {
    const std::size_t a0 = LineIndex(a, before, r.before_begin);
    const std::size_t b0 = LineIndex(b, after, r.after_begin);
    ops.insert(ops.end(), a0 - la, Op::kKeep);  // Equal text between replacements.
    la = LineIndex(a, before, r.before_end);
    lb = LineIndex(b, after, r.after_end);
    DiffRange(a, a0, la, b, b0, lb, ops);
  }
  ops.insert(ops.end(), a.size() - la, Op::kKeep);
  const std::string escaped = EscapeControl(name);
  return "--- a/" + escaped + "\n+++ b/" + escaped + "\n" + Hunks(a, b, ops, context);
}

}  // namespace dt::fix
