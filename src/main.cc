// dualtrack's entry point: everything else lives in the library (src/app/cli.cc dispatches).
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "app/cli.h"
#include "util/platform.h"

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  std::vector<std::string> args(argv + 1, argv + argc);
  dt::Io io{std::cout, std::cerr, dt::IsTerminal(1), dt::IsTerminal(2)};
  int code = dt::Dispatch(args, io);
  std::cout.flush();
  // Dispatch checked the stream; this catches the last buffer and a close that fails.
  if ((!std::cout || std::fflush(stdout) != 0 || std::fclose(stdout) != 0) && code == 0) {
    std::cerr << "dualtrack: error: cannot write to standard output; the output is incomplete\n";
    return 2;
  }
  return code;
}
