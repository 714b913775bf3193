"""Every public attnpy function against its plain NumPy twin, attnpy.reference.

Random shapes, both float precisions, every memory layout tests/_arrays.py
makes, broadcasting of leading dims, every mask kind, bias, both causal
alignments, every fully_masked policy, empty dims, out=/weights_out= views,
plus "inputs are unchanged" and reference-count checks.

Tolerances (attnpy vs reference, both computing in the same dtype):
float64 rtol 1e-12, float32 rtol 1e-5 (tests/_arrays.TOLERANCES).
"""
import itertools
import math
import re
import sys

import numpy as np
import pytest

import attnpy
from attnpy import reference as ref

from _arrays import (TOLERANCES, all_arrays, broadcast_view, layouts,
                     random_array, snapshot, strided_empty, transposed_empty)

FLOATS = [np.float32, np.float64]
POLICIES = ["zero", "uniform", "nan", "raise"]


# every available kernel path, single- and multi-threaded (tests/conftest.py
# restores the thread count and path after each test)
KERNEL_CONFIGS = [(isa, n) for isa in attnpy.isas() for n in (1, 3)]


@pytest.fixture(params=KERNEL_CONFIGS, ids=lambda c: f"{c[0]}-{c[1]}t")
def kernel_config(request):
    from attnpy import _core
    isa, threads = request.param
    _core.set_isa(isa)
    attnpy.set_num_threads(threads)
    assert _core.isa() == isa and attnpy.get_num_threads() == threads
    return request.param


def assert_same(actual, desired, *, exact=False):
    """attnpy's result equals the reference's: same type, shape, dtype, and
    values within the dtype's tolerance (NaN where NaN, inf where inf)."""
    assert isinstance(actual, np.ndarray), type(actual)
    assert actual.shape == desired.shape, (actual.shape, desired.shape)
    assert actual.dtype == desired.dtype, (actual.dtype, desired.dtype)
    if exact or actual.dtype.kind not in "f":
        np.testing.assert_array_equal(actual, desired)
        return
    rtol, atol = TOLERANCES[actual.dtype]
    np.testing.assert_allclose(actual, desired, rtol=rtol, atol=atol,
                               equal_nan=True)


def assert_sdpa_same(args, kwargs, check_attention=True):
    """attnpy.scaled_dot_product_attention (and attnpy.attention) against
    the reference on the same arguments. The reference computes float16
    inputs in float32; attnpy returns that result rounded once to float16:
    compared in float32 within float16's rounding."""
    want_out, want_w = ref.scaled_dot_product_attention(*args, **kwargs)
    out, w = attnpy.scaled_dot_product_attention(*args, **kwargs)

    def same(got, want):
        if got.dtype == np.float16 and want.dtype == np.float32:
            np.testing.assert_allclose(got.astype(np.float32), want,
                                       rtol=2e-3, atol=2e-3, equal_nan=True)
        else:
            assert_same(got, want)
    same(out, want_out)
    same(w, want_w)
    if check_attention:
        Q, K, V, *rest = args
        kw = dict(kwargs)
        if rest:
            kw["mask"] = rest[0]
        same(attnpy.attention(Q, K, V, **kw), want_out)
    return out, w


# ---------------------------------------------------------------------------
# softmax
# ---------------------------------------------------------------------------

SOFTMAX_SHAPES = [(7,), (3, 5), (2, 3, 4), (2, 1, 3, 6), (0,), (0, 4),
                  (3, 0), (2, 0, 3)]


@pytest.mark.parametrize("shape", SOFTMAX_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16,
                                   np.int32, np.bool_], ids=lambda d:
                         np.dtype(d).name)
def test_softmax_every_axis_and_layout(shape, dtype):
    rng = np.random.default_rng([len(shape), *shape, np.dtype(dtype).num])
    a = random_array(rng, shape, dtype)
    for name, x in layouts(a):
        for axis in range(-len(shape), len(shape)):
            got = attnpy.softmax(x, axis)
            assert_same(got, ref.softmax(x, axis))
            assert_same(attnpy.softmax(x, axis=axis), got, exact=True)


def test_softmax_all_arrays():
    """softmax over the whole array generator, every axis."""
    rng = np.random.default_rng(29)
    seen = set()
    for desc, x in all_arrays(rng):
        for axis in range(-x.ndim, x.ndim):
            assert_same(attnpy.softmax(x, axis), ref.softmax(x, axis))
        seen.update(desc.split()[1:])
    assert {"contiguous", "fortran", "transposed", "strided", "reversed",
            "byteswapped", "unaligned", "broadcast", "nan/inf"} <= seen


@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_nan_inf_rows(dtype):
    inf, nan = np.inf, np.nan
    x = np.array([[1.0, 2.0, 3.0, 4.0],
                  [1.0, nan, 3.0, 4.0],        # NaN -> all NaN
                  [1.0, inf, 3.0, 4.0],        # +inf -> all NaN (inf - inf)
                  [-inf, -inf, -inf, -inf],    # all -inf -> all NaN
                  [-inf, 0.0, -inf, 1.0],      # -inf -> weight 0
                  [inf, inf, inf, inf],
                  [1e30, -1e30, 0.0, 5.0],
                  [-1e30, -1e30, -1e30, -1e30]], dtype=dtype)
    got = attnpy.softmax(x)
    assert_same(got, ref.softmax(x))
    # spot checks against what NumPy's own arithmetic says
    assert np.isnan(got[1:4]).all() and np.isnan(got[5]).all()
    assert got[4, 0] == 0 and got[4, 2] == 0
    np.testing.assert_allclose(got[7], 0.25)
    for axis in (0, 1):
        assert_same(attnpy.softmax(x, axis), ref.softmax(x, axis))


