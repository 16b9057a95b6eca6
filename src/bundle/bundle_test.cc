#include "bundle/bundle.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "util/fs.h"

namespace dt::bundle {
namespace {

namespace fs = std::filesystem;

std::string Le64(std::uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

std::string Safetensors(const std::string& header, std::size_t data_bytes) {
  return Le64(header.size()) + header + std::string(data_bytes, '\0');
}

class BundleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dualtrack_bundle_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    ASSERT_TRUE(WriteFileAtomic(dir_ / name, text).ok());
  }
  void WriteMinimalBundle() {
    Write("manifest.json",
          R"j({"schema": "dualtrack.bundle/1", "track": "mps", "status": "failed",
              "command": ["python", "t.py"], "exception": {"type": "NotImplementedError",
              "message": "no kernel", "file": "t.py", "line": 3},
              "float64": [{"op": "aten::mean", "file": "m.py", "line": 2}],
              "redirects": [{"what": ".cuda()", "to": "mps", "file": "t.py", "line": 1, "count": 2}]})j");
    Write("ops.jsonl",
          "{\"op\": \"aten::mm\", \"overload\": \"default\", \"device\": \"mps\", \"dtypes\": "
          "[\"float32\"], \"count\": 4, \"location\": {\"file\": \"m.py\", \"line\": 7, "
          "\"function\": \"f\"}, \"status\": \"ok\", \"error\": null}\n\n"
          "{\"op\": \"aten::multi_margin_loss\", \"overload\": \"default\", \"device\": \"mps\", "
          "\"dtypes\": [\"float32\"], \"count\": 1, \"location\": null, \"status\": \"failed\", "
          "\"error\": \"The operator 'aten::multi_margin_loss' is not currently implemented for "
          "the MPS device.\"}\n");
    Write("metrics.jsonl", "{\"step\": 1, \"name\": \"loss\", \"value\": 2.5}\n");
    Write("tensors.safetensors",
          Safetensors(R"({"loss/step1":{"dtype":"F32","shape":[],"data_offsets":[0,4]},)"
                      R"("grad/step1/w":{"dtype":"BF16","shape":[2,3],"data_offsets":[4,16]}})",
                      16));
  }
  fs::path dir_;
};

TEST_F(BundleTest, SafetensorsHeaderGivesNamesShapesAndAbsoluteOffsets) {
  std::string header = R"({"a":{"dtype":"F64","shape":[2],"data_offsets":[0,16]},)"
                       R"("__metadata__":{"format":"pt"}})";
  std::string file = Safetensors(header, 16);
  auto t = ParseSafetensorsHeader(file, "x.safetensors");
  ASSERT_TRUE(t.ok()) << t.error().ToString();
  ASSERT_EQ(t->size(), 1u);
  EXPECT_EQ((*t)[0].name, "a");
  EXPECT_EQ((*t)[0].dtype, "F64");
  EXPECT_EQ((*t)[0].shape, std::vector<std::int64_t>{2});
  EXPECT_EQ((*t)[0].begin, 8 + header.size());
  EXPECT_EQ((*t)[0].end, 8 + header.size() + 16);

  // Every dtype the format has, packed sub-byte floats included (spans in bytes).
  header = R"({"c":{"dtype":"C64","shape":[2],"data_offsets":[0,16]},)"
           R"("f4":{"dtype":"F4","shape":[6],"data_offsets":[16,19]},)"
           R"("f6":{"dtype":"F6_E3M2","shape":[4],"data_offsets":[19,22]},)"
           R"("z":{"dtype":"F8_E4M3FNUZ","shape":[2],"data_offsets":[22,24]}})";
  file = Safetensors(header, 24);
  t = ParseSafetensorsHeader(file, "x.safetensors");
  ASSERT_TRUE(t.ok()) << t.error().ToString();
  ASSERT_EQ(t->size(), 4u);
  EXPECT_EQ((*t)[1].dtype, "F4");
  EXPECT_EQ((*t)[1].end - (*t)[1].begin, 3u);
  EXPECT_EQ((*t)[2].dtype, "F6_E3M2");
  EXPECT_EQ((*t)[3].dtype, "F8_E4M3FNUZ");
}

