#include "scan/walker.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>

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

// Files are read by size (small ones into a buffer, from 64 KiB mapped) and opened by name inside
// their folder: every size across those steps, in folders several deep and side by side, is read
// whole, on one thread and on several.
TEST_F(ScanWalkerTest, ScanReadsEveryFileWhateverItsSizeOrFolder) {
  const std::size_t sizes[] = {0, 1, (16 << 10) - 1, 16 << 10, (64 << 10) - 1, 64 << 10, 200000};
  std::map<std::string, std::int64_t> expected;  // File -> line of its finding.
  int n = 0;
  for (std::size_t size : sizes) {
    for (const char* folder : {"", "a/", "a/b/c/", "z/"}) {
      const std::string rel = std::string(folder) + "m" + std::to_string(n++) + ".py";
      const std::string head = "import torch\n", tail = "torch.cuda.synchronize()\n";
      std::string text = head;
      std::int64_t line = 2;
      while (text.size() + tail.size() + 40 < size) {
        text += "x = 1  # padding\n";
        ++line;
      }
      if (text.size() + tail.size() + 2 <= size) {  // A comment brings it to the exact size.
        text += "#" + std::string(size - text.size() - tail.size() - 2, 'p') + "\n";
        ++line;
      }
      text += tail;
      if (size > 40) {
        ASSERT_EQ(text.size(), size);
      }
      expected[rel] = line;
      fs::create_directories((dir_ / rel).parent_path());
      ASSERT_TRUE(WriteFileAtomic(dir_ / rel, text).ok());
    }
  }
  ASSERT_TRUE(WriteFileAtomic(dir_ / "a" / "empty.py", "").ok());
  for (unsigned threads : {1u, 3u}) {
    ScanOptions opt;
    opt.paths = {dir_};
    opt.threads = threads;
    auto r = Scan(opt);
    ASSERT_TRUE(r.ok()) << r.error().message;
    std::map<std::string, std::int64_t> found;
    for (const auto& f : r->findings)
      if (f.code == "DT103") found[f.file] = f.line;
    EXPECT_EQ(found, expected) << "threads " << threads;
    EXPECT_TRUE(r->skipped.empty());
  }
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
