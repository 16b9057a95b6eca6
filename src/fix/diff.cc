#include "fix/diff.h"

#include <algorithm>
#include <vector>

namespace dt::fix {

namespace {

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t nl = text.find('\n', at);
    std::size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
    lines.push_back(text.substr(at, end - at));
    at = end;
  }
  return lines;
}

enum class Op { kKeep, kDelete, kInsert };

// Myers' O((N+M)D) shortest edit script. Written here because a fix changes a few lines of a long
// file (D is small), and no Debian/Homebrew diff library fits a C++ build this size; the edits
// are a list of keep/delete/insert over the two line arrays.
std::vector<Op> EditScript(const std::vector<std::string_view>& a,
                           const std::vector<std::string_view>& b) {
  const int n = static_cast<int>(a.size());
  const int m = static_cast<int>(b.size());
  const int max = n + m;
  std::vector<int> v(2 * static_cast<std::size_t>(max) + 2, 0);
  std::vector<std::vector<int>> trace;
  const int offset = max + 1;
  int found_d = -1;
  for (int d = 0; d <= max && found_d < 0; ++d) {
    // The frontier before step d, over diagonals -d..d only: O(D^2) memory, not O(D(N+M)).
    trace.emplace_back(v.begin() + (offset - d), v.begin() + (offset + d + 1));
    for (int k = -d; k <= d; k += 2) {
      int x;
      if (k == -d || (k != d && v[static_cast<std::size_t>(offset + k - 1)] <
                                    v[static_cast<std::size_t>(offset + k + 1)]))
        x = v[static_cast<std::size_t>(offset + k + 1)];
      else
        x = v[static_cast<std::size_t>(offset + k - 1)] + 1;
      int y = x - k;
      while (x < n && y < m && a[static_cast<std::size_t>(x)] == b[static_cast<std::size_t>(y)]) {
        ++x;
        ++y;
      }
      v[static_cast<std::size_t>(offset + k)] = x;
      if (x >= n && y >= m) {
        found_d = d;
        break;
      }
    }
  }
  // Walk back through the saved frontiers.
  std::vector<Op> ops;
  int x = n, y = m;
  for (int d = found_d; d > 0; --d) {
    const std::vector<int>& pv = trace[static_cast<std::size_t>(d)];
    auto at = [&](int diagonal) { return pv[static_cast<std::size_t>(diagonal + d)]; };
    const int k = x - y;
    const int prev_k = (k == -d || (k != d && at(k - 1) < at(k + 1))) ? k + 1 : k - 1;
    const int prev_x = at(prev_k);
    const int prev_y = prev_x - prev_k;
    while (x > prev_x && y > prev_y) {
      ops.push_back(Op::kKeep);
      --x;
      --y;
    }
    ops.push_back(x == prev_x ? Op::kInsert : Op::kDelete);
    x = prev_x;
    y = prev_y;
  }
  while (x > 0 && y > 0) {
    ops.push_back(Op::kKeep);
    --x;
    --y;
  }
  std::reverse(ops.begin(), ops.end());
  return ops;
}

void AppendLine(std::string& out, char mark, std::string_view line) {
  out += mark;
  out += line;
  if (line.empty() || line.back() != '\n') out += "\n\\ No newline at end of file\n";
}

}  // namespace

std::string UnifiedDiff(std::string_view before, std::string_view after, std::string_view name,
                        int context) {
  if (before == after) return {};
  const auto a = Lines(before);
  const auto b = Lines(after);
  const auto ops = EditScript(a, b);
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
  std::string out = "--- a/" + std::string(name) + "\n+++ b/" + std::string(name) + "\n";
  const std::size_t count = ops.size();
  std::size_t i = 0;
  while (i < count) {
    if (ops[i] == Op::kKeep) {
      ++i;
      continue;
    }
    // A hunk: from `context` keeps before this change to `context` keeps after the last change
    // that lies within 2 * context keeps of the previous one.
    std::size_t start =
        i >= static_cast<std::size_t>(context) ? i - static_cast<std::size_t>(context) : 0;
    while (start < i && ops[start] != Op::kKeep) ++start;
    std::size_t end = i;
    for (std::size_t j = i; j < count; ++j) {
      if (ops[j] != Op::kKeep) {
        end = j + 1;
        continue;
      }
      if (j - end >= static_cast<std::size_t>(2 * context)) break;
    }
    const std::size_t stop = std::min(count, end + static_cast<std::size_t>(context));
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

}  // namespace dt::fix