TEST_F(BundleTest, SafetensorsHeaderRejectsHostileInput) {
  struct Case {
    std::string bytes;
    std::string needle;
  };
  std::vector<Case> cases = {
      {"", "shorter"},
      {Le64(1ull << 62) + "{}", "longer than the file"},
      {Le64(100) + "{}", "longer than the file"},
      {Safetensors("[1]", 0), "not a JSON object"},
      {Safetensors("{\"a\":", 0), "not valid JSON"},
      {Safetensors(R"({"a":{"dtype":"F32","shape":[2]}})", 8), "data_offsets"},
      {Safetensors(R"({"a":{"dtype":"Q7","shape":[1],"data_offsets":[0,1]}})", 1),
       "unsupported dtype 'Q7'"},
      {Safetensors(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4),
       "not a non-negative integer"},
      {Safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})", 8), "outside"},
      {Safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8), "outside"},
      {Safetensors(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8), "need"},
      {Safetensors(
           R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,8]}})", 8),
       "overflows"},
      {Safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                   R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                   8),
       "overlap"},
      {Safetensors(R"({"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})", 2),
       "not a whole number of bytes"},
  };
  for (const auto& c : cases) {
    auto t = ParseSafetensorsHeader(c.bytes, "bad.safetensors");
    ASSERT_FALSE(t.ok()) << c.needle;
    EXPECT_NE(t.error().message.find(c.needle), std::string::npos) << t.error().message;
    EXPECT_EQ(t.error().file, "bad.safetensors");
    EXPECT_EQ(t.error().code, ErrorCode::kInput);
  }
}

TEST_F(BundleTest, LoadBundleReadsAllParts) {
  WriteMinimalBundle();
  auto b = LoadBundle(dir_);
  ASSERT_TRUE(b.ok()) << b.error().ToString();
  EXPECT_EQ(b->status, RunStatus::kFailed);
  EXPECT_EQ(b->track, "mps");
  ASSERT_EQ(b->ops.size(), 2u);
  EXPECT_EQ(b->ops[0].op, "aten::mm");
  EXPECT_EQ(b->ops[0].count, 4);
  ASSERT_TRUE(b->ops[0].location.has_value());
  EXPECT_EQ(b->ops[0].location->file, "m.py");
  EXPECT_EQ(b->ops[0].location->line, 7);
  EXPECT_FALSE(b->ops[1].location.has_value());
  EXPECT_EQ(b->ops[1].status, OpStatus::kFailed);
  ASSERT_EQ(b->metrics.size(), 1u);
  EXPECT_DOUBLE_EQ(b->metrics[0].value, 2.5);
  ASSERT_EQ(b->tensors.size(), 2u);

  std::string text = ShowText(*b, 10);
  EXPECT_NE(text.find("NotImplementedError: no kernel"), std::string::npos) << text;
  EXPECT_NE(text.find("at t.py:3"), std::string::npos);
  EXPECT_NE(text.find("failed  aten::multi_margin_loss on mps"), std::string::npos) << text;
  EXPECT_NE(text.find(".cuda() -> mps  t.py:1  x2"), std::string::npos) << text;
  EXPECT_NE(text.find("aten::mean  m.py:2"), std::string::npos);
  EXPECT_NE(text.find("grad/step1/*  1 tensors"), std::string::npos) << text;
  EXPECT_NE(text.find("loss: step 1 = 2.5"), std::string::npos);
  auto j = ShowJson(*b, 1);
  EXPECT_EQ(j["ops_summary"]["failed"], 1);
  EXPECT_EQ(j["top_ops"].size(), 1u);
  EXPECT_EQ(j["top_ops"][0]["op"], "aten::mm");
}

