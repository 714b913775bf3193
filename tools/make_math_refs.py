"""Write tests/data/math_refs.txt: high-precision values of the functions
of csrc/core/simd/scalar.h at random and hard points, for the accuracy
part of tests/c/test_math.c.

    python tools/make_math_refs.py [--per N] [--seed S]

One line a point: `name x [y] hi lo`, x and y the input as a C99 hex
double (exact; float inputs are floats), hi the exact value (mpmath at 60
digits, or as many as the argument's size needs for sin and cos)
rounded to double and lo the rest, hi + lo within 2^-106 relative. Names:
exp sigmoid tanh phi npdf log sin cos pow (double inputs) and expf
sigmoidf tanhf phif npdff logf (float inputs). Points whose value is
below the smallest normal number of the type (where the functions return
0) or overflows are left out: test_math.c checks those edges itself.
The file is deterministic for a seed (default 20261127).
"""
import argparse
import math
import os
import random
import struct

import mpmath as mp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "math_refs.txt")
DBL_MIN = 2.0 ** -1022
FLT_MIN = 2.0 ** -126
FLT_MAX = float.fromhex("0x1.fffffep127")


def f32(x):
    """x rounded to float (round to nearest even), as a Python float."""
    return struct.unpack("f", struct.pack("f", x))[0]


def nextafter(x, k):
    """x moved k ulps along the doubles' bit patterns (x > 0)."""
    (u,) = struct.unpack("<q", struct.pack("<d", x))
    return struct.unpack("<d", struct.pack("<q", u + k))[0]


def sigmoid(x):
    return 1 / (1 + mp.exp(-x))


FUNCS = {
    "exp": mp.exp, "sigmoid": sigmoid, "tanh": mp.tanh, "phi": mp.ncdf,
    "npdf": mp.npdf, "log": mp.log, "sin": mp.sin, "cos": mp.cos,
}


FLOATS = ("expf", "sigmoidf", "tanhf", "phif", "npdff", "logf")


def value(name, x, y=None):
    """name's exact value (the double function's name) at x (and y)."""
    if name == "pow":
        return mp.power(mp.mpf(x), mp.mpf(y))
    # sin / cos of a large x: the reduction needs x's size in bits more
    big = max(0, math.frexp(x)[1]) if name in ("sin", "cos") else 0
    with mp.workdps(60 + int(big * 0.31)):
        return +FUNCS[name](mp.mpf(x))


def base_name(name):
    return name[:-1] if name in FLOATS else name


def points(name, n, rng):
    """n inputs for function name: the hard ones first, then random."""
    hard, lo, hi, logscale = [], None, None, False
    if name == "exp":
        hard = [0.0, -0.0, 1e-300, -1e-300, 2.0 ** -30, -2.0 ** -30,
                709.78, 709.782712893384, -708.39, -708.3964185322641,
                0.5 * math.log(2), -0.5 * math.log(2), 1.0, -1.0, 100.0, -700.0]
        hard += [k * math.log(2) + d for k in (-1000, -10, -1, 1, 10, 1000)
                 for d in (-1e-12, 0.0, 1e-12)]
        lo, hi = -708.39, 709.78
    elif name == "expf":
        hard = [0.0, 1e-30, -1e-30, 88.72, 88.7228, -87.33, -87.336,
                0.34657, -0.34657, 1.0, -1.0, 10.0, -80.0]
        lo, hi = -87.33, 88.72
    elif name in ("sigmoid", "sigmoidf"):
        hard = [0.0, 1e-20, -1e-20, 1.0, -1.0, 20.0, 36.0, 40.0, -20.0,
                -40.0, -80.0, -87.0, 0.34, -0.34]
        if name == "sigmoid":
            hard += [-700.0, -708.39]
        lo, hi = (-708.39, 40.0) if name == "sigmoid" else (-87.33, 18.0)
    elif name in ("tanh", "tanhf"):
        hard = [1e-300, 1e-30, 2.0 ** -20, 0.1, 0.2, 0.25, 0.3466, 0.5,
                0.55, 0.7, 1.0, 5.0, 9.0, 19.0, 25.0]
        hard += [-h for h in hard]
        lo, hi = -20.0, 20.0
    elif name in ("phi", "phif"):
        u0, u1, u2 = 0.671875, 2.0, 4.0
        hard = [0.0, 1e-300, -1e-300, 1e-20, -1e-20]
        for b in (u0, u1, u2):
            for s in (1, -1):
                hard += [s * nextafter(b, k) for k in (-2, -1, 0, 1, 2)]
        hard += [-37.5, -37.0, -30.0, -20.0, -10.0, -13.0, -13.1, 8.0, 8.3,
                 5.0, -5.0, -1.0, 1.0]
        lo, hi = (-37.5, 8.3) if name == "phi" else (-13.1, 5.5)
    elif name in ("npdf", "npdff"):
        hard = [0.0, 1e-300, 1e-20, 1.0, -1.0, 10.0, 13.0, -13.1, 37.0, -37.5]
        lo, hi = (-37.5, 37.5) if name == "npdf" else (-13.1, 13.1)
    elif name == "log":
        hard = [1.0, 2.0, 0.5, DBL_MIN, 5e-324, 1e-310, 1.7976931348623157e308,
                math.sqrt(2), math.sqrt(0.5), 1e-300, 1e300, 10.0, 1e6]
        hard += [nextafter(1.0, k) for k in (-3, -2, -1, 1, 2, 3)]
        hard += [1 + 2.0 ** -k for k in range(10, 52, 7)]
        hard += [1 - 2.0 ** -k for k in range(10, 52, 7)]
        hard += [nextafter(math.sqrt(2), k) for k in (-1, 1)]
        logscale = True
    elif name == "logf":
        hard = [1.0, 2.0, 0.5, FLT_MIN, 1e-45, 1e-40, FLT_MAX, math.sqrt(2),
                math.sqrt(0.5), 10.0, 1e6, 1 + 2.0 ** -23, 1 - 2.0 ** -24,
                1 + 2.0 ** -12]
        logscale = True
    elif name in ("sin", "cos"):
        # the nearest doubles to multiples of pi/2 (tiny r), positions
        # times frequencies, huge values, McDonald's worst case
        for k in (1, 2, 3, 4, 5, 100, 1000, 12345, 2 ** 20 + 1, 2 ** 31 - 1,
                  2 ** 31, 2 ** 32 + 7):
            hard.append(float(k * mp.pi / 2))
        hard += [0.0, -0.0, 1e-300, 2.0 ** -30, 0.7853981633974483,
                 0.7853981633974484, 2.0 ** 31, 2.0 ** 32, 2.0 ** 32 - 1,
                 2.0 ** 32 + 2.0 ** -20 * 2 ** 12, 1e10, 1e22, 1e100, 1e300,
                 1.7976931348623157e308, 6381956970095103.0 * 2.0 ** 797,
                 5.319372648326541e255, 22.0, 355.0, 103993.0]
        for pos in (1, 7, 1000, 65535, 2 ** 31 - 1):
            for freq_i in (0, 1, 17, 63):
                hard.append(pos * 10000.0 ** (-2 * freq_i / 128))
        hard += [-h for h in hard[:20]]
    elif name == "pow":
        return None  # pairs: pow_points
    pts = [h for h in hard if not (name in FLOATS and abs(h) > FLT_MAX)]
    while len(pts) < n:
        r = rng.random()
        if name in ("sin", "cos"):
            if r < 0.35:
                x = rng.uniform(-10, 10)
            elif r < 0.7:
                x = rng.uniform(0, 2.0 ** 31) * rng.choice((1, -1))
            elif r < 0.85:
                x = rng.uniform(2.0 ** 31, 2.0 ** 33)
            else:
                x = math.ldexp(rng.random() + 0.5, rng.randint(33, 1023))
        elif logscale:
            if r < 0.5:
                x = rng.uniform(0.25, 4.0)
            else:
                emin, emax = (-1074, 1023) if name == "log" else (-149, 127)
                x = math.ldexp(rng.random() + 0.5, rng.randint(emin, emax))
        else:
            x = rng.uniform(lo, hi) if r < 0.6 else rng.uniform(-4.0, 4.0)
        pts.append(x)
    if name in FLOATS:
        pts = [f32(p) for p in pts]
    return pts[:n] if len(pts) > n else pts


