"""The tests of tests/layer/test_mha_grad.py over attnpy's own fused kernels
(test_mha_grad.py runs them over a private NumPy attention backward, so a
bug in the kernel and one in the layer's chain rule are told apart)."""
import pytest

from test_mha_grad import *  # noqa: F401,F403  (the same tests)


@pytest.fixture
def attn_grad():
    """No NumPy stand-in: the layer's backward runs the C kernels."""
    import attnpy
    assert hasattr(attnpy, "attention_backward")


def test_backward_docstring_example_runs():
    """MultiHeadAttention.backward's Example runs on the kernels."""
    import doctest

    import attnpy
    doc = attnpy.MultiHeadAttention.backward.__doc__
    test = doctest.DocTestParser().get_doctest(doc, {}, "backward", None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0 and runner.tries >= 5


@pytest.mark.parametrize("kw", [dict(), dict(causal=True),
                                dict(causal="bottom_right", bias=True),
                                dict(mask=True, fully_masked="uniform")])
def test_explain_backward_equals_attention_backward(kw):
    """The teaching trace's dQ, dK, dV are the fused kernel's."""
    import numpy as np

    import attnpy
    rng = np.random.default_rng(0)
    Q, K, V = rng.standard_normal((3, 2, 5, 4))
    G = rng.standard_normal((2, 5, 4))
    kw = dict(kw)
    if kw.get("bias"):
        kw["bias"] = rng.standard_normal((5, 5))
    if kw.get("mask"):
        kw["mask"] = rng.random((5, 5)) < 0.6
        kw["mask"][0] = False
    bw = attnpy.explain(Q, K, V, **kw).backward(G)
    out, lse = attnpy.attention(Q, K, V, return_lse=True, **kw)
    got = attnpy.attention_backward(G, Q, K, V, out, lse, **kw)
    for a, b in zip(got, (bw.dQ, bw.dK, bw.dV)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)
