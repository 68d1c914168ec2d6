// A host simulation of the CUDA primitives flash2-tc is written with
// (lib/cuda/flash2_tc_primitives.cuh), so that the kernel's own code (flash2_tc_cta in
// lib/cuda/flash2_tc.cuh) runs on a machine without a GPU:
//   * every CUDA thread of a CTA is a fiber of the calling host thread (sim_fibers.hpp), switched
//     only at __syncthreads and __syncwarp, which are barriers; a barrier some thread never
//     reaches (divergent code) is reported as an error instead of hanging;
//   * warp-collective instructions (shfl.xor, ldmatrix[.trans], mma.sync.m16n8k16) exchange their
//     operands through the warp and distribute results by the fragment layouts of the PTX ISA
//     (groupID = lane / 4, threadID_in_group = lane % 4);
//   * cp.async copies land only when the issuing thread's cp.async.wait_group retires their
//     group (the latest moment the hardware allows), so a read that relies on an unwaited copy
//     sees stale data;
//   * every shared-memory access is race-checked at 2-byte granularity: a read or write that no
//     barrier orders after a conflicting access of another thread (a cp.async counts as writing
//     from its issue until the wait that retires it, and is visible to other threads only after
//     a barrier that follows that wait) is an error, as is a read of shared memory nothing wrote;
//   * global accesses must stay inside the registered buffers; stores are counted per element.
// What it cannot show: timing, bank conflicts, the matrix unit's own summation and CUDA's exp2f
// (the host's is used). mma.sync's arithmetic is selectable (sim::set_mma): by default the
// products are summed in double and rounded once to fp32; with an architecture, each mma runs
// the tensor-core model of numerics/mma.hpp (that architecture's fused dot-adds, C aligned with
// the products), the model the emulator's flash2-tc-twin uses.
#pragma once

#define ATTNDEV_TC_HOST_SIM 1
#define ATTNDEV_TC_FN inline

#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda/sim_fibers.hpp"
#include "numerics/encode.hpp"
#include "numerics/mma.hpp"

namespace attndev::cuda::tc {

struct SimBf16 {
  std::uint16_t bits;
};
struct SimHalf {
  std::uint16_t bits;
};
using Bf16Type = SimBf16;
using HalfType = SimHalf;

namespace sim {

// One access: who, and how many CTA / warp barriers that thread had passed.
struct Access {
  int thread = -1;
  long cta_epoch = -1;
  long warp_epoch = -1;
};

// `a` (recorded earlier) happens before `b`: same thread, a CTA barrier between them, or a warp
// barrier between two threads of one warp (every lane passes the same barriers, so their
// counters are comparable).
inline bool ordered(const Access& a, const Access& b) {
  return a.thread == b.thread || a.cta_epoch < b.cta_epoch ||
         (a.thread / 32 == b.thread / 32 && a.warp_epoch < b.warp_epoch);
}

struct Cell {  // one 2-byte element of shared memory
  bool written = false;
  Access write;               // the write that is visible (a cp.async's: the wait that retired it)
  bool pending = false;       // a cp.async to this element is in flight
  std::vector<Access> reads;  // since the last write
};

struct Copy {
  std::size_t offset;  // into shared memory
  unsigned char data[16];
};

struct ThreadState {
  int tid = 0;
  long cta_epoch = 0, warp_epoch = 0;
  std::vector<Copy> open;                 // issued, not yet committed
  std::vector<std::vector<Copy>> groups;  // committed, oldest first
};

struct Region {
  const unsigned char* begin;
  std::size_t bytes;
  std::string name;
  bool writable;
  std::vector<int> stores;  // per 2-byte element
};

// Global memory the kernel may touch, and what it stored.
struct Global {
  std::vector<Region> regions;
  void add(const void* p, std::size_t bytes, std::string name, bool writable) {
    regions.push_back({static_cast<const unsigned char*>(p), bytes, std::move(name), writable,
                       std::vector<int>(writable ? bytes / 2 : 0, 0)});
  }
  Region* find(const void* p, std::size_t bytes) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (Region& r : regions)
      if (b >= r.begin && b + bytes <= r.begin + r.bytes) return &r;
    return nullptr;
  }
};

struct WarpExchange {
  std::uint32_t words[32][10];
  const void* addr[32];
  float f[32];
};

// One CTA's shared state. Its threads are fibers of one host thread that switch only at
// barriers, so no lock guards it.
struct Cta {
  Cta(int threads, std::size_t smem_bytes, Global* global)
      : smem(smem_bytes, 0xA5),
        cells(smem_bytes / 2),
        state(static_cast<std::size_t>(threads)),
        exchange(static_cast<std::size_t>(threads / 32)),
        cta_barrier{threads},
        warp_barriers(static_cast<std::size_t>(threads / 32), Barrier{32}),
        global(global) {
    for (int t = 0; t < threads; ++t) state[static_cast<std::size_t>(t)].tid = t;
  }
  std::vector<unsigned char> smem;
  std::vector<Cell> cells;
  std::vector<ThreadState> state;
  std::vector<WarpExchange> exchange;
  Barrier cta_barrier;
  std::vector<Barrier> warp_barriers;
  Global* global;
  std::vector<std::string> errors;

