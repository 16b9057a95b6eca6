// The one way dualtrack runs work on several threads: a fan-out over indexes (ParallelFor),
// threads that live for a scope (ScopedThreads: joined however the scope ends) and the release of
// large structures off the caller's thread (ReleaseInBackground). Hand-written
// because the work is small and std::thread is all it needs (no pool library on both Debian and
// Homebrew fits: TBB is heavy, BS::thread_pool is not packaged everywhere).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace dt {

// Threads to use when the user gave none (0): one per core.
unsigned DefaultThreads(unsigned requested = 0);

// Runs fn(i, worker) for every i in [0, n) on at most `threads` threads, the calling thread being
// worker 0. Each worker takes the next index, so a slow item holds up no one; `worker` (below
// `threads`) lets fn keep per-thread state such as a buffer.
void ParallelFor(std::size_t n, unsigned threads,
                 const std::function<void(std::size_t i, unsigned worker)>& fn);

// ParallelFor over [0, n) in chunks of `chunk` indexes, one task per chunk: fn(begin, end,
// worker), for loops whose items are too cheap to be a task each.
void ParallelForChunks(
    std::size_t n, std::size_t chunk, unsigned threads,
    const std::function<void(std::size_t begin, std::size_t end, unsigned worker)>& fn);

// Threads running fn(t), t in [0, count), for the life of the object. Before joining, `stop` is
// called once (close a queue, set a flag), so a scope that ends early never leaves a thread behind.
class ScopedThreads {
 public:
  ScopedThreads(unsigned count, const std::function<void(unsigned)>& fn,
                std::function<void()> stop = {});
  ~ScopedThreads();
  ScopedThreads(const ScopedThreads&) = delete;
  ScopedThreads& operator=(const ScopedThreads&) = delete;
  void Join();  // Calls `stop` and waits for every thread; later calls do nothing.

 private:
  std::vector<std::thread> threads_;
  std::function<void()> stop_;
};

// Destroys `garbage` on a thread of its own, so that a caller done with a large structure (a
// scan's per-file state: every file's imports, millions of small allocations) goes on while it is
// freed. One such thread at a time: the next call, and the process's exit, wait for the one
// before; without a thread to be had, it is freed here.
void ReleaseInBackground(std::shared_ptr<void> garbage);

// Keeps `garbage` until the process ends, never freed: for a command that exits once its output is
// written, the system takes the memory back at exit at no cost, where freeing a scan's millions of
// small allocations takes a core for tens of milliseconds while the report is formatted. Kept
// reachable, so a leak checker does not count it.
void KeepUntilExit(std::shared_ptr<void> garbage);

}  // namespace dt
