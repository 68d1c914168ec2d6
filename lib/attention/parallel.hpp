// The one thread pool of attndev: the emulator's work items (forward and backward) and the
// Eigen reference rate of `attndev bench` run through it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace attndev::attention {

// Runs fn(item) for item in [0, n_items) on `threads` std::threads (0: all hardware threads).
// Items are taken from a shared counter in order, or in a seeded shuffled order. The first
// exception thrown by any item is rethrown in the caller after all threads have joined.
//
// Results cannot depend on the thread count or the schedule as long as every output element is
// written by exactly one item (threads.cpp; tested with 1 vs 2 threads and shuffled orders).
void parallel_for(std::size_t n_items, int threads, std::uint64_t schedule_seed,
                  const std::function<void(std::size_t)>& fn);

}  // namespace attndev::attention
