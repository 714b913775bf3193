"""The fused attention kernel (attnpy.attention / scaled_dot_product_attention
through attnpy._core.sdpa) on every instruction-set path this CPU has:

- agrees with attnpy.reference (float32 rtol ~1e-5, float64 ~1e-12) over
  shapes, broadcasting, masks, bias, causal alignments and policies;
- is accurate: float32 within 2e-6 of the float64 result (relative to the
  output's magnitude), float64 within 1e-12;
- gives bitwise the same numbers with 1, 2 or 3 threads, and the same out
  from attention() as from scaled_dot_product_attention();
- stops with KeyboardInterrupt promptly after SIGINT (within two of its
  measured poll gaps + 0.5 s: tests/_interrupt.py);
- keeps working in a child forked after a threaded call.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import _interrupt
import attnpy
from attnpy import _core
from attnpy import reference as ref

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


ISAS = attnpy.isas()
KNOWN = tuple(name for name, _, _ in _core.isas())  # the core's whole list


def test_isa_names_and_auto():
    # the C core's list (csrc/core/runtime/isa.h): unique lower-case names
    # that set_isa and ATTNPY_ISA take, ending with the two plain C sets
    assert len(set(KNOWN)) == len(KNOWN) >= 2
    assert all(n.isidentifier() and n == n.lower() for n in KNOWN), KNOWN
    assert KNOWN[-2:] == ("portable", "baseline")
    assert {n for n, opt, _ in _core.isas() if opt} == {"amx"}
    assert ISAS[-2:] == ["portable", "baseline"]
    assert set(ISAS) <= set(KNOWN)
    # best first: the list's order is KNOWN's
    assert ISAS == [n for n in KNOWN if n in ISAS]
    for name in ISAS:
        prev = attnpy.get_isa()
        assert attnpy.set_isa(name) == prev
        assert attnpy.get_isa() == name == _core.isa()
    attnpy.set_isa("auto")
    # "auto" never picks an opt-in set
    assert attnpy.get_isa() == attnpy.isas(opt_in=False)[0]
    assert "amx" not in attnpy.isas(opt_in=False)
    for bad in ("sse9", "AVX2", ""):
        with pytest.raises(ValueError, match="set_isa: .* choose one of"):
            attnpy.set_isa(bad)
    for name in set(KNOWN) - set(ISAS):  # what this machine cannot run
        with pytest.raises(ValueError, match=repr(name)):
            attnpy.set_isa(name)
    with pytest.raises(TypeError, match="set_isa: name must be a str"):
        attnpy.set_isa(2)


@pytest.mark.parametrize("env", ["portable", "baseline", "amx", "sse9"])
def test_isa_environment_variable(env):
    code = ("import warnings; warnings.simplefilter('always'); "
            "import attnpy; print(attnpy.get_isa())")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, env=dict(os.environ, ATTNPY_ISA=env),
                         cwd=ROOT)
    assert run.returncode == 0, run.stderr
    if env in ISAS:
        assert run.stdout.split() == [env]
        assert "ATTNPY_ISA" not in run.stderr
    else:  # ignored, with a warning naming it; the default
        assert run.stdout.split() == [attnpy.isas(opt_in=False)[0]]
        assert f"ignoring ATTNPY_ISA='{env}'" in run.stderr


def rand(rng, shape, dtype, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def assert_same(got, want, rtol, atol):
    """NaN where the reference has NaN, close elsewhere."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=rtol, atol=atol)


TOL = {np.float32: 1e-5, np.float64: 1e-12}

# (Q shape, K shape, V shape, mask shape or None, bias shape or None)
CASES = [
    ((2, 3, 40, 16), (2, 3, 70, 16), (2, 3, 70, 24), None, None),
    ((1, 4, 129, 64), (1, 1, 129, 64), (1, 1, 129, 64), (129, 129), None),
    ((3, 65, 8), (3, 200, 8), (3, 200, 5), (3, 1, 200), (65, 200)),
    ((2, 1, 33, 32), (2, 5, 100, 32), (2, 5, 100, 32), None, (5, 33, 100)),
    ((17, 3), (1, 3), (1, 2), None, None),
    ((5, 0, 8), (5, 9, 8), (5, 9, 8), None, None),
]


# the reference's answers by problem: each problem is the same on every
# kernel path, and the NumPy reference takes 20x the kernels' time
_REF = {}


def _reference(key, f, *args, **kw):
    if key not in _REF:
        _REF[key] = f(*args, **kw)
    return _REF[key]


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("causal", [False, "top_left", "bottom_right"])
def test_matches_reference(isa, dtype, case, causal):
    _core.set_isa(isa)
    rng = np.random.default_rng(case * 7 + len(str(causal)))
    qs, ks, vs, ms, bs = CASES[case]
    Q, K, V = rand(rng, qs, dtype), rand(rng, ks, dtype), rand(rng, vs, dtype)
    mask = None if ms is None else rng.random(ms) < 0.7
    bias = None
    if bs is not None:
        bias = rand(rng, bs, dtype)
        bias[rng.random(bs) < 0.2] = -np.inf
    for policy in ("zero", "uniform", "nan"):
        kw = dict(mask=mask, bias=bias, causal=causal, fully_masked=policy)
        out, w = attnpy.scaled_dot_product_attention(Q, K, V, **kw)
        rout, rw = _reference(("sdpa", dtype, case, causal, policy),
                              ref.scaled_dot_product_attention, Q, K, V, **kw)
        tol = TOL[dtype]
        vmax = float(np.abs(V).max()) if V.size else 1.0
        assert_same(out, rout, tol, tol * vmax)
        assert_same(w, rw, tol, tol)
        fused = attnpy.attention(Q, K, V, **kw)
        np.testing.assert_array_equal(fused.view(np.uint8), out.view(np.uint8))


