"""Attention with verifiable numbers: step-by-step traces for teaching.

``explain(Q, K, V, ...)`` runs the same C kernels as
``scaled_dot_product_attention`` and ``attention`` (one call of
``attnpy._core.sdpa`` that also hands back the raw scores) and keeps every
intermediate table of the computation in an :class:`AttentionTrace`:

=========  ==============================================  ==========
step       formula                                         shape
=========  ==============================================  ==========
scores     ``Q @ K^T``                                     (..., L, S)
scaled     ``scores * scale`` (scale = 1/sqrt(E))          (..., L, S)
masked     ``scaled + bias`` where allowed, else ``-inf``  (..., L, S)
weights    ``softmax(masked)``, row by row                 (..., L, S)
output     ``weights @ V``                                 (..., L, Ev)
=========  ==============================================  ==========

``print(trace)`` walks through the steps like the tutorials do,
``trace.focus("cat")`` writes one output row as a weighted sum of value
rows, ``trace.check(step, table)`` compares a table computed by hand with the
exact one (and says when a difference is only hand rounding), and in a
notebook the trace shows itself as heatmap tables. ``show(mask)`` draws a
mask, ``trace.plot()`` draws the weights with matplotlib.

Nothing here computes attention itself: the weights and the output are the
C core's, bit for bit.
"""
import argparse
import html
import math
import sys
from dataclasses import dataclass

import numpy as np

__all__ = ["explain", "AttentionTrace", "Focus", "CheckReport", "CellDiff",
           "show", "ArrayView", "cli"]

STEPS = ("scores", "scaled", "masked", "weights", "output")


# ---------------------------------------------------------------------------
# explain
# ---------------------------------------------------------------------------

def explain(Q, K, V, mask=None, *, bias=None, causal=False, scale=None,
            tokens=None, key_tokens=None, fully_masked="zero"):
    """Scaled dot-product attention with every intermediate step kept.

    Computes exactly what :func:`attnpy.scaled_dot_product_attention`
    computes, by the same C call (the weights and the output are bitwise
    the same), and also keeps the raw scores ``Q @ K^T``, the scaled and the
    masked scores, so each step can be printed, checked by hand and drawn.

    Parameters
    ----------
    Q : array_like, shape (..., L, E)
        Queries, one row per query position.
    K : array_like, shape (..., S, E)
        Keys, one row per key position.
    V : array_like, shape (..., S, Ev)
        Values, one row per key position.
    mask : array_like, optional
        Broadcastable to (..., L, S); nonzero / True where query i may
        attend to key j (the tutorials' ``np.tril`` masks work as they are).
    bias : array_like, optional
        Real, broadcastable to (..., L, S), added to the scaled scores
        (``-inf`` blocks a cell).
    causal : {False, True, "top_left", "bottom_right"}, optional
        ``True`` / ``"top_left"``: query i sees keys j <= i;
        ``"bottom_right"``: j <= i + S - L.
    scale : float, optional
        Multiplies ``Q @ K^T``; default ``1/sqrt(E)`` (1.0 when E == 0).
    tokens : str or sequence of str, optional
        Labels of the positions. A string is split on whitespace. With
        self-attention (L == S) they label queries and keys; with L < S and
        S tokens the queries are the last L of them (decoding with a cache);
        otherwise they label the queries and `key_tokens` the keys.
    key_tokens : str or sequence of str, optional
        Labels of the keys when they differ from `tokens`.
    fully_masked : {"zero", "uniform", "nan", "raise"}, optional
        What a query that may attend to no key gets (see
        :func:`attnpy.scaled_dot_product_attention`).

    Returns
    -------
    AttentionTrace
        ``.scores``, ``.scale``, ``.scaled``, ``.masked``, ``.weights``,
        ``.output``, ``.mask`` (the boolean allowed matrix), ``.tokens``.
        Print it for the walk-through; index it (``trace[b, h]``) to pick
        one head of batched input.

    See Also
    --------
    AttentionTrace.focus, AttentionTrace.check, AttentionTrace.plot, show

    Examples
    --------
    The "the cat sat" example of the tutorials, with Q = K = V = X:

    >>> import numpy as np
    >>> from attnpy import explain
    >>> X = np.array([[0.9, 0.3, 0.1, 0.5],
    ...               [0.1, 0.8, 0.4, 0.2],
    ...               [0.6, 0.1, 0.9, 0.3]])
    >>> trace = explain(X, X, X, tokens="the cat sat")
    >>> trace.scores
    array([[1.16, 0.47, 0.81],
           [0.47, 0.85, 0.56],
           [0.81, 0.56, 1.27]])
    >>> trace.scale
    0.5
    >>> trace.weights.round(3)
    array([[0.393, 0.278, 0.329],
           [0.307, 0.371, 0.321],
           [0.318, 0.281, 0.401]])
    >>> trace.weights.sum(axis=-1)
    array([1., 1., 1.])
    """
    from . import _core
    Qa, Ka, Va = np.asarray(Q), np.asarray(K), np.asarray(V)
    # The one C call: the same kernels (and bits) as the public functions,
    # plus the raw scores Q K^T. It validates every argument.
    out, weights, scores = _core.sdpa(Qa, Ka, Va, mask, bias, causal, scale,
                                      fully_masked, None, None, 2, "explain")
    dtype = weights.dtype
    batch = weights.shape[:-2]
    L, S = weights.shape[-2:]
    E = Qa.shape[-1]

    if scale is None:
        scale = 1.0 / math.sqrt(E) if E > 0 else 1.0
        scale_how = "default"
    else:
        scale_how = "given"
    scale = float(scale)

    # Which cells may attend: the mask, the causal rule, and a -inf bias.
    allowed = np.ones((L, S), dtype=bool)
    if isinstance(causal, str):
        causal_mode = causal
    else:
        causal_mode = "top_left" if causal else None
    if causal_mode is not None:
        i = np.arange(L)[:, None]
        j = np.arange(S)[None, :]
        shift = S - L if causal_mode == "bottom_right" else 0
        allowed = allowed & (j <= i + shift)
    if mask is not None:
        allowed = allowed & (np.asarray(mask) != 0)
    scores = np.broadcast_to(scores, batch + (L, S))
    with np.errstate(all="ignore"):
        scaled = scores * dtype.type(scale)
        if bias is not None:
            b = np.asarray(bias).astype(dtype)
            allowed = allowed & ~np.isneginf(b)
            pre = scaled + b
        else:
            b = None
            pre = scaled
        allowed = np.broadcast_to(allowed, batch + (L, S))
        masked = np.where(allowed, pre, dtype.type(-np.inf)).astype(dtype)
    fully = ~allowed.any(axis=-1) if S > 0 else np.ones(batch + (L,), bool)

    def keep(a, rows_cols):
        """A private copy of `a`, seen (read-only) with the batch shape."""
        return np.broadcast_to(np.array(a, dtype=dtype), batch + rows_cols)

    qt, kt = _norm_tokens(tokens, key_tokens, L, S)
    return AttentionTrace(
        _key=_PRIVATE,
        Q=keep(Qa, Qa.shape[-2:]), K=keep(Ka, Ka.shape[-2:]),
        V=keep(Va, Va.shape[-2:]),
        scores=scores, scale=scale, scaled=scaled, masked=masked,
        weights=weights, output=out,
        mask=np.array(allowed), fully=np.array(fully),
        bias=None if b is None else keep(b, (L, S)),
        tokens=qt, key_tokens=kt, causal=causal_mode,
        has_mask=mask is not None, fully_masked=fully_masked,
        scale_how=scale_how, same_qkv=_same(Qa, Ka, Va),
    )


_PRIVATE = object()


def _same(Q, K, V):
    """True when Q, K and V hold the same numbers (self-attention on X)."""
    try:
        return (Q.shape == K.shape == V.shape
                and np.array_equal(Q, K, equal_nan=True)
                and np.array_equal(Q, V, equal_nan=True))
    except TypeError:
        return False


def _split_tokens(t, what):
    if t is None:
        return None
    if isinstance(t, str):
        return t.split()
    try:
        return [str(x) for x in t]
    except TypeError:
        raise TypeError(f"explain: {what} must be a string or a sequence of "
                        f"strings, not {type(t).__name__}") from None


def _norm_tokens(tokens, key_tokens, L, S):
    """(query labels, key labels), each a list of str or None."""
    q = _split_tokens(tokens, "tokens")
    k = _split_tokens(key_tokens, "key_tokens")
    if k is not None:
        if q is not None and len(q) != L:
            raise ValueError(f"explain: tokens has {len(q)} entries but there "
                             f"are L={L} queries")
        if len(k) != S:
            raise ValueError(f"explain: key_tokens has {len(k)} entries but "
                             f"there are S={S} keys")
        return q, k
    if q is None:
        return None, None
    if len(q) == S and L <= S:
        return q[S - L:], q
    if len(q) == L:
        return q, None
    raise ValueError(f"explain: tokens has {len(q)} entries but there are "
                     f"L={L} queries and S={S} keys (give key_tokens for "
                     "cross-attention)")


