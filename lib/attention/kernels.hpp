// Micro-kernels of the fast paths, templated on the compute type T (float or double).
//
// They vectorize *without changing the order of any sum*, which is what keeps the fast paths
// bit-identical to the generic path:
//   * QK^T: K is packed transposed per column block, (d, BcP), and a vector lane holds one key j.
//     Each lane accumulates its own dot product over t = 0, 1, ... d-1 in order, exactly the
//     sequential mac of the generic path. Register block: kRows query rows x kCols vectors.
//   * PV: a vector lane holds one output column t; acc[t] += P_ij * V_jt for j in increasing
//     order, again the generic path's order per element. Register block: kRows rows x kCols
//     vectors.
// Padding lanes (j >= Bc, t >= d) hold zeros and are never read back as results.
// Every multiply-add is either an explicit fused FMA (policy.fma) or a product rounded then a sum:
// -ffp-contract=off guarantees the compiler does not fuse the latter.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <cstddef>
#include <type_traits>
#include <vector>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include "attention/detail.hpp"
#include "attention/rows/arith.hpp"
#include "numerics/float_rounder.hpp"
#include "numerics/format.hpp"
#include "numerics/math.hpp"
#include "numerics/policy.hpp"
#include "numerics/round.hpp"
#include "numerics/static_arith.hpp"

