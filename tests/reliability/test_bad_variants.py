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
