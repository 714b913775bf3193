"""The attention variants (docs/user/variants.md): enable_gqa,
window, alibi_slopes, softcap, alone and combined with mask, bias, causal
(both alignments) and the fully_masked policies, float32 and float64.

Three oracles, each independent of the others:

* attnpy.reference, the NumPy twin (GQA by np.repeat of the K/V heads);
* torch.nn.functional.scaled_dot_product_attention given the equivalent
  explicit boolean mask (window, causal) and additive bias (ALiBi), with
  enable_gqa=True for GQA, or, for soft-capping, which torch's SDPA lacks,
  an explicit torch score function; torch autograd for the gradients.
  Hypothesis' cases against torch itself run in CI's oracle step (marked
  oracle); the fast suite checks 60 seeded cases of the same kind against
  torch's results stored in tests/data/oracle (tests/_oracle.py);
* identities: GQA equals attention on repeated K/V heads, a block of
  queries cut from a longer sequence with pos_shift equals that block of
  the whole.

The explicit masks and biases are built here from the index arithmetic of
docs/user/variants.md, not with the reference's helpers.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import attnpy
from attnpy import _core, reference as ref
from _arrays import TOLERANCES, layouts, random_array

POLICIES = ("zero", "uniform", "nan")
SETTINGS = dict(max_examples=60, deadline=None, derandomize=True)


class _Draws:
    """The case's choices from hypothesis (draw) or from a NumPy Generator."""

    def __init__(self, draw=None, rng=None):
        self.draw, self.rng = draw, rng

    def integer(self, lo, hi):
        if self.draw is not None:
            return self.draw(st.integers(lo, hi))
        return int(self.rng.integers(lo, hi, endpoint=True))

    def choice(self, values):
        if self.draw is not None:
            return self.draw(st.sampled_from(values))
        return values[int(self.rng.integers(len(values)))]

    def boolean(self):
        if self.draw is not None:
            return self.draw(st.booleans())
        return self.choice((False, True))

    def side(self, S):
        """None or a window side in 0..S + 2."""
        if self.draw is not None:
            return self.draw(st.one_of(st.none(), st.integers(0, S + 2)))
        return None if self.boolean() else self.integer(0, S + 2)


def make_case(d, dtypes=(np.float32, np.float64), policies=POLICIES):
    """(Q, K, V, kw): random shapes and a random combination of variants,
    mask, bias, causal and fully_masked, chosen by d (a _Draws)."""
    rng = np.random.default_rng(d.integer(0, 2**32 - 1))
    dtype = d.choice(dtypes)
    B, Hkv, g = d.integer(1, 2), d.integer(1, 2), d.integer(1, 3)
    L, S = d.integer(0, 9), d.integer(0, 11)
    E, Ev = d.integer(1, 8), d.integer(1, 6)
    H = Hkv * g
    gqa = d.boolean()
    kv_heads = Hkv if gqa else d.choice((1, H))
    Q = random_array(rng, (B, H, L, E), dtype)
    K = random_array(rng, (B, kv_heads, S, E), dtype)
    V = random_array(rng, (B, kv_heads, S, Ev), dtype)
    kw = dict(enable_gqa=gqa, fully_masked=d.choice(policies),
              causal=d.choice((False, True, "bottom_right")))
    if d.boolean():
        kw["window"] = (d.side(S), d.side(S))
    if d.boolean():
        shape = d.choice(((H,), (B, H), (1,), (B, 1)))
        kw["alibi_slopes"] = rng.uniform(0.0, 1.0, shape).astype(dtype)
    if d.boolean():
        kw["softcap"] = d.choice((0.5, 2.0, 30.0))
    if d.boolean():
        shape = d.choice(((L, S), (H, L, S), (B, 1, L, S), (B, 1, 1, S)))
        kw["mask"] = rng.random(shape) < 0.8
    if d.boolean():
        shape = d.choice(((L, S), (B, H, L, S), (1, L, S)))
        kw["bias"] = random_array(rng, shape, dtype)
    if d.boolean():
        kw["scale"] = 0.3
    # the binding copes with any layout: Q in a random one
    Q = dict(layouts(Q))[d.choice(("contiguous", "fortran", "transposed",
                                   "reversed"))]
    return Q, K, V, kw


