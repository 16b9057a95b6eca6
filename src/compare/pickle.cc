#include "compare/pickle.h"

#include <cstring>
#include <functional>
#include <set>
#include <unordered_map>

#include "compare/zip.h"
#include "util/strings.h"

namespace dt::compare {

namespace {

enum class Kind {
  kNone,
  kBool,
  kInt,
  kFloat,
  kStr,
  kBytes,
  kList,
  kTuple,
  kDict,
  kGlobal,
  kStorage,
  kTensor,
  kMark
};

struct Obj {
  Kind kind = Kind::kNone;
  std::int64_t i = 0;
  double f = 0;
  std::string s;              // Str, Bytes, Global ("module.name"), Storage key.
  std::vector<int> items;     // List/Tuple items; Dict as key, value pairs.
  DType dtype = DType::kF32;  // Storage.
  int tensor = -1;            // Tensor: index into the tensors found.
};

constexpr std::size_t kMaxObjects = 1u << 22;
constexpr std::size_t kMaxDepth = 64;

struct StorageType {
  std::string_view name;
  DType dtype;
};

constexpr StorageType kStorageTypes[] = {
    {"torch.DoubleStorage", DType::kF64},
    {"torch.FloatStorage", DType::kF32},
    {"torch.HalfStorage", DType::kF16},
    {"torch.BFloat16Storage", DType::kBF16},
    {"torch.Float8_e4m3fnStorage", DType::kF8E4M3},
    {"torch.Float8_e5m2Storage", DType::kF8E5M2},
    {"torch.LongStorage", DType::kI64},
    {"torch.IntStorage", DType::kI32},
    {"torch.ShortStorage", DType::kI16},
    {"torch.CharStorage", DType::kI8},
    {"torch.ByteStorage", DType::kU8},
    {"torch.BoolStorage", DType::kBool},
    {"torch.UInt16Storage", DType::kU16},
    {"torch.UInt32Storage", DType::kU32},
    {"torch.UInt64Storage", DType::kU64},
    {"torch.ComplexFloatStorage", DType::kC64},
    {"torch.ComplexDoubleStorage", DType::kC128},
    // Newer dtypes (float8, uint16…) are saved as untyped byte storages plus a dtype argument.
    {"torch.storage.UntypedStorage", DType::kU8},
};

struct DTypeGlobal {
  std::string_view name;
  DType dtype;
};

constexpr DTypeGlobal kDTypeObjects[] = {
    {"torch.float64", DType::kF64},
    {"torch.float32", DType::kF32},
    {"torch.float16", DType::kF16},
    {"torch.bfloat16", DType::kBF16},
    {"torch.float8_e4m3fn", DType::kF8E4M3},
    {"torch.float8_e5m2", DType::kF8E5M2},
    {"torch.float8_e4m3fnuz", DType::kF8E4M3FNUZ},
    {"torch.float8_e5m2fnuz", DType::kF8E5M2FNUZ},
    {"torch.float8_e8m0fnu", DType::kF8E8M0},
    {"torch.complex64", DType::kC64},
    {"torch.complex128", DType::kC128},
    {"torch.int64", DType::kI64},
    {"torch.int32", DType::kI32},
    {"torch.int16", DType::kI16},
    {"torch.int8", DType::kI8},
    {"torch.uint64", DType::kU64},
    {"torch.uint32", DType::kU32},
    {"torch.uint16", DType::kU16},
    {"torch.uint8", DType::kU8},
    {"torch.bool", DType::kBool},
};

// dtype objects torch.save writes as plain globals (a saved `torch.float32` value).
constexpr std::string_view kDTypeGlobals[] = {
    "torch.float64",         "torch.float32",        "torch.float16",       "torch.bfloat16",
    "torch.int64",           "torch.int32",          "torch.int16",         "torch.int8",
    "torch.uint8",           "torch.bool",           "torch.float8_e4m3fn", "torch.float8_e5m2",
    "torch.uint16",          "torch.uint32",         "torch.uint64",        "torch.float8_e4m3fnuz",
    "torch.float8_e5m2fnuz", "torch.float8_e8m0fnu", "torch.complex64",     "torch.complex128",
    "torch.device",          "torch.Size",
};

constexpr std::string_view kCallables[] = {
    "torch._utils._rebuild_tensor_v2",
    "torch._utils._rebuild_tensor_v3",
    "torch._utils._rebuild_parameter",
    "collections.OrderedDict",
};

bool Allowed(const std::string& g) {
  for (auto n : kCallables)
    if (n == g) return true;
  for (auto& s : kStorageTypes)
    if (s.name == g) return true;
  for (auto n : kDTypeGlobals)
    if (n == g) return true;
  return false;
}

class Unpickler {
 public:
  Unpickler(const unsigned char* d, std::size_t n, const std::string& file)
      : p_(d), end_(d + n), begin_(d), file_(file) {}

