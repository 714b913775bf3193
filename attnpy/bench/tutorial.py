"""The tutorial's NumPy attention (the baseline every row is timed against),
and the correctness guard that compares attnpy with it before timing.

The tutorial's code ("Implementing scaled dot-product attention"),
in our own words with the same formulas. The tutorial transposes K with
K.transpose(0, 2, 1) for 3-D inputs and K.transpose(0, 1, 3, 2) for the
4-D heads of its MultiHeadAttention; swapaxes(-1, -2) is both.
"""
import numpy as np

from .config import GUARD_ROWS, GUARD_TOL


def tutorial_softmax(x, axis=-1):
    """Numerically stable softmax, as the tutorial writes it."""
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def tutorial_sdpa(Q, K, V, mask=None):
    """The tutorial's scaled_dot_product_attention: returns (output, weights)."""
    d_k = Q.shape[-1]
    scores = np.matmul(Q, np.swapaxes(K, -1, -2)) / np.sqrt(d_k)
    if mask is not None:
        scores = np.where(mask == 0, -1e9, scores)
    weights = tutorial_softmax(scores, axis=-1)
    return np.matmul(weights, V), weights


def tutorial_causal_mask(seq_len):
    """The tutorial's create_causal_mask: a float64 lower-triangular 0/1 matrix."""
    return np.tril(np.ones((seq_len, seq_len)))


def _standin_attention(Q, K, V, *, causal=False):
    """Development stand-in used only while attnpy.attention does not exist."""
    mask = tutorial_causal_mask(Q.shape[-2]) if causal else None
    return tutorial_sdpa(Q, K, V, mask)[0]


def _guard_rows(L):
    return np.unique(np.linspace(0, L - 1, min(L, GUARD_ROWS)).round().astype(np.intp))


def _tutorial_rows(Q, K, V, causal, rows):
    """Tutorial output for some query rows only (rows are independent)."""
    S = K.shape[-2]
    # rows of the tutorial's np.tril(np.ones((L, S))), without building it all
    mask = (np.arange(S)[None, :] <= np.asarray(rows)[:, None]).astype(np.float64) \
        if causal else None
    return tutorial_sdpa(Q[..., rows, :], K, V, mask)[0]


def _compare(got, ref, dtype_name):
    atol, rtol = GUARD_TOL[dtype_name]
    got = np.asarray(got)
    if got.shape != ref.shape:
        return {"ok": False, "max_abs_err": None,
                "why": "shape %s, expected %s" % (got.shape, ref.shape)}
    err = float(np.max(np.abs(got.astype(np.float64) - ref))) if ref.size else 0.0
    bound = atol + rtol * (float(np.max(np.abs(ref))) if ref.size else 0.0)
    ok = bool(np.isfinite(err) and err <= bound)
    return {"ok": ok, "max_abs_err": err, "bound": bound,
            "why": "" if ok else "max |attnpy - tutorial| = %.3g > %.3g" % (err, bound)}
