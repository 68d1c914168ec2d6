// The one thread pool of attndev: the emulator's work items (forward and backward) and the
// Eigen reference rate of `attndev bench` run through it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>

namespace attndev::attention {

// Runs fn(item) for item in [0, n_items) on `threads` std::threads (0: all hardware threads).
// Items are taken from a shared counter in order, or in a seeded shuffled order. The first
// exception thrown by any item is rethrown in the caller after all threads have joined.
//
// Results cannot depend on the thread count or the schedule as long as every output element is
// written by exactly one item (threads.cpp; tested with 1 vs 2 threads and shuffled orders).
void parallel_for(std::size_t n_items, int threads, std::uint64_t schedule_seed,
                  const std::function<void(std::size_t)>& fn);

// The threads parallel_for runs for `threads` (0: all hardware threads) when items are plenty.
int thread_count(int threads);

// Stopping a long computation from outside (the Python package's answer to Ctrl-C while the
// emulator runs): while a CancelScope lives on a thread, every parallel_for started from that
// thread, or from an item of one, stops handing out items once `flag` is set and throws Cancelled
// when the items already running have finished. Nothing partial is returned: an item either ran
// whole or not at all, and the call throws. Scopes nest; the innermost flag is the one obeyed.
struct Cancelled : std::runtime_error {
  Cancelled() : std::runtime_error("cancelled (interrupted)") {}
};

class CancelScope {
 public:
  explicit CancelScope(const std::atomic<bool>& flag);
  ~CancelScope();
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;

 private:
  const std::atomic<bool>* previous_;
};

}  // namespace attndev::attention
