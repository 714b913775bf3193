"""explain(...).backward(d_output): the backward pass's tables against
central finite differences and a NumPy attention backward, the walk-through,
check()."""
import re

import numpy as np
import pytest

import attnpy
from attnpy import explain
from attnpy import reference as ref
from _grad_np import attention_backward as np_backward
from _grad_np import fd_grad, rel_err

X = np.array([[0.9, 0.3, 0.1, 0.5],
              [0.1, 0.8, 0.4, 0.2],
              [0.6, 0.1, 0.9, 0.3]])


CASES = {
    "plain": dict(),
    "causal": dict(causal=True),
    "bottom_right+mask": dict(causal="bottom_right", mask="holes"),
    "bias": dict(bias=True),
    "fully-masked-zero": dict(mask="row0"),
    "fully-masked-uniform": dict(mask="row0", fully_masked="uniform"),
}


def _problem(case, L=4, S=5, E=3, Ev=2, seed=0):
    rng = np.random.default_rng(seed)
    Q, K = rng.standard_normal((L, E)), rng.standard_normal((S, E))
    V, G = rng.standard_normal((S, Ev)), rng.standard_normal((L, Ev))
    kw = dict(CASES[case])
    if kw.get("mask") == "holes":
        kw["mask"] = rng.random((L, S)) < 0.8
    elif kw.get("mask") == "row0":
        m = np.ones((L, S), bool)
        m[0] = False
        kw["mask"] = m
    if kw.get("bias"):
        kw["bias"] = rng.standard_normal((L, S))
    return Q, K, V, G, kw


@pytest.mark.parametrize("case", CASES)
def test_gradients_equal_finite_differences(case):
    Q, K, V, G, kw = _problem(case)
    bw = explain(Q, K, V, **kw).backward(G)

    def loss():
        return float(np.sum(G * ref.attention(Q, K, V, **kw)))

    for name, x in (("dQ", Q), ("dK", K), ("dV", V)):
        got = getattr(bw, name)
        assert got.shape == x.shape and got.dtype == np.float64
        assert rel_err(got, fd_grad(loss, x)) < 1e-6, name
    if "bias" in kw:   # dS is the bias's gradient
        assert rel_err(bw.dS, fd_grad(loss, kw["bias"])) < 1e-6
    if case == "fully-masked-uniform":
        np.testing.assert_array_equal(bw.dQ[0], 0.0)


