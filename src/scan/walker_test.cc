#include "scan/walker.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "util/fs.h"

namespace dt::scan {
namespace {

namespace fs = std::filesystem;

class ScanWalkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dualtrack_walker_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& rel) {
    fs::create_directories((dir_ / rel).parent_path());
    ASSERT_TRUE(WriteFileAtomic(dir_ / rel, "import os\n").ok());
  }
  std::vector<std::string> WalkOrder() {
    std::vector<std::string> out;
    std::vector<Skipped> skipped;
    Walk(
        dir_, "", WalkOptions{}, [&](WalkItem&& item) { out.push_back(item.rel); }, skipped);
    return out;
  }
  fs::path dir_;
};

// Scan relies on the walk handing out files in the byte order of their relative paths (it only
// sorts when they are not): a folder's files come where its name plus '/' sorts, so "a.py" and
// "a-b.py" come before "a/x.py" though "a" sorts before both.
TEST_F(ScanWalkerTest, FilesComeInPathOrder) {
  for (const char* rel : {"a/x.py", "a.py", "a-b.py", "a/b/c.py", "a/b.py", "a0.py", "B.py",
                          "b/z.h", "a/b-c/d.py", "_a.py", "a/b_/e.py"})
    Write(rel);
  auto order = WalkOrder();
  ASSERT_EQ(order.size(), 11u);
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end())) << ::testing::PrintToString(order);
  EXPECT_EQ(order.front(), "B.py");
  EXPECT_EQ(order.back(), "b/z.h");
}

TEST(ScanWalkerKindsTest, YamlAndGitmodulesKinds) {
  EXPECT_EQ(ClassifyFile("docker-compose.yml"), FileKind::kCompose);
  EXPECT_EQ(ClassifyFile("deploy/compose.gpu.yaml"), FileKind::kCompose);
  EXPECT_EQ(ClassifyFile("configs/model.yaml"), FileKind::kConfigYaml);
  EXPECT_EQ(ClassifyFile("environment.yml"), FileKind::kConda);
  EXPECT_EQ(ClassifyFile(".gitmodules"), FileKind::kGitmodules);
  for (const char* tooling :
       {".github/workflows/ci.yml", ".pre-commit-config.yaml", "mkdocs.yml", ".gitlab-ci.yml",
        "conda-recipe/meta.yaml", "sub/.github/x.yaml", "docs/conf.yaml", "codecov.yml"})
    EXPECT_FALSE(ClassifyFile(tooling).has_value()) << tooling;
}

}  // namespace
}  // namespace dt::scan
