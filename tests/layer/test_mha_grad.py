"""MultiHeadAttention.backward: central finite differences (float64), an
independent torch autograd oracle (its results stored: tests/_oracle.py),
errors.

The layer's backward calls attnpy.attention(..., return_lse=True) and
attnpy.attention_backward. Here the fixture `attn_grad` installs the
private NumPy versions of tests/_grad_np.py, so these tests check the
layer's chain rule on their own; tests/layer/test_mha_grad_kernel.py runs the
very same tests over the C kernels (enable it when they are on main).
"""
import numpy as np
import pytest

import attnpy
from attnpy import reference as ref
from _grad_np import fd_grad, rel_err, use_numpy_attention_grad

WEIGHTS = ("W_q", "W_k", "W_v", "W_o")


@pytest.fixture
def attn_grad(monkeypatch):
    use_numpy_attention_grad(monkeypatch)


CASES = {
    "plain": dict(),
    "causal": dict(causal=True),
    "bottom_right": dict(causal="bottom_right"),
    "padding": dict(mask="padding"),
    "mask+causal+fully-masked-row": dict(mask="holes", causal=True),
}


def _mask(kind, L, S):
    if kind == "padding":
        return attnpy.padding_mask([S - 2, S], S)   # (2, 1, 1, S)
    if kind == "holes":   # query 0 sees no key at all: its row is 0
        m = np.ones((L, S))
        m[0, :] = 0
        m[2, 1] = 0
        return m
    return None


def _layer_and_inputs(seed, L, S, cross):
    mha = attnpy.MultiHeadAttention(8, 2, seed=seed)
    rng = np.random.default_rng(seed + 1)
    X = rng.standard_normal((2, L, 8))
    mem = rng.standard_normal((2, S, 8)) if cross else None
    return mha, X, mem, rng


@pytest.mark.parametrize("cross", [False, True], ids=["self", "cross"])
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("need_weights", [False, True])
def test_backward_equals_finite_differences(attn_grad, case, cross,
                                            need_weights):
    L, S = 5, (4 if cross else 5)
    mha, X, mem, rng = _layer_and_inputs(3, L, S, cross)
    opts = dict(CASES[case])
    if "mask" in opts:
        opts["mask"] = _mask(opts["mask"], L, S)
    mem2 = None if mem is None else mem + 0.5   # key != value
    G = rng.standard_normal((2, L, 8))

    def loss():
        y = mha(X, mem, mem2, need_weights=need_weights, **opts)
        y = y[0] if need_weights else y
        return float(np.sum(G * y))

    loss()
    d_in = mha.backward(G)
    grads = dict(mha.grads)
    if cross:
        assert isinstance(d_in, tuple) and len(d_in) == 3
        for got, x in zip(d_in, (X, mem, mem2)):
            assert got.shape == x.shape
            assert rel_err(got, fd_grad(loss, x)) < 1e-6
    else:
        assert d_in.shape == X.shape
        assert rel_err(d_in, fd_grad(loss, X)) < 1e-6
    for name in WEIGHTS:
        w = getattr(mha, name)
        assert grads[name].shape == w.shape and grads[name].dtype == w.dtype
        assert rel_err(grads[name], fd_grad(loss, w)) < 1e-6, name


def _torch_grads(weights, h, X, mem, mem2, G, mask, causal):
    """An independent oracle: the layer written in torch, autograd. weights:
    W_q, W_k, W_v, W_o; h heads. Returns the input gradients (X's, or X's,
    mem's and mem2's) and then the weights'."""
    import torch  # the oracle extra; a test dependency, never skipped
    t = {n: torch.tensor(w, requires_grad=True)
         for n, w in zip(WEIGHTS, weights)}
    xs = [torch.tensor(a, requires_grad=True) for a in
          ((X, X, X) if mem is None else (X, mem, mem2))]
    x_used = [xs[0]] * 3 if mem is None else xs
    dk = weights[0].shape[1] // h

    def split(a):
        return a.reshape(*a.shape[:-1], h, dk).transpose(-3, -2)

    Q, K, V = (split(x @ t[n]) for x, n in zip(x_used, WEIGHTS))
    s = Q @ K.transpose(-1, -2) / np.sqrt(dk)
    L, S = s.shape[-2:]
    allowed = torch.ones(L, S, dtype=torch.bool)
    if mask is not None:
        allowed = allowed & torch.tensor(np.asarray(mask) != 0)
    if causal:
        allowed = allowed & torch.ones(L, S, dtype=torch.bool).tril()
    P = torch.softmax(s.masked_fill(~allowed, float("-inf")), dim=-1)
    O = (P @ V).transpose(-3, -2).reshape(*X.shape[:-2], L, h * dk)
    (O @ t["W_o"] * torch.tensor(G)).sum().backward()
    d_in = [xs[0].grad.numpy()] if mem is None else [
        x.grad.numpy() for x in xs]
    return (*d_in, *(t[n].grad.numpy() for n in WEIGHTS))


