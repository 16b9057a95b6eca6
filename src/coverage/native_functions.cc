// A reader for the subset of YAML that native_functions.yaml uses: a top-level list of maps, one
// per
// `- func:`, whose values are scalars, flow lists or one level of nested map (`dispatch:`). A
// general YAML library costs several times the 50 ms budget on the 15k-line file and we read only
// `func`, `dispatch`, `structured_delegate` and `autogen`; anything outside the subset is reported
// with its line rather than guessed at.
#include "coverage/native_functions.h"

#include <unordered_set>

#include "util/strings.h"

namespace dt::coverage {
namespace {

// The value part of `key: value  # comment`, trimmed.
std::string_view StripComment(std::string_view v) {
  std::size_t hash = v.find(" #");
  if (hash != std::string_view::npos) v = v.substr(0, hash);
  if (!v.empty() && v.front() == '#') return {};
  return Trim(v);
}

std::vector<std::string> SplitList(std::string_view v) {
  v = Trim(v);
  if (!v.empty() && v.front() == '[' && v.back() == ']') v = v.substr(1, v.size() - 2);
  std::vector<std::string> out;
  for (std::string_view part : Split(v, ',')) {
    part = Trim(part);
    if (!part.empty()) out.emplace_back(part);
  }
  return out;
}

std::size_t Indent(std::string_view line) {
  std::size_t n = 0;
  while (n < line.size() && line[n] == ' ') ++n;
  return n;
}

}  // namespace

Result<std::vector<NativeFunction>> ParseNativeFunctions(std::string_view text,
                                                         const std::string& file) {
  std::vector<NativeFunction> fns;
  fns.reserve(3000);
  enum class Block { kNone, kDispatch, kOther } block = Block::kNone;
  std::int64_t lineno = 0;
  std::size_t pos = 0;
  auto error = [&](const std::string& msg) {
    return MakeError(ErrorCode::kInput, "native_functions.yaml: " + msg, file, lineno);
  };
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::size_t indent = Indent(line);
    if (indent == line.size() || line[indent] == '#') continue;
    if (line.find('\t') != std::string_view::npos)
      return error("tab character (YAML indents with spaces)");
    std::string_view body = line.substr(indent);

    if (indent == 0) {
      if (!StartsWith(body, "- func:")) {
        return error("expected '- func: <schema>' at the start of an entry, got '" +
                     std::string(body.substr(0, 40)) + "'");
      }
      std::string_view schema = StripComment(body.substr(7));
      std::size_t paren = schema.find('(');
      if (schema.empty() || paren == std::string_view::npos || paren == 0) {
        return error("'func:' needs a schema like 'name.overload(args) -> ret'");
      }
      NativeFunction fn;
      fn.name = std::string(Trim(schema.substr(0, paren)));
      fn.line = lineno;
      fns.push_back(std::move(fn));
      block = Block::kNone;
      continue;
    }
    if (fns.empty()) return error("indented line before the first '- func:' entry");
    NativeFunction& fn = fns.back();

    if (indent == 2) {
      if (body.front() == '-') {  // A list item under a field (precomputed:, tags:).
        if (block == Block::kNone) return error("list item outside a field");
        continue;
      }
      std::size_t colon = body.find(':');
      if (colon == std::string_view::npos || colon == 0) {
        return error("expected 'key: value', got '" + std::string(body.substr(0, 40)) + "'");
      }
      std::string_view key = body.substr(0, colon);
      std::string_view value = StripComment(body.substr(colon + 1));
      block = Block::kNone;
      if (key == "dispatch") {
        if (!value.empty() && value != "{}") {
          return error("'dispatch:' must be followed by indented 'KEY: kernel' lines");
        }
        fn.has_dispatch = true;
        block = value.empty() ? Block::kDispatch : Block::kNone;
      } else if (key == "structured_delegate") {
        if (value.empty()) return error("'structured_delegate:' needs an operator name");
        fn.structured_delegate = std::string(value);
      } else if (key == "autogen") {
        fn.autogen = SplitList(value);
      } else if (value.empty()) {
        block = Block::kOther;  // ufunc_inner_loop:, precomputed: ... hold nested lines we skip.
      }
      continue;
    }
    if (indent >= 4 && block == Block::kDispatch) {
      std::size_t colon = body.find(':');
      if (colon == std::string_view::npos || colon == 0) {
        return error("expected 'DispatchKey: kernel' in 'dispatch:', got '" +
                     std::string(body.substr(0, 40)) + "'");
      }
      DispatchEntry entry;
      entry.keys = SplitList(body.substr(0, colon));
      entry.kernel = std::string(StripComment(body.substr(colon + 1)));
      if (entry.keys.empty() || entry.kernel.empty()) {
        return error("dispatch entry needs keys and a kernel name");
      }
      fn.dispatch.push_back(std::move(entry));
      continue;
    }
    if (indent >= 4 && block == Block::kOther) continue;
    return error("unexpected indentation of " + std::to_string(indent) + " spaces");
  }
  if (fns.empty()) {
    lineno = 0;
    return error("no '- func:' entries: not a native_functions.yaml");
  }
  return fns;
}

