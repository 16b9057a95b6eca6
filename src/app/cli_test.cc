#include "app/cli.h"

#include <gtest/gtest.h>

#include <sstream>

#include "app/version.h"

namespace dt {
namespace {

struct Captured {
  int code;
  std::string out;
  std::string err;
};

Captured RunCli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  Io io{out, err};
  int code = Dispatch(args, io);
  return {code, out.str(), err.str()};
}

TEST(CliTest, HelpListsEveryCommandFromTheTable) {
  Captured r = RunCli({"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(r.err.empty());
  for (const Command& c : Commands()) {
    EXPECT_NE(r.out.find("  " + std::string(c.name) + " "), std::string::npos) << c.name;
    EXPECT_NE(r.out.find(std::string(c.summary)), std::string::npos) << c.name;
  }
  EXPECT_NE(r.out.find("Exit codes"), std::string::npos);
}

TEST(CliTest, NoArgumentsPrintsHelpToStderrAndFails) {
  Captured r = RunCli({});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("Usage: dualtrack <command>"), std::string::npos);
}

TEST(CliTest, VersionPrintsTheProjectVersion) {
  for (const char* flag : {"--version", "-V"}) {
    Captured r = RunCli({flag});
    EXPECT_EQ(r.code, 0);
    EXPECT_EQ(r.out, std::string("dualtrack ") + kVersion + "\n");
  }
}

TEST(CliTest, UnknownCommandSuggestsTheClosestOne) {
  Captured r = RunCli({"scna", "."});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("unknown command 'scna'. Did you mean 'scan'?"), std::string::npos) << r.err;
}

TEST(CliTest, UnknownCommandFarFromAllGetsNoSuggestion) {
  Captured r = RunCli({"xylophone"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.find("Did you mean"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("dualtrack --help"), std::string::npos);
}

TEST(CliTest, PrefixOfACommandIsSuggested) {
  Captured r = RunCli({"cov"});
  EXPECT_NE(r.err.find("Did you mean 'coverage'?"), std::string::npos) << r.err;
}

TEST(CliTest, UnknownGlobalOptionIsAUsageError) {
  Captured r = RunCli({"--frobnicate"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown option '--frobnicate'"), std::string::npos) << r.err;
}

TEST(CliTest, EveryCommandHasHelp) {
  for (const Command& c : Commands()) {
    Captured r = RunCli({std::string(c.name), "--help"});
    Captured h = RunCli({"help", std::string(c.name)});
    EXPECT_EQ(r.out, h.out) << c.name;
    EXPECT_EQ(r.code, h.code) << c.name;
  }
}

}  // namespace
}  // namespace dt