@st.composite
def cases(draw, dtypes=(np.float32, np.float64), policies=POLICIES):
    """make_case's cases as a hypothesis strategy."""
    return make_case(_Draws(draw=draw), dtypes, policies)


def close(a, b, dtype, factor=1.0):
    rtol, atol = TOLERANCES[np.dtype(dtype)]
    if np.dtype(dtype) == np.float32:   # tanh, exp of larger scores
        rtol, atol = 20 * rtol, 20 * atol
    np.testing.assert_allclose(a, b, rtol=rtol * factor, atol=atol * factor)


# ---- attnpy against the NumPy twin --------------------------------------

@settings(**SETTINGS)
@given(cases())
def test_forward_vs_reference(case):
    Q, K, V, kw = case
    out, lse = attnpy.attention(Q, K, V, return_lse=True, **kw)
    r_out, r_lse = ref.attention(Q, K, V, return_lse=True, **kw)
    assert out.shape == r_out.shape and out.dtype == r_out.dtype
    close(out, r_out, out.dtype)
    close(lse, r_lse, out.dtype)
    o2, w = attnpy.scaled_dot_product_attention(Q, K, V, **kw)
    r_o2, r_w = ref.scaled_dot_product_attention(Q, K, V, **kw)
    close(w, r_w, out.dtype)
    np.testing.assert_array_equal(o2, out)     # the same kernel's bits


@settings(**SETTINGS)
@given(cases())
def test_backward_vs_reference(case):
    Q, K, V, kw = case
    out, lse = attnpy.attention(Q, K, V, return_lse=True, **kw)
    dout = random_array(np.random.default_rng(1), out.shape, out.dtype)
    bg = kw.get("bias") is not None
    got = attnpy.attention_backward(dout, Q, K, V, out, lse, bias_grad=bg,
                                    **kw)
    want = ref.attention_backward(dout, Q, K, V, out, lse, bias_grad=bg,
                                  **kw)
    for g, w, x in zip(got, want, (Q, K, V, kw.get("bias"))):
        assert g.shape == np.shape(x) and g.dtype == w.dtype
        close(g, w, out.dtype, factor=10.0)


@settings(**SETTINGS)
@given(cases(), st.integers(-12, 12))
def test_pos_shift_vs_reference(case, shift):
    """The private pos_shift (attnpy.dask's), forward and backward, through
    the wrappers' own plumbing (attnpy._variants)."""
    from attnpy import _variants
    Q, K, V, kw = case
    args = [kw.get(k) for k in ("mask", "bias", "causal", "scale",
                                "fully_masked")]
    gqa = kw.get("enable_gqa")
    var = tuple(kw.get(k) for k in ("window", "alibi_slopes", "softcap"))
    out, lse = _variants.sdpa(Q, K, V, *args, None, None, "attention",
                              gqa, var, shift, return_lse=True)
    r_out, r_lse = ref.attention(Q, K, V, return_lse=True, _pos_shift=shift,
                                 **kw)
    close(out, r_out, out.dtype)
    close(lse, r_lse, out.dtype)
    dout = random_array(np.random.default_rng(4), out.shape, out.dtype)
    (gq, gk, gv, _), seen = _variants.sdpa_bwd(dout, Q, K, V, out, lse,
                                               *args, False, gqa, var,
                                               shift)
    want = ref.attention_backward(dout, Q, K, V, out, lse, _pos_shift=shift,
                                  **kw)
    for g, x, x0, w in zip((gq, gk, gv), seen, (Q, K, V), want):
        g = attnpy._grad._sum_to(g, np.shape(x)).reshape(np.shape(x0))
        close(g, w, out.dtype, factor=10.0)


def test_fully_masked_by_window_raises():
    """A window can leave a row with no key: "raise" names the first."""
    Q = K = V = np.ones((1, 4, 8, 2))
    attnpy.attention(Q[:, :, :3], K, V, causal="bottom_right",
                     window=(None, 0), fully_masked="raise")   # all see keys
    with pytest.raises(ValueError, match=r"attention: query row 2 of batch "
                                         r"index \(0, 0\)"):
        attnpy.attention(Q, K[:, :, :2], V[:, :, :2], window=(0, 0),
                         fully_masked="raise")


# ---- the twin against torch (green whatever the kernels do) -------------