std::string_view OpClassName(OpClass c) {
  switch (c) {
    case OpClass::kNative:
    case OpClass::kExplicit:
      return "native";
    case OpClass::kComposite:
      return "composite";
    case OpClass::kCpuFallback:
      return "cpu-fallback";
    case OpClass::kAlwaysCpu:
      return "always-cpu";
    case OpClass::kAbsent:
      return "unknown";
  }
  return "unknown";
}

std::string_view OpClassBasis(OpClass c) {
  switch (c) {
    case OpClass::kNative:
      return "MPS kernel";
    case OpClass::kExplicit:
      return "CompositeExplicitAutograd kernel (all backends)";
    case OpClass::kComposite:
      return "CompositeImplicitAutograd (decomposes)";
    case OpClass::kCpuFallback:
      return "no MPS kernel";
    case OpClass::kAlwaysCpu:
      return "MPSFallback.mm sends it to the CPU";
    case OpClass::kAbsent:
      return "not in this release";
  }
  return "";
}

std::optional<OpClass> ParseOpClassName(std::string_view name) {
  for (OpClass c : {OpClass::kNative, OpClass::kComposite, OpClass::kCpuFallback,
                    OpClass::kAlwaysCpu, OpClass::kAbsent})
    if (name == OpClassName(c)) return c;
  return std::nullopt;
}

bool IsValidClassLetter(char c) {
  return c == 'N' || c == 'E' || c == 'C' || c == 'F' || c == 'A' || c == '-';
}

namespace {

// The class that one entry's own dispatch section gives, or kAbsent when it says nothing.
OpClass ClassOfDispatch(const NativeFunction& fn) {
  bool mps = false, explicit_composite = false, implicit = false;
  for (const DispatchEntry& e : fn.dispatch) {
    for (const std::string& k : e.keys) {
      if (k == "MPS")
        mps = true;
      else if (k == "CompositeExplicitAutograd" || k == "CompositeExplicitAutogradNonFunctional") {
        explicit_composite = true;
      } else if (k == "CompositeImplicitAutograd") {
        implicit = true;
      }
    }
  }
  if (mps) return OpClass::kNative;
  if (explicit_composite) return OpClass::kExplicit;
  if (implicit) return OpClass::kComposite;
  return OpClass::kAbsent;
}

}  // namespace

std::unordered_map<std::string, OpClass> ClassifyOperators(const std::vector<NativeFunction>& fns,
                                                           const SourceLists& sources) {
  std::unordered_map<std::string, const NativeFunction*> by_name;
  by_name.reserve(fns.size() * 2);
  for (const NativeFunction& fn : fns) by_name.emplace(fn.name, &fn);

  std::unordered_map<std::string, OpClass> out;
  out.reserve(fns.size() * 2);
  for (const NativeFunction& fn : fns) {
    OpClass c = ClassOfDispatch(fn);
    if (c == OpClass::kAbsent && !fn.structured_delegate.empty()) {
      // The functional and in-place overloads of a structured kernel use the .out entry's kernels.
      auto it = by_name.find(fn.structured_delegate);
      if (it != by_name.end()) c = ClassOfDispatch(*it->second);
    }
    if (c == OpClass::kAbsent) {
      // No dispatch section and no delegate: CompositeImplicitAutograd by the file's own rule.
      c = (fn.has_dispatch || !fn.structured_delegate.empty()) ? OpClass::kCpuFallback
                                                               : OpClass::kComposite;
    }
    out[fn.name] = c;
  }
  // Autogenerated overloads call the operator they come from, so they run where it runs.
  for (const NativeFunction& fn : fns) {
    for (const std::string& gen : fn.autogen) out.emplace(gen, out[fn.name]);
  }
  for (const std::string& name : sources.hand_registered) {
    auto it = out.find(name);
    if (it != out.end()) it->second = OpClass::kNative;
  }
  for (const std::string& name : sources.always_cpu) {
    auto it = out.find(name);
    if (it != out.end() && it->second != OpClass::kNative) it->second = OpClass::kAlwaysCpu;
  }
  return out;
}

}  // namespace dt::coverage
