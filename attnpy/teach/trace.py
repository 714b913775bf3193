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
           (with the variants: ``capped + bias + alibi``,
           ``capped = softcap * tanh(scaled / softcap)``,
           ``alibi = -slope * |i' - j|``, window cells blocked)
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
from __future__ import annotations

import inspect
import math
from typing import Optional, Sequence, Union

import numpy as np

from .._types import ArrayLike, Causal, FullyMasked, Window

from .text import STEPS, _labels, _split_tokens
from .walk import Focus, rowsum_lines, summary, walkthrough
from .handcheck import _check
from .html import _trace_html
from .plot import _plot


def explain(Q: ArrayLike, K: ArrayLike, V: ArrayLike,
            mask: Optional[ArrayLike] = None, *,
            bias: Optional[ArrayLike] = None, causal: Causal = False,
            scale: Optional[float] = None,
            tokens: Union[str, Sequence[str], None] = None,
            key_tokens: Union[str, Sequence[str], None] = None,
            fully_masked: FullyMasked = "zero", enable_gqa: bool = False,
            window: Window = None, alibi_slopes: Optional[ArrayLike] = None,
            softcap: Optional[float] = None) -> AttentionTrace:
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
{variants}
    With `enable_gqa` the trace holds K and V repeated for every query head
    (its backward's dK, dV are per query head: sum each group for the
    gradients of the shared heads).

    Returns
    -------
    AttentionTrace
        ``.scores``, ``.scale``, ``.scaled``, ``.masked``, ``.weights``,
        ``.output``, ``.mask`` (the boolean allowed matrix), ``.tokens``;
        with the variants ``.capped`` (soft-capped scaled scores) and
        ``.alibi`` (the ALiBi term ``-slope * |i' - j|``).
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

    The variants add their steps to the walk-through: here soft-capping
    at 0.5 and an ALiBi slope of 1 (one head):

    >>> trace = explain(X[None], X[None], X[None], softcap=0.5,
    ...                 alibi_slopes=[1.0], causal=True)
    >>> trace.capped[0].round(3)
    array([[0.411, 0.219, 0.335],
           [0.219, 0.346, 0.254],
           [0.335, 0.254, 0.427]])
    >>> trace.alibi[0]
    array([[ 0., -1., -2.],
           [-1.,  0., -1.],
           [-2., -1.,  0.]])
    >>> print(trace[0])                  # doctest: +ELLIPSIS
    Attention, step by step...
    Step 2b. capped = softcap * tanh(scaled / softcap), softcap = 0.5: ...
    Step 3. masked = capped + alibi where query i may attend to key j, ...
    """
    from .. import _core, _variants
    Qa, Ka, Va = np.asarray(Q), np.asarray(K), np.asarray(V)
    if enable_gqa:          # K, V repeated for each query head: plain tables
        v = _variants.Gqa("explain", Qa, Ka, Va)
        Ka, Va = (np.repeat(a, v.g, axis=-3) for a in (v.K0, v.V0))
        v.heads(mask, "mask"), v.heads(bias, "bias")   # Hq (or 1) heads
        v.heads(alibi_slopes, "alibi_slopes", -1)
    # The one C call: the same kernels (and bits) as the public functions,
    # plus the raw scores Q K^T. It validates every argument.
    try:
        out, weights, scores = _core.sdpa(
            Qa, Ka, Va, mask=mask, bias=bias, causal=causal, scale=scale,
            fully_masked=fully_masked, fname="explain",
            variants=(window, alibi_slopes, softcap), return_scores=True)
    except ValueError as exc:     # under GQA: the caller's K, V, not repeats
        raise (v.repeats_named(exc, Ka, Va) if enable_gqa else exc) from None
    # the steps in the compute dtype (the scores'): float32 for 16-bit
    # inputs, whose weights and output keep the result's 16-bit dtype
    dtype = scores.dtype
    batch = weights.shape[:-2]
    L, S = weights.shape[-2:]
    E = Qa.shape[-1]

    if scale is None:
        scale = 1.0 / math.sqrt(E) if E > 0 else 1.0
        scale_how = "default"
    else:
        scale_how = "given"
    scale = float(scale)

    # Which cells may attend: the mask, the causal rule, the window, and a
    # -inf bias.
    allowed = np.ones((L, S), dtype=bool)
    if isinstance(causal, str):
        causal_mode = causal
    else:
        causal_mode = "top_left" if causal else None
    i = np.arange(L)[:, None] + (S - L if causal_mode == "bottom_right"
                                 else 0)           # i', the query's position
    j = np.arange(S)[None, :]
    if causal_mode is not None:
        allowed = allowed & (j <= i)
    if window is not None:
        left, right = (S + L if w is None else min(int(w), S + L)
                       for w in window)
        allowed = allowed & (j >= i - left) & (j <= i + right)
    if mask is not None:
        allowed = allowed & (np.asarray(mask) != 0)
    scores = np.broadcast_to(scores, batch + (L, S))
    with np.errstate(all="ignore"):
        scaled = scores * dtype.type(scale)
        pre = capped = None
        if softcap is not None:
            cap = dtype.type(softcap)
            pre = capped = (cap * np.tanh(scaled / cap)).astype(dtype)
        else:
            pre = scaled
        b = None
        if bias is not None:
            b = np.asarray(bias).astype(dtype)
            allowed = allowed & ~np.isneginf(b)
            pre = pre + b
        alibi = None
        if alibi_slopes is not None:
            slopes = np.asarray(alibi_slopes).astype(dtype)[..., None, None]
            alibi = np.broadcast_to(0 - slopes * np.abs(i - j).astype(dtype),
                                    batch + (L, S))
            pre = pre + alibi
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
        capped=None if capped is None else keep(capped, (L, S)),
        alibi=None if alibi is None else keep(alibi, (L, S)),
        softcap=None if softcap is None else float(softcap),
        window=None if window is None else tuple(window),
        tokens=qt, key_tokens=kt, causal=causal_mode,
        has_mask=mask is not None, fully_masked=fully_masked,
        scale_how=scale_how, same_qkv=_same(Qa, Ka, Va),
    )


_PRIVATE = object()
# the trace's tables ("fully": fully_masked_rows)
_ARRAYS = ("Q", "K", "V", "scores", "scaled", "masked", "weights", "output",
           "mask", "fully", "bias", "capped", "alibi")


def _same(Q, K, V):
    """True when Q, K and V hold the same numbers (self-attention on X)."""
    try:
        return (Q.shape == K.shape == V.shape
                and np.array_equal(Q, K, equal_nan=True)
                and np.array_equal(Q, V, equal_nan=True))
    except TypeError:
        return False


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
        elsewhere: the input of the softmax (with the variants,
        ``capped + bias + alibi``).
    capped : ndarray, (..., L, S) or None
        ``softcap * tanh(scaled / softcap)`` when soft-capping.
    alibi : ndarray, (..., L, S) or None
        The ALiBi term ``-slope * |i' - j|``.
    softcap : float or None
    window : (left, right) or None
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

    Parameters
    ----------
    None
        An AttentionTrace is made by :func:`explain`; calling the class
        raises TypeError.

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> t = attnpy.explain(X, X, X, tokens="a b")
    >>> t.weights.round(3)
    array([[0.67, 0.33],
           [0.33, 0.67]])
    >>> t.batch_shape
    ()
    """

    # what help() and inspect show: the trace is made by explain only
    __signature__ = inspect.Signature()

    def __init__(self, *, _key=None, **fields):
        if _key is not _PRIVATE:
            raise TypeError("AttentionTrace is made by attnpy.explain(Q, K, V, "
                            "...), not directly")
        for name in _ARRAYS:
            a = fields[name]
            if a is not None:
                a = np.asarray(a)
                a.setflags(write=False)
            setattr(self, name if name != "fully" else "fully_masked_rows", a)
        self.scale = fields["scale"]
        self.softcap = fields["softcap"]
        self.window = fields["window"]
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
                    capped=self.capped, alibi=self.alibi,
                    softcap=self.softcap, window=self.window,
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
        for name in _ARRAYS:
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
        return summary(self)

    def _rowsum_lines(self, indent):
        return rowsum_lines(self, indent)

    def _walkthrough(self):
        return walkthrough(self)

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
            A query token (its first occurrence; the text names the
            others) or a 0-based query index.

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
        also = ([k for k, t in enumerate(self.tokens) if t == query and k != i]
                if isinstance(query, str) else [])
        return Focus(self, i, also)

    # -- check ------------------------------------------------------------

    def check(self, step, expected, decimals=None, *, previous=None):
        """Compare a table computed by hand with the exact one.

        Each cell of `expected` that differs from the exact value by more
        than rounding at `decimals` (half a unit in the last decimal) is
        listed. A difference is *explained by hand rounding of
        intermediates* when doing the step by hand at `decimals` decimals
        gives it: every number written down on the way (the previous
        step's table, each product, each e^x) rounded to nearest, or one of
        them rounded the other way, as the tutorials do (e^0.405 = 1.4993
        written as 1.500 gives 1.500 / 4.551 = 0.330 where the exact weight
        is 0.32950). Every difference comes with the hand computation.

        Parameters
        ----------
        step : {"scores", "scaled", "masked", "weights", "output"}
            Which table `expected` is.
        expected : array_like
            The hand-computed table, the shape of that step (None in a
            cell: not checked). ``-inf`` (or any value <= -1e9, the
            tutorials' fill) marks a blocked cell of "masked".
        decimals : int, optional
            The decimals the table was computed with; by default read off
            the table (the most decimals any cell shows: 0.29 has 2).
        previous : array_like, optional
            Your own table of the step before (e.g. your weights when
            checking "output"). It is checked first (its report is
            ``report.previous``, and the report is not OK when it is not);
            its right cells are the start of the hand computation, its
            wrong ones are replaced by the exact values.

        Returns
        -------
        CheckReport
            ``ok`` (every cell exact to `decimals` or explained by hand
            rounding, and the previous table OK), ``differences`` (the cells that differ: expected,
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

    # -- backward ---------------------------------------------------------

    def backward(self, d_output):
        """The backward pass of this call, step by step.

        Parameters
        ----------
        d_output : array_like, the output's shape
            The gradient of a loss with respect to the output.

        Returns
        -------
        BackwardTrace
            ``.dV``, ``.dP``, ``.D``, ``.dS``, ``.dQ``, ``.dK``; print it
            for the steps with their formulas and cells worked by hand,
            ``check(step, table)`` to check a table of yours.

        Examples
        --------
        >>> import numpy as np, attnpy
        >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        >>> bw = attnpy.explain(X, X, X, causal=True).backward(np.ones((3, 2)))
        >>> bool(np.abs(bw.dS.sum(axis=-1)).max() < 1e-12)  # rows sum to 0
        True
        >>> print(bw)                               # doctest: +ELLIPSIS
        Backward pass: d_output = dLoss/d(output) given, shape (3, 2); ...
        Step 1. dV = weights^T @ d_output, shape (3, 2)
        ...
          by hand: dS[...] = weights * (dP - D) = ...
        ...
        """
        from .backward import backward
        return backward(self, d_output)

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
            When matplotlib is not installed (``pip install "attnpy[plot]"``).
        """
        return _plot(self, ax, cmap, annotate, title)


def _document_variants():
    from .._attention import document_variants
    document_variants(explain)


_document_variants()
