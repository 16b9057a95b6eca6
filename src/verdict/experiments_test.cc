#include "verdict/experiments.h"

#include <gtest/gtest.h>

#include <fstream>

#include "verdict/audit.h"

namespace dt::verdict {
namespace {

namespace fs = std::filesystem;

fs::path Example() { return fs::path(DUALTRACK_TEST_SOURCE_DIR) / "examples/cuda-research"; }

// A scratch project folder, removed at the end of the test.
class Project {
 public:
  Project() {
    dir_ = fs::temp_directory_path() /
           ("dualtrack-exp-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~Project() { fs::remove_all(dir_); }
  void Write(const std::string& rel, const std::string& text) {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel) << text;
  }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
};

constexpr const char* kMain = "import torch\nif __name__ == '__main__':\n    pass\n";

TEST(VerdictExperimentsTest, SplitsCommandLines) {
  auto w = SplitCommandLine("train.py --device cpu  --name 'a b' \"c \\\"d\\\"\" e\\ f");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(*w, (std::vector<std::string>{"train.py", "--device", "cpu", "--name", "a b", "c \"d\"",
                                          "e f"}));
  EXPECT_FALSE(SplitCommandLine("train.py 'open").ok());
  EXPECT_TRUE(SplitCommandLine("   ")->empty());
}

TEST(VerdictExperimentsTest, ReadsDeclaredExperimentsOfTheExample) {
  auto cfg = ReadProjectConfig(Example());
  ASSERT_TRUE(cfg.ok()) << cfg.error().ToString();
  EXPECT_EQ(cfg->run, std::optional<std::string>("train.py --device cpu --steps 2"));
  ASSERT_EQ(cfg->experiments.size(), 2u);
  EXPECT_EQ(cfg->experiments[0].name, "training");
  EXPECT_EQ(cfg->experiments[0].entry, "train.py");
  EXPECT_EQ(cfg->experiments[0].device, "--device");
  EXPECT_EQ(cfg->experiments[1].name, "preprocessing");
  EXPECT_FALSE(cfg->experiments[1].run.has_value());
}

TEST(VerdictExperimentsTest, TheCostPredictionsSettingsAreReadAndCheckedAtTheirLine) {
  auto cfg = ReadProjectConfig(Example());
  ASSERT_TRUE(cfg.ok()) << cfg.error().ToString();
  EXPECT_EQ(cfg->macs, (std::vector<std::string>{"M2 16GB", "M3 Max 36GB", "M4 Max 128GB"}));
  EXPECT_EQ(cfg->max_hours, std::optional<double>(72));
  EXPECT_EQ(cfg->experiments[0].steps, std::optional<std::int64_t>(200000));
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"[tool.dualtrack]\nmacs = [1]\n", "macs"},
      {"[tool.dualtrack]\nsteps = 0\n", "whole number of steps above 0"},
      {"[tool.dualtrack]\nsteps = 1.5\n", "whole number of steps above 0"},
      {"[tool.dualtrack]\nmax_hours = -2\n", "max_hours must be a number above 0"},
      {"[tool.dualtrack]\nmac_memory_fraction = 1.5\n", "at most 1"},
      {"[[tool.dualtrack.experiments]]\nentry = \"t.py\"\nsteps = \"many\"\n", "steps"},
  };
  for (const auto& [text, expected] : bad) {
    Project p;
    p.Write("pyproject.toml", text);
    auto r = ReadProjectConfig(p.dir());
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.error().message.find(expected), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().file.find("pyproject.toml"), std::string::npos);
  }
}

TEST(VerdictExperimentsTest, MalformedExperimentsAreInputErrors) {
  Project p;
  p.Write("pyproject.toml", "[[tool.dualtrack.experiments]]\nname = \"x\"\n");
  auto cfg = ReadProjectConfig(p.dir());
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.error().ToString().find("needs an entry"), std::string::npos);
  p.Write("pyproject.toml", "[[tool.dualtrack.experiments]]\nentry = 3\n");
  EXPECT_FALSE(ReadProjectConfig(p.dir()).ok());
  p.Write("pyproject.toml", "[tool.dualtrack\n");
  EXPECT_FALSE(ReadProjectConfig(p.dir()).ok());
  // A misspelt key is named, with the line, instead of being ignored.
  p.Write("pyproject.toml",
          "[[tool.dualtrack.experiments]]\nentry = \"train.py\"\ndevcie = \"--device\"\n");
  auto typo = ReadProjectConfig(p.dir());
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().ToString().find("#1 has no key 'devcie'"), std::string::npos)
      << typo.error().ToString();
  EXPECT_NE(typo.error().ToString().find(":3:"), std::string::npos) << typo.error().ToString();
}

