#include "env/freeze.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "env/replay_host.h"
#include "util/fs.h"
#include "util/git.h"

namespace dt::env {
namespace {
namespace fs = std::filesystem;

// The replay key of a git command as freeze runs it (SafeGitArgv, joined by spaces).
std::string GitKey(const std::string& dir, const std::vector<std::string>& args,
                   std::string_view filters = {}) {
  std::string key;
  for (const auto& a : SafeGitArgv(dir, args, filters)) key += (key.empty() ? "" : " ") + a;
  return key;
}

TEST(EnvFreezeTest, CredentialsAreStrippedFromRemotes) {
  EXPECT_EQ(StripCredentials("https://alice:ghp_secret@github.com/org/repo.git"),
            "https://github.com/org/repo.git");
  EXPECT_EQ(StripCredentials("https://token@gitlab.com/x"), "https://gitlab.com/x");
  EXPECT_EQ(StripCredentials("https://github.com/org/repo.git"), "https://github.com/org/repo.git");
  EXPECT_EQ(StripCredentials("git@github.com:org/repo.git"), "git@github.com:org/repo.git");
  EXPECT_EQ(StripCredentials("ssh://git:pw@host:22/r"), "ssh://host:22/r");
  EXPECT_EQ(StripCredentials("https://host/path@v1"), "https://host/path@v1");
  EXPECT_EQ(StripCredentials("https://gitlab.com/g/r.git?private_token=glpat-x"),
            "https://gitlab.com/g/r.git");
  EXPECT_EQ(StripCredentials("https://u:p@host/r.git#frag"), "https://host/r.git");
  EXPECT_EQ(StripCredentials("git@host:r.git?token=1"), "git@host:r.git");
}

TEST(EnvFreezeTest, GitRunsWithTheRepositorysProgramsSwitchedOff) {
  auto argv = SafeGitArgv("/p", {"status"},
                          std::string("filter.lfs.clean\ngit-lfs clean\0"
                                      "filter.a.b.process\nrun-me\0",
                                      48));
  auto has = [&](const std::string& kv) {
    for (std::size_t i = 0; i + 1 < argv.size(); ++i)
      if (argv[i] == "-c" && argv[i + 1] == kv) return true;
    return false;
  };
  EXPECT_TRUE(has("core.fsmonitor=false"));
  EXPECT_TRUE(has("core.hooksPath=/dev/null"));
  EXPECT_TRUE(has("filter.lfs.clean="));
  EXPECT_TRUE(has("filter.lfs.process="));
  EXPECT_TRUE(has("filter.lfs.required=false"));
  EXPECT_TRUE(has("filter.a.b.smudge="));  // A driver name may hold dots.
  EXPECT_EQ(argv.back(), "status");
  EXPECT_EQ(argv.front(), "git");
}

TEST(EnvFreezeTest, OnlyAllowListedVariables) {
  EXPECT_TRUE(IsAllowListedEnvVar("CUDA_VISIBLE_DEVICES"));
  EXPECT_TRUE(IsAllowListedEnvVar("PYTORCH_ENABLE_MPS_FALLBACK"));
  EXPECT_TRUE(IsAllowListedEnvVar("OMP_NUM_THREADS"));
  EXPECT_FALSE(IsAllowListedEnvVar("AWS_SECRET_ACCESS_KEY"));
  EXPECT_FALSE(IsAllowListedEnvVar("HF_TOKEN"));
  EXPECT_FALSE(IsAllowListedEnvVar("MY_CUDA_PATH"));
}

class EnvFreezeProjectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dt_env_freeze_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "data");
    std::ofstream(dir_ / "data/a.bin") << "aaaa";
    std::ofstream(dir_ / "data/b.bin") << "bbbb";
    std::ofstream(dir_ / "prep.py") << "print('prep')\n";
    std::ofstream(dir_ / "requirements-dev.txt") << "pytest\n";
    std::ofstream(dir_ / "Dockerfile")
        << "# base\nFROM --platform=linux/amd64 nvidia/cuda:12.1.1-runtime-ubuntu22.04 AS base\n";
    fs::create_directories(dir_ / ".venv");
    std::ofstream(dir_ / ".venv/requirements.txt") << "hidden\n";
    const std::string d = dir_.string();
    host_.AddCommand("uname -s -r -m", "Linux 6.1.0 x86_64\n");
    host_.AddCommand(GitKey(d, {"rev-parse", "--is-inside-work-tree"}), "true\n");
    host_.AddCommand(GitKey(d, {"rev-parse", "HEAD"}),
                     "0123456789abcdef0123456789abcdef01234567\n");
    host_.AddCommand(GitKey(d, {"rev-parse", "--abbrev-ref", "HEAD"}), "main\n");
    host_.AddCommand(GitKey(d, {"status", "--porcelain=v1", "-z", "--ignore-submodules=all"}),
                     std::string(" M train.py\0R  new.py\0old.py\0?? notes.txt\0", 42));
    host_.AddCommand(GitKey(d, {"remote", "-v"}),
                     "origin\thttps://bob:ghp_abc123@github.com/lab/proj.git (fetch)\n"
                     "origin\thttps://bob:ghp_abc123@github.com/lab/proj.git (push)\n");
    host_.AddProgram("python3", "/usr/bin/python3");
    host_.AddCommand(
        "/usr/bin/python3 -c*",
        "{\"kind\": \"python\", \"path\": \"/usr/bin/python3\", \"version\": \"3.11.7\"}\n"
        "{\"kind\": \"torch\", \"installed\": true, \"version\": \"2.13.0+cpu\"}\n");
    host_.AddCommand("/usr/bin/python3 -m pip list --format=json --disable-pip-version-check",
                     "[{\"name\": \"torch\", \"version\": \"2.13.0\"}, {\"name\": \"numpy\", "
                     "\"version\": \"2.1.0\"}]");
    host_.AddCommand("cc --version", "cc (Debian 12.2.0-14) 12.2.0\nCopyright\n");
    host_.SetEnv("CUDA_VISIBLE_DEVICES", "0");
    host_.SetEnv("HF_TOKEN", "hf_secret");
    host_.SetEnv("CONDA_PREFIX", "/opt/conda/envs/x");
    host_.SetEnv("CONDA_DEFAULT_ENV", "x");
  }
  void TearDown() override { fs::remove_all(dir_); }

  FreezeOptions Options() {
    FreezeOptions o;
    o.project = dir_;
    o.data = {"data"};
    o.preprocess = {"prep.py"};
    o.seeds = {0, 42};
    return o;
  }

  fs::path dir_;
  ReplayHost host_;
};