@pytest.mark.parametrize("isa", ISAS)
def test_strided_inputs_and_outputs(isa):
    _core.set_isa(isa)
    rng = np.random.default_rng(5)
    base = rand(rng, (2, 3, 90, 48), np.float64)
    Q = base[:, :, ::-2, :24]                  # negative row stride
    K = base.transpose(0, 1, 3, 2)[..., :30, :45:1].swapaxes(-1, -2)[..., :24]
    V = np.broadcast_to(base[:1, :1, :45, 24:40], (2, 3, 45, 16))  # stride 0
    out = np.empty((2, 3, 16, 45)).swapaxes(-1, -2)  # transposed out view
    w = np.empty((2, 3, 45, 45))[..., ::-1]
    attnpy.scaled_dot_product_attention(Q, K, V, causal=True, out=out,
                                        weights_out=w)
    rout, rw = ref.scaled_dot_product_attention(Q, K, V, causal=True)
    assert_same(out, rout, 1e-12, 1e-12)
    assert_same(w, rw, 1e-12, 1e-12)


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("causal", [False, True])
def test_accuracy_against_float64(isa, causal):
    """float32 inputs: the float32 result is within 2e-6 (relative to the
    output's magnitude) of the exact float64 computation on the same
    inputs; float64 within 1e-12 of the NumPy reference."""
    _core.set_isa(isa)
    rng = np.random.default_rng(11)
    for L, S in [(256, 256), (64, 4096)]:
        Q, K, V = (rand(rng, (2, n, 64), np.float32) for n in (L, S, S))
        o32 = attnpy.attention(Q, K, V, causal=causal)
        Q64, K64, V64 = (a.astype(np.float64) for a in (Q, K, V))
        o64 = attnpy.attention(Q64, K64, V64, causal=causal)
        r64 = _reference(("float64", L, S, causal), ref.attention,
                         Q64, K64, V64, causal=causal)
        mag = np.abs(r64).max()
        assert np.abs(o32 - r64).max() <= 2e-6 * mag
        assert np.abs(o64 - r64).max() <= 1e-12 * mag


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bitwise_independent_of_thread_count(isa, dtype):
    _core.set_isa(isa)
    rng = np.random.default_rng(3)
    Q, K, V = (rand(rng, (2, 3, n, 32), dtype) for n in (300, 300, 300))
    mask = rng.random((300, 300)) < 0.8
    results = []
    for n in (1, 2, 3):
        attnpy.set_num_threads(n)
        for causal in (False, "bottom_right"):
            out, w = attnpy.scaled_dot_product_attention(
                Q, K, V, mask, causal=causal)
            results.append((n, causal, out, w))
    for n, causal, out, w in results:
        first = next(r for r in results if r[1] == causal)
        assert first[2].tobytes() == out.tobytes(), (n, causal)
        assert first[3].tobytes() == w.tobytes(), (n, causal)


def test_raise_names_first_fully_masked_row_with_threads():
    rng = np.random.default_rng(4)
    Q, K, V = (rand(rng, (3, 500, 16), np.float32) for _ in range(3))
    mask = np.ones((3, 500, 500), bool)
    mask[2, 7] = False
    mask[1, 450] = False  # (1, 450) comes first in (batch, row) order
    mask[1, 499] = False
    attnpy.set_num_threads(2)
    for isa in ISAS:
        _core.set_isa(isa)
        with pytest.raises(ValueError) as e:
            attnpy.attention(Q, K, V, mask=mask, fully_masked="raise")
        msg = str(e.value)
        assert "450" in msg and "(1,)" in msg and "499" not in msg, msg


def _run(code, timeout=120):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                          cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def test_keyboard_interrupt_is_prompt():
    """SIGINT during a long causal call: KeyboardInterrupt within two poll
    gaps (measured in the same run, tests/_interrupt.py) + 0.5 s."""
    r = _run(_interrupt.child_code("""
        import numpy as np, attnpy
        attnpy.set_num_threads(2)
        rng = np.random.default_rng(0)
        Q, K, V = (rng.standard_normal((1, 1, 65536, 64), dtype=np.float32)
                   for _ in range(3))
    """, "attnpy.attention(Q, K, V, causal=True)", 0.5))
    assert r.returncode == 0, r.stdout + r.stderr
    _interrupt.check(r.stdout)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() on Windows")
def test_fork_after_threaded_call():
    r = _run("""
        import os, sys, numpy as np, attnpy
        attnpy.set_num_threads(2)
        rng = np.random.default_rng(1)
        Q, K, V = (rng.standard_normal((4, 8, 256, 32)) for _ in range(3))
        want = attnpy.attention(Q, K, V, causal=True)    # pool is running
        pid = os.fork()
        if pid == 0:
            ok = all(np.array_equal(attnpy.attention(Q, K, V, causal=True),
                                    want) for _ in range(3))
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        again = attnpy.attention(Q, K, V, causal=True)
        print(os.waitstatus_to_exitcode(status), np.array_equal(again, want))
    """, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.split() == ["0", "True"], r.stdout + r.stderr
