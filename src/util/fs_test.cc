#include "util/fs.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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

// The streamed form writes what the stream was given, across many fills of its buffer, and keeps
// the atomic write's contract (an existing file is replaced whole, a bad path names itself).
TEST_F(FsTest, AStreamedAtomicWriteHoldsEveryByteWritten) {
  fs::path p = dir_ / "big.json";
  ASSERT_TRUE(WriteFileAtomic(p, "old").ok());
  std::string expected;
  for (int i = 0; i < 40000; ++i) expected += "line " + std::to_string(i) + (i % 7 ? "" : "\n");
  ASSERT_GT(expected.size(), 3u << 16);
  auto write = [&](std::ostream& out) {
    for (std::size_t i = 0; i < expected.size(); i += 1000) {
      out.put(expected[i]);
      out.write(expected.data() + i + 1,
                static_cast<std::streamsize>(std::min<std::size_t>(999, expected.size() - i - 1)));
    }
  };
  ASSERT_TRUE(WriteFileAtomic(p, write).ok());
  auto read = ReadFile(p);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, expected);
  auto st = WriteFileAtomic(dir_ / "missing" / "x.json", write);
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

// Opening by name inside an open folder is the same open: the file's bytes, the folder's own
// name never needed, errors naming the full path, and a non-file refused.
TEST_F(FsTest, OpenRegularFileAtOpensANameInsideAFolder) {
  std::ofstream(dir_ / "a.py") << "import torch\n";
  fs::create_directories(dir_ / "sub");
  const int folder = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(folder, 0);
  struct stat st {};
  const std::string full = (dir_ / "a.py").string();
  auto fd = OpenRegularFileAt(folder, "a.py", full.c_str(), &st);
  ASSERT_TRUE(fd.ok());
  EXPECT_EQ(st.st_size, 13);
  char buf[32] = {};
  EXPECT_EQ(::read(fd->get(), buf, sizeof buf), 13);
  EXPECT_EQ(std::string_view(buf, 13), "import torch\n");
  auto missing = OpenRegularFileAt(folder, "b.py", "/somewhere/b.py");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().ToString().find("/somewhere/b.py: cannot open"), std::string::npos)
      << missing.error().ToString();
  auto sub = OpenRegularFileAt(folder, "sub", (dir_ / "sub").c_str());
  ASSERT_FALSE(sub.ok());
  EXPECT_NE(sub.error().message.find("directory"), std::string::npos);
  ::close(folder);
}

// A map made from a descriptor the caller opened (and fstat'ed) holds the same bytes as one that
// opens by path, and still notices a file rewritten under it.
TEST_F(FsTest, MappedFileFromAnOpenDescriptor) {
  fs::path p = dir_ / "big.py";
  std::string text(100000, 'x');
  text += "\ntorch.cuda.synchronize()\n";
  std::ofstream(p, std::ios::binary) << text;
  struct stat st {};
  auto fd = OpenRegularFile(p, &st);
  ASSERT_TRUE(fd.ok());
  auto m = MappedFile::FromFd(std::move(*fd), st, p.string());
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->view(), text);
  EXPECT_EQ(m->path(), p.string());
  EXPECT_TRUE(m->CheckUnchanged().ok());
  std::ofstream(p, std::ios::binary | std::ios::app) << "more\n";
  auto changed = m->CheckUnchanged();
  ASSERT_FALSE(changed.ok());
  EXPECT_NE(changed.error().ToString().find("big.py"), std::string::npos);
}

}  // namespace
}  // namespace dt

namespace dt {
namespace {

namespace fs = std::filesystem;

fs::path HostileDir(const char* name) {
  fs::path d = fs::temp_directory_path() /
               ("dualtrack_fs_hostile_" + std::to_string(::getpid()) + "_" + name);
  fs::create_directories(d);
  return d;
}

TEST(FsHostileTest, OpenRegularFileRefusesAFifoWithoutBlocking) {
  fs::path d = HostileDir("fifo");
  fs::path p = d / "pipe";
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  auto fd = OpenRegularFile(p);
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.error().code, ErrorCode::kInput);
  EXPECT_NE(fd.error().message.find("FIFO"), std::string::npos) << fd.error().message;
  EXPECT_FALSE(ReadFile(p).ok());
  EXPECT_FALSE(MappedFile::Open(p).ok());
  fs::remove_all(d);
}

TEST(FsHostileTest, AMappedFileTruncatedUnderTheMapReadsZerosAndIsReported) {
  fs::path d = HostileDir("trunc");
  fs::path p = d / "big.bin";
  const std::size_t size = 1 << 20;
  { std::ofstream(p, std::ios::binary) << std::string(size, 'x'); }
  auto m = MappedFile::Open(p);
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->CheckUnchanged().ok());
  ASSERT_EQ(::truncate(p.c_str(), 4096), 0);
  // Without the guard this read is a SIGBUS.
  volatile unsigned char past = m->data()[size - 1];
  EXPECT_EQ(past, 0);
  EXPECT_EQ(m->data()[0], 'x');
  EXPECT_TRUE(m->Truncated());
  auto st = m->CheckUnchanged();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("changed while it was read"), std::string::npos);
  EXPECT_EQ(st.error().file, p.string());
  fs::remove_all(d);
}

TEST(FsHostileTest, AFileRewrittenInPlaceIsReportedAsChanged) {
  fs::path d = HostileDir("rewrite");
  fs::path p = d / "f.bin";
  { std::ofstream(p, std::ios::binary) << std::string(100, 'x'); }
  auto m = MappedFile::Open(p);
  ASSERT_TRUE(m.ok());
  { std::ofstream(p, std::ios::binary | std::ios::app) << "more"; }
  EXPECT_FALSE(m->CheckUnchanged().ok());
  fs::remove_all(d);
}

TEST(FsHostileTest, OutputsRefuseLinksSpecialFilesAndInputsAndKeepTheMode) {
  fs::path d = HostileDir("out");
  fs::path target = d / "target.json";
  { std::ofstream(target) << "keep"; }
  fs::path link = d / "link.json";
  fs::create_symlink(target, link);
  auto s = WriteFileAtomic(link, "new");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("symbolic link"), std::string::npos);
  EXPECT_EQ(*ReadFile(target), "keep");
  EXPECT_TRUE(fs::is_symlink(link));

  fs::path pipe = d / "pipe";
  ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
  EXPECT_FALSE(WriteFileAtomic(pipe, "x").ok());
  EXPECT_EQ(fs::status(pipe).type(), fs::file_type::fifo);

  OutputGuard guard;
  guard.inputs.push_back(target);
  EXPECT_FALSE(WriteFileAtomic(target, "x", guard).ok());
  guard.inputs.clear();
  guard.input_dirs.push_back(d);
  EXPECT_FALSE(WriteFileAtomic(d / "new.json", "x", guard).ok());

  ::chmod(target.c_str(), 0600);
  ASSERT_TRUE(WriteFileAtomic(target, "replaced").ok());
  EXPECT_EQ(fs::status(target).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(*ReadFile(target), "replaced");
  fs::remove_all(d);
}

}  // namespace
}  // namespace dt