  void error(const std::string& what) {
    if (errors.size() < 20) errors.push_back(what);
  }
};

// The arithmetic of mma_16816 (set before run_grid, read by every simulated thread): none sums
// in double, an architecture runs its tensor-core profile.
inline numerics::mma::Arch g_mma = numerics::mma::Arch::none;
inline void set_mma(numerics::mma::Arch arch) {
  g_mma = arch;
}

inline thread_local Cta* t_cta = nullptr;

// The running simulated thread's state (its fiber's index is its thread id).
inline ThreadState& self() {
  return t_cta->state[t_fibers->current()];
}
inline Access now() {
  const ThreadState& s = self();
  return {s.tid, s.cta_epoch, s.warp_epoch};
}
inline int lane() {
  return self().tid % 32;
}
inline WarpExchange& warp_exchange() {
  return t_cta->exchange[static_cast<std::size_t>(self().tid / 32)];
}
inline void warp_barrier() {
  t_fibers->arrive_and_wait(t_cta->warp_barriers[static_cast<std::size_t>(self().tid / 32)]);
}
inline std::string who(const Access& a) {
  return "thread " + std::to_string(a.thread) + " (barriers " + std::to_string(a.cta_epoch) + "/" +
         std::to_string(a.warp_epoch) + ")";
}

// Byte offset of [p, p + bytes) in shared memory, or npos (and an error) when outside/unaligned.
inline std::size_t smem_offset(const void* p, std::size_t bytes, std::size_t align,
                               const char* what) {
  const auto* b = static_cast<const unsigned char*>(p);
  const unsigned char* base = t_cta->smem.data();
  if (b < base || b + bytes > base + t_cta->smem.size()) {
    t_cta->error(std::string(what) + ": outside shared memory");
    return std::string::npos;
  }
  const std::size_t off = static_cast<std::size_t>(b - base);
  if (off % align != 0) {
    t_cta->error(std::string(what) + ": offset " + std::to_string(off) + " not " +
                 std::to_string(align) + "-byte aligned");
    return std::string::npos;
  }
  return off;
}

// Race checks, per 2-byte cell.
inline void check_read(std::size_t cell, const char* what) {
  Cell& c = t_cta->cells[cell];
  const Access a = now();
  if (c.pending)
    t_cta->error(std::string(what) + ": byte " + std::to_string(2 * cell) + " read by " + who(a) +
                 " while a cp.async to it is in flight");
  else if (!c.written)
    t_cta->error(std::string(what) + ": byte " + std::to_string(2 * cell) + " read by " + who(a) +
                 " but never written");
  else if (!ordered(c.write, a))
    t_cta->error(std::string(what) + ": byte " + std::to_string(2 * cell) + " read by " + who(a) +
                 " races with its write by " + who(c.write));
  c.reads.push_back(a);
}
inline void check_write(std::size_t cell, const char* what) {
  Cell& c = t_cta->cells[cell];
  const Access a = now();
  if (c.pending)
    t_cta->error(std::string(what) + ": byte " + std::to_string(2 * cell) + " written by " +
                 who(a) + " while a cp.async to it is in flight");
  else if (c.written && !ordered(c.write, a))
    t_cta->error(std::string(what) + ": byte " + std::to_string(2 * cell) + " written by " +
                 who(a) + " races with its write by " + who(c.write));
  for (const Access& r : c.reads)
    if (!ordered(r, a)) {
      t_cta->error(std::string(what) + ": byte " + std::to_string(2 * cell) + " written by " +
                   who(a) + " races with its read by " + who(r));
      break;
    }
  c.reads.clear();
}

inline std::uint32_t read_u32(std::size_t off, const char* what) {
  check_read(off / 2, what);
  check_read(off / 2 + 1, what);
  std::uint32_t v;
  std::memcpy(&v, t_cta->smem.data() + off, 4);
  return v;
}
inline std::uint16_t read_u16(std::size_t off, const char* what) {
  check_read(off / 2, what);
  std::uint16_t v;
  std::memcpy(&v, t_cta->smem.data() + off, 2);
  return v;
}

// Retires every committed group of this thread but the newest `pending`.
inline void retire_groups(int pending) {
  auto& groups = self().groups;
  const int retire = static_cast<int>(groups.size()) - pending;
  for (int g = 0; g < retire; ++g) {
    for (const Copy& copy : groups[static_cast<std::size_t>(g)]) {
      std::memcpy(t_cta->smem.data() + copy.offset, copy.data, 16);
      for (std::size_t cell = copy.offset / 2; cell < copy.offset / 2 + 8; ++cell) {
        Cell& c = t_cta->cells[cell];
        c.pending = false;
        c.written = true;
        c.write = now();
        c.reads.clear();
      }
    }
  }
  if (retire > 0) groups.erase(groups.begin(), groups.begin() + retire);
}

// Every 16-bit pattern of both formats decoded once: numerics::decode serves every format and
// cost more than the rest of an mma (each lane reads 64 operands per mma).
inline double decode16(bool bf16, std::uint32_t bits) {
  static const std::vector<double> table = [] {
    std::vector<double> t(2 << 16);
    for (std::uint32_t u = 0; u < (1u << 16); ++u) {
      t[u] = numerics::decode(numerics::Format::fp16, u);
      t[(1u << 16) + u] = numerics::decode(numerics::Format::bf16, u);
    }
    return t;
  }();
  return table[(bf16 ? 1u << 16 : 0u) + (bits & 0xffffu)];
}

}  // namespace sim

