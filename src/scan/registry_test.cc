#include "scan/registry.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "scan/python_scanner.h"
#include "scan/scan.h"
#include "scan/test_registry.h"

namespace dt::scan {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path DataDir() {
  const char* src = std::getenv("DUALTRACK_TEST_SOURCE_DIR");
  return fs::path(src ? src : DUALTRACK_TEST_SOURCE_DIR) / "data" / "scan";
}

json ReadJson(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

void WriteJson(const fs::path& p, const json& j) { std::ofstream(p) << j.dump(1); }

// A copy of the shipped registry in a fresh folder, for a test to edit.
class RegistryCopy : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dt-registry-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::copy_file(DataDir() / "rules.json", dir_ / "rules.json");
    fs::copy_file(DataDir() / "libraries.json", dir_ / "libraries.json");
    rules_ = ReadJson(dir_ / "rules.json");
    libs_ = ReadJson(dir_ / "libraries.json");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Save() {
    WriteJson(dir_ / "rules.json", rules_);
    WriteJson(dir_ / "libraries.json", libs_);
  }
  std::vector<Finding> ScanText(const std::string& name, const std::string& text) {
    fs::path tree = dir_ / "tree";
    fs::create_directories(tree);
    std::ofstream(tree / name) << text;
    ScanOptions opt;
    opt.paths = {tree};
    opt.data_dir = dir_;
    opt.threads = 1;
    auto r = Scan(opt);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return r.ok() ? r->findings : std::vector<Finding>{};
  }
  fs::path dir_;
  json rules_;
  json libs_;
};

TEST_F(RegistryCopy, ShippedDataLoads) {
  auto reg = Registry::Load(dir_);
  ASSERT_TRUE(reg.ok()) << reg.error().message;
  EXPECT_TRUE(reg->IsRetired("DT109"));
  EXPECT_FALSE(reg->IsRetired("DT101"));
}

TEST_F(RegistryCopy, DetectorCodeMissingFromTheDataFailsTheLoad) {
  auto& rules = rules_["rules"];
  for (auto it = rules.begin(); it != rules.end(); ++it)
    if ((*it)["code"] == "DT101") {
      rules.erase(it);
      break;
    }
  Save();
  auto reg = Registry::Load(dir_);
  ASSERT_FALSE(reg.ok());
  EXPECT_NE(reg.error().message.find("DT101"), std::string::npos) << reg.error().message;
  EXPECT_NE(reg.error().message.find("emitted by a detector"), std::string::npos);
}

TEST_F(RegistryCopy, RuleThatNothingEmitsFailsTheLoad) {
  rules_["rules"].push_back({{"code", "DT199"},
                             {"class", "device"},
                             {"severity", "fixable"},
                             {"title", "Nothing finds this"},
                             {"explanation", "x"}});
  Save();
  auto reg = Registry::Load(dir_);
  ASSERT_FALSE(reg.ok());
  EXPECT_NE(reg.error().message.find("DT199"), std::string::npos) << reg.error().message;
  // Retired, it is kept for old suppressions and loads.
  rules_["rules"].back()["retired"] = true;
  Save();
  EXPECT_TRUE(Registry::Load(dir_).ok());
}

TEST_F(RegistryCopy, RuleNamedOnlyByDataLoads) {
  rules_["rules"].push_back({{"code", "DT199"},
                             {"class", "library"},
                             {"severity", "replace"},
                             {"title", "Fancy op"},
                             {"explanation", "x"}});
  rules_["python_apis"].push_back({{"name", "torch.special.zeta_fancy"}, {"code", "DT199"}});
  Save();
  EXPECT_TRUE(Registry::Load(dir_).ok());
}

TEST_F(RegistryCopy, ApiAddedToTheDataAloneIsFound) {
  // No trigger word of the shipped data occurs in this file: only the new entry's name does.
  rules_["python_apis"].push_back({{"name", "torch.special.zeta_fancy"}, {"code", "DT203"}});
  Save();
  auto found = ScanText("m.py", "import torch\n\ny = torch.special.zeta_fancy(torch.ones(2))\n");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].code, "DT203");
  EXPECT_EQ(found[0].line, 3);
}

TEST_F(RegistryCopy, LibraryAddedToTheKnowledgeBaseAloneIsFound) {
  libs_["libraries"].push_back({{"name", "Fancy kernels"},
                                {"modules", {"fancy_kernels"}},
                                {"packages", {"fancy-kernels"}},
                                {"alternative", "plain PyTorch"}});
  Save();
  auto found = ScanText("m.py", "import fancy_kernels as fk\n\nfk.run(1)\n");
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].code, "DT201");
  EXPECT_EQ(found[1].code, "DT202");
  EXPECT_EQ(found[1].replacement, "plain PyTorch");
  auto reqs = ScanText("requirements.txt", "fancy-kernels==1.0\n");
  bool env = false;
  for (const auto& f : reqs) env |= f.code == "DT403" && f.file == "requirements.txt";
  EXPECT_TRUE(env);
}