def pow_points(n, rng):
    """base^(-2i/E) for the rotary and sinusoidal frequencies, then random
    (x, y) pairs whose result is a normal double."""
    pts = []
    for base in (10000.0, 500000.0, 1e6, 10.0, 2.0, 1e4 + 0.5):
        for e in (64, 128, 4095, 4096):
            for i in (1, 2, e // 4, e // 2 - 1, e // 3):
                pts.append((base, -2.0 * i / e))
    pts += [(2.0, 0.5), (2.0, -1074.0 / 2), (10.0, 308.0), (0.5, 1022.0),
            (1.0000001, 1e9), (0.9999999, 1e9), (3.0, 3.0), (7.0, -2.0)]
    while len(pts) < n:
        r = rng.random()
        if r < 0.5:
            x, y = rng.uniform(1.0, 1e6), -rng.random()
        elif r < 0.8:
            x = math.exp(rng.uniform(-700, 700))
            y = rng.uniform(-1, 1)
        else:
            x = rng.uniform(0.01, 100)
            y = rng.uniform(-150, 150)
        v = abs(y * math.log(x))
        if v < 700:
            pts.append((x, y))
    return pts[:n]


def split(v):
    hi = float(v)
    lo = float(v - mp.mpf(hi))
    return hi, lo


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per", type=int, default=800,
                    help="points per function (default 800)")
    ap.add_argument("--seed", type=int, default=20261127)
    args = ap.parse_args()
    mp.mp.dps = 60
    rng = random.Random(args.seed)
    lines = []
    names = ["exp", "expf", "sigmoid", "sigmoidf", "tanh", "tanhf", "phi",
             "phif", "npdf", "npdff", "log", "logf", "sin", "cos", "pow"]
    for name in names:
        if name == "pow":
            for x, y in pow_points(args.per, rng):
                v = value("pow", x, y)
                if mp.mpf(DBL_MIN) <= abs(v) < mp.mpf(2) ** 1024:
                    hi, lo = split(v)
                    lines.append(f"pow {x.hex()} {y.hex()} {hi.hex()} {lo!r}")
            continue
        tiny = FLT_MIN if name in FLOATS else DBL_MIN
        for x in points(name, args.per, rng):
            v = value(base_name(name), x)
            big = FLT_MAX if tiny == FLT_MIN else 1.7976931348623157e308
            if not (tiny <= abs(v) <= big) and v != 0:
                continue
            if v == 0 and base_name(name) not in ("sin", "log", "tanh"):
                continue
            hi, lo = split(v)
            lines.append(f"{name} {x.hex()} {hi.hex()} {lo!r}")
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as fh:
        fh.write("# tools/make_math_refs.py --per %d --seed %d: name x [y] "
                 "hi lo (value = hi + lo)\n" % (args.per, args.seed))
        fh.write("\n".join(lines) + "\n")
    print(f"{OUT}: {len(lines)} points")


if __name__ == "__main__":
    main()