# ---------------------------------------------------------------------------
# number and table formatting
# ---------------------------------------------------------------------------

def _fmt(x, d):
    """x with d decimals; nan/inf/-inf spelled out; never '-0.000'."""
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    s = f"{x:.{d}f}"
    if s.startswith("-") and float(s) == 0.0:
        s = s[1:]
    return s


def _short(x, d):
    """x with at most d decimals and no trailing zeros (0.9, 1, 0.235)."""
    s = _fmt(x, d)
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s if s not in ("", "-") else "0"


def _elide(n, limit):
    """Indices to show out of n, with None standing for '...'."""
    if n <= limit:
        return list(range(n))
    head = (limit + 1) // 2
    tail = limit - head
    return list(range(head)) + [None] + list(range(n - tail, n))


def _table(a, row_labels, col_labels, d, *, indent="  ", extra=None,
           max_rows=16, max_cols=12):
    """Lines of a labelled text table of the 2-D array `a`.

    extra: optional (header, list of row strings) appended after a '|'.
    """
    a = np.asarray(a)
    nr, nc = a.shape
    rows = _elide(nr, max_rows)
    cols = _elide(nc, max_cols)
    rl = ["..." if r is None else row_labels[r] for r in rows]
    head = ["..." if c is None else col_labels[c] for c in cols]
    body = [[("..." if (r is None or c is None) else _fmt(a[r, c], d))
             for c in cols] for r in rows]
    widths = [max([len(head[k])] + [len(row[k]) for row in body])
              for k in range(len(cols))]
    lw = max([len(x) for x in rl] + [0])
    lines = []
    hdr = " " * lw + "".join("  " + h.rjust(w) for h, w in zip(head, widths))
    if extra is not None:
        ew = max([len(extra[0])] + [len(s) for s in extra[1]])
        hdr += "  | " + extra[0].rjust(ew)
    lines.append(indent + hdr.rstrip() if extra is None else indent + hdr)
    for k, (lab, row) in enumerate(zip(rl, body)):
        line = lab.ljust(lw) + "".join("  " + v.rjust(w)
                                       for v, w in zip(row, widths))
        if extra is not None:
            r = rows[k]
            line += "  | " + ("..." if r is None else extra[1][r]).rjust(ew)
        lines.append(indent + line)
    if nr == 0 or nc == 0:
        lines.append(indent + f"(empty: shape {a.shape})")
    return lines


def _vec(v, d, limit=8):
    """'[0.900, 0.300, ...]' for a 1-D array."""
    idx = _elide(len(v), limit)
    return "[" + ", ".join("..." if k is None else _fmt(v[k], d)
                           for k in idx) + "]"


def _labels(tokens, n):
    return list(tokens) if tokens is not None else [str(i) for i in range(n)]


# ---------------------------------------------------------------------------
# the trace
# ---------------------------------------------------------------------------

