"""attnpy.attention_backward and attention(..., return_lse=True):

- lse against attnpy.reference (and logsumexp of the weights' scores);
- the gradients against central finite differences of the reference
  forward pass in float64 (relative error < 1e-6), against the reference
  twin (1e-12 float64, float32 within the forward pass's tolerance) and
  against torch autograd through scaled_dot_product_attention (its results
  stored: tests/_oracle.py), over shapes,
  masks, biases, both causal alignments, every fully_masked policy,
  broadcast K/V (one K/V head for 4 query heads), strided/transposed
  inputs, on every instruction set;
- the same bits with 1, 2 and 7 threads (more threads than work items);
- dq=/dk=/dv= are filled, clear errors for mismatched dout/out/lse;
- P rebuilt from the forward's very scores (float16, bfloat16 Q and K;
  on the opt-in "amx" set, the AMX tiles' scores), bit for bit;
- the reference twin's gradients in the inputs' dtypes, as attnpy's.
"""
import numpy as np
import pytest

import attnpy
from attnpy import _core
from attnpy import reference as ref
import test_fastpath as fastpath
from test_fastpath import ISAS, assert_same

TOL = {np.float32: 2e-5, np.float64: 1e-12}

# the forward pass's cases, and grouped heads with an (S,) bias
CASES = fastpath.CASES + [
    ((5, 4, 70, 16), (5, 1, 90, 16), (5, 1, 90, 16), None, (90,)),
]


def _problem(rng, case, dtype, policy_mask=False):
    qs, ks, vs, ms, bs = case
    Q, K, V = (rng.standard_normal(s).astype(dtype) for s in (qs, ks, vs))
    mask = None if ms is None else rng.random(ms) < 0.7
    if policy_mask and mask is not None:
        mask[..., :3, :] = False                    # fully masked rows
    bias = None if bs is None else rng.standard_normal(bs).astype(dtype)
    return Q, K, V, mask, bias


def _fwd_bwd(Q, K, V, dout=None, **kw):
    out, lse = attnpy.attention(Q, K, V, return_lse=True, **kw)
    if dout is None:
        dout = np.random.default_rng(7).standard_normal(out.shape)
        dout = dout.astype(out.dtype)
    return out, lse, dout


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("causal", [False, True, "bottom_right"])
def test_against_reference(isa, dtype, case, causal):
    _core.set_isa(isa)
    try:
        rng = np.random.default_rng(case)
        Q, K, V, mask, bias = _problem(rng, CASES[case], dtype)
        kw = dict(mask=mask, bias=bias, causal=causal)
        out, lse, dout = _fwd_bwd(Q, K, V, **kw)
        r_out, r_lse = fastpath._reference(     # once for every kernel path
            ("backward", dtype, case, causal), ref.attention, Q, K, V,
            return_lse=True, **kw)
        tol = TOL[dtype]
        assert_same(lse, r_lse, tol, tol)
        got = attnpy.attention_backward(dout, Q, K, V, out, lse,
                                        bias_grad=bias is not None, **kw)
        want = ref.attention_backward(dout, Q, K, V, out, lse,
                                      bias_grad=bias is not None, **kw)
        assert len(got) == len(want) == 3 + (bias is not None)
        for g, w, x in zip(got, want, (Q, K, V, bias)):
            assert g.shape == np.shape(x) and g.dtype == x.dtype
            mag = np.max(np.abs(w), initial=0.0)
            assert_same(g, w, tol * 10, tol * 10 * (1 + mag))
    finally:
        _core.set_isa("auto")