TEST_F(EnvFreezeProjectTest, RecordsCodeEnvironmentDataAndNoSecrets) {
  auto b = Freeze(host_, host_, Options());
  ASSERT_TRUE(b.ok()) << b.error().ToString();
  EXPECT_EQ(b->code.commit, std::optional<std::string>("0123456789abcdef0123456789abcdef01234567"));
  EXPECT_EQ(b->code.branch, std::optional<std::string>("main"));
  EXPECT_EQ(b->code.dirty, (std::vector<std::string>{"train.py", "new.py", "notes.txt"}));
  EXPECT_EQ(b->code.remotes.at("origin"), "https://github.com/lab/proj.git");
  ASSERT_EQ(b->packages.size(), 2u);
  EXPECT_EQ(b->packages[0].name, "numpy");
  EXPECT_EQ(b->packages_source, "pip");
  ASSERT_TRUE(b->conda);
  EXPECT_EQ(b->conda->at("name"), "x");
  std::vector<std::string> locks;
  for (const auto& l : b->lock_files) locks.push_back(l.path);
  EXPECT_EQ(locks, (std::vector<std::string>{"Dockerfile", "requirements-dev.txt"}));
  EXPECT_EQ(b->container_images,
            (std::vector<std::string>{"nvidia/cuda:12.1.1-runtime-ubuntu22.04"}));
  EXPECT_EQ(b->compilers.at("cc"), std::optional<std::string>("cc (Debian 12.2.0-14) 12.2.0"));
  EXPECT_FALSE(b->compilers.at("c++"));
  EXPECT_EQ(b->env_vars, (std::map<std::string, std::string>{{"CUDA_VISIBLE_DEVICES", "0"}}));
  ASSERT_EQ(b->data.size(), 2u);
  EXPECT_EQ(b->data[0].path, "data/a.bin");
  EXPECT_EQ(b->data[0].size, 4u);
  ASSERT_EQ(b->preprocess.size(), 1u);
  EXPECT_EQ(b->preprocess[0].git_blob.size(), 40u);
  EXPECT_EQ(b->seeds, (std::vector<std::int64_t>{0, 42}));

  nlohmann::json j = BaselineToJson(*b);
  EXPECT_EQ(j["schema"], "dualtrack.baseline/1");
  EXPECT_EQ(j.dump().find("hf_secret"), std::string::npos);
  EXPECT_EQ(j.dump().find("ghp_abc123"), std::string::npos);
  auto back = BaselineFromJson(j, "b.json");
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  EXPECT_EQ(BaselineToJson(*back), j);
  EXPECT_TRUE(CompareBaselines(*b, *back).Empty());
}

