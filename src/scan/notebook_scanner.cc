#include "scan/notebook_scanner.h"

#include <nlohmann/json.hpp>

#include "scan/env_scanners.h"
#include "util/json_fields.h"

namespace dt::scan {

std::string BlankMagics(std::string source) {
  for (std::size_t pos = 0; pos < source.size();) {
    std::size_t nl = source.find('\n', pos);
    std::size_t end = nl == std::string::npos ? source.size() : nl;
    std::size_t first = source.find_first_not_of(" \t", pos);
    if (first < end && (source[first] == '%' || source[first] == '!'))
      for (std::size_t k = first; k < end; ++k) source[k] = ' ';
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return source;
}

namespace {

// The file line where each source line of each cell starts: [cell index][line in cell]. A JSON
// parser keeps no positions, so the cells' "source" strings are found by a small walk over the
// text's tokens (strings, brackets, commas, colons): only the path cells[i].source[k] matters.
// Depth is a vector, not recursion, so no nesting can exhaust the stack.
std::vector<std::vector<std::int64_t>> SourceFileLines(std::string_view text) {
  struct Frame {
    bool array = false;
    bool want_key = true;   // Objects: the next string is a key.
    std::string key;        // Objects: the key of the value being read.
    std::size_t index = 0;  // Arrays: the element being read.
  };
  std::vector<Frame> stack;
  std::vector<std::vector<std::int64_t>> out;
  std::int64_t line = 1;
  bool line_open = false;  // The cell's last element ended without a newline.
  // The value now read is cells[i].source (depth 3) or one of its strings (depth 4).
  auto in_source = [&](std::size_t depth) {
    return stack.size() == depth && !stack[0].array && stack[0].key == "cells" && stack[1].array &&
           !stack[2].array && stack[2].key == "source" && (depth == 3 || stack[3].array);
  };
  auto on_string = [&](std::string_view raw, std::int64_t at) {
    if (!stack.empty() && !stack.back().array && stack.back().want_key) {
      stack.back().key.assign(raw);
      return;
    }
    const bool whole = in_source(3), part = in_source(4);
    if (!whole && !part) return;
    const std::size_t cell = stack[1].index;
    if (out.size() <= cell) out.resize(cell + 1);
    auto& lines = out[cell];
    if (whole || (part && stack[3].index == 0)) line_open = false;
    // Each escaped newline ends a source line; one that ends the string starts no new line here.
    if (!line_open) lines.push_back(at);
    line_open = true;
    for (std::size_t k = 0; k + 1 < raw.size(); ++k) {
      if (raw[k] != '\\') continue;
      if (raw[k + 1] == 'n') {
        if (k + 2 < raw.size())
          lines.push_back(at);
        else
          line_open = false;
      }
      ++k;
    }
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    switch (c) {
      case '\n':
        ++line;
        break;
      case '"': {
        const std::int64_t at = line;
        std::size_t j = i + 1;
        while (j < text.size() && text[j] != '"') {
          if (text[j] == '\\') ++j;
          if (j < text.size() && text[j] == '\n') ++line;
          ++j;
        }
        on_string(text.substr(i + 1, std::min(j, text.size()) - i - 1), at);
        i = j;
        break;
      }
      case '{':
      case '[':
        stack.push_back(Frame{c == '[', c == '{', {}, 0});
        break;
      case '}':
      case ']':
        if (!stack.empty()) stack.pop_back();
        break;
      case ':':
        if (!stack.empty()) stack.back().want_key = false;
        break;
      case ',':
        if (!stack.empty()) {
          if (stack.back().array) {
            ++stack.back().index;
          } else {
            stack.back().want_key = true;
            stack.back().key.clear();
          }
        }
        break;
      default:
        break;
    }
  }
  return out;
}

}  // namespace

std::vector<SourceSpan> CellSourceSpans(std::string_view text) {
  // The same walk as SourceFileLines: a stack of frames, never recursion.
  struct Frame {
    bool array = false;
    bool want_key = true;
    std::string key;
  };
  std::vector<Frame> stack;
  std::vector<SourceSpan> out;
  std::size_t cell = 0;  // cells[cell] is the object being read (stack depth 3).
  auto at_source = [&](std::size_t depth) {
    return stack.size() == depth && !stack[0].array && stack[0].key == "cells" && stack[1].array &&
           !stack[2].array && stack[2].key == "source" && !stack[2].want_key &&
           (depth == 3 || stack[3].array);
  };
  auto span = [&]() -> SourceSpan& {
    if (out.size() <= cell) out.resize(cell + 1);
    return out[cell];
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      std::size_t j = i + 1;
      while (j < text.size() && text[j] != '"') j += text[j] == '\\' ? 2 : 1;
      const std::size_t end = std::min(j + 1, text.size());
      if (!stack.empty() && !stack.back().array && stack.back().want_key) {
        stack.back().key.assign(text.substr(i + 1, end - i - 2));
      } else if (at_source(3)) {
        span() = SourceSpan{true, false, i, end, {}};
      } else if (at_source(4)) {
        span().parts.emplace_back(i, end);
      }
      i = end - 1;
    } else if (c == '[' || c == '{') {
      if (c == '[' && at_source(3)) span() = SourceSpan{true, true, i, i, {}};
      stack.push_back(Frame{c == '[', c == '{', {}});
    } else if (c == ']' || c == '}') {
      if (c == ']' && at_source(4)) span().end = i + 1;
      if (!stack.empty()) stack.pop_back();
    } else if (c == ':' && !stack.empty()) {
      stack.back().want_key = false;
    } else if (c == ',' && !stack.empty()) {
      if (stack.size() == 2 && stack[1].array && !stack[0].array && stack[0].key == "cells") ++cell;
      stack.back().want_key = !stack.back().array;
      if (!stack.back().array) stack.back().key.clear();
    }
  }
  return out;
}

Result<NotebookSource> JoinNotebook(std::string_view text, const std::string& rel) {
  // Bounded before the DOM is built: nlohmann recurses with the nesting.
  if (auto st = CheckJsonDepth(text, rel); !st) return st.take_error();
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return MakeError(ErrorCode::kInput, std::string("invalid notebook JSON: ") + e.what(), rel);
  }
  if (!doc.is_object() || !doc.contains("cells") || !doc["cells"].is_array())
    return MakeError(ErrorCode::kInput, "not a notebook: no \"cells\" list", rel);
  const auto file_lines = SourceFileLines(text);
  NotebookSource out;
  std::int64_t index = 0;
  for (const auto& cell : doc["cells"]) {
    ++index;
    if (!cell.is_object()) continue;
    // find, not value(): value() throws when the field is there with another type.
    auto type = cell.find("cell_type");
    if (type == cell.end() || !type->is_string() || type->get_ref<const std::string&>() != "code")
      continue;
    std::string source;
    auto it = cell.find("source");
    if (it == cell.end()) continue;
    if (it->is_string()) {
      source = it->get<std::string>();
    } else if (it->is_array()) {
      for (const auto& part : *it)
        if (part.is_string()) source += part.get<std::string>();
    } else {
      continue;
    }
    if (source.empty()) continue;
    if (source.back() != '\n') source += '\n';
    const auto* where = static_cast<std::size_t>(index - 1) < file_lines.size()
                            ? &file_lines[static_cast<std::size_t>(index - 1)]
                            : nullptr;
    std::int64_t n = 0;
    for (char ch : source) {
      if (ch != '\n') continue;
      const auto k = static_cast<std::size_t>(n);
      out.lines.push_back({index, n + 1, where && k < where->size() ? (*where)[k] : 0});
      ++n;
    }
    out.python += BlankMagics(std::move(source));
  }
  return out;
}

void PlaceInCells(const std::vector<NotebookLine>& lines, std::vector<Finding>& findings) {
  for (Finding& f : findings) {
    if (f.line < 1 || static_cast<std::size_t>(f.line) > lines.size()) continue;
    const NotebookLine& at = lines[static_cast<std::size_t>(f.line - 1)];
    f.cell = at.cell;
    f.line = at.line;
    if (at.file_line > 0) f.file_line = at.file_line;
  }
}

Status ScanNotebook(std::string_view text, const Registry& reg, const std::string& rel,
                    std::vector<Finding>& out) {
  auto nb = JoinNotebook(text, rel);
  if (!nb) return nb.take_error();
  std::vector<Finding> found;
  FindingSink sink(reg, rel, nb->python, found);
  (void)ScanPython(nb->python, sink, false);
  UserTextRules(reg, nb->python, rel, found);
  PlaceInCells(nb->lines, found);
  out.insert(out.end(), std::make_move_iterator(found.begin()),
             std::make_move_iterator(found.end()));
  return OkStatus();
}

}  // namespace dt::scan
