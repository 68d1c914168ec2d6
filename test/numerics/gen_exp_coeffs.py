#!/usr/bin/env python3
"""Generates the polynomial coefficients of lib/numerics/math.hpp (run by hand; needs mpmath).

Each kernel evaluates f(r) = 1 + r * g(r) on the reduced interval, with g fitted in Chebyshev
form at 60 digits (near-minimax), then each coefficient rounded once to the target precision.
Prints C++ hex-float literals (highest degree first, Horner order) and the fit's max error.
"""
import mpmath as mp

mp.mp.dps = 60


def fit(func, lo, hi, degree):
    # (func(r) - 1) / r has a removable singularity at 0: the Taylor value fills it in.
    def g(r):
        if abs(r) < mp.mpf("1e-30"):
            return mp.diff(func, 0)
        return (func(r) - 1) / r
    coeffs, err = mp.chebyfit(g, [lo, hi], degree + 1, error=True)
    return coeffs, err


def hexlit(x, single):
    v = float(x)
    if single:
        import struct
        v = struct.unpack("f", struct.pack("f", v))[0]
    mant, exp = v.hex().split("p")
    mant = mant.rstrip("0").rstrip(".") if "." in mant else mant
    return mant + "p" + exp + ("f" if single else "")


CASES = [
    ("exp2_f32", lambda r: mp.power(2, r), mp.mpf("-0.5"), mp.mpf("0.5"), 5, True),
    ("exp_f32", mp.exp, -mp.mpf("0.3475"), mp.mpf("0.3475"), 5, True),
    ("exp2_f64", lambda r: mp.power(2, r), mp.mpf("-0.5"), mp.mpf("0.5"), 10, False),
    ("exp_f64", mp.exp, -mp.mpf("0.3475"), mp.mpf("0.3475"), 10, False),
]

for name, func, lo, hi, degree, single in CASES:
    coeffs, err = fit(func, lo, hi, degree)
    print(f"// {name}: g of degree {degree} on [{mp.nstr(lo, 6)}, {mp.nstr(hi, 6)}], "
          f"fit error {mp.nstr(err, 3)}")
    print("  " + ", ".join(hexlit(c, single) for c in coeffs))