  Result<std::vector<PickledTensor>> Run() {
    while (true) {
      if (p_ >= end_) return Fail("truncated: no STOP opcode");
      std::size_t at = static_cast<std::size_t>(p_ - begin_);
      unsigned char op = *p_++;
      Status s = Step(op, at);
      if (!s) return s.take_error();
      if (stopped_) break;
    }
    if (stack_.size() != 1) return Fail("stack does not hold exactly one object at STOP");
    std::vector<PickledTensor> out;
    std::set<int> seen;
    if (auto s = Collect(stack_[0], "", 0, seen, out); !s) return s.take_error();
    return out;
  }

 private:
  Error Fail(const std::string& msg) const {
    return MakeError(ErrorCode::kInput, "pickle (data.pkl): " + msg, file_);
  }
  Status FailAt(std::size_t at, const std::string& msg) const {
    return Fail(msg + " at offset " + std::to_string(at));
  }

  Result<int> New(Obj o) {
    if (objs_.size() >= kMaxObjects) return Fail("too many objects");
    objs_.push_back(std::move(o));
    return static_cast<int>(objs_.size() - 1);
  }
  Status Push(Obj o) {
    auto r = New(std::move(o));
    if (!r) return r.take_error();
    stack_.push_back(*r);
    return OkStatus();
  }
  bool Need(std::size_t n) const { return static_cast<std::size_t>(end_ - p_) >= n; }
  std::uint64_t Le(int n) {
    std::uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | p_[i];
    p_ += n;
    return v;
  }
  Result<int> Pop() {
    if (stack_.empty() || objs_[stack_.back()].kind == Kind::kMark) {
      return Fail("stack underflow");
    }
    int v = stack_.back();
    stack_.pop_back();
    return v;
  }
  // Pops everything above the topmost MARK.
  Result<std::vector<int>> PopMark() {
    std::size_t i = stack_.size();
    while (i > 0 && objs_[stack_[i - 1]].kind != Kind::kMark) --i;
    if (i == 0) return Fail("no MARK on the stack");
    std::vector<int> items(stack_.begin() + static_cast<std::ptrdiff_t>(i), stack_.end());
    stack_.resize(i - 1);
    return items;
  }

  // One opcode, by family; an opcode torch.save does not write is refused before anything runs.
  Status Step(unsigned char op, std::size_t at) {
    switch (op) {
      case 0x80:  // PROTO
      case 0x95:  // FRAME
      case '.':   // STOP
        return Framing(op, at);
      case '(':
      case '}':
      case ']':
      case ')':
      case 'N':
      case 0x88:
      case 0x89:
        return PushConstant(op);
      case 'J':
      case 'K':
      case 'M':
      case 0x8a:  // LONG1
      case 'G':   // BINFLOAT
        return PushNumber(op, at);
      case 'X':
      case 0x8c:
      case 0x8d:
      case 'B':
      case 'C':
        return PushString(op, at);
      case 'q':
      case 'r':
      case 0x94:
        return MemoPut(op, at);
      case 'h':
      case 'j':
        return MemoGet(op, at);
      case 'c':   // GLOBAL
      case 0x93:  // STACK_GLOBAL
        return Global(op, at);
      case 't':
      case 0x85:
      case 0x86:
      case 0x87:
        return MakeTuple(op);
      case 'a':
      case 'e':
      case 's':
      case 'u':
        return Fill(op, at);
      case '0':
      case '1':
      case '2':
        return StackOp(op, at);
      case 'Q':
        return PersistentLoad(at);
      case 'R':
        return Reduce(at);
      case 'b':
        return Build(at);
      default:
        return Unsupported(op, at);
    }
  }

