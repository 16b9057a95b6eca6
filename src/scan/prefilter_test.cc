#include "scan/prefilter.h"

#include <gtest/gtest.h>

#include <random>

namespace dt::scan {
namespace {

std::string Lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  return s;
}

bool NaiveMatches(const std::vector<std::string>& needles, std::string text) {
  text = Lower(text);
  for (const auto& n : needles)
    if (n.size() >= 2 && text.find(Lower(n)) != std::string::npos) return true;
  return false;
}

// Every start position with the end of the shortest needle there, by brute force.
std::vector<std::pair<std::size_t, std::size_t>> NaiveFindAll(
    const std::vector<std::string>& needles, std::string text) {
  text = Lower(text);
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    std::size_t best = 0;
    for (const auto& n : needles) {
      if (n.size() < 2 || text.compare(i, n.size(), Lower(n)) != 0) continue;
      if (best == 0 || i + n.size() < best) best = i + n.size();
    }
    if (best != 0) out.emplace_back(i, best);
  }
  return out;
}

std::vector<std::pair<std::size_t, std::size_t>> Pairs(const std::vector<Prefilter::Match>& m) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (const auto& x : m) out.emplace_back(x.start, x.end);
  return out;
}

TEST(ScanPrefilterTest, FindsNeedlesCaseInsensitivelyAnywhere) {
  Prefilter f({"cuda", "nccl", "<<<", "torch.float64"});
  EXPECT_TRUE(f.Matches("x = torch.CUDA.is_available()"));
  EXPECT_TRUE(f.Matches("cuda"));
  EXPECT_TRUE(f.Matches("kernel<<<1, 2>>>"));
  EXPECT_TRUE(f.Matches("a = TORCH.Float64"));
  EXPECT_FALSE(f.Matches("cud"));
  EXPECT_FALSE(f.Matches("torch.float32 << 1"));
  EXPECT_FALSE(f.Matches(""));
  EXPECT_TRUE(Prefilter().Matches("anything"));
}

// The vector path (16 positions at a time, a scalar tail) and the byte-at-a-time path must both
// find exactly what a plain search finds, at every position including the block edges: random
// text over a small alphabet (so needles and near misses are frequent), lengths across several
// vector blocks, and needle sets larger than the eight buckets (so buckets share needles).
TEST(ScanPrefilterTest, AgreesWithPlainSearchOnRandomText) {
  std::mt19937 rng(7);
  const std::string alphabet = "cudaCUDnl<.tor_64";
  for (const std::vector<std::string>& needles :
       {std::vector<std::string>{"cuda", "nccl", "<<<"}, std::vector<std::string>{"cu", "dn"},
        std::vector<std::string>{"cudnn", "torch.", "a"}, std::vector<std::string>{"cuda"},
        std::vector<std::string>{"tor_"}, std::vector<std::string>{"<."},
        std::vector<std::string>{"cUdA", "CUDA"},
        std::vector<std::string>{"cud", "nccl", "float64", "double", "multi_margin", "gencode",
                                 "compute_", "sm_", "cudnn", "torch.", "_6", "tor_", "Lun", "da4",
                                 "<<<", "cU", "oooo", "rc"}}) {
    Prefilter f(needles);
    for (int round = 0; round < 3000; ++round) {
      std::string text(rng() % 80, ' ');
      for (char& c : text) c = alphabet[rng() % alphabet.size()];
      bool expect = NaiveMatches(needles, text);
      ASSERT_EQ(f.Matches(text), expect) << text;
      ASSERT_EQ(f.MatchesScalar(text), expect) << text;
      auto all = NaiveFindAll(needles, text);
      ASSERT_EQ(Pairs(f.FindAll(text)), all) << text;
      ASSERT_EQ(Pairs(f.FindAllScalar(text)), all) << text;
    }
  }
}

// Any byte values, needles with punctuation, digits and bytes that `| 0x20` folds onto others
// ('@' and '`', '_' and DEL, '[' and '{'): a plain search decides.
TEST(ScanPrefilterTest, AgreesWithPlainSearchOnRandomBytes) {
  std::mt19937 rng(11);
  const std::vector<std::string> all_needles = {"@x",  "`Y",       "a_",   "_\x7f", "[{",
                                                "Zz9", "\xff\xfe", "cuda", "<<<",   "..."};
  // All together (the fingerprint tables), and each alone (the first-and-last-byte search).
  std::vector<std::vector<std::string>> sets = {all_needles};
  for (const auto& n : all_needles) sets.push_back({n});
  for (const auto& needles : sets) {
    Prefilter f(needles);
    for (int round = 0; round < 3000; ++round) {
      std::string text(rng() % 120, ' ');
      for (char& c : text) {
        // Mostly bytes near the needles' own, so that matches happen.
        static const std::string near =
            "@x`Yya_\x7f"
            "[{Zz9\xff\xfe"
            "cudaCUDA<.";
        c = rng() % 4 == 0 ? static_cast<char>(rng() % 256) : near[rng() % near.size()];
      }
      auto all = NaiveFindAll(needles, text);
      ASSERT_EQ(Pairs(f.FindAll(text)), all);
      ASSERT_EQ(Pairs(f.FindAllScalar(text)), all);
      ASSERT_EQ(f.Matches(text), !all.empty());
    }
  }
}

