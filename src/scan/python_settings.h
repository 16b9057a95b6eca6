// Settings in the semantic model (python_settings.cc): the command-line options of a Python file
// (argparse) with their defaults, the names that hold the parsed namespace, and the module
// settings a configurator overrides. A test of a setting is judged on the default path: a branch
// on an option that is off by default runs only when the user opts in.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace dt::scan {

class PyModel;

// A literal a setting holds by default (`default=-1`, `action="store_true"`, `"cuda"`): what a
// condition on the setting says on the default path.
struct PyValue {
  enum Kind { kUnknown, kNumber, kBool, kNone, kString } kind = kUnknown;
  double number = 0;      // kNumber, and kBool as 0 / 1.
  std::string_view text;  // kString: the body, a view into the source.
  bool Truthy() const;
};

class PySettings {
 public:
  // Reads the file's options and settings; `m` has its lines and scopes.
  void Collect(const PyModel& m);

  // What test [b, e) of `m` says on the default path when it reads a command-line option
  // (`opt.tcnn`, `args.gpu is not None`, `args.batch_size == -1`): whether it holds with the
  // option's default; nullopt when it reads no option with a literal default.
  std::optional<bool> Test(const PyModel& m, std::size_t b, std::size_t e) const;
  // Whether physical line `line` declares a setting the user overrides: an `add_argument(...)`,
  // or a module setting before `exec(open(configurator).read())`.
  bool IsOptionLine(std::uint32_t line) const;
  // The string expression [b, e) holds on the default path: a literal, or `NS.dest` of an option
  // whose default is one (`importlib.import_module(FLAGS.model)`); "" otherwise.
  std::string_view DefaultString(const PyModel& m, std::size_t b, std::size_t e) const;
  const std::vector<std::uint32_t>& option_lines() const { return option_lines_; }
  // The destination of the `add_argument(` call whose bracket opens at `open` (`dist_backend`),
  // when it is one of the file's options; "" otherwise.
  std::string Declared(const PyModel& m, std::size_t open, std::size_t e) const;
  // The stored spelling of option `dest` (a view that lives as long as this), or "".
  std::string_view Key(const std::string& dest) const;
  bool empty() const { return options_.empty(); }
  // The destinations of the options that are off by default (`action="store_true"`,
  // `default=False` / `None` / 0): a test of one elsewhere in the project (`self.args.dest`) is
  // an opt-in too.
  std::vector<std::string> OffFlags() const { return Flags(false); }
  // The settings on by default: a name declared off in one file and on in another is no opt-in.
  std::vector<std::string> OnFlags() const { return Flags(true); }

 private:
  void Read(const PyModel& m, std::size_t open, std::size_t e, std::uint32_t first_line,
            std::uint32_t last_line);
  void CollectData(const PyModel& m);
  std::vector<std::string> Flags(bool on) const;
  const PyValue* Default(const PyModel& m, std::size_t k) const;
  static std::optional<bool> Compare(const PyModel& m, const PyValue& def, std::size_t k,
                                     std::size_t e);

  // Options by destination with their defaults; the names that hold a parsed namespace; the
  // physical lines that declare a setting (sorted).
  std::unordered_map<std::string, PyValue> options_;
  // Settings declared as data (CollectData): config constructors' keywords, class fields.
  std::unordered_map<std::string, PyValue> data_;
  // Module-level names bound to an environment variable (`JIT = os.getenv("PKG_JIT")`), with the
  // value it has when unset.
  std::unordered_map<std::string_view, PyValue> env_;
  std::unordered_set<std::string_view> namespaces_;
  std::vector<std::uint32_t> option_lines_;
};

}  // namespace dt::scan
