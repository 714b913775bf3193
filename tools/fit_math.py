"""Fit the polynomial coefficients of csrc/core/simd/math.h and write
csrc/core/simd/math_poly.h (the coefficients, rounded to double and to
float; pi/2 in three parts) and csrc/core/simd/math_twoopi.h (the bits of 2/pi for the
reduction of large sin / cos arguments).

    python tools/fit_math.py            writes both headers
    python tools/fit_math.py --check    prints each fit's error only

Every fit is a Chebyshev interpolation (mpmath.chebyfit, near minimax) in
mpmath at 60 digits; the coefficients are then rounded to the target type
and the rounded polynomial's relative error against the function is
measured on 4000 points of the interval (printed, and written beside each
polynomial in the header). Reproducible: the same mpmath gives the same
header byte for byte.
"""
import argparse
import os
import sys

import mpmath as mp
import numpy as np

mp.mp.dps = 60
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POLY_H = os.path.join(ROOT, "csrc", "core", "simd", "math_poly.h")
TWOOPI_H = os.path.join(ROOT, "csrc", "core", "simd", "math_twoopi.h")


def rnd(x, f64):
    """x rounded to double or float (round to nearest even)."""
    return mp.mpf(float(x)) if f64 else mp.mpf(float(np.float32(float(x))))


def fit(f, a, b, deg, f64, rel_to=None):
    """Coefficients c[0..deg] (lowest first) of a Chebyshev fit of f on
    [a, b], rounded; and the rounded polynomial's max relative error
    (relative to rel_to(x) when given, else to f(x))."""
    a, b = mp.mpf(a), mp.mpf(b)
    poly, _ = mp.chebyfit(f, [a, b], deg + 1, error=True)
    c = [rnd(p, f64) for p in reversed(poly)]
    worst = mp.mpf(0)
    for i in range(4001):
        x = a + (b - a) * i / 4000
        y = mp.polyval(list(reversed(c)), x)
        ref = f(x)
        den = abs(rel_to(x)) if rel_to else abs(ref)
        if den:
            worst = max(worst, abs(y - ref) / den)
    return c, worst


# --- the functions ---------------------------------------------------------
def sin_s(z):
    """sin(r) = r + r^3 S(r^2)"""
    if z == 0:
        return mp.mpf(-1) / 6
    r = mp.sqrt(z)
    return (mp.sin(r) - r) / (z * r)


def cos_c(z):
    """cos(r) = 1 - r^2 / 2 + r^4 C(r^2)"""
    if z == 0:
        return mp.mpf(1) / 24
    r = mp.sqrt(z)
    return (mp.cos(r) - 1 + z / 2) / (z * z)


def tanh_t(z):
    """tanh(x) = x + x^3 T(x^2)"""
    if z == 0:
        return mp.mpf(-1) / 3
    x = mp.sqrt(z)
    return (mp.tanh(x) - x) / (z * x)


def log_p(z):
    """log((1 + s) / (1 - s)) = 2 s + s^3 P(s^2)"""
    if z == 0:
        return mp.mpf(2) / 3
    s = mp.sqrt(z)
    return (2 * mp.atanh(s) - 2 * s) / (z * s)


def phi_a(z):
    """Phi(h) = 1/2 + h A(h^2)"""
    if z == 0:
        return 1 / mp.sqrt(2 * mp.pi)
    h = mp.sqrt(z)
    return (mp.ncdf(h) - mp.mpf(1) / 2) / h


def mills_g(u):
    """u R(u), R(u) = (1 - Phi(u)) / pdf(u) (Mills' ratio)"""
    return u * mp.ncdf(-u) / mp.npdf(u)


def mills_gw(w):
    """u R(u) as a function of w = 1 / u^2"""
    if w == 0:
        return mp.mpf(1)
    return mills_g(1 / mp.sqrt(w))


# (name, function, interval, degree for double, for float, shift, rel_to)
# shift: the polynomial is in x - shift (the interval's middle for the
# Mills pieces, where powers of u itself would be badly conditioned)
PI4 = mp.pi / 4 * mp.mpf("1.0001")     # |r| after the reduction, with slack
S_MAX = (mp.sqrt(2) - 1) / (mp.sqrt(2) + 1) * mp.mpf("1.0001")
TANH_X0 = mp.mpf("0.75")                # |x| below: the odd polynomial
PHI_U0 = mp.mpf("0.671875")             # |h| below: Phi = 1/2 + h A(h^2)
PHI_U1 = mp.mpf(2)
PHI_U2 = mp.mpf(4)                      # u above: u R(u) in w = 1 / u^2
FITS = [
    ("SIN", sin_s, (0, PI4 ** 2), 6, None, 0),
    ("COS", cos_c, (0, PI4 ** 2), 6, None, 0),
    ("LOG", log_p, (0, S_MAX ** 2), 8, 4, 0),
    ("TANH", tanh_t, (0, TANH_X0 ** 2), 14, 8, 0),
    ("PHA", phi_a, (0, PHI_U0 ** 2), 11, 6, 0),
    ("PHB", mills_g, (PHI_U0, PHI_U1), 18, 10, (PHI_U0 + PHI_U1) / 2),
    ("PHC", mills_g, (PHI_U1, PHI_U2), 18, 10, (PHI_U1 + PHI_U2) / 2),
    ("PHD", mills_gw, (0, 1 / PHI_U2 ** 2), 18, 10, 0),
]


