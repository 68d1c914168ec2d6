// The tensor cores' architecture profiles: for each architecture and input kind, how many
// products one fused dot-add takes, how many fraction bits F the aligned terms keep, how the
// instruction's k is split, and how the result D is rounded (mma.hpp has the arithmetic).
//
// Sources (docs/numerics.md, "Tensor cores", has the table and the wording of each):
//   [KM]  Khattak & Mikaitis, "Accurate Models of NVIDIA Tensor Cores" (arXiv 2512.07004, 2025);
//         their code north-numerical-computing/MATLAB-tensor-core, models/<GPU>TC.m: `fma`
//         (products per fused block), `neab` (F = 23 + neab), `min_exp_limit`, `frmode`.
//   [MS]  Xie et al., "MMA-Sim: Bit-Accurate Reference Model of Tensor Cores and Matrix Cores"
//         (arXiv 2511.10909, 2025); their code microsoft/MMA-Sim, mmasim/simulator/nv_ptx.py:
//         `arch_accum_fractional_bits`, `is_split_k`, output type "f32_e8m13".
//   [FH]  Fasi, Higham, Mikaitis, Pranesh, "Numerical behavior of NVIDIA tensor cores",
//         PeerJ Comput. Sci. 7:e330 (2021): truncation, no guard bits, the A100's k8 blocks.
//   [SA2] Zhang et al., "SageAttention2" (ICML 2025, arXiv 2411.10958, section 3.4): the fp8
//         mma accumulator of Ada and Hopper keeps 13 fraction bits ("FP22").
//
// A profile is a type with static constexpr parameters (one generic implementation in mma.hpp,
// the profile picked once by with_profile below); it never changes at run time inside a loop.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "format.hpp"
#include "host_device.hpp"