  // PROTO, FRAME, STOP.
  Status Framing(unsigned char op, std::size_t at) {
    switch (op) {
      case 0x80:  // PROTO
        if (!Need(1)) return FailAt(at, "truncated PROTO");
        if (*p_ > 5) return FailAt(at, "unsupported pickle protocol " + std::to_string(*p_));
        ++p_;
        return OkStatus();
      case 0x95:  // FRAME
        if (!Need(8)) return FailAt(at, "truncated FRAME");
        p_ += 8;
        return OkStatus();
      default:  // '.'
        stopped_ = true;
        return OkStatus();
    }
  }

  // MARK, the empty dict, list and tuple, None, True and False.
  Status PushConstant(unsigned char op) {
    switch (op) {
      case '(': {
        Obj m;
        m.kind = Kind::kMark;
        return Push(std::move(m));
      }
      case '}':
      case ']':
      case ')': {
        Obj o;
        o.kind = op == '}' ? Kind::kDict : op == ']' ? Kind::kList : Kind::kTuple;
        return Push(std::move(o));
      }
      case 'N':
        return Push(Obj{});
      default: {  // 0x88, 0x89
        Obj o;
        o.kind = Kind::kBool;
        o.i = op == 0x88;
        return Push(std::move(o));
      }
    }
  }

  // BININT, BININT1, BININT2, LONG1, BINFLOAT.
  Status PushNumber(unsigned char op, std::size_t at) {
    switch (op) {
      case 'J':
      case 'K':
      case 'M': {
        int n = op == 'J' ? 4 : op == 'K' ? 1 : 2;
        if (!Need(static_cast<std::size_t>(n))) return FailAt(at, "truncated integer");
        std::uint64_t v = Le(n);
        Obj o;
        o.kind = Kind::kInt;
        o.i = op == 'J' ? static_cast<std::int32_t>(v) : static_cast<std::int64_t>(v);
        return Push(std::move(o));
      }
      case 0x8a: {  // LONG1
        if (!Need(1)) return FailAt(at, "truncated LONG1");
        std::size_t n = *p_++;
        if (n > 8 || !Need(n)) return FailAt(at, "LONG1 longer than 8 bytes");
        std::uint64_t v = n ? Le(static_cast<int>(n)) : 0;
        if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~std::uint64_t{0} << (8 * n);
        Obj o;
        o.kind = Kind::kInt;
        o.i = static_cast<std::int64_t>(v);
        return Push(std::move(o));
      }
      default: {  // 'G'
        if (!Need(8)) return FailAt(at, "truncated BINFLOAT");
        std::uint64_t v = 0;
        for (int i = 0; i < 8; ++i) v = (v << 8) | p_[i];
        p_ += 8;
        Obj o;
        o.kind = Kind::kFloat;
        std::memcpy(&o.f, &v, 8);
        return Push(std::move(o));
      }
    }
  }