TEST_F(EnvFreezeProjectTest, CheckReportsExactlyTheChangedAddedAndMissingFiles) {
  auto before = Freeze(host_, host_, Options());
  ASSERT_TRUE(before.ok());
  std::ofstream(dir_ / "data/a.bin") << "AAAA";
  fs::remove(dir_ / "data/b.bin");
  std::ofstream(dir_ / "data/c.bin") << "c";
  host_.AddCommand(GitKey(dir_.string(), {"rev-parse", "HEAD"}),
                   "fedcba9876543210fedcba9876543210fedcba98\n");
  host_.AddCommand("/usr/bin/python3 -m pip list --format=json --disable-pip-version-check",
                   "[{\"name\": \"torch\", \"version\": \"2.14.0\"}, {\"name\": \"numpy\", "
                   "\"version\": \"2.1.0\"}]");
  auto now = Freeze(host_, host_, Options());
  ASSERT_TRUE(now.ok());
  BaselineDiff d = CompareBaselines(*before, *now);
  EXPECT_TRUE(d.DataDiffers());
  EXPECT_EQ(d.data_changed, std::vector<std::string>{"data/a.bin"});
  EXPECT_EQ(d.data_added, std::vector<std::string>{"data/c.bin"});
  EXPECT_EQ(d.data_missing, std::vector<std::string>{"data/b.bin"});
  ASSERT_EQ(d.packages.size(), 1u);
  EXPECT_EQ(d.packages[0].what, "torch");
  EXPECT_EQ(d.packages[0].before, "2.13.0");
  EXPECT_EQ(d.packages[0].after, "2.14.0");
  ASSERT_FALSE(d.code.empty());
  EXPECT_EQ(d.code[0].what, "commit");
  std::string text = FormatDiffText(d);
  EXPECT_NE(text.find("  changed  data/a.bin\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  missing  data/b.bin\n"), std::string::npos) << text;
  EXPECT_EQ(DiffToJson(d)["data"]["changed"][0], "data/a.bin");
}

TEST_F(EnvFreezeProjectTest, BadInputsAreErrors) {
  FreezeOptions o = Options();
  o.preprocess = {"missing.py"};
  auto b = Freeze(host_, host_, o);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message.find("does not exist"), std::string::npos);
  o = Options();
  o.project = dir_ / "nope";
  EXPECT_FALSE(Freeze(host_, host_, o).ok());
}

TEST(EnvBaselineJsonTest, MalformedBaselinesAreClearErrors) {
  using nlohmann::json;
  EXPECT_FALSE(BaselineFromJson(json::array(), "b.json").ok());
  auto wrong = BaselineFromJson({{"schema", "dualtrack.env/1"}}, "b.json");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().file, "b.json");
  EXPECT_NE(wrong.error().message.find("expected 'dualtrack.baseline/1'"), std::string::npos);
  json no_data = {{"schema", "dualtrack.baseline/1"}, {"env", {{"schema", "dualtrack.env/1"}}}};
  EXPECT_FALSE(BaselineFromJson(no_data, "b.json").ok());
  json bad_file = no_data;
  bad_file["data"] = {{"files", json::array({{{"path", "a"}, {"size", -1}, {"sha256", "x"}}})}};
  EXPECT_FALSE(BaselineFromJson(bad_file, "b.json").ok());
  bad_file["data"] = {{"files", json::array({{{"path", "a"}, {"size", 1}, {"sha256", "x"}}})}};
  bad_file["seeds"] = json::array({"zero"});
  EXPECT_FALSE(BaselineFromJson(bad_file, "b.json").ok());

  fs::path p =
      fs::temp_directory_path() / ("dt_env_truncated_" + std::to_string(::getpid()) + ".json");
  ASSERT_TRUE(WriteFileAtomic(p, "{\"schema\": \"dualtrack.baseline/1\", \"data\": {").ok());
  auto truncated = LoadBaseline(p);
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.error().message.find("corrupt baseline: invalid JSON"), std::string::npos);
  fs::remove(p);
  EXPECT_FALSE(LoadBaseline("/nonexistent/baseline.json").ok());
}

}  // namespace
}  // namespace dt::env
