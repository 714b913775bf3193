"""Bad input to the attention variants (enable_gqa, window, alibi_slopes,
softcap, the private pos_shift): TypeError for a wrong type, ValueError for
a wrong value, the message naming the function and the argument, in every
entry point (attention, scaled_dot_product_attention, attention_backward,
explain)."""
import numpy as np
import pytest

import attnpy
from attnpy import _core

RNG = np.random.default_rng(12)
Q = RNG.standard_normal((2, 4, 3, 5))
K = RNG.standard_normal((2, 2, 6, 5))
V = RNG.standard_normal((2, 2, 6, 4))
OUT, LSE = attnpy.attention(Q, K, V, enable_gqa=True, return_lse=True)


def _backward(**kw):
    return attnpy.attention_backward(np.ones_like(OUT), Q, K, V, OUT, LSE,
                                     enable_gqa=True, **kw)


CALLS = {
    "attention": lambda **kw: attnpy.attention(Q, K, V, enable_gqa=True,
                                               **kw),
    "scaled_dot_product_attention":
        lambda **kw: attnpy.scaled_dot_product_attention(
            Q, K, V, enable_gqa=True, **kw),
    "attention_backward": _backward,
    "explain": lambda **kw: attnpy.explain(Q, K, V, enable_gqa=True, **kw),
}

BAD = [
    # (keyword, value, exception, message fragment)
    ("window", 3, TypeError, "window must be None or a pair"),
    ("window", (1, 2, 3), TypeError, "window must be None or a pair"),
    ("window", "ab", TypeError, "window must be None or a pair"),
    ("window", (1.5, 0), TypeError, "window must be None or (left, right)"),
    ("window", (True, 0), TypeError, "window must be None or (left, right)"),
    ("window", (0, "x"), TypeError, "window must be None or (left, right)"),
    ("window", (-1, 0), ValueError, "window sides must be >= 0"),
    ("window", (None, -(2 ** 70)), ValueError, "window sides must be >= 0"),
    ("softcap", 0.0, ValueError, "softcap must be a finite number > 0"),
    ("softcap", -2, ValueError, "softcap must be a finite number > 0"),
    ("softcap", float("inf"), ValueError, "softcap must be a finite number"),
    ("softcap", float("nan"), ValueError, "softcap must be a finite number"),
    ("softcap", "1", TypeError, "softcap must be None or a real number"),
    ("softcap", True, TypeError, "softcap must be None or a real number"),
    ("softcap", 1j, TypeError, "softcap must be None or a real number"),
    ("alibi_slopes", 0.5, ValueError, "alibi_slopes must have a head axis"),
    ("alibi_slopes", np.ones(3), ValueError, "alibi_slopes has 3 heads"),
    ("alibi_slopes", np.ones((3, 4)), ValueError,
     "dimensions of Q and alibi_slopes do not broadcast"),
    ("alibi_slopes", ["a", "b"], TypeError, "alibi_slopes"),
    ("alibi_slopes", np.ones(4, complex), TypeError, "alibi_slopes"),
    ("mask", np.ones((3, 3, 6), bool), ValueError, "mask has 3 heads"),
    ("bias", np.ones((2, 3, 6)), ValueError, "bias has 2 heads"),
]


@pytest.mark.parametrize("fname", sorted(CALLS))
@pytest.mark.parametrize("arg, value, exc, msg", BAD,
                         ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)])
def test_bad_variant_argument(fname, arg, value, exc, msg):
    with pytest.raises(exc) as info:
        CALLS[fname](**{arg: value})
    text = str(info.value)
    assert text.startswith(fname + ":"), text
    assert msg in text and arg.split("_")[0] in text, text