namespace attndev::attention::detail {

template <class T>
struct Simd;

#if defined(__AVX512F__)
template <>
struct Simd<float> {
  using V = __m512;
  static constexpr int kWidth = 16;
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V zero() { return _mm512_setzero_ps(); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
};
template <>
struct Simd<double> {
  using V = __m512d;
  static constexpr int kWidth = 8;
  static V load(const double* p) { return _mm512_loadu_pd(p); }
  static void store(double* p, V v) { _mm512_storeu_pd(p, v); }
  static V set1(double x) { return _mm512_set1_pd(x); }
  static V zero() { return _mm512_setzero_pd(); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_pd(a, b); }
  static V add(V a, V b) { return _mm512_add_pd(a, b); }
};
#elif defined(__AVX2__) && defined(__FMA__)
template <>
struct Simd<float> {
  using V = __m256;
  static constexpr int kWidth = 8;
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V zero() { return _mm256_setzero_ps(); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
};
template <>
struct Simd<double> {
  using V = __m256d;
  static constexpr int kWidth = 4;
  static V load(const double* p) { return _mm256_loadu_pd(p); }
  static void store(double* p, V v) { _mm256_storeu_pd(p, v); }
  static V set1(double x) { return _mm256_set1_pd(x); }
  static V zero() { return _mm256_setzero_pd(); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_pd(a, b); }
  static V add(V a, V b) { return _mm256_add_pd(a, b); }
};
#else
// Portable fallback: one lane, std::fma (correctly rounded, as the generic path's fma_in).
template <class T>
struct Simd {
  using V = T;
  static constexpr int kWidth = 1;
  static V load(const T* p) { return *p; }
  static void store(T* p, V v) { *p = v; }
  static V set1(T x) { return x; }
  static V zero() { return T(0); }
  static V fma(V a, V b, V c) { return std::fma(a, b, c); }
  static V mul(V a, V b) { return a * b; }
  static V add(V a, V b) { return a + b; }
};
#endif

inline int round_up(int n, int multiple) {
  return (n + multiple - 1) / multiple * multiple;
}

// acc + a*b as the policy accumulates: one rounding (fused) or two.
template <class T, bool kFused>
inline typename Simd<T>::V mac(typename Simd<T>::V acc, typename Simd<T>::V a,
                               typename Simd<T>::V b) {
  if constexpr (kFused) {
    return Simd<T>::fma(a, b, acc);
  } else {
    return Simd<T>::add(acc, Simd<T>::mul(a, b));
  }
}

// Packs the (n, d) rows of K, in blocks of `block` rows, as (d, padded) column-major tiles:
// out[(blk * d + t) * padded + jj] = k[(blk * block + jj) * d + t]; padding lanes are 0.
template <class T>
void pack_kt(const double* k, int n, int d, int block, int padded, T* out) {
  const int blocks = (n + block - 1) / block;
  for (int blk = 0; blk < blocks; ++blk) {
    T* tile = out + static_cast<std::size_t>(blk) * d * padded;
    for (int t = 0; t < d; ++t)
      for (int jj = 0; jj < padded; ++jj) {
        const int j = blk * block + jj;
        tile[static_cast<std::size_t>(t) * padded + jj] =
            (jj < block && j < n) ? static_cast<T>(k[static_cast<std::size_t>(j) * d + t]) : T(0);
      }
  }
}

// Rows of an (n, d) tensor as (n, ld) with zero padding to ld columns.
template <class T>
void pack_rows(const double* x, int n, int d, int ld, T* out) {
  for (int i = 0; i < n; ++i)
    for (int t = 0; t < ld; ++t)
      out[static_cast<std::size_t>(i) * ld + t] =
          t < d ? static_cast<T>(x[static_cast<std::size_t>(i) * d + t]) : T(0);
}

// S(rows, padded) = Q(rows, d; ld_q) . Kt(d, padded): one sequential dot product per (i, j).
template <class T, bool kFused, int kRows, int kCols>
inline void qk_tile(const T* q, int ld_q, const T* kt, int d, int padded, T* s, int ld_s) {
  using S = Simd<T>;
  constexpr int W = S::kWidth;
  typename S::V acc[kRows][kCols];
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kCols; ++c) acc[r][c] = S::zero();
  for (int t = 0; t < d; ++t) {
    typename S::V kv[kCols];
    for (int c = 0; c < kCols; ++c)
      kv[c] = S::load(kt + static_cast<std::size_t>(t) * padded + c * W);
    for (int r = 0; r < kRows; ++r) {
      const typename S::V qv = S::set1(q[static_cast<std::size_t>(r) * ld_q + t]);
      for (int c = 0; c < kCols; ++c) acc[r][c] = mac<T, kFused>(acc[r][c], qv, kv[c]);
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kCols; ++c)
      S::store(s + static_cast<std::size_t>(r) * ld_s + c * W, acc[r][c]);
}

// S(rows, padded; ld_s) = Q(rows, d) . Kt(d, padded). Column chunks outer, row groups inner: a
// chunk of K^T (d x 2W) stays in L1 while every row group of the block streams past it.
template <class T, bool kFused>
void qk_block(const T* q, int rows, int d, const T* kt, int padded, T* s, int ld_s) {
  constexpr int W = Simd<T>::kWidth;
  constexpr int kRows = 4;
  auto chunk = [&]<int kCols>(int c) {
    int r = 0;
    for (; r + kRows <= rows; r += kRows)
      qk_tile<T, kFused, kRows, kCols>(q + static_cast<std::size_t>(r) * d, d, kt + c, d, padded,
                                       s + static_cast<std::size_t>(r) * ld_s + c, ld_s);
    for (; r < rows; ++r)
      qk_tile<T, kFused, 1, kCols>(q + static_cast<std::size_t>(r) * d, d, kt + c, d, padded,
                                   s + static_cast<std::size_t>(r) * ld_s + c, ld_s);
  };
  int c = 0;
  for (; c + 2 * W <= padded; c += 2 * W) chunk.template operator()<2>(c);
  for (; c < padded; c += W) chunk.template operator()<1>(c);
}

// acc(kRows, ld) += P(kRows, j in [0, n); ld_p) . V(n, ld), over one column chunk of kCols vectors.
template <class T, bool kFused, int kRows, int kCols>
inline void pv_tile(const T* p, int ld_p, int n, const T* v, int ld, T* acc, int c0) {
  using S = Simd<T>;
  constexpr int W = S::kWidth;
  typename S::V a[kRows][kCols];
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kCols; ++c)
      a[r][c] = S::load(acc + static_cast<std::size_t>(r) * ld + c0 + c * W);
  for (int j = 0; j < n; ++j) {
    typename S::V vv[kCols];
    for (int c = 0; c < kCols; ++c)
      vv[c] = S::load(v + static_cast<std::size_t>(j) * ld + c0 + c * W);
    for (int r = 0; r < kRows; ++r) {
      const typename S::V pv = S::set1(p[static_cast<std::size_t>(r) * ld_p + j]);
      for (int c = 0; c < kCols; ++c) a[r][c] = mac<T, kFused>(a[r][c], pv, vv[c]);
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kCols; ++c)
      S::store(acc + static_cast<std::size_t>(r) * ld + c0 + c * W, a[r][c]);
}

template <class T, bool kFused, int kRows>
void pv_rows(const T* p, int ld_p, int n, const T* v, int ld, T* acc) {
  constexpr int W = Simd<T>::kWidth;
  int c = 0;
  for (; c + 4 * W <= ld; c += 4 * W) pv_tile<T, kFused, kRows, 4>(p, ld_p, n, v, ld, acc, c);
  for (; c < ld; c += W) pv_tile<T, kFused, kRows, 1>(p, ld_p, n, v, ld, acc, c);
}

// acc(rows, ld) += P . V where row r uses keys j in [0, count[r]) only (the rest of its row of P
// is masked or inactive). Rows are taken four at a time over their common prefix of keys; each
// row's remaining keys follow, continuing in increasing j, so every element's order is j = 0, 1,
// ...
template <class T, bool kFused>
void pv_block(const T* p, int ld_p, const int* count, int rows, const T* v, int ld, T* acc) {
  int r = 0;
  for (; r + 4 <= rows; r += 4) {
    const int common =
        std::min(std::min(count[r], count[r + 1]), std::min(count[r + 2], count[r + 3]));
    const T* pr = p + static_cast<std::size_t>(r) * ld_p;
    T* ar = acc + static_cast<std::size_t>(r) * ld;
    if (common > 0) pv_rows<T, kFused, 4>(pr, ld_p, common, v, ld, ar);
    for (int rr = 0; rr < 4; ++rr) {
      const int extra = count[r + rr] - common;
      if (extra > 0)
        pv_rows<T, kFused, 1>(pr + static_cast<std::size_t>(rr) * ld_p + common, ld_p, extra,
                              v + static_cast<std::size_t>(common) * ld, ld,
                              ar + static_cast<std::size_t>(rr) * ld);
    }
  }
  for (; r < rows; ++r)
    if (count[r] > 0)
      pv_rows<T, kFused, 1>(p + static_cast<std::size_t>(r) * ld_p, ld_p, count[r], v, ld,
                            acc + static_cast<std::size_t>(r) * ld);
}

}  // namespace attndev::attention::detail

namespace attndev::attention::detail {

// Q, K^T (packed per column block) and V of every (batch, head) in the compute type, converted
// once per run (exact: the fast paths run only when the input format fits in T).
template <class T>
struct Packed {
  int d = 0, ld_v = 0, block = 0, padded = 0, blocks = 0;
  int seq_q = 0, seq_kv = 0;
  std::vector<T> q;   // (B*H, N_q, d)
  std::vector<T> kt;  // (B*H, blocks, d, padded)
  std::vector<T> v;   // (B*H, N_kv, ld_v)

