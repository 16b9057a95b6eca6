// dualtrack_compare_bench A B [--threads N] [--rounds R]: times `dualtrack compare`'s statistics
// against a plain multi-threaded read of the same bytes (the memory-bandwidth ceiling), in the same
// process, and samples the anonymous resident memory. Prints one JSON row per round. A benchmark
// driver for bench/compare/bench.py, not part of the product: it links the product's library.
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "compare/compare.h"
#include "compare/tensor.h"
#include "util/parallel.h"

namespace {

using dt::compare::TensorInfo;

// Anonymous (heap and stack) resident memory in bytes, or -1 where /proc is not available: file
// pages of the memory maps are left out, since they are the page cache, not the heap.
std::int64_t RssAnon() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("RssAnon:", 0) == 0) return std::stoll(line.substr(8)) * 1024;
  return -1;
}

// CPU seconds (user + system) this process has used, all threads together.
double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

// Sums both tensors' bytes as 64-bit words on `threads` threads: every byte read once, as the
// statistics read them, with next to no arithmetic. The sum keeps the reads from being optimised
// away.
std::uint64_t ReadCeiling(const TensorInfo& a, const TensorInfo& b, unsigned threads) {
  const std::uint64_t na = dt::compare::StorageBytes(a), nb = dt::compare::StorageBytes(b);
  std::vector<std::uint64_t> sums(threads, 0);
  dt::ParallelFor(threads, threads, [&](std::size_t t, unsigned) {
    std::uint64_t s = 0;
    for (const auto& [p, len] : {std::pair{a.storage.data, na}, std::pair{b.storage.data, nb}}) {
      const std::uint64_t words = len / 8;
      const std::uint64_t lo = words * t / threads, hi = words * (t + 1) / threads;
      std::uint64_t x0 = 0, x1 = 0, x2 = 0, x3 = 0;
      std::uint64_t i = lo;
      for (; i + 4 <= hi; i += 4) {
        std::uint64_t w[4];
        std::memcpy(w, p + i * 8, 32);
        x0 += w[0];
        x1 += w[1];
        x2 += w[2];
        x3 += w[3];
      }
      for (; i < hi; ++i) {
        std::uint64_t w;
        std::memcpy(&w, p + i * 8, 8);
        x0 += w;
      }
      s += x0 + x1 + x2 + x3;
    }
    sums[t] = s;
  });
  std::uint64_t total = 0;
  for (auto v : sums) total += v;
  return total;
}

int Fail(const std::string& what) {
  std::cerr << "dualtrack_compare_bench: " << what << "\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using Clock = std::chrono::steady_clock;
  dt::compare::CompareOptions o;
  int rounds = 3;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--threads" || arg == "--rounds") && i + 1 < argc) {
      (arg == "--threads" ? o.threads : rounds) = std::atoi(argv[++i]);
    } else {
      files.push_back(arg);
    }
  }
  if (files.size() != 2 || o.threads < 1 || rounds < 1)
    return Fail("usage: dualtrack_compare_bench A B [--threads N] [--rounds R]");
  o.a = files[0];
  o.b = files[1];
  std::atomic<bool> done{false};
  std::atomic<std::int64_t> peak{RssAnon()};
  dt::ScopedThreads sampler(
      1,
      [&](unsigned) {
        while (!done) {
          const std::int64_t v = RssAnon();
          if (v > peak) peak = v;
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
      },
      [&] { done = true; });
  nlohmann::json out = nlohmann::json::array();
  for (int round = 0; round < rounds; ++round) {
    nlohmann::json row;
    {
      auto fa = dt::compare::OpenTensorFile(o.a);
      if (!fa) return Fail(fa.error().ToString());
      auto fb = dt::compare::OpenTensorFile(o.b);
      if (!fb) return Fail(fb.error().ToString());
      std::uint64_t bytes = 0, sum = 0;
      const double c0 = CpuSeconds();
      const auto t0 = Clock::now();
      for (const TensorInfo& ta : fa->tensors) {
        for (const TensorInfo& tb : fb->tensors) {
          const bool pair =
              ta.name == tb.name || (fa->tensors.size() == 1 && fb->tensors.size() == 1);
          if (!pair || ta.storage.is_deflated() || tb.storage.is_deflated()) continue;
          sum += ReadCeiling(ta, tb, static_cast<unsigned>(o.threads));
          bytes += dt::compare::StorageBytes(ta) + dt::compare::StorageBytes(tb);
        }
      }
      row["ceiling_s"] = std::chrono::duration<double>(Clock::now() - t0).count();
      row["ceiling_cpu_s"] = CpuSeconds() - c0;
      row["bytes"] = bytes;
      row["checksum"] = sum;
    }
    const double c0 = CpuSeconds();
    const auto t0 = Clock::now();
    auto report = dt::compare::Compare(o);
    if (!report) return Fail(report.error().ToString());
    row["stats_s"] = std::chrono::duration<double>(Clock::now() - t0).count();
    row["stats_cpu_s"] = CpuSeconds() - c0;
    row["verdict"] = dt::compare::OutcomeName(report->verdict);
    row["peak_rss_anon_bytes"] = peak.load();
    out.push_back(row);
  }
  std::cout << out.dump() << '\n';
  return 0;
}