TEST(VerdictExperimentsTest, TestFilesAreNeverEntries) {
  EXPECT_TRUE(IsTestFile("test_model.py"));
  EXPECT_TRUE(IsTestFile("model_test.py"));
  EXPECT_TRUE(IsTestFile("tests/helpers.py"));
  EXPECT_TRUE(IsTestFile("pkg/test/run.py"));
  EXPECT_TRUE(IsTestFile("conftest.py"));
  EXPECT_TRUE(IsTestFile("check.py",
                         "import unittest\nif __name__ == '__main__':\n"
                         "    unittest.main()\n"));
  EXPECT_FALSE(IsTestFile("train.py", kMain));
  EXPECT_FALSE(IsTestFile("contest.py"));
}

TEST(VerdictExperimentsTest, PicksWhatAUserWouldRun) {
  Project p;
  p.Write("train.py", kMain);
  p.Write("train_lora.py", kMain);
  p.Write("inference_demo.py", kMain);
  p.Write("generate.py", kMain);
  p.Write("model.py", "import torch\n");    // a module, not an entry
  p.Write("trainer.py", "import torch\n");  // no __main__
  p.Write("test_train.py", kMain);          // a test
  p.Write("eval_unit.py", "import unittest\nif __name__ == '__main__':\n    unittest.main()\n");
  p.Write("tools/finetune.py", kMain);     // named in the README
  p.Write("tests/train_smoke.py", kMain);  // named in the README, but a test
  p.Write("README.md",
          "Run:\n\n    python tools/finetune.py --lr 1e-4\n"
          "    torchrun --nproc_per_node 8 train.py\n"
          "    python -m pytest tests/train_smoke.py\n");
  p.Write("pyproject.toml",
          "[project]\nname = \"x\"\n[project.scripts]\nx-serve = \"pkg.serve:main\"\n");
  p.Write("pkg/serve.py", "def main():\n    pass\n");
  EXPECT_EQ(PickEntries(p.dir()),
            (std::vector<std::string>{"generate.py", "inference_demo.py", "pkg/serve.py",
                                      "tools/finetune.py", "train.py", "train_lora.py"}));
}

TEST(VerdictExperimentsTest, CommandsOfEveryTopLevelGuideButNoDataPreparation) {
  Project p;
  p.Write("main_pretrain.py", kMain);
  p.Write("main_finetune.py", kMain);
  p.Write("util/misc.py", kMain);
  p.Write("data/openwebtext/prepare.py", kMain);
  p.Write("download_weights.py", kMain);
  p.Write("PRETRAIN.md",
          "```\npython submitit_pretrain.py\npython main_pretrain.py --bs 64\n```\n");
  p.Write("FINETUNE.md", "torchrun --nproc_per_node=8 main_finetune.py --eval\n");
  p.Write("README.md",
          "First `python data/openwebtext/prepare.py`, then `python download_weights.py`.\n");
  p.Write("docs/GUIDE.md", "python util/misc.py\n");  // Not top-level: not read.
  EXPECT_EQ(PickEntries(p.dir()),
            (std::vector<std::string>{"main_finetune.py", "main_pretrain.py"}));
}