  const T* q_head(int bh) const { return q.data() + static_cast<std::size_t>(bh) * seq_q * d; }
  const T* kt_tile(int bh, int blk) const {
    return kt.data() + (static_cast<std::size_t>(bh) * blocks + blk) * d * padded;
  }
  const T* v_head(int bh) const { return v.data() + static_cast<std::size_t>(bh) * seq_kv * ld_v; }
};

// q, k, v: (B, H, N, d) tensors of the problem's shape (the problem's own, or the fp8
// algorithms' quantized values).
template <class T>
Packed<T> pack_tensors(const Problem& p, const Tensor& q, const Tensor& k, const Tensor& v,
                       int block) {
  constexpr int W = Simd<T>::kWidth;
  Packed<T> pk;
  pk.d = p.shape.head_dim;
  pk.ld_v = round_up(pk.d, W);
  pk.block = block;
  pk.padded = round_up(block, W);
  pk.seq_q = p.shape.seq_q;
  pk.seq_kv = p.shape.seq_kv;
  pk.blocks = (pk.seq_kv + block - 1) / block;
  const std::size_t heads = static_cast<std::size_t>(p.shape.batch) * p.shape.heads;
  pk.q.resize(heads * pk.seq_q * pk.d);
  pk.kt.resize(heads * pk.blocks * pk.d * pk.padded);
  pk.v.resize(heads * pk.seq_kv * pk.ld_v);
  parallel_for(heads, p.threads, /*schedule_seed=*/0, [&](std::size_t bh) {
    const int b = static_cast<int>(bh / p.shape.heads), h = static_cast<int>(bh % p.shape.heads);
    pack_rows<T>(q.head_ptr(b, h), pk.seq_q, pk.d, pk.d, pk.q.data() + bh * pk.seq_q * pk.d);
    pack_kt<T>(k.head_ptr(b, h), pk.seq_kv, pk.d, block, pk.padded,
               pk.kt.data() + bh * pk.blocks * pk.d * pk.padded);
    pack_rows<T>(v.head_ptr(b, h), pk.seq_kv, pk.d, pk.ld_v,
                 pk.v.data() + bh * pk.seq_kv * pk.ld_v);
  });
  return pk;
}

template <class T>
Packed<T> pack_inputs(const Problem& p, int block) {
  return pack_tensors<T>(p, p.q, p.k, p.v, block);
}

// A float rounded to F with numerics' bit operations (the identity for fp32).
template <numerics::Format F>
inline float round_float(float x) {
  if constexpr (F == numerics::Format::bf16) {
    return numerics::round_to_bf16(x);
  } else if constexpr (F == numerics::Format::fp16) {
    return numerics::round_to_fp16(x);
  } else if constexpr (F == numerics::Format::tf32) {
    return numerics::round_to_tf32(x);
  } else {
    static_assert(F == numerics::Format::fp32);
    return x;
  }
}

// The fast path's arithmetic model (rows/arith.hpp). Valid only where fast_kind() says so.
// Kernel model (kFramework = false): a stage computes in the format it stores:
//   score_accum, out_accum  T's own format: an operation rounded to it is one IEEE operation in T
//   stats                   T's own format, or (T = float) kStats = bf16/fp16/tf32: an operation
//                           is then numerics::fixed's exact-then-rounded one, the generic path's
//                           double sequence without branches (a float op rounded afterwards
//                           would be a double rounding); exp/exp2 are the float functions
//                           rounded once, exactly as exp_in/exp2_in define them
//   input, score, prob,     any format up to fp32: FloatRounder
//   output (storage)
// Framework model (kFramework = true, T = float): every stage computes in fp32 (PyTorch's opmath
// for every format narrower than double) and an operation's output is stored in its stage's
// format: one IEEE float operation, then FloatRounder, exactly the generic path's *_in(fp32)
// followed by policy.round(stage). An intermediate Held{stage} skips the store.
template <class T, bool kFused,
          numerics::Format kStats =
              std::is_same_v<T, float> ? numerics::Format::fp32 : numerics::Format::fp64,
          bool kFramework = false>
struct NativeArith {
  using Value = T;
  numerics::PrecisionPolicy policy;
  numerics::FloatRounder rounder[numerics::kAllStages.size()];  // (T = float) each stage's rounding