@pytest.mark.parametrize("fname", sorted(CALLS))
def test_gqa_head_counts(fname):
    """Q's heads must be a multiple of K's; K and V alike; heads needed."""
    f = {"attention": attnpy.attention,
         "scaled_dot_product_attention": attnpy.scaled_dot_product_attention,
         "explain": attnpy.explain,
         "attention_backward": lambda q, k, v, **kw: attnpy.attention_backward(
             np.ones((2, 4, 3, 4)), q, k, v, OUT, LSE, **kw)}[fname]
    K3 = RNG.standard_normal((2, 3, 6, 5))
    with pytest.raises(ValueError, match=f"^{fname}: enable_gqa=True needs "
                                         "Q's heads to be a multiple"):
        f(Q, K3, K3[..., :4], enable_gqa=True)
    with pytest.raises(ValueError, match=f"^{fname}: K has 2 heads but V "
                                         "has 3"):
        f(Q, K, K3[..., :4], enable_gqa=True)
    with pytest.raises(ValueError, match=f"^{fname}: enable_gqa=True needs a "
                                         "head axis"):
        f(Q[0, 0], K[0, 0], V[0, 0], enable_gqa=True)
    with pytest.raises(TypeError, match=f"^{fname}: Q"):
        f("abc", K, V, enable_gqa=True)


def test_wide_windows_and_large_sides_are_unbounded():
    """Sides wider than any distance (Python ints beyond the machine's
    too) mean the same as None."""
    want = attnpy.attention(Q, K, V, enable_gqa=True)
    for w in ((None, None), (10 ** 30, 2 ** 63), [6, 6], (2 ** 62, None)):
        got = attnpy.attention(Q, K, V, enable_gqa=True, window=w)
        np.testing.assert_array_equal(got, want)


def test_private_pos_shift():
    kw = dict(causal=True, fname="attention")
    for bad, exc in ((1.0, TypeError), (True, TypeError), ("1", TypeError),
                     (2 ** 62, ValueError), (-(2 ** 62), ValueError),
                     (2 ** 80, ValueError)):
        with pytest.raises(exc, match="^attention: pos_shift"):
            _core.sdpa(Q, Q, Q, pos_shift=bad, **kw)
    with pytest.raises(TypeError, match="sdpa.. got an unexpected keyword "
                                        "argument 'want'"):
        _core.sdpa(Q, Q, Q, want=0, **kw)
    big = 2 ** 60                      # allowed: every query far after keys
    out = _core.sdpa(Q, Q, Q, variants=((0, None),), pos_shift=big, **kw)
    np.testing.assert_array_equal(out, np.zeros_like(out))


def test_private_variants_tuple():
    """The binding takes the public variant keywords as one tuple, in the
    public functions' order; trailing entries may be left out, and
    anything but None or a tuple of at most that many is refused."""
    kw = dict(causal=True, fname="attention")
    want = attnpy.attention(Q, K, V, enable_gqa=True, window=(1, 0),
                            softcap=2.0)
    got = attnpy._variants.sdpa(Q, K, V, None, None, False, None, "zero",
                                None, None, "attention", True,
                                ((1, 0), None, 2.0))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(_core.sdpa(Q, Q, Q, variants=(), **kw),
                                  _core.sdpa(Q, Q, Q, variants=None, **kw))
    np.testing.assert_array_equal(
        _core.sdpa(Q, Q, Q, variants=((1, 0),), **kw),
        attnpy.attention(Q, Q, Q, window=(1, 0), causal=True))
    for bad in ([(1, 0)], "w", {}, (None,) * 40):
        with pytest.raises(TypeError, match="^attention: variants must be "
                                            "None or a tuple"):
            _core.sdpa(Q, Q, Q, variants=bad, **kw)
    # each entry is checked under its public name
    with pytest.raises(TypeError, match="^attention: window must be None "
                                        "or a pair"):
        _core.sdpa(Q, Q, Q, variants=(1, 0), **kw)


def _gqa_cases():
    """(name, call(Q, K, V, **kw), keywords) of calls the binding refuses
    after enable_gqa has split Q's heads: each message must read as the
    same call with K and V repeated to Q's heads would."""
    f32 = np.float32
    Qg = np.ones((2, 8, 4, 16), f32)
    m = np.ones((2, 8, 4, 5), bool)
    m[1, 5, 2] = False
    sdpa = attnpy.scaled_dot_product_attention
    return Qg, [
        ("mask rows", attnpy.attention, dict(mask=np.ones((2, 8, 3, 5), bool))),
        ("mask batch", attnpy.attention,
         dict(mask=np.ones((3, 8, 4, 5), bool))),
        ("bias keys", attnpy.attention, dict(bias=np.ones((2, 1, 4, 6), f32))),
        ("out features", attnpy.attention,
         dict(out=np.ones((2, 8, 4, 15), f32))),
        ("out heads", attnpy.attention, dict(out=np.ones((2, 4, 4, 16), f32))),
        ("weights_out", sdpa, dict(weights_out=np.ones((2, 8, 4, 6), f32))),
        ("fully masked", attnpy.attention,
         dict(mask=m, fully_masked="raise")),
        ("fully masked, no batch", lambda q, k, v, **kw: attnpy.attention(
            q[0], k[0], v[0], mask=m[1], fully_masked="raise", **kw), {}),
    ]


