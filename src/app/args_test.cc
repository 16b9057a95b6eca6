#include "app/args.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "util/scoped_dir.h"

namespace dt {
namespace {

namespace fs = std::filesystem;

TEST(WriteOutputTest, NoOutputWritesToStdout) {
  std::ostringstream out, err;
  Io io{out, err};
  ASSERT_TRUE(WriteOutput("", "report\n", io).ok());
  EXPECT_EQ(out.str(), "report\n");
  EXPECT_TRUE(err.str().empty());
}

TEST(WriteOutputTest, OutputWritesTheFileAndNothingToStdout) {
  auto dir = TempDir::Make("dualtrack_args_test_");
  ASSERT_TRUE(dir.ok());
  const fs::path file = dir->path() / "report.txt";
  std::ostringstream out, err;
  Io io{out, err};
  ASSERT_TRUE(WriteOutput(file.string(), "report\n", io).ok());
  EXPECT_TRUE(out.str().empty());
  auto text = ReadFile(file);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "report\n");
}

TEST(WriteOutputTest, AnInputOfTheGuardIsRefusedAndKept) {
  auto dir = TempDir::Make("dualtrack_args_test_");
  ASSERT_TRUE(dir.ok());
  const fs::path input = dir->path() / "input.json";
  ASSERT_TRUE(WriteFileAtomic(input, "evidence").ok());
  std::ostringstream out, err;
  Io io{out, err};
  OutputGuard guard;
  guard.inputs.push_back(input);
  auto st = WriteOutput(input.string(), "report\n", io, guard);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kUsage);
  EXPECT_EQ(*ReadFile(input), "evidence");
  EXPECT_TRUE(out.str().empty());
}

}  // namespace
}  // namespace dt
