"""Draw docs/heatmap.png: the attention weights of the "the cat sat" example.

The tutorials' worked example (Q = K = V = X, 3 tokens, 4 features), drawn
by AttentionTrace.plot(). Run from the repository root:

    python examples/make_heatmap.py [path]

The figure size and dpi are fixed, so the image always has the same pixel
dimensions (the test suite regenerates it and compares them).
"""
import sys

import numpy as np

X = np.array([[0.9, 0.3, 0.1, 0.5],    # "the"
              [0.1, 0.8, 0.4, 0.2],    # "cat"
              [0.6, 0.1, 0.9, 0.3]])   # "sat"

WIDTH, HEIGHT, DPI = 4.8, 3.6, 100


def main(path="docs/heatmap.png"):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import attnpy

    trace = attnpy.explain(X, X, X, tokens="the cat sat")
    fig, ax = plt.subplots(figsize=(WIDTH, HEIGHT), dpi=DPI)
    trace.plot(ax=ax, title='"the cat sat": weights = softmax(Q K^T / 2)')
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


if __name__ == "__main__":
    print(main(*sys.argv[1:]))