class AttentionTrace:
    """Every intermediate table of one scaled dot-product attention call.

    Made by :func:`explain`; not meant to be built directly. All arrays are
    read-only NumPy arrays of the compute dtype (float32 or float64), with
    the broadcast leading ("batch") dimensions of the inputs.

    Attributes
    ----------
    Q, K, V : ndarray
        The inputs, (..., L, E), (..., S, E), (..., S, Ev).
    scores : ndarray, (..., L, S)
        ``Q @ K^T``: ``scores[i, j]`` is the dot product of query i and key j.
    scale : float
        The factor applied to the scores (default ``1/sqrt(E)``).
    scaled : ndarray, (..., L, S)
        ``scores * scale``.
    masked : ndarray, (..., L, S)
        ``scaled + bias`` where query i may attend to key j, ``-inf``
        elsewhere: the input of the softmax.
    weights : ndarray, (..., L, S)
        ``softmax(masked)`` row by row (the C core's, bitwise), each row
        summing to 1 (a fully masked row follows `fully_masked`).
    output : ndarray, (..., L, Ev)
        ``weights @ V`` (the C core's, bitwise).
    mask : ndarray of bool, (..., L, S)
        True where query i may attend to key j: the mask is nonzero, the
        causal rule allows it and the bias is not ``-inf``.
    fully_masked_rows : ndarray of bool, (..., L)
        True for queries that may attend to no key.
    tokens, key_tokens : list of str or None
        Labels of the queries and of the keys.
    decimals : int
        Decimals used when printing (default 3); settable.
    batch_shape : tuple
        The leading dimensions; ``()`` for one head.
    """

    def __init__(self, *, _key=None, **fields):
        if _key is not _PRIVATE:
            raise TypeError("AttentionTrace is made by attnpy.explain(Q, K, V, "
                            "...), not directly")
        for name in ("Q", "K", "V", "scores", "scaled", "masked", "weights",
                     "output", "mask", "fully", "bias"):
            a = fields[name]
            if a is not None:
                a = np.asarray(a)
                a.setflags(write=False)
            setattr(self, name if name != "fully" else "fully_masked_rows", a)
        self.scale = fields["scale"]
        self.tokens = fields["tokens"]
        self.key_tokens = fields["key_tokens"]
        self.causal = fields["causal"]
        self.fully_masked = fields["fully_masked"]
        self._has_mask = fields["has_mask"]
        self._scale_how = fields["scale_how"]
        self._same_qkv = fields["same_qkv"]
        self._decimals = 3

    # -- basic properties -------------------------------------------------

    @property
    def decimals(self):
        """Decimals shown by str(), focus(), the HTML tables and plot()."""
        return self._decimals

    @decimals.setter
    def decimals(self, value):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError("AttentionTrace.decimals must be an int, not "
                            f"{type(value).__name__}")
        if not 0 <= value <= 15:
            raise ValueError("AttentionTrace.decimals must be in 0..15, not "
                             f"{value}")
        self._decimals = int(value)

    @property
    def batch_shape(self):
        """The leading (batch, head, ...) dimensions; () for one head."""
        return self.weights.shape[:-2]

    @property
    def shape(self):
        """The shape of the weights, (..., L, S)."""
        return self.weights.shape

    @property
    def dtype(self):
        """The compute dtype (float32 or float64)."""
        return self.weights.dtype

    @property
    def steps(self):
        """The step names, in order: scores, scaled, masked, weights, output."""
        return STEPS

    def _dims(self):
        L, S = self.weights.shape[-2:]
        return L, S, self.Q.shape[-1], self.V.shape[-1]

    def _qlabels(self):
        return _labels(self.tokens, self.weights.shape[-2])

    def _klabels(self):
        return _labels(self.key_tokens, self.weights.shape[-1])

    def _fields(self):
        return dict(Q=self.Q, K=self.K, V=self.V, scores=self.scores,
                    scaled=self.scaled, masked=self.masked,
                    weights=self.weights, output=self.output, mask=self.mask,
                    fully=self.fully_masked_rows, bias=self.bias,
                    scale=self.scale, tokens=self.tokens,
                    key_tokens=self.key_tokens, causal=self.causal,
                    has_mask=self._has_mask, fully_masked=self.fully_masked,
                    scale_how=self._scale_how, same_qkv=self._same_qkv)

    def __getitem__(self, index):
        """The sub-trace of some leading (batch / head) indices.

        ``trace[b, h]`` is the trace of head h of batch item b; ``trace[0]``
        keeps the remaining leading dimensions. Only the leading dimensions
        can be indexed (ints, slices and integer arrays; no Ellipsis).
        """
        nb = len(self.batch_shape)
        key = index if isinstance(index, tuple) else (index,)
        if any(k is Ellipsis or k is None for k in key):
            raise IndexError("AttentionTrace: index the leading dimensions "
                             "only (no ... or None)")
        if len(key) > nb:
            raise IndexError(f"AttentionTrace: {len(key)} indices given but "
                             f"the trace has {nb} leading dimension(s) "
                             f"(weights shape {self.weights.shape}); index "
                             "the arrays (trace.weights[...]) for cells")
        f = self._fields()
        for name in ("Q", "K", "V", "scores", "scaled", "masked", "weights",
                     "output", "mask", "fully", "bias"):
            if f[name] is not None:
                f[name] = f[name][key]
        if f["fully"].ndim < f["weights"].ndim - 1:   # keep (..., L)
            raise IndexError("AttentionTrace: an index removed a query/key "
                             "dimension")
        f["same_qkv"] = self._same_qkv and _same(f["Q"], f["K"], f["V"])
        sub = AttentionTrace(_key=_PRIVATE, **f)
        sub._decimals = self._decimals
        return sub

    def __repr__(self):
        L, S, E, Ev = self._dims()
        bits = [f"L={L}", f"S={S}", f"E={E}", f"Ev={Ev}"]
        if self.batch_shape:
            bits.insert(0, f"batch_shape={self.batch_shape}")
        bits.append(str(self.dtype))
        if self.tokens is not None:
            bits.append("tokens=" + " ".join(self.tokens))
        return "<AttentionTrace " + " ".join(bits) + ">"

    # -- the walk-through -------------------------------------------------

    def __str__(self):
        if self.batch_shape:
            return self._summary()
        return self._walkthrough()

    def _summary(self):
        L, S, E, Ev = self._dims()
        bs = self.batch_shape
        n = int(np.prod(bs))
        lines = [f"AttentionTrace of {n} attention problem(s): leading "
                 f"dimensions {bs}, each L = {L} queries, S = {S} keys, "
                 f"E = {E}, Ev = {Ev}; {self.dtype}",
                 f"  weights {self.weights.shape}, output "
                 f"{self.output.shape}, scale = {_short(self.scale, 6)}"]
        lines += self._rowsum_lines(indent="  ")
        example = ", ".join("0" for _ in bs)
        lines.append(f"Index it for the step-by-step walk-through of one: "
                     f"print(trace[{example}])")
        return "\n".join(lines)

    def _rowsum_lines(self, indent):
        """'each row sums to 1' with the evidence."""
        w = self.weights.astype(np.float64)
        sums = w.sum(axis=-1)
        live = ~self.fully_masked_rows
        tol = 1e-5 if self.dtype == np.float32 else 1e-12
        lines = []
        if live.any():
            dev = np.abs(sums[live] - 1.0)
            worst = float(np.max(dev)) if dev.size else 0.0
            good = bool(np.all(dev <= tol))
            lines.append(f"{indent}each row sums to 1: "
                         f"{'yes' if good else 'NO'} (largest |row sum - 1| "
                         f"= {worst:.1e})")
        nf = int(np.count_nonzero(self.fully_masked_rows))
        if nf:
            what = {"zero": "weights 0 and output 0",
                    "uniform": "weights 1/S and output the mean of V",
                    "nan": "NaN weights and output",
                    "raise": "an error"}[self.fully_masked]
            lines.append(f"{indent}{nf} fully masked row(s) (no key allowed):"
                         f" fully_masked={self.fully_masked!r} gives {what}")
        return lines

    def _walkthrough(self):
        d = self._decimals
        L, S, E, Ev = self._dims()
        ql, kl = self._qlabels(), self._klabels()
        flabels = [str(k) for k in range(E)]
        vlabels = [str(k) for k in range(Ev)]
        out = []
        title = "Attention, step by step"
        if self.tokens is not None:
            title += ": " + " ".join(self.key_tokens or self.tokens)
        out.append(title)
        out.append(f"L = {L} {'query' if L == 1 else 'queries'}, S = {S} "
                   f"key{'' if S == 1 else 's'}, E = {E} features per "
                   f"query/key, Ev = {Ev} per value; {self.dtype}; numbers "
                   f"rounded to {d} decimals")
        out.append("")

        # Inputs
        if self._same_qkv:
            out.append(f"Inputs: Q = K = V = X, shape ({L}, {E})")
            out += _table(self.Q, ql, flabels, d)
        else:
            out.append(f"Inputs: Q ({L}, {E}), K ({S}, {E}), V ({S}, {Ev})")
            out.append("  Q")
            out += _table(self.Q, ql, flabels, d)
            out.append("  K")
            out += _table(self.K, kl, flabels, d)
            out.append("  V")
            out += _table(self.V, kl, vlabels, d)
        out.append("")

        # Step 1
        out.append(f"Step 1. scores = Q @ K^T, shape ({L}, {S})")
        out.append("  scores[i, j] = Q[i] . K[j]: how well query i matches "
                   "key j")
        if L and S:
            i, j = 0, (1 if S > 1 else 0)
            if E <= 8:
                terms = " + ".join(f"{_short(self.Q[i, k], d)}*"
                                   f"{_short(self.K[j, k], d)}"
                                   for k in range(E)) or "0"
            else:
                terms = f"(sum of {E} products)"
            out.append(f"  e.g. scores[{i}, {j}] = {terms} = "
                       f"{_fmt(self.scores[i, j], d)}")
        out += _table(self.scores, ql, kl, d)
        out.append("")

        # Step 2
        if self._scale_how == "default" and E > 0:
            why = (f"1/sqrt(E) = 1/sqrt({E}) = {_short(self.scale, d + 3)}"
                   f", i.e. divide by sqrt({E}) = "
                   f"{_short(math.sqrt(E), d + 3)}")
        elif self._scale_how == "default":
            why = "1 (E = 0)"
        else:
            why = f"{_short(self.scale, d + 3)} (given)"
        out.append(f"Step 2. scaled = scores * scale, scale = {why}")
        out += _table(self.scaled, ql, kl, d)
        out.append("")

        # Step 3
        reasons = []
        if self._has_mask:
            reasons.append("mask == 0")
        if self.causal == "top_left":
            reasons.append("causal: key j > query i")
        elif self.causal == "bottom_right":
            reasons.append(f"causal (bottom right): key j > i + {S - L}")
        if self.bias is not None:
            reasons.append("bias -inf")
        if reasons or self.bias is not None:
            what = "scaled + bias" if self.bias is not None else "scaled"
            out.append(f"Step 3. masked = {what} where query i may attend to "
                       f"key j, -inf where it may not ({'; '.join(reasons)})")
            if self.bias is not None:
                out.append("  bias")
                out += _table(self.bias, ql, kl, d)
                out.append("  masked")
            out += _table(self.masked, ql, kl, d)
            out.append("  e^-inf = 0, so a blocked key gets weight 0")
        else:
            out.append("Step 3. no mask, no bias, not causal: "
                       "masked = scaled")
        out.append("")

        # Step 4
        out.append(f"Step 4. weights = softmax(masked), row by row, shape "
                   f"({L}, {S})")
        out.append("  weights[i, j] = e^masked[i, j] / (sum over k of "
                   "e^masked[i, k])")
        # the example row: the first that sees two keys (or one, if S == 1)
        counts = np.count_nonzero(self.mask, axis=-1)
        rows = np.flatnonzero(counts >= min(2, S)) if S else np.array([], int)
        ex = int(rows[0]) if rows.size else None
        if ex is not None:
            i = ex
            x = self.masked[i].astype(np.float64)
            ks = [j for j in range(S) if self.mask[i, j]]
            top = max(x[j] for j in ks)
            shift = top if top > 30 else 0.0
            with np.errstate(all="ignore"):
                e = np.where(self.mask[i], np.exp(x - shift), 0.0)
            tot = float(np.sum(e))
            name = "e^" if shift == 0.0 else f"e^(-{_short(shift, d)})*e^"
            parts = [f"{name}{_short(x[j], d)} = {_fmt(e[j], d)}"
                     for j in ks[:6]]
            if len(ks) > 6:
                parts.append("...")
            blocked = S - len(ks)
            keys = "key" if blocked == 1 else "keys"
            note = (f" ({blocked} blocked {keys}: e^-inf = 0)" if blocked
                    else "")
            out.append(f"  e.g. row {i} ({ql[i]}): " + ", ".join(parts)
                       + f"; sum = {_fmt(tot, d)}{note}")
            out.append(f"    so weights[{i}] = " + ", ".join(
                f"{_fmt(e[j], d)}/{_fmt(tot, d)}" for j in ks[:4])
                + (", ..." if len(ks) > 4 else "")
                + (f", 0 for the blocked {keys}" if blocked else ""))
        sums = self.weights.astype(np.float64).sum(axis=-1)
        rs = [_fmt(s, d) for s in sums]
        out += _table(self.weights, ql, kl, d, extra=("row sum", rs))
        out += self._rowsum_lines(indent="  ")
        out.append("")

        # Step 5
        out.append(f"Step 5. output = weights @ V, shape ({L}, {Ev})")
        out.append("  output[i] = sum over j of weights[i, j] * V[j]: a blend "
                   "of the value rows")
        if ex is not None:
            i = ex
            js = [j for j in range(S) if self.weights[i, j] != 0][:6]
            terms = " + ".join(f"{_fmt(self.weights[i, j], d)} * V[{j}]"
                               for j in js)
            if len([j for j in range(S) if self.weights[i, j] != 0]) > 6:
                terms += " + ..."
            out.append(f"  e.g. output[{i}] = {terms}")
        out += _table(self.output, ql, vlabels, d)
        out.append("")
        some = ql[1] if L > 1 else (ql[0] if L else "0")
        hint = (f'trace.focus("{some}")' if self.tokens is not None
                else f"trace.focus({1 if L > 1 else 0})")
        out.append(f"{hint} writes one output row as a weighted sum of value "
                   "rows; trace.check(step, table) checks a table computed "
                   "by hand.")
        return "\n".join(out)

    # -- focus ------------------------------------------------------------

    def _query_index(self, query, who):
        L = self.weights.shape[-2]
        if isinstance(query, str):
            if self.tokens is None:
                raise ValueError(f"AttentionTrace.{who}: the trace has no "
                                 "tokens; give a query index")
            if query not in self.tokens:
                raise ValueError(f"AttentionTrace.{who}: no query token "
                                 f"{query!r}; the queries are "
                                 f"{self.tokens}")
            return self.tokens.index(query)
        if isinstance(query, (bool, np.bool_)) or not isinstance(
                query, (int, np.integer)):
            raise TypeError(f"AttentionTrace.{who}: query must be a token or "
                            f"an int index, not {type(query).__name__}")
        i = int(query)
        if not -L <= i < L:
            raise IndexError(f"AttentionTrace.{who}: query index {i} out of "
                             f"range for L={L} queries")
        return i % L

    def focus(self, query):
        """One output row written as the weighted sum of the value rows.

        Parameters
        ----------
        query : str or int
            A query token (its first occurrence) or a 0-based query index.

        Returns
        -------
        Focus
            Prints as ``output_i = w_1 * V_1 + w_2 * V_2 + ...`` with
            positions counted from 1 as in the tutorials; has attributes
            ``index`` (0-based), ``token``, ``weights``, ``terms``,
            ``output``.

        Examples
        --------
        The causal table of the GPT-2 walkthrough, whose scaled scores are
        given (so Q = table, K = I and scale = 1 reproduce them):

        >>> import numpy as np
        >>> from attnpy import explain
        >>> table = np.array([[1.0, 0.5, 2.0],
        ...                   [0.2, 1.1, 1.5],
        ...                   [0.3, 0.7, 1.2]])
        >>> trace = explain(table, np.eye(3), np.eye(3), causal=True,
        ...                 scale=1.0, tokens="The cat sat")
        >>> print(trace.focus("cat"))
        output for query "cat" (i = 2; Python index 1):
          output_2 = 0.289 * V_1 + 0.711 * V_2   (no contribution from V_3: masked)
            V_1 = V[0] "The" = [1.000, 0.000, 0.000]
            V_2 = V[1] "cat" = [0.000, 1.000, 0.000]
          output_2 = [0.289, 0.711, 0.000]
        """
        if self.batch_shape:
            raise ValueError("AttentionTrace.focus: the trace has leading "
                             f"dimensions {self.batch_shape}; index it first, "
                             "e.g. trace[0, 1].focus(...)")
        i = self._query_index(query, "focus")
        return Focus(self, i)

    # -- check ------------------------------------------------------------

    def check(self, step, expected, decimals=3, *, previous=None):
        """Compare a table computed by hand with the exact one.

        Each cell of `expected` that differs from the exact value by more
        than rounding at `decimals` (half a unit in the last decimal) is
        listed. A difference is *explained by hand rounding of
        intermediates* when the value can be reached by doing the step by
        hand at `decimals` decimals: every number written down on the way
        (the previous step's table, each product, each e^x) rounded down or
        up to `decimals`, as the tutorials do (000_ writes e^0.405 = 1.500,
        sums the rounded exponentials, and gets 0.330 where the exact weight
        is 0.32950).

        Parameters
        ----------
        step : {"scores", "scaled", "masked", "weights", "output"}
            Which table `expected` is.
        expected : array_like
            The hand-computed table, the shape of that step (None in a
            cell: not checked). ``-inf`` (or any value <= -1e9, the
            tutorials' fill) marks a blocked cell of "masked".
        decimals : int, optional
            The decimals the table was computed with (default 3).
        previous : array_like, optional
            Your own table of the step before (e.g. your weights when
            checking "output"), used as the start of the hand computation.

        Returns
        -------
        CheckReport
            ``ok`` (every cell exact to `decimals` or explained by hand
            rounding), ``differences`` (the cells that differ: expected,
            exact, diff, explained, hand range), and a readable str().

        Examples
        --------
        >>> import numpy as np
        >>> from attnpy import explain
        >>> X = np.array([[0.9, 0.3, 0.1, 0.5],
        ...               [0.1, 0.8, 0.4, 0.2],
        ...               [0.6, 0.1, 0.9, 0.3]])
        >>> trace = explain(X, X, X, tokens="the cat sat")
        >>> tutorial = [[0.393, 0.278, 0.330],
        ...             [0.307, 0.371, 0.321],
        ...             [0.318, 0.281, 0.401]]
        >>> report = trace.check("weights", tutorial)
        >>> report.ok, len(report.differences)
        (True, 1)
        >>> cell = report.differences[0]
        >>> cell.index, cell.expected, round(cell.exact, 5), cell.explained
        ((0, 2), 0.33, 0.3295, True)
        >>> tutorial[1][1] = 0.471               # a slip of the pen
        >>> trace.check("weights", tutorial).ok
        False
        """
        return _check(self, step, expected, decimals, previous)

    # -- HTML (notebooks) -------------------------------------------------

    def _repr_html_(self):
        """Heatmap tables of the scores and the weights (inline CSS only)."""
        return _trace_html(self)

    # -- matplotlib -------------------------------------------------------

    def plot(self, ax=None, *, cmap="Blues", annotate=None, title=None):
        """Draw the attention weights as a heatmap (needs matplotlib).

        Rows are queries, columns keys, labelled with the tokens; blocked
        cells are grey. With leading dimensions, one heatmap per head in a
        grid (rows: the leading dimensions but the last; columns: the last).

        Parameters
        ----------
        ax : matplotlib Axes or array of Axes, optional
            Where to draw; a new figure when omitted.
        cmap : str, optional
            A matplotlib colormap name (default "Blues").
        annotate : bool, optional
            Write the weights in the cells; default when the heatmap is at
            most 12 x 12 (8 x 8 per head in a grid).
        title : str, optional
            The title (default "attention weights").

        Returns
        -------
        (Figure, Axes) or (Figure, ndarray of Axes)

        Raises
        ------
        ImportError
            When matplotlib is not installed (``pip install attnpy[plot]``).
        """
        return _plot(self, ax, cmap, annotate, title)


