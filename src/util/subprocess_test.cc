#include "util/subprocess.h"

#include <gtest/gtest.h>

namespace dt {
namespace {

TEST(SubprocessTest, CapturesBothStreamsAndTheExitCode) {
  auto r = RunProcess({"sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_FALSE(r->Succeeded());
}

TEST(SubprocessTest, TimesOutAndKills) {
  ProcessOptions opts;
  opts.timeout = std::chrono::milliseconds(200);
  auto r = RunProcess({"sleep", "10"}, opts);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(r->term_signal, 9);
}

TEST(SubprocessTest, MissingProgramIsAnError) {
  auto r = RunProcess({"dualtrack-no-such-program-xyz"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("not found"), std::string::npos);
}

TEST(SubprocessTest, EnvironmentAndWorkingDirectory) {
  ProcessOptions opts;
  opts.set_env = {{"DT_TEST_VAR", "hello world"}};
  opts.cwd = "/";
  auto r = RunProcess({"sh", "-c", "printf '%s|%s' \"$DT_TEST_VAR\" \"$(pwd)\""}, opts);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->out, "hello world|/");
}

}  // namespace
}  // namespace dt
