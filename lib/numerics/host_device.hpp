// Lets lib/numerics compile unchanged under g++ and nvcc without including any CUDA header:
// a CPU-only build never needs the toolkit.
#pragma once

#if defined(__CUDACC__)
#define ATTNDEV_HD __host__ __device__
#else
#define ATTNDEV_HD
#endif

// ATTNDEV_HD for a function that device code calls out of line instead of inlining. The faithful
// kernels (lib/cuda/faithful_flash.cuh) run the row functions under a policy known only at run
// time, so every arithmetic operation of a row reaches round_to's dispatch on the format. Inlined
// at each of those thousands of call sites, one kernel's body grew to about 100,000 PTX lines and
// ptxas, whose time grows faster than the body, spent 3.5 minutes per architecture on
// faithful_launch.cu (a third of a cold build's compile work). Called out of line, the file
// compiles in about 20 s. No bit changes: it is the same code, and --fmad=false forbids a
// contraction on either side of the call as it did inside the inlined body. Host code built by
// the C++ compiler still inlines freely (the CPU emulator's reference path is unchanged).
#if defined(__CUDACC__)
#define ATTNDEV_HD_OUTLINE __host__ __device__ __noinline__ inline
#else
#define ATTNDEV_HD_OUTLINE inline
#endif