  // BINUNICODE, SHORT_BINUNICODE, BINUNICODE8, BINBYTES, SHORT_BINBYTES.
  Status PushString(unsigned char op, std::size_t at) {
    int w = (op == 'X' || op == 'B') ? 4 : (op == 0x8d) ? 8 : 1;
    if (!Need(static_cast<std::size_t>(w))) return FailAt(at, "truncated string length");
    std::uint64_t n = Le(w);
    if (!Need(n)) return FailAt(at, "string runs past the end of the pickle");
    Obj o;
    o.kind = (op == 'B' || op == 'C') ? Kind::kBytes : Kind::kStr;
    o.s.assign(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return Push(std::move(o));
  }

  // BINPUT, LONG_BINPUT, MEMOIZE.
  Status MemoPut(unsigned char op, std::size_t at) {
    std::uint64_t idx;
    if (op == 0x94) {
      idx = memo_.size();
    } else {
      int n = op == 'q' ? 1 : 4;
      if (!Need(static_cast<std::size_t>(n))) return FailAt(at, "truncated PUT");
      idx = Le(n);
    }
    if (stack_.empty()) return FailAt(at, "PUT on an empty stack");
    if (memo_.size() >= kMaxObjects) return FailAt(at, "memo too large");
    memo_[idx] = stack_.back();
    return OkStatus();
  }

  // BINGET, LONG_BINGET.
  Status MemoGet(unsigned char op, std::size_t at) {
    int n = op == 'h' ? 1 : 4;
    if (!Need(static_cast<std::size_t>(n))) return FailAt(at, "truncated GET");
    std::uint64_t idx = Le(n);
    auto it = memo_.find(idx);
    if (it == memo_.end()) return FailAt(at, "GET of an unknown memo entry");
    stack_.push_back(it->second);
    return OkStatus();
  }

  // GLOBAL "module\nname\n", STACK_GLOBAL: only the allowed names (PushGlobal).
  Status Global(unsigned char op, std::size_t at) {
    if (op == 'c') {
      const unsigned char* nl1 = static_cast<const unsigned char*>(
          std::memchr(p_, '\n', static_cast<std::size_t>(end_ - p_)));
      if (!nl1) return FailAt(at, "truncated GLOBAL");
      const unsigned char* nl2 = static_cast<const unsigned char*>(
          std::memchr(nl1 + 1, '\n', static_cast<std::size_t>(end_ - nl1 - 1)));
      if (!nl2) return FailAt(at, "truncated GLOBAL");
      std::string g(reinterpret_cast<const char*>(p_), static_cast<std::size_t>(nl1 - p_));
      g += '.';
      g.append(reinterpret_cast<const char*>(nl1 + 1), static_cast<std::size_t>(nl2 - nl1 - 1));
      p_ = nl2 + 1;
      return PushGlobal(g, at);
    }
    auto name = Pop();
    if (!name) return name.take_error();
    auto mod = Pop();
    if (!mod) return mod.take_error();
    if (objs_[*name].kind != Kind::kStr || objs_[*mod].kind != Kind::kStr) {
      return FailAt(at, "STACK_GLOBAL of non-strings");
    }
    return PushGlobal(objs_[*mod].s + "." + objs_[*name].s, at);
  }

  // TUPLE (the items above the MARK), TUPLE1, TUPLE2, TUPLE3.
  Status MakeTuple(unsigned char op) {
    if (op == 't') {
      auto items = PopMark();
      if (!items) return items.take_error();
      Obj o;
      o.kind = Kind::kTuple;
      o.items = std::move(*items);
      return Push(std::move(o));
    }
    std::size_t n = op - 0x84u;
    Obj o;
    o.kind = Kind::kTuple;
    o.items.resize(n);
    for (std::size_t i = n; i-- > 0;) {
      auto v = Pop();
      if (!v) return v.take_error();
      o.items[i] = *v;
    }
    return Push(std::move(o));
  }

  // APPEND, APPENDS to a list; SETITEM, SETITEMS of a dict.
  Status Fill(unsigned char op, std::size_t at) {
    switch (op) {
      case 'a': {
        auto v = Pop();
        if (!v) return v.take_error();
        if (stack_.empty() || objs_[stack_.back()].kind != Kind::kList) {
          return FailAt(at, "APPEND to something other than a list");
        }
        return Add(stack_.back(), {*v}, at);
      }
      case 'e': {
        auto items = PopMark();
        if (!items) return items.take_error();
        if (stack_.empty() || objs_[stack_.back()].kind != Kind::kList) {
          return FailAt(at, "APPENDS to something other than a list");
        }
        return Add(stack_.back(), *items, at);
      }
      case 's': {
        auto v = Pop();
        if (!v) return v.take_error();
        auto k = Pop();
        if (!k) return k.take_error();
        if (stack_.empty() || objs_[stack_.back()].kind != Kind::kDict) {
          return FailAt(at, "SETITEM on something other than a dict");
        }
        return Add(stack_.back(), {*k, *v}, at);
      }
      default: {  // 'u'
        auto items = PopMark();
        if (!items) return items.take_error();
        if (items->size() % 2 != 0) return FailAt(at, "SETITEMS with an odd number of items");
        if (stack_.empty() || objs_[stack_.back()].kind != Kind::kDict) {
          return FailAt(at, "SETITEMS on something other than a dict");
        }
        return Add(stack_.back(), *items, at);
      }
    }
  }

  // POP, POP_MARK, DUP.
  Status StackOp(unsigned char op, std::size_t at) {
    switch (op) {
      case '0':
        return Pop().ok() ? OkStatus() : Status(Fail("POP on an empty stack"));
      case '1': {
        auto items = PopMark();
        return items ? OkStatus() : Status(items.take_error());
      }
      default:  // '2'
        if (stack_.empty()) return FailAt(at, "DUP on an empty stack");
        stack_.push_back(stack_.back());
        return OkStatus();
    }
  }

  // BUILD: state for an object; torch's rebuilt objects ignore it here.
  Status Build(std::size_t at) {
    auto state = Pop();
    if (!state) return state.take_error();
    if (stack_.empty()) return FailAt(at, "BUILD on an empty stack");
    Kind k = objs_[stack_.back()].kind;
    if (k != Kind::kTensor && k != Kind::kDict) {
      return FailAt(at, "BUILD on an object torch.save does not write");
    }
    return OkStatus();
  }

  Status Unsupported(unsigned char op, std::size_t at) const {
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%02x", op);
    return FailAt(at, std::string("unsupported pickle opcode ") + buf +
                          " (not one torch.save writes; refused without running it)");
  }

  Status Add(int target, const std::vector<int>& items, std::size_t at) {
    if (objs_[target].items.size() + items.size() > kMaxObjects) {
      return FailAt(at, "container too large");
    }
    auto& v = objs_[target].items;
    v.insert(v.end(), items.begin(), items.end());
    return OkStatus();
  }

  Status PushGlobal(const std::string& g, std::size_t at) {
    if (!Allowed(g)) {
      return FailAt(at, "refused global '" + g +
                            "': not one of the torch.save globals dualtrack reads; nothing was "
                            "executed");
    }
    Obj o;
    o.kind = Kind::kGlobal;
    o.s = g;
    return Push(std::move(o));
  }

  Status PersistentLoad(std::size_t at) {
    auto pid = Pop();
    if (!pid) return pid.take_error();
    const Obj& t = objs_[*pid];
    if (t.kind != Kind::kTuple || t.items.size() != 5 || objs_[t.items[0]].kind != Kind::kStr ||
        objs_[t.items[0]].s != "storage") {
      return FailAt(at, "persistent id is not a ('storage', type, key, location, numel) tuple");
    }
    const Obj& type = objs_[t.items[1]];
    const Obj& key = objs_[t.items[2]];
    const Obj& numel = objs_[t.items[4]];
    if (type.kind != Kind::kGlobal || key.kind != Kind::kStr || numel.kind != Kind::kInt ||
        numel.i < 0) {
      return FailAt(at, "malformed storage persistent id");
    }
    Obj o;
    o.kind = Kind::kStorage;
    bool found = false;
    for (auto& st : kStorageTypes) {
      if (st.name == type.s) {
        o.dtype = st.dtype;
        found = true;
      }
    }
    if (!found) return FailAt(at, "storage type '" + type.s + "' is not supported");
    o.s = key.s;
    o.i = numel.i;
    return Push(std::move(o));
  }

  Result<std::vector<std::uint64_t>> Ints(int idx, std::size_t at, bool allow_negative,
                                          std::vector<std::int64_t>* signed_out = nullptr) {
    const Obj& t = objs_[idx];
    if (t.kind != Kind::kTuple && t.kind != Kind::kList) {
      return Error(FailAt(at, "expected a tuple of integers").error());
    }
    std::vector<std::uint64_t> out;
    for (int i : t.items) {
      if (objs_[i].kind != Kind::kInt || (!allow_negative && objs_[i].i < 0)) {
        return Error(FailAt(at, "expected a tuple of non-negative integers").error());
      }
      out.push_back(static_cast<std::uint64_t>(objs_[i].i));
      if (signed_out) signed_out->push_back(objs_[i].i);
    }
    return out;
  }

  Status Reduce(std::size_t at) {
    auto args = Pop();
    if (!args) return args.take_error();
    auto fn = Pop();
    if (!fn) return fn.take_error();
    const Obj& f = objs_[*fn];
    const Obj& a = objs_[*args];
    if (f.kind != Kind::kGlobal || a.kind != Kind::kTuple) {
      return FailAt(at, "REDUCE of something other than an allowed global");
    }
    if (f.s == "collections.OrderedDict") {
      if (!a.items.empty()) return FailAt(at, "OrderedDict with arguments");
      Obj o;
      o.kind = Kind::kDict;
      return Push(std::move(o));
    }
    if (f.s == "torch._utils._rebuild_parameter") {
      if (a.items.empty() || objs_[a.items[0]].kind != Kind::kTensor) {
        return FailAt(at, "_rebuild_parameter without a tensor");
      }
      stack_.push_back(a.items[0]);
      return OkStatus();
    }
    if (f.s == "torch._utils._rebuild_tensor_v2" || f.s == "torch._utils._rebuild_tensor_v3") {
      bool v3 = f.s == "torch._utils._rebuild_tensor_v3";
      if (a.items.size() < (v3 ? 7u : 4u)) return FailAt(at, f.s + " with too few arguments");
      const Obj& st = objs_[a.items[0]];
      const Obj& off = objs_[a.items[1]];
      if (st.kind != Kind::kStorage || off.kind != Kind::kInt || off.i < 0) {
        return FailAt(at, f.s + " without a storage and offset");
      }
      PickledTensor t;
      t.storage_key = st.s;
      t.dtype = st.dtype;
      t.storage_numel = static_cast<std::uint64_t>(st.i);
      if (v3) {
        const Obj& dt = objs_[a.items[6]];
        bool found = false;
        for (const DTypeGlobal& g : kDTypeObjects) {
          if (dt.kind == Kind::kGlobal && g.name == dt.s) {
            t.dtype = g.dtype;
            found = true;
          }
        }
        if (!found) return FailAt(at, "_rebuild_tensor_v3 with an unsupported dtype");
        // The untyped storage counts bytes; the view counts elements of its dtype.
        t.storage_numel /= DTypeSize(t.dtype);
      }
      t.offset = static_cast<std::uint64_t>(off.i);
      auto shape = Ints(a.items[2], at, false);
      if (!shape) return shape.take_error();
      t.shape = std::move(*shape);
      auto strides = Ints(a.items[3], at, false, &t.strides);
      if (!strides) return strides.take_error();
      if (t.shape.size() != t.strides.size()) {
        return FailAt(at, "tensor shape and stride lengths differ");
      }
      tensors_.push_back(std::move(t));
      Obj o;
      o.kind = Kind::kTensor;
      o.tensor = static_cast<int>(tensors_.size() - 1);
      return Push(std::move(o));
    }
    return FailAt(at,
                  "refused call of '" + f.s + "': torch.save never calls it; nothing was executed");
  }

  Status Collect(int idx, const std::string& path, std::size_t depth, std::set<int>& seen,
                 std::vector<PickledTensor>& out) {
    if (depth > kMaxDepth) return Fail("nesting deeper than 64 levels");
    const Obj& o = objs_[idx];
    auto join = [&](const std::string& k) { return path.empty() ? k : path + "." + k; };
    switch (o.kind) {
      case Kind::kTensor: {
        PickledTensor t = tensors_[static_cast<std::size_t>(o.tensor)];
        t.name = path.empty() ? "tensor" : path;
        out.push_back(std::move(t));
        return OkStatus();
      }
      case Kind::kDict:
      case Kind::kList:
      case Kind::kTuple: {
        if (!seen.insert(idx).second) return OkStatus();  // A cycle or a shared container.
        if (o.kind == Kind::kDict) {
          for (std::size_t i = 0; i + 1 < o.items.size(); i += 2) {
            const Obj& k = objs_[o.items[i]];
            std::string key = k.kind == Kind::kStr   ? k.s
                              : k.kind == Kind::kInt ? std::to_string(k.i)
                                                     : "?";
            if (auto s = Collect(o.items[i + 1], join(key), depth + 1, seen, out); !s) return s;
          }
        } else {
          for (std::size_t i = 0; i < o.items.size(); ++i) {
            if (auto s = Collect(o.items[i], join(std::to_string(i)), depth + 1, seen, out); !s) {
              return s;
            }
          }
        }
        seen.erase(idx);
        return OkStatus();
      }
      default:
        return OkStatus();
    }
  }

  const unsigned char* p_;
  const unsigned char* end_;
  const unsigned char* begin_;
  const std::string& file_;
  bool stopped_ = false;
  std::vector<Obj> objs_;
  std::vector<int> stack_;
  std::unordered_map<std::uint64_t, int> memo_;
  std::vector<PickledTensor> tensors_;
};

}  // namespace

Result<std::vector<PickledTensor>> ReadTorchPickle(const unsigned char* data, std::size_t size,
                                                   const std::string& file) {
  return Unpickler(data, size, file).Run();
}

Status ReadTorchZip(const unsigned char* data, std::size_t size, const std::string& file,
                    std::vector<TensorInfo>& out) {
  if (size >= 2 && data[0] == 0x80 && data[1] <= 5) {
    return MakeError(ErrorCode::kInput,
                     "legacy (non-zip) torch.save format, written by PyTorch before 1.6 or with "
                     "_use_new_zipfile_serialization=False, is not supported: load and re-save it "
                     "with a current PyTorch",
                     file);
  }
  if (size < 4 || std::memcmp(data, "PK\x03\x04", 4) != 0) {
    return MakeError(ErrorCode::kInput,
                     "not a torch.save zip archive (no zip signature; legacy or tar formats are "
                     "not supported)",
                     file);
  }
  auto entries = ReadZipDirectory(data, size, file);
  if (!entries) return entries.take_error();
  const ZipEntry* pkl = nullptr;
  std::string prefix;
  bool big_endian = false;
  for (const ZipEntry& e : *entries) {
    auto slash = e.name.find('/');
    if (slash != std::string::npos && e.name.substr(slash + 1) == "data.pkl") {
      pkl = &e;
      prefix = e.name.substr(0, slash + 1);
    }
  }
  if (!pkl) return MakeError(ErrorCode::kInput, "torch archive has no <name>/data.pkl", file);
  std::unordered_map<std::string, const ZipEntry*> by_name;
  for (const ZipEntry& e : *entries) {
    by_name[e.name] = &e;
    if (e.name == prefix + "byteorder" && e.method == 0) {
      big_endian = std::string_view(reinterpret_cast<const char*>(e.data), e.size) == "big";
    }
  }
  if (pkl->method != 0) {
    return MakeError(ErrorCode::kInput, "torch archive's data.pkl is compressed", file);
  }
  auto tensors = ReadTorchPickle(pkl->data, pkl->size, file);
  if (!tensors) return tensors.take_error();
  for (PickledTensor& t : *tensors) {
    std::string member = prefix + "data/" + t.storage_key;
    auto it = by_name.find(member);
    if (it == by_name.end()) {
      return MakeError(ErrorCode::kInput,
                       "tensor '" + t.name + "': storage member '" + member + "' is missing", file);
    }
    const ZipEntry& e = *it->second;
    if (e.method != 0) {
      return MakeError(ErrorCode::kInput,
                       "tensor '" + t.name + "': storage member '" + member + "' is compressed",
                       file);
    }
    std::size_t es = DTypeSize(t.dtype);
    std::uint64_t elems = e.size / es;
    if (t.storage_numel > elems) {
      return MakeError(ErrorCode::kInput,
                       "tensor '" + t.name + "': storage '" + member + "' declares " +
                           std::to_string(t.storage_numel) + " elements but holds " +
                           std::to_string(elems),
                       file);
    }
    TensorInfo info;
    info.name = t.name;
    info.dtype = t.dtype;
    info.shape = t.shape;
    info.big_endian = big_endian && es > 1;
    auto numel = ShapeProduct(t.shape, file, "tensor '" + t.name + "'");
    if (!numel) return numel.take_error();
    info.numel = *numel;
    // A view may repeat its storage (stride 0, torch.expand): a 1.6 KB file can then describe
    // 2^62 elements and years of work. Views larger than their storage are compared up to a
    // bound of logical elements; past it the file is refused with what to do instead.
    constexpr std::uint64_t kMaxViewElements = std::uint64_t{1} << 28;
    if (info.numel > elems && info.numel > kMaxViewElements) {
      return MakeError(ErrorCode::kInput,
                       "tensor '" + t.name + "' is a view of " + std::to_string(info.numel) +
                           " elements over a storage of " + std::to_string(elems) +
                           " (an expanded tensor, stride 0); dualtrack compares views larger than "
                           "their storage only up to " +
                           std::to_string(kMaxViewElements) +
                           " elements: save tensor.contiguous() or the unexpanded tensor",
                       file);
    }
    // The furthest element the view reaches must lie inside the storage.
    if (info.numel > 0) {
      std::uint64_t last = t.offset;
      bool overflow = false;
      for (std::size_t d = 0; d < t.shape.size(); ++d) {
        std::uint64_t span = 0;
        overflow |=
            __builtin_mul_overflow(t.shape[d] - 1, static_cast<std::uint64_t>(t.strides[d]), &span);
        overflow |= __builtin_add_overflow(last, span, &last);
      }
      if (overflow) last = UINT64_MAX;
      if (last >= elems) {
        return MakeError(
            ErrorCode::kInput,
            "tensor '" + t.name + "': its view reaches past the end of storage '" + member + "'",
            file);
      }
    }
    info.storage.data = e.data + t.offset * es;
    info.storage_elements = elems - std::min(elems, t.offset);
    if (t.strides != ContiguousStrides(t.shape)) info.strides = t.strides;
    out.push_back(std::move(info));
  }
  return OkStatus();
}

}  // namespace dt::compare
