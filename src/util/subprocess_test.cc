#include "util/subprocess.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

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

TEST(SpawnTest, HandsEachStreamToOnOutputAndReportsUsage) {
  SpawnOptions o;
  o.argv = {"sh", "-c", "echo one; echo two >&2; echo three"};
  std::string out, err;
  o.on_output = [&](int stream, std::string_view chunk) { (stream == 1 ? out : err) += chunk; };
  pid_t started = 0;
  o.on_started = [&](pid_t pid) { started = pid; };
  auto r = Spawn(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(out, "one\nthree\n");
  EXPECT_EQ(err, "two\n");
  EXPECT_GT(started, 0);
  ASSERT_TRUE(WIFEXITED(r->wait_status));
  EXPECT_EQ(WEXITSTATUS(r->wait_status), 0);
  EXPECT_GT(r->usage.ru_maxrss, 0);  // wait4 filled the child's usage.
  EXPECT_FALSE(r->timed_out);
}

// The child's pipes reach it as its stdout and stderr and nowhere else: a pipe end left open
// under another number (or inherited by a child spawned meanwhile) would keep the pipe from
// closing when the child exits. The shell reports which of the descriptors 3 to 9 it can write
// (a POSIX shell redirects single-digit descriptors only).
TEST(SpawnTest, TheChildHoldsItsPipesOnlyAsItsOwnStdoutAndStderr) {
  SpawnOptions o;
  o.argv = {"sh", "-c",
            "for fd in 3 4 5 6 7 8 9; do "
            "if ( eval \": >&$fd\" ) 2>/dev/null; then echo open $fd; fi; done; echo done"};
  // Descriptors this test process inherited open (a test runner's own) reach the child too; only
  // those may be open there.
  std::string expected;
  for (int fd = 3; fd <= 9; ++fd) {
    const int flags = ::fcntl(fd, F_GETFD);
    if (flags >= 0 && (flags & FD_CLOEXEC) == 0) expected += "open " + std::to_string(fd) + "\n";
  }
  expected += "done\n";
  std::string out;
  o.on_output = [&](int stream, std::string_view chunk) {
    if (stream == 1) out += chunk;
  };
  auto r = Spawn(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(out, expected);
}

TEST(SpawnTest, AGraceTimeoutSendsSigtermFirst) {
  // The child handles SIGTERM (as the tracer does, to flush) and leaves with its own code.
  SpawnOptions o;
  o.argv = {"sh", "-c", "trap 'exit 7' TERM; while :; do sleep 0.05; done"};
  o.timeout = std::chrono::milliseconds(300);
  o.kill_grace = std::chrono::seconds(5);
  auto r = Spawn(o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->timed_out);
  ASSERT_TRUE(WIFEXITED(r->wait_status));
  EXPECT_EQ(WEXITSTATUS(r->wait_status), 7);
}

TEST(SpawnTest, AGrandchildHoldingThePipesDoesNotHoldTheCaller) {
  SpawnOptions o;
  o.argv = {"sh", "-c", "sleep 30 & echo started"};
  o.linger = std::chrono::milliseconds(200);
  std::string out;
  o.on_output = [&](int, std::string_view chunk) { out += chunk; };
  auto r = Spawn(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(out, "started\n");
  EXPECT_LT(r->wall_s, 10.0);  // Not the grandchild's 30 s.
}

TEST(SpawnTest, ForwardsASignalSentToUsAndRestoresOurHandler) {
  SpawnOptions o;
  o.argv = {"sleep", "10"};
  o.forward_signals = true;
  o.own_process_group = true;
  // The interrupt reaches us, not the child (its own process group): we pass it on.
  o.on_started = [](pid_t) { ::kill(::getpid(), SIGINT); };
  // What we had before: SIG_DFL under gtest, SIG_IGN when started as a background job.
  struct sigaction before {};
  ::sigaction(SIGINT, nullptr, &before);
  auto r = Spawn(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->forwarded_signal, SIGINT);
  ASSERT_TRUE(WIFSIGNALED(r->wait_status));
  EXPECT_EQ(WTERMSIG(r->wait_status), SIGINT);
  EXPECT_LT(r->wall_s, 5.0);
  struct sigaction now {};
  ::sigaction(SIGINT, nullptr, &now);
  EXPECT_EQ(now.sa_handler, before.sa_handler);  // Our own disposition is back.
}

TEST(SpawnTest, AMissingProgramPathIsAnErrorNamingTheCommand) {
  SpawnOptions o;
  o.argv = {"train"};
  o.program = "/nonexistent/dualtrack-test/train";
  auto r = Spawn(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("cannot start train"), std::string::npos);
}

// A child that dies with us is forked by hand on Linux: it is set up as posix_spawn sets one up.
TEST(SpawnTest, AChildThatDiesWithUsIsSetUpAsAnyOther) {
  SpawnOptions o;
  o.die_with_parent = true;
  o.own_process_group = true;
  o.set_env = {{"DT_TEST_VAR", "set"}};
  o.argv = {"sh", "-c",
            "read line; echo \"$DT_TEST_VAR|$line\"; echo err >&2; "
            "for fd in 3 4 5 6 7 8 9; do "
            "if ( eval \": >&$fd\" ) 2>/dev/null; then echo open $fd; fi; done; "
            "[ \"$(ps -o pgid= -p $$ | tr -d ' ')\" = \"$$\" ] && echo leader; exit 4"};
  std::string expected = "set|\n";  // stdin is /dev/null: nothing to read.
  for (int fd = 3; fd <= 9; ++fd) {
    const int flags = ::fcntl(fd, F_GETFD);
    if (flags >= 0 && (flags & FD_CLOEXEC) == 0) expected += "open " + std::to_string(fd) + "\n";
  }
  expected += "leader\n";
  std::string out, err;
  o.on_output = [&](int stream, std::string_view chunk) { (stream == 1 ? out : err) += chunk; };
  auto r = Spawn(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(out, expected);
  EXPECT_EQ(err, "err\n");
  ASSERT_TRUE(WIFEXITED(r->wait_status));
  EXPECT_EQ(WEXITSTATUS(r->wait_status), 4);

  SpawnOptions missing;
  missing.die_with_parent = true;
  missing.argv = {"train"};
  missing.program = "/nonexistent/dualtrack-test/train";
  auto m = Spawn(missing);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("cannot start train"), std::string::npos);
}

#if defined(__linux__)
// Whether `pid` still runs: a zombie waiting for a reaper (the container's init may not reap)
// does not.
bool Running(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

TEST(SpawnTest, AChildThatDiesWithUsDiesWhenWeAreKilled) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t helper = ::fork();
  ASSERT_GE(helper, 0);
  if (helper == 0) {  // "dualtrack": starts the child, tells its pid, waits to be killed.
    ::close(fds[0]);
    SpawnOptions o;
    o.argv = {"sleep", "30"};
    o.die_with_parent = true;
    o.on_started = [&](pid_t pid) {
      [[maybe_unused]] ssize_t n = ::write(fds[1], &pid, sizeof pid);
    };
    (void)Spawn(o);
    ::_exit(0);
  }
  ::close(fds[1]);
  pid_t child = 0;
  ASSERT_EQ(::read(fds[0], &child, sizeof child), static_cast<ssize_t>(sizeof child));
  ::close(fds[0]);
  EXPECT_TRUE(Running(child));
  ::kill(helper, SIGKILL);
  ::waitpid(helper, nullptr, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (Running(child) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(Running(child));
  if (Running(child)) ::kill(child, SIGKILL);
}
#endif

}  // namespace
}  // namespace dt
