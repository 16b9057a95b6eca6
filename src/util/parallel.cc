#include "util/parallel.h"

#include <algorithm>
#include <atomic>
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

}  // namespace dt
