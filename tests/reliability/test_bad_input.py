"""Bad-input matrix: every public function, every argument, every way to get
it wrong. A notebook user who passes the wrong thing must get a clear Python
error -- never a dead kernel, a leak or a silent wrong answer.

Rules checked here (docs/user/tour.md and docs/user/masks.md):

* a value of the wrong *type* (None, str, dict, list of str, ...) raises
  TypeError; the right type with a wrong *value* (shape, range, unknown
  option) raises ValueError; softmax's out-of-range axis raises AxisError
  (a ValueError and an IndexError, like NumPy);
* the message starts with the public function's name and names the argument
  (``"attention: K has 3 features but Q has 4 (Q.shape=..., K.shape=...)"``);
* unsupported dtypes (complex, object, str, bytes, datetime, timedelta,
  structured/void) raise TypeError;
* NaN and inf propagate as in NumPy (compared with ``attnpy.reference``);
* zero-size dimensions work and match the reference;
* requests whose byte count overflows or exceeds any machine raise
  MemoryError or ValueError before allocating, and the process keeps working;
* negative strides, transposes, unaligned and byte-swapped views give the
  reference's numbers;
* ``out=`` that aliases an input still gives the right answer; ``out`` and
  ``weights_out`` sharing memory is a ValueError.

For an enumerated string option (causal, fully_masked, align), a value that
is not a string may raise TypeError or ValueError; an unknown string must
raise ValueError.
"""
import os
import re
import sys
import traceback

import numpy as np
import pytest

import attnpy
from attnpy import _core
from attnpy import reference as ref

RNG = np.random.default_rng(20240605)

# Q (B, L, E), K (B, S, E), V (B, S, Ev), mask/bias (L, S)
B, L, S, E, EV = 2, 3, 5, 4, 6
Q = RNG.standard_normal((B, L, E))
K = RNG.standard_normal((B, S, E))
V = RNG.standard_normal((B, S, EV))

ATTN = [("attention", attnpy.attention),
        ("scaled_dot_product_attention", attnpy.scaled_dot_product_attention)]
SDPA = attnpy.scaled_dot_product_attention

# wrong Python types where an array is expected
WRONG_TYPES = {
    "None": None,
    "str": "abc",
    "dict": {"a": 1},
    "list_of_str": ["a", "b"],
    "set": {1.0, 2.0},
    "object": object(),
}


def unsupported_dtype_arrays(shape):
    """Arrays of every dtype attnpy must refuse with TypeError."""
    base = np.zeros(shape)
    return {
        "complex128": base.astype(np.complex128),
        "complex64": base.astype(np.complex64),
        "object": base.astype(object),
        "datetime64": np.zeros(shape, "M8[s]"),
        "timedelta64": np.zeros(shape, "m8[s]"),
        "str": np.zeros(shape, "U3"),
        "bytes": np.zeros(shape, "S3"),
        "structured": np.zeros(shape, [("a", "f8"), ("b", "i4")]),
        "void": np.zeros(shape, "V8"),
    }


def named(fname, *args):
    """Regex: the message starts with `fname` and names every arg in `args`
    as a whole word."""
    look = "".join(rf"(?=.*\b{re.escape(a)}\b)" for a in args)
    return re.compile(look + r"^" + re.escape(fname) + r"\b", re.S)


def check(call, exc, fname, *args):
    with pytest.raises(exc, match=named(fname, *args)):
        call()