// Long texts: many vector blocks, more candidates than the kernel's buffer holds at once, and a
// needle as the very last bytes.
TEST(ScanPrefilterTest, FindsEveryOccurrenceInLongText) {
  Prefilter f({"cud", "nccl"});
  std::string text;
  std::vector<std::pair<std::size_t, std::size_t>> expect;
  for (int i = 0; i < 500; ++i) {
    text += "xx";
    expect.emplace_back(text.size(), text.size() + 3);
    text += "CUD";
  }
  text += std::string(1000, 'y') + "ncc";
  EXPECT_EQ(Pairs(f.FindAll(text)), expect);
  text += "L";
  expect.emplace_back(text.size() - 4, text.size());
  EXPECT_EQ(Pairs(f.FindAll(text)), expect);
  EXPECT_EQ(Pairs(f.FindAllScalar(text)), expect);
  EXPECT_FALSE(f.Matches(std::string(100000, 'c') + "u"));
  EXPECT_TRUE(f.Matches(std::string(100000, 'c') + "ud"));
}

// One needle is searched by its first and last bytes: every occurrence, overlapping ones too, at
// every distance from the vector blocks' edges and as the very last bytes.
TEST(ScanPrefilterTest, SingleNeedleEveryOccurrence) {
  Prefilter f({"torch.ops."});
  for (std::size_t len = 10; len < 100; ++len)
    for (std::size_t at = 0; at + 10 <= len; ++at) {
      std::string text(len, 't');
      text.replace(at, 10, at % 2 == 0 ? "torch.ops." : "TORCH.OPS.");
      std::vector<std::pair<std::size_t, std::size_t>> expect = {{at, at + 10}};
      ASSERT_EQ(Pairs(f.FindAll(text)), expect) << len << " " << at;
      ASSERT_EQ(Pairs(f.FindAllScalar(text)), expect) << len << " " << at;
      text[at + 9] = ',';
      ASSERT_FALSE(f.Matches(text)) << len << " " << at;
    }
  Prefilter run({"aa"});
  std::vector<std::pair<std::size_t, std::size_t>> expect;
  for (std::size_t i = 0; i + 1 < 70; ++i) expect.emplace_back(i, i + 2);
  EXPECT_EQ(Pairs(run.FindAll(std::string(70, 'A'))), expect);
  EXPECT_EQ(Pairs(run.FindAllScalar(std::string(70, 'a'))), expect);
}

// The exact search agrees with std::string::find from every start: case matters, any bytes.
TEST(ScanPrefilterTest, FindLiteralAgreesWithFind) {
  std::mt19937 rng(5);
  const std::string near = "__main__MAIN_x\n\xff";
  for (const std::string needle : {"__main__", "_m", "x", "\xff_", "import"}) {
    for (int round = 0; round < 2000; ++round) {
      std::string text(rng() % 100, ' ');
      for (char& c : text) c = near[rng() % near.size()];
      if (round % 7 == 0 && text.size() >= needle.size())
        text.replace(rng() % (text.size() - needle.size() + 1), needle.size(), needle);
      for (std::size_t from = 0; from <= text.size() + 1; ++from)
        ASSERT_EQ(FindLiteral(text, needle, from), text.find(needle, from)) << text << " " << from;
    }
  }
  EXPECT_EQ(FindLiteral("abc", ""), 0u);
  EXPECT_EQ(FindLiteral("", "a"), std::string::npos);
}

// Bytes that `| 0x20` folds onto needle bytes (`_` | 0x20 is DEL, `@` is backquote) are near
// misses the fingerprint lets through; verification must reject them.
TEST(ScanPrefilterTest, FoldingOnlyLetters) {
  Prefilter f({"sm_", "@x"});
  std::string pad(40, ' ');
  EXPECT_TRUE(f.Matches(pad + "arch=SM_80" + pad));
  EXPECT_FALSE(f.Matches(pad + "SM\x7f" + pad));
  EXPECT_FALSE(f.Matches(pad + "`x" + pad));
  EXPECT_TRUE(f.Matches(pad + "@X" + pad));
  EXPECT_FALSE(f.MatchesScalar(pad + "sm\x7f" + pad));
}

TEST(ScanPrefilterTest, CaseInsensitiveMultiNeedle) {
  Prefilter p({"cuda", "nccl", "__global__"});
  EXPECT_TRUE(p.Matches("import torch; torch.CUDA"));
  EXPECT_TRUE(p.Matches("xx__global__"));
  EXPECT_FALSE(p.Matches("import numpy as np\nnp.zeros(3)\n"));
  EXPECT_FALSE(p.Matches("cud"));
  EXPECT_TRUE(p.Matches("NCcl"));
}

}  // namespace
}  // namespace dt::scan
