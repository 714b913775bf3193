"""Slips users make that must not pass silently: an additive (PyTorch-style)
float mask given as mask=, numpy.ma arrays, a zero head count, a bad
ATTNPY_NUM_THREADS, arguments by position or under other libraries'
names."""
import os
import subprocess
import sys

import numpy as np
import pytest

import attnpy
import attnpy.dask  # noqa: F401  (attnpy.dask.attention)
import attnpy.reference as ref

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
RNG = np.random.default_rng(7)
Q = RNG.standard_normal((2, 4, 8))
L = S = 4
# PyTorch's float attn_mask: 0 where a query may attend, -inf elsewhere
ADDITIVE = np.where(np.tril(np.ones((L, S))) > 0, 0.0, -np.inf)


def _backward(mask):
    out, lse = attnpy.attention(Q, Q, Q, return_lse=True)
    return attnpy.attention_backward(np.ones_like(out), Q, Q, Q, out, lse,
                                     mask=mask)


def _dask(mask, lazy):
    import dask.array as da
    m = da.from_array(mask, chunks=(2, 2)) if lazy else mask
    return attnpy.dask.attention(da.from_array(Q, chunks=(1, 2, 8)), Q, Q,
                                 mask=m).compute()


MHA = attnpy.MultiHeadAttention(8, 2, seed=0)
LAYER = attnpy.TransformerEncoderLayer(8, 2, 16, seed=0)
ENTRY = {
    "attention": lambda m: attnpy.attention(Q, Q, Q, mask=m),
    "scaled_dot_product_attention":
        lambda m: attnpy.scaled_dot_product_attention(Q, Q, Q, m),
    "explain": lambda m: attnpy.explain(Q[0], Q[0], Q[0], m),
    "attention_backward": _backward,
    "MultiHeadAttention.forward": lambda m: MHA.forward(Q, m),
    "MultiHeadAttention": lambda m: MHA(Q, mask=m),
    "TransformerEncoderLayer.forward": lambda m: LAYER.forward(Q, m),
    "dask.attention": lambda m: _dask(m, False),
    "dask.attention (lazy mask)": lambda m: _dask(m, True),
    "reference.attention": lambda m: ref.attention(Q, Q, Q, mask=m),
}


@pytest.mark.parametrize("entry", ENTRY, ids=list(ENTRY))
@pytest.mark.parametrize("mask", [
    ADDITIVE, ADDITIVE.astype(np.float32), ADDITIVE.astype(np.float16),
    np.where(ADDITIVE == 0, 0.0, -1e9),            # the tutorials' fill
    np.tril(np.ones((L, S), np.int64)) - 1,        # 0 / -1 integers
], ids=["-inf", "-inf f32", "-inf f16", "-1e9", "int -1"])
def test_additive_mask_as_mask_is_refused_everywhere(entry, mask):
    with pytest.raises(ValueError, match=r"negative.*bias="):
        ENTRY[entry](mask)


@pytest.mark.parametrize("entry", ENTRY, ids=list(ENTRY))
@pytest.mark.parametrize("mask", [
    np.full((L, S), 0.3),                                  # a weight
    np.random.default_rng(0).random((L, S)).astype(np.float32),  # torch.rand
    np.where(np.tril(np.ones((L, S))) > 0, np.nan, 0.0),   # NaN
    np.tril(np.ones((L, S))) * 3.5,
    np.tril(np.ones((L, S), np.float16)) * np.float16(0.5),
], ids=["0.3", "rand f32", "nan", "3.5", "0.5 f16"])
def test_float_mask_of_weights_is_refused_everywhere(entry, mask):
    """a float keep-mask holds 0 and 1 only: weights are a bias"""
    with pytest.raises(ValueError, match=r"other than 0 and 1.*bias="):
        ENTRY[entry](mask)


def test_bfloat16_masks_are_checked_too():
    import ml_dtypes  # a test dependency
    keep = np.tril(np.ones((L, S))).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(attnpy.attention(Q, Q, Q, mask=keep),
                                  attnpy.attention(Q, Q, Q,
                                                   mask=keep.astype(bool)))
    with pytest.raises(ValueError, match=r"negative.*bias="):
        attnpy.attention(Q, Q, Q, mask=keep - 1)
    with pytest.raises(ValueError, match=r"other than 0 and 1.*bias="):
        attnpy.attention(Q, Q, Q, mask=keep * 0.5)


@pytest.mark.parametrize("entry", ENTRY, ids=list(ENTRY))
def test_keep_masks_still_work(entry):
    """0/1 floats, bools, unsigned and signed integers (nonzero: may
    attend) are keep-masks; the check does not refuse them."""
    def arrays(r):
        if isinstance(r, tuple):
            return [a for a in r if isinstance(a, np.ndarray)]
        return [r] if isinstance(r, np.ndarray) else [r.weights, r.output]

    keep = np.tril(np.ones((L, S)))
    want = arrays(ENTRY[entry](keep.astype(bool)))
    assert want
    for m in (keep, keep.astype(np.uint8), keep.astype(np.float32),
              (keep * 3).astype(np.int64)):
        got = arrays(ENTRY[entry](m))
        assert len(got) == len(want)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)