TEST(VerdictExperimentsTest, RunGoesToTheExperimentItStarts) {
  Project p;
  p.Write("train.py", kMain);
  p.Write("infer.py", kMain);
  ProjectConfig cfg;
  auto exps = ResolveExperiments(p.dir(), cfg, {}, std::string("train.py --device cpu"));
  ASSERT_TRUE(exps.ok());
  ASSERT_EQ(exps->size(), 2u);
  EXPECT_EQ((*exps)[0].entry, "infer.py");
  EXPECT_FALSE((*exps)[0].run.has_value());
  EXPECT_EQ((*exps)[1].entry, "train.py");
  EXPECT_EQ((*exps)[1].run, std::optional<std::string>("train.py --device cpu"));
  EXPECT_EQ((*exps)[1].source, "picked");

  // --entry is repeatable and wins over picking; a run of another script is its own experiment.
  exps = ResolveExperiments(p.dir(), cfg, {"./infer.py"}, std::string("python3 other.py"));
  ASSERT_TRUE(exps.ok());
  ASSERT_EQ(exps->size(), 2u);
  EXPECT_EQ((*exps)[0].entry, "infer.py");
  EXPECT_EQ((*exps)[0].source, "--entry");
  EXPECT_EQ((*exps)[1].name, "other");
  EXPECT_EQ((*exps)[1].source, "--run");
  EXPECT_FALSE(ResolveExperiments(p.dir(), cfg, {"missing.py"}, std::nullopt).ok());

  // Declared experiments come first; --run replaces the declared run of its experiment.
  cfg.experiments.push_back(
      {"fine-tuning", "train.py", "train.py --steps 1", "--device", "declared", std::nullopt});
  exps = ResolveExperiments(p.dir(), cfg, {}, std::string("train.py --portable"));
  ASSERT_TRUE(exps.ok());
  ASSERT_EQ(exps->size(), 1u);
  EXPECT_EQ((*exps)[0].name, "fine-tuning");
  EXPECT_EQ((*exps)[0].run, std::optional<std::string>("train.py --portable"));

  // Nothing to pick: one experiment covers the whole project.
  Project empty;
  exps = ResolveExperiments(empty.dir(), ProjectConfig{}, {}, std::nullopt);
  ASSERT_TRUE(exps.ok());
  ASSERT_EQ(exps->size(), 1u);
  EXPECT_EQ((*exps)[0].entry, "");
}

TEST(VerdictExperimentsTest, ShellEntryIsJudgedThroughItsPythonProgram) {
  Project p;
  p.Write("train.py", kMain);
  p.Write("tools/eval.py", kMain);
  p.Write("bench/run.sh",
          "#!/bin/bash\n# python notes.py in a comment is no command\n"
          "bin=\"python train.py\"\necho run\n$bin --lr=0.1 \\\n  --steps 10 2>&1 | tee log\n");
  p.Write("bench/eval.sh", "cd ..\nCUDA_VISIBLE_DEVICES=0 python3 -u ../tools/eval.py --x\n");
  p.Write("bench/mod.sh", "torchrun --nproc_per_node 2 -m tools.eval --y\n");
  p.Write("bench/none.sh", "echo nothing to run\n");
  auto exps = ResolveExperiments(p.dir(), {},
                                 {"bench/run.sh", "bench/eval.sh", "bench/mod.sh", "bench/none.sh"},
                                 std::nullopt);
  ASSERT_TRUE(exps.ok());
  ASSERT_EQ(exps->size(), 4u);
  EXPECT_EQ((*exps)[0].name, "run");
  EXPECT_EQ((*exps)[0].entry, "train.py");
  EXPECT_FALSE((*exps)[0].run.has_value());  // Read, never run: the project's code is untrusted.
  EXPECT_EQ((*exps)[1].entry, "tools/eval.py");  // Resolved from the script's folder.
  EXPECT_EQ((*exps)[2].entry, "tools/eval.py");  // `-m tools.eval`.
  EXPECT_EQ((*exps)[2].name, "mod");
  EXPECT_EQ((*exps)[3].entry, "bench/none.sh");  // No Python program: the script itself.
}

TEST(VerdictExperimentsTest, MacCommandNamesTheRealEntryOnMps) {
  EXPECT_EQ(MacCommand({"t", "train.py", "train.py --device cpu --steps 2", "", "", std::nullopt}),
            "python train.py --device mps --steps 2");
  EXPECT_EQ(MacCommand({"t", "train.py", "python3 train.py --device=cuda", "", "", std::nullopt}),
            "python3 train.py --device=mps");
  EXPECT_EQ(MacCommand({"i", "infer.py", std::nullopt, "--device", "", std::nullopt}),
            "python infer.py --device mps");
  EXPECT_EQ(MacCommand({"i", "infer.py", std::nullopt, "--accelerator mps", "", std::nullopt}),
            "python infer.py --accelerator mps");
  EXPECT_EQ(MacCommand({"g", "gen.py", std::nullopt, "", "", std::nullopt}), "python gen.py");
}

TEST(VerdictExperimentsTest, SelectAndIgnoreCodesSplitOnCommas) {
  EXPECT_EQ(SplitCodes({"DT1, DT203", "DT4"}), (std::vector<std::string>{"DT1", "DT203", "DT4"}));
  EXPECT_TRUE(Selected("DT101", {}));
  EXPECT_TRUE(Selected("DT101", {"DT1"}));
  EXPECT_FALSE(Selected("DT203", {"DT1", "DT4"}));
}

}  // namespace
}  // namespace dt::verdict
