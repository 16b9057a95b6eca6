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

TEST(CliTest, MistypedScanOptionSuggestsTheClosestOne) {
  Captured r = RunCli({"scan", "--entr", "train.py"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("dualtrack scan: error: unknown option '--entr'. Did you mean '--entry'?"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("dualtrack scan --help"), std::string::npos) << r.err;
  // A transposition, a value after `=`, one dash and a unique prefix.
  EXPECT_NE(RunCli({"scan", "--fromat", "json"}).err.find("Did you mean '--format'?"),
            std::string::npos);
  EXPECT_NE(RunCli({"scan", "--fail-no=never"}).err.find("'--fail-no'. Did you mean '--fail-on'?"),
            std::string::npos);
  EXPECT_NE(RunCli({"scan", "-entry", "x.py"}).err.find("Did you mean '--entry'?"),
            std::string::npos);
  EXPECT_NE(RunCli({"scan", "--write-base"}).err.find("Did you mean '--write-baseline'?"),
            std::string::npos);
}

TEST(CliTest, MistypedAuditOptionSuggestsTheClosestOne) {
  Captured r = RunCli({"audit", ".", "--pyhton", "python3"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown option '--pyhton'. Did you mean '--python'?"), std::string::npos)
      << r.err;
  // The misspelt option took no positional: its value is not reported as another stray argument.
  EXPECT_EQ(r.err.find("not expected"), std::string::npos) << r.err;
  // Next to another error (the required PATH is missing), the suggestion still comes.
  Captured missing = RunCli({"audit", "--entyr"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("PATH is required"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("unknown option '--entyr'. Did you mean '--entry'?"),
            std::string::npos)
      << missing.err;
}

TEST(CliTest, FarOffOrAmbiguousOptionGetsNoSuggestion) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"scan", "--frobnicate"},
                                               {"audit", ".", "--zzz"},
                                               {"scan", "--e"},
                                               {"scan", "-q"}}) {
    Captured r = RunCli(args);
    EXPECT_EQ(r.code, 2) << args[1];
    EXPECT_NE(r.err.find("unknown option '" + args.back() + "'"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("Did you mean"), std::string::npos) << r.err;
  }
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