  explicit NativeArith(const numerics::PrecisionPolicy& p) : policy(p) {
    for (numerics::Stage s : numerics::kAllStages)
      rounder[static_cast<int>(s)] = numerics::FloatRounder(p, s);
  }

  static constexpr bool kNarrowStats = numerics::fixed::kSupported<kStats>;
  static_assert(kNarrowStats || kStats == numerics::Format::fp32 ||
                kStats == numerics::Format::fp64);
  static_assert(!kFramework || (std::is_same_v<T, float> && !kNarrowStats),
                "the framework model computes every narrower stage in fp32");

  // An operation's result as `where` keeps it: a Stage's store (the framework model rounds it to
  // the stage's format; under the kernel model it was computed in that format), a Held's none.
  [[gnu::flatten]] T store(rows::Stage s, T x) const {
    if constexpr (kFramework) return rounder[static_cast<int>(s)](x);
    return x;
  }
  T store(rows::Held, T x) const { return x; }
  void store_all(rows::Stage s, T* x, int n) const {
    if constexpr (kFramework) {
      const numerics::FloatRounder r = rounder[static_cast<int>(s)];
      for (int i = 0; i < n; ++i) x[i] = r(x[i]);
    }
  }
  void store_all(rows::Held, T*, int) const {}

  // [[gnu::flatten]] on the operations: everything they call (exp_f32, numerics::fixed,
  // FloatRounder) is inlined into them, so the row functions' per-element loops see no call and
  // vectorize; GCC's inliner otherwise stops at the size of the exact-rounding sequences.
  template <class W>
  [[gnu::flatten]] T add(W w, T x, T y) const {
    return store(w, compute_add(rows::stage_of(w), x, y));
  }
  template <class W>
  [[gnu::flatten]] T sub(W w, T x, T y) const {
    return store(w, compute_add(rows::stage_of(w), x, -y));
  }
  template <class W>
  [[gnu::flatten]] T mul(W w, T x, T y) const {
    return store(w, compute_mul(rows::stage_of(w), x, y));
  }
  template <class W>
  [[gnu::flatten]] T div(W w, T x, T y) const {
    return store(w, compute_div(rows::stage_of(w), x, y));
  }
  // One step of a reduction, in the compute format (its result is stored by store/store_all).
  [[gnu::flatten]] T mac(rows::Stage s, T acc, T x, T y) const {
    if constexpr (kFused) {
      return compute_fma(s, x, y, acc);
    } else {
      return compute_add(s, acc, compute_mul(s, x, y));
    }
  }
  template <class W>
  [[gnu::flatten]] T mul_sub(W w, T x, T y, T z) const {
    const rows::Stage s = rows::stage_of(w);
    if constexpr (kFused) {
      return store(w, compute_fma(s, x, y, -z));
    } else {
      return store(w, compute_add(s, compute_mul(s, x, y), -z));
    }
  }
  template <class W>
  [[gnu::flatten]] T exp(W w, T x) const {
    if constexpr (std::is_same_v<T, float>) {
      return store(w, round_stats(rows::stage_of(w), numerics::exp_f32(x)));
    } else {
      if constexpr (kNarrowStats) {  // exp_in(F, x): the float function, rounded once to F
        if (rows::stage_of(w) == rows::Stage::stats)
          return numerics::fixed::round_to<kStats>(
              static_cast<double>(numerics::exp_f32(static_cast<float>(x))));
      }
      return numerics::exp_f64(x);
    }
  }
  template <class W>
  [[gnu::flatten]] T exp2(W w, T x) const {
    if constexpr (std::is_same_v<T, float>) {
      return store(w, round_stats(rows::stage_of(w), numerics::exp2_f32(x)));
    } else {
      if constexpr (kNarrowStats) {
        if (rows::stage_of(w) == rows::Stage::stats)
          return numerics::fixed::round_to<kStats>(
              static_cast<double>(numerics::exp2_f32(static_cast<float>(x))));
      }
      return numerics::exp2_f64(x);
    }
  }
  // A value as its stage stores it (every stage rounds: fp32 stages are the identity rounder).
  // T = double: fp64 arithmetic stages (or narrow statistics), storage stages of any format,
  // rounded by numerics' own round_to (the golden's stages are all fp64: nothing to do).
  [[gnu::flatten]] T round(rows::Stage s, T x) const {
    if constexpr (std::is_same_v<T, float>) {
      return rounder[static_cast<int>(s)](x);
    } else {
      return policy[s] == numerics::Format::fp64 ? x : policy.round(s, x);
    }
  }
  T round(rows::Held, T x) const { return x; }  // already in its format
  void round_all(rows::Stage s, T* x, int n) const {
    if constexpr (std::is_same_v<T, float>) {
      const numerics::FloatRounder r = rounder[static_cast<int>(s)];
      for (int i = 0; i < n; ++i) x[i] = r(x[i]);
    } else {
      if (policy[s] == numerics::Format::fp64) return;
      for (int i = 0; i < n; ++i) x[i] = policy.round(s, x[i]);
    }
  }

