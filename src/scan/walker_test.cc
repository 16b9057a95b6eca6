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

// Links that leave the walked folder are listed and never handed out; a folder link inside it is
// not walked twice; a link back to an ancestor is a loop.
TEST_F(ScanWalkerTest, LinksLeavingTheTreeAreListedNotFollowed) {
  const fs::path outside = dir_.string() + "_outside";
  fs::create_directories(outside);
  ASSERT_TRUE(WriteFileAtomic(outside / "secret.py", "x.cuda()\n").ok());
  fs::create_directories(dir_ / "proj" / "pkg");
  ASSERT_TRUE(WriteFileAtomic(dir_ / "proj" / "pkg" / "m.py", "import os\n").ok());
  fs::create_symlink(outside / "secret.py", dir_ / "proj" / "file.py");
  fs::create_symlink(outside, dir_ / "proj" / "vendor");
  fs::create_symlink("pkg", dir_ / "proj" / "alias");
  fs::create_symlink("..", dir_ / "proj" / "pkg" / "up");
  std::vector<std::string> out;
  std::vector<Skipped> skipped;
  Walk(
      dir_ / "proj", "", WalkOptions{}, [&](WalkItem&& item) { out.push_back(item.rel); }, skipped);
  fs::remove_all(outside);
  EXPECT_EQ(out, std::vector<std::string>{"pkg/m.py"});
  std::map<std::string, std::string> why;
  for (const auto& s : skipped) why[s.file] = s.reason;
  const std::string real = fs::canonical(dir_).string() + "_outside";
  EXPECT_EQ(why["file.py"], "symbolic link leads outside the project: -> " + real + "/secret.py");
  EXPECT_EQ(why["vendor"], "symbolic link leads outside the project: -> " + real);
  EXPECT_EQ(why["alias"],
            "symbolic link to a folder of the project (pkg): scanned under its own name");
  EXPECT_EQ(why["pkg/up"], "symlink loop");
}

// git skips a byte order mark before the first pattern; .git/info/exclude applies at the root,
// below the .gitignore files (which can take a file back with `!`).
TEST_F(ScanWalkerTest, IgnoreFilesAreReadAsGitReadsThem) {
  for (const char* rel : {"a.py", "b.py", "c.py", "d.py"}) Write(rel);
  fs::create_directories(dir_ / ".git" / "info");
  ASSERT_TRUE(WriteFileAtomic(dir_ / ".git" / "info" / "exclude",
                              "\xEF\xBB\xBF"
                              "c.py\nd.py\n")
                  .ok());
  ASSERT_TRUE(WriteFileAtomic(dir_ / ".gitignore",
                              "\xEF\xBB\xBF"
                              "a.py\r\n!d.py\r\n")
                  .ok());
  EXPECT_EQ(WalkOrder(), (std::vector<std::string>{"b.py", "d.py"}));
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
