"""ATTNPY_BF16_DOT: on a CPU with AVX512-BF16, bfloat16 Q and K take
their scores from the pair chain, by vdpbf16ps or by its FMA twin,
whichever the process timed the faster (or the variable forces): the
same bits either way. The choice is made once per process, so each
value runs in a fresh process; every one must give the bits of the
others (the C test tests/c/test_dp_choice.c checks that the variable is
honoured and the measurement's choice).
"""
import os
import subprocess
import sys

import attnpy
from test_bits import ISAS   # the instruction sets this CPU has

# a forward with query blocks (L = 70) and decoded rows (L = 1), lse
# and weights, printed as a digest of their bytes
_CHILD = r"""
import hashlib, sys
import numpy as np, ml_dtypes, attnpy
from attnpy import _core
_core.set_isa(sys.argv[1])
rng = np.random.default_rng(7)
bf = ml_dtypes.bfloat16
q, k, v = (rng.standard_normal((2, 3, n, 62)).astype(bf)
           for n in (70, 90, 90))
h = hashlib.sha256()
out, lse = attnpy.attention(q, k, v, causal=True, return_lse=True)
o1 = attnpy.attention(q[:, :, -1:], k, v)
_, w = attnpy.scaled_dot_product_attention(q, k, v)
for a in (out, lse, o1, w):
    h.update(np.ascontiguousarray(a).tobytes())
print(h.hexdigest())
"""


def _digest(isa, value):
    root = os.path.dirname(os.path.abspath(list(attnpy.__path__)[0]))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [root] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    env.pop("ATTNPY_BF16_DOT", None)
    if value is not None:
        env["ATTNPY_BF16_DOT"] = value
    p = subprocess.run([sys.executable, "-c", _CHILD, isa],
                       capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def test_same_bits_whichever_kernel():
    """On "avx512" where the CPU has it (the pair chain needs it); on the
    best set otherwise, where the variable must change nothing either."""
    isa = "avx512" if "avx512" in ISAS else ISAS[0]
    got = {v: _digest(isa, v) for v in ("vdp", "fma", None, "other")}
    assert len(set(got.values())) == 1, got
