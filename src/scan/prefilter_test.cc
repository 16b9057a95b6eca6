#include "scan/prefilter.h"

#include <gtest/gtest.h>

#include <random>

namespace dt::scan {
namespace {

bool NaiveMatches(const std::vector<std::string>& needles, std::string text) {
  auto lower = [](std::string s) {
    for (char& c : s)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    return s;
  };
  text = lower(text);
  for (const auto& n : needles)
    if (n.size() >= 2 && text.find(lower(n)) != std::string::npos) return true;
  return false;
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

// The skip table must never jump over an occurrence: compare with a plain search on random text
// over a small alphabet (so needles and near misses are frequent).
TEST(ScanPrefilterTest, AgreesWithPlainSearchOnRandomText) {
  std::mt19937 rng(7);
  const std::string alphabet = "cudaCUDnl<.tor";
  for (const std::vector<std::string>& needles :
       {std::vector<std::string>{"cuda", "nccl", "<<<"}, std::vector<std::string>{"cu", "dn"},
        std::vector<std::string>{"cudnn", "torch.", "a"}}) {
    Prefilter f(needles);
    for (int round = 0; round < 3000; ++round) {
      std::string text(rng() % 40, ' ');
      for (char& c : text) c = alphabet[rng() % alphabet.size()];
      ASSERT_EQ(f.Matches(text), NaiveMatches(needles, text)) << text;
    }
  }
}

}  // namespace
}  // namespace dt::scan
