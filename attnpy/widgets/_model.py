"""The numbers behind the two figures, computed with attnpy (no widget code).

Every function here returns plain Python data (lists of floats, ints,
strings) ready to be synced to the browser as JSON, or embedded in a saved
page; the float64 values survive the round trip exactly (JSON writes a
float's shortest repr, which reads back to the same double).
"""
import math

import numpy as np

from ..teach import explain
from .._elementwise import softmax_jacobian

TOKENS = ("the", "cat", "sat", "on", "mat", "quietly")

# The plane positions of the six keys (about 2.8 from the origin, spread
# round the circle): pointing the query at a key gives it most of the
# weight; "sat" is perpendicular to "cat" (score exactly 0 when the query
# is on "cat"), "mat" is opposite it (score negative).
KEYS = ((0.6, -2.5), (2.6, 1.0), (-1.0, 2.6), (-2.5, 1.0), (-2.6, -1.0),
        (1.4, 2.5))

DIMS = (2, 16, 64, 512)      # the head widths the figure offers
MAX_DIM = 512
EXTRA_SEED = 42              # see extra_coordinates

# The sentence of the attention-matrix figure, and its hand-crafted scores
# (rows: queries, columns: keys). Each token looks most at itself or at a
# word it relates to; "sat" (row 2) attends most to its subject "cat".
SENTENCE = ("the", "cat", "sat", "on", "the", "mat")
SENTENCE_SCORES = (
    (2.0, 1.0, 0.2, 0.1, 0.8, 0.3),
    (1.5, 2.5, 0.9, 0.2, 0.3, 1.0),
    (0.4, 3.0, 1.2, 0.6, 0.2, 0.8),
    (0.2, 0.5, 1.8, 1.5, 0.9, 1.6),
    (1.2, 0.3, 0.4, 1.0, 2.0, 1.1),
    (0.6, 1.4, 0.9, 1.7, 2.2, 2.4),
)


def extra_coordinates(n_keys):
    """The fixed coordinates 3..512 of the query (row 0) and of the keys.

    Standard normal draws rounded to 3 decimals (so a saved page holds them
    exactly): in ``d`` dimensions a vector is its plane position followed
    by the first ``d - 2`` of them. Six scores are a small sample: with
    some seeds their spread at d = 16 exceeds that at d = 64. With this one
    it grows with d at the default query and with the query on any key.
    """
    rng = np.random.default_rng(EXTRA_SEED)
    return np.round(rng.standard_normal((1 + n_keys, MAX_DIM - 2)), 3)


def lift(query, keys, extras, dim):
    """Q (1, dim), K (n, dim), V (n, 2): the playground's explain inputs.

    The values are the keys' plane positions, so the output is the first
    two coordinates of the V = K output (the projection is linear).
    """
    q = np.asarray(query, dtype=np.float64).reshape(1, 2)
    k = np.asarray(keys, dtype=np.float64)
    e = extras[:, :dim - 2]
    return (np.concatenate([q, e[:1]], axis=1),
            np.concatenate([k, e[1:]], axis=1), k.copy())


def nonargmax_gradient(weights):
    """Largest |d weight_i / d score_j| over i and every key j but the argmax.

    From softmax's Jacobian ``diag(y) - y y^T``: it is what a loss on the
    weights can send back to the scores of the keys the softmax does not
    pick; 0 when the softmax is one-hot.
    """
    y = np.asarray(weights, dtype=np.float64)
    J = np.abs(softmax_jacobian(y))
    others = np.arange(y.size) != int(np.argmax(y))
    return float(J[:, others].max()) if others.any() else 0.0


def playground_state(query, keys, extras, scaled, dim):
    """Scores, scaled scores, weights, output and the head-width table."""
    Q, K, V = lift(query, keys, extras, dim)
    t = explain(Q, K, V, scale=None if scaled else 1.0)
    demo = []
    for d in DIMS:
        Qd, Kd, Vd = lift(query, keys, extras, d)
        on, off = explain(Qd, Kd, Vd), explain(Qd, Kd, Vd, scale=1.0)
        demo.append({"dim": d, "spread": float(np.std(on.scores[0])),
                     "sqrt": math.sqrt(d),
                     "grad_scaled": nonargmax_gradient(on.weights[0]),
                     "grad_unscaled": nonargmax_gradient(off.weights[0]),
                     "max_scaled": float(on.weights[0].max()),
                     "max_unscaled": float(off.weights[0].max())})
    # a score's two parts, as the figure prints them: the plane's two
    # coordinates (what it draws) and the other dim - 2 (what it does not)
    plane = K[:, :2] @ Q[0, :2]
    rest = K[:, 2:] @ Q[0, 2:]
    return {"scores": t.scores[0].tolist(), "scale": t.scale,
            "plane_scores": plane.tolist(), "rest_scores": rest.tolist(),
            "scaled_scores": t.scaled[0].tolist(),
            "weights": t.weights[0].tolist(), "output": t.output[0].tolist(),
            "demo": demo}


def matrix_inputs(X, scores):
    """(Q, K, V, scale) whose explain gives the matrix figure's tables.

    With X: self-attention ``Q = K = V = X`` at the default scale. With
    hand-crafted scores S: ``Q = S``, ``K = V = I`` and scale 1, so that
    ``Q K^T`` is S itself (each entry is one product by 1).
    """
    if X is not None:
        X = np.asarray(X, dtype=np.float64)
        return X, X, X, None
    S = np.asarray(scores, dtype=np.float64)
    eye = np.eye(S.shape[-1])
    return S, eye, eye, 1.0


def matrix_state(Q, K, V, scale, causal):
    """The pre-softmax scores, the weights and the weights' row sums."""
    t = explain(Q, K, V, scale=scale, causal=bool(causal))
    allowed = t.mask
    scores = t.scaled
    return {"scores": scores.tolist(), "weights": t.weights.tolist(),
            "allowed": allowed.tolist(),
            "weight_sums": t.weights.sum(-1).tolist()}