TEST_F(BundleTest, LoadBundleWithOnlyAManifestIsAnIncompleteRun) {
  Write("manifest.json",
        R"({"schema": "dualtrack.bundle/1", "track": "cpu", "status": "incomplete"})");
  auto b = LoadBundle(dir_);
  ASSERT_TRUE(b.ok()) << b.error().ToString();
  EXPECT_TRUE(b->ops.empty() && b->metrics.empty() && b->tensors.empty());
  EXPECT_NE(ShowText(*b, 5).find("incomplete"), std::string::npos);
}

TEST_F(BundleTest, LoadBundleErrorsNameTheFileAndLine) {
  WriteMinimalBundle();
  Write("metrics.jsonl", "{\"step\": 1, \"name\": \"loss\", \"value\": 1}\n{\"step\": \"x\"}\n");
  auto b = LoadBundle(dir_);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().file, (dir_ / "metrics.jsonl").string());
  EXPECT_EQ(b.error().line, 2);

  Write("metrics.jsonl", "");
  Write("manifest.json", R"({"schema": "dualtrack.bundle/1", "track": "cpu", "status": "weird"})");
  b = LoadBundle(dir_);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message.find("unknown status"), std::string::npos);

  Write("manifest.json", R"({"schema": "dualtrack.bundle/2", "track": "cpu", "status": "ok"})");
  b = LoadBundle(dir_);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message.find("dualtrack.bundle/2"), std::string::npos);

  EXPECT_FALSE(LoadBundle(dir_ / "missing").ok());
}

TEST(OutcomeTest, AnExceptionRaisedInsideTheTracerIsDualtracksErrorNotTheProjects) {
  OutcomeFacts f;
  f.status = RunStatus::kFailed;
  f.exit_code = 1;
  f.steps_completed = 0;
  f.exception = {{"type", "ValueError"}, {"message", "call stack is not deep enough"}};
  f.stderr_tail = "ValueError: call stack is not deep enough\n";
  RunOutcome user;
  ClassifyOutcome(f, user);
  EXPECT_EQ(user.outcome, OutcomeKind::kFailed);  // No origin recorded: the project's error.

  f.exception["origin"] = "dualtrack";
  RunOutcome ours;
  ClassifyOutcome(f, ours);
  EXPECT_EQ(ours.outcome, OutcomeKind::kTracerError);
  EXPECT_NE(ours.reason.find("ValueError: call stack is not deep enough"), std::string::npos);
  EXPECT_NE(ours.reason.find("not the project's"), std::string::npos);

  f.exception["origin"] = "user";
  RunOutcome theirs;
  ClassifyOutcome(f, theirs);
  EXPECT_EQ(theirs.outcome, OutcomeKind::kFailed);
}

TEST_F(BundleTest, TheOutcomeIsReadAndAnUnknownOneIsAnError) {
  for (OutcomeKind k : {OutcomeKind::kFinished, OutcomeKind::kFailed, OutcomeKind::kCrashed,
                        OutcomeKind::kCouldNotStart, OutcomeKind::kInterrupted,
                        OutcomeKind::kTimedOut, OutcomeKind::kTracerError}) {
    EXPECT_EQ(ParseOutcomeKind(ToString(k)), k);
  }
  EXPECT_FALSE(ParseOutcomeKind("Finished").has_value());
  EXPECT_FALSE(ParseOutcomeKind("").has_value());

  const std::string head = R"({"schema": "dualtrack.bundle/1", "track": "cpu", "status": "ok")";
  Write("manifest.json", head + "}");
  auto b = LoadBundle(dir_);
  ASSERT_TRUE(b.ok()) << b.error().ToString();
  EXPECT_FALSE(b->outcome.has_value());  // Written before outcomes were recorded.

  Write("manifest.json", head + R"(, "outcome": "timed-out"})");
  b = LoadBundle(dir_);
  ASSERT_TRUE(b.ok()) << b.error().ToString();
  EXPECT_EQ(b->outcome, OutcomeKind::kTimedOut);
  EXPECT_NE(ShowText(*b, 5).find("outcome     timed-out"), std::string::npos);

  for (const char* bad : {R"("exploded")", "3", "true"}) {
    Write("manifest.json", head + R"(, "outcome": )" + bad + "}");
    b = LoadBundle(dir_);
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_EQ(b.error().file, (dir_ / "manifest.json").string());
    EXPECT_NE(b.error().message.find("unknown outcome"), std::string::npos) << bad;
    EXPECT_NE(b.error().message.find(bad), std::string::npos) << b.error().message;
  }
}