  // rows::sum_into, the same bits: a running sum in bf16/fp16 statistics is a chain of dependent
  // additions, and the exact add (TwoSum and a tie check in double) is long on that chain. When
  // both operands are values of F, fl32(a + b) rounded to F *is* RN_F(a + b): double rounding is
  // innocuous for + when the intermediate has p >= 2q + 2 bits (24 >= 2 * 11 + 2 for fp16, and
  // bf16's q = 8), and it was checked exhaustively over every pair of finite bf16 and of finite
  // fp16 values (tools/exhaustive_rounding). The running sum is in F after its first addition;
  // an operand that is not a value of F (NaN included) takes the exact path.
  template <class W>
  T sum_into(W where, T sum, const T* x, int n) const {
    const rows::Stage s = rows::stage_of(where);
    if constexpr (std::is_same_v<T, float> &&
                  (kStats == numerics::Format::bf16 || kStats == numerics::Format::fp16)) {
      if (s == rows::Stage::stats) {
        int j = 0;
        if (n > 0 && !(round_float<kStats>(sum) == sum)) {
          sum = compute_add(s, sum, x[0]);
          j = 1;
        }
        for (; j < n; ++j) {
          const T xj = x[j];
          sum = round_float<kStats>(xj) == xj ? round_float<kStats>(sum + xj)
                                              : compute_add(s, sum, xj);
        }
        return store(where, sum);
      }
    }
    for (int j = 0; j < n; ++j) sum = compute_add(s, sum, x[j]);
    return store(where, sum);
  }

