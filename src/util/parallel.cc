#include "util/parallel.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <system_error>
#include <utility>

namespace dt {

unsigned DefaultThreads(unsigned requested) {
  return requested ? requested : std::max(1u, std::thread::hardware_concurrency());
}

void ParallelFor(std::size_t n, unsigned threads,
                 const std::function<void(std::size_t, unsigned)>& fn) {
  std::atomic<std::size_t> next{0};
  auto worker = [&](unsigned w) {
    for (std::size_t i = next++; i < n; i = next++) fn(i, w);
  };
  threads = static_cast<unsigned>(
      std::min<std::size_t>(std::max(1u, threads), std::max<std::size_t>(1, n)));
  ScopedThreads others(threads - 1, [&](unsigned t) { worker(t + 1); });
  worker(0);
}

void ParallelForChunks(std::size_t n, std::size_t chunk, unsigned threads,
                       const std::function<void(std::size_t, std::size_t, unsigned)>& fn) {
  chunk = std::max<std::size_t>(1, chunk);
  ParallelFor((n + chunk - 1) / chunk, threads, [&](std::size_t c, unsigned worker) {
    fn(c * chunk, std::min(n, (c + 1) * chunk), worker);
  });
}

ScopedThreads::ScopedThreads(unsigned count, const std::function<void(unsigned)>& fn,
                             std::function<void()> stop)
    : stop_(std::move(stop)) {
  threads_.reserve(count);
  for (unsigned t = 0; t < count; ++t) threads_.emplace_back(fn, t);
}

ScopedThreads::~ScopedThreads() { Join(); }

void ScopedThreads::Join() {
  if (stop_) std::exchange(stop_, nullptr)();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

namespace {

// The thread freeing the last garbage handed over; a static, so exit() joins it (before a leak
// checker's own exit handler, registered earlier, looks at the heap).
struct Releaser {
  std::mutex mu;
  std::thread thread;
  ~Releaser() {
    std::lock_guard lock(mu);
    if (thread.joinable()) thread.join();
  }
};

}  // namespace

void KeepUntilExit(std::shared_ptr<void> garbage) {
  static std::mutex mu;
  static auto* kept = new std::vector<std::shared_ptr<void>>();  // Never destroyed, on purpose.
  std::lock_guard lock(mu);
  kept->push_back(std::move(garbage));
}

void ReleaseInBackground(std::shared_ptr<void> garbage) {
  static Releaser releaser;
  std::lock_guard lock(releaser.mu);
  if (releaser.thread.joinable()) releaser.thread.join();
  try {
    releaser.thread = std::thread([g = std::move(garbage)]() mutable { g.reset(); });
  } catch (const std::system_error&) {
    // No thread: the lambda, and the garbage with it, is destroyed here.
  }
}

}  // namespace dt