def close(a, b, dtype):
    """Same NaN pattern, same infinities, close elsewhere."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    rtol, atol = (1e-4, 1e-6) if dtype == np.float32 else (1e-10, 1e-12)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


def ref_sdpa(*args, **kw):
    with np.errstate(all="ignore"):
        return ref.scaled_dot_product_attention(*args, **kw)


def still_works():
    """After a failed giant request, a normal call works and is right."""
    out, w = SDPA(Q, K, V)
    ro, rw = ref_sdpa(Q, K, V)
    close(out, ro, np.float64)
    close(w, rw, np.float64)
    close(attnpy.attention(Q, K, V), ro, np.float64)


# ---------------------------------------------------------------------------
# attention / scaled_dot_product_attention
# ---------------------------------------------------------------------------

def _attn_cases():
    cases = []

    def add(id_, call, exc, fname, *args):
        cases.append(pytest.param(call, exc, fname, args, id=id_))

    for fname, f in ATTN:
        qkv = {"Q": Q, "K": K, "V": V}
        # wrong types and dtypes for each of Q, K, V
        for arg in ("Q", "K", "V"):
            for tname, bad in WRONG_TYPES.items():
                a = dict(qkv, **{arg: bad})
                add(f"{fname}-{arg}-{tname}",
                    lambda f=f, a=a: f(a["Q"], a["K"], a["V"]),
                    TypeError, fname, arg)
            shape = qkv[arg].shape
            for dname, bad in unsupported_dtype_arrays(shape).items():
                a = dict(qkv, **{arg: bad})
                add(f"{fname}-{arg}-dtype-{dname}",
                    lambda f=f, a=a: f(a["Q"], a["K"], a["V"]),
                    TypeError, fname, arg)
            # ragged nested list: cannot become an array
            a = dict(qkv, **{arg: [[1.0, 2.0], [3.0]]})
            add(f"{fname}-{arg}-ragged",
                lambda f=f, a=a: f(a["Q"], a["K"], a["V"]),
                (TypeError, ValueError), fname, arg)
            # too few dimensions
            for nd, bad in (("0d", 1.0), ("1d", np.ones(4))):
                a = dict(qkv, **{arg: bad})
                add(f"{fname}-{arg}-{nd}",
                    lambda f=f, a=a: f(a["Q"], a["K"], a["V"]),
                    ValueError, fname, arg)
        # core-dim mismatches
        add(f"{fname}-E-mismatch", lambda f=f: f(Q, K[..., :3], V),
            ValueError, fname, "Q", "K")
        add(f"{fname}-S-mismatch", lambda f=f: f(Q, K, V[:, :4]),
            ValueError, fname, "K", "V")
        # non-broadcastable batch dims
        add(f"{fname}-batch-QK", lambda f=f: f(Q, np.ones((3, S, E)),
                                                np.ones((3, S, EV))),
            ValueError, fname, "Q", "K")
        add(f"{fname}-batch-V", lambda f=f: f(Q, K, np.ones((3, S, EV))),
            ValueError, fname, "V")
        add(f"{fname}-batch-mask",
            lambda f=f: f(Q, K, V, mask=np.ones((3, L, S), bool)),
            ValueError, fname, "mask")
        add(f"{fname}-batch-bias", lambda f=f: f(Q, K, V, bias=np.ones((3, L, S))),
            ValueError, fname, "bias")
        # mask / bias core dims that do not broadcast to (L, S)
        for arg in ("mask", "bias"):
            for sh in ((L, S + 1), (L + 1, S), (2, 2), (S + 1,), (1, S - 1)):
                kw = {arg: np.ones(sh)}
                add(f"{fname}-{arg}-shape{sh}",
                    lambda f=f, kw=kw: f(Q, K, V, **kw),
                    ValueError, fname, arg)
            for tname, bad in WRONG_TYPES.items():
                if bad is None:
                    continue            # None means "no mask/bias"
                kw = {arg: bad}
                add(f"{fname}-{arg}-{tname}",
                    lambda f=f, kw=kw: f(Q, K, V, **kw),
                    TypeError, fname, arg)
            for dname, bad in unsupported_dtype_arrays((L, S)).items():
                kw = {arg: bad}
                add(f"{fname}-{arg}-dtype-{dname}",
                    lambda f=f, kw=kw: f(Q, K, V, **kw),
                    TypeError, fname, arg)
        # keyword options
        add(f"{fname}-causal-sideways", lambda f=f: f(Q, K, V, causal="sideways"),
            ValueError, fname, "causal")
        add(f"{fname}-causal-TOP_LEFT", lambda f=f: f(Q, K, V, causal="TOP_LEFT"),
            ValueError, fname, "causal")
        for tname, bad in (("list", []), ("float", 1.5), ("dict", {})):
            add(f"{fname}-causal-{tname}",
                lambda f=f, bad=bad: f(Q, K, V, causal=bad),
                (TypeError, ValueError), fname, "causal")
        add(f"{fname}-fully_masked-ignore",
            lambda f=f: f(Q, K, V, fully_masked="ignore"),
            ValueError, fname, "fully_masked")
        for tname, bad in (("None", None), ("int", 0), ("list", ["zero"])):
            add(f"{fname}-fully_masked-{tname}",
                lambda f=f, bad=bad: f(Q, K, V, fully_masked=bad),
                (TypeError, ValueError), fname, "fully_masked")
        for tname, bad in (("str", "2"), ("complex", 1j), ("list", [1.0]),
                           ("array2", np.array([1.0, 2.0])), ("dict", {})):
            add(f"{fname}-scale-{tname}",
                lambda f=f, bad=bad: f(Q, K, V, scale=bad),
                TypeError, fname, "scale")
        add(f"{fname}-scale-hugeint", lambda f=f: f(Q, K, V, scale=10 ** 400),
            (TypeError, ValueError), fname, "scale")
        # out=
        outs = {"out": (B, L, EV)}
        if fname == "scaled_dot_product_attention":
            outs["weights_out"] = (B, L, S)
        for arg, shape in outs.items():
            for sh in (shape[1:], shape[:-1] + (shape[-1] + 1,),
                       (1,) + shape):
                kw = {arg: np.empty(sh)}
                add(f"{fname}-{arg}-shape{sh}",
                    lambda f=f, kw=kw: f(Q, K, V, **kw),
                    ValueError, fname, arg)
            for dt in (np.float32, np.int64, np.complex128, object):
                kw = {arg: np.empty(shape, dt)}
                add(f"{fname}-{arg}-dtype-{np.dtype(dt).name}",
                    lambda f=f, kw=kw: f(Q, K, V, **kw),
                    TypeError, fname, arg)
            for tname, bad in (("list", np.zeros(shape).tolist()),
                               ("str", "out"), ("float", 1.0)):
                kw = {arg: bad}
                add(f"{fname}-{arg}-{tname}",
                    lambda f=f, kw=kw: f(Q, K, V, **kw),
                    TypeError, fname, arg)
            ro = np.zeros(shape)
            ro.flags.writeable = False
            kw = {arg: ro}
            add(f"{fname}-{arg}-readonly", lambda f=f, kw=kw: f(Q, K, V, **kw),
                ValueError, fname, arg)
            kw = {arg: np.broadcast_to(np.zeros(shape[-1]), shape)}
            add(f"{fname}-{arg}-broadcast-view",
                lambda f=f, kw=kw: f(Q, K, V, **kw),
                ValueError, fname, arg)
    return cases


@pytest.mark.parametrize("call, exc, fname, args", _attn_cases())
def test_attention_bad_input(call, exc, fname, args):
    check(call, exc, fname, *args)


def test_out_and_weights_out_same_array_is_a_value_error():
    """out is weights_out (possible when Ev == S): ValueError, not a silent
    overwrite of the output by the weights."""
    Vs = RNG.standard_normal((B, S, S))
    both = np.zeros((B, L, S))
    check(lambda: SDPA(Q, K, Vs, out=both, weights_out=both), ValueError,
          "scaled_dot_product_attention", "out", "weights_out")


def test_out_and_weights_out_overlapping_is_a_value_error():
    buf = np.zeros((B, L, EV + S - 2))
    check(lambda: SDPA(Q, K, V, out=buf[..., :EV], weights_out=buf[..., EV - 2:]),
          ValueError, "scaled_dot_product_attention", "out", "weights_out")


def test_out_and_weights_out_disjoint_halves_of_one_buffer_work():
    buf = np.full((B, L, EV + S), -7.0)
    o, w = SDPA(Q, K, V, out=buf[..., :EV], weights_out=buf[..., EV:])
    ro, rw = ref_sdpa(Q, K, V)
    close(buf[..., :EV], ro, np.float64)
    close(buf[..., EV:], rw, np.float64)
    assert np.shares_memory(o, buf) and np.shares_memory(w, buf)


# ---------------------------------------------------------------------------
# NaN and inf: propagate like NumPy (the reference), never crash
# ---------------------------------------------------------------------------

def _poisoned(arr, value, where):
    a = arr.copy()
    a[where] = value
    return a


NONFINITE = [np.nan, np.inf, -np.inf]


@pytest.mark.parametrize("fname, f", ATTN, ids=[a for a, _ in ATTN])
@pytest.mark.parametrize("value", NONFINITE, ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("arg", ["Q", "K", "V", "bias", "mask", "all"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nonfinite_values_propagate_like_reference(fname, f, value, arg, dtype):
    q, k, v = (a.astype(dtype) for a in (Q, K, V))
    bias = np.zeros((L, S), dtype)
    mask = np.ones((L, S))
    if arg in ("Q", "all"):
        q = _poisoned(q, value, (0, 1, 2))
    if arg in ("K", "all"):
        k = _poisoned(k, value, (1, 3, 0))
    if arg in ("V", "all"):
        v = _poisoned(v, value, (0, 2, 5))
    if arg in ("bias", "all"):
        bias = _poisoned(bias, value, (2, 1))
    if arg in ("mask", "all"):
        mask = _poisoned(mask, value, (1, 4))
        mask[0, 0] = 0.0
    for policy in ("zero", "uniform", "nan"):
        kw = dict(mask=mask, bias=bias, fully_masked=policy)
        if not np.all((mask == 0) | (mask == 1)):
            # -inf: an additive mask; NaN, inf: not 0 or 1: refused (bias=)
            for g in (f, ref_sdpa):
                with pytest.raises(ValueError, match="bias="):
                    g(q, k, v, **kw)
            continue
        ro, rw = ref_sdpa(q, k, v, **kw)
        if fname == "attention":
            close(f(q, k, v, **kw), ro, dtype)
        else:
            o, w = f(q, k, v, **kw)
            close(o, ro, dtype)
            close(w, rw, dtype)


@pytest.mark.parametrize("fname, f", ATTN, ids=[a for a, _ in ATTN])
@pytest.mark.parametrize("how", ["mask", "causal", "bias"])
@pytest.mark.parametrize("L, S", [(8, 8), (3, 8), (4, 300)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nonfinite_value_row_of_a_masked_key_like_reference(fname, f, how, L,
                                                            S, dtype):
    """V[j] holds NaN/inf for keys j that some or all queries may not see.
    The contract (attn.h, attnpy.reference): a key of weight 0 contributes
    nothing, not even 0 * inf = NaN, so garbage in value rows a query
    cannot see never reaches it -- whether the kernel skips those keys
    (causal blocks) or multiplies them by 0 (mask/bias tiles)."""
    q = RNG.standard_normal((2, L, 4)).astype(dtype)
    k = RNG.standard_normal((2, S, 4)).astype(dtype)
    v = RNG.standard_normal((2, S, 3)).astype(dtype)
    v[:, S - 1, 1] = np.nan          # a key nobody sees (except when L = S)
    v[:, S // 2, 2] = np.inf
    kw = {}
    if how == "causal":
        kw["causal"] = True
    elif how == "mask":
        mask = np.ones((L, S), bool)
        mask[:, S // 2:] = False             # the second half: no query
        mask[-1, :] = True                   # ... but the last one
        kw["mask"] = mask
    else:
        bias = np.zeros((L, S), dtype)
        bias[:-1, S // 2:] = -np.inf
        kw["bias"] = bias
    ro, rw = ref_sdpa(q, k, v, **kw)
    got = f(q, k, v, **kw)
    got = got if fname == "attention" else got[0]
    close(got, ro, dtype)
    # rows that see neither poisoned key stay finite
    sees = rw != 0
    clean = ~(sees[..., S - 1] | sees[..., S // 2])
    assert clean.any()
    assert np.isfinite(got[clean]).all()


@pytest.mark.parametrize("fname, f", ATTN, ids=[a for a, _ in ATTN])
@pytest.mark.parametrize("scale", [np.nan, np.inf, -np.inf, 0.0, -1.0, 1e300])
def test_nonfinite_and_extreme_scale_like_reference(fname, f, scale):
    ro, rw = ref_sdpa(Q, K, V, scale=scale)
    if fname == "attention":
        close(f(Q, K, V, scale=scale), ro, np.float64)
    else:
        o, w = f(Q, K, V, scale=scale)
        close(o, ro, np.float64)
        close(w, rw, np.float64)


def test_bias_all_minus_inf_rows_follow_policy():
    bias = np.zeros((L, S))
    bias[1] = -np.inf
    o, w = SDPA(Q, K, V, bias=bias)
    assert np.all(o[:, 1] == 0) and np.all(w[:, 1] == 0)
    o, w = SDPA(Q, K, V, bias=bias, fully_masked="nan")
    assert np.all(np.isnan(o[:, 1])) and np.all(np.isnan(w[:, 1]))
    assert not np.isnan(o[:, [0, 2]]).any()
    check(lambda: SDPA(Q, K, V, bias=bias, fully_masked="raise"), ValueError,
          "scaled_dot_product_attention", "fully_masked")


@pytest.mark.parametrize("x", [
    [np.nan, 1.0, 2.0], [np.inf, 1.0, 2.0], [-np.inf, 1.0, 2.0],
    [-np.inf, -np.inf, -np.inf], [np.inf, np.inf, 0.0], [3e38, -3e38, 0.0],
], ids=["nan", "inf", "-inf", "all-inf", "two+inf", "huge"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_softmax_nonfinite_like_numpy(x, dtype):
    x = np.array([x, [0.0, 1.0, 2.0]], dtype)
    with np.errstate(all="ignore"):
        expect = ref.softmax(x)
    close(attnpy.softmax(x), expect, dtype)


# ---------------------------------------------------------------------------
# zero-size dimensions
# ---------------------------------------------------------------------------

ZERO_SHAPES = {
    "B=0": ((0, 3, 4), (0, 5, 4), (0, 5, 6)),
    "L=0": ((2, 0, 4), (2, 5, 4), (2, 5, 6)),
    "S=0": ((2, 3, 4), (2, 0, 4), (2, 0, 6)),
    "E=0": ((2, 3, 0), (2, 5, 0), (2, 5, 6)),
    "Ev=0": ((2, 3, 4), (2, 5, 4), (2, 5, 0)),
    "all=0": ((0, 0, 0), (0, 0, 0), (0, 0, 0)),
    "Bbroadcast0": ((0, 1, 3, 4), (1, 2, 5, 4), (1, 1, 5, 6)),
}


@pytest.mark.parametrize("shapes", ZERO_SHAPES.values(), ids=ZERO_SHAPES.keys())
@pytest.mark.parametrize("policy", ["zero", "uniform", "nan"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_zero_size_dims_match_reference(shapes, policy, dtype):
    q, k, v = (RNG.standard_normal(s).astype(dtype) for s in shapes)
    ro, rw = ref_sdpa(q, k, v, fully_masked=policy)
    o, w = SDPA(q, k, v, fully_masked=policy)
    assert o.dtype == w.dtype == dtype
    close(o, ro, dtype)
    close(w, rw, dtype)
    close(attnpy.attention(q, k, v, fully_masked=policy), ro, dtype)


@pytest.mark.parametrize("fname, f", ATTN, ids=[a for a, _ in ATTN])
def test_zero_keys_with_raise_policy_names_the_row(fname, f):
    check(lambda: f(Q, K[:, :0], V[:, :0], fully_masked="raise"), ValueError,
          fname, "fully_masked")


def test_zero_size_softmax_combine_heads_posenc():
    for shape in ((0,), (3, 0), (0, 3), (2, 0, 4)):
        x = np.zeros(shape)
        for axis in range(-len(shape), len(shape)):
            r = attnpy.softmax(x, axis=axis)
            assert r.shape == shape and r.dtype == np.float64
    for shape in ((0, 2, 3, 4), (2, 0, 3, 4), (2, 3, 0, 4), (2, 3, 4, 0)):
        x = np.zeros(shape)
        np.testing.assert_array_equal(attnpy.combine_heads(x),
                                      ref.combine_heads(x))
    for n, d in ((0, 4), (4, 0), (0, 0)):
        assert attnpy.positional_encoding(n, d).shape == (n, d)
    x = np.zeros((2, 0, 4))
    assert attnpy.add_positional_encoding(x) is x


def test_zero_size_result_with_huge_broadcast_batch():
    """A result with no elements needs no memory, however large the batch:
    Q of shape (2**40, 0, 1) (a broadcast view) gives an empty output."""
    q = np.broadcast_to(np.zeros((1, 0, 1)), (2 ** 40, 0, 1))
    out = attnpy.attention(q, np.ones((1, 1)), np.ones((1, 1)))
    assert out.shape == (2 ** 40, 0, 1)
    out, w = SDPA(q, np.ones((1, 1)), np.ones((1, 1)))
    assert out.shape == (2 ** 40, 0, 1) and w.shape == (2 ** 40, 0, 1)
    q = np.broadcast_to(np.zeros((1, 1, 1)), (2 ** 40, 1, 1))
    out = attnpy.attention(q, np.ones((1, 1)), np.ones((1, 0)))
    assert out.shape == (2 ** 40, 1, 0)


# ---------------------------------------------------------------------------
# requests too large for any machine
# ---------------------------------------------------------------------------

def bcast(*shape):
    """A read-only zero array of any shape, using no memory."""
    return np.broadcast_to(np.zeros((1,) * len(shape)), shape)


def bcast_bool(*shape):
    """Like bcast, with 1-byte elements (a view of up to 2**62 elements)."""
    return np.broadcast_to(np.zeros((1,) * len(shape), bool), shape)


TOO_BIG = {
    # L*S weights need 2**65 bytes: the byte count overflows int64
    "sdpa-L=S=2**31": (lambda: SDPA(bcast(2 ** 31, 1), bcast(2 ** 31, 1),
                                    bcast(2 ** 31, 1)),
                       "scaled_dot_product_attention"),
    # 8 PiB of weights: larger than the address space
    "sdpa-8PiB-weights": (lambda: SDPA(bcast(2 ** 20, 1), bcast(2 ** 30, 1),
                                       bcast(2 ** 30, 1)),
                          "scaled_dot_product_attention"),
    # 256 TiB output
    "attention-2**45-rows": (lambda: attnpy.attention(
        bcast(2 ** 45, 1), bcast(1, 1), bcast(1, 1)), "attention"),
    # broadcast batch 2**40 * 2**30 overflows int64
    "attention-batch-overflow": (lambda: attnpy.attention(
        bcast(2 ** 40, 1, 1, 1), bcast(1, 2 ** 30, 1, 1), bcast(1, 1)),
        "attention"),
    # a bool mask: taken as it is (a float one would first be compared
    # with 0 into a 2**30-element array, seconds before the same refusal)
    "sdpa-mask-batch-overflow": (lambda: SDPA(
        bcast(2 ** 40, 1, 1, 1), bcast(1, 1), bcast(1, 1),
        mask=bcast_bool(2 ** 30, 1, 1, 1, 1)), "scaled_dot_product_attention"),
    # batch 2**62: element count fits, byte count does not
    "attention-batch-2**62": (lambda: attnpy.attention(
        bcast(2 ** 31, 1, 1, 1), bcast(1, 2 ** 31, 1, 1), bcast(1, 1)),
        "attention"),
    # (a float64 view of 2**60 elements is itself too big for NumPy, so
    # these start from bool views of 2**60 bytes)
    "softmax-2**60": (lambda: attnpy.softmax(bcast_bool(2 ** 40, 2 ** 20)),
                      "softmax"),
    "combine_heads-2**60": (lambda: attnpy.combine_heads(
        bcast_bool(2 ** 20, 2 ** 20, 2 ** 20, 1)), "combine_heads"),
    "positional_encoding-2**62": (lambda: attnpy.positional_encoding(
        2 ** 62, 2), "positional_encoding"),
    "positional_encoding-2**40sq": (lambda: attnpy.positional_encoding(
        2 ** 40, 2 ** 40), "positional_encoding"),
    # 2**45 (not 2**40): even one int64 row of that length (256 TiB) is
    # more than the address space, so no overcommit policy lets it succeed
    "create_causal_mask-2**45": (lambda: attnpy.create_causal_mask(2 ** 45),
                                 "create_causal_mask"),
    # beyond NumPy's largest dimension: a ValueError naming the function
    "create_causal_mask-2**64": (lambda: attnpy.create_causal_mask(2 ** 64),
                                 "create_causal_mask"),
    "causal_mask-2**45": (lambda: attnpy.causal_mask(2 ** 45),
                          "causal_mask"),
    "padding_mask-2**62": (lambda: attnpy.padding_mask([1], 2 ** 62),
                           "padding_mask"),
    "causal_mask-S=2**62": (lambda: attnpy.causal_mask(2, 2 ** 62),
                            "causal_mask"),
    "causal_mask-2**64": (lambda: attnpy.causal_mask(2 ** 64, 4),
                          "causal_mask"),
    "MultiHeadAttention-2**40": (lambda: attnpy.MultiHeadAttention(2 ** 40, 1),
                                 "MultiHeadAttention"),
}


@pytest.mark.parametrize("call, fname", TOO_BIG.values(), ids=TOO_BIG.keys())
def test_too_big_fails_cleanly_and_process_keeps_working(call, fname):
    """MemoryError (any message) or a ValueError that names the function;
    never a crash or an attempt to compute."""
    with pytest.raises((MemoryError, ValueError)) as info:
        call()
    # raised by attnpy, not while building the arguments (a float64
    # broadcast view of 2**60 elements is already too big for NumPy)
    frames = [f.filename for f in traceback.extract_tb(info.tb)]
    assert any(os.sep + "attnpy" + os.sep in f for f in frames), frames
    if not isinstance(info.value, MemoryError):
        assert str(info.value).startswith(fname), str(info.value)
    still_works()


TOO_LARGE_FOR_THE_MACHINE = r"""
import resource, sys
import numpy as np
import attnpy