def explicit(L, S, kw):
    """(allowed (..., L, S) bool, additive bias (..., L, S) float64): causal,
    window and mask as one boolean mask, bias and ALiBi as one bias."""
    br = kw.get("causal") == "bottom_right"
    i = np.arange(L)[:, None] + (S - L if br else 0)
    j = np.arange(S)[None, :]
    allowed = np.ones((L, S), bool)
    if kw.get("causal"):
        allowed &= j <= i
    left, right = kw.get("window") or (None, None)
    if left is not None:
        allowed &= j >= i - left
    if right is not None:
        allowed &= j <= i + right
    if kw.get("mask") is not None:
        allowed = allowed & kw["mask"]
    add = np.zeros((L, S))
    if kw.get("bias") is not None:
        add = add + kw["bias"]
    if kw.get("alibi_slopes") is not None:
        slopes = np.asarray(kw["alibi_slopes"], np.float64)
        add = add - slopes[..., None, None] * np.abs(i - j)
    return allowed, add


def torch_attention(Q, K, V, kw, dout):
    """torch's output and autograd gradients (dQ, dK, dV, dbias) of the same
    attention, fully masked rows given 0 (fully_masked="zero")."""
    import torch  # the oracle extra; a test dependency, never skipped
    L, S = Q.shape[-2], K.shape[-2]
    allowed, add = explicit(L, S, kw)
    gqa = kw.get("enable_gqa", False)
    H = Q.shape[-3]
    allowed = np.broadcast_to(allowed, np.broadcast_shapes(
        allowed.shape, add.shape, Q.shape[:-2] + (1, 1)))
    fully = ~allowed.any(axis=-1)                           # (..., L)
    allowed = allowed | fully[..., None]        # a finite softmax there ...
    t = [torch.tensor(np.array(x, np.float64), requires_grad=True)
         for x in (Q, K, V)]
    tb = None
    if kw.get("bias") is not None:
        tb = torch.tensor(np.asarray(kw["bias"], np.float64),
                          requires_grad=True)
        add = add - kw["bias"]
    bias = torch.tensor(add) + (tb if tb is not None else 0)
    ta = torch.tensor(allowed)
    scale = kw.get("scale")
    if kw.get("softcap") is None:
        fb = torch.where(ta, bias, torch.tensor(-np.inf, dtype=torch.float64))
        o = torch.nn.functional.scaled_dot_product_attention(
            *t, attn_mask=fb, scale=scale, enable_gqa=gqa)
    else:                                       # torch's SDPA has no softcap
        k, v = t[1], t[2]
        if gqa:
            k = k.repeat_interleave(H // k.shape[-3], dim=-3)
            v = v.repeat_interleave(H // v.shape[-3], dim=-3)
        sc = scale if scale is not None else 1 / np.sqrt(Q.shape[-1])
        s = t[0] @ k.transpose(-1, -2) * sc
        cap = kw["softcap"]
        s = cap * torch.tanh(s / cap) + bias
        s = s.masked_fill(~ta, -np.inf)
        o = torch.softmax(s, dim=-1) @ v
    o = o * torch.tensor(~fully[..., None])     # ... and then 0
    o.backward(torch.tensor(np.asarray(dout, np.float64)))
    # (an empty output reaches no input: torch leaves grad None, i.e. 0)
    grads = [np.zeros(tuple(x.shape)) if x.grad is None else x.grad.numpy()
             for x in t + ([tb] if tb is not None else [])]
    return o.detach().numpy(), grads


def check_vs_torch(out, lse, grads_of, Q, K, V, kw, dout, t_out, t_grads):
    """out and the gradients grads_of(out, lse) against torch's."""
    np.testing.assert_allclose(out, t_out, rtol=1e-10, atol=1e-12)
    grads = grads_of(dout, Q, K, V, out, lse,
                     bias_grad=kw.get("bias") is not None, **kw)
    for g, t in zip(grads, t_grads):
        np.testing.assert_allclose(g, t, rtol=1e-9, atol=1e-11)


@pytest.mark.oracle
@settings(**SETTINGS)
@given(cases(dtypes=(np.float64,), policies=("zero",)))
def test_reference_vs_torch(case):
    Q, K, V, kw = case
    out, lse = ref.attention(Q, K, V, return_lse=True, **kw)
    dout = random_array(np.random.default_rng(2), out.shape)
    t_out, t_grads = torch_attention(Q, K, V, kw, dout)
    check_vs_torch(out, lse, ref.attention_backward, Q, K, V, kw, dout,
                   t_out, t_grads)


@pytest.mark.oracle
@settings(**SETTINGS)
@given(cases(dtypes=(np.float64,), policies=("zero",)))
def test_attnpy_vs_torch(case):
    Q, K, V, kw = case
    out, lse = attnpy.attention(Q, K, V, return_lse=True, **kw)
    dout = random_array(np.random.default_rng(3), out.shape)
    t_out, t_grads = torch_attention(Q, K, V, kw, dout)
    check_vs_torch(out, lse, attnpy.attention_backward, Q, K, V, kw, dout,
                   t_out, t_grads)


def _torch_flat(Q, K, V, kw, dout):
    o, grads = torch_attention(Q, K, V, kw, dout)
    return (o, *grads)


@pytest.mark.parametrize("seed", range(60))
def test_reference_and_attnpy_vs_stored_torch(torch_oracle, seed):
    """The two tests above on 60 seeded cases, against torch's stored
    results (tests/_oracle.py)."""
    Q, K, V, kw = make_case(_Draws(rng=np.random.default_rng(seed)),
                            dtypes=(np.float64,), policies=("zero",))
    out, lse = ref.attention(Q, K, V, return_lse=True, **kw)
    dout = random_array(np.random.default_rng(1000 + seed), out.shape)
    t_out, *t_grads = torch_oracle("sdpa", _torch_flat, Q, K, V, kw, dout)
    check_vs_torch(out, lse, ref.attention_backward, Q, K, V, kw, dout,
                   t_out, t_grads)
    out, lse = attnpy.attention(Q, K, V, return_lse=True, **kw)
    check_vs_torch(out, lse, attnpy.attention_backward, Q, K, V, kw, dout,
                   t_out, t_grads)


# ---- identities ---------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gqa_is_repeated_heads(dtype):
    """enable_gqa: query head h reads K/V head h // g; out= of any layout."""
    rng = np.random.default_rng(7)
    Q = random_array(rng, (2, 6, 9, 4), dtype)
    K = random_array(rng, (2, 2, 11, 4), dtype)
    V = random_array(rng, (2, 2, 11, 3), dtype)
    mask = rng.random((6, 9, 11)) < 0.7
    kw = dict(mask=mask, causal="bottom_right", fully_masked="uniform")
    want = attnpy.attention(Q, np.repeat(K, 3, axis=1),
                            np.repeat(V, 3, axis=1), **kw)
    out = np.empty((6, 2, 9, 3), dtype).transpose(1, 0, 2, 3)
    got = attnpy.attention(Q, K, V, enable_gqa=True, out=out, **kw)
    assert got is out
    np.testing.assert_array_equal(out, want)
    out, lse = attnpy.attention(Q, K, V, enable_gqa=True, return_lse=True,
                                **kw)
    assert lse.shape == (2, 6, 9)
    dout = random_array(rng, out.shape, dtype)
    dq, dk, dv = attnpy.attention_backward(dout, Q, K, V, out, lse,
                                           enable_gqa=True, **kw)
    rq, rk, rv = attnpy.attention_backward(
        dout, Q, np.repeat(K, 3, axis=1), np.repeat(V, 3, axis=1), out, lse,
        **kw)
    close(dq, rq, dtype)
    close(dk, rk.reshape(2, 2, 3, 11, 4).sum(axis=2), dtype)
    close(dv, rv.reshape(2, 2, 3, 11, 3).sum(axis=2), dtype)


@pytest.mark.parametrize("causal", [True, "bottom_right"])
def test_pos_shift_is_a_block_of_the_whole(causal):
    """The private pos_shift: queries [a, b) and keys [c, d) cut from one
    sequence, computed alone with pos_shift = a - c (+ the bottom_right
    shift undone), give the whole's rows where every key they see is in
    [c, d) (what attnpy.dask relies on)."""
    rng = np.random.default_rng(11)
    N, E = 40, 8
    Q, K, V = (random_array(rng, (2, N, E)) for _ in range(3))
    slopes = np.array([0.3, 0.05])
    var = dict(window=(6, 2), softcap=4.0)
    whole, lse = attnpy.attention(Q, K, V, causal=causal, return_lse=True,
                                  alibi_slopes=slopes, **var)
    a, b, c, d = 20, 28, 10, 34          # rows 20..27 see keys 14..29
    shift = (a - c) - ((d - c) - (b - a) if causal == "bottom_right" else 0)
    part, plse = _core.sdpa(Q[:, a:b], K[:, c:d], V[:, c:d], causal=causal,
                            variants=(var["window"], slopes, var["softcap"]),
                            pos_shift=shift, return_lse=True)
    np.testing.assert_allclose(part, whole[:, a:b], rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(plse, lse[:, a:b], rtol=1e-12, atol=1e-13)
    r = ref.attention(Q[:, a:b], K[:, c:d], V[:, c:d], causal=causal,
                      alibi_slopes=slopes, _pos_shift=shift, **var)
    np.testing.assert_allclose(part, r, rtol=1e-12, atol=1e-13)


def test_window_limits_the_weights():
    """Weights are exactly 0 outside the window, and the window's rows are
    the softmax of the allowed scores alone."""
    rng = np.random.default_rng(3)
    Q, K, V = (rng.standard_normal((1, 12, 4)) for _ in range(3))
    _, w = attnpy.scaled_dot_product_attention(Q, K, V, window=(2, 1))
    i, j = np.arange(12)[:, None], np.arange(12)[None, :]
    inside = (j >= i - 2) & (j <= i + 1)
    assert np.all(w[0][~inside] == 0) and np.all(w[0][inside] > 0)
    _, w2 = attnpy.scaled_dot_product_attention(Q, K, V, mask=inside)
    np.testing.assert_allclose(w, w2, rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("gqa", [False, True])
def test_explain_variants(gqa):
    """explain's tables with every variant: its weights are the kernel's,
    its masked scores softmax to them, its soft-capped and ALiBi tables are
    the formulas', and its backward trace gives the reference's dQ (and,
    summed over each group, dK, dV)."""
    rng = np.random.default_rng(5)
    Q = rng.standard_normal((2, 4, 5, 3))
    K, V = rng.standard_normal((2, 2, 2 if gqa else 4, 7, 3))
    kw = dict(enable_gqa=gqa, causal="bottom_right", window=(3, None),
              softcap=1.5, alibi_slopes=[0.5, 0.25, 0.125, 0.0625],
              bias=rng.standard_normal((5, 7)))
    tr = attnpy.explain(Q, K, V, **kw)
    _, w = attnpy.scaled_dot_product_attention(Q, K, V, **kw)
    np.testing.assert_array_equal(tr.weights, w)
    np.testing.assert_allclose(ref.softmax(tr.masked), w, atol=1e-15)
    np.testing.assert_allclose(tr.capped, 1.5 * np.tanh(tr.scaled / 1.5))
    i = np.arange(5)[:, None] + 2
    np.testing.assert_array_equal(
        tr.alibi[0, 1], -0.25 * np.abs(i - np.arange(7)))
    assert np.all(tr.masked[..., 4, :3] == -np.inf)     # j < i' - 3 = 3
    assert np.all(tr.masked[..., 0, :3] > -np.inf)
    text = str(tr[0, 1])
    assert "Step 2b. capped = softcap * tanh(scaled / softcap)" in text
    assert "window: j < i' - 3 (i' = i + 2)" in text
    assert "masked = capped + bias + alibi" in text
    out, lse = attnpy.attention(Q, K, V, return_lse=True, **kw)
    dout = rng.standard_normal(out.shape)
    bw = tr.backward(dout)
    rq, rk, rv = ref.attention_backward(dout, Q, K, V, out, lse, **kw)
    g = 2 if gqa else 1
    np.testing.assert_allclose(bw.dQ, rq, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(bw.dK.reshape(2, 4 // g, g, 7, 3).sum(2), rk,
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(bw.dV.reshape(2, 4 // g, g, 7, 3).sum(2), rv,
                               rtol=1e-9, atol=1e-12)
    assert "soft-cap: dQ and dK use dS * (1 - (capped / 1.5)^2)" in str(
        bw.forward[0, 0].backward(dout[0, 0]))
