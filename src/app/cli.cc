#include "app/cli.h"

#include <cerrno>
#include <exception>
#include <iomanip>

#include "app/commands.h"
#include "app/version.h"
#include "util/fs.h"
#include "util/strings.h"

namespace dt {

namespace {

constexpr Command kCommands[] = {
    {"audit", "Scan, diagnose and predict MPS coverage in one step: the verdict for a project",
     verdict::RunAuditCommand},
    {"scan", "Inventory the CUDA dependencies of a source tree, classified and located",
     scan::RunScanCommand},
    {"rule", "Explain a scan rule: what it finds, why it matters, what to use instead",
     scan::RunRuleCommand},
    {"fix",
     "Rewrite CUDA-hardwired Python to pick CUDA, else MPS, else the CPU (a diff, or --apply)",
     fix::RunFixCommand},
    {"env", "Diagnose this host: OS, GPUs, CUDA toolchain, PyTorch, MPS, CPU fallback",
     env::RunEnvCommand},
    {"freeze", "Record the CUDA baseline: code, environment, data-slice hashes, seeds",
     env::RunFreezeCommand},
    {"run", "Run the minimal training step under the operator tracer; write an evidence bundle",
     bundle::RunRunCommand},
    {"show", "Print an evidence bundle readably", bundle::RunShowCommand},
    {"coverage", "Predict which traced operators fall back or fail on MPS, per PyTorch version",
     coverage::RunCoverageCommand},
    {"compare", "Compare tensors and metrics of two bundles or tensor files, with tolerances",
     compare::RunCompareCommand},
    {"report", "Join scan, baseline, tracks and comparisons into the verdict and its checklist",
     verdict::RunReportCommand},
};

void PrintHelp(std::ostream& os) {
  os << "dualtrack " << kVersion
     << ": which parts of a CUDA PyTorch project can run on an Apple Silicon Mac (MPS),\n"
        "and which must stay on a Linux GPU, with the evidence.\n\n"
        "Usage: dualtrack <command> [options] [arguments]\n\n"
        "Commands:\n";
  for (const Command& c : kCommands) {
    os << "  " << std::left << std::setw(10) << c.name << c.summary << '\n';
  }
  os << "\nOptions:\n"
        "  -h, --help     Show this help (or 'dualtrack <command> --help' for a command)\n"
        "  -V, --version  Show the version\n\n"
        "Exit codes: 0 ok, 1 findings or differences at or above the threshold,\n"
        "2 usage or input error.\n\n"
        "Start with:  dualtrack audit path/to/project\n";
}

void PrintError(Io& io, std::string_view command, const Error& error) {
  io.err << "dualtrack";
  if (!command.empty()) io.err << ' ' << command;
  io.err << (error.code == ErrorCode::kInternal ? ": internal error: " : ": error: ")
         << EscapeControl(error.ToString()) << '\n';  // File names may hold escapes.
}

const Command* FindCommand(std::string_view name) {
  for (const Command& c : kCommands) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace

std::span<const Command> Commands() { return kCommands; }

int Dispatch(const std::vector<std::string>& args, Io& io) {
  if (args.empty()) {
    PrintHelp(io.err);
    return static_cast<int>(ExitCode::kError);
  }
  std::string_view first = args[0];
  if (first == "-h" || first == "--help" || (first == "help" && args.size() == 1)) {
    PrintHelp(io.out);
    return static_cast<int>(ExitCode::kOk);
  }
  if (first == "-V" || first == "--version" || first == "version") {
    io.out << "dualtrack " << kVersion << '\n';
    return static_cast<int>(ExitCode::kOk);
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (first == "help") {  // `dualtrack help scan` is `dualtrack scan --help`.
    first = args[1];
    rest = {"--help"};
  }
  const Command* command = FindCommand(first);
  if (command == nullptr) {
    std::vector<std::string_view> names;
    for (const Command& c : kCommands) names.push_back(c.name);
    std::string what = StartsWith(first, "-") ? "unknown option '" : "unknown command '";
    std::string message = what + std::string(first) + "'";
    if (std::string suggestion = ClosestMatch(first, names); !suggestion.empty()) {
      message += ". Did you mean '" + suggestion + "'?";
    }
    message += "\nRun 'dualtrack --help' for the list of commands.";
    PrintError(io, "", MakeError(ErrorCode::kUsage, message));
    return static_cast<int>(ExitCode::kError);
  }
  try {
    Result<ExitCode> result = command->run(rest, io);
    if (!result.ok()) {
      PrintError(io, command->name, result.error());
      return static_cast<int>(ExitCode::kError);
    }
    // A write to standard output that failed (a full disk, /dev/full, a closed file) left the
    // output truncated: that is never success.
    errno = 0;
    io.out.flush();
    if (!io.out) {
      int err = errno;
      PrintError(io, command->name,
                 MakeError(ErrorCode::kIo, std::string("cannot write to standard output") +
                                               (err != 0 ? ": " + ErrnoMessage(err) : "") +
                                               "; the output is incomplete"));
      return static_cast<int>(ExitCode::kError);
    }
    return static_cast<int>(*result);
  } catch (const std::exception& e) {
    // Library code returns errors; reaching here is a bug, but the user still gets a sentence.
    PrintError(io, command->name, MakeError(ErrorCode::kInternal, e.what()));
    return static_cast<int>(ExitCode::kError);
  }
}

}  // namespace dt