def bcast(*shape):
    return np.broadcast_to(np.zeros((1,) * len(shape)), shape)

# Whatever the machine's overcommit policy, allow this process only 2 GiB
# more address space than it has now: ~1 TiB requests must fail cleanly.
page = resource.getpagesize()
vm = int(open("/proc/self/statm").read().split()[0]) * page
soft, hard = resource.getrlimit(resource.RLIMIT_AS)
limit = vm + (2 << 30)
if hard != resource.RLIM_INFINITY:
    limit = min(limit, hard)
resource.setrlimit(resource.RLIMIT_AS, (limit, hard))

calls = {
    # weights (2**19, 2**18) float64: 1 TiB
    "sdpa-1TiB": lambda: attnpy.scaled_dot_product_attention(
        bcast(2 ** 19, 1), bcast(2 ** 18, 1), bcast(2 ** 18, 1)),
    # L = S = 2**31 with the fused kernel: the 16 GiB output cannot exist
    "attention-16GiB-out": lambda: attnpy.attention(
        bcast(2 ** 31, 1), bcast(2 ** 31, 1), bcast(2 ** 31, 1)),
    "softmax-16GiB": lambda: attnpy.softmax(bcast(2 ** 21, 2 ** 10)),
    "positional_encoding-16GiB": lambda: attnpy.positional_encoding(
        2 ** 21, 2 ** 10),
    "causal_mask-1TiB": lambda: attnpy.causal_mask(2 ** 20),
}
for name, call in calls.items():
    try:
        call()
    except (MemoryError, ValueError) as e:
        print(name, type(e).__name__, str(e)[:80])
    else:
        sys.exit(f"{name}: no error")