@pytest.mark.parametrize("cross", [False, True], ids=["self", "cross"])
@pytest.mark.parametrize("case", ["plain", "causal", "padding"])
def test_backward_matches_torch_autograd(attn_grad, torch_oracle, case,
                                         cross):
    """Against the layer in torch (its results stored: tests/_oracle.py)."""
    L, S = 7, (6 if cross else 7)
    mha, X, mem, rng = _layer_and_inputs(11, L, S, cross)
    mem2 = None if mem is None else rng.standard_normal(mem.shape)
    opts = dict(CASES[case])
    mask = _mask(opts.pop("mask", None), L, S)
    G = rng.standard_normal((2, L, 8))
    mha(X, mem, mem2, mask=mask, **opts)
    got = mha.backward(G)
    res = torch_oracle("grads", _torch_grads,
                       tuple(getattr(mha, n) for n in WEIGHTS),
                       mha.num_heads, X, mem, mem2, G, mask,
                       opts.get("causal", False))
    want, want_w = res[:-4], dict(zip(WEIGHTS, res[-4:]))
    assert mha.d_k == X.shape[-1] // mha.num_heads
    for a, b in zip(got if cross else (got,), want):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    for n in WEIGHTS:
        np.testing.assert_allclose(mha.grads[n], want_w[n], rtol=1e-10,
                                   atol=1e-12, err_msg=n)


def test_float32_layer_and_the_last_call_is_the_one_differentiated(
        attn_grad):
    mha = attnpy.MultiHeadAttention(8, 2, seed=0, dtype=np.float32)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3, 6, 8)).astype(np.float32)
    G = rng.standard_normal((3, 6, 8)).astype(np.float32)
    mha(rng.standard_normal((1, 4, 8)))        # an earlier call
    mha(X, causal=True)
    dX = mha.backward(G)
    assert dX.dtype == np.float32 and dX.shape == X.shape
    assert all(mha.grads[n].dtype == np.float32 for n in WEIGHTS)
    ref = attnpy.MultiHeadAttention(8, 2, seed=0)   # float64 twin
    ref(X.astype(np.float64), causal=True)
    dX64 = ref.backward(G.astype(np.float64))
    np.testing.assert_allclose(dX, dX64, rtol=1e-4, atol=1e-5)
    for n in WEIGHTS:
        np.testing.assert_allclose(mha.grads[n], ref.grads[n], rtol=1e-4,
                                   atol=1e-5)


def test_packed_projection_path_same_gradient(attn_grad):
    # >= 256 rows takes the packed (d, 3d) projection in the forward pass
    mha = attnpy.MultiHeadAttention(8, 2, seed=4)
    rng = np.random.default_rng(4)
    X = rng.standard_normal((1, 300, 8))
    G = rng.standard_normal(X.shape)
    mha(X, causal=True)
    dX = mha.backward(G)
    # the same layer seen as cross-attention of X over X (unpacked path)
    mha(X, X.copy(), X.copy(), causal=True)
    dq, dk, dv = mha.backward(G)
    np.testing.assert_allclose(dX, dq + dk + dv, rtol=1e-10, atol=1e-12)


def test_errors(attn_grad):
    mha = attnpy.MultiHeadAttention(8, 2, seed=0)
    with pytest.raises(RuntimeError, match=r"MultiHeadAttention.backward: "
                       r"no forward call"):
        mha.backward(np.zeros((1, 3, 8)))
    X = np.zeros((2, 3, 8))
    mha(X)
    with pytest.raises(ValueError, match=r"MultiHeadAttention.backward: "
                       r"d_output must have the shape of the last call's "
                       r"output \(2, 3, 8\), got \(2, 3, 4\)"):
        mha.backward(np.zeros((2, 3, 4)))
    with pytest.raises(TypeError, match="MultiHeadAttention.backward"):
        mha.backward(np.zeros((2, 3, 8), complex))
    # a failed call leaves nothing to differentiate
    with pytest.raises(ValueError):
        mha(X, mask=np.ones((5, 5)))
    with pytest.raises(RuntimeError, match="no forward call"):
        mha.backward(np.zeros((2, 3, 8)))


@pytest.mark.parametrize("cross", [False, True], ids=["self", "cross"])
@pytest.mark.parametrize("case", CASES)
def test_backward_matches_the_reference_twin(attn_grad, case, cross):
    L, S = 6, (5 if cross else 6)
    mha, X, mem, rng = _layer_and_inputs(21, L, S, cross)
    mem = None if mem is None else mem[:1]      # broadcast batch of K/V
    mem2 = None if mem is None else mem + 1.0
    twin = ref.MultiHeadAttention(8, 2, seed=21)
    opts = dict(CASES[case])
    if "mask" in opts:
        opts["mask"] = _mask(opts["mask"], L, S)
    G = rng.standard_normal((2, L, 8))
    mha(X, mem, mem2, **opts)
    twin(X, mem, mem2, **opts)
    got, want = mha.backward(G), twin.backward(G)
    for a, b in zip(got if cross else (got,), want if cross else (want,)):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)
    for n in WEIGHTS:
        np.testing.assert_allclose(mha.grads[n], twin.grads[n], rtol=1e-12,
                                   atol=1e-13, err_msg=n)