namespace attndev::numerics::mma {

// The architectures with a profile; none = no tensor-core model (FMA chains, the default).
enum class Arch : std::uint8_t { none, sm80, sm89, sm90, sm100 };
inline constexpr Arch kAllArchs[] = {Arch::sm80, Arch::sm89, Arch::sm90, Arch::sm100};

// The instruction families. Their numerics depend only on (architecture, kind): sm_90's mma.sync
// and wgmma share their parameters ([KM]'s H100 model was validated with mma.sync, [MS]'s with
// wgmma), as do sm_100's mma.sync and tcgen05.mma; the family decides only what exists.
enum class Instruction : std::uint8_t { mma, wgmma, tcgen05 };
inline constexpr Instruction kAllInstructions[] = {Instruction::mma, Instruction::wgmma,
                                                   Instruction::tcgen05};

// What the operands are, as far as the arithmetic cares:
//   f16   fp16 or bf16 (both operands the same)
//   tf32  fp32 registers read as tf32: each operand truncated to 10 fraction bits first
//   f8    fp8 e4m3 / e5m2 (the two may be mixed)
//   mxf8  tcgen05.mma kind::mxf8f6f4 with fp8 elements: one ue8m0 scale per 32 elements of A's
//         row and of B's column, whose exponents join the products' before alignment
enum class Kind : std::uint8_t { f16, tf32, f8, mxf8 };
inline constexpr Kind kAllKinds[] = {Kind::f16, Kind::tf32, Kind::f8, Kind::mxf8};

// The type of C and D. fp32: D rounded toward zero (to e8m13 where the profile says so); fp16:
// D rounded to nearest even.
enum class Output : std::uint8_t { fp32, fp16 };

// ---- Profiles -------------------------------------------------------------------------------
// Each: kInstructionK (k of one instruction), kBlock (products fused per dot-add: an instruction
// of k > kBlock runs k / kBlock dot-adds in increasing k, each one's D the next one's C),
// kFracBits (F), kE8m13 (an fp32 D rounded toward zero to 13 fraction bits instead of 23),
// kMinExp / kMinExpFp16 (the alignment exponent E is at least this, fp32 / fp16 output).

// A100 (sm_80), and Ada (sm_89) for 16-bit inputs. m16n8k16 runs as two k8 halves: [MS] is_split_k
// for Ampere/Ada k16 f16/bf16, [KM] A100TC.m / AdaTC.m fma = 8, [FH] (8-term blocks on A100).
struct Sm80F16 {
  static constexpr Arch kArch = Arch::sm80;
  static constexpr Kind kKind = Kind::f16;
  static constexpr int kInstructionK = 16;  // mma.m16n8k16
  static constexpr int kBlock = 8;          // [MS] is_split_k; [KM] fma = 8
  static constexpr int kFracBits = 24;      // [MS] Ampere 24; [KM] neab = 1
  static constexpr bool kE8m13 = false;
  static constexpr int kMinExp = -132;     // [KM] A100TC.m min_exp_limit
  static constexpr int kMinExpFp16 = -20;  // [KM] A100TC.m, fp16 output
};
// A100 / Ada tf32: m16n8k8 as two k4 halves ([MS] is_split_k k8 tf32; [KM] A100TC.m fma = 4).
struct Sm80Tf32 {
  static constexpr Arch kArch = Arch::sm80;
  static constexpr Kind kKind = Kind::tf32;
  static constexpr int kInstructionK = 8;  // mma.m16n8k8
  static constexpr int kBlock = 4;         // [MS] is_split_k; [KM] fma = 4
  static constexpr int kFracBits = 24;     // [MS] Ampere 24; [KM] neab = 1
  static constexpr bool kE8m13 = false;
  static constexpr int kMinExp = -132;      // [KM] A100TC.m min_exp_limit
  static constexpr int kMinExpFp16 = -132;  // no fp16 output for tf32
};
// Ada (sm_89) fp8: m16n8k32 as two k16 halves, F = 13, D rounded toward zero to e8m13 ([MS]
// nv_ptx.py: Ada Lovelace fp8 -> 13 bits, "f32_e8m13", is_split_k; [KM] AdaTC.m fma = 16,
// neab = -10; [SA2] "FP22").
struct Sm89F8 {
  static constexpr Arch kArch = Arch::sm89;
  static constexpr Kind kKind = Kind::f8;
  static constexpr int kInstructionK = 32;  // mma.m16n8k32
  static constexpr int kBlock = 16;         // [MS] is_split_k; [KM] fma = 16
  static constexpr int kFracBits = 13;      // [MS] 13; [KM] neab = -10
  static constexpr bool kE8m13 = true;      // [MS] "f32_e8m13"; [SA2]
  static constexpr int kMinExp = -132;      // [KM] AdaTC.m min_exp_limit
  static constexpr int kMinExpFp16 = -132;  // [KM] keeps the fp32 limit for fp8 inputs
};
// H100 / H200 (sm_90) 16-bit: one block of 16, F = 25, mma.sync m16n8k16 and wgmma k16 alike
// ([MS] Hopper 25, no split; [KM] H100TC.m fma = 16, neab = 2).
struct Sm90F16 {
  static constexpr Arch kArch = Arch::sm90;
  static constexpr Kind kKind = Kind::f16;
  static constexpr int kInstructionK = 16;  // mma.m16n8k16, wgmma k16
  static constexpr int kBlock = 16;         // [KM] fma = 16; [MS] no split on Hopper
  static constexpr int kFracBits = 25;      // [MS] Hopper 25; [KM] neab = 2
  static constexpr bool kE8m13 = false;
  static constexpr int kMinExp = -133;     // [KM] H100TC.m min_exp_limit
  static constexpr int kMinExpFp16 = -21;  // [KM] H100TC.m, fp16 output
};
// H100 / H200 tf32: k8 in one block ([KM] H100TC.m fma = 8; [MS] wgmma tf32, 25 bits).
struct Sm90Tf32 {
  static constexpr Arch kArch = Arch::sm90;
  static constexpr Kind kKind = Kind::tf32;
  static constexpr int kInstructionK = 8;  // mma.m16n8k8, wgmma k8
  static constexpr int kBlock = 8;         // [KM] fma = 8
  static constexpr int kFracBits = 25;     // [MS] 25; [KM] neab = 2
  static constexpr bool kE8m13 = false;
  static constexpr int kMinExp = -133;  // [KM] H100TC.m min_exp_limit
  static constexpr int kMinExpFp16 = -133;
};
// H100 / H200 fp8: 32 products in one block, F = 13, D rounded toward zero to e8m13 ([MS]
// wgmma fp8 -> 13 bits, "f32_e8m13"; [KM] H100TC.m fma = 32, neab = -10, validated with mma.sync
// m16n8k32; [SA2] "FP22"; DeepSeek-V3 report, section 3.3.2: "around 14 bits").
struct Sm90F8 {
  static constexpr Arch kArch = Arch::sm90;
  static constexpr Kind kKind = Kind::f8;
  static constexpr int kInstructionK = 32;  // mma.m16n8k32, wgmma k32
  static constexpr int kBlock = 32;         // [KM] fma = 32
  static constexpr int kFracBits = 13;      // [MS] 13; [KM] neab = -10
  static constexpr bool kE8m13 = true;      // [MS] "f32_e8m13"; [SA2]
  static constexpr int kMinExp = -133;      // [KM] H100TC.m min_exp_limit
  static constexpr int kMinExpFp16 = -133;
};
// B200 (sm_100) 16-bit: as sm_90 ([MS] Blackwell 25; [KM] B200TC.m fma = 16, neab = 2).
struct Sm100F16 {
  static constexpr Arch kArch = Arch::sm100;
  static constexpr Kind kKind = Kind::f16;
  static constexpr int kInstructionK = 16;  // mma.m16n8k16, tcgen05.mma kind::f16
  static constexpr int kBlock = 16;         // [KM] fma = 16
  static constexpr int kFracBits = 25;      // [MS] Blackwell 25; [KM] neab = 2
  static constexpr bool kE8m13 = false;
  static constexpr int kMinExp = -133;     // [KM] B200TC.m min_exp_limit
  static constexpr int kMinExpFp16 = -21;  // [KM] B200TC.m, fp16 output
};
// B200 tf32 ([KM] B200TC.m fma = 8; [MS] tcgen05 25 bits).
struct Sm100Tf32 {
  static constexpr Arch kArch = Arch::sm100;
  static constexpr Kind kKind = Kind::tf32;
  static constexpr int kInstructionK = 8;  // tcgen05.mma kind::tf32
  static constexpr int kBlock = 8;         // [KM] fma = 8
  static constexpr int kFracBits = 25;     // [MS] 25; [KM] neab = 2
  static constexpr bool kE8m13 = false;
  static constexpr int kMinExp = -133;  // [KM] B200TC.m min_exp_limit
  static constexpr int kMinExpFp16 = -133;
};
// B200 fp8: 32 products, back to F = 25 and an fp32 D ([MS] tcgen05 kind::f8f6f4, 25 bits;
// [KM] B200TC.m fma = 32 with the default neab = 2).
struct Sm100F8 {
  static constexpr Arch kArch = Arch::sm100;
  static constexpr Kind kKind = Kind::f8;
  static constexpr int kInstructionK = 32;  // tcgen05.mma kind::f8f6f4
  static constexpr int kBlock = 32;         // [KM] fma = 32
  static constexpr int kFracBits = 25;      // [MS] 25; [KM] neab = 2
  static constexpr bool kE8m13 = false;
  static constexpr int kMinExp = -133;  // [KM] B200TC.m min_exp_limit
  static constexpr int kMinExpFp16 = -133;
};
// B200 block-scaled kind::mxf8f6f4 (k32, one ue8m0 scale per 32): the scales' exponents are
// added to each product's before alignment ([MS] nv_ptx.py tcgen05mma_block_scale, k32 ->
// 25 bits; arithmetic.py fused_dot_add). [KM] has no block-scaled model: E's lower limit is
// the plain fp8 one.
struct Sm100MxF8 {
  static constexpr Arch kArch = Arch::sm100;
  static constexpr Kind kKind = Kind::mxf8;
  static constexpr int kInstructionK = 32;  // tcgen05.mma kind::mxf8f6f4
  static constexpr int kBlock = 32;         // [MS] one fused sum per instruction
  static constexpr int kFracBits = 25;      // [MS] 25
  static constexpr bool kE8m13 = false;
  static constexpr int kMinExp = -133;
  static constexpr int kMinExpFp16 = -133;
};

// ---- Names ----------------------------------------------------------------------------------

inline constexpr const char* arch_name(Arch a) {
  switch (a) {
    case Arch::none:
      return "none";
    case Arch::sm80:
      return "sm80";
    case Arch::sm89:
      return "sm89";
    case Arch::sm90:
      return "sm90";
    case Arch::sm100:
      return "sm100";
  }
  return "?";
}
inline constexpr const char* instruction_name(Instruction i) {
  switch (i) {
    case Instruction::mma:
      return "mma";
    case Instruction::wgmma:
      return "wgmma";
    case Instruction::tcgen05:
      return "tcgen05";
  }
  return "?";
}
inline constexpr const char* kind_name(Kind k) {
  switch (k) {
    case Kind::f16:
      return "fp16/bf16";
    case Kind::tf32:
      return "tf32";
    case Kind::f8:
      return "fp8 (e4m3/e5m2)";
    case Kind::mxf8:
      return "block-scaled mxf8f6f4";
  }
  return "?";
}

// Host only. "sm80" (also "sm_80", "a100"), ... and "none".
inline bool parse_arch(std::string_view text, Arch& out) {
  struct Alias {
    std::string_view name;
    Arch arch;
  };
  static constexpr Alias kAliases[] = {
      {"none", Arch::none},  {"sm80", Arch::sm80},  {"sm_80", Arch::sm80},  {"a100", Arch::sm80},
      {"sm89", Arch::sm89},  {"sm_89", Arch::sm89}, {"ada", Arch::sm89},    {"sm90", Arch::sm90},
      {"sm_90", Arch::sm90}, {"h100", Arch::sm90},  {"sm100", Arch::sm100}, {"sm_100", Arch::sm100},
      {"b200", Arch::sm100},
  };
  for (const Alias& a : kAliases) {
    if (a.name == text) {
      out = a.arch;
      return true;
    }
  }
  return false;
}
inline bool parse_instruction(std::string_view text, Instruction& out) {
  for (Instruction i : kAllInstructions) {
    if (text == instruction_name(i)) {
      out = i;
      return true;
    }
  }
  return false;
}

// The kind an operand format is read as: fp32 and tf32 registers are read as tf32; fp64 has no
// tensor-core dot-add (fp64 mma is a chain of IEEE FMAs). False for fp64.
ATTNDEV_HD constexpr bool kind_of(Format f, Kind& out) {
  switch (f) {
    case Format::fp16:
    case Format::bf16:
      out = Kind::f16;
      return true;
    case Format::fp32:
    case Format::tf32:
      out = Kind::tf32;
      return true;
    case Format::fp8_e4m3:
    case Format::fp8_e5m2:
      out = Kind::f8;
      return true;
    case Format::fp64:
    // The quantization formats (fp6, fp4, scales, integers) are operands of the recipes' own
    // instructions (attention/quant_mma.hpp), not of these kinds.
    case Format::fp6_e2m3:
    case Format::fp6_e3m2:
    case Format::fp4_e2m1:
    case Format::e8m0:
    case Format::ue4m3:
    case Format::int8:
    case Format::int4:
      return false;
  }
  return false;
}

// The kind of a pair of operand formats: false when no tensor-core instruction multiplies them
// (fp16 by bf16, a 16-bit by an 8-bit format, fp64).
ATTNDEV_HD constexpr bool kind_of(Format a, Format b, Kind& out) {
  Kind ka{}, kb{};
  if (!kind_of(a, ka) || !kind_of(b, kb) || ka != kb) return false;
  if (ka == Kind::f16 && a != b) return false;
  out = ka;
  return true;
}

// ---- The chooser ----------------------------------------------------------------------------

// Does `arch` have `instruction` at all? wgmma exists on sm_90 only, tcgen05.mma on sm_100 only.
ATTNDEV_HD constexpr bool has_instruction(Arch arch, Instruction instruction) {
  switch (instruction) {
    case Instruction::mma:
      return arch != Arch::none;
    case Instruction::wgmma:
      return arch == Arch::sm90;
    case Instruction::tcgen05:
      return arch == Arch::sm100;
  }
  return false;
}

// The one place (architecture, instruction, kind) becomes a profile type: calls visit(P{}) and
// returns true, or returns false without calling it when the combination does not exist (fp8
// before sm_89, block-scaled kinds before sm_100 or outside tcgen05.mma). supported() and
// profile_error() ask this same function, so "is it supported?" and "which profile runs" cannot
// disagree.
template <class Visit>
ATTNDEV_HD constexpr bool with_profile(Arch arch, Instruction instruction, Kind kind,
                                       Visit&& visit) {
  if (!has_instruction(arch, instruction)) return false;
  switch (arch) {
    case Arch::none:
      return false;
    case Arch::sm80:
      if (kind == Kind::f16) return visit(Sm80F16{}), true;
      if (kind == Kind::tf32) return visit(Sm80Tf32{}), true;
      return false;
    case Arch::sm89:
      if (kind == Kind::f16) return visit(Sm80F16{}), true;
      if (kind == Kind::tf32) return visit(Sm80Tf32{}), true;
      if (kind == Kind::f8) return visit(Sm89F8{}), true;
      return false;
    case Arch::sm90:
      if (kind == Kind::f16) return visit(Sm90F16{}), true;
      if (kind == Kind::tf32) return visit(Sm90Tf32{}), true;
      if (kind == Kind::f8) return visit(Sm90F8{}), true;
      return false;
    case Arch::sm100:
      if (kind == Kind::f16) return visit(Sm100F16{}), true;
      if (kind == Kind::tf32) return visit(Sm100Tf32{}), true;
      if (kind == Kind::f8) return visit(Sm100F8{}), true;
      if (kind == Kind::mxf8 && instruction == Instruction::tcgen05)
        return visit(Sm100MxF8{}), true;
      return false;
  }
  return false;
}

// The instruction a policy's GEMMs use on an architecture when none is named: the one that
// has every kind the architecture has (tcgen05.mma on sm_100, mma.sync elsewhere).
ATTNDEV_HD constexpr Instruction default_instruction(Arch arch) {
  return arch == Arch::sm100 ? Instruction::tcgen05 : Instruction::mma;
}

ATTNDEV_HD constexpr bool supported(Arch arch, Instruction instruction, Kind kind) {
  return with_profile(arch, instruction, kind, [](auto) {});
}
ATTNDEV_HD constexpr bool supported(Arch arch, Kind kind) {
  return supported(arch, default_instruction(arch), kind);
}

// Host only. Empty when supported; else why not, naming what does support it, e.g.
//   "sm80 has no tensor-core instruction for fp8 (e4m3/e5m2); profiles that do: sm89, sm90,
//    sm100"
inline std::string profile_error(Arch arch, Instruction instruction, Kind kind) {
  if (arch == Arch::none) return "no architecture named (sm80, sm89, sm90, sm100)";
  if (!has_instruction(arch, instruction)) {
    std::string have;
    for (Arch a : kAllArchs)
      if (has_instruction(a, instruction))
        have += (have.empty() ? "" : ", ") + std::string(arch_name(a));
    return std::string(arch_name(arch)) + " has no " + instruction_name(instruction) +
           " instruction (" + instruction_name(instruction) + " exists on " + have + ")";
  }
  if (supported(arch, instruction, kind)) return {};
  std::string have;
  for (Arch a : kAllArchs) {
    std::string name;
    if (supported(a, default_instruction(a), kind)) {
      name = arch_name(a);
    } else {
      for (Instruction i : kAllInstructions)
        if (name.empty() && supported(a, i, kind))
          name = std::string(arch_name(a)) + " " + instruction_name(i);
    }
    if (!name.empty()) have += (have.empty() ? "" : ", ") + name;
  }
  return std::string(arch_name(arch)) + " " + instruction_name(instruction) +
         " has no tensor-core instruction for " + kind_name(kind) + "; profiles that do: " + have;
}
inline std::string profile_error(Arch arch, Kind kind) {
  return profile_error(arch, default_instruction(arch), kind);
}

}  // namespace attndev::numerics::mma