inline int thread_id() {
  return sim::self().tid;
}
inline void sync_cta() {
  sim::t_fibers->arrive_and_wait(sim::t_cta->cta_barrier);
  ++sim::self().cta_epoch;
  ++sim::self().warp_epoch;
}
inline void sync_warp() {
  sim::warp_barrier();
  ++sim::self().warp_epoch;
}
inline float shfl_xor(float v, int lane_mask) {
  sim::WarpExchange& x = sim::warp_exchange();
  x.f[sim::lane()] = v;
  sim::warp_barrier();
  const float out = x.f[sim::lane() ^ lane_mask];
  sim::warp_barrier();
  return out;
}

inline void cp_async_16(void* dst, const void* src, int src_bytes) {
  const std::size_t off = sim::smem_offset(dst, 16, 16, "cp.async dst");
  if (off == std::string::npos) return;
  sim::Copy copy{off, {}};
  if (src_bytes == 16) {
    if (!sim::t_cta->global->find(src, 16))
      sim::t_cta->error("cp.async: source outside every input buffer");
    else
      std::memcpy(copy.data, src, 16);
  } else if (src_bytes != 0) {
    sim::t_cta->error("cp.async: src_bytes must be 0 or 16");
  }
  for (std::size_t cell = off / 2; cell < off / 2 + 8; ++cell) {
    sim::check_write(cell, "cp.async");
    sim::t_cta->cells[cell].pending = true;
  }
  sim::self().open.push_back(copy);
}
inline void cp_async_commit() {
  sim::ThreadState& s = sim::self();
  s.groups.push_back(std::move(s.open));
  s.open.clear();
}
template <int kPending>
inline void cp_async_wait() {
  sim::retire_groups(kPending);
}

