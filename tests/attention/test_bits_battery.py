"""The same bits on every instruction set: the battery of
tests/_battery.py (every public function attnpy computes itself; float64,
float32, float16, bfloat16; masks, bias, both causal alignments, windows,
ALiBi, soft-capping, grouped heads, every fully_masked policy; awkward,
strided and transposed shapes) on every set this machine runs, at 1 to
4 threads, against the digests tools/make_bit_digests.py stored from the
portable set at one thread. "amx" (opt-in) has its own bits for
bfloat16 Q and K with E a multiple of 32, and the stored ones elsewhere.
"""
import json
import os

import pytest

import attnpy
import _battery

with open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "data",
                       "bits_digests.json"), encoding="utf-8") as _f:
    STORED = json.load(_f)


def test_the_stored_digests_cover_the_battery():
    assert STORED["set"] == "portable" and STORED["threads"] == 1
    assert set(STORED["digests"]) == set(_battery.CASES)
    assert _battery.BF16 is not None  # bfloat16 cases: ml_dtypes is there
    assert len(STORED["digests"]) >= 150


@pytest.mark.parametrize("threads", [1, 2, 3, 4])
@pytest.mark.parametrize("isa", attnpy.isas())
def test_every_set_gives_the_stored_bits(isa, threads):
    attnpy.set_isa(isa)
    attnpy.set_num_threads(threads)
    names = [n for n, (_, own) in _battery.CASES.items()
             if not (isa == "amx" and own)]
    got = _battery.run(names)
    bad = [n for n in names if got[n] != STORED["digests"][n]]
    assert not bad, f"{isa}, {threads} threads: {len(bad)} of {len(names)} " \
                    f"results differ from the portable set's: {bad[:10]}"


def test_a_changed_bit_changes_the_digest():
    """the digest sees one ulp, and NaNs of any payload are one"""
    import numpy as np
    a = np.linspace(-1, 1, 9)
    b = a.copy()
    b[3] = np.nextafter(b[3], 2)
    assert _battery.digest(a) != _battery.digest(b)
    n1 = np.array([np.nan, 1.0])
    n2 = n1.copy()
    n2.view(np.uint64)[0] ^= (1 << 63) | 5  # another sign and payload
    assert np.isnan(n2[0]) and _battery.digest(n1) == _battery.digest(n2)