# ---------------------------------------------------------------------------
# focus
# ---------------------------------------------------------------------------

class Focus:
    """One output row of a trace as the weighted sum of value rows.

    Made by :meth:`AttentionTrace.focus`. Attributes: ``index`` (0-based
    query index), ``token`` (or None), ``weights`` (the weights row, S),
    ``terms`` (list of ``(j, weight)`` for the keys that contribute, j
    0-based), ``values`` (V, (S, Ev)), ``output`` (the output row, Ev).
    """

    def __init__(self, trace, i):
        self.index = i
        self.token = None if trace.tokens is None else trace.tokens[i]
        self.weights = trace.weights[i]
        self.values = trace.V
        self.output = trace.output[i]
        self.fully_masked = bool(trace.fully_masked_rows[i])
        allowed = trace.mask[i]
        if self.fully_masked and trace.fully_masked == "uniform":
            self.terms = [(j, float(self.weights[j]))
                          for j in range(len(self.weights))]
        elif self.fully_masked:
            self.terms = []
        else:
            self.terms = [(j, float(self.weights[j]))
                          for j in range(len(self.weights)) if allowed[j]]
        self._blocked = [j for j in range(len(self.weights))
                         if not allowed[j]]
        self._policy = trace.fully_masked
        self._klabels = trace.key_tokens
        self._decimals = trace.decimals
        self._text = self._render()

    def _render(self):
        d = self._decimals
        i1 = self.index + 1
        who = (f'query "{self.token}" (i = {i1}; Python index {self.index})'
               if self.token is not None
               else f"query i = {i1} (Python index {self.index})")
        lines = [f"output for {who}:"]
        if self.fully_masked and not self.terms:
            lines.append(f"  output_{i1}: the query may attend to no key "
                         f"(fully masked); fully_masked="
                         f"{self._policy!r} gives "
                         + _vec(self.output, d))
            return "\n".join(lines)
        shown = self.terms[:8]
        rhs = " + ".join(f"{_fmt(w, d)} * V_{j + 1}" for j, w in shown)
        if len(self.terms) > 8:
            rhs += f" + ... ({len(self.terms)} terms)"
        if not self.terms:
            rhs = "0"
        note = ""
        if self._blocked and not self.fully_masked:
            names = ", ".join(f"V_{j + 1}" for j in self._blocked[:6])
            if len(self._blocked) > 6:
                names += ", ..."
            note = f"   (no contribution from {names}: masked)"
        if self.fully_masked:
            note = (f"   (fully masked: fully_masked={self._policy!r} "
                    "gives weights 1/S)")
        lines.append(f"  output_{i1} = {rhs}{note}")
        for j, _ in shown:
            lab = (f' "{self._klabels[j]}"' if self._klabels is not None
                   else "")
            lines.append(f"    V_{j + 1} = V[{j}]{lab} = "
                         f"{_vec(self.values[j], d)}")
        lines.append(f"  output_{i1} = {_vec(self.output, d)}")
        return "\n".join(lines)

    def __str__(self):
        return self._text

    __repr__ = __str__