TEST_F(BundleTest, ReadOpsJsonlFillsDefaultsAndRejectsMalformedLines) {
  Write("ops.jsonl",
        "{\"op\": \"aten::add\", \"overload\": \"Tensor\", \"ndim\": 3}\n"
        "{\"op\": \"aten::mm\", \"overload\": \"\", \"count\": 0, \"max_ndim\": 5, "
        "\"location\": {\"line\": 3}, \"dtypes\": null}\n");
  auto rows = ReadOpsJsonl(dir_ / "ops.jsonl");
  ASSERT_TRUE(rows.ok()) << rows.error().ToString();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].overload, "Tensor");
  EXPECT_EQ((*rows)[0].count, 1);  // Absent: one call.
  EXPECT_EQ((*rows)[0].status, OpStatus::kOk);
  EXPECT_EQ((*rows)[0].max_ndim, 3);
  EXPECT_EQ((*rows)[1].overload, "default");
  EXPECT_EQ((*rows)[1].count, 0);
  EXPECT_EQ((*rows)[1].max_ndim, 5);
  EXPECT_FALSE((*rows)[1].location.has_value());  // No file: no place to point at.
  EXPECT_TRUE(ReadOpsJsonl(dir_ / "absent.jsonl")->empty());

  struct Case {
    std::string line, needle;
  } cases[] = {
      {"{not json", "invalid JSON"},
      // Beyond a double's range: nlohmann's out_of_range, which the bundle fuzzer found escaping.
      {"{\"op\": \"a\", \"count\": 1e999}", "a number too large"},
      {"[1, 2]", "not a JSON object"},
      {"{\"count\": 1}", "'op' is missing"},
      {"{\"op\": 3}", "'op' is missing or not a string"},
      {"{\"op\": \"\"}", "'op' is empty"},
      {"{\"op\": \"a\", \"count\": -1}", "'count' must be a non-negative integer"},
      {"{\"op\": \"a\", \"count\": \"2\"}", "'count' must be a non-negative integer"},
      {"{\"op\": \"a\", \"dtypes\": \"float32\"}", "'dtypes' must be a list of strings"},
      {"{\"op\": \"a\", \"dtypes\": [1]}", "'dtypes' must be a list of strings"},
      {"{\"op\": \"a\", \"location\": \"m.py:3\"}", "'location' must be an object or null"},
      {"{\"op\": \"a\", \"status\": \"slow\"}", "'status' must be ok, fallback or failed"},
      {"{\"op\": \"a\", \"status\": 1}", "'status' must be ok, fallback or failed"},
  };
  for (const Case& c : cases) {
    Write("ops.jsonl", "{\"op\": \"aten::ok\"}\n\n" + c.line + "\n");
    auto bad = ReadOpsJsonl(dir_ / "ops.jsonl");
    ASSERT_FALSE(bad.ok()) << c.line;
    EXPECT_EQ(bad.error().code, ErrorCode::kInput);
    EXPECT_EQ(bad.error().file, (dir_ / "ops.jsonl").string());
    EXPECT_EQ(bad.error().line, 3) << c.line;
    EXPECT_NE(bad.error().message.find(c.needle), std::string::npos) << bad.error().message;
  }
}