@pytest.mark.parametrize("case", ["plain", "causal", "bottom_right+mask"])
def test_same_as_the_numpy_backward_and_softmax_backward(case):
    Q, K, V, G, kw = _problem(case, seed=3)
    tr = explain(Q, K, V, **kw)
    bw = tr.backward(G)
    want = np_backward(G, Q, K, V, tr.output, _lse(tr), mask=kw.get("mask"),
                       causal=kw.get("causal", False))
    for got, w in zip((bw.dQ, bw.dK, bw.dV), want):
        np.testing.assert_allclose(got, w, rtol=1e-12, atol=1e-14)
    # dS is softmax's backward pass of dP; D = rowsum(weights * dP)
    np.testing.assert_allclose(bw.dS, attnpy.softmax_backward(
        bw.dP, tr.weights), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(bw.D, np.sum(tr.weights * bw.dP, -1),
                               rtol=1e-12, atol=1e-14)


def _lse(tr):
    with np.errstate(divide="ignore"):
        m = tr.masked.max(-1, keepdims=True)
        return (m + np.log(np.exp(tr.masked - m).sum(-1, keepdims=True)))[
            ..., 0]


def test_float32_and_batched_traces():
    rng = np.random.default_rng(5)
    Q, K, V = rng.standard_normal((3, 2, 2, 4, 3)).astype(np.float32)
    G = rng.standard_normal((2, 2, 4, 3)).astype(np.float32)
    tr = explain(Q, K, V, causal=True)
    bw = tr.backward(G)
    assert bw.dQ.dtype == np.float32 and bw.dQ.shape == (2, 2, 4, 3)
    one = tr[1, 0].backward(G[1, 0])
    np.testing.assert_array_equal(one.dK, bw.dK[1, 0])
    twin = explain(*(a.astype(np.float64) for a in (Q, K, V)),
                   causal=True).backward(G.astype(np.float64))
    np.testing.assert_allclose(bw.dQ, twin.dQ, rtol=1e-4, atol=1e-5)
    assert "trace[0, 0].backward(d_output)" in str(bw)


def test_walkthrough_shows_formulas_and_cells_by_hand():
    tr = explain(X, X, X, tokens="the cat sat", causal=True)
    G = np.arange(12.0).reshape(3, 4) / 10
    text = str(tr.backward(G))
    for formula in ("dV = weights^T @ d_output", "dP = d_output @ V^T",
                    "dS = weights * (dP - D), D = rowsum(d_output * output)",
                    "dQ = scale * dS @ K", "dK = scale * dS^T @ Q"):
        assert formula in text
    # the dS cell worked by hand: its printed numbers give its printed value
    m = re.search(r"by hand: dS\[(\w+), (\w+)\] = weights \* \(dP - D\) = "
                  r"([-\d.]+) \* \(([-\d.]+) - ([-\d.]+)\) = ([-\d.]+)", text)
    assert m, text
    p, dp, dd, val = map(float, m.groups()[2:])
    assert abs(p * (dp - dd) - val) < 2e-3
    bw = tr.backward(G)
    i = ["the", "cat", "sat"].index(m.group(1))
    j = ["the", "cat", "sat"].index(m.group(2))
    assert abs(bw.dS[i, j] - val) <= 5e-4
    m = re.search(r"by hand: dQ\[\w+, \d+\] = 0.5 \* \((.*)\) = ([-\d.]+)",
                  text)
    terms = [t.split("*") for t in m.group(1).split(" + ")]
    assert abs(0.5 * sum(float(a) * float(b) for a, b in terms)
               - float(m.group(2))) < 2e-3


def test_check_tables_by_hand():
    tr = explain(X, X, X, tokens="the cat sat")
    G = np.array([[1.0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 1.0, 0]])
    bw = tr.backward(G)
    for step in bw.steps:
        exact = getattr(bw, step).round(3)
        report = bw.check(step, exact)
        assert report.ok and report.exact, step
    # dS from the printed (rounded) weights, dP and D: hand rounding
    hand = np.round(tr.weights.round(3) * (bw.dP.round(3)
                                           - bw.D.round(3)[:, None]), 3)
    report = bw.check("dS", hand)
    assert report.ok and all(c.explained for c in report.differences)
    slip = bw.dV.round(3).tolist()
    slip[1][0] += 0.1
    report = bw.check("dV", slip)
    assert not report.ok and len(report.wrong) == 1
    assert report.wrong[0].index == (1, 0) and report.wrong[0].row == "cat"
    assert "WRONG" in str(report)
    partial = [[None] * 4, [None] * 4, list(bw.dQ[2].round(3))]
    assert bw.check("dQ", partial).checked == 4


def test_errors():
    tr = explain(X, X, X)
    with pytest.raises(ValueError, match=r"AttentionTrace.backward: d_output "
                       r"must have the output's shape \(3, 4\), got \(3, 3\)"):
        tr.backward(np.ones((3, 3)))
    with pytest.raises(TypeError, match="AttentionTrace.backward: d_output "
                       "must be an array of real numbers"):
        tr.backward(np.ones((3, 4), complex))
    bw = tr.backward(np.ones((3, 4)))
    with pytest.raises(ValueError, match="BackwardTrace.check: step must be "
                       "one of"):
        bw.check("weights", np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"BackwardTrace.check: expected has "
                       r"shape \(2, 2\) but the 'dS' table has shape"):
        bw.check("dS", np.zeros((2, 2)))
    with pytest.raises(ValueError, match="decimals"):
        bw.check("dS", np.zeros((3, 3)), decimals=-1)
    with pytest.raises(ValueError, match="read-only"):
        bw.dQ[0, 0] = 1.0