# ---------------------------------------------------------------------------
# check: a hand-computed table against the exact one
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class CellDiff:
    """One cell of a hand-computed table that differs from the exact value.

    Attributes
    ----------
    index : tuple of int
        The cell (leading indices, row, column).
    row, col : str
        Labels of the row (query) and column (key or feature).
    expected : float
        Your value.
    exact : float
        The exact value (the C core's for weights/output).
    diff : float
        ``expected - exact``.
    explained : bool
        True when hand rounding of intermediates at `decimals` reaches
        `expected` (see :meth:`AttentionTrace.check`).
    hand : float
        The step done by hand from rounded numbers (rounding to nearest).
    hand_low, hand_high : float
        The range reachable by rounding each intermediate down or up.
    how : str
        The hand computation of this cell (rounding to nearest), written
        out.
    how_other : str
        When `expected` is explained but rounding to nearest does not give
        it: the same computation with the intermediates rounded the other
        way, which does ('' otherwise).
    """
    index: tuple
    row: str
    col: str
    expected: float
    exact: float
    diff: float
    explained: bool
    hand: float
    hand_low: float
    hand_high: float
    how: str
    how_other: str = ""


class CheckReport:
    """The result of :meth:`AttentionTrace.check`.

    Attributes
    ----------
    step : str
    decimals : int
    ok : bool
        Every checked cell equals the exact value to `decimals`, or its
        difference is explained by hand rounding of intermediates. Also
        ``bool(report)``.
    exact : bool
        Every checked cell equals the exact value to `decimals`.
    checked : int
        How many cells were compared.
    differences : list of CellDiff
        Every cell differing by more than rounding at `decimals`.
    wrong : list of CellDiff
        The differences hand rounding does not explain.
    explained : list of CellDiff
        The differences hand rounding explains.
    """

    def __init__(self, step, decimals, checked, differences, notes):
        self.step = step
        self.decimals = decimals
        self.checked = checked
        self.differences = differences
        self.wrong = [c for c in differences if not c.explained]
        self.explained = [c for c in differences if c.explained]
        self.ok = not self.wrong
        self.exact = not differences
        self.notes = notes

    def __bool__(self):
        return self.ok

    def __str__(self):
        d = self.decimals
        n = len(self.differences)
        lines = [f"check of {self.step!r} at {d} decimals: "
                 + ("OK" if self.ok else "NOT OK")]
        if not n:
            lines.append(f"  all {self.checked} cells equal the exact values "
                         f"at {d} decimals")
        else:
            bits = [f"{self.checked - n} of {self.checked} cells equal the "
                    f"exact values at {d} decimals"]
            if self.explained:
                k = len(self.explained)
                bits.append(f"{k} {'differs' if k == 1 else 'differ'} only "
                            "by hand rounding of intermediates")
            if self.wrong:
                k = len(self.wrong)
                bits.append(f"{k} {'is' if k == 1 else 'are'} wrong")
            lines.append("  " + "; ".join(bits))
            rows = [("cell", "row", "col", "expected", "exact", "diff")]
            for c in self.differences:
                rows.append((str(list(c.index)), c.row, c.col,
                             _fmt(c.expected, d), _fmt(c.exact, d + 2),
                             ("" if not math.isfinite(c.diff) else
                              f"{c.diff:+.{d + 2}f}")))
            w = [max(len(r[k]) for r in rows) for k in range(6)]

            def line(r):
                return "  " + "  ".join(r[k].ljust(w[k]) if k < 3 else
                                        r[k].rjust(w[k]) for k in range(6))
            lines.append(line(rows[0]) + "  verdict")
            for r, c in zip(rows[1:], self.differences):
                lines.append(line(r) + "  " + (
                    "explained by hand rounding of intermediates"
                    if c.explained else "WRONG: differs beyond rounding"))
                lines.append(f"      by hand: {c.how}")
                if c.how_other:
                    lines.append(f"      rounded the other way: "
                                 f"{c.how_other}")
                if math.isfinite(c.hand_low) and math.isfinite(c.hand_high):
                    lo, hi = _round(c.hand_low, d), _round(c.hand_high, d)
                    span = (_fmt(lo, d) if lo == hi
                            else f"{_fmt(lo, d)} .. {_fmt(hi, d)}")
                    lines.append(f"      hand rounding can give {span}; "
                                 f"exact {_fmt(c.exact, d)}")
        lines += ["  note: " + s for s in self.notes]
        return "\n".join(lines)

    def __repr__(self):
        return (f"<CheckReport {self.step!r} ok={self.ok} checked="
                f"{self.checked} differences={len(self.differences)}>")


def _round(x, d):
    """x rounded to d decimals the way a person does: halves away from 0.

    (np.round rounds halves to even and works on the binary value, so
    0.393 * 0.5 = 0.1965 would become 0.196; by hand it is 0.197.)
    """
    with np.errstate(all="ignore"):
        x = np.asarray(x, dtype=np.float64)
        t = np.abs(x) * 10.0 ** d
        r = np.floor(t + 0.5 + 1e-9 * np.maximum(1.0, t))
        out = np.copysign(r / 10.0 ** d, x)
        return np.where(np.isfinite(x), out, x)


def _down_up(x, d):
    """(x rounded down, x rounded up) to d decimals, x itself if exact there."""
    with np.errstate(all="ignore"):
        t = np.asarray(x, dtype=np.float64) * 10.0 ** d
        r = np.round(t)
        near = np.abs(t - r) <= 1e-9 * np.maximum(1.0, np.abs(t))
        lo = np.where(near, r, np.floor(t)) / 10.0 ** d
        hi = np.where(near, r, np.ceil(t)) / 10.0 ** d
        lo = np.where(np.isfinite(x), lo, x)
        hi = np.where(np.isfinite(x), hi, x)
    return lo, hi


def _hull(*arrays):
    """Elementwise min and max over arrays (NaN-ignoring where possible)."""
    st = np.stack(np.broadcast_arrays(*arrays))
    with np.errstate(all="ignore"):
        lo = np.min(st, axis=0)
        hi = np.max(st, axis=0)
    return lo, hi


def _prev_range(exact, hand, previous, d):
    """The range of a previous-step value as written down by hand."""
    dn, up = _down_up(exact, d)
    cands = [exact, dn, up, _round(hand, d)]
    if previous is not None:
        cands.append(_round(previous, d))
    return _hull(*cands)


def _hand_chain(tr, d):
    """Each step done by hand from the previous step rounded to d decimals."""
    f = np.float64
    Q, K = tr.Q.astype(f), tr.K.astype(f)
    with np.errstate(all="ignore"):
        prod = Q[..., :, None, :] * K[..., None, :, :]   # (..., L, S, E)
        scores = _round(prod, d).sum(axis=-1)
    chain = {"scores": scores}
    chain["scaled"] = _hand_scaled(tr, _round(scores, d))
    chain["masked"] = _hand_masked(tr, _round(chain["scaled"], d))
    chain["weights"] = _hand_weights(tr, _round(chain["masked"], d), d)
    chain["output"] = _hand_output(tr, _round(chain["weights"], d), d)
    return chain


def _hand_scaled(tr, scores_r):
    with np.errstate(all="ignore"):
        return scores_r * tr.scale


def _hand_masked(tr, scaled_r):
    with np.errstate(all="ignore"):
        b = 0.0 if tr.bias is None else tr.bias.astype(np.float64)
        return np.where(tr.mask, scaled_r + b, -np.inf)


def _exp_shift(x_hi_row_max):
    """Hand softmax uses e^x; with big scores, e^(x - max) instead."""
    return np.where(x_hi_row_max > 30, x_hi_row_max, 0.0)


def _hand_weights(tr, masked_r, d):
    exact = tr.weights.astype(np.float64)
    with np.errstate(all="ignore"):
        m = np.max(np.where(tr.mask, masked_r, -np.inf), axis=-1,
                   keepdims=True, initial=-np.inf)
        shift = _exp_shift(m)
        e = np.where(tr.mask, _round(np.exp(masked_r - shift), d), 0.0)
        w = e / e.sum(axis=-1, keepdims=True)
    fully = tr.fully_masked_rows[..., None]
    return np.where(fully | ~np.isfinite(w), exact, w)


def _hand_output(tr, weights_r, d):
    V = tr.V.astype(np.float64)
    with np.errstate(all="ignore"):
        t = _round(weights_r[..., :, :, None] * V[..., None, :, :], d)
        o = t.sum(axis=-2)
    fully = tr.fully_masked_rows[..., None]
    return np.where(fully, tr.output.astype(np.float64), o)


