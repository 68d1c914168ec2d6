// The thread pool of attndev (parallel.hpp): std::threads over independent work items.
//
// Invariant that makes results independent of threads and scheduling: every output element (a row
// of O and its lse) is written by exactly one item, and an item computes its rows in a fixed
// order from read-only inputs. So neither the number of threads nor the order in which items are
// taken can change a bit of the result (tested with 1 vs 2 threads and shuffled orders).
#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#include "attention/parallel.hpp"

namespace attndev::attention {

namespace {

// The flag of the innermost CancelScope of this thread (null: none). parallel_for hands it to its
// workers, so that items that start parallel_for calls of their own obey it too.
thread_local const std::atomic<bool>* current_cancel = nullptr;

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

CancelScope::CancelScope(const std::atomic<bool>& flag) : previous_(current_cancel) {
  current_cancel = &flag;
}

CancelScope::~CancelScope() {
  current_cancel = previous_;
}

int thread_count(int threads) {
  return std::max(1, threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency()));
}

void parallel_for(std::size_t n_items, int threads, std::uint64_t schedule_seed,
                  const std::function<void(std::size_t)>& fn) {
  if (n_items == 0) return;
  std::vector<std::size_t> order(n_items);
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (schedule_seed != 0) {
    std::uint64_t state = schedule_seed;
    for (std::size_t i = n_items - 1; i > 0; --i)
      std::swap(order[i], order[splitmix64(state) % (i + 1)]);
  }
  int n = thread_count(threads);
  n = std::max(1, std::min<int>(n, static_cast<int>(std::min<std::size_t>(n_items, 1 << 20))));

  std::atomic<std::size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  const std::atomic<bool>* const cancel = current_cancel;
  auto worker = [&] {
    const std::atomic<bool>* const outer = current_cancel;
    current_cancel = cancel;
    for (;;) {
      const std::size_t k = next.fetch_add(1, std::memory_order_relaxed);
      if (k >= n_items) break;
      try {
        if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) throw Cancelled();
        fn(order[k]);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next.store(n_items, std::memory_order_relaxed);  // stop handing out work
        break;
      }
    }
    current_cancel = outer;
  };
  if (n == 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(static_cast<std::size_t>(n - 1));
    for (int t = 1; t < n; ++t) pool.emplace_back(worker);
    worker();
    for (std::thread& t : pool) t.join();
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace attndev::attention
