// dualtrack's entry point: everything else lives in the library (src/app/cli.cc dispatches).
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
  return code;
}
