#include "app/args.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "util/strings.h"

namespace dt {

namespace {

// The visible option of `app` that `word` (an unknown option, `=value` dropped) most likely
// meant: within two edits (one for short names), else the only option it is a prefix of; empty
// when none is that close. Names are compared without their dashes, so `-entry` finds `--entry`.
std::string SuggestOption(const CLI::App& app, std::string_view word) {
  auto bare = [](std::string_view s) {
    return s.substr(std::min(s.find_first_not_of('-'), s.size()));
  };
  const std::string w = Lower(bare(word));
  if (w.size() < 2) return {};  // "-x" is as close to every short option.
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_group().empty()) continue;  // Hidden: not advertised.
    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
    for (const std::string& n : o->get_snames()) names.push_back("-" + n);
  }
  std::string best;
  std::size_t best_distance = SIZE_MAX;
  for (const std::string& n : names) {
    std::size_t d = EditDistance(w, bare(n));
    if (d < best_distance) {
      best_distance = d;
      best = n;
    }
  }
  if (best_distance <= (w.size() >= 4 ? 2u : 1u)) return best;
  std::string prefixed;
  for (const std::string& n : names) {
    if (!StartsWith(bare(n), w)) continue;
    if (!prefixed.empty()) return {};  // Two options start so: no guess.
    prefixed = n;
  }
  return prefixed;
}

// One line per unknown option CLI11 left over, with the closest known one (CLI11 itself only says
// "The following argument was not expected"). `explained`: every leftover is such an option or
// the value that follows one (`--entr train.py` where no positional takes it).
std::vector<std::string> UnknownOptions(const CLI::App& app, bool& explained) {
  std::vector<std::string> lines;
  explained = true;
  bool after_option = false;
  for (const std::string& item : app.remaining()) {
    bool option = item.size() >= 2 && item[0] == '-' && item != "--" &&
                  !(item[1] >= '0' && item[1] <= '9') && item[1] != '.';  // Not -1, -.5.
    if (!option) {
      explained = explained && after_option;
      after_option = false;
      continue;
    }
    after_option = true;
    std::string_view name = std::string_view(item).substr(0, item.find('='));
    std::string line = "unknown option '" + std::string(name) + "'";
    if (std::string s = SuggestOption(app, name); !s.empty()) line += ". Did you mean '" + s + "'?";
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace

std::optional<Result<ExitCode>> ParseArgs(CLI::App& app, const std::vector<std::string>& args,
                                          Io& io) {
  app.get_formatter()->column_width(32);
  // CLI11 consumes the vector from the back.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    io.out << app.help();
    return Result<ExitCode>(ExitCode::kOk);
  } catch (const CLI::CallForAllHelp&) {
    io.out << app.help("", CLI::AppFormatMode::All);
    return Result<ExitCode>(ExitCode::kOk);
  } catch (const CLI::ParseError& e) {
    // A mistyped option is the usual cause, also of a "required" error when it was the required
    // option that was misspelt: name it and its likely meaning.
    bool explained = false;
    std::vector<std::string> unknown = UnknownOptions(app, explained);
    std::string message = e.what();
    if (!unknown.empty()) {
      std::string lines;
      for (const std::string& l : unknown) lines += (lines.empty() ? "" : "\n") + l;
      // The unknown options are the whole of an "extras" error; next to another error, an addition.
      bool extras = dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr;
      message = extras && explained ? lines : message + "\n" + lines;
    }
    return Result<ExitCode>(MakeError(
        ErrorCode::kUsage, message + "\nRun '" + app.get_name() + " --help' for the options."));
  }
  return std::nullopt;
}

const CLI::Validator& TimeoutSeconds() {
  static const CLI::Validator v(
      [](std::string& in) -> std::string {
        char* end = nullptr;
        const double s = std::strtod(in.c_str(), &end);
        if (in.empty() || end == nullptr || *end != '\0' || !std::isfinite(s) || s <= 0 ||
            s > 604800)
          return "expected seconds above 0 and at most 604800 (a week), got '" + in + "'";
        return {};
      },
      "SEC");
  return v;
}

const CLI::Validator& ThreadCount() {
  static const CLI::Validator v(
      [](std::string& in) -> std::string {
        char* end = nullptr;
        const long long n = std::strtoll(in.c_str(), &end, 10);
        if (in.empty() || end == nullptr || *end != '\0' || n < 1 || n > 1024)
          return "expected a number of threads from 1 to 1024, got '" + in + "'";
        return {};
      },
      "N");
  return v;
}

Status WriteOutput(const std::string& output, std::string_view text, Io& io,
                   const OutputGuard& guard) {
  if (!output.empty()) return WriteFileAtomic(output, text, guard);
  io.out << text;
  return OkStatus();
}

}  // namespace dt
