"""``python -m attnpy explain``: the walk-through of an example from a terminal."""
import argparse
import sys

import numpy as np

from .trace import explain


def _examples():
    """The worked examples of the tutorials, as explain() arguments."""
    X = np.array([[0.9, 0.3, 0.1, 0.5],      # "the"
                  [0.1, 0.8, 0.4, 0.2],      # "cat"
                  [0.6, 0.1, 0.9, 0.3]])     # "sat"
    table = np.array([[1.0, 0.5, 2.0],       # given scaled scores (GPT-2)
                      [0.2, 1.1, 1.5],
                      [0.3, 0.7, 1.2]])
    K4 = np.array([[1.0, 0.0, 0.0, 1.0],     # K_I, K_love, K_Paris
                   [0.0, 1.0, 1.0, 0.0],
                   [1.0, 0.0, 1.0, 0.0]])
    return {
        "cat-sat": dict(Q=X, K=X, V=X, tokens="the cat sat",
                        about="'the cat sat', Q = K = V = X"),
        "causal-table": dict(Q=table, K=np.eye(3), V=np.eye(3), scale=1.0,
                             causal=True, tokens="The cat sat",
                             about="the GPT-2 walkthrough's scaled "
                                   "table, causal (Q = table, K = V = I, "
                                   "scale = 1)"),
        "love-paris": dict(Q=np.array([[1.0, 0.0, 1.0, 0.0]]), K=K4,
                           V=np.eye(3), tokens="love",
                           key_tokens="I love Paris",
                           about="the query 'love' against I, love, "
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


DECIMALS = (0, 12)      # what check() and the walk-through both accept


def int_in(lo, hi=None):
    """An argparse type: an int in lo..hi (hi None: no upper bound)."""
    def parse(text):
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") \
                from None
        if v < lo or (hi is not None and v > hi):
            span = f"{lo}..{hi}" if hi is not None else f">= {lo}"
            raise argparse.ArgumentTypeError(f"must be {span}, not {v}")
        return v
    parse.__name__ = "int"
    return parse


def _parser(ex):
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
    p.add_argument("--decimals", type=int_in(*DECIMALS), default=3,
                   metavar="N", help="decimals printed, %d..%d (default 3)"
                   % DECIMALS)
    p.add_argument("--focus", default=None, metavar="TOKEN",
                   help="also write this query's output as a weighted sum "
                        "(a token or a 0-based index)")
    p.add_argument("--seed", type=int_in(0), default=0,
                   help="seed for a random X, >= 0 (default 0)")
    p.add_argument("--dim", type=int_in(1, 64), default=4,
                   help="features of a random X, 1..64 (default 4)")
    return p


def _spec(p, args, ex):
    """explain()'s arguments from the command line (p.error on bad ones)."""
    spec = dict(ex[args.example or "cat-sat"])
    spec.pop("about")
    toks = args.tokens.split() if args.tokens is not None else None
    if toks is not None and not toks:
        p.error("argument --tokens: give at least one token")
    if args.x is not None:
        X = args.x
        spec = dict(Q=X, K=X, V=X, tokens=None)
    elif toks is not None and args.example is None and len(toks) != 3:
        rng = np.random.default_rng(args.seed)
        X = np.round(rng.uniform(0.0, 1.0, (len(toks), args.dim)), 1)
        spec = dict(Q=X, K=X, V=X, tokens=None)
    if toks is not None:
        n = spec["K"].shape[0]
        if len(toks) != n and spec.get("key_tokens") is None:
            p.error(f"argument --tokens: {len(toks)} tokens for {n} rows "
                    "of X")
        if spec.get("key_tokens") is not None:
            if len(toks) < spec["Q"].shape[0]:
                p.error(f"argument --tokens: {len(toks)} tokens for "
                        f"{spec['K'].shape[0]} keys")
            spec["key_tokens"] = toks
            spec["tokens"] = toks[-spec["Q"].shape[0]:]
        else:
            spec["tokens"] = toks
    if args.causal:
        spec["causal"] = True
    return spec


def _focus_query(p, trace, q):
    """The --focus argument as focus() takes it, checked before printing."""
    if trace.tokens is not None and q in trace.tokens:
        return q
    L = trace.weights.shape[-2]
    try:
        i = int(q)
    except ValueError:
        names = (f"the tokens are {' '.join(trace.tokens)}"
                 if trace.tokens is not None else "the trace has no tokens")
        p.error(f"argument --focus: no query token {q!r}; {names} (or "
                f"give an index 0..{L - 1})")
    if not 0 <= i < L:
        p.error(f"argument --focus: query index {i} out of range 0..{L - 1}")
    return i


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
    p = _parser(ex)
    try:
        args = p.parse_args(argv)
        spec = _spec(p, args, ex)
        Q, K, V = spec.pop("Q"), spec.pop("K"), spec.pop("V")
        try:
            trace = explain(Q, K, V, **spec)
        except (ValueError, TypeError) as exc:
            p.error(str(exc))
        trace.decimals = args.decimals
        q = None if args.focus is None else _focus_query(p, trace, args.focus)
    except SystemExit as exc:          # --help or a usage error
        return exc.code if isinstance(exc.code, int) else 2
    print(trace)
    if q is not None:
        print()
        print(trace.focus(q))
    return 0