@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_special_values_random(dtype):
    rng = np.random.default_rng(5)
    for trial in range(20):
        x = random_array(rng, (4, 9), dtype, special=True)
        for _, v in layouts(x):
            assert_same(attnpy.softmax(v), ref.softmax(v))
            assert_same(attnpy.softmax(v, axis=0), ref.softmax(v, axis=0))


def test_softmax_matches_tutorial():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 5, 7))
    for axis in (-1, 0, 1):
        np.testing.assert_allclose(attnpy.softmax(x, axis),
                                   ref.tutorial_softmax(x, axis),
                                   rtol=1e-12, atol=1e-15)


# ---------------------------------------------------------------------------
# scaled_dot_product_attention / attention: shapes, layouts, dtypes
# ---------------------------------------------------------------------------

def qkv(rng, lead_q, lead_kv, L, S, E, Ev, dtype=np.float64, lead_v=None):
    lead_v = lead_kv if lead_v is None else lead_v
    return (random_array(rng, lead_q + (L, E), dtype),
            random_array(rng, lead_kv + (S, E), dtype),
            random_array(rng, lead_v + (S, Ev), dtype))


SHAPES = [
    # lead_q,   lead_kv,  L, S, E, Ev
    ((), (), 1, 1, 1, 1),
    ((), (), 5, 7, 4, 3),          # L != S, Ev != E
    ((2,), (2,), 6, 6, 8, 8),
    ((2, 3), (2, 3), 4, 9, 5, 2),
    ((2, 3), (2, 1), 5, 5, 4, 6),  # one K/V head serves 3 query heads
    ((2, 3), (), 3, 4, 4, 4),      # one K/V for every batch item and head
    ((3,), (2, 1), 4, 3, 2, 5),    # Q and K/V broadcast against each other
    ((1, 4), (3, 1), 2, 6, 3, 3),
    ((), (), 33, 70, 16, 24),      # sizes that are not multiples of blocks
    ((), (), 130, 3, 7, 1),
    ((2,), (2,), 200, 600, 64, 64),   # several query and key blocks
    ((3,), (1,), 1, 1000, 32, 48),    # one query (decoding) over many keys
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_sdpa_shapes(shape, dtype, kernel_config):
    rng = np.random.default_rng(len(str(shape)) * 7 + 1)
    Q, K, V = qkv(rng, *shape, dtype=dtype)
    out, w = assert_sdpa_same((Q, K, V), {})
    lead = np.broadcast_shapes(shape[0], shape[1])
    L, S, E, Ev = shape[2:]
    assert out.shape == lead + (L, Ev) and w.shape == lead + (L, S)
    np.testing.assert_allclose(w.sum(axis=-1), 1.0,
                               rtol=TOLERANCES[np.dtype(dtype)][0] * 10)


@pytest.mark.parametrize("dtype", [np.float16, np.int32],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("which", ["Q", "K", "V"])
def test_sdpa_layouts(which, dtype):
    """Each of Q, K, V in every memory layout (the others contiguous), in
    dtypes converted on the way in (float32 and float64: every argument
    of every function, tests/reliability/test_registry.py)."""
    rng = np.random.default_rng(3)
    args = dict(zip("QKV", qkv(rng, (2, 3), (2, 3), 5, 6, 4, 3, dtype)))
    mask = rng.random((5, 6)) < 0.8
    names = []
    for name, arr in list(layouts(args[which])) + [
            ("broadcast", broadcast_view(args[which]))]:
        a = dict(args, **{which: arr})
        assert_sdpa_same((a["Q"], a["K"], a["V"]), {})
        assert_sdpa_same((a["Q"], a["K"], a["V"], mask), {"causal": True})
        names.append(name)
    assert {"transposed", "strided", "reversed", "byteswapped"} <= set(names)


@pytest.mark.parametrize("dtypes,expect", [
    ((np.float32, np.float32, np.float32), np.float32),
    ((np.float64, np.float64, np.float64), np.float64),
    ((np.float32, np.float64, np.float32), np.float64),
    # 16-bit inputs are computed in float32, a float16 result rounded once
    ((np.float16, np.float16, np.float16), np.float16),
    ((np.float16, np.float32, np.float16), np.float32),
    ((np.int32, np.int32, np.int32), np.float64),
    ((np.int64, np.float32, np.float32), np.float64),
    ((np.bool_, np.bool_, np.bool_), np.float64),
    ((np.uint8, np.float16, np.float16), np.float16),
    ((np.longdouble, np.float64, np.float64), np.float64),
], ids=str)
def test_sdpa_dtype_mapping(dtypes, expect):
    rng = np.random.default_rng(6)
    Q, K, V = (random_array(rng, s, d) for s, d in
               zip([(2, 4, 3), (2, 5, 3), (2, 5, 2)], dtypes))
    out, w = assert_sdpa_same((Q, K, V), {})
    assert out.dtype == expect and w.dtype == expect
    # the reference's compute dtype: float32 where attnpy rounds to float16
    assert ref.compute_dtype(Q, K, V) == (np.float32 if expect == np.float16
                                          else expect)


@pytest.mark.parametrize("dtype", FLOATS)
def test_sdpa_scale(dtype):
    rng = np.random.default_rng(7)
    Q, K, V = qkv(rng, (2,), (2,), 4, 5, 6, 3, dtype)
    for scale in (1.0, 0.125, 2.5, 0.0, -1.0):
        assert_sdpa_same((Q, K, V), {"scale": scale})
    # the default is 1/sqrt(E)
    o1, w1 = attnpy.scaled_dot_product_attention(Q, K, V)
    o2, w2 = attnpy.scaled_dot_product_attention(Q, K, V, scale=6 ** -0.5)
    assert_same(o1, o2)
    assert_same(w1, w2)


@pytest.mark.parametrize("dtype", FLOATS)
def test_sdpa_special_values_in_inputs(dtype):
    """NaN/inf in Q, K or V propagate as in NumPy (a NaN score does not
    make a row fully masked)."""
    rng = np.random.default_rng(8)
    for trial in range(6):
        Q, K, V = qkv(rng, (2,), (2,), 4, 5, 3, 3, dtype)
        target = [Q, K, V][trial % 3]
        target[0, trial % 4 if target is Q else trial % 5, 1] = \
            [np.nan, np.inf, -np.inf][trial % 3]
        assert_sdpa_same((Q, K, V), {})
        assert_sdpa_same((Q, K, V), {"fully_masked": "raise"})


# ---------------------------------------------------------------------------
# masks, bias, causal
# ---------------------------------------------------------------------------

def mask_kinds(rng, B, H, L, S):
    """(name, mask) pairs in the shapes and dtypes people pass."""
    keep = rng.random((B, H, L, S)) < 0.75
    keep[..., 0] = True                     # no fully masked rows here
    tril = np.tril(np.ones((L, S)))
    lengths = rng.integers(1, S + 1, size=B)
    return [
        ("bool (L,S)", keep[0, 0]),
        ("float 0/1 tril (L,S)", tril),
        ("int (L,S)", keep[0, 0].astype(np.int64) * 3),
        ("uint8 (L,S)", keep[0, 0].astype(np.uint8)),
        ("float32 (L,S)", keep[0, 0].astype(np.float32)),
        ("padding (B,1,1,S)", attnpy.padding_mask(lengths, S)),
        ("bool (B,1,L,S)", keep[:, :1]),
        ("bool (B,H,L,S)", keep),
        ("int8 (1,S)", keep[0, 0, :1].astype(np.int8)),
        ("bool (S,)", keep[0, 0, 0]),
        ("bool transposed (B,H,L,S)",
         np.swapaxes(np.ascontiguousarray(np.swapaxes(keep, -1, -2)), -1, -2)),
        ("bool strided", dict(layouts(keep))["strided"]),
    ]


@pytest.mark.parametrize("dtype", FLOATS)
def test_sdpa_mask_kinds(dtype):
    rng = np.random.default_rng(9)
    B, H, L, S = 2, 3, 5, 6
    Q, K, V = qkv(rng, (B, H), (B, 1), L, S, 4, 3, dtype)
    for name, mask in mask_kinds(rng, B, H, L, S):
        out, w = assert_sdpa_same((Q, K, V, mask), {})
        allowed = np.broadcast_to(np.asarray(mask) != 0, w.shape)
        assert (w[~allowed] == 0).all(), name
        # the keyword form is the same call
        assert_same(attnpy.scaled_dot_product_attention(Q, K, V,
                                                        mask=mask)[0], out)


@pytest.mark.parametrize("dtype", FLOATS)
def test_sdpa_mask_adds_leading_dims(dtype):
    rng = np.random.default_rng(10)
    Q, K, V = qkv(rng, (), (), 4, 5, 3, 2, dtype)
    mask = rng.random((2, 3, 4, 5)) < 0.7
    mask[..., 2] = True
    out, w = assert_sdpa_same((Q, K, V, mask), {})
    assert out.shape == (2, 3, 4, 2) and w.shape == (2, 3, 4, 5)
    bias = rng.standard_normal((3, 1, 4, 5)).astype(dtype)
    out, w = assert_sdpa_same((Q, K, V), {"bias": bias})
    assert out.shape == (3, 1, 4, 2)
    out, w = assert_sdpa_same((Q, K, V, mask), {"bias": bias[:, 0]})
    assert out.shape == (2, 3, 4, 2)


@pytest.mark.parametrize("dtype", FLOATS)
def test_sdpa_bias(dtype):
    rng = np.random.default_rng(11)
    B, H, L, S = 2, 2, 4, 6
    Q, K, V = qkv(rng, (B, H), (B, H), L, S, 5, 3, dtype)
    bias = rng.standard_normal((H, L, S))
    bias[0, 1, 2] = -np.inf
    bias[1, :, 4] = -np.inf
    for b in (bias, bias.astype(np.float32), bias[None],
              dict(layouts(bias))["transposed"],
              rng.integers(-2, 3, size=(L, S))):
        before = snapshot(Q, K, V, b)
        out, w = assert_sdpa_same((Q, K, V), {"bias": b})
        assert snapshot(Q, K, V, b) == before     # a bias of another dtype
    out, w = assert_sdpa_same((Q, K, V), {"bias": bias})
    assert (w[:, 0, 1, 2] == 0).all() and (w[:, 1, :, 4] == 0).all()
    # the GPT-2 form: softmax(QK^T/sqrt(E) + M) with M = 0 / -inf
    M = np.where(np.tril(np.ones((L, S))) != 0, 0.0, -np.inf)
    o1, w1 = attnpy.scaled_dot_product_attention(Q, K, V, bias=M)
    o2, w2 = attnpy.scaled_dot_product_attention(Q, K, V, causal=True)
    assert_same(o1, o2)
    assert_same(w1, w2)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("causal", [True, "top_left", "bottom_right"])
@pytest.mark.parametrize("L,S", [(5, 5), (3, 7), (7, 3), (1, 6), (6, 1)])
def test_sdpa_causal(causal, L, S, dtype):
    rng = np.random.default_rng(L * 10 + S)
    Q, K, V = qkv(rng, (2,), (2,), L, S, 4, 3, dtype)
    for fm in ("zero", "uniform", "nan"):
        out, w = assert_sdpa_same((Q, K, V),
                                  {"causal": causal, "fully_masked": fm})
    align = "bottom_right" if causal == "bottom_right" else "top_left"
    allowed = ref.causal_mask(L, S, align=align)
    # the same as passing the boolean mask, and (top_left) the tril mask
    out2, w2 = attnpy.scaled_dot_product_attention(Q, K, V, allowed,
                                                   fully_masked="nan")
    assert_same(out2, out)
    assert_same(w2, w)
    if align == "top_left":
        o3, w3 = attnpy.scaled_dot_product_attention(
            Q, K, V, np.tril(np.ones((L, S))), fully_masked="nan")
        assert_same(w3, w)
    assert (np.nan_to_num(w)[..., ~allowed] == 0).all()


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("causal", [True, "bottom_right"])
def test_sdpa_large_masked(causal, dtype):
    """Sizes spanning several tiles, with masks that empty whole tiles
    (padding) and rows (fully masked), in both causal alignments, on every
    kernel path and thread count (the reference is computed once)."""
    from attnpy import _core
    rng = np.random.default_rng(28)
    B, H, L, S, E = 2, 2, 130, 600, 32
    Q, K, V = qkv(rng, (B, H), (B, 1), L, S, E, E, dtype)
    pad = attnpy.padding_mask([0, 333], S)       # item 0 sees no key at all
    keep = rng.random((L, S)) < 0.9
    cases = [((Q, K, V, pad & keep), {"causal": causal, "fully_masked": fm})
             for fm in ("zero", "uniform", "nan")]
    cases.append(((Q, K, V), {"causal": causal,
                              "bias": np.where(keep, 0.0, -np.inf)}))
    wants = [ref.scaled_dot_product_attention(*a, **kw) for a, kw in cases]
    for isa, threads in KERNEL_CONFIGS:
        _core.set_isa(isa)
        attnpy.set_num_threads(threads)
        for (args, kw), (want_out, want_w) in zip(cases, wants):
            out, w = attnpy.scaled_dot_product_attention(*args, **kw)
            assert_same(out, want_out)
            assert_same(w, want_w)
            akw = dict(kw, mask=args[3]) if len(args) > 3 else kw
            assert_same(attnpy.attention(*args[:3], **akw), want_out)


@pytest.mark.parametrize("dtype", FLOATS)
def test_sdpa_mask_bias_causal_combined(dtype, kernel_config):
    rng = np.random.default_rng(12)
    B, H, L, S = 2, 3, 6, 8
    Q, K, V = qkv(rng, (B, H), (B, 1), L, S, 4, 5, dtype)
    mask = rng.random((B, 1, L, S)) < 0.6
    bias = rng.standard_normal((H, L, S))
    bias[rng.random((H, L, S)) < 0.1] = -np.inf
    for causal, fm in itertools.product(
            [False, True, "bottom_right"], ["zero", "uniform", "nan"]):
        out, w = assert_sdpa_same((Q, K, V, mask), {
            "bias": bias, "causal": causal, "fully_masked": fm,
            "scale": 0.3})
        # mask, bias and causal all block
        blocked = ~np.broadcast_to(mask, w.shape) | np.isneginf(
            np.broadcast_to(bias, w.shape))
        if causal:
            align = "bottom_right" if causal == "bottom_right" else "top_left"
            blocked = blocked | ~ref.causal_mask(L, S, align=align)
        if fm != "uniform":
            assert (w[blocked & ~np.isnan(w)] == 0).all()


# ---------------------------------------------------------------------------
# fully masked rows
# ---------------------------------------------------------------------------

def fully_masked_case(rng, dtype):
    B, H, L, S = 2, 2, 4, 5
    Q, K, V = qkv(rng, (B, H), (B, H), L, S, 3, 2, dtype)
    mask = rng.random((B, H, L, S)) < 0.7
    mask[..., 0] = True
    mask[0, 1, 2, :] = False          # flattened batch item 1, row 2
    mask[1, 0, 0, :] = False          # flattened batch item 2, row 0
    mask[1, 1, 3, :] = False          # flattened batch item 3, row 3
    return Q, K, V, mask


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("policy", ["zero", "uniform", "nan"])
def test_fully_masked_policies(policy, dtype, kernel_config):
    rng = np.random.default_rng(13)
    Q, K, V, mask = fully_masked_case(rng, dtype)
    out, w = assert_sdpa_same((Q, K, V, mask), {"fully_masked": policy})
    rows = [(0, 1, 2), (1, 0, 0), (1, 1, 3)]
    for b, h, i in rows:
        if policy == "zero":
            assert (w[b, h, i] == 0).all() and (out[b, h, i] == 0).all()
        elif policy == "nan":
            assert np.isnan(w[b, h, i]).all() and np.isnan(out[b, h, i]).all()
        else:
            np.testing.assert_allclose(w[b, h, i], 1 / 5,
                                       rtol=TOLERANCES[w.dtype][0])
            np.testing.assert_allclose(out[b, h, i], V[b, h].mean(axis=0),
                                       rtol=TOLERANCES[w.dtype][0],
                                       atol=TOLERANCES[w.dtype][1])
    # other rows: no NaN from masking anywhere else
    ok = np.ones(w.shape[:-1], bool)
    for b, h, i in rows:
        ok[b, h, i] = False
    assert not np.isnan(w[ok]).any() and not np.isnan(out[ok]).any()


@pytest.mark.parametrize("dtype", FLOATS)
def test_fully_masked_by_bias_and_causal(dtype):
    """-inf bias and a bottom_right causal with S < L also mask fully."""
    rng = np.random.default_rng(14)
    Q, K, V = qkv(rng, (2,), (2,), 6, 3, 4, 2, dtype)
    for policy in ("zero", "uniform", "nan"):
        out, w = assert_sdpa_same((Q, K, V), {"causal": "bottom_right",
                                              "fully_masked": policy})
        # rows i < L - S = 3 see no key
        if policy == "zero":
            assert (w[:, :3] == 0).all() and (out[:, :3] == 0).all()
        bias = np.zeros((6, 3))
        bias[4] = -np.inf
        out, w = assert_sdpa_same((Q, K, V), {"bias": bias,
                                              "fully_masked": policy})
        if policy == "nan":
            assert np.isnan(out[:, 4]).all()
            assert not np.isnan(np.delete(out, 4, axis=1)).any()
    with pytest.raises(ValueError, match=r"\b3\b"):
        # a -inf bias on every key of row 3: (batch 0, row 3) is named
        b = np.zeros((6, 3))
        b[3] = -np.inf
        attnpy.scaled_dot_product_attention(Q, K, V, bias=b,
                                            fully_masked="raise")


def test_fully_masked_raise_names_first_row():
    rng = np.random.default_rng(15)
    Q, K, V, mask = fully_masked_case(rng, np.float64)
    for name, f in [
            ("scaled_dot_product_attention", lambda **kw:
             attnpy.scaled_dot_product_attention(Q, K, V, mask, **kw)),
            ("attention", lambda **kw:
             attnpy.attention(Q, K, V, mask=mask, **kw))]:
        with pytest.raises(ValueError) as info:
            f(fully_masked="raise")
        msg = str(info.value)
        assert msg.startswith(name + ":"), msg
        # the first fully masked row in (batch item, row) order is
        # batch index (0, 1) (flattened: batch item 1), row 2
        assert re.search(r"\brow 2\b", msg), msg
        assert re.search(r"\(0, 1\)|\bitem 1\b", msg), msg
        assert "fully_masked" in msg, msg
    with pytest.raises(ValueError, match=r"row 2 of batch index \(0, 1\)"):
        ref.scaled_dot_product_attention(Q, K, V, mask, fully_masked="raise")
    # nothing fully masked: "raise" changes nothing
    mask2 = mask.copy()
    mask2[..., 0] = True
    o1, w1 = assert_sdpa_same((Q, K, V, mask2), {"fully_masked": "raise"})
    o2, w2 = attnpy.scaled_dot_product_attention(Q, K, V, mask2)
    assert_same(o1, o2, exact=True)
    assert_same(w1, w2, exact=True)


def test_fully_masked_uniform_is_the_tutorials_minus_1e9():
    """The tutorial's np.where(mask == 0, -1e9, s) gives uniform weights on
    a row that sees nothing: attnpy's fully_masked='uniform'."""
    rng = np.random.default_rng(16)
    Q, K, V, mask = fully_masked_case(rng, np.float64)
    mask = mask.astype(np.float64)
    out, w = attnpy.scaled_dot_product_attention(Q, K, V, mask,
                                                 fully_masked="uniform")
    t_out, t_w = ref.tutorial_scaled_dot_product_attention(Q, K, V, mask)
    np.testing.assert_allclose(w, t_w, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(out, t_out, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("policy", POLICIES)
def test_empty_dims(policy, dtype):
    rng = np.random.default_rng(17)
    cases = [((2,), 0, 5, 3, 2),     # L == 0
             ((2,), 4, 0, 3, 2),     # S == 0: every row fully masked
             ((2,), 4, 5, 0, 2),     # E == 0: scale 1.0, all scores 0
             ((2,), 4, 5, 3, 0),     # Ev == 0
             ((0,), 4, 5, 3, 2),     # no batch items
             ((2, 0), 3, 3, 3, 3)]
    for lead, L, S, E, Ev in cases:
        Q, K, V = qkv(rng, lead, lead, L, S, E, Ev, dtype)
        if policy == "raise" and S == 0 and L > 0 and np.prod(lead) > 0:
            with pytest.raises(ValueError):
                attnpy.scaled_dot_product_attention(Q, K, V,
                                                    fully_masked=policy)
            with pytest.raises(ValueError):
                attnpy.attention(Q, K, V, fully_masked=policy)
            continue
        out, w = assert_sdpa_same((Q, K, V), {"fully_masked": policy})
        assert out.shape == lead + (L, Ev) and w.shape == lead + (L, S)
        if S == 0 and out.size:
            expect = np.nan if policy == "nan" else 0.0
            np.testing.assert_array_equal(out, np.full(out.shape, expect))
        if E == 0 and w.size:
            np.testing.assert_allclose(w, 1 / S)     # all scores equal


# ---------------------------------------------------------------------------
# out= and weights_out=
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
def test_sdpa_out_views(dtype):
    rng = np.random.default_rng(18)
    Q, K, V = qkv(rng, (2, 3), (2, 3), 5, 7, 4, 6, dtype)
    mask = rng.random((5, 7)) < 0.8
    want_out, want_w = ref.scaled_dot_product_attention(Q, K, V, mask)
    for make in (transposed_empty, strided_empty, np.empty):
        out = make((2, 3, 5, 6), dtype)
        w = make((2, 3, 5, 7), dtype)
        r_out, r_w = attnpy.scaled_dot_product_attention(
            Q, K, V, mask, out=out, weights_out=w)
        assert r_out is out and r_w is w
        assert_same(out, want_out)
        assert_same(w, want_w)
    # only one of the two given
    out = transposed_empty((2, 3, 5, 6), dtype)
    r_out, r_w = attnpy.scaled_dot_product_attention(Q, K, V, mask, out=out)
    assert r_out is out
    assert_same(r_w, want_w)
    w = transposed_empty((2, 3, 5, 7), dtype)
    r_out, r_w = attnpy.scaled_dot_product_attention(Q, K, V, mask,
                                                     weights_out=w)
    assert r_w is w
    assert_same(r_out, want_out)
    assert_same(w, want_w)


def test_sdpa_weights_out_mismatch_rejected():
    """(out= of the wrong shape or dtype, or read-only, for every function:
    tests/reliability/test_registry.py)"""
    rng = np.random.default_rng(19)
    Q, K, V = qkv(rng, (2,), (2,), 3, 4, 2, 2)
    with pytest.raises((ValueError, TypeError)):
        attnpy.scaled_dot_product_attention(
            Q, K, V, weights_out=np.empty((2, 3, 4), np.float32))


# ---------------------------------------------------------------------------
# masks, positional encoding, heads
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("n", [0, 1, 2, 5, 17])
def test_create_causal_mask(n):
    m = attnpy.create_causal_mask(n)
    assert_same(m, np.tril(np.ones((n, n))), exact=True)
    assert_same(m, ref.create_causal_mask(n), exact=True)


@pytest.mark.parametrize("L,S", [(4, 4), (3, 6), (6, 3), (0, 3), (3, 0),
                                 (1, 1)])
def test_causal_mask(L, S):
    for align in ("top_left", "bottom_right"):
        got = attnpy.causal_mask(L, S, align=align)
        assert_same(got, ref.causal_mask(L, S, align=align), exact=True)
        assert got.dtype == np.bool_
    assert_same(attnpy.causal_mask(L, S), np.tril(np.ones((L, S))) != 0,
                exact=True)
    assert_same(attnpy.causal_mask(L, S, align="bottom_right"),
                np.tril(np.ones((L, S)), k=S - L) != 0, exact=True)
    assert_same(attnpy.causal_mask(L), ref.causal_mask(L, L), exact=True)


def test_padding_mask():
    for lengths, S in [([3, 1, 0, 5], 5), (np.array([2, 2]), 4), ([3], 3),
                       ([], 3), (np.array([0, 0], np.int32), 0)]:
        got = attnpy.padding_mask(lengths, S)
        assert_same(got, ref.padding_mask(lengths, S), exact=True)
        assert got.shape == (len(lengths), 1, 1, S)
    # a length beyond S is a bug upstream (a sequence longer than its
    # padded batch), not "all keys valid": both raise
    for f in (attnpy.padding_mask, ref.padding_mask):
        with pytest.raises(ValueError, match="padding_mask: lengths"):
            f([1, 7], 3)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("max_len,d_model", [(100, 64), (10, 7), (1, 1),
                                             (5, 2), (0, 4), (3, 0),
                                             (50, 513)])
def test_positional_encoding(max_len, d_model, dtype):
    got = attnpy.positional_encoding(max_len, d_model, dtype=dtype)
    want = ref.positional_encoding(max_len, d_model, dtype=dtype)
    assert_same(got, want)
    if d_model % 2 == 0 and d_model > 0 and dtype == np.float64:
        np.testing.assert_allclose(
            got, ref.tutorial_positional_encoding(max_len, d_model),
            rtol=1e-12, atol=1e-12)
    out = transposed_empty((max_len, d_model), dtype) if max_len and \
        d_model else np.empty((max_len, d_model), dtype)
    r = attnpy.positional_encoding(max_len, d_model, dtype=dtype, out=out)
    assert r is out
    assert_same(out, want)


def test_positional_encoding_base():
    for base in (100.0, 10000.0, 2.0):
        assert_same(attnpy.positional_encoding(20, 10, base=base),
                    ref.positional_encoding(20, 10, base=base))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("offset", [0, 3, 1000])
def test_add_positional_encoding(offset, dtype):
    rng = np.random.default_rng(offset + 20)
    x = random_array(rng, (2, 3, 5, 6), dtype)
    want = ref.add_positional_encoding(x.copy(), offset=offset)
    for name, v in list(layouts(x.copy())):
        if name == "byteswapped":
            # non-native byte order: attnpy may refuse it, but must not
            # get it wrong
            try:
                r = attnpy.add_positional_encoding(v, offset=offset)
            except (TypeError, ValueError):
                continue
            assert r is v
            np.testing.assert_allclose(v, want, *TOLERANCES[want.dtype])
            continue
        r = attnpy.add_positional_encoding(v, offset=offset)
        assert r is v, name
        assert_same(v, want)
    # offset t: rows 0.. of x + PE(offset..) == the tail of a longer table
    y = np.zeros((5, 6), dtype)
    attnpy.add_positional_encoding(y, offset=offset)
    assert_same(y, ref.positional_encoding(offset + 5, 6, dtype=dtype)
                [offset:])
    z = np.zeros((4, 8))
    assert_same(attnpy.add_positional_encoding(z, base=100.0),
                ref.positional_encoding(4, 8, base=100.0))


def same_values(a, b):
    """Same shape and values, same dtype up to byte order (split/combine
    move data; a byte-swapped input may come back native)."""
    assert isinstance(a, np.ndarray)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype.newbyteorder("=") == b.dtype.newbyteorder("="), \
        (a.dtype, b.dtype)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("shape,h", [((2, 5, 12), 3), ((5, 8), 2),
                                     ((2, 3, 4, 6), 6), ((2, 0, 6), 2),
                                     ((1, 4, 4), 1)], ids=str)
def test_split_and_combine_heads(shape, h):
    rng = np.random.default_rng(21)
    x = random_array(rng, shape, np.float64)
    for name, v in layouts(x):
        s = attnpy.split_heads(v, h)
        same_values(s, ref.split_heads(v, h))
        if name == "contiguous":
            assert np.shares_memory(s, v) or v.size == 0    # a view
        c = attnpy.combine_heads(s)
        same_values(c, ref.combine_heads(s))
        same_values(c, x)                       # round trip
        out = strided_empty(x.shape, x.dtype)
        r = attnpy.combine_heads(s, out=out)
        assert r is out
        assert_same(out, x, exact=True)
        if len(shape) >= 2 and shape[-2] > 1:
            out = transposed_empty(x.shape, x.dtype)
            assert attnpy.combine_heads(s, out=out) is out
            assert_same(out, x, exact=True)
    if len(shape) == 3:
        np.testing.assert_array_equal(attnpy.split_heads(x, h),
                                      ref.tutorial_split_heads(x, h))
        np.testing.assert_array_equal(
            attnpy.combine_heads(attnpy.split_heads(x, h)),
            ref.tutorial_combine_heads(ref.tutorial_split_heads(x, h)))


@pytest.mark.parametrize("dtype", FLOATS + [np.float16, np.int32, np.uint8,
                                            np.bool_, np.longdouble],
                         ids=lambda d: np.dtype(d).name)
def test_split_and_combine_heads_keep_the_dtype(dtype):
    """split/combine only move elements (the tutorial's reshape/transpose):
    the round trip gives x back, dtype included, as the reference does."""
    rng = np.random.default_rng(31)
    x = random_array(rng, (2, 3, 12), dtype)
    s = attnpy.split_heads(x, 4)
    assert s.dtype == dtype
    c = attnpy.combine_heads(s)
    assert_same(c, ref.combine_heads(s), exact=True)
    assert_same(c, x, exact=True)
    np.testing.assert_array_equal(c, ref.tutorial_combine_heads(s))


# ---------------------------------------------------------------------------
# MultiHeadAttention
# ---------------------------------------------------------------------------

def test_mha_weights_follow_the_tutorial_scheme():
    np.random.seed(0)
    got = attnpy.MultiHeadAttention(8, 2)
    np.random.seed(0)
    want = ref.MultiHeadAttention(8, 2)
    np.random.seed(0)
    tut = ref.tutorial_init_weights(8)
    for name, t in zip(("W_q", "W_k", "W_v", "W_o"), tut):
        assert_same(getattr(got, name), getattr(want, name), exact=True)
        assert_same(getattr(got, name), t, exact=True)
    seeded = attnpy.MultiHeadAttention(12, 3, seed=7)
    want = ref.MultiHeadAttention(12, 3, seed=7)
    for name in ("W_q", "W_k", "W_v", "W_o"):
        assert_same(getattr(seeded, name), getattr(want, name), exact=True)
    again = attnpy.MultiHeadAttention(12, 3, seed=7)
    assert_same(again.W_o, seeded.W_o, exact=True)


@pytest.mark.parametrize("dtype", FLOATS)
def test_mha_forward_and_call(dtype):
    rng = np.random.default_rng(22)
    got = attnpy.MultiHeadAttention(16, 4, seed=3, dtype=dtype)
    want = ref.MultiHeadAttention(16, 4, seed=3, dtype=dtype)
    X = random_array(rng, (2, 5, 16), dtype)
    mem = random_array(rng, (2, 7, 16), dtype)
    mask = np.tril(np.ones((5, 5)))
    for args, kw in [((X,), {}), ((X, mask), {}), ((X,), {"causal": True})]:
        o, w = got.forward(*args, **kw)
        o2, w2 = want.forward(*args, **kw)
        assert_same(o, o2)
        assert_same(w, w2)
        assert o.shape == (2, 5, 16) and w.shape == (2, 4, 5, 5)
    assert_same(got(X), want(X))
    assert_same(got(X, mem), want(X, mem))                  # cross
    assert_same(got(X, mem, mem * 2), want(X, mem, mem * 2))
    o, w = got(X, mem, need_weights=True)
    o2, w2 = want(X, mem, need_weights=True)
    assert_same(o, o2)
    assert_same(w, w2)
    assert w.shape == (2, 4, 5, 7)
    pad = attnpy.padding_mask([7, 3], 7)
    assert_same(got(X, mem, mask=pad), want(X, mem, mask=pad))


def test_mha_assignable_weights():
    rng = np.random.default_rng(23)
    m = attnpy.MultiHeadAttention(8, 2, seed=1)
    r = ref.MultiHeadAttention(8, 2, seed=1)
    for name in ("W_q", "W_k", "W_v", "W_o"):
        W = rng.standard_normal((8, 8))
        setattr(m, name, W)
        setattr(r, name, W)
    X = rng.standard_normal((3, 4, 8))
    assert_same(m.forward(X)[0], r.forward(X)[0])
    assert_same(m.split_heads(X), r.split_heads(X), exact=True)
    s = m.split_heads(X)
    assert_same(m.combine_heads(s), X, exact=True)


# ---------------------------------------------------------------------------
# inputs unchanged; reference counts
# ---------------------------------------------------------------------------

def test_mha_inputs_unchanged():
    """(every public function, in every layout, with NaN/inf:
    tests/reliability/test_registry.py)"""
    rng = np.random.default_rng(24)
    X = rng.standard_normal((2, 4, 8))
    mask = np.tril(np.ones((4, 4)))
    mask[0] = 0
    mha = attnpy.MultiHeadAttention(8, 2, seed=0)
    before = snapshot(X, mask)
    for _ in range(2):
        mha(X, X * 2, mask=mask)
        assert snapshot(X, mask) == before


def test_weights_out_aliasing_an_input():
    """weights_out= may be one of the inputs, seen transposed: the result
    is what the inputs held before the call (out= aliasing an input, for
    every function: tests/reliability/test_registry.py)."""
    rng = np.random.default_rng(30)
    for dtype in FLOATS:
        Q, K, V = qkv(rng, (2,), (2,), 5, 5, 5, 5, dtype)     # all (2, 5, 5)
        want_out, want_w = ref.scaled_dot_product_attention(Q, K, V,
                                                            causal=True)
        for name in "QKV":
            a = {"Q": Q.copy(), "K": K.copy(), "V": V.copy()}
            view = np.swapaxes(a[name], -1, -2)   # overlapping, transposed
            o, w = attnpy.scaled_dot_product_attention(
                a["Q"], a["K"], a["V"], causal=True, weights_out=view)
            assert w is view
            assert_same(o, want_out)
            assert_same(w, want_w)


def test_refcounts():
    rng = np.random.default_rng(26)
    Q, K, V = qkv(rng, (2,), (2,), 3, 4, 2, 2)
    mask = np.tril(np.ones((3, 4)))
    bias = np.zeros((3, 4))
    out = np.empty((2, 3, 2))
    w_out = np.empty((2, 3, 4))
    x = rng.standard_normal((3, 4))
    X = rng.standard_normal((2, 3, 4))
    things = (Q, K, V, mask, bias, out, w_out, x, X)
    before = [sys.getrefcount(a) for a in things]
    for _ in range(1000):
        attnpy.scaled_dot_product_attention(Q, K, V, mask, bias=bias,
                                            causal=True)
        attnpy.scaled_dot_product_attention(Q, K, V, mask, out=out,
                                            weights_out=w_out)
        attnpy.attention(Q, K, V, mask=mask, bias=bias, out=out)
        attnpy.softmax(x, out=x)
        attnpy.softmax(x, 0)
        attnpy.add_positional_encoding(X, offset=1)
        attnpy.combine_heads(attnpy.split_heads(X, 2))
        attnpy.positional_encoding(3, 4, out=x)
    assert [sys.getrefcount(a) for a in things] == before

    # fresh results are owned by the caller alone
    o, w = attnpy.scaled_dot_product_attention(Q, K, V)
    assert sys.getrefcount(o) == 2 and sys.getrefcount(w) == 2
    o = attnpy.attention(Q, K, V)
    assert sys.getrefcount(o) == 2
    s = attnpy.softmax(x)
    assert sys.getrefcount(s) == 2
    p = attnpy.positional_encoding(4, 4)
    assert sys.getrefcount(p) == 2
    # out= results are the caller's array: one more reference while held
    n = sys.getrefcount(out)
    r = attnpy.attention(Q, K, V, out=out)
    assert r is out and sys.getrefcount(out) == n + 1
    del r
    assert sys.getrefcount(out) == n
    n = sys.getrefcount(X)
    r = attnpy.add_positional_encoding(X)
    assert r is X and sys.getrefcount(X) == n + 1
    del r
    assert sys.getrefcount(X) == n
    n = sys.getrefcount(x)
    r = attnpy.softmax(x, out=x)
    assert r is x and sys.getrefcount(x) == n + 1
    del r
    assert sys.getrefcount(x) == n


# ---------------------------------------------------------------------------
# the oracle itself, against plain Python loops (math.exp, no NumPy maths)
# ---------------------------------------------------------------------------

def loop_attention(Q, K, V, Ev, allowed, bias, scale, policy):
    """One (L, S) problem, element by element, straight from the rule atop attnpy/reference/__init__.py."""
    L, S = len(Q), len(K)
    out = [[0.0] * Ev for _ in range(L)]
    w = [[0.0] * S for _ in range(L)]
    for i in range(L):
        s = [scale * sum(q * k for q, k in zip(Q[i], K[j])) + bias[i][j]
             if allowed[i][j] else -math.inf for j in range(S)]
        if all(x == -math.inf for x in s):
            if policy == "uniform" and S:
                w[i] = [1.0 / S] * S
                out[i] = [sum(V[j][c] for j in range(S)) / S
                          for c in range(Ev)]
            elif policy == "nan":
                w[i] = [math.nan] * S
                out[i] = [math.nan] * Ev
            continue
        m = max(s)
        e = [math.exp(x - m) for x in s]
        total = sum(e)
        w[i] = [x / total for x in e]
        out[i] = [sum(w[i][j] * V[j][c] for j in range(S)) for c in range(Ev)]
    return out, w


@pytest.mark.parametrize("policy", ["zero", "uniform", "nan"])
@pytest.mark.parametrize("causal", [False, "top_left", "bottom_right"])
def test_reference_against_python_loops(causal, policy):
    rng = np.random.default_rng(27)
    for L, S, E, Ev in [(3, 4, 2, 3), (4, 2, 3, 1), (2, 2, 1, 2),
                        (3, 0, 2, 2)]:
        Q = rng.standard_normal((L, E))
        K = rng.standard_normal((S, E))
        V = rng.standard_normal((S, Ev))
        mask = rng.random((L, S)) < 0.7
        bias = rng.standard_normal((L, S))
        bias[rng.random((L, S)) < 0.15] = -np.inf
        scale = 0.7
        allowed = mask.copy()
        if causal:
            allowed &= ref.causal_mask(L, S, align=causal)
        want_out, want_w = loop_attention(
            Q.tolist(), K.tolist(), V.tolist(), Ev, allowed.tolist(),
            bias.tolist(), scale, policy)
        out, w = ref.scaled_dot_product_attention(
            Q, K, V, mask, bias=bias, causal=causal, scale=scale,
            fully_masked=policy)
        np.testing.assert_allclose(out, np.array(want_out).reshape(L, Ev),
                                   rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(w, np.array(want_w).reshape(L, S),
                                   rtol=1e-12, atol=1e-14)