@pytest.mark.parametrize("policy", ["zero", "uniform", "nan"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fully_masked_policies(policy, dtype):
    rng = np.random.default_rng(3)
    Q, K, V, mask, bias = _problem(rng, CASES[1], dtype, policy_mask=True)
    kw = dict(mask=mask, fully_masked=policy)
    out, lse, dout = _fwd_bwd(Q, K, V, **kw)
    assert np.all(lse[..., :3] == -np.inf)
    got = attnpy.attention_backward(dout, Q, K, V, out, lse, **kw)
    want = ref.attention_backward(dout, Q, K, V, out, lse, **kw)
    for g, w in zip(got, want):
        assert_same(g, w, TOL[dtype] * 10, TOL[dtype] * 10 * 50)
    dQ, dK, dV = got
    if policy == "nan":
        assert np.isnan(dQ[..., :3, :]).all() and np.isnan(dV).all()
    else:
        assert np.all(dQ[..., :3, :] == 0)
    if policy == "uniform":   # dV = the rows' dout / S on top of the rest
        S = K.shape[-2]
        _, _, dV0 = attnpy.attention_backward(
            dout * (np.arange(dout.shape[-2]) >= 3)[:, None], Q, K, V, out,
            lse, **kw)
        extra = dout[..., :3, :].sum(axis=(-2, 1), keepdims=True)[:, 0] / S
        np.testing.assert_allclose(dV - dV0, np.broadcast_to(extra, dV.shape),
                                   rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="attention_backward: query row 0"):
        attnpy.attention_backward(dout, Q, K, V, out, lse, mask=mask,
                                  fully_masked="raise")


def _loss(Q, K, V, bias, dout, kw):
    out = ref.attention(Q, K, V, bias=bias, **kw)
    return float(np.sum(out * dout))


@pytest.mark.parametrize("seed", range(6))
def test_finite_differences(seed):
    """Central differences of the reference forward pass, float64."""
    rng = np.random.default_rng(100 + seed)
    L, S, E, Ev = 5 + seed, 7, 3, 4
    Q = rng.standard_normal((2, L, E))
    K = rng.standard_normal((1, S, E))           # broadcast over the batch
    V = rng.standard_normal((2, S, Ev))
    bias = rng.standard_normal((L, S))           # broadcast too
    kw = dict(mask=rng.random((2, L, S)) < 0.8,
              causal=[False, True, "bottom_right"][seed % 3],
              fully_masked=["zero", "uniform"][seed % 2],
              scale=0.3 + 0.2 * seed)
    out, lse = attnpy.attention(Q, K, V, bias=bias, return_lse=True, **kw)
    dout = rng.standard_normal(out.shape)
    grads = attnpy.attention_backward(dout, Q, K, V, out, lse, bias=bias,
                                      bias_grad=True, **kw)
    args = [Q, K, V, bias]
    h = 1e-6
    for a, g in zip(args, grads):
        fd = np.empty_like(a)
        for idx in np.ndindex(a.shape):
            x0 = a[idx]
            a[idx] = x0 + h
            fp = _loss(*args, dout, kw)
            a[idx] = x0 - h
            fm = _loss(*args, dout, kw)
            a[idx] = x0
            fd[idx] = (fp - fm) / (2 * h)
        err = np.max(np.abs(fd - g)) / max(np.max(np.abs(fd)), 1e-3)
        assert err < 1e-6, err


def _torch_sdpa_grads(Q, K, V, mask, dout):
    """torch's SDPA output and autograd gradients (dQ, dK, dV)."""
    import torch  # the oracle extra; a test dependency, never skipped
    tq, tk, tv = (torch.tensor(x, requires_grad=True) for x in (Q, K, V))
    to = torch.nn.functional.scaled_dot_product_attention(
        tq, tk, tv, attn_mask=torch.tensor(mask))
    to.backward(torch.tensor(dout))
    return (to.detach().numpy(), tq.grad.numpy(), tk.grad.numpy(),
            tv.grad.numpy())


# both against torch itself in CI's oracle step; the causal one (the mask
# and the bottom_right diagonal) in the fast suite too, against torch's
# stored results (tests/_oracle.py)
@pytest.mark.parametrize("causal", [pytest.param(False,
                                                 marks=pytest.mark.oracle),
                                    True])
def test_torch_autograd(torch_oracle, causal):
    rng = np.random.default_rng(5 + causal)
    Q = rng.standard_normal((2, 4, 50, 16))
    K, V = rng.standard_normal((2, 2, 4, 60, 16))
    mask = rng.random((50, 60)) < 0.8
    mask[:, 0] = True                           # no fully masked row
    kw = dict(causal="bottom_right" if causal else False, mask=mask)
    out, lse, dout = _fwd_bwd(Q, K, V, **kw)
    dQ, dK, dV = attnpy.attention_backward(dout, Q, K, V, out, lse, **kw)
    tmask = mask
    if causal:                                  # bottom_right explicitly
        tmask = mask & attnpy.causal_mask(50, 60, align="bottom_right")
    t_out, tq, tk, tv = torch_oracle("sdpa", _torch_sdpa_grads, Q, K, V,
                                     tmask, dout)
    np.testing.assert_allclose(out, t_out, atol=1e-12)
    for g, t in ((dQ, tq), (dK, tk), (dV, tv)):
        np.testing.assert_allclose(g, t, rtol=1e-10, atol=1e-11)


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("shape", [(1, 1, 300, 32), (6, 130, 16)])
def test_threads_bitwise(isa, shape):
    """1, 2 and 7 threads: the same bits (7 > items for the small case)."""
    _core.set_isa(isa)
    before = attnpy.get_num_threads()
    try:
        rng = np.random.default_rng(9)
        Q, K, V = (rng.standard_normal(shape).astype(np.float32)
                   for _ in range(3))
        L = shape[-2]
        kw = dict(causal=True,
                  bias=rng.standard_normal((L, L)).astype(np.float32))
        out, lse, dout = _fwd_bwd(Q, K, V, **kw)
        res = []
        for n in (1, 2, 7):
            attnpy.set_num_threads(n)
            res.append(attnpy.attention_backward(dout, Q, K, V, out, lse,
                                                 bias_grad=True, **kw))
        for r in res[1:]:
            for a, b in zip(res[0], r):
                assert a.tobytes() == b.tobytes()
    finally:
        attnpy.set_num_threads(before)
        _core.set_isa("auto")


def test_strided_inputs_and_out_arrays():
    rng = np.random.default_rng(11)
    Qt = rng.standard_normal((2, 16, 33, 3))      # (B, E, L, H) storage
    Q = Qt.transpose(0, 3, 2, 1)                  # (B, H, L, E) strided
    K = rng.standard_normal((2, 3, 20, 16))[:, :, ::-1]
    V = np.asfortranarray(rng.standard_normal((2, 3, 20, 8)))
    out, lse, dout = _fwd_bwd(Q, K, V, causal=True)
    want = ref.attention_backward(dout, Q, K, V, out, lse, causal=True)
    dq = np.empty((2, 3, 16, 33)).transpose(0, 1, 3, 2)   # strided out
    dk, dv = np.empty(K.shape), np.empty(V.shape)
    got = attnpy.attention_backward(dout, Q, K, V, out, lse,
                                    causal=True, dq=dq, dk=dk, dv=dv)
    assert got[0] is dq and got[1] is dk and got[2] is dv
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    # inputs unchanged
    assert np.array_equal(Q, Qt.transpose(0, 3, 2, 1))


def test_errors():
    rng = np.random.default_rng(0)
    Q, K, V = rng.standard_normal((3, 2, 4, 6, 8))
    out, lse, dout = _fwd_bwd(Q, K, V)
    with pytest.raises(ValueError, match=r"attention_backward: dout must have"
                       r" shape \(2, 4, 6, 8\).*dout.shape=\(2, 4, 6, 7\)"):
        attnpy.attention_backward(dout[..., :7], Q, K, V, out, lse)
    with pytest.raises(ValueError, match=r"attention_backward: out must have"):
        attnpy.attention_backward(dout, Q, K, V, out[:1], lse)
    with pytest.raises(ValueError, match=r"attention_backward: lse must have"
                       r" shape \(2, 4, 6\)"):
        attnpy.attention_backward(dout, Q, K, V, out, lse[..., None])
    with pytest.raises(ValueError, match="K has 7 features"):
        attnpy.attention_backward(dout, Q, K[..., :7], V, out, lse)
    with pytest.raises(ValueError, match="bias_grad=True needs a bias"):
        attnpy.attention_backward(dout, Q, K, V, out, lse, bias_grad=True)
    with pytest.raises(ValueError, match="dq must have shape"):
        attnpy.attention_backward(dout, Q, K, V, out, lse,
                                  dq=np.empty((2, 4, 6, 7)))
    with pytest.raises(ValueError, match="fully_masked"):
        attnpy.attention_backward(dout, Q, K, V, out, lse,
                                  fully_masked="bogus")


def test_return_lse_builds_no_weights():
    """return_lse adds an (..., L) array, never the L x S weights."""
    import tracemalloc
    rng = np.random.default_rng(1)
    Q, K, V = (rng.standard_normal((1, 2, 2048, 16)).astype(np.float32)
               for _ in range(3))
    attnpy.attention(Q, K, V, return_lse=True)         # warm up
    tracemalloc.start()
    try:
        out, lse = attnpy.attention(Q, K, V, return_lse=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert lse.shape == (1, 2, 2048)
    assert peak < 2 * 2048 * 2048 * 4 / 4      # a quarter of the weights
    np.testing.assert_array_equal(out, attnpy.attention(Q, K, V))


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("shape", [(1, 40, 300, 64), (5, 20, 150, 32),
                                   (2, 3, 200, 64)])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_backward_weights_from_the_forward_scores(isa, shape, dtype):
    """The backward rebuilds P = exp(s - lse) from the forward's very
    scores s (for bfloat16 Q, K on a CPU with AVX512-BF16: the pairwise
    chain the forward takes them from): dV = P^T dout is, bit for bit,
    that of a float32 call with Q = 0 and bias = the forward's raw scores
    times scale (0 + bias: exactly those scores), the same lse."""
    import ml_dtypes
    dt = np.dtype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
    B, L, S, E = shape
    rng = np.random.default_rng(11)
    Q = rng.standard_normal((B, L, E)).astype(dt)
    K = rng.standard_normal((B, S, E)).astype(dt)
    V = rng.standard_normal((B, S, 16)).astype(np.float32)
    _core.set_isa(isa)
    try:
        out, lse = attnpy.attention(Q, K, V, return_lse=True)
        raw = _core.sdpa(Q, K, V, return_scores=True)[2]
        dout = rng.standard_normal(out.shape).astype(np.float32)
        dv = attnpy.attention_backward(dout, Q, K, V, out, lse)[2]
        bias = raw * np.float32(1 / np.sqrt(E))     # the kernel's product
        dv0 = attnpy.attention_backward(
            dout, np.zeros(Q.shape, np.float32), K.astype(np.float32), V,
            out, lse, bias=bias)[2]
    finally:
        _core.set_isa("auto")
    assert raw.dtype == dv.dtype == dv0.dtype == np.float32
    np.testing.assert_array_equal(dv.view(np.uint32), dv0.view(np.uint32))


@pytest.mark.parametrize("dts", [
    ("float16", "float16", "float16", "float16"),
    ("bfloat16", "bfloat16", "bfloat16", "bfloat16"),
    ("bfloat16", "float32", "float16", "float32"),
    ("float32", "float64", "bfloat16", "float16"),
])
def test_reference_gradient_dtypes(dts):
    """attnpy.reference's backward twin follows attnpy's rule: each
    gradient (dbias too) in its input's dtype, 16-bit in, 16-bit out, a
    float32 input of a float64 call float32; and the values agree."""
    import ml_dtypes
    rng = np.random.default_rng(5)
    dq_, dk_, dv_, db_ = (np.dtype(ml_dtypes.bfloat16) if d == "bfloat16"
                          else np.dtype(d) for d in dts)
    Q = rng.standard_normal((2, 6, 8)).astype(dq_)
    K = rng.standard_normal((2, 9, 8)).astype(dk_)
    V = rng.standard_normal((2, 9, 4)).astype(dv_)
    bias = rng.standard_normal((6, 9)).astype(db_)
    out, lse = attnpy.attention(Q, K, V, bias=bias, causal=True,
                                return_lse=True)
    dout = rng.standard_normal(out.shape).astype(out.dtype)
    kw = dict(bias=bias, causal=True, bias_grad=True)
    got = attnpy.attention_backward(dout, Q, K, V, out, lse, **kw)
    want = ref.attention_backward(dout, Q, K, V, out, lse, **kw)
    for g, w, x in zip(got, want, (Q, K, V, bias)):
        assert g.dtype == x.dtype and w.dtype == x.dtype, (g.dtype, w.dtype)
        tol = 0.02 if x.dtype.itemsize == 2 else 1e-5
        np.testing.assert_allclose(g.astype(np.float64),
                                   w.astype(np.float64), rtol=tol, atol=tol)
    # dq= of the input's dtype is filled by the twin as by attnpy
    dq = np.empty(Q.shape, Q.dtype)
    assert ref.attention_backward(dout, Q, K, V, out, lse, dq=dq,
                                  **kw)[0] is dq