@pytest.mark.parametrize("case", range(len(_gqa_cases()[1])),
                         ids=[c[0] for c in _gqa_cases()[1]])
def test_gqa_messages_name_the_callers_shapes(case):
    """enable_gqa works on (..., Hkv, g, ...) views; a refusal still names
    the caller's shapes and batch indices (once it named the views')."""
    Qg, cases = _gqa_cases()
    _, f, kw = cases[case]
    Kg = np.ones((2, 2, 5, 16), np.float32)
    Kr = np.repeat(Kg, 4, axis=-3)
    with pytest.raises(ValueError) as gqa:
        f(Qg, Kg, Kg, enable_gqa=True, **kw)
    with pytest.raises(ValueError) as rep:
        f(Qg, Kr, Kr, **kw)
    text = str(gqa.value)
    for a, b in ((Kg, Kr), (Kg[0], Kr[0])):
        text = text.replace(str(a.shape), str(b.shape))
    assert text == str(rep.value)


@pytest.mark.parametrize("Hkv", [2, 1])
def test_gqa_backward_messages_name_the_callers_shapes(Hkv):
    Qg = np.ones((2, 8, 4, 16), np.float32)
    Kg = np.ones((2, Hkv, 5, 16), np.float32)
    Kr = np.repeat(Kg, 8 // Hkv, axis=-3)
    out, lse = attnpy.attention(Qg, Kg, Kg, enable_gqa=True, return_lse=True)
    for bad in (dict(dout=np.ones((2, 8, 4, 15), np.float32)),
                dict(lse=np.ones((2, 8, 3), np.float32)),
                dict(out=out[..., :2, :]),
                dict(dout=out[:, None])):   # the view's own shape, 5-D
        args = dict(dout=np.ones_like(out), out=out, lse=lse) | bad
        dout = args.pop("dout")
        with pytest.raises(ValueError) as gqa:
            attnpy.attention_backward(dout, Qg, Kg, Kg, enable_gqa=True, **args)
        with pytest.raises(ValueError) as rep:
            attnpy.attention_backward(dout, Qg, Kr, Kr, **args)
        text = str(gqa.value).replace(str(Kg.shape), str(Kr.shape))
        assert text == str(rep.value)


def test_gqa_allocation_errors_name_the_callers_shapes():
    Qb = np.broadcast_to(np.zeros((1, 1, 1, 8)), (2 ** 20, 4, 2 ** 16, 8))
    Kb = np.zeros((1, 2, 1, 8))
    with pytest.raises(MemoryError) as gqa:
        attnpy.attention(Qb, Kb, Kb, enable_gqa=True)
    Kr = np.repeat(Kb, 2, axis=1)
    with pytest.raises(MemoryError) as rep:
        attnpy.attention(Qb, Kr, Kr)
    assert str(gqa.value) == str(rep.value)


def test_explain_gqa_messages_name_the_callers_k_and_v():
    """explain repeats K and V to Q's heads before its one C call; a
    refusal names the caller's K and V shapes, not the repeats'."""
    Qg = np.ones((2, 8, 4, 16))
    Kg, Vg = np.ones((2, 2, 5, 16)), np.ones((2, 2, 3, 16))
    with pytest.raises(ValueError) as info:
        attnpy.explain(Qg, Kg, Vg, enable_gqa=True)
    assert str(info.value) == ("explain: V has 3 positions but K has 5 "
                               "(K.shape=(2, 2, 5, 16), V.shape=(2, 2, 3, 16))")
