"""``python -m attnpy``: the "the cat sat" worked example, step by step.

The example of the tutorial in shared/seeds/000_*: three tokens embedded in 4
dimensions, Q = K = V = X. Every number is computed by attnpy's C core
(``scores`` are the raw Q K^T the kernel computed) and printed with 3
decimals, then compared with the figures the tutorial printed by hand.
"""
import argparse

import numpy as np

from . import _core

TOKENS = ("the", "cat", "sat")
X = np.array([[0.9, 0.3, 0.1, 0.5],
              [0.1, 0.8, 0.4, 0.2],
              [0.6, 0.1, 0.9, 0.3]])

# The figures the tutorial printed (it rounds intermediate values by hand).
PUBLISHED = {
    "scores": [[1.16, 0.47, 0.81], [0.47, 0.85, 0.56], [0.81, 0.56, 1.27]],
    "scaled": [[0.58, 0.235, 0.405], [0.235, 0.425, 0.28],
               [0.405, 0.28, 0.635]],
    "weights": [[0.393, 0.278, 0.330], [0.307, 0.371, 0.321],
                [0.318, 0.281, 0.401]],
    "output[0]": [0.580, 0.373, 0.447, 0.352],
}


def compute(X=X, decimals=3):
    """The steps of the example: a dict of name -> array."""
    out, weights, scores = _core.sdpa(X, X, X, return_scores=True)
    scale = 1.0 / np.sqrt(X.shape[-1])
    return {"scores": scores, "scaled": scores * scale, "weights": weights,
            "output": out, "output[0]": out[0]}


def _table(a, decimals, rows=TOKENS, cols=None):
    w = decimals + 4
    lines = []
    if cols is not None:
        lines.append(" " * 6 + "".join(f"{c:>{w}}" for c in cols))
    for name, row in zip(rows, np.atleast_2d(a)):
        lines.append(f"{name:>5} " + "".join(f"{v:>{w}.{decimals}f}"
                                             for v in row))
    return "\n".join(lines)


def differences(steps, decimals=3):
    """(step, index, published, exact) for each published figure that is
    not the exact value rounded to `decimals`."""
    found = []
    for name, pub in PUBLISHED.items():
        exact = np.asarray(steps[name])
        for idx, p in np.ndenumerate(np.asarray(pub)):
            if round(float(exact[idx]), decimals) != round(p, decimals):
                found.append((name, idx, p, float(exact[idx])))
    return found


def render(decimals=3):
    s = compute(decimals=decimals)
    d = X.shape[-1]
    parts = [
        'attnpy worked example: "the cat sat" (Q = K = V = X, d_k = 4)',
        "",
        "X (3 x 4), one row per token:",
        _table(X, decimals),
        "",
        "Step 1  scores = Q @ K^T  (3 x 3)",
        _table(s["scores"], decimals, cols=TOKENS),
        "",
        f"Step 2  scaled = scores / sqrt(d_k) = scores / {np.sqrt(d):g}",
        _table(s["scaled"], decimals, cols=TOKENS),
        "",
        "Step 3  weights = softmax(scaled), row by row",
        _table(s["weights"], decimals, cols=TOKENS),
        "        row sums: " + ", ".join(
            f"{v:.{decimals}f}" for v in s["weights"].sum(axis=-1)),
        "",
        "Step 4  output = weights @ V  (3 x 4)",
        _table(s["output"], decimals),
        "",
    ]
    diffs = differences(s, decimals)
    if diffs:
        parts.append("Where the tutorial's hand-rounded figures differ from "
                     "the exact ones:")
        for name, idx, pub, exact in diffs:
            inner = ", ".join(map(str, idx))
            where = (name[:-1] + ", " + inner + "]" if name.endswith("]")
                     else f"{name}[{inner}]")
            parts.append(f"  {where:<14} tutorial {pub:.{decimals}f}   exact "
                         f"{exact:.5f} (rounds to {exact:.{decimals}f})")
        parts.append("  The tutorial rounded e^x and the weights to 3 "
                     "decimals before dividing and summing; the exact "
                     "figures above are attnpy's.")
    else:
        parts.append("Every figure the tutorial printed matches the exact "
                     "value.")
    return "\n".join(parts)


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="python -m attnpy",
        description='The "the cat sat" worked example, computed by attnpy. '
                    "Subcommands: 'explain' (any example, step by step), "
                    "'bench' (speed against NumPy and PyTorch).")
    ap.add_argument("--decimals", type=int, default=3,
                    help="decimals to print (default 3)")
    args = ap.parse_args(argv)
    if not 0 <= args.decimals <= 12:
        ap.error("--decimals must be between 0 and 12")
    print(render(args.decimals))
    return 0
