#include "util/fs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace dt {
namespace {

namespace fs = std::filesystem;

class FsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dualtrack_fs_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(FsTest, AtomicWriteReplacesWholeFileAndLeavesNoTemporary) {
  fs::path p = dir_ / "out.json";
  ASSERT_TRUE(WriteFileAtomic(p, "old").ok());
  ASSERT_TRUE(WriteFileAtomic(p, "new contents").ok());
  auto read = ReadFile(p);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, "new contents");
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++entries;
  EXPECT_EQ(entries, 1);
}

TEST_F(FsTest, AtomicWriteIntoMissingDirectoryIsAnErrorNamingThePath) {
  auto st = WriteFileAtomic(dir_ / "missing" / "x.json", "data");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().file.find("missing"), std::string::npos);
}

TEST_F(FsTest, ReadFileErrorsNameTheFile) {
  auto r = ReadFile(dir_ / "nope.txt");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInput);
  EXPECT_NE(r.error().ToString().find("nope.txt: cannot open"), std::string::npos);
  auto d = ReadFile(dir_);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("directory"), std::string::npos);
}

TEST_F(FsTest, ReadFileEnforcesTheSizeLimit) {
  fs::path p = dir_ / "big.bin";
  std::ofstream(p) << std::string(100, 'x');
  EXPECT_TRUE(ReadFile(p, 100).ok());
  auto r = ReadFile(p, 99);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("too large"), std::string::npos);
}

TEST_F(FsTest, MappedFileSeesTheBytes) {
  fs::path p = dir_ / "m.bin";
  std::ofstream(p, std::ios::binary) << std::string("abc\0def", 7);
  auto m = MappedFile::Open(p);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->size(), 7u);
  EXPECT_EQ(m->view(), std::string_view("abc\0def", 7));
  MappedFile moved = std::move(*m);
  EXPECT_EQ(moved.size(), 7u);
  std::ofstream(dir_ / "empty.bin");
  auto e = MappedFile::Open(dir_ / "empty.bin");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->size(), 0u);
  EXPECT_FALSE(MappedFile::Open(dir_).ok());
}

}  // namespace
}  // namespace dt
