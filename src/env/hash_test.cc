#include "env/hash.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <random>

#include "util/fs.h"

namespace dt::env {
namespace {
namespace fs = std::filesystem;

class EnvHashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dt_env_hash_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, ec);
    fs::remove_all(dir_, ec);
  }
  void Write(const std::string& rel, const std::string& contents) {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel, std::ios::binary) << contents;
  }
  fs::path dir_;
};

TEST_F(EnvHashTest, KnownDigests) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Write("hello.py", "hello\n");
  auto d = DigestFileWithGitBlob(dir_ / "hello.py");
  ASSERT_TRUE(d.ok());
  // `printf 'hello\n' | git hash-object --stdin`
  EXPECT_EQ(d->git_blob, "ce013625030ba8dba906f756967f9e9ca394464a");
  EXPECT_EQ(d->sha256, "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
  EXPECT_EQ(d->size, 6u);
}

TEST_F(EnvHashTest, CollectsAndHashesATreeOnSeveralThreads) {
  std::mt19937 rng(7);
  std::string big(3 * 1024 * 1024 + 17, '\0');
  for (auto& c : big) c = static_cast<char>(rng());
  Write("data/big.bin", big);
  Write("data/sub/a.txt", "a");
  Write("data/sub/empty", "");
  Write("other.txt", "x");
  fs::create_symlink(dir_ / "other.txt", dir_ / "data/link.txt");
  fs::create_directory_symlink(dir_ / "data/sub", dir_ / "data/loop");
  auto c = CollectDataFiles({"data", "other.txt", "data/sub/a.txt"}, dir_);
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  std::vector<std::string> names;
  for (const auto& f : c->files) names.push_back(f.path);
  EXPECT_EQ(names, (std::vector<std::string>{"data/big.bin", "data/link.txt", "data/sub/a.txt",
                                             "data/sub/empty", "other.txt"}));
  ASSERT_EQ(c->skipped.size(), 1u);
  EXPECT_EQ(c->skipped[0].path, "data/loop");
  HashOptions opts;
  opts.threads = 3;
  opts.buffer_bytes = 64 * 1024;
  std::uint64_t last_done = 0, last_total = 0;
  opts.progress = [&](std::uint64_t done, std::uint64_t total) {
    last_done = done;
    last_total = total;
  };
  ASSERT_TRUE(HashDataFiles(c->files, opts).ok());
  EXPECT_EQ(c->files[0].sha256, Sha256Hex(big));
  EXPECT_EQ(c->files[0].size, big.size());
  EXPECT_EQ(c->files[1].sha256, Sha256Hex("x"));
  EXPECT_EQ(c->files[3].sha256, Sha256Hex(""));
  EXPECT_EQ(last_done, last_total);
  EXPECT_EQ(last_total, big.size() + 3);  // a, x and the link to x.
  std::string digest = DataDigest(c->files);
  EXPECT_EQ(digest.size(), 64u);
  std::swap(c->files[0], c->files[4]);
  EXPECT_EQ(DataDigest(c->files), digest);  // Order-independent.
}

TEST_F(EnvHashTest, OutsideFilesAreRecordedAbsolute) {
  Write("in/a", "1");
  auto c = CollectDataFiles({(dir_ / "in").string()}, dir_ / "in" / "..");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->files[0].path, "in/a");
  auto d = CollectDataFiles({(dir_ / "in").string()}, "/nonexistent-project");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->files[0].path, (dir_ / "in" / "a").generic_string());
}

TEST_F(EnvHashTest, MissingPathDanglingLinkAndUnreadableFileAreErrors) {
  auto missing = CollectDataFiles({"nope"}, dir_);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("does not exist"), std::string::npos);
  EXPECT_EQ(missing.error().code, ErrorCode::kInput);

  Write("d/ok", "1");
  fs::create_symlink(dir_ / "gone", dir_ / "d/dangling");
  auto dangling = CollectDataFiles({"d"}, dir_);
  ASSERT_FALSE(dangling.ok());
  EXPECT_NE(dangling.error().message.find("dangling symbolic link"), std::string::npos);
  EXPECT_NE(dangling.error().file.find("dangling"), std::string::npos);

  if (::geteuid() != 0) {  // root reads anything.
    Write("u/secret", "s");
    ::chmod((dir_ / "u/secret").c_str(), 0);
    auto unreadable = CollectDataFiles({"u"}, dir_);
    EXPECT_FALSE(unreadable.ok());
  }
}

TEST_F(EnvHashTest, AFileChangedWhileHashedIsDetected) {
  Write("d/a", std::string(300000, 'a'));
  auto c = CollectDataFiles({"d"}, dir_);
  ASSERT_TRUE(c.ok());
  HashOptions opts;
  opts.buffer_bytes = 4096;
  opts.after_first_block = [](const fs::path& p) { std::ofstream(p, std::ios::app) << "appended"; };
  auto s = HashDataFiles(c->files, opts);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("changed while it was hashed"), std::string::npos);
  EXPECT_NE(s.error().file.find("d/a"), std::string::npos);
}

TEST_F(EnvHashTest, AFileTruncatedWhileMappedIsAnErrorNotACrash) {
  Write("d/big", std::string(12u << 20, 'z'));  // Mapped: large enough, several chunks.
  auto c = CollectDataFiles({"d"}, dir_);
  ASSERT_TRUE(c.ok());
  HashOptions opts;
  opts.after_first_block = [](const fs::path& p) { fs::resize_file(p, 0); };
  auto s = HashDataFiles(c->files, opts);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("truncated while it was hashed"), std::string::npos)
      << s.error().message;
  // The next file hashes normally: the handler was disarmed.
  Write("d/big", std::string(3u << 20, 'y'));
  auto again = CollectDataFiles({"d"}, dir_);
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(HashDataFiles(again->files).ok());
  EXPECT_EQ(again->files[0].sha256, Sha256Hex(std::string(3u << 20, 'y')));
}

TEST_F(EnvHashTest, AFileReplacedWhileHashedIsDetected) {
  Write("d/a", "old contents");
  auto c = CollectDataFiles({"d"}, dir_);
  ASSERT_TRUE(c.ok());
  HashOptions opts;
  opts.after_first_block = [&](const fs::path& p) {
    std::ofstream(dir_ / "new", std::ios::binary) << "old contents";
    fs::rename(dir_ / "new", p);
  };
  auto s = HashDataFiles(c->files, opts);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("replaced"), std::string::npos);
}

}  // namespace
}  // namespace dt::env