def test_additive_mask_as_bias_gives_the_keep_mask_result():
    a = attnpy.attention(Q, Q, Q, bias=ADDITIVE)
    b = attnpy.attention(Q, Q, Q, mask=ADDITIVE == 0)
    np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("what", ["Q", "mask", "bias"])
def test_masked_arrays_are_refused(what):
    arrays = dict(Q=Q, mask=None, bias=None)
    data = dict(Q=Q, mask=Q[0, :, :S] > 0, bias=Q[0, :, :S])[what]
    hidden = np.zeros(data.shape, bool)
    hidden.flat[0] = True
    arrays[what] = np.ma.masked_array(data, mask=hidden)
    for f in (attnpy.attention, attnpy.scaled_dot_product_attention):
        with pytest.raises(TypeError, match=f"{what} is a numpy.ma masked"):
            f(arrays["Q"], Q, Q, mask=arrays["mask"], bias=arrays["bias"])
    with pytest.raises(TypeError, match="masked array"):
        attnpy.softmax(np.ma.masked_array([1.0, 2.0], mask=[0, 1]))


def test_masked_arrays_are_refused_by_dask():
    import dask.array as da
    with pytest.raises(TypeError, match="mask is a numpy.ma masked"):
        attnpy.dask.attention(da.from_array(Q), Q, Q,
                              mask=np.ma.masked_array(np.ones((L, S))))


@pytest.mark.parametrize("h", [0, -1])
def test_mha_num_heads_must_be_positive(h):
    with pytest.raises(ValueError) as e:
        attnpy.MultiHeadAttention(10, h)
    assert "num_heads must be positive" in str(e.value) or \
        "num_heads must be >= 0" in str(e.value)
    assert "divisible" not in str(e.value)


def test_encoder_num_heads_zero():
    with pytest.raises(ValueError, match="num_heads must be positive"):
        attnpy.TransformerEncoderLayer(8, 0, 16)


@pytest.mark.parametrize("value", ["abc", "0", "-2", "4x", "99999999999999"])
def test_bad_num_threads_env_warns_and_uses_the_default(value):
    code = ("import warnings; warnings.simplefilter('always');\n"
            "import attnpy, attnpy._core as c\n"
            "print(attnpy.get_num_threads(), c.available_cpus())")
    env = dict(os.environ, PYTHONPATH=ROOT, ATTNPY_NUM_THREADS=value)
    r = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "RuntimeWarning" in r.stderr
    assert f"ATTNPY_NUM_THREADS='{value}'" in r.stderr
    n, cpus = map(int, r.stdout.split())
    assert n == cpus


def test_good_num_threads_env_is_silent():
    code = "import attnpy; print(attnpy.get_num_threads())"
    env = dict(os.environ, PYTHONPATH=ROOT, ATTNPY_NUM_THREADS="3")
    r = subprocess.run([sys.executable, "-W", "error", "-c", code], env=env,
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "3", r.stderr
    assert r.stderr == ""


@pytest.mark.parametrize("call, hint", [
    (lambda: attnpy.attention(Q, Q, Q, None),
     r"mask is keyword-only, as in attention\(Q, K, V, mask=\.\.\.\)"),
    (lambda: attnpy.attention(Q, Q, Q, None, None),
     r"mask and bias are keyword-only"),
    (lambda: attnpy.scaled_dot_product_attention(Q, Q, Q, None, None),
     r"bias is keyword-only"),
    (lambda: attnpy.attention(Q, Q, Q, is_causal=True),
     r"'is_causal'.*causal=True"),
    (lambda: attnpy.scaled_dot_product_attention(Q, Q, Q, attn_mask=None),
     r"'attn_mask'.*mask=.*bias="),
    (lambda: attnpy.attention_backward(Q, Q, Q, Q, Q, Q[..., 0], None),
     r"mask is keyword-only"),
    (lambda: MHA.forward(Q, None, True), r"causal is keyword-only"),
    (lambda: MHA(Q, is_causal=True), r"causal=True"),
    (lambda: LAYER.forward(Q, attn_mask=None), r"'attn_mask'"),
    (lambda: attnpy.softmax(Q, dim=-1), r"'dim'.*axis="),
])
def test_call_slips_get_a_hint(call, hint):
    with pytest.raises(TypeError, match=hint):
        call()


def test_type_errors_of_calls_that_bind_are_unchanged():
    """The hint is only for calls that do not bind: a bad value keeps the
    function's own message."""
    with pytest.raises(TypeError, match="attention: scale must be a real"):
        attnpy.attention(Q, Q, Q, scale="x")
    with pytest.raises(TypeError, match="got an unexpected keyword argument "
                                        "'bogus'"):
        attnpy.attention(Q, Q, Q, bogus=1)
