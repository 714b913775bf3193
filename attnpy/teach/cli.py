"""``python -m attnpy explain``: the walk-through of an example from a terminal."""
import argparse
import sys

import numpy as np

from .trace import explain


def _examples():
    """The worked examples of the tutorials, as explain() arguments."""
    X = np.array([[0.9, 0.3, 0.1, 0.5],      # "the"   (000_)
                  [0.1, 0.8, 0.4, 0.2],      # "cat"
                  [0.6, 0.1, 0.9, 0.3]])     # "sat"
    table = np.array([[1.0, 0.5, 2.0],       # 003_: given scaled scores
                      [0.2, 1.1, 1.5],
                      [0.3, 0.7, 1.2]])
    K4 = np.array([[1.0, 0.0, 0.0, 1.0],     # 004_: K_I, K_love, K_Paris
                   [0.0, 1.0, 1.0, 0.0],
                   [1.0, 0.0, 1.0, 0.0]])
    return {
        "cat-sat": dict(Q=X, K=X, V=X, tokens="the cat sat",
                        about="000_: 'the cat sat', Q = K = V = X"),
        "causal-table": dict(Q=table, K=np.eye(3), V=np.eye(3), scale=1.0,
                             causal=True, tokens="The cat sat",
                             about="003_: the given scaled table, causal "
                                   "(Q = table, K = V = I, scale = 1)"),
        "love-paris": dict(Q=np.array([[1.0, 0.0, 1.0, 0.0]]), K=K4,
                           V=np.eye(3), tokens="love",
                           key_tokens="I love Paris",
                           about="004_: the query 'love' against I, love, "
                                 "Paris (V = I)"),
    }


def _parse_matrix(text):
    rows = [r for r in text.replace(",", " ").split(";") if r.strip()]
    try:
        m = np.array([[float(v) for v in r.split()] for r in rows])
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a matrix: {text!r} (rows "
                                         "separated by ';')") from None
    if m.ndim != 2 or m.size == 0:
        raise argparse.ArgumentTypeError(f"not a matrix: {text!r} (every row "
                                         "needs the same length)")
    return m


def cli(argv=None):
    """``python -m attnpy explain``: print a walk-through. Returns 0 or 2.

    Examples
    --------
    >>> from attnpy.teach.cli import cli
    >>> cli(["--tokens", "the cat sat", "--focus", "cat"])  # doctest: +ELLIPSIS
    Attention, step by step: the cat sat
    ...
    output for query "cat" (i = 2; Python index 1):
      output_2 = 0.307 * V_1 + 0.371 * V_2 + 0.321 * V_3
    ...
    0
    """
    ex = _examples()
    p = argparse.ArgumentParser(
        prog="python -m attnpy explain",
        description="Scaled dot-product attention step by step, with the "
                    "numbers of the tutorials' worked examples (self-"
                    "attention Q = K = V = X unless an example says "
                    "otherwise).",
        epilog="examples: " + "; ".join(f"{k}: {v['about']}"
                                        for k, v in ex.items()))
    p.add_argument("--example", choices=sorted(ex), default=None,
                   help="a worked example of the tutorials (default cat-sat)")
    p.add_argument("--tokens", default=None,
                   help='the tokens, e.g. "the cat sat"; with as many tokens '
                        "as the example has, they relabel it, otherwise X is "
                        "random with one decimal (see --seed, --dim)")
    p.add_argument("--x", type=_parse_matrix, default=None, metavar="ROWS",
                   help='X as rows separated by ";", e.g. "1 0; 0 1"')
    p.add_argument("--causal", action="store_true",
                   help="causal mask: each token sees itself and the "
                        "tokens before it")
    p.add_argument("--decimals", type=int, default=3, metavar="N",
                   help="decimals printed (default 3)")
    p.add_argument("--focus", default=None, metavar="TOKEN",
                   help="also write this query's output as a weighted sum")
    p.add_argument("--seed", type=int, default=0,
                   help="seed for a random X (default 0)")
    p.add_argument("--dim", type=int, default=4,
                   help="features of a random X (default 4)")
    try:
        args = p.parse_args(argv)
    except SystemExit as exc:          # --help or a usage error
        return exc.code if isinstance(exc.code, int) else 2
    if not 0 <= args.decimals <= 15:
        p.print_usage(sys.stderr)
        print("python -m attnpy explain: error: --decimals must be in "
              "0..15", file=sys.stderr)
        return 2
    spec = dict(ex[args.example or "cat-sat"])
    spec.pop("about")
    toks = args.tokens.split() if args.tokens is not None else None
    if args.x is not None:
        X = args.x
        spec = dict(Q=X, K=X, V=X, tokens=None)
    elif toks is not None and args.example is None and len(toks) != 3:
        rng = np.random.default_rng(args.seed)
        X = np.round(rng.uniform(0.0, 1.0, (len(toks), max(args.dim, 1))), 1)
        spec = dict(Q=X, K=X, V=X, tokens=None)
    if toks is not None:
        n = spec["K"].shape[0]
        if len(toks) != n and spec.get("key_tokens") is None:
            print(f"python -m attnpy explain: error: {len(toks)} tokens for "
                  f"{n} rows of X", file=sys.stderr)
            return 2
        if spec.get("key_tokens") is not None:
            spec["key_tokens"] = toks
            spec["tokens"] = toks[-spec["Q"].shape[0]:]
        else:
            spec["tokens"] = toks
    if args.causal:
        spec["causal"] = True
    Q, K, V = spec.pop("Q"), spec.pop("K"), spec.pop("V")
    try:
        trace = explain(Q, K, V, **spec)
        trace.decimals = args.decimals
        print(trace)
        if args.focus is not None:
            q = args.focus
            if trace.tokens is None or q not in trace.tokens:
                try:
                    q = int(q)
                except ValueError:
                    pass
            print()
            print(trace.focus(q))
    except (ValueError, TypeError, IndexError) as exc:
        print(f"python -m attnpy explain: error: {exc}", file=sys.stderr)
        return 2
    return 0
