#include "util/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace dt {
namespace {

TEST(ParallelForTest, EveryIndexOnceOnAtMostTheThreadsAsked) {
  std::vector<std::atomic<int>> seen(1000);
  std::mutex mu;
  std::set<unsigned> workers;
  ParallelFor(seen.size(), 3, [&](std::size_t i, unsigned worker) {
    seen[i]++;
    std::lock_guard<std::mutex> lock(mu);
    workers.insert(worker);
  });
  for (const auto& s : seen) EXPECT_EQ(s.load(), 1);
  ASSERT_FALSE(workers.empty());
  EXPECT_LT(*workers.rbegin(), 3u);
}

TEST(ParallelForTest, NoItemsAndMoreThreadsThanItems) {
  int calls = 0;
  ParallelFor(0, 4, [&](std::size_t, unsigned) { ++calls; });
  EXPECT_EQ(calls, 0);
  std::set<unsigned> workers;
  std::mutex mu;
  ParallelFor(2, 16, [&](std::size_t, unsigned worker) {
    std::lock_guard<std::mutex> lock(mu);
    workers.insert(worker);
  });
  EXPECT_LT(*workers.rbegin(), 2u);  // Two items need two workers at most.
  EXPECT_EQ(DefaultThreads(5), 5u);
  EXPECT_GE(DefaultThreads(), 1u);
}

TEST(ScopedThreadsTest, StopsThenJoinsWhenTheScopeEnds) {
  std::atomic<bool> stop{false};
  std::atomic<int> finished{0};
  std::atomic<int> stops{0};
  const auto start = std::chrono::steady_clock::now();
  {
    ScopedThreads threads(
        2,
        [&](unsigned) {
          // Waits for `stop` (bounded, so a broken stop fails the test instead of hanging it).
          while (!stop && std::chrono::steady_clock::now() - start < std::chrono::seconds(20)) {
          }
          if (stop) finished++;
        },
        [&] {
          stops++;
          stop = true;
        });
    EXPECT_EQ(finished.load(), 0);
  }
  EXPECT_EQ(finished.load(), 2);
  EXPECT_EQ(stops.load(), 1);
}

TEST(ScopedThreadsTest, JoinTwiceStopsOnce) {
  int stops = 0;
  std::atomic<int> runs{0};
  ScopedThreads threads(
      3, [&](unsigned) { runs++; }, [&] { ++stops; });
  threads.Join();
  threads.Join();
  EXPECT_EQ(runs.load(), 3);
  EXPECT_EQ(stops, 1);
}

TEST(ParallelForTest, ChunksCoverEveryIndexOnceInWholeChunks) {
  for (std::size_t n :
       {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{1001}}) {
    std::vector<std::atomic<int>> seen(n);
    std::atomic<int> short_chunks{0};
    ParallelForChunks(n, 8, 3, [&](std::size_t b, std::size_t e, unsigned worker) {
      EXPECT_LT(worker, 3u);
      EXPECT_EQ(b % 8, 0u);
      EXPECT_LT(b, e);
      EXPECT_LE(e, n);
      if (e - b != 8) short_chunks++;
      for (std::size_t i = b; i < e; ++i) seen[i]++;
    });
    for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(seen[i].load(), 1) << "n=" << n << " i=" << i;
    EXPECT_EQ(short_chunks.load(), n % 8 ? 1 : 0) << "n=" << n;
  }
}

TEST(ReleaseInBackgroundTest, FreesOffTheCallersThreadAndTheNextCallWaitsForIt) {
  std::atomic<int> freed{0};
  std::thread::id freed_on;
  const std::thread::id caller = std::this_thread::get_id();
  std::mutex mu;
  auto tracked = [&] {
    return std::shared_ptr<int>(new int(7), [&](int* p) {
      {
        std::lock_guard lock(mu);
        freed_on = std::this_thread::get_id();
      }
      delete p;
      freed++;
    });
  };
  auto first = tracked();
  std::weak_ptr<int> watch = first;
  ReleaseInBackground(std::move(first));
  ReleaseInBackground(tracked());  // Joins the thread that frees the first.
  EXPECT_TRUE(watch.expired());
  EXPECT_GE(freed.load(), 1);
  {
    std::lock_guard lock(mu);
    EXPECT_NE(freed_on, caller);
  }
  ReleaseInBackground(nullptr);  // Joins the second; nothing to free is fine.
  EXPECT_EQ(freed.load(), 2);
}

TEST(KeepUntilExitTest, KeepsTheObjectAliveAndNeverFreesIt) {
  // Counts the deleter's runs: none while the process lives.
  static std::atomic<int> freed{0};
  auto kept = std::shared_ptr<int>(new int(7), [](int* p) {
    delete p;
    freed++;
  });
  std::weak_ptr<int> watch = kept;
  KeepUntilExit(std::move(kept));
  KeepUntilExit(nullptr);  // Nothing to keep is fine.
  ASSERT_FALSE(watch.expired());
  EXPECT_EQ(*watch.lock(), 7);
  EXPECT_EQ(freed.load(), 0);
}

}  // namespace
}  // namespace dt