// ldmatrix .x4: lanes 8j..8j+7 give the row addresses of matrix j; lane t receives, of each
// matrix, row t/4, elements 2(t%4) and 2(t%4)+1 (.trans: column t/4, rows 2(t%4) and 2(t%4)+1).
inline void ldmatrix_impl(std::uint32_t (&r)[4], const void* p, bool trans) {
  sim::WarpExchange& x = sim::warp_exchange();
  const int lane = sim::lane();
  x.addr[lane] = p;
  sim::warp_barrier();
  for (int j = 0; j < 4; ++j) {
    if (!trans) {
      const std::size_t off = sim::smem_offset(x.addr[8 * j + lane / 4], 16, 16, "ldmatrix row");
      r[j] = off == std::string::npos ? 0u : sim::read_u32(off + 4 * (lane % 4), "ldmatrix");
    } else {
      std::uint32_t v = 0;
      for (int h = 0; h < 2; ++h) {
        const std::size_t off =
            sim::smem_offset(x.addr[8 * j + 2 * (lane % 4) + h], 16, 16, "ldmatrix.trans row");
        if (off != std::string::npos)
          v |= static_cast<std::uint32_t>(sim::read_u16(off + 2 * (lane / 4), "ldmatrix.trans"))
               << (16 * h);
      }
      r[j] = v;
    }
  }
  sim::warp_barrier();
}
inline void ldmatrix_x4(std::uint32_t (&r)[4], const void* p) {
  ldmatrix_impl(r, p, /*trans=*/false);
}
inline void ldmatrix_x4_trans(std::uint32_t (&r)[4], const void* p) {
  ldmatrix_impl(r, p, /*trans=*/true);
}

// mma.m16n8k16.row.col: A (16 x 16) a0: (g, 2q..), a1: (g+8, 2q..), a2: (g, 8+2q..),
// a3: (g+8, 8+2q..); B (16 x 8) b0: (k 2q.., n g), b1: (k 8+2q.., n g); C/D c0, c1: (g, 2q, 2q+1),
// c2, c3: (g+8, 2q, 2q+1); g = lane/4, q = lane%4, lower half = lower index.
template <class T>
inline void mma_16816(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                      std::uint32_t b1) {
  constexpr bool kBf16 = std::is_same_v<T, SimBf16>;
  sim::WarpExchange& x = sim::warp_exchange();
  const int lane = sim::lane();
  for (int i = 0; i < 4; ++i) x.words[lane][i] = a[i];
  x.words[lane][4] = b0;
  x.words[lane][5] = b1;
  sim::warp_barrier();
  auto a_at = [&](int row, int k) {
    const std::uint32_t w = x.words[(row % 8) * 4 + (k % 8) / 2][row / 8 + 2 * (k / 8)];
    return sim::decode16(kBf16, w >> (16 * (k % 2)));
  };
  auto b_at = [&](int k, int n) {
    const std::uint32_t w = x.words[n * 4 + (k % 8) / 2][4 + k / 8];
    return sim::decode16(kBf16, w >> (16 * (k % 2)));
  };
  namespace mma = numerics::mma;
  const numerics::Format fmt = kBf16 ? numerics::Format::bf16 : numerics::Format::fp16;
  const mma::DotFunction dot =
      sim::g_mma == mma::Arch::none
          ? nullptr
          : mma::dot_function(sim::g_mma, mma::Instruction::mma, mma::Kind::f16);
  // This lane's two rows of A and two columns of B, k increasing: (2, 16) each.
  double a_rows[2][16], b_cols[2][16];
  for (int h = 0; h < 2; ++h) {
    for (int k = 0; k < 16; ++k) {
      a_rows[h][k] = a_at(lane / 4 + 8 * h, k);
      b_cols[h][k] = b_at(k, 2 * (lane % 4) + h);
    }
  }
  float d[4];
  for (int i = 0; i < 4; ++i) {
    const double* a_row = a_rows[i / 2];  // row lane / 4 + 8 (i / 2)
    const double* b_col = b_cols[i % 2];  // column 2 (lane % 4) + i % 2
    if (dot) {
      d[i] = static_cast<float>(dot(mma::operands(fmt, fmt), a_row, 1, b_col, 1, 16,
                                    static_cast<double>(c[i]), mma::Output::fp32));
    } else {
      double sum = 0;  // bf16/fp16 products are exact in double
      for (int k = 0; k < 16; ++k) sum += a_row[k] * b_col[k];
      d[i] = static_cast<float>(sum + static_cast<double>(c[i]));
    }
  }
  sim::warp_barrier();
  for (int i = 0; i < 4; ++i) c[i] = d[i];
}