# and the process keeps working
Q = np.random.default_rng(0).standard_normal((2, 3, 4))
out, w = attnpy.scaled_dot_product_attention(Q, Q, Q)
ref = attnpy.reference.attention(Q, Q, Q)
assert np.allclose(out, ref, rtol=1e-10, atol=1e-12)
assert np.allclose(attnpy.attention(Q, Q, Q), ref, rtol=1e-10, atol=1e-12)
print("still works")
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the address-space "
                    "limit (RLIMIT_AS, /proc/self/statm) is Linux's")
def test_request_too_large_for_the_machine_fails_cleanly(tmp_path):
    """~1 TiB (and 16 GiB) requests under an address-space limit: a
    MemoryError (or ValueError), then normal calls still work. Run in a
    child process so that the limit does not touch the test session."""
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep
               + os.environ.get("PYTHONPATH", ""),
               OPENBLAS_NUM_THREADS="1")
    r = subprocess.run([sys.executable, "-c", TOO_LARGE_FOR_THE_MACHINE],
                       cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().endswith("still works"), r.stdout


# ---------------------------------------------------------------------------
# strides: negative, transposed, zero, unaligned, byte-swapped
# ---------------------------------------------------------------------------

def unaligned(a):
    """A copy of `a` whose data pointer is not aligned to its item size."""
    buf = np.zeros(a.nbytes + 1, np.uint8)
    u = np.frombuffer(buf.data, dtype=a.dtype, count=a.size,
                      offset=1).reshape(a.shape)
    u[...] = a
    assert a.itemsize == 1 or not u.flags.aligned
    return u


VIEWS = {
    "reversed": lambda a: np.ascontiguousarray(a[..., ::-1, ::-1])[..., ::-1, ::-1],
    "transposed": lambda a: np.ascontiguousarray(np.swapaxes(a, -1, -2)).swapaxes(-1, -2),
    "strided": lambda a: np.repeat(a, 2, axis=-1)[..., ::2],
    "batch-reversed": lambda a: np.ascontiguousarray(a[::-1])[::-1],
    "fortran": np.asfortranarray,
    "unaligned": unaligned,
    "big-endian": lambda a: a.astype(a.dtype.newbyteorder(">")),
}


@pytest.mark.parametrize("view", VIEWS.values(), ids=VIEWS.keys())
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_strided_views_match_reference(view, dtype):
    q, k, v = (view(a.astype(dtype)) for a in (Q, K, V))
    mask = view(np.tile(RNG.random((L, S)) > 0.3, (B, 1, 1)))
    bias = view(RNG.standard_normal((B, L, S)).astype(dtype))
    for arr, orig in ((q, Q), (k, K), (v, V)):
        np.testing.assert_array_equal(arr, orig.astype(dtype))
    ro, rw = ref_sdpa(q, k, v, mask=mask, bias=bias, causal=True)
    o, w = SDPA(q, k, v, mask=mask, bias=bias, causal=True)
    close(o, ro, dtype)
    close(w, rw, dtype)
    close(attnpy.attention(q, k, v, mask=mask, bias=bias, causal=True), ro,
          dtype)
    close(attnpy.softmax(q, axis=1), ref.softmax(np.array(q), axis=1), dtype)
    x4 = view(RNG.standard_normal((2, 3, 4, 5)).astype(dtype))
    np.testing.assert_array_equal(attnpy.combine_heads(x4),
                                  ref.combine_heads(np.array(x4)))


@pytest.mark.parametrize("view", VIEWS.values(), ids=VIEWS.keys())
def test_out_views_are_filled_correctly(view):
    out = view(np.zeros((B, L, EV)))
    w = view(np.zeros((B, L, S)))
    assert out.flags.writeable and w.flags.writeable
    if not out.dtype.isnative:
        # not exactly the result's dtype: refusing it is allowed
        check(lambda: SDPA(Q, K, V, out=out), TypeError,
              "scaled_dot_product_attention", "out")
        return
    o2, w2 = SDPA(Q, K, V, out=out, weights_out=w)
    assert o2 is out and w2 is w
    ro, rw = ref_sdpa(Q, K, V)
    close(out, ro, np.float64)
    close(w, rw, np.float64)
    out[...] = 0
    assert attnpy.attention(Q, K, V, out=out) is out
    close(out, ro, np.float64)


def test_broadcast_zero_stride_inputs():
    q = np.broadcast_to(Q[:1], (4,) + Q.shape[1:])
    k = np.broadcast_to(K[0], (4,) + K.shape[1:])
    v = np.broadcast_to(V[0, :1], (4,) + V.shape[1:])
    bias = np.broadcast_to(np.arange(S, dtype=float), (L, S))
    ro, rw = ref_sdpa(q, k, v, bias=bias)
    o, w = SDPA(q, k, v, bias=bias)
    close(o, ro, np.float64)
    close(w, rw, np.float64)


def test_negative_stride_out_and_softmax_out():
    out = np.zeros((B, L, EV))[::-1, ::-1, ::-1]
    attnpy.attention(Q, K, V, out=out)
    close(out, ref_sdpa(Q, K, V)[0], np.float64)
    x = RNG.standard_normal((4, 5))
    o = np.zeros((4, 5))[::-1, ::-1]
    attnpy.softmax(x, out=o)
    close(o, ref.softmax(x), np.float64)


# ---------------------------------------------------------------------------
# aliasing: out= overlapping an input must still give the right answer
# ---------------------------------------------------------------------------

def test_out_is_q():
    q = RNG.standard_normal((B, L, EV))
    k = RNG.standard_normal((B, S, EV))
    q0 = q.copy()
    r = attnpy.attention(q, k, V, out=q)
    assert r is q
    close(q, ref_sdpa(q0, k, V)[0], np.float64)


def test_out_overlaps_v():
    buf = RNG.standard_normal((B, S + 2, EV))
    v = buf[:, :S]
    v0 = v.copy()
    out = buf[:, S - L + 2:]           # rows S-1 .. S+1: overlaps V's last row
    assert np.shares_memory(out, v)
    attnpy.attention(Q, K, v, out=out)
    close(out, ref_sdpa(Q, K, v0)[0], np.float64)


def test_out_is_k_transposed_view():
    k = RNG.standard_normal((B, L, L))      # S = E = L
    q = RNG.standard_normal((B, L, L))
    v = RNG.standard_normal((B, L, L))
    k0 = k.copy()
    out = np.swapaxes(k, -1, -2)
    attnpy.attention(q, k, v, out=out)
    close(out, ref_sdpa(q, k0, v)[0], np.float64)


def test_weights_out_is_bias():
    bias = RNG.standard_normal((B, L, S))
    b0 = bias.copy()
    o, w = SDPA(Q, K, V, bias=bias, weights_out=bias)
    assert w is bias
    ro, rw = ref_sdpa(Q, K, V, bias=b0)
    close(o, ro, np.float64)
    close(bias, rw, np.float64)


def test_weights_out_overlaps_q():
    buf = RNG.standard_normal((B, L, S))
    q = buf[..., :E]
    q0 = q.copy()
    o, w = SDPA(q, K, V, weights_out=buf)
    ro, rw = ref_sdpa(q0, K, V)
    close(o, ro, np.float64)
    close(buf, rw, np.float64)


def test_softmax_out_aliasing():
    x = RNG.standard_normal((5, 5))
    for make_out in (lambda a: a, lambda a: a.T, lambda a: a[::-1],
                     lambda a: a[:, ::-1]):
        a = x.copy()
        out = make_out(a)
        attnpy.softmax(a, axis=-1, out=out)
        close(out, ref.softmax(x, axis=-1), np.float64)
        a = x.copy()
        attnpy.softmax(a, axis=0, out=make_out(a))
        close(make_out(a), ref.softmax(x, axis=0), np.float64)


def test_combine_heads_out_overlaps_x():
    buf = RNG.standard_normal(100)
    x = buf[:48].reshape(2, 3, 4, 2)
    x0 = x.copy()
    out = buf[4:52].reshape(2, 4, 6)
    attnpy.combine_heads(x, out=out)
    np.testing.assert_array_equal(out, ref.combine_heads(x0))


def test_inputs_are_not_modified():
    q, k, v = Q.copy(), K.copy(), V.copy()
    mask = RNG.random((L, S)) > 0.5
    bias = RNG.standard_normal((L, S))
    m0, b0 = mask.copy(), bias.copy()
    SDPA(q, k, v, mask=mask, bias=bias)
    attnpy.attention(q, k, v, mask=mask, bias=bias)
    attnpy.softmax(q)
    attnpy.combine_heads(q[None])
    for a, a0 in ((q, Q), (k, K), (v, V), (mask, m0), (bias, b0)):
        np.testing.assert_array_equal(a, a0)


# ---------------------------------------------------------------------------
# softmax
# ---------------------------------------------------------------------------

def _softmax_cases():
    x = RNG.standard_normal((3, 4))
    sm = attnpy.softmax
    c = []
    for tname, bad in WRONG_TYPES.items():
        c.append(pytest.param(lambda bad=bad: sm(bad), TypeError, ("x",),
                              id=f"x-{tname}"))
    for dname, bad in unsupported_dtype_arrays((3, 4)).items():
        c.append(pytest.param(lambda bad=bad: sm(bad), TypeError, ("x",),
                              id=f"x-dtype-{dname}"))
    c.append(pytest.param(lambda: sm([[1.0, 2.0], [3.0]]), (TypeError, ValueError),
                          ("x",), id="x-ragged"))
    c.append(pytest.param(lambda: sm(3.0), np.exceptions.AxisError, ("axis",),
                          id="x-0d"))
    for tname, bad in (("str", "0"), ("None", None), ("float", 1.0),
                       ("bool", True), ("tuple", (0, 1)), ("list", [0])):
        c.append(pytest.param(lambda bad=bad: sm(x, axis=bad), TypeError,
                              ("axis",), id=f"axis-{tname}"))
    for bad in (2, -3, 2 ** 70, -(2 ** 70)):
        c.append(pytest.param(lambda bad=bad: sm(x, axis=bad),
                              np.exceptions.AxisError, ("axis",),
                              id=f"axis-{bad}"))
    for sh in ((4, 3), (3,), (1, 3, 4)):
        c.append(pytest.param(lambda sh=sh: sm(x, out=np.empty(sh)), ValueError,
                              ("out",), id=f"out-shape{sh}"))
    for dt in (np.float32, np.int64, np.complex128, ">f8"):
        c.append(pytest.param(lambda dt=dt: sm(x, out=np.empty((3, 4), dt)),
                              TypeError, ("out",), id=f"out-dtype-{dt}"))
    c.append(pytest.param(lambda: sm(x, out=x.tolist()), TypeError, ("out",),
                          id="out-list"))
    ro = np.empty((3, 4))
    ro.flags.writeable = False
    c.append(pytest.param(lambda: sm(x, out=ro), ValueError, ("out",),
                          id="out-readonly"))
    return c


@pytest.mark.parametrize("call, exc, args", _softmax_cases())
def test_softmax_bad_input(call, exc, args):
    check(call, exc, "softmax", *args)


# ---------------------------------------------------------------------------
# masks
# ---------------------------------------------------------------------------

SIZE_WRONG_TYPES = {"None": None, "str": "3", "float": 2.5, "list": [3],
                    "bool": True, "complex": 3j, "array2": np.array([3, 3])}


def _mask_cases():
    c = []

    def add(id_, call, exc, fname, *args):
        c.append(pytest.param(call, exc, fname, args, id=id_))

    for tname, bad in SIZE_WRONG_TYPES.items():
        add(f"create_causal_mask-seq_len-{tname}",
            lambda bad=bad: attnpy.create_causal_mask(bad), TypeError,
            "create_causal_mask", "seq_len")
        add(f"causal_mask-L-{tname}", lambda bad=bad: attnpy.causal_mask(bad),
            TypeError, "causal_mask", "L")
        if bad is not None:
            add(f"causal_mask-S-{tname}",
                lambda bad=bad: attnpy.causal_mask(3, bad), TypeError,
                "causal_mask", "S")
        add(f"padding_mask-S-{tname}",
            lambda bad=bad: attnpy.padding_mask([1], bad), TypeError,
            "padding_mask", "S")
    for bad in (-1, -(2 ** 70)):
        add(f"create_causal_mask-seq_len-{bad}",
            lambda bad=bad: attnpy.create_causal_mask(bad), ValueError,
            "create_causal_mask", "seq_len")
        add(f"causal_mask-L-{bad}", lambda bad=bad: attnpy.causal_mask(bad),
            ValueError, "causal_mask", "L")
        add(f"causal_mask-S-{bad}", lambda bad=bad: attnpy.causal_mask(3, bad),
            ValueError, "causal_mask", "S")
        add(f"padding_mask-S-{bad}",
            lambda bad=bad: attnpy.padding_mask([0], bad), ValueError,
            "padding_mask", "S")
    add("causal_mask-align-sideways",
        lambda: attnpy.causal_mask(3, align="sideways"), ValueError,
        "causal_mask", "align")
    for tname, bad in (("None", None), ("list", []), ("int", 1),
                       ("array2", np.array(["top_left", "top_left"])),
                       ("void", np.zeros((), "V8"))):
        add(f"causal_mask-align-{tname}",
            lambda bad=bad: attnpy.causal_mask(3, align=bad),
            (TypeError, ValueError), "causal_mask", "align")
    for tname, bad in WRONG_TYPES.items():
        add(f"padding_mask-lengths-{tname}",
            lambda bad=bad: attnpy.padding_mask(bad, 3), TypeError,
            "padding_mask", "lengths")
    for tname, bad in (("float", [1.5]), ("complex", [1j]), ("nan", [np.nan]),
                       ("datetime", np.zeros(1, "M8[s]"))):
        add(f"padding_mask-lengths-{tname}",
            lambda bad=bad: attnpy.padding_mask(bad, 3), TypeError,
            "padding_mask", "lengths")
    for tname, bad in (("2d", [[1, 2]]), ("negative", [-1]),
                       ("very-negative", [-(2 ** 63)]), ("0d", 2)):
        add(f"padding_mask-lengths-{tname}",
            lambda bad=bad: attnpy.padding_mask(bad, 3), ValueError,
            "padding_mask", "lengths")
    return c


@pytest.mark.parametrize("call, exc, fname, args", _mask_cases())
def test_mask_functions_bad_input(call, exc, fname, args):
    check(call, exc, fname, *args)


@pytest.mark.parametrize("lengths", [
    [4], [0, 3, 9], [2 ** 40], [2 ** 63 - 1], [2 ** 63],
    np.array([2 ** 64 - 1], np.uint64), np.array([200], np.uint8),
], ids=["4", "mixed", "2**40", "int64max", "2**63", "uint64max", "uint8"])
def test_padding_mask_lengths_beyond_S_are_refused(lengths):
    """Lengths must be <= S (as in the reference); a length that does not
    fit in intp must be refused too, not wrap around to a negative one."""
    check(lambda: attnpy.padding_mask(lengths, 3), ValueError, "padding_mask",
          "lengths")


@pytest.mark.parametrize("lengths", [
    [0, 3, 1], np.array([2, 3], np.uint64), np.array([1], np.uint8),
    np.array([True, False]), np.array([], np.int64),
], ids=["list", "uint64", "uint8", "bool", "empty"])
def test_padding_mask_valid_lengths_match_reference(lengths):
    got = attnpy.padding_mask(lengths, 3)
    want = ref.padding_mask(lengths, 3)
    assert got.dtype == bool and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------
# positional encodings
# ---------------------------------------------------------------------------

def _posenc_cases():
    c = []
    pe, ape = attnpy.positional_encoding, attnpy.add_positional_encoding
    fpe, fape = "positional_encoding", "add_positional_encoding"

    def add(id_, call, exc, fname, *args):
        c.append(pytest.param(call, exc, fname, args, id=id_))

    for tname, bad in SIZE_WRONG_TYPES.items():
        add(f"pe-max_len-{tname}", lambda bad=bad: pe(bad, 4), TypeError, fpe,
            "max_len")
        add(f"pe-d_model-{tname}", lambda bad=bad: pe(4, bad), TypeError, fpe,
            "d_model")
    for bad in (-1, -(2 ** 70)):
        add(f"pe-max_len-{bad}", lambda bad=bad: pe(bad, 4), ValueError, fpe,
            "max_len")
        add(f"pe-d_model-{bad}", lambda bad=bad: pe(4, bad), ValueError, fpe,
            "d_model")
    for tname, bad in (("str", "1e4"), ("None", None), ("complex", 1j),
                       ("list", [1e4]), ("array2", np.array([1.0, 2.0]))):
        add(f"pe-base-{tname}", lambda bad=bad: pe(4, 4, base=bad), TypeError,
            fpe, "base")
        add(f"ape-base-{tname}",
            lambda bad=bad: ape(np.zeros((2, 4)), base=bad), TypeError, fape,
            "base")
    for bad in (0, -1.0, np.nan, -np.inf):
        add(f"pe-base-{bad}", lambda bad=bad: pe(4, 4, base=bad), ValueError,
            fpe, "base")
        add(f"ape-base-{bad}", lambda bad=bad: ape(np.zeros((2, 4)), base=bad),
            ValueError, fape, "base")
    for tname, bad in (("int", int), ("float16", np.float16),
                       ("complex", complex), ("object", object),
                       ("unknown-name", "foo"), ("str", str)):
        add(f"pe-dtype-{tname}", lambda bad=bad: pe(4, 4, dtype=bad), TypeError,
            fpe, "dtype")
    add("pe-out-shape", lambda: pe(4, 4, out=np.empty((4, 5))), ValueError, fpe,
        "out")
    for dt in (np.float32, np.int64):
        add(f"pe-out-dtype-{np.dtype(dt).name}",
            lambda dt=dt: pe(4, 4, out=np.empty((4, 4), dt)), TypeError, fpe,
            "out")
    add("pe-out-list", lambda: pe(2, 2, out=[[0.0, 0.0], [0.0, 0.0]]),
        TypeError, fpe, "out")
    ro = np.empty((4, 4))
    ro.flags.writeable = False
    add("pe-out-readonly", lambda: pe(4, 4, out=ro), ValueError, fpe, "out")
    for tname, bad in WRONG_TYPES.items():
        add(f"ape-x-{tname}", lambda bad=bad: ape(bad), TypeError, fape, "x")
    add("ape-x-list", lambda: ape([[0.0, 1.0]]), TypeError, fape, "x")
    for dname, bad in unsupported_dtype_arrays((2, 4)).items():
        add(f"ape-x-dtype-{dname}", lambda bad=bad: ape(bad), TypeError, fape,
            "x")
    for dt in (np.int64, np.float16, bool, np.longdouble):
        add(f"ape-x-dtype-{np.dtype(dt).name}",
            lambda dt=dt: ape(np.zeros((2, 4), dt)), TypeError, fape, "x")
    add("ape-x-1d", lambda: ape(np.zeros(4)), ValueError, fape, "x")
    add("ape-x-0d", lambda: ape(np.zeros(())), ValueError, fape, "x")
    ro2 = np.zeros((2, 4))
    ro2.flags.writeable = False
    add("ape-x-readonly", lambda: ape(ro2), ValueError, fape, "x")
    add("ape-x-broadcast-view",
        lambda: ape(np.broadcast_to(np.zeros(4), (3, 4))), ValueError, fape,
        "x")
    for tname, bad in (("float", 1.5), ("str", "1"), ("None", None),
                       ("bool", True)):
        add(f"ape-offset-{tname}",
            lambda bad=bad: ape(np.zeros((2, 4)), offset=bad), TypeError, fape,
            "offset")
    add("ape-offset-negative", lambda: ape(np.zeros((2, 4)), offset=-1),
        ValueError, fape, "offset")
    return c


@pytest.mark.parametrize("call, exc, fname, args", _posenc_cases())
def test_positional_encoding_bad_input(call, exc, fname, args):
    check(call, exc, fname, *args)


def test_add_positional_encoding_failure_leaves_x_untouched():
    x = RNG.standard_normal((2, 4))
    x0 = x.copy()
    with pytest.raises(ValueError):
        attnpy.add_positional_encoding(x, offset=-1)
    np.testing.assert_array_equal(x, x0)


def test_positional_encoding_huge_offset_and_base_inf_like_reference():
    x = np.zeros((2, 3, 4))
    attnpy.add_positional_encoding(x, offset=2 ** 53)
    assert np.isfinite(x).all()
    x = np.zeros((3, 4))
    r = ref.add_positional_encoding(np.zeros((3, 4)), offset=2 ** 53)
    close(attnpy.add_positional_encoding(x, offset=2 ** 53), r, np.float64)
    with np.errstate(all="ignore"):
        r = ref.positional_encoding(3, 4, base=np.inf)
    close(attnpy.positional_encoding(3, 4, base=np.inf), r, np.float64)


# ---------------------------------------------------------------------------
# split_heads / combine_heads
# ---------------------------------------------------------------------------

def _heads_cases():
    c = []
    sh, ch = attnpy.split_heads, attnpy.combine_heads

    def add(id_, call, exc, fname, *args):
        c.append(pytest.param(call, exc, fname, args, id=id_))

    x = np.zeros((2, 3, 8))
    for tname, bad in WRONG_TYPES.items():
        # split_heads is a dtype-agnostic view (it accepts object arrays like
        # the reference), so a non-array may fail as a shape problem too
        add(f"split_heads-x-{tname}", lambda bad=bad: sh(bad, 2),
            (TypeError, ValueError), "split_heads", "x")
        add(f"combine_heads-x-{tname}", lambda bad=bad: ch(bad), TypeError,
            "combine_heads", "x")
    add("split_heads-x-1d", lambda: sh(np.zeros(8), 2), ValueError,
        "split_heads", "x")
    add("split_heads-x-0d", lambda: sh(np.zeros(()), 2), ValueError,
        "split_heads", "x")
    for tname, bad in (("float", 2.0), ("None", None), ("str", "2"),
                       ("bool", True), ("list", [2])):
        add(f"split_heads-num_heads-{tname}", lambda bad=bad: sh(x, bad),
            TypeError, "split_heads", "num_heads")
    for bad in (0, -1, 3, 16, 2 ** 70):
        add(f"split_heads-num_heads-{bad}", lambda bad=bad: sh(x, bad),
            ValueError, "split_heads", "num_heads")
    # d_model = 0 is divisible by anything; a huge head count is still not
    # a valid shape
    add("split_heads-num_heads-huge-d0",
        lambda: sh(np.zeros((2, 3, 0)), 10 ** 30), ValueError, "split_heads",
        "num_heads")
    for dname, bad in unsupported_dtype_arrays((2, 2, 3, 4)).items():
        add(f"combine_heads-x-dtype-{dname}", lambda bad=bad: ch(bad),
            TypeError, "combine_heads", "x")
    add("combine_heads-x-2d", lambda: ch(np.zeros((3, 4))), ValueError,
        "combine_heads", "x")
    x4 = np.zeros((2, 2, 3, 4))
    add("combine_heads-out-shape", lambda: ch(x4, out=np.empty((2, 3, 9))),
        ValueError, "combine_heads", "out")
    add("combine_heads-out-dtype", lambda: ch(x4, out=np.empty((2, 3, 8),
                                                              np.float32)),
        TypeError, "combine_heads", "out")
    add("combine_heads-out-list", lambda: ch(x4, out=[[0.0] * 8] * 3),
        TypeError, "combine_heads", "out")
    ro = np.empty((2, 3, 8))
    ro.flags.writeable = False
    add("combine_heads-out-readonly", lambda: ch(x4, out=ro), ValueError,
        "combine_heads", "out")
    return c


@pytest.mark.parametrize("call, exc, fname, args", _heads_cases())
def test_heads_bad_input(call, exc, fname, args):
    check(call, exc, fname, *args)


@pytest.mark.parametrize("dname", list(unsupported_dtype_arrays((1,))))
def test_split_heads_odd_dtypes_refuse_or_are_exact_views(dname):
    """split_heads only reshapes: it may refuse an odd dtype (TypeError
    naming x) or return exactly the reference's view; never crash."""
    x = unsupported_dtype_arrays((2, 3, 4))[dname]
    try:
        h = attnpy.split_heads(x, 2)
    except TypeError as e:
        assert named("split_heads", "x").search(str(e)), str(e)
    else:
        r = ref.split_heads(x, 2)
        assert h.shape == r.shape and h.dtype == r.dtype
        assert h.tobytes() == r.tobytes()


# ---------------------------------------------------------------------------
# MultiHeadAttention
# ---------------------------------------------------------------------------

MHA = attnpy.MultiHeadAttention
D_MODEL = 8


def _mha_cases():
    c = []
    m = MHA(D_MODEL, 2, seed=0)
    X = RNG.standard_normal((2, 3, D_MODEL))
    mem = RNG.standard_normal((2, 5, D_MODEL))

    def add(id_, call, exc, fname, *args):
        c.append(pytest.param(call, exc, fname, args, id=id_))

    f = "MultiHeadAttention"
    for tname, bad in SIZE_WRONG_TYPES.items():
        add(f"init-d_model-{tname}", lambda bad=bad: MHA(bad, 2), TypeError, f,
            "d_model")
        add(f"init-num_heads-{tname}", lambda bad=bad: MHA(8, bad), TypeError,
            f, "num_heads")
    add("init-d_model-negative", lambda: MHA(-8, 2), ValueError, f, "d_model")
    add("init-num_heads-negative", lambda: MHA(8, -2), ValueError, f,
        "num_heads")
    add("init-num_heads-0", lambda: MHA(8, 0), ValueError, f, "num_heads")
    add("init-not-divisible", lambda: MHA(8, 3), ValueError, f, "d_model",
        "num_heads")
    for tname, bad in (("int", int), ("float16", np.float16),
                       ("complex", complex), ("unknown-name", "foo")):
        add(f"init-dtype-{tname}", lambda bad=bad: MHA(8, 2, dtype=bad),
            TypeError, f, "dtype")
    for tname, bad in (("str", "x"), ("float", 1.5), ("dict", {})):
        add(f"init-seed-{tname}", lambda bad=bad: MHA(8, 2, seed=bad),
            TypeError, f, "seed")
    add("init-seed-negative", lambda: MHA(8, 2, seed=-1), ValueError, f,
        "seed")
    add("init-num_heads-huge-d0", lambda: MHA(0, 2 ** 62).forward(
        np.zeros((2, 3, 0))), ValueError, f, "num_heads")

    ff = "MultiHeadAttention.forward"
    for tname, bad in WRONG_TYPES.items():
        add(f"forward-X-{tname}", lambda bad=bad: m.forward(bad), TypeError,
            ff, "X")
        add(f"call-query-{tname}", lambda bad=bad: m(bad), TypeError, f,
            "query")
        if bad is not None:             # None means "same as query"
            add(f"call-key-{tname}", lambda bad=bad: m(X, bad), TypeError, f,
                "key")
            add(f"call-value-{tname}", lambda bad=bad: m(X, mem, bad),
                TypeError, f, "value")
    for dname, bad in unsupported_dtype_arrays((2, 3, D_MODEL)).items():
        add(f"forward-X-dtype-{dname}", lambda bad=bad: m.forward(bad),
            TypeError, ff, "X")
        add(f"call-key-dtype-{dname}",
            lambda bad=bad: m(X, np.resize(bad, mem.shape)), TypeError, f,
            "key")
    add("forward-X-1d", lambda: m.forward(np.ones(D_MODEL)), ValueError, ff,
        "X")
    add("forward-X-wrong-d_model", lambda: m.forward(np.ones((2, 3, 6))),
        ValueError, ff, "X")
    add("call-key-wrong-d_model", lambda: m(X, np.ones((2, 5, 6))), ValueError,
        f, "key")
    add("call-value-wrong-length", lambda: m(X, mem, mem[:, :4]), ValueError,
        f, "value")
    add("call-batch-mismatch", lambda: m(X, np.ones((3, 5, D_MODEL))),
        ValueError, f, "query", "key")
    add("forward-mask-shape", lambda: m.forward(X, np.ones((4, 4))),
        ValueError, ff, "mask")
    add("forward-mask-complex", lambda: m.forward(X, np.ones((3, 3), complex)),
        TypeError, ff, "mask")
    add("forward-mask-str", lambda: m.forward(X, "abc"), TypeError, ff, "mask")
    add("forward-causal-sideways", lambda: m.forward(X, causal="sideways"),
        ValueError, ff, "causal")
    add("call-causal-sideways", lambda: m(X, causal="sideways"), ValueError, f,
        "causal")
    add("call-mask-shape", lambda: m(X, mem, mask=np.ones((3, 3))), ValueError,
        f, "mask")

    for w in ("W_q", "W_k", "W_v", "W_o"):
        for tname, bad in (("None", None), ("str", "abc"), ("dict", {}),
                           ("complex", np.ones((8, 8), complex)),
                           ("object", np.ones((8, 8), object)),
                           ("datetime", np.zeros((8, 8), "M8[s]"))):
            add(f"{w}-{tname}", lambda w=w, bad=bad: setattr(m, w, bad),
                TypeError, f, w)
        for tname, bad in (("shape", np.ones((8, 4))), ("1d", np.ones(8)),
                           ("3d", np.ones((1, 8, 8)))):
            add(f"{w}-{tname}", lambda w=w, bad=bad: setattr(m, w, bad),
                ValueError, f, w)
        add(f"{w}-ragged", lambda w=w: setattr(m, w, [[1.0, 2.0], [3.0]]),
            (TypeError, ValueError), f, w)
    return c


@pytest.mark.parametrize("call, exc, fname, args", _mha_cases())
def test_multi_head_attention_bad_input(call, exc, fname, args):
    check(call, exc, fname, *args)


def test_failed_weight_assignment_keeps_old_weights():
    m = MHA(D_MODEL, 2, seed=1)
    before = m.W_q.copy()
    for bad in (np.ones((8, 4)), None, np.ones((8, 8), complex)):
        with pytest.raises((TypeError, ValueError)):
            m.W_q = bad
        np.testing.assert_array_equal(m.W_q, before)


def test_multi_head_attention_nonfinite_weights_like_reference():
    m = MHA(D_MODEL, 2, seed=2)
    r = ref.MultiHeadAttention(D_MODEL, 2, seed=2)
    W = m.W_v.copy()
    W[0, 0] = np.nan
    m.W_v = W
    r.W_v = W
    X = RNG.standard_normal((1, 4, D_MODEL))
    o, w = m.forward(X)
    with np.errstate(all="ignore"):
        ro, rw = r.forward(X)
    close(o, ro, np.float64)
    close(w, rw, np.float64)


# ---------------------------------------------------------------------------
# set_num_threads
# ---------------------------------------------------------------------------

@pytest.fixture
def restore_threads():
    n = attnpy.get_num_threads()
    yield
    attnpy.set_num_threads(n)


@pytest.mark.parametrize("bad, exc", [
    (None, TypeError), ("2", TypeError), (2.0, TypeError), (True, TypeError),
    ([2], TypeError), (0, ValueError), (-1, ValueError), (2 ** 70, ValueError),
    (-(2 ** 70), ValueError), (10 ** 6, ValueError),
], ids=["None", "str", "float", "bool", "list", "0", "-1", "2**70", "-2**70",
        "10**6"])
def test_set_num_threads_bad_input(bad, exc, restore_threads):
    before = attnpy.get_num_threads()
    check(lambda: attnpy.set_num_threads(bad), exc, "set_num_threads", "n")
    assert attnpy.get_num_threads() == before


def test_set_num_threads_accepts_numpy_integers(restore_threads):
    """Every other size argument accepts NumPy integers (operator.index)."""
    attnpy.set_num_threads(np.int64(2))
    assert attnpy.get_num_threads() == 2


def _dtype(name):
    if name == "bfloat16":
        import ml_dtypes  # the test extra has it
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


@pytest.mark.parametrize("isa", attnpy.isas())
@pytest.mark.parametrize("name", ["float64", "float32", "float16", "bfloat16"])
@pytest.mark.parametrize("L, S, E", [(1, 49, 1), (3, 300, 8), (1, 5000, 128),
                                     (2, 9000, 64)])
@pytest.mark.parametrize("threads", [1, 2])
def test_nonfinite_value_row_of_an_underflowed_key_like_reference(isa, name, L,
                                                                  S, E,
                                                                  threads):
    """A key every query sees, V row infinite, whose weight is exactly 0
    because a key in a later block (or later key chunk) scores far higher:
    exp underflows. It contributes nothing (the reference's rule), though
    the running output had already taken it in with weight 1 before the
    later key raised the max (a rescale by exactly 0 then, not 0 * inf =
    NaN). Same bits on every set and thread count."""
    dt = _dtype(name)
    big = 1000.0 if name == "float64" else 200.0   # exp(-big) == 0
    q = np.zeros((2, L, E), dt)
    q[..., 0] = 1
    k = np.zeros((2, S, E), dt)
    k[:, -1, 0] = big                    # the last key dominates
    v = np.ones((2, S, 2), dt)
    v[:, 0, 0] = np.inf                  # key 0: weight 1, then exactly 0
    v[:, 1, 1] = -np.inf
    v[:, 2, 0] = np.nan
    attnpy.set_num_threads(threads)
    _core.set_isa(isa)
    out = attnpy.attention(q, k, v, scale=1.0)
    w = attnpy.scaled_dot_product_attention(q, k, v, scale=1.0)[1]
    assert (w[..., :3] == 0).all()
    np.testing.assert_array_equal(out.astype(np.float64), 1.0)
    _core.set_isa("portable")
    attnpy.set_num_threads(1)
    again = attnpy.attention(q, k, v, scale=1.0)
    assert np.array_equal(out.view(np.uint8), again.view(np.uint8))


# ---- True/False options are True or False, not any truthy value -------------

_QKV = tuple(RNG.standard_normal((3, 2, 4, 8)))
FLAG_CALLS = [
    ("attention", "return_lse",
     lambda v: attnpy.attention(*_QKV, return_lse=v)),
    ("attention", "enable_gqa",
     lambda v: attnpy.attention(*_QKV, enable_gqa=v)),
    ("scaled_dot_product_attention", "enable_gqa",
     lambda v: attnpy.scaled_dot_product_attention(*_QKV, enable_gqa=v)),
    ("attention_backward", "bias_grad",
     lambda v: attnpy.attention_backward(
         _QKV[0], *_QKV, *attnpy.attention(*_QKV, return_lse=True),
         bias=np.zeros((4, 4)), bias_grad=v)),
    ("attention_backward", "enable_gqa",
     lambda v: attnpy.attention_backward(
         _QKV[0], *_QKV, *attnpy.attention(*_QKV, return_lse=True),
         enable_gqa=v)),
    ("MultiHeadAttention", "need_weights",
     lambda v: attnpy.MultiHeadAttention(8, 2, seed=0)(_QKV[0],
                                                       need_weights=v)),
    ("isas", "opt_in", lambda v: attnpy.isas(opt_in=v)),
]


@pytest.mark.parametrize("fname, arg, call", FLAG_CALLS,
                         ids=[f"{f}-{a}" for f, a, _ in FLAG_CALLS])
@pytest.mark.parametrize("value", ["False", "", np.array([True, False]), 2,
                                   None])
def test_flags_refuse_what_is_not_true_or_false(fname, arg, call, value):
    """The string "False" is truthy: read by truthiness it would turn the
    option on. Refused, naming the function and the argument; True,
    False, NumPy's bools and 0 / 1 work."""
    with pytest.raises(TypeError, match=f"^{fname}: {arg} must be True or "
                                        f"False, got {type(value).__name__}"):
        call(value)
    for ok in (True, np.False_, 0):
        call(ok)


@pytest.mark.parametrize("fname, f", ATTN, ids=[a for a, _ in ATTN])
def test_boolean_bias_is_refused_pointing_to_mask(fname, f):
    """A boolean keep-mask given as bias= (PyTorch's attn_mask takes both
    kinds) would be added to the scores as 0 / 1 and mask nothing."""
    keep = np.tril(np.ones((L, S), bool))
    with pytest.raises(ValueError, match=rf"^{fname}: bias is boolean, .* "
                                         r"goes in mask= instead \(bias\.shape"):
        f(Q, K, V, bias=keep)
    out, lse = attnpy.attention(Q, K, V, return_lse=True)
    with pytest.raises(ValueError, match=r"^attention_backward: bias is boolean"):
        attnpy.attention_backward(Q[..., :V.shape[-1]] * 0 + 1, Q, K, V, out,
                                  lse, bias=keep)
    # the same cells as a mask, or as an additive float bias, work
    f(Q, K, V, mask=keep)
    f(Q, K, V, bias=np.where(keep, 0.0, -np.inf))


def test_set_isa_refuses_a_name_with_a_nul():
    """The core compares C strings: "avx2\\0x" must not select avx2."""
    with pytest.raises(ValueError, match="not an instruction set"):
        attnpy.set_isa("portable\0garbage")
    with pytest.raises(ValueError, match="unknown"):
        _core.set_isa("portable\0")


def test_encoder_options_are_checked_when_assigned():
    """TransformerEncoderLayer's options go to the kernels unchecked: a
    reassigned one is checked as the constructor checks it."""
    t = attnpy.TransformerEncoderLayer(8, 2, 16, seed=0)
    x = RNG.standard_normal((1, 3, 8))
    y = t(x)
    for name, value, exc, msg in [
            ("layer_norm_eps", -1.0, ValueError, "must be >= 0"),
            ("layer_norm_eps", np.nan, ValueError, "must be >= 0"),
            ("layer_norm_eps", None, TypeError, "must be a real number"),
            ("norm_first", "False", TypeError, "must be True or False"),
            ("eps_in_sqrt", 2, TypeError, "must be True or False"),
            ("activation", "tanh", ValueError, "activation must be")]:
        with pytest.raises(exc, match=f"^TransformerEncoderLayer: .*{msg}"):
            setattr(t, name, value)
    assert np.array_equal(t(x), y)          # nothing changed
    t.layer_norm_eps, t.norm_first = 1e-5, True
    assert t.layer_norm_eps == 1e-5 and t.norm_first is True
    assert not np.array_equal(t(x), y)


@pytest.mark.parametrize("call", ["causal_mask(0, 2**40)",
                                  "causal_mask(2**40, 0)",
                                  "padding_mask([], 2**40)",
                                  "padding_mask(np.zeros(3, int), 0)"])
def test_empty_masks_need_no_memory_of_the_other_length(call):
    m = eval("attnpy." + call)
    assert m.size == 0 and m.dtype == bool


@pytest.mark.parametrize("decimals, exc", [(-1, ValueError), (16, ValueError),
                                           (1.5, TypeError), (None, TypeError),
                                           ("2", TypeError), (True, TypeError)])
def test_show_checks_decimals(decimals, exc):
    with pytest.raises(exc, match="^show: decimals must be"):
        attnpy.show(np.eye(2), decimals=decimals)
    assert "0.50" in str(attnpy.show(np.eye(2) / 2, decimals=2))


def test_backward_destinations_are_checked_before_the_pass():
    """dq=/dk=/dv= that cannot take the result are refused before the
    backward pass runs (not with NumPy's message after it)."""
    q, k, v = RNG.standard_normal((3, 2, 4, 8))
    out, lse = attnpy.attention(q, k, v, return_lse=True)
    ro = np.empty_like(q)
    ro.flags.writeable = False
    calls = [(dict(dq=ro), ValueError, "dq is read-only"),
             (dict(dk=np.empty((2, 4, 7))), ValueError,
              r"dk must have shape \(2, 4, 8\)"),
             (dict(dv=[0.0]), TypeError, "dv must be a numpy array")]
    for kw, exc, msg in calls:
        with pytest.raises(exc, match=f"^attention_backward: {msg}"):
            attnpy.attention_backward(out, q, k, v, out, lse, **kw)
    dq = np.empty_like(q)
    got = attnpy.attention_backward(out, q, k, v, out, lse, dq=dq)
    assert got[0] is dq
    # two destinations in one buffer: one gradient would overwrite the other
    big = np.zeros((2, 6, 8))
    for kw, pair in [(dict(dq=dq, dk=dq), "dq and dk"),
                     (dict(dq=big[:, :4], dv=big[:, 2:]), "dq and dv")]:
        with pytest.raises(ValueError, match=f"^attention_backward: {pair} "
                                             "share memory"):
            attnpy.attention_backward(out, q, k, v, out, lse, **kw)
    # interleaved but disjoint views are fine
    inter = np.zeros((2, 4, 16))
    g = attnpy.attention_backward(out, q, k, v, out, lse, dq=inter[..., ::2],
                                  dk=inter[..., 1::2])
    ref = attnpy.attention_backward(out, q, k, v, out, lse)
    assert np.array_equal(g[0], ref[0]) and np.array_equal(g[1], ref[1])


_HUGE = np.broadcast_to(np.zeros((1, 1)), (2 ** 36, 2 ** 10))   # 512 TiB out


@pytest.mark.parametrize("fname, call", [
    ("layer_norm", lambda: attnpy.layer_norm(_HUGE)),
    ("rms_norm", lambda: attnpy.rms_norm(_HUGE)),
    ("gelu", lambda: attnpy.gelu(_HUGE)),
    ("silu", lambda: attnpy.silu(_HUGE)),
    ("softmax", lambda: attnpy.softmax(_HUGE)),
    ("merge_attention", lambda: attnpy.merge_attention(
        [_HUGE, _HUGE], [_HUGE[:, 0], _HUGE[:, 0]])),
], ids=lambda v: v if isinstance(v, str) else "")
def test_a_result_too_large_is_called_the_result(fname, call):
    """With no out= given, the allocation error names the result, not an
    "out" the caller never passed."""
    with pytest.raises(MemoryError) as info:
        call()
    assert str(info.value) == (f"{fname}: the result of shape (68719476736, "
                               "1024) is too large to allocate")