def _ranges(tr, step, d, chain, previous):
    """(low, high, hand) arrays of the step done by hand at d decimals."""
    f = np.float64
    with np.errstate(all="ignore"):
        if step == "scores":
            p = tr.Q.astype(f)[..., :, None, :] * tr.K.astype(f)[..., None, :, :]
            dn, up = _down_up(p, d)
            lo, hi = _hull(p, dn, up)
            return lo.sum(-1), hi.sum(-1), chain["scores"]
        if step == "scaled":
            slo, shi = _prev_range(tr.scores.astype(f), chain["scores"],
                                   previous, d)
            c_dn, c_up = _down_up(np.float64(tr.scale), d)
            clo, chi = min(tr.scale, c_dn), max(tr.scale, c_up)
            lo, hi = _hull(slo * clo, slo * chi, shi * clo, shi * chi)
            start = (chain["scores"] if previous is None else previous)
            return lo, hi, _hand_scaled(tr, _round(start, d))
        if step == "masked":
            slo, shi = _prev_range(tr.scaled.astype(f), chain["scaled"],
                                   previous, d)
            b = 0.0 if tr.bias is None else tr.bias.astype(f)
            lo = np.where(tr.mask, slo + b, -np.inf)
            hi = np.where(tr.mask, shi + b, -np.inf)
            start = chain["scaled"] if previous is None else previous
            return lo, hi, _hand_masked(tr, _round(start, d))
        if step == "weights":
            xlo, xhi = _prev_range(tr.masked.astype(f), chain["masked"],
                                   previous, d)
            m = np.max(np.where(tr.mask, xhi, -np.inf), axis=-1,
                       keepdims=True, initial=-np.inf)
            shift = _exp_shift(m)
            elo_x, ehi_x = np.exp(xlo - shift), np.exp(xhi - shift)
            a, _ = _down_up(elo_x, d)
            _, b = _down_up(ehi_x, d)
            elo = np.where(tr.mask, np.minimum(elo_x, a), 0.0)
            ehi = np.where(tr.mask, np.maximum(ehi_x, b), 0.0)
            slo = elo.sum(-1, keepdims=True)
            shi = ehi.sum(-1, keepdims=True)
            lo = elo / (elo + (shi - ehi))
            hi = ehi / (ehi + (slo - elo))
            lo = np.where(tr.mask, lo, 0.0)
            hi = np.where(tr.mask, hi, 0.0)
            exact = tr.weights.astype(f)
            fully = tr.fully_masked_rows[..., None] | ~np.isfinite(lo) \
                | ~np.isfinite(hi)
            lo = np.where(fully, exact, lo)
            hi = np.where(fully, exact, hi)
            start = chain["masked"] if previous is None else previous
            return lo, hi, _hand_weights(tr, _round(start, d), d)
        if step == "output":
            wlo, whi = _prev_range(tr.weights.astype(f), chain["weights"],
                                   previous, d)
            V = tr.V.astype(f)[..., None, :, :]            # (..., 1, S, Ev)
            p1 = wlo[..., :, :, None] * V
            p2 = whi[..., :, :, None] * V
            plo, phi = np.minimum(p1, p2), np.maximum(p1, p2)
            a, _ = _down_up(plo, d)
            _, b = _down_up(phi, d)
            zero = (wlo == 0) & (whi == 0)
            plo = np.where(zero[..., None], 0.0, np.minimum(plo, a))
            phi = np.where(zero[..., None], 0.0, np.maximum(phi, b))
            lo, hi = plo.sum(-2), phi.sum(-2)
            exact = tr.output.astype(f)
            fully = tr.fully_masked_rows[..., None] | ~np.isfinite(lo) \
                | ~np.isfinite(hi)
            lo = np.where(fully, exact, lo)
            hi = np.where(fully, exact, hi)
            start = chain["weights"] if previous is None else previous
            return lo, hi, _hand_output(tr, _round(start, d), d)
    raise AssertionError(step)


def _how(tr, step, idx, d, chain, previous, extreme=None):
    """The hand computation of one cell, written out, and its value.

    extreme None: every number rounded to nearest (the hand chain);
    "low" / "high": every number rounded the way that makes the cell
    smallest / largest (the ends of the range check() accepts).
    """
    *lead, i, j = idx
    lead = tuple(lead)
    f = np.float64
    prev_step = {"scaled": "scores", "masked": "scaled", "weights": "masked",
                 "output": "weights"}.get(step)
    if prev_step is not None:
        src = chain[prev_step] if previous is None else np.asarray(previous,
                                                                   f)
        near = _round(src, d)[lead][i]
        plo, phi = _prev_range(getattr(tr, prev_step).astype(f)[lead][i],
                               chain[prev_step][lead][i],
                               None if previous is None
                               else np.asarray(previous, f)[lead][i], d)

    def pick(k, up):
        """Previous value k: nearest, or the low/high end of its range."""
        if extreme is None:
            return near[k]
        return phi[k] if up else plo[k]

    def rnd(x, up):
        if extreme is None:
            return float(_round(x, d))
        lo_, hi_ = _down_up(x, d)
        return float(hi_ if up else lo_)

    hi = extreme == "high"
    with np.errstate(all="ignore"):
        if step == "scores":
            q, k = tr.Q[lead][i].astype(f), tr.K[lead][j].astype(f)
            t = [rnd(a * b, hi) for a, b in zip(q, k)]
            parts = [f"{_short(a, d)}*{_short(b, d)} = {_fmt(tk, d)}"
                     for a, b, tk in zip(q[:6], k[:6], t[:6])]
            if len(t) > 6:
                parts.append("...")
            val = float(sum(t))
            return ", ".join(parts) + f"; sum = {_fmt(val, d)}", val
        if step == "scaled":
            c_lo, c_hi = _down_up(f(tr.scale), d)
            combos = [(pick(j, u), c) for u in (False, True)
                      for c in (min(tr.scale, c_lo), max(tr.scale, c_hi))]
            if extreme is None:
                sv, c = near[j], tr.scale
            else:
                key = (lambda sc: sc[0] * sc[1])
                sv, c = (max if hi else min)(combos, key=key)
            val = float(sv * c)
            return (f"{_fmt(sv, d)} * {_short(c, d + 3)} = "
                    f"{_fmt(val, d + 1)}"), val
        if step == "masked":
            if not tr.mask[lead][i, j]:
                return "blocked: -inf", -np.inf
            sv = pick(j, hi)
            if tr.bias is None:
                return f"allowed: the scaled score {_fmt(sv, d)}", float(sv)
            b = float(tr.bias[lead][i, j])
            return (f"{_fmt(sv, d)} + bias {_fmt(b, d)} = "
                    f"{_fmt(sv + b, d + 1)}"), float(sv + b)
        if step == "weights":
            w_exact = float(tr.weights[lead][i, j])
            if tr.fully_masked_rows[lead][i]:
                return (f"fully masked row: fully_masked="
                        f"{tr.fully_masked!r} gives {_fmt(w_exact, d)}",
                        w_exact)
            allowed = tr.mask[lead][i]
            if not allowed[j]:
                return "blocked key: weight 0", 0.0
            ks = [k for k in range(len(allowed)) if allowed[k]]
            x = {k: pick(k, hi == (k == j)) for k in ks}
            m = max(np.max(np.where(allowed, phi, -np.inf)), 0.0)
            shift = float(_exp_shift(m))
            e = {k: rnd(math.exp(x[k] - shift), hi == (k == j)) for k in ks}
            nm = "e^" if shift == 0 else f"e^-{_short(shift, d)}*e^"
            parts = [f"{nm}{_short(x[k], d)} = {_fmt(e[k], d)}"
                     for k in ks[:6]]
            if len(ks) > 6:
                parts.append("...")
            tot = float(sum(e.values()))
            val = e[j] / tot if tot > 0 else w_exact
            return (", ".join(parts) + f"; sum = {_fmt(tot, d)}; "
                    f"{_fmt(e[j], d)}/{_fmt(tot, d)} = {_fmt(val, d + 1)}",
                    val)
        if step == "output":
            o_exact = float(tr.output[lead][i, j])
            if tr.fully_masked_rows[lead][i]:
                return (f"fully masked row: fully_masked="
                        f"{tr.fully_masked!r} gives {_fmt(o_exact, d)}",
                        o_exact)
            v = tr.V[lead][:, j].astype(f)
            ks = [k for k in range(len(v)) if not (plo[k] == 0 == phi[k])]
            w = {k: pick(k, hi == (v[k] >= 0)) for k in ks}
            t = {k: rnd(w[k] * v[k], hi) for k in ks}
            parts = [f"{_fmt(w[k], d)}*{_short(v[k], d)} = {_fmt(t[k], d)}"
                     for k in ks[:6]]
            if len(ks) > 6:
                parts.append("...")
            val = float(sum(t.values()))
            return ", ".join(parts) + f"; sum = {_fmt(val, d)}", val
    raise AssertionError(step)


def _expected_array(expected, shape, step):
    """(values as float64, checked-cell mask) from a nested list/array."""
    obj = np.array(expected, dtype=object)
    if obj.shape != shape:
        raise ValueError(f"AttentionTrace.check: expected has shape "
                         f"{obj.shape} but the {step!r} table has shape "
                         f"{shape}")
    given = np.vectorize(lambda v: v is not None, otypes=[bool])(obj) \
        if obj.size else np.zeros(shape, bool)
    try:
        vals = np.where(given, obj, np.nan).astype(np.float64)
    except (TypeError, ValueError):
        raise TypeError("AttentionTrace.check: expected must hold numbers "
                        "(or None for cells not checked)") from None
    return vals, given