def c_literal(x, f64):
    s = repr(float(x)) if f64 else repr(float(np.float32(float(x))))
    return s if f64 else s + "f"


def pio2_parts():
    """pi/2 as three doubles, for the reduction of sin / cos arguments"""
    p = mp.pi / 2
    parts = []
    for _ in range(3):
        d = float(p)
        parts.append(d)
        p -= mp.mpf(d)
    return parts


def poly_header(check_only):
    out = ["/* pi/2 = ATTN_PIO2_1 + ATTN_PIO2_2 + ATTN_PIO2_3 + O(2^-160) */"]
    for i, d in enumerate(pio2_parts()):
        out.append(f"#define ATTN_PIO2_{i + 1} ({d.hex()})")
    for name, f, (a, b), deg_d, deg_f, shift in FITS:
        for f64, deg in ((True, deg_d), (False, deg_f)):
            if deg is None:
                continue
            g = (lambda x, f=f, shift=shift: f(x + shift))
            c, err = fit(g, mp.mpf(a) - shift, mp.mpf(b) - shift, deg, f64)
            tag = "D" if f64 else "F"
            print(f"{name}_{tag}: degree {deg} on [{mp.nstr(a, 6)}, "
                  f"{mp.nstr(b, 6)}], relative error {mp.nstr(err, 3)} "
                  f"(2^{mp.nstr(mp.log(err, 2), 4) if err else '-inf'})",
                  file=sys.stderr)
            out.append(f"/* {name}_{tag}: degree {deg} on "
                       f"[{mp.nstr(a, 8)}, {mp.nstr(b, 8)}]"
                       + (f" in x - {mp.nstr(shift, 8)}" if shift else "")
                       + f"; rounded, relative error {mp.nstr(err, 2)} */")
            out.append(f"#define {name}_{tag}_N {deg}")
            if name.startswith("PH") or name == "LOG":
                # the constant term's rounding error, added back by the
                # evaluation (the term is the result's size)
                g0 = mp.chebyfit(g, [mp.mpf(a) - shift, mp.mpf(b) - shift],
                                 deg + 1)[-1]
                out.append(f"#define {name}_{tag}_LO "
                           f"({c_literal(rnd(g0 - c[0], f64), f64)})")
            if shift:
                out.append(f"#define {name}_{tag}_X0 {c_literal(shift, f64)}")
            out.append(f"#define {name}_{tag}" + " \\\n    {"
                       + ", \\\n     ".join(c_literal(ci, f64) for ci in c)
                       + "}")
    if check_only:
        return
    text = ("/*\n * simd/math_poly.h -- the polynomial coefficients of "
            "simd/math.h, written by\n * tools/fit_math.py (do not edit: "
            "run it). NAME_D / NAME_F: the\n * coefficients of x^0, x^1, ... "
            "rounded to double / float; NAME_<D|F>_N the degree;\n * "
            "NAME_<D|F>_X0 where the polynomial is in x - X0; NAME_<D|F>_LO "
            "the\n * constant term's rounding error.\n */\n"
            "#ifndef ATTNPY_SIMD_MATH_POLY_H\n#define ATTNPY_SIMD_MATH_POLY_H\n\n"
            + "\n".join(out) + "\n\n#endif /* ATTNPY_SIMD_MATH_POLY_H */\n")
    with open(POLY_H, "w") as fh:
        fh.write(text)


def twoopi_header(check_only):
    """2/pi's first 24 * 64 bits after the binary point, 64 a word."""
    nwords = 24
    with mp.workdps(nwords * 64 // 3 + 50):
        v = mp.mpf(2) / mp.pi
        words = []
        for _ in range(nwords):
            v *= mp.mpf(2) ** 64
            w = int(mp.floor(v))
            words.append(w)
            v -= w
    if check_only:
        return
    lines = ["/*", " * simd/math_twoopi.h -- written by tools/fit_math.py "
             "(do not edit: run it):",
             " * the bits of 2/pi after the binary point, 64 a word, most "
             "significant", " * first (attn__twoopi[0] >> 63 is the bit of "
             "weight 1/2), for the", " * exact reduction of large sin / cos "
             "arguments (simd/scalar.c).", " */",
             "#ifndef ATTNPY_SIMD_MATH_TWOOPI_H",
             "#define ATTNPY_SIMD_MATH_TWOOPI_H", "",
             "#include <stdint.h>", "",
             f"#define ATTN_TWOOPI_WORDS {nwords}",
             "static const uint64_t attn__twoopi[ATTN_TWOOPI_WORDS] = {"]
    for i in range(0, nwords, 3):
        lines.append("    " + ", ".join(f"0x{w:016x}ull" for w in words[i:i + 3])
                     + ",")
    lines += ["};", "", "#endif /* ATTNPY_SIMD_MATH_TWOOPI_H */", ""]
    with open(TWOOPI_H, "w") as fh:
        fh.write("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="print the fits' errors, write nothing")
    args = ap.parse_args()
    poly_header(args.check)
    twoopi_header(args.check)


if __name__ == "__main__":
    main()
