"""``python -m attnpy``: the "the cat sat" worked example, step by step.

The tutorials' first example: three tokens embedded in 4 dimensions,
Q = K = V = X. The walk-through is ``print(attnpy.explain(X, X, X))`` (the
same steps and worked lines as in Python), then the figures the tutorial
printed by hand are compared with the exact ones, with the hand computation
that gives each of them.
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


def _hand_paths():
    """{(step, index): the hand computation that gives the tutorial's
    figure}, from check() at the tutorial's 3 decimals."""
    from .teach import explain
    tr = explain(X, X, X, tokens=" ".join(TOKENS))
    w = PUBLISHED["weights"]
    out = [PUBLISHED["output[0]"], [None] * 4, [None] * 4]
    paths = {}
    for step, report in (("weights", tr.check("weights", w, 3)),
                         ("output", tr.check("output", out, 3, previous=w))):
        for c in report.explained:
            paths[(step, c.index)] = c.how_other or c.how
    return paths


def render(decimals=3):
    """The text `python -m attnpy` prints."""
    from .teach import explain
    trace = explain(X, X, X, tokens=" ".join(TOKENS))
    trace.decimals = decimals
    walk = str(trace).splitlines()
    parts = ['attnpy worked example: "the cat sat" (Q = K = V = X, d_k = 4);'
             " in Python: print(attnpy.explain(X, X, X, tokens=\"the cat "
             'sat"))', ""] + walk[:-1]
    s = compute(decimals=decimals)
    diffs = differences(s, decimals)
    paths = _hand_paths() if decimals == 3 else {}
    if diffs:
        parts.append("Where the tutorial's hand-rounded figures differ from "
                     "the exact ones:")
        for name, idx, pub, exact in diffs:
            inner = ", ".join(map(str, idx))
            where = (name[:-1] + ", " + inner + "]" if name.endswith("]")
                     else f"{name}[{inner}]")
            parts.append(f"  {where:<14} tutorial {pub:.{decimals}f}   exact "
                         f"{exact:.5f} (rounds to {exact:.{decimals}f})")
            key = ("output", (0,) + idx) if name == "output[0]" else (
                name, idx)
            if key in paths:
                parts.append(f"    by hand: {paths[key]}")
        parts.append("  The tutorial wrote e^x and the weights with 3 "
                     "decimals before dividing and summing (one e^x rounded "
                     "up: e^0.405 = 1.4993 written 1.500); trace.check(step, "
                     "table) finds such paths.")
    else:
        parts.append("Every figure the tutorial printed matches the exact "
                     "value.")
    return "\n".join(parts)


def main(argv=None):
    from . import __version__
    from .teach.cli import DECIMALS, int_in
    ap = argparse.ArgumentParser(
        prog="python -m attnpy",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description='The "the cat sat" worked example, computed by attnpy, '
                    "step by step.",
        epilog="commands:\n"
               "  python -m attnpy explain ...  any example step by step "
               "(python -m attnpy explain --help)\n"
               "  python -m attnpy bench ...    speed against NumPy and "
               "PyTorch (python -m attnpy bench --help)")
    ap.add_argument("--decimals", type=int_in(*DECIMALS), default=3,
                    metavar="N", help="decimals to print, %d..%d (default 3)"
                    % DECIMALS)
    ap.add_argument("--version", action="version",
                    version=f"attnpy {__version__}")
    args = ap.parse_args(argv)
    print(render(args.decimals))
    return 0