def _check(tr, step, expected, decimals, previous):
    if step not in STEPS:
        raise ValueError(f"AttentionTrace.check: step must be one of {STEPS},"
                         f" not {step!r}")
    if isinstance(decimals, bool) or not isinstance(decimals,
                                                    (int, np.integer)):
        raise TypeError("AttentionTrace.check: decimals must be an int")
    if not 0 <= decimals <= 12:
        raise ValueError("AttentionTrace.check: decimals must be in 0..12")
    d = int(decimals)
    exact = getattr(tr, step).astype(np.float64)
    vals, given = _expected_array(expected, exact.shape, step)
    if previous is not None:
        if step == "scores":
            raise ValueError("AttentionTrace.check: 'scores' is the first "
                             "step; it has no previous table")
        pstep = STEPS[STEPS.index(step) - 1]
        pshape = getattr(tr, pstep).shape
        previous, pgiven = _expected_array(previous, pshape, pstep)
        previous = np.where(pgiven, previous,
                            getattr(tr, pstep).astype(np.float64))
    chain = _hand_chain(tr, d)
    lo, hi, hand = _ranges(tr, step, d, chain, previous)
    half = 0.5 * 10.0 ** -d
    with np.errstate(all="ignore"):
        eps = 1e-9 * np.maximum(1.0, np.abs(exact))
        tol = half + eps
        finite = np.isfinite(exact)
        match = np.where(finite, np.abs(vals - exact) <= tol,
                         (vals == exact) | (np.isnan(vals) & np.isnan(exact)))
        if step == "masked":                        # -1e9 fills blocked cells
            match |= np.isneginf(exact) & (vals <= -1e9)
        explained = (finite & np.isfinite(lo) & np.isfinite(hi)
                     & (vals >= lo - tol) & (vals <= hi + tol))
    ql = _labels(tr.tokens, tr.weights.shape[-2])
    cl = (_labels(tr.key_tokens, tr.weights.shape[-1]) if step != "output"
          else [str(k) for k in range(tr.output.shape[-1])])
    diffs = []
    for idx in zip(*np.nonzero(given & ~match)):
        idx = tuple(int(k) for k in idx)
        e, x = float(vals[idx]), float(exact[idx])
        with np.errstate(all="ignore"):
            diff = e - x
        how, hv = _how(tr, step, idx, d, chain, previous)
        other = ""
        if explained[idx] and not abs(e - hv) <= tol[idx]:
            other, _ = _how(tr, step, idx, d, chain, previous,
                            extreme="high" if e > hv else "low")
        diffs.append(CellDiff(
            index=idx, row=ql[idx[-2]], col=cl[idx[-1]], expected=e, exact=x,
            diff=diff, explained=bool(explained[idx]), hand=float(hand[idx]),
            hand_low=float(lo[idx]), hand_high=float(hi[idx]),
            how=how, how_other=other))
    notes = []
    if step == "weights":
        with np.errstate(all="ignore"):
            rs = np.where(given, vals, 0.0).sum(-1)
        full = given.all(-1) & ~tr.fully_masked_rows
        bad = full & (np.abs(rs - 1.0) > 10.0 ** -d * given.shape[-1])
        for idx in zip(*np.nonzero(bad)):
            idx = tuple(int(k) for k in idx)
            notes.append(f"row {list(idx)} of your table sums to "
                         f"{_fmt(rs[idx], d)}, not 1")
    return CheckReport(step, d, int(np.count_nonzero(given)), diffs, notes)


# ---------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------

_CELL = ("padding:2px 6px;text-align:right;font-family:monospace;"
         "font-size:12px;border:1px solid #ffffff;")
_HEAD = ("padding:2px 6px;font-family:monospace;font-size:12px;"
         "font-weight:bold;color:#333333;")
_GREY = "background-color:#e6e6e6;color:#9a9a9a;"


def _blue(t):
    """Background/foreground CSS for t in [0, 1] on a white-to-blue scale."""
    t = min(1.0, max(0.0, float(t)))
    lo, hi = (247, 251, 255), (8, 48, 107)
    r, g, b = (round(a + (c - a) * t) for a, c in zip(lo, hi))
    fg = "#ffffff" if t > 0.55 else "#111111"
    return f"background-color:rgb({r},{g},{b});color:{fg};"


def _html_table(a, row_labels, col_labels, d, *, cls, blocked=None,
                lo=None, hi=None, caption=None, extra=None, text=None):
    """A heatmap <table>: one <td class=cls> per cell of the 2-D array a."""
    e = html.escape
    a = np.asarray(a, dtype=np.float64)
    nr, nc = a.shape
    if lo is None or hi is None:
        ok = np.isfinite(a) if blocked is None else np.isfinite(a) & ~blocked
        lo = float(np.min(a[ok])) if ok.any() else 0.0
        hi = float(np.max(a[ok])) if ok.any() else 1.0
    span = (hi - lo) or 1.0
    out = ['<table style="border-collapse:collapse;margin:4px 16px 4px 0;">']
    if caption:
        out.append('<caption style="caption-side:top;text-align:left;'
                   f'font-size:12px;color:#333333;">{e(caption)}</caption>')
    out.append(f'<thead><tr><th style="{_HEAD}"></th>')
    for c in col_labels:
        out.append(f'<th style="{_HEAD}">{e(c)}</th>')
    if extra is not None:
        out.append(f'<th style="{_HEAD}">{e(extra[0])}</th>')
    out.append("</tr></thead><tbody>")
    for r in range(nr):
        out.append(f'<tr><th style="{_HEAD}text-align:left;">'
                   f'{e(row_labels[r])}</th>')
        for c in range(nc):
            v = a[r, c]
            is_blocked = blocked is not None and bool(blocked[r, c])
            label = text(r, c) if text is not None else _fmt(v, d)
            if is_blocked:
                style = _CELL + _GREY
                klass = f"{cls} attnpy-blocked"
            elif math.isfinite(v):
                style = _CELL + _blue((v - lo) / span)
                klass = cls
            else:
                style = _CELL + "background-color:#fff3cd;color:#7a5b00;"
                klass = cls
            out.append(f'<td class="{klass}" style="{style}" '
                       f'title="[{r}, {c}] = {e(repr(float(v)))}">'
                       f'{e(label)}</td>')
        if extra is not None:
            out.append(f'<td class="attnpy-extra" style="{_CELL}color:#555555;'
                       f'border-left:2px solid #cccccc;">{e(extra[1][r])}'
                       '</td>')
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _trace_tables(tr):
    d = tr.decimals
    ql, kl = tr._qlabels(), tr._klabels()
    blocked = ~tr.mask
    sc = (f"scaled scores: Q K^T * {_short(tr.scale, d + 3)}"
          + (" + bias" if tr.bias is not None else "")
          + ("; grey = blocked (-inf)" if blocked.any() else ""))
    masked = tr.masked

    def stext(r, c):
        return "-inf" if blocked[r, c] else _fmt(masked[r, c], d)

    scores = _html_table(masked, ql, kl, d, cls="attnpy-s", blocked=blocked,
                         caption=sc, text=stext)
    sums = tr.weights.astype(np.float64).sum(axis=-1)
    weights = _html_table(tr.weights, ql, kl, d, cls="attnpy-w",
                          blocked=blocked, lo=0.0, hi=1.0,
                          caption="weights = softmax(scaled scores), rows: "
                                  "queries, columns: keys",
                          extra=("row sum", [_fmt(s, d) for s in sums]))
    return ('<div style="display:flex;flex-wrap:wrap;align-items:flex-start;">'
            + scores + weights + "</div>")


def _trace_html(tr):
    L, S, E, Ev = tr._dims()
    e = html.escape
    parts = ['<div class="attnpy-trace" style="font-family:sans-serif;">']
    head = (f"AttentionTrace: L = {L} queries, S = {S} keys, E = {E}, "
            f"Ev = {Ev}, {tr.dtype}, scale = {_short(tr.scale, 6)}")
    if tr.causal:
        head += f", causal ({tr.causal})"
    parts.append(f'<div style="font-size:13px;margin:2px 0;">{e(head)}</div>')
    if not tr.batch_shape:
        parts.append(_trace_tables(tr))
    else:
        idxs = list(np.ndindex(*tr.batch_shape))
        shown = idxs[:8]
        parts.append('<div style="font-size:12px;color:#555555;">'
                     f'leading dimensions {e(str(tr.batch_shape))}: weights '
                     f'of {len(shown)} of {len(idxs)} shown; index the trace '
                     '(trace[0, 1]) for one in full</div>')
        parts.append('<div style="display:flex;flex-wrap:wrap;">')
        for idx in shown:
            sub = tr[idx]
            parts.append(_html_table(
                sub.weights, sub._qlabels(), sub._klabels(), tr.decimals,
                cls="attnpy-w", blocked=~sub.mask, lo=0.0, hi=1.0,
                caption=f"trace{list(idx)}.weights"))
        parts.append("</div>")
    parts.append("</div>")
    return "".join(parts)


# ---------------------------------------------------------------------------
# show(): masks and small arrays in a notebook
# ---------------------------------------------------------------------------