TEST_F(RegistryCopy, KeywordAddedToTheDataAloneIsFound) {
  rules_["python_keywords"].push_back(
      {{"keyword", "use_fancy_kernels"}, {"value", "True"}, {"code", "DT206"}});
  Save();
  auto found = ScanText("m.py",
                        "import model\nm = model.build(use_fancy_kernels=True)\n"
                        "n = model.build(use_fancy_kernels=False)\n");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].code, "DT206");
  EXPECT_EQ(found[0].line, 2);
}

// An API whose call is portable when it passes an argument (`unless_argument`), reported only in
// a project that holds a text (`only_with`), found by a trigger of its own: all from the data.
TEST_F(RegistryCopy, ArgumentConditionsAndProjectConditionsComeFromTheData) {
  rules_["python_apis"].push_back({{"name", "torch.special.fancy_open"},
                                   {"code", "DT203"},
                                   {"unless_argument", "safe"},
                                   {"unless_position", 1},
                                   {"trigger", "fancy_open"},
                                   {"only_with", "fancy_close("}});
  for (auto& api : rules_["python_apis"])  // The condition's code must be its API's alone.
    if (api["code"] == "DT203" && api["name"] != "torch.special.fancy_open") api["code"] = "DT204";
  Save();
  const std::string calls =
      "import torch\n"
      "a = torch.special.fancy_open('x')\n"
      "b = torch.special.fancy_open('x', True)\n"
      "c = torch.special.fancy_open('x', safe=True)\n"
      "d = torch.special.fancy_open('x', **opts)\n"
      "e = torch.special.fancy_open\n";
  auto without = ScanText("m.py", calls);
  EXPECT_TRUE(without.empty()) << without.size();  // No file of the project holds fancy_close(.
  auto with = ScanText("m.py", calls + "torch.special.fancy_close(a)\n");
  ASSERT_EQ(with.size(), 1u);
  EXPECT_EQ(with[0].code, "DT203");
  EXPECT_EQ(with[0].line, 2);
}

TEST_F(RegistryCopy, AProjectConditionOnASharedCodeFailsTheLoad) {
  rules_["python_apis"].push_back({{"name", "torch.special.fancy_open"},
                                   {"code", "DT204"},  // Also torch.float64's.
                                   {"only_with", "fancy_close("}});
  Save();
  auto reg = Registry::Load(dir_);
  ASSERT_FALSE(reg.ok());
  EXPECT_NE(reg.error().message.find("only_with"), std::string::npos) << reg.error().message;
}

TEST(RegistryTriggers, DerivedFromTheData) {
  auto reg = Registry::Load(DataDir());
  ASSERT_TRUE(reg.ok());
  const auto& t = reg->PythonTriggers();
  auto has = [&](std::string_view w) { return std::find(t.begin(), t.end(), w) != t.end(); };
  EXPECT_TRUE(has("cud"));                 // Every torch.cuda API.
  EXPECT_TRUE(has("BitsAndBytesConfig"));  // An API of another package.
  EXPECT_TRUE(has("load_in_8bit"));        // A keyword rule.
  EXPECT_TRUE(has("xformers"));            // A library module.
  EXPECT_FALSE(has("device"));             // Not torch.cuda.device's last name.
  EXPECT_FALSE(has("cudnn"));              // Covered by "cud".
  EXPECT_TRUE(has(".to("));                // `.to(0)`: a device index with no other word.
  EXPECT_TRUE(has("torch.load"));          // An entry's own trigger, not its last name ...
  EXPECT_FALSE(has("load"));               // ... which most files write.
}

TEST(ScanRegistryTest, LibrariesAndPackages) {
  EXPECT_NE(testing::Reg().LibraryForModule("flash_attn.flash_attn_interface"), nullptr);
  EXPECT_NE(testing::Reg().LibraryForModule("numba.cuda"), nullptr);
  EXPECT_EQ(testing::Reg().LibraryForModule("numba"), nullptr);
  EXPECT_NE(testing::Reg().LibraryForPackage("CuPy_CUDA12x"), nullptr);
  EXPECT_NE(testing::Reg().LibraryForPackage("flash_attn"), nullptr);
  EXPECT_EQ(testing::Reg().LibraryForPackage("numpy"), nullptr);
  for (const auto& r : testing::Reg().rules()) {
    EXPECT_EQ(r.code.size(), 5u);
    EXPECT_FALSE(r.explanation.empty()) << r.code;
  }
}

TEST(ScanRegistryTest, LookupsByPrefixAndInAnyCase) {
  const Registry& reg = testing::Reg();
  // The longest registered prefix of a dotted name, found from views of it.
  const PythonApi* api = reg.MatchApi("torch.cuda.synchronize.extra");
  ASSERT_NE(api, nullptr);
  EXPECT_EQ(api->name, "torch.cuda.synchronize");
  EXPECT_EQ(reg.MatchApi("torch.cud"), nullptr);
  EXPECT_EQ(reg.MatchApi(""), nullptr);
  // Launcher names in any case; near misses of the same length and ends are not.
  const std::pair<std::string, bool> names[] = {
      {"local_rank", true},         {"LOCAL_RANK", true},  {"World_Size", true},
      {"local_ranx", false},        {"lokal_rank", false}, {"local_rank_", false},
      {std::string(80, 'w'), false}};
  for (const auto& [name, launch] : names) EXPECT_EQ(reg.IsLaunchGuardName(name), launch) << name;
}

}  // namespace
}  // namespace dt::scan
