// The one error model of the project: library code returns Result<T>; the command table
// (app/cli.cc, PrintError) prints errors and turns them into exit codes. Exceptions from
// third-party libraries are caught at the call site and converted, so none crosses a layer.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace dt {

enum class ErrorCode {
  kUsage,     // Bad command line.
  kInput,     // A user file or directory is missing, malformed or hostile.
  kIo,        // The operating system refused a read, write or spawn.
  kExternal,  // An external program failed in a way we cannot interpret.
  kInternal,  // A bug in dualtrack.
};

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  std::string file;       // Empty when the error is about no particular file.
  std::int64_t line = 0;  // 1-based; 0 when unknown.
  std::int64_t column = 0;

  // "file:line:column: message", leaving out the parts that are unknown.
  std::string ToString() const;
};

inline Error MakeError(ErrorCode code, std::string message, std::string file = {},
                       std::int64_t line = 0, std::int64_t column = 0) {
  return Error{code, std::move(message), std::move(file), line, column};
}

// A value or an Error. Small on purpose: std::expected is C++23 and not yet everywhere we build.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<1>(v_); }
  Error&& take_error() { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Error> v_;
};

struct Ok {};
using Status = Result<Ok>;
inline Status OkStatus() { return Ok{}; }

}  // namespace dt

// Always-on invariant check: a failure is a bug, reported with its location, never silently
// ignored.
#define DT_CHECK(cond)                                                                         \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      std::fprintf(stderr, "dualtrack: internal error: check failed at %s:%d: %s\n", __FILE__, \
                   __LINE__, #cond);                                                           \
      std::abort();                                                                            \
    }                                                                                          \
  } while (0)