class ArrayView:
    """A mask or a small array drawn as a labelled table (see :func:`show`).

    ``_repr_html_`` gives the notebook table, ``str()`` a text table.
    Attributes: ``array``, ``tokens``, ``decimals``, ``is_mask``.
    """

    def __init__(self, array, tokens=None, decimals=3):
        a = np.asarray(array)
        if a.dtype.kind not in "biuf":
            raise TypeError(f"show: cannot show an array of dtype {a.dtype}")
        self.array = a
        self.tokens = _split_tokens(tokens, "tokens")
        self.decimals = decimals
        self.is_mask = a.dtype == bool or (
            a.size > 0 and bool(np.all((a == 0) | (a == 1))))

    def _panels(self):
        """[(title, 2-D array, row labels, col labels)]."""
        a = self.array
        if a.ndim == 0:
            a = a.reshape(1, 1)
        if a.ndim == 1:
            a = a.reshape(1, -1)
        if a.ndim == 2:
            panels = [("", a)]
        elif a.shape[-2] == 1:      # e.g. padding_mask: (B, 1, 1, S)
            lead = a.shape[:-2]
            rows = a.reshape(-1, a.shape[-1])
            labels = [str(list(i)) for i in np.ndindex(*lead)]
            return [(f"one row per leading index {lead}", rows, labels,
                     self._cols(a.shape[-1]))]
        else:
            panels = [(str(list(i)), a[i]) for i in
                      list(np.ndindex(*a.shape[:-2]))[:16]]
        out = []
        for title, p in panels:
            out.append((title, p, self._rows(p.shape[0]),
                        self._cols(p.shape[1])))
        return out

    def _rows(self, n):
        t = self.tokens
        if t is not None and len(t) == n:
            return list(t)
        if t is not None and len(t) > n and len(t) == self.array.shape[-1]:
            return list(t[len(t) - n:])
        return [str(i) for i in range(n)]

    def _cols(self, n):
        t = self.tokens
        return list(t) if t is not None and len(t) == n else \
            [str(i) for i in range(n)]

    def __str__(self):
        a = self.array
        kind = "mask (1 = may attend)" if self.is_mask else str(a.dtype)
        lines = [f"{kind}, shape {a.shape}"]
        for title, p, rl, cl in self._panels():
            if title:
                lines.append(title)
            vals = p.astype(np.float64)
            lines += _table(vals, rl, cl, 0 if self.is_mask else
                            self.decimals)
        if a.ndim > 2 and a.shape[-2] != 1 and \
                int(np.prod(a.shape[:-2])) > 16:
            lines.append("... (first 16 shown)")
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self):
        a = self.array
        e = html.escape
        kind = ("mask: 1 = may attend, grey 0 = blocked" if self.is_mask
                else f"{a.dtype}")
        parts = ['<div class="attnpy-show" style="font-family:sans-serif;">',
                 f'<div style="font-size:12px;color:#333333;">{e(kind)}, '
                 f'shape {e(str(a.shape))}</div>',
                 '<div style="display:flex;flex-wrap:wrap;">']
        for title, p, rl, cl in self._panels():
            if self.is_mask:
                vals = (p != 0).astype(np.float64)
                parts.append(_html_table(
                    vals, rl, cl, 0, cls="attnpy-m", blocked=vals == 0,
                    lo=0.0, hi=2.5, caption=title or None,
                    text=lambda r, c, v=vals: "1" if v[r, c] else "0"))
            else:
                parts.append(_html_table(p.astype(np.float64), rl, cl,
                                         self.decimals, cls="attnpy-a",
                                         caption=title or None))
        parts.append("</div></div>")
        return "".join(parts)


def show(mask_or_array, tokens=None, *, decimals=3):
    """Show a mask (or any small array) as a labelled table in a notebook.

    Masks from :func:`attnpy.causal_mask`, :func:`attnpy.padding_mask` and
    ``np.tril`` show 1 where a query may attend and a grey 0 where it may
    not; other arrays show as a heatmap. In a terminal, print it.

    Parameters
    ----------
    mask_or_array : array_like
        1-D, 2-D, or with leading dimensions (one table per leading index;
        shapes like (B, 1, 1, S) are one table with a row per index).
    tokens : str or sequence of str, optional
        Labels of the columns (keys) and, when they fit, of the rows.
    decimals : int, optional
        Decimals for non-mask arrays (default 3).

    Returns
    -------
    ArrayView
        Has ``_repr_html_`` (notebook) and a text ``str()``.

    Examples
    --------
    >>> import numpy as np
    >>> from attnpy import show
    >>> print(show(np.tril(np.ones((3, 3))), tokens="the cat sat"))
    mask (1 = may attend), shape (3, 3)
           the  cat  sat
      the    1    0    0
      cat    1    1    0
      sat    1    1    1
    """
    return ArrayView(mask_or_array, tokens, decimals)


# ---------------------------------------------------------------------------
# matplotlib
# ---------------------------------------------------------------------------

def _import_pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("AttentionTrace.plot needs matplotlib, which is not "
                          "installed: pip install attnpy[plot]") from exc
    return plt


def _draw(ax, tr, cmap, annotate, d, *, fontsize=9, xlabel=True,
          ylabel=True):
    import matplotlib
    cm = matplotlib.colormaps[cmap].with_extremes(bad="#d9d9d9")
    data = np.ma.masked_array(tr.weights.astype(np.float64), mask=~tr.mask)
    im = ax.imshow(data, cmap=cm, vmin=0.0, vmax=1.0, aspect="equal")
    L, S = tr.weights.shape
    ax.set_xticks(range(S), tr._klabels())
    ax.set_yticks(range(L), tr._qlabels())
    klabels = tr._klabels()
    if S > 8 or max((len(k) for k in klabels), default=0) > 5:
        ax.tick_params(axis="x", labelrotation=45)
    if xlabel:
        ax.set_xlabel("key")
    if ylabel:
        ax.set_ylabel("query")
    if annotate:
        for i in range(L):
            for j in range(S):
                w = float(tr.weights[i, j])
                if not tr.mask[i, j]:
                    color = "#9a9a9a"
                else:
                    color = "white" if w > 0.55 else "black"
                ax.text(j, i, _fmt(w, d), ha="center", va="center",
                        color=color, fontsize=fontsize)
    return im


def _plot(tr, ax, cmap, annotate, title):
    plt = _import_pyplot()
    d = tr.decimals
    L, S = tr.weights.shape[-2:]
    if not tr.batch_shape:
        if annotate is None:
            annotate = L <= 12 and S <= 12
        if ax is None:
            fig, ax = plt.subplots(figsize=(1.6 + 0.75 * max(S, 3),
                                            1.0 + 0.6 * max(L, 3)))
        else:
            fig = ax.figure
        im = _draw(ax, tr, cmap, annotate, d)
        fig.colorbar(im, ax=ax, label="weight", shrink=0.8)
        ax.set_title(title or "attention weights")
        return fig, ax
    bs = tr.batch_shape
    idxs = list(np.ndindex(*bs))
    n = len(idxs)
    if len(bs) >= 2:
        ncols = max(bs[-1], 1)
        nrows = max(n // ncols, 1)
    else:
        ncols = max(min(n, 4), 1)
        nrows = max(-(-n // ncols), 1)
    if annotate is None:
        annotate = L <= 5 and S <= 5
    if ax is None:
        side = 0.9 + 0.35 * max(S, L, 4)
        fig, axes = plt.subplots(nrows, ncols, squeeze=False,
                                 figsize=(1.2 + side * ncols,
                                          0.8 + side * nrows))
    else:
        flat_given = list(np.asarray(ax, dtype=object).flat)
        if len(flat_given) < n:
            raise ValueError(f"AttentionTrace.plot: {n} heads but only "
                             f"{len(flat_given)} axes given")
        if len(flat_given) == nrows * ncols:
            axes = np.asarray(flat_given, dtype=object).reshape(nrows, ncols)
        else:
            axes = np.asarray(flat_given, dtype=object).reshape(1, -1)
        fig = axes.flat[0].figure
    flat = list(axes.flat)
    im = None
    ncol_grid = axes.shape[1]
    for k, idx in enumerate(idxs):
        r, c = divmod(k, ncol_grid)
        im = _draw(flat[k], tr[idx], cmap, annotate, min(d, 2), fontsize=7,
                   xlabel=r == axes.shape[0] - 1 or k + ncol_grid >= n,
                   ylabel=c == 0)
        flat[k].set_title(f"head {idx[0]}" if len(bs) == 1
                          else f"[{', '.join(str(v) for v in idx)}]",
                          fontsize=10)
    for extra_ax in flat[n:]:
        extra_ax.set_axis_off()
    if im is not None:
        fig.colorbar(im, ax=list(axes.flat), label="weight", shrink=0.8)
    fig.suptitle(title or "attention weights per head")
    return fig, axes


# ---------------------------------------------------------------------------
# the tutorials' examples and the command line
# ---------------------------------------------------------------------------

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
    >>> from attnpy._trace import cli
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
