// The threads of the host simulator (tc_host_sim.hpp): the CUDA threads of one CTA run as
// fibers (ucontext) of the calling host thread, and a fiber gives up the processor only at a
// barrier. An OS thread per CUDA thread, as before, made every __syncwarp a round of futex
// wake-ups across 128-256 threads on the machine's few cores: the simulator tests took 80 s and
// more, and their time grew with whatever else the cores ran (ctest's 300 s limit came near).
// Fibers run the same code in the same per-thread order between barriers; what the threads of
// one warp or CTA may see of each other is decided by the simulator's race check (barrier counts,
// not the order the fibers happened to run in), so nothing it checks depends on the scheduling.
#pragma once

#include <ucontext.h>

#include <cstddef>
#include <memory>
#include <vector>

// AddressSanitizer must be told when the stack changes: its fake stacks (use-after-return
// detection) belong to a stack, and the frames of a switched-out fiber are still live.
#if defined(__SANITIZE_ADDRESS__)
#define ATTNDEV_SIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ATTNDEV_SIM_ASAN 1
#endif
#endif
#ifndef ATTNDEV_SIM_ASAN
#define ATTNDEV_SIM_ASAN 0
#endif
#if ATTNDEV_SIM_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace attndev::cuda::tc::sim {

// The last of `expected` arrivals opens it (a new generation) and runs on; each earlier one is
// switched out until the generation changes.
struct Barrier {
  int expected = 0;
  int arrived = 0;
  long generation = 0;
};

// Each fiber's stack: the kernel's fragments and the tensor-core model's frames take a few KiB,
// the sanitizer build's redzones several times that.
inline constexpr std::size_t kFiberStackBytes = 256 * 1024;

class Fibers;
inline thread_local Fibers* t_fibers = nullptr;

// A set of fibers, run to completion by run() as often as needed (the stacks are reused).
class Fibers {
 public:
  explicit Fibers(std::size_t n) : fibers_(n) {
    // Uninitialized: only the pages a fiber touches are ever written.
    for (Fiber& f : fibers_) f.stack.reset(new char[kFiberStackBytes]);
  }

  // Runs entry(arg) once in every fiber, in passes over the fibers in order, each running until
  // it waits at a barrier or returns; entry must not throw. Returns how many fibers were left
  // waiting when a pass could run none of them (a barrier that the others never reach: a
  // deadlock; those fibers are abandoned), 0 when every one returned.
  std::size_t run(void (*entry)(void*), void* arg) {
    entry_ = entry;
    arg_ = arg;
    for (Fiber& f : fibers_) start(f);
    Fibers* const outer = t_fibers;
    t_fibers = this;
    std::size_t running = fibers_.size();
    while (running > 0) {
      bool ran = false;
      for (current_ = 0; current_ < fibers_.size(); ++current_) {
        Fiber& f = fibers_[current_];
        if (f.done || (f.waiting && f.waiting->generation == f.generation)) continue;
        f.waiting = nullptr;
        resume(f);
        ran = true;
        running -= f.done ? 1 : 0;
      }
      if (!ran) break;
    }
    t_fibers = outer;
    return running;
  }

  // The running fiber's index (the simulated thread's id).
  std::size_t current() const { return current_; }

  // Called by the running fiber.
  void arrive_and_wait(Barrier& b) {
    if (++b.arrived == b.expected) {
      b.arrived = 0;
      ++b.generation;
      return;
    }
    Fiber& f = fibers_[current_];
    f.waiting = &b;
    f.generation = b.generation;
    to_scheduler(f, /*exiting=*/false);
  }

 private:
  struct Fiber {
    ucontext_t context{};
    std::unique_ptr<char[]> stack;
    const Barrier* waiting = nullptr;  // null: runnable
    long generation = 0;               // of `waiting`, when it arrived
    bool done = false;
    void* fake_stack = nullptr;  // AddressSanitizer's, while the fiber is switched out
  };

  void start(Fiber& f) {
#if ATTNDEV_SIM_ASAN
    // A fiber abandoned in a deadlock leaves the redzones of its frames on the reused stack.
    __asan_unpoison_memory_region(f.stack.get(), kFiberStackBytes);
#endif
    f.waiting = nullptr;
    f.done = false;
    f.fake_stack = nullptr;
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = f.stack.get();
    f.context.uc_stack.ss_size = kFiberStackBytes;
    f.context.uc_link = nullptr;
    makecontext(&f.context, &Fibers::fiber_main, 0);
    // The stack is in the context's registers now. AddressSanitizer's swapcontext clears the
    // shadow of the stack a context names, which would erase the redzones of a switched-out
    // fiber's live frames: named nowhere, they stay (the annotations say where each stack is).
    f.context.uc_stack = {};
  }

  void resume(Fiber& f) {
#if ATTNDEV_SIM_ASAN
    void* fake_stack = nullptr;
    __sanitizer_start_switch_fiber(&fake_stack, f.stack.get(), kFiberStackBytes);
#endif
    swapcontext(&scheduler_, &f.context);
#if ATTNDEV_SIM_ASAN
    __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
  }

  // Back to the scheduler; returns when it resumes `f`. An exiting fiber is never resumed
  // (AddressSanitizer then releases its fake stack).
  void to_scheduler(Fiber& f, bool exiting) {
#if ATTNDEV_SIM_ASAN
    __sanitizer_start_switch_fiber(exiting ? nullptr : &f.fake_stack, scheduler_stack_,
                                   scheduler_stack_bytes_);
#else
    (void)exiting;
#endif
    swapcontext(&f.context, &scheduler_);
#if ATTNDEV_SIM_ASAN
    __sanitizer_finish_switch_fiber(f.fake_stack, &scheduler_stack_, &scheduler_stack_bytes_);
#endif
  }

  static void fiber_main() {
    Fibers& self = *t_fibers;
#if ATTNDEV_SIM_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &self.scheduler_stack_, &self.scheduler_stack_bytes_);
#endif
    self.entry_(self.arg_);
    Fiber& f = self.fibers_[self.current_];
    f.done = true;
    self.to_scheduler(f, /*exiting=*/true);
  }

  std::vector<Fiber> fibers_;
  std::size_t current_ = 0;
  void (*entry_)(void*) = nullptr;
  void* arg_ = nullptr;
  ucontext_t scheduler_{};
#if ATTNDEV_SIM_ASAN
  // The scheduler's stack as the fibers last saw it.
  const void* scheduler_stack_ = nullptr;
  std::size_t scheduler_stack_bytes_ = 0;
#endif
};

}  // namespace attndev::cuda::tc::sim
