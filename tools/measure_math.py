"""Measure the double functions of csrc/core/simd/scalar.h against mpmath
on N random points each (more than tests/data/math_refs.txt holds): the
figures beside the functions in csrc/core/simd/math.h.

    python tools/measure_math.py [N] [SEED]      (default 20000 11)

Builds simd/scalar.c and simd/fma.c into a temporary shared library with
$CC (default cc), -O2 -ffp-contract=off, and calls it through ctypes.
Prints each function's largest error in ulps and where.
"""
import ctypes
import math
import os
import random
import subprocess
import sys
import tempfile

import mpmath as mp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORE = os.path.join(ROOT, "csrc", "core")
mp.mp.dps = 40
_tmp = tempfile.mkdtemp()
_lib = os.path.join(_tmp, "attn_math.so")
subprocess.run([os.environ.get("CC", "cc"), "-std=c11", "-O2", "-fPIC", "-shared",
                "-ffp-contract=off", "-I" + CORE,
                os.path.join(CORE, "simd", "scalar.c"),
                os.path.join(CORE, "simd", "fma.c"), "-o", _lib, "-lm"],
               check=True)
L = ctypes.CDLL(_lib)
D = ctypes.c_double
for n in ['attn_exp','attn_sigmoid','attn_tanh','attn_phi','attn_npdf','attn_log']:
    getattr(L,n).restype = D; getattr(L,n).argtypes=[D]
L.attn_pow.restype = D; L.attn_pow.argtypes=[D,D]
L.attn_sincos.argtypes=[D, ctypes.POINTER(D), ctypes.POINTER(D)]
def ulp(y, r):
    e = max(mp.floor(mp.log(abs(r), 2)), -1022)
    return float(abs(mp.mpf(y) - r) / mp.mpf(2)**(e-52))
random.seed(int(sys.argv[2]) if len(sys.argv) > 2 else 11)
N = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
F = {'attn_exp': (mp.exp, lambda: random.uniform(-708.3, 709.7)),
     'attn_sigmoid': (lambda x: 1/(1+mp.exp(-x)), lambda: random.uniform(-708, 37)),
     'attn_tanh': (mp.tanh, lambda: random.uniform(-19, 19) if random.random() < .5 else random.uniform(-1, 1)),
     'attn_phi': (mp.ncdf, lambda: random.uniform(-37.5, 8.2)),
     'attn_npdf': (mp.npdf, lambda: random.uniform(-37.7, 37.7)),
     'attn_log': (mp.log, lambda: math.ldexp(random.random() + 0.5, random.randint(-1074, 1023)) if random.random() < .5 else random.uniform(0.5, 2))}
for name, (f, gen) in F.items():
    w = (0, None)
    for i in range(N):
        x = gen(); r = f(mp.mpf(x))
        if abs(r) < mp.mpf(2)**-1022: continue
        u = ulp(getattr(L, name)(x), r)
        if u > w[0]: w = (u, x)
    print(name, N, 'max %.3f at %r' % w, flush=True)
w = (0, None); wc = (0, None)
for i in range(N):
    x = random.uniform(-2**31, 2**31) if i % 2 else random.uniform(-8, 8)
    s = D(); c = D(); L.attn_sincos(x, ctypes.byref(s), ctypes.byref(c))
    with mp.workdps(60):
        u = ulp(s.value, mp.sin(mp.mpf(x))); v = ulp(c.value, mp.cos(mp.mpf(x)))
    if u > w[0]: w = (u, x)
    if v > wc[0]: wc = (v, x)
print('sin', N, 'max %.3f at %r' % w, 'cos max %.3f at %r' % wc, flush=True)
w = (0, None)
for i in range(N):
    if i % 2:
        b = random.uniform(1, 1e6); E = random.choice([64, 128, 256, 1024, 4096]); k = random.randint(1, E // 2 - 1); y = -2.0 * k / E
    else:
        b = math.exp(random.uniform(-700, 700)); y = random.uniform(-1, 1)
    r = mp.power(mp.mpf(b), mp.mpf(y))
    if r < mp.mpf(2)**-1022 or r > mp.mpf(2)**1023: continue
    u = ulp(L.attn_pow(b, y), r)
    if u > w[0]: w = (u, (b, y))
print('pow', N, 'max %.3f at %r' % (w[0], w[1]), flush=True)