template <class T>
inline std::uint32_t pack2(float lo, float hi) {
  const numerics::Format f =
      std::is_same_v<T, SimBf16> ? numerics::Format::bf16 : numerics::Format::fp16;
  return static_cast<std::uint32_t>(numerics::encode(f, lo)) |
         (static_cast<std::uint32_t>(numerics::encode(f, hi)) << 16);
}

inline void st_shared_u32(void* p, std::uint32_t v) {
  const std::size_t off = sim::smem_offset(p, 4, 4, "st.shared");
  if (off == std::string::npos) return;
  for (std::size_t cell = off / 2; cell < off / 2 + 2; ++cell) {
    sim::check_write(cell, "st.shared");
    sim::t_cta->cells[cell].written = true;
    sim::t_cta->cells[cell].write = sim::now();
  }
  std::memcpy(sim::t_cta->smem.data() + off, &v, 4);
}

inline void store_global(void* dst, const void* src, std::size_t bytes, const char* what) {
  sim::Region* r = sim::t_cta->global->find(dst, bytes);
  if (!r || !r->writable) {
    sim::t_cta->error(std::string(what) + ": outside every output buffer");
    return;
  }
  const std::size_t off = static_cast<std::size_t>(static_cast<unsigned char*>(dst) - r->begin);
  if (off % bytes != 0) sim::t_cta->error(std::string(what) + ": misaligned");
  for (std::size_t e = off / 2; e < (off + bytes) / 2; ++e) ++r->stores[e];
  std::memcpy(dst, src, bytes);
}
inline void copy16_shared_to_global(void* dst, const void* src) {
  const std::size_t off = sim::smem_offset(src, 16, 16, "ld.shared.v4");
  if (off == std::string::npos) return;
  for (std::size_t cell = off / 2; cell < off / 2 + 8; ++cell)
    sim::check_read(cell, "ld.shared.v4");
  store_global(dst, sim::t_cta->smem.data() + off, 16, "st.global.v4");
}
inline void st_global_f32(float* p, float v) {
  store_global(p, &v, 4, "st.global.f32");
}

namespace sim {

// Runs `body(smem, block_x, block_y)` for every CTA of the grid, one CTA at a time, each with
// `threads` simulated threads and `smem_bytes` of race-checked shared memory. Returns every error
// found (empty: none), including cp.async copies issued and never waited for and a barrier that
// not every thread reached.
template <class Body>
std::vector<std::string> run_grid(int grid_x, int grid_y, int threads, std::size_t smem_bytes,
                                  Global& global, Body body) {
  struct Launch {
    Cta* cta;
    Body* body;
    int bx, by;
  };
  // Each simulated thread: the body, and an exception as an error (a fiber must not throw).
  const auto entry = [](void* p) {
    const Launch& l = *static_cast<Launch*>(p);
    try {
      (*l.body)(l.cta->smem.data(), l.bx, l.by);
    } catch (const std::exception& e) {
      l.cta->error("thread " + std::to_string(self().tid) + " threw: " + e.what());
    } catch (...) {
      l.cta->error("thread " + std::to_string(self().tid) + " threw");
    }
  };
  std::vector<std::string> errors;
  Fibers fibers(static_cast<std::size_t>(threads));
  for (int by = 0; by < grid_y; ++by) {
    for (int bx = 0; bx < grid_x; ++bx) {
      Cta cta(threads, smem_bytes, &global);
      Launch launch{&cta, &body, bx, by};
      Cta* const outer = t_cta;
      t_cta = &cta;
      const std::size_t stuck = fibers.run(entry, &launch);
      t_cta = outer;
      if (stuck > 0)
        cta.error("deadlock: " + std::to_string(stuck) +
                  " threads wait at a barrier that the others never reach");
      for (const ThreadState& s : cta.state)
        if (!s.open.empty() || !s.groups.empty())
          cta.error("thread " + std::to_string(s.tid) +
                    " ended with cp.async copies never waited for");
      for (const std::string& e : cta.errors)
        errors.push_back("CTA (" + std::to_string(bx) + ", " + std::to_string(by) + "): " + e);
    }
  }
  return errors;
}

}  // namespace sim

}  // namespace attndev::cuda::tc
