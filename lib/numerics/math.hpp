// Elementary functions used inside emulated arithmetic.
//
// The emulator and the CUDA kernels must compute exp/exp2 bit-identically, so neither may call
// the platform's libm (glibc and CUDA's libdevice differ in the last bit). These are our own
// implementations from + - * and explicit fma only, compiled the same way on host and device.
//
// exp_in(f, x) / exp2_in(f, x): the function evaluated in the working precision a kernel would use
// for a stage stored in f (fp32 arithmetic for every format up to fp32, fp64 for fp64), then
// rounded once to f.
#pragma once

#include <cmath>

#include "format.hpp"
#include "host_device.hpp"
#include "round.hpp"

namespace attndev::numerics {

// TODO(numerics): replace with deterministic polynomial implementations (owner: numerics work).
ATTNDEV_HD inline float exp2_f32(float x) { return exp2f(x); }
ATTNDEV_HD inline float exp_f32(float x) { return expf(x); }
ATTNDEV_HD inline double exp2_f64(double x) { return exp2(x); }
ATTNDEV_HD inline double exp_f64(double x) { return exp(x); }

ATTNDEV_HD inline double exp2_in(Format f, double x) {
  if (f == Format::fp64) return exp2_f64(x);
  return round_to(f, static_cast<double>(exp2_f32(static_cast<float>(x))));
}
ATTNDEV_HD inline double exp_in(Format f, double x) {
  if (f == Format::fp64) return exp_f64(x);
  return round_to(f, static_cast<double>(exp_f32(static_cast<float>(x))));
}

}  // namespace attndev::numerics
