#include "scan/admission.h"

#include <gtest/gtest.h>

#include <random>

#include "scan/test_registry.h"

namespace dt::scan {
namespace {

bool Admits(const FileAdmission& a, std::string_view text) {
  bool has_main = false;
  return a.Admits(text, has_main);
}

TEST(FileAdmission, AWordAloneOrWithItsCoWords) {
  FileAdmission a({{"cud", {}}, {"compile", {{"torch"}}}, {"optim", {{"paged_"}, {"8bit"}}}}, true);
  EXPECT_TRUE(Admits(a, "x = y.cuda()\n"));
  EXPECT_TRUE(Admits(a, "X = 'CUDA'\n"));  // Case-insensitive, like the statement prefilter.
  EXPECT_FALSE(Admits(a, "import re\np = re.compile('a+')\n"));
  EXPECT_TRUE(Admits(a, "import torch\nm = torch.compile(m)\n"));
  EXPECT_TRUE(Admits(a, "m = compile(m)\nfrom torch import nn\n"));  // Co-word after the word.
  EXPECT_FALSE(Admits(a, "optimizer = make_optimizer()\n"));
  EXPECT_TRUE(Admits(a, "args = Args(optim='adamw_8bit')\n"));  // One alternative is enough.
  EXPECT_FALSE(Admits(a, "nothing here\n"));
}

TEST(FileAdmission, ALongerWordBehindAConditionalPrefix) {
  // The search reports the shortest needle at a position: "compile_cuda_kernels" starts with the
  // conditional "compile", and must still admit alone.
  FileAdmission a({{"compile", {{"torch"}}}, {"compile_cuda_kernels", {}}}, false);
  EXPECT_TRUE(Admits(a, "compile_cuda_kernels()\n"));
  EXPECT_FALSE(Admits(a, "compile_other()\n"));
}

TEST(FileAdmission, AWholeNameWordCountsOnlyAsAName) {
  FileTrigger compile{"compile", {{"torch"}}, true};
  FileTrigger cupy{"cupy", {}, true};
  FileAdmission a({compile, cupy, {"cud", {}, false}}, false);
  const std::pair<std::string_view, bool> cases[] = {
      // torch internals: `should_compile_graph` and `CompilePackage` are other names.
      {"import torch\nif self.should_compile_graph():\n    CompilePackage()\n", false},
      {"import torch\nm = torch.compile(m)\n", true},
      {"import torch\nf = getattr(torch, 'compile')\n", true},
      {"torch.compile", true},  // At the end of the text.
      {"cupy", true},           // The whole text.
      {"import cupy_backends\nwarp_cupy = 1\n", false},
      {"import numpy, cupy as cp\n", true},
      {"import cupy.cuda\n", true},
      // A byte outside ASCII ends a name here: at worst a file is analysed for nothing.
      {"x = \"\xc3\xa9"
       "cupy\"\n",
       true},
      // A word found inside longer names still is: `cud` of `is_cuda`.
      {"ok = x.is_cuda\n", true},
  };
  for (const auto& [text, admitted] : cases) EXPECT_EQ(Admits(a, text), admitted) << text;
}

TEST(FileAdmission, MainIsSeenWhenNothingAdmits) {
  FileAdmission a({{"cud", {}}}, true);
  bool has_main = false;
  EXPECT_FALSE(a.Admits("def f():\n    pass\nif __name__ == '__main__':\n    f()\n", has_main));
  EXPECT_TRUE(has_main);
  EXPECT_FALSE(a.Admits("X = '__MAIN__'\n", has_main));  // Neither the module test nor a word.
  EXPECT_FALSE(has_main);
}

// Admission agrees with its definition, by brute force, on random texts over the words' letters.
TEST(FileAdmission, AgreesWithBruteForce) {
  const std::vector<FileTrigger> words = {{"gpu", {}},
                                          {"jit", {{"tri"}, {"numba", "cud"}}, true},
                                          {"double", {{"torch"}}, true},
                                          {"tor", {}},
                                          {"torch", {}, true}};
  FileAdmission a(words, false);
  std::mt19937 rng(7);
  const std::string alphabet = "gpujitrnumbacdoletTORCH ._\n";
  auto lower_of = [](std::string text) {
    for (char& c : text)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    return text;
  };
  auto holds = [&](const std::string& text, const std::string& w) {
    return lower_of(text).find(w) != std::string::npos;
  };
  // As a name: the letters around it (a-z after folding, '_') are not part of it.
  auto holds_name = [&](const std::string& text, const std::string& w) {
    const std::string lower = lower_of(text);
    auto name_byte = [](char c) { return (c >= 'a' && c <= 'z') || c == '_'; };
    for (auto at = lower.find(w); at != std::string::npos; at = lower.find(w, at + 1))
      if ((at == 0 || !name_byte(lower[at - 1])) &&
          (at + w.size() == lower.size() || !name_byte(lower[at + w.size()])))
        return true;
    return false;
  };
  for (int round = 0; round < 3000; ++round) {
    std::string text(static_cast<std::size_t>(rng() % 40), ' ');
    for (char& c : text) c = alphabet[rng() % alphabet.size()];
    bool expect = false;
    for (const auto& w : words) {
      if (!(w.whole ? holds_name(text, w.word) : holds(text, w.word))) continue;
      bool ok = w.needs.empty();
      for (const auto& alt : w.needs) {
        bool all = true;
        for (const auto& c : alt) all = all && holds(text, c);
        ok = ok || all;
      }
      expect = expect || ok;
    }
    EXPECT_EQ(Admits(a, text), expect) << text;
  }
}

TEST(FileAdmission, TheRegistrysWords) {
  const auto& t = testing::Reg().FileTriggers();
  auto find = [&](std::string_view w) -> const FileTrigger* {
    for (const auto& f : t)
      if (f.word == w) return &f;
    return nullptr;
  };
  ASSERT_NE(find("cud"), nullptr);
  EXPECT_TRUE(find("cud")->needs.empty());
  // torch.compile's last name needs its module's name in the file.
  ASSERT_NE(find("compile"), nullptr);
  EXPECT_EQ(find("compile")->needs, (std::vector<std::vector<std::string>>{{"torch"}}));
  // A keyword rule needs the literal part of its value: `optim="paged_adamw_32bit"`.
  ASSERT_NE(find("optim"), nullptr);
  EXPECT_EQ(find("optim")->needs.size(), 3u);
  // Guard words make no finding of their own: `torch.version.hip`, the launch-mode names.
  EXPECT_EQ(find("hip"), nullptr);
  EXPECT_EQ(find("world_size"), nullptr);
  // `triton.jit`'s `jit` needs the name `triton`, itself a word that admits alone.
  EXPECT_EQ(find("jit"), nullptr);
  ASSERT_NE(find("triton"), nullptr);
  // Names count whole, other words anywhere: `cud` of `is_cuda`, a string rule's value prefix.
  EXPECT_TRUE(find("compile")->whole);
  EXPECT_TRUE(find("triton")->whole);
  EXPECT_TRUE(find("nccl")->whole);
  EXPECT_FALSE(find("cud")->whole);
  ASSERT_NE(find("paged_adamw"), nullptr);
  EXPECT_FALSE(find("paged_adamw")->whole);
  // `bitsandbytes` as a name is not in `BitsAndBytesConfig`: transformers' config is its own word.
  ASSERT_NE(find("bitsandbytesconfig"), nullptr);
  EXPECT_TRUE(find("bitsandbytes")->whole);
  // The statement prefilter still knows the guard words.
  const auto& s = testing::Reg().PythonTriggers();
  EXPECT_NE(std::find(s.begin(), s.end(), "hip"), s.end());
}

}  // namespace
}  // namespace dt::scan