// ops.jsonl is read in 1 MiB chunks: rows that straddle a chunk's end, a CRLF line, a last line
// without its newline and a line longer than a chunk all read as whole rows, numbered as written.
TEST_F(BundleTest, ReadOpsJsonlReadsRowsAcrossChunks) {
  std::string text;
  int rows = 0;
  while (text.size() < (std::size_t{5} << 19)) {  // 2.5 MiB of rows of varying length.
    text += "{\"op\": \"aten::op" + std::to_string(rows) +
            "\", \"count\": " + std::to_string(rows % 7) + "}" + (rows % 3 == 0 ? "\r\n" : "\n");
    ++rows;
  }
  text +=
      "{\"op\": \"aten::long\", \"error\": \"" + std::string(std::size_t{3} << 20, 'x') + "\"}\n";
  text += "{\"op\": \"aten::last\"}";
  Write("ops.jsonl", text);
  auto read = ReadOpsJsonl(dir_ / "ops.jsonl");
  ASSERT_TRUE(read.ok()) << read.error().ToString();
  ASSERT_EQ(read->size(), static_cast<std::size_t>(rows) + 2);
  for (int i = 0; i < rows; ++i) {
    ASSERT_EQ((*read)[i].op, "aten::op" + std::to_string(i));
    ASSERT_EQ((*read)[i].count, i % 7);
  }
  EXPECT_EQ((*read)[rows].error->size(), std::size_t{3} << 20);
  EXPECT_EQ(read->back().op, "aten::last");
  Write("ops.jsonl", text + "\n{broken\n");
  auto bad = ReadOpsJsonl(dir_ / "ops.jsonl");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().line, rows + 3);
}

TEST_F(BundleTest, RunTrackRecordsExitCodeLogsAndPeakMemory) {
  RunOptions o;
  o.track = "cpu";
  o.out_dir = dir_ / "b";
  o.command = {"/bin/sh", "-c", "echo out; echo err >&2; exit 3"};
  o.collect_env = false;
  std::ostringstream out, err;
  Io io{out, err};
  auto r = RunTrack(o, io);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->status, RunStatus::kFailed);
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_GT(r->peak_rss_bytes, 0);
  EXPECT_EQ(out.str(), "out\n");
  EXPECT_EQ(err.str(), "err\n");
  EXPECT_EQ(*ReadFile(o.out_dir / "stdout.log"), "out\n");
  EXPECT_EQ(*ReadFile(o.out_dir / "stderr.log"), "err\n");
  auto b = LoadBundle(o.out_dir);
  ASSERT_TRUE(b.ok()) << b.error().ToString();
  EXPECT_EQ(b->status, RunStatus::kFailed);
  EXPECT_EQ(b->manifest["exit_code"], 3);
  EXPECT_FALSE(b->manifest["problems"].empty());  // No tracer ran in /bin/sh.
}

TEST_F(BundleTest, RunTrackRecordsAChildKilledBySignal) {
  RunOptions o;
  o.track = "cpu";
  o.out_dir = dir_ / "b";
  o.command = {"/bin/sh", "-c", "kill -9 $$"};
  o.collect_env = false;
  o.quiet = true;
  std::ostringstream out, err;
  Io io{out, err};
  auto r = RunTrack(o, io);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->status, RunStatus::kKilled);
  EXPECT_EQ(r->signal, 9);
  auto b = LoadBundle(o.out_dir);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->manifest["signal"], "SIGKILL");
  EXPECT_TRUE(b->manifest["exit_code"].is_null());
}

TEST_F(BundleTest, RunTrackRejectsBadOptionsBeforeTouchingTheDisk) {
  RunOptions o;
  o.out_dir = dir_ / "b";
  o.command = {"/bin/sh", "-c", "true"};
  std::ostringstream out, err;
  Io io{out, err};
  o.track = "../x";
  EXPECT_FALSE(RunTrack(o, io).ok());
  o.track = "cpu";
  o.command = {"dualtrack-no-such-program"};
  EXPECT_FALSE(RunTrack(o, io).ok());
  o.command = {};
  EXPECT_FALSE(RunTrack(o, io).ok());
  EXPECT_FALSE(fs::exists(o.out_dir));
}

}  // namespace
}  // namespace dt::bundle
