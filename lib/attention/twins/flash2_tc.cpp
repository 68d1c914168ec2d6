// flash2-tc-twin (twins/flash2_tc.hpp has the operation sequence and its sources).
#include "attention/twins/flash2_tc.hpp"

#include <cmath>
#include <cstddef>
#include <vector>

#include "attention/detail.hpp"
#include "numerics/math.hpp"
#include "numerics/mma.hpp"

namespace attndev::attention::twins {

namespace {

namespace mma = numerics::mma;

constexpr int kLanes = 4;      // the threads of a quad share a row of every fragment
constexpr int kRowBlock = 64;  // rows per work item (the numerics do not depend on it)
constexpr float kNegInf = -INFINITY;

// The lane of the quad that holds column c of an n8 tile (the mma C-fragment layout: lane q
// holds columns 2q and 2q + 1 of every n8 tile).
constexpr int lane_of(int c) {
  return (c % 8) / 2;
}

// One GEMM's dot products: the tensor-core profile's, or (no profile) a chain of fp32 FMAs in
// the same k order.
struct Gemm {
  mma::DotFunction dot = nullptr;
  mma::Operands operands{};

  float operator()(const double* a, const double* b, std::ptrdiff_t sb, int k, float c) const {
    if (dot) return static_cast<float>(dot(operands, a, 1, b, sb, k, c, mma::Output::fp32));
    for (int i = 0; i < k; ++i)
      c = std::fmaf(static_cast<float>(a[i]), static_cast<float>(b[i * sb]), c);
    return c;
  }
};

// OnlineSoftmax's state as one thread of the quad holds it (flash2_tc.cuh: softmax[t][r]).
struct Lane {
  float m = kNegInf, l = 0.f, alpha = 0.f, max_scaled = 0.f;
  bool adds = false;
};

struct Row {
  const double* q;  // (d)
  const double* k;  // (N_kv, d) of the head
  const double* v;  // (N_kv, d) of the head
  int visible;      // keys [0, visible) are this row's
};

struct Setup {
  Gemm gemm;
  numerics::Format element;
  int d, seq_kv;
  float scale, scale_log2;
};

// The block's max of lane q's columns, then the quad's two shuffles: what each lane holds.
void quad_max(const float* s, float (&out)[kLanes]) {
  float mx[kLanes], a[kLanes];
  for (int q = 0; q < kLanes; ++q) {
    mx[q] = kNegInf;
    for (int nt = 0; nt < 64 / 8; ++nt)
      mx[q] = std::fmaxf(mx[q], std::fmaxf(s[8 * nt + 2 * q], s[8 * nt + 2 * q + 1]));
  }
  for (int q = 0; q < kLanes; ++q) a[q] = std::fmaxf(mx[q], mx[q ^ 1]);
  for (int q = 0; q < kLanes; ++q) out[q] = std::fmaxf(a[q], a[q ^ 2]);
}

// One row through every K/V block it sees; writes O (d) and the lse.
template <class Exp2F>
void twin_row(const Setup& st, const Row& row, Exp2F exp2, double* o, double& lse) {
  constexpr int kBc = 64;
  const int d = st.d;
  std::vector<float> acc(static_cast<std::size_t>(d), 0.f);  // (d) O, unnormalized
  float s[kBc];                                              // (Bc) S, then p
  double p_narrow[kBc];                                      // (Bc) P as the mma reads it
  Lane lanes[kLanes];
  const int n_blocks = (row.visible + kBc - 1) / kBc;
  for (int nb = 0; nb < n_blocks; ++nb) {
    const int j0 = nb * kBc;
    const int keys = st.seq_kv - j0 < kBc ? st.seq_kv - j0 : kBc;  // rows of the tile in range
    for (int c = 0; c < kBc; ++c) {
      const int col = j0 + c;
      s[c] = col < row.visible
                 ? st.gemm(row.q, row.k + static_cast<std::size_t>(col) * d, 1, d, 0.f)
                 : kNegInf;
    }
    float mx[kLanes];
    quad_max(s, mx);
    for (int q = 0; q < kLanes; ++q) {  // OnlineSoftmax::rescale_max with TcArith
      Lane& ln = lanes[q];
      const float m_new = ln.m < mx[q] ? mx[q] : ln.m;
      ln.adds = m_new != kNegInf;
      if (!ln.adds) continue;
      ln.max_scaled = m_new * st.scale_log2;
      ln.alpha = ln.m == kNegInf ? 0.f : exp2((ln.m - m_new) * st.scale_log2);
      ln.m = m_new;
    }
    float sum[kLanes] = {0.f, 0.f, 0.f, 0.f};
    for (int nt = 0; nt < kBc / 8; ++nt) {
      for (int q = 0; q < kLanes; ++q) {
        for (int c = 8 * nt + 2 * q; c < 8 * nt + 2 * q + 2; ++c) {
          const Lane& ln = lanes[q];
          s[c] = ln.adds ? exp2(std::fmaf(s[c], st.scale_log2, -ln.max_scaled)) : 0.f;
          sum[q] = sum[q] + s[c];
        }
      }
    }
    for (int q = 0; q < kLanes; ++q)
      if (lanes[q].adds) lanes[q].l = std::fmaf(lanes[q].l, lanes[q].alpha, sum[q]);
    for (int t = 0; t < d; ++t)
      if (lanes[lane_of(t)].adds) acc[t] = acc[t] * lanes[lane_of(t)].alpha;
    for (int c = 0; c < kBc; ++c)
      p_narrow[c] = static_cast<double>(numerics::round_to(st.element, s[c]));
    const double* v_block = row.v + static_cast<std::size_t>(j0) * d;  // (keys, d)
    for (int t = 0; t < d; ++t) acc[t] = st.gemm(p_narrow, v_block + t, d, keys, acc[t]);
  }
  // The quad's row sum: shfl.xor 1, then 2; every lane ends with the same bits.
  float l1[kLanes], l2[kLanes], inv_l[kLanes];
  for (int q = 0; q < kLanes; ++q) l1[q] = lanes[q].l + lanes[q ^ 1].l;
  for (int q = 0; q < kLanes; ++q) l2[q] = l1[q] + l1[q ^ 2];
  for (int q = 0; q < kLanes; ++q) inv_l[q] = l2[q] == 0.f ? 0.f : 1.f / l2[q];
  for (int t = 0; t < d; ++t)
    o[t] = static_cast<double>(numerics::round_to(st.element, acc[t] * inv_l[lane_of(t)]));
  lse = l2[0] == 0.f ? -INFINITY : static_cast<double>(lanes[0].m * st.scale + std::log(l2[0]));
}

template <class Exp2F>
void run_rows(const Problem& p, const Setup& st, Exp2F exp2, Output& out) {
  const Shape& s = p.shape;
  const std::size_t items = detail::row_block_count(s, kRowBlock);
  parallel_for(items, p.threads, p.schedule_seed, [&](std::size_t item) {
    const detail::RowBlock rb = detail::row_block(s, kRowBlock, item);
    double* lse_head = out.lse.data() + (static_cast<std::size_t>(rb.b) * s.heads + rb.h) * s.seq_q;
    for (int i = rb.row_begin; i < rb.row_end; ++i) {
      const Row row{p.q.head_ptr(rb.b, rb.h) + static_cast<std::size_t>(i) * s.head_dim,
                    p.k.head_ptr(rb.b, rb.h), p.v.head_ptr(rb.b, rb.h),
                    rows::visible_count(i, s.seq_q, s.seq_kv, p.causal)};
      double* o = out.o.head_ptr(rb.b, rb.h) + static_cast<std::size_t>(i) * s.head_dim;
      twin_row(st, row, exp2, o, lse_head[i]);
    }
  });
}

}  // namespace

std::string flash2_tc_unsupported(const numerics::PrecisionPolicy& policy, const Shape& shape) {
  const std::string name = "flash2-tc-twin";
  numerics::PrecisionPolicy kernel = policy;
  kernel.mma = mma::Arch::none;
  const bool kernel_policy =
      (policy.input == numerics::Format::bf16 || policy.input == numerics::Format::fp16) &&
      kernel == numerics::detail::kernel_policy(policy.input);
  if (!kernel_policy)
    return name +
           ": flash2-tc runs the kernel-bf16 / kernel-fp16 policy only (fp32 scores, "
           "statistics and accumulators, P and O in the input format); add \"mma\" for "
           "its tensor cores";
  if (flash2_tc_block_c(shape.head_dim) == 0)
    return name + ": head_dim " + std::to_string(shape.head_dim) +
           " not instantiated in flash2-tc (have 64, 128)";
  return {};
}

void run_flash2_tc(const Problem& p, const Exp2& exp2, Output& out) {
  Setup st;
  if (p.policy.mma != mma::Arch::none) {
    mma::Kind kind{};
    mma::kind_of(p.policy.input, p.policy.input, kind);
    st.gemm.dot = mma::dot_function(p.policy.mma, mma::default_instruction(p.policy.mma), kind);
    st.gemm.operands = mma::operands(p.policy.input, p.policy.input);
  }
  st.element = p.policy.input;
  st.d = p.shape.head_dim;
  st.seq_kv = p.shape.seq_kv;
  // The launcher's p.scale and p.scale_log2 (flash2_tc_launch.cu): floats of the scale and of
  // scale * log2(e) taken in double; scale 1 when it was folded into Q.
  st.scale = static_cast<float>(p.scale_in_query ? 1.0 : p.scale);
  st.scale_log2 = static_cast<float>(p.scale_log2());
  if (exp2) {
    run_rows(
        p, st, [&exp2](float x) { return exp2(x); }, out);
  } else {
    run_rows(
        p, st, [](float x) { return numerics::exp2_f32(x); }, out);
  }
}

}  // namespace attndev::attention::twins
