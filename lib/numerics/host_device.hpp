// Lets lib/numerics compile unchanged under g++ and nvcc without including any CUDA header:
// a CPU-only build never needs the toolkit.
#pragma once

#if defined(__CUDACC__)
#define ATTNDEV_HD __host__ __device__
#else
#define ATTNDEV_HD
#endif