 private:
  // An operation in stage s's compute format, before any store.
  T compute_add(rows::Stage s, T x, T y) const {
    if constexpr (kNarrowStats) {
      if (s == rows::Stage::stats) return static_cast<T>(numerics::fixed::add_in<kStats>(x, y));
    }
    return x + y;
  }
  T compute_mul(rows::Stage s, T x, T y) const {
    if constexpr (kNarrowStats) {
      if (s == rows::Stage::stats) return static_cast<T>(numerics::fixed::mul_in<kStats>(x, y));
    }
    return x * y;
  }
  T compute_div(rows::Stage s, T x, T y) const {
    if constexpr (kNarrowStats) {
      if (s == rows::Stage::stats) return static_cast<T>(numerics::fixed::div_in<kStats>(x, y));
    }
    return x / y;
  }
  T compute_fma(rows::Stage s, T x, T y, T z) const {
    if constexpr (kNarrowStats) {
      if (s == rows::Stage::stats) return static_cast<T>(numerics::fixed::fma_in<kStats>(x, y, z));
    }
    return std::fma(x, y, z);
  }
  // exp/exp2 of the kernel model's narrow statistics: the float function rounded once.
  float round_stats(rows::Stage s, float e) const {
    if constexpr (kNarrowStats) {
      if (s == rows::Stage::stats) return round_float<kStats>(e);
    }
    return e;
  }
};

// The SIMD QK^T and PV of the fast path over the packed inputs of one (batch, head), with the
// interface of rows::ScalarKernels: the row functions call either.
template <class T, bool kFused>
struct SimdKernels {
  const Packed<T>& pk;
  int bh;  // flat (batch * H + head)

  // Whole packed tiles: every key of each tile that holds a key some row needs (the extra
  // lanes are computed and never read).
  template <class A>
  void scores(const A&, int row_begin, int rows, int j0, const int* n, T* s, int ld_s) const {
    int n_max = 0;
    for (int r = 0; r < rows; ++r) n_max = std::max(n_max, n[r]);
    const T* q = pk.q_head(bh) + static_cast<std::size_t>(row_begin) * pk.d;  // (rows, d)
    const int first = j0 / pk.block;
    for (int blk = first; blk * pk.block < j0 + n_max; ++blk)
      qk_block<T, kFused>(q, rows, pk.d, pk.kt_tile(bh, blk), pk.padded,
                          s + static_cast<std::size_t>(blk - first) * pk.padded, ld_s);
  }

  // Keys in chunks of one packed block, in increasing order: the chunk of V stays in cache while
  // every row uses it, and each acc element still sums over j = 0, 1, ... in order.
  template <class A>
  void pv(const A&, const T* p, int ld_p, const int* count, int rows, int j0, T* acc,
          int ld_acc) const {
    const T* v = pk.v_head(bh) + static_cast<std::size_t>(j0) * pk.ld_v;  // (N_kv - j0, ld)
    int n_max = 0;
    for (int r = 0; r < rows; ++r) n_max = std::max(n_max, count[r]);
    if (n_max <= pk.block) {
      pv_block<T, kFused>(p, ld_p, count, rows, v, ld_acc, acc);
      return;
    }
    std::vector<int> chunk(static_cast<std::size_t>(rows));
    for (int c0 = 0; c0 < n_max; c0 += pk.block) {
      for (int r = 0; r < rows; ++r) chunk[r] = std::clamp(count[r] - c0, 0, pk.block);
      pv_block<T, kFused>(p + c0, ld_p, chunk.data(), rows,
                          v + static_cast<std::size_t>(c0) * pk.ld_v, ld_acc, acc);
    }
  }
};

}  // namespace attndev::attention::detail
