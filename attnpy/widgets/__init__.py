"""attnpy.widgets: the interactive attention figures for notebooks.

- :func:`playground`: six keys in a plane, a query you drag, the weights.
- :func:`attention_matrix`: the attention matrix of a short sentence.
- :func:`head_view`: a model's attention weights, layer by layer, head by
  head.

They are anywidget widgets (needs ``pip install "attnpy[widget]"``; the
front ends tested are listed in the guide). In a kernel every number the
first two show is computed by :func:`attnpy.explain`, and computed in the
browser with the same formulas (and said so) while the kernel has not
answered for the state drawn; ``save_html`` writes a page that runs those
formulas in the browser, with no kernel and no network. This module
imports anywidget only when a figure is made.
"""
import math

import numpy as np

from . import _model


def _classes():
    from . import _widgets as w      # imports anywidget (or says how to get it)
    return w


def _size(fn, size, default):
    if size is None:
        return default
    if isinstance(size, bool) or not isinstance(size, (int, float)) or not 200 <= size <= 4000:
        raise ValueError(f"{fn}: size must be a width in pixels, 200..4000, got {size!r}")
    return int(size)


def _circle(n):
    """n key positions round a circle of radius 2.8 (used when n != 6)."""
    a = 2 * math.pi * np.arange(n) / n + 0.35
    return np.round(2.8 * np.stack([np.cos(a), np.sin(a)], axis=1), 2)


def playground(tokens=_model.TOKENS, keys=None, query=(1.0, 0.5), *,
               scaled=True, dim=2, size=None):
    """The query/key plane: drag a query and watch the attention weights.

    Keys are points in a plane, the query is a draggable (vermillion) dot;
    an arrow from the query to each key is as wide as that key's weight, a
    bar chart and a table give the score ``q . k``, the scaled score and
    the weight of each key, and the output (the values are the keys, V = K)
    is a (green) dot joined to the origin by a dashed line. The arrow keys
    move the query by 0.1 (0.5 with Shift).

    The head-width control ``d`` (2, 16, 64, 512) appends ``d - 2`` fixed
    random coordinates (standard normal, rounded to 3 decimals) to the
    query and to every key. The plane cannot draw them, so the table
    splits each score into its plane part ``qx*kx + qy*ky`` and the rest
    (the hidden coordinates' part): the weights are the softmax of their
    sum times the scale, at every ``d``. The scores spread like
    ``sqrt(d)``, and with the scale switched off the softmax turns
    one-hot, so the largest gradient that softmax's Jacobian
    ``diag(y) - y y^T`` sends to a key other than the argmax falls towards
    0 -- the figure's second table shows it for every ``d``; with the
    1/sqrt(d) scale it stays far from 0.

    In a kernel the numbers come from :func:`attnpy.explain`; while the
    kernel has not answered for the state drawn (or after a restart) the
    browser computes them with the same formulas and says so.

    With the default keys, pointing the query at a key gives that key most
    of the weight; with the query on "cat", "sat" (perpendicular) scores
    exactly 0 and "mat" (opposite) scores negative.

    Parameters
    ----------
    tokens : sequence of str or str, optional
        The keys' labels, all different (a string is split on whitespace).
    keys : array_like, shape (len(tokens), 2), optional
        The keys' plane positions. Default: the six positions above for
        six tokens, otherwise points round a circle of radius 2.8.
    query : (float, float), optional
        The query's starting position.
    scaled : bool, optional
        Divide the scores by ``sqrt(dim)`` before the softmax.
    dim : int, optional
        The head width d, 2..512 (2: the plane alone).
    size : int, optional
        The figure's width in pixels (default 640; larger for a projector).

    Returns
    -------
    Playground
        A widget. ``.query`` (read/write ``(x, y)``), ``.scaled``,
        ``.dim`` (read/write); ``.scores``, ``.weights``, ``.output``
        (float64 arrays, from :func:`attnpy.explain` of ``.inputs``, the
        current ``(Q, K, V)``); ``.save_html(path)``.

    Examples
    --------
    >>> import attnpy
    >>> pg = attnpy.playground(query=(2.6, 1.0))      # the query on "cat"
    >>> pg.scores.round(2)
    array([-0.94,  7.76,  0.  , -5.5 , -7.76,  6.14])
    >>> pg.weights.round(3)
    array([0.002, 0.755, 0.003, 0.   , 0.   , 0.24 ])
    >>> pg.dim, pg.scaled = 512, False                 # wide head, no scale
    >>> bool(pg.weights.max() > 0.999999)              # one-hot
    True
    """
    fn = "playground"
    tokens = (tokens.split() if isinstance(tokens, str) else list(tokens))
    if not tokens or len(set(tokens)) != len(tokens) or not all(isinstance(t, str) for t in tokens):
        raise ValueError(f"{fn}: tokens must be different strings, got {tokens!r}")
    if keys is None:
        keys = _model.KEYS if len(tokens) == 6 else _circle(len(tokens))
    keys = np.asarray(keys, dtype=np.float64)
    if keys.shape != (len(tokens), 2) or not np.isfinite(keys).all():
        raise ValueError(f"{fn}: keys must be finite, shape ({len(tokens)}, 2) for "
                         f"{len(tokens)} tokens, got keys.shape={keys.shape}")
    q = np.asarray(query, dtype=np.float64)
    if q.shape != (2,):
        raise ValueError(f"{fn}: query must be (x, y), got shape {q.shape}")
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or not 2 <= dim <= _model.MAX_DIM:
        raise ValueError(f"{fn}: dim must be an int in 2..{_model.MAX_DIM}, got {dim!r}")
    return _classes().Playground(tokens=tokens, key_xy=keys.tolist(), query=tuple(q.tolist()),
                                 scaled=bool(scaled), dim=int(dim), size=_size(fn, size, 640))


def attention_matrix(X=None, *, scores=None, tokens=None, causal=False,
                     show="weights", row=None, size=None):
    """The attention matrix of a sentence: click rows, toggle mask and view.

    Rows are queries, columns keys, numbered from 0 as Python indexes
    them; each cell is the weight that query gives that key (or its
    score). Click a row to highlight its query; the buttons switch between
    the softmax weights and the scores the softmax sees, and the causal
    mask on and off (masked cells -- the upper triangle -- get weight 0;
    their scores show as -inf). With the weights, the last column is each
    row's sum, 1.000; a row of scores has no sum worth showing.

    Without `X` or `scores` it shows "the cat sat on the mat" with these
    hand-crafted, plausible scores (rows: queries, columns: keys):

    ======  =====  =====  =====  =====  =====  =====
    query   the    cat    sat    on     the    mat
    ======  =====  =====  =====  =====  =====  =====
    the     2.0    1.0    0.2    0.1    0.8    0.3
    cat     1.5    2.5    0.9    0.2    0.3    1.0
    sat     0.4    3.0    1.2    0.6    0.2    0.8
    on      0.2    0.5    1.8    1.5    0.9    1.6
    the     1.2    0.3    0.4    1.0    2.0    1.1
    mat     0.6    1.4    0.9    1.7    2.2    2.4
    ======  =====  =====  =====  =====  =====  =====

    so that "sat" attends most to its subject "cat", with or without the
    mask. Given scores S are used as they are (scale 1): the figure runs
    ``explain(S, I, I, scale=1.0)``, whose ``Q K^T`` is S itself. Given
    `X` it shows self-attention, ``explain(X, X, X)``, whose scores are
    ``X X^T / sqrt(E)``.

    Parameters
    ----------
    X : array_like, shape (n, E), optional
        Token vectors: queries, keys and values at once.
    scores : array_like, shape (n, n), optional
        Pre-softmax scores (not with `X`).
    tokens : sequence of str or str, optional
        Row and column labels (default: the sentence, or 0..n-1).
    causal : bool, optional
        Start with the causal mask on.
    show : {"weights", "scores"}, optional
        Which table to show first.
    row : int, optional
        The highlighted query row (0-based), or None.
    size : int, optional
        The figure's width in pixels (default 560).

    Returns
    -------
    AttentionMatrix
        A widget: ``.causal``, ``.show``, ``.row`` (read/write),
        ``.scores`` (the scores the softmax sees), ``.weights`` (float64,
        from :func:`attnpy.explain` of ``.inputs``), ``.save_html(path)``.

    Examples
    --------
    >>> import attnpy
    >>> m = attnpy.attention_matrix(row=2)
    >>> m.tokens[2], m.tokens[int(m.weights[2].argmax())]
    ('sat', 'cat')
    >>> m.causal = True
    >>> m.weights[2].round(3)
    array([0.06 , 0.807, 0.133, 0.   , 0.   , 0.   ])
    >>> m.weights.sum(axis=1)
    array([1., 1., 1., 1., 1., 1.])
    """
    fn = "attention_matrix"
    if X is not None and scores is not None:
        raise ValueError(f"{fn}: give X or scores, not both")
    if X is not None:
        a = np.asarray(X, dtype=np.float64)
        if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] < 1:
            raise ValueError(f"{fn}: X must be 2-D (tokens, features), got X.shape={a.shape}")
        n, caption = a.shape[0], f"scores = X Xᵀ / √{a.shape[1]}"
    else:
        a = np.asarray(_model.SENTENCE_SCORES if scores is None else scores, dtype=np.float64)
        if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] < 1:
            raise ValueError(f"{fn}: scores must be square (n, n), got scores.shape={a.shape}")
        n, caption = a.shape[0], "hand-crafted scores" if scores is None else "given scores"
    if not np.isfinite(a).all():
        raise ValueError(f"{fn}: {'X' if X is not None else 'scores'} must be finite")
    if tokens is None:
        tokens = _model.SENTENCE if n == 6 else [str(i) for i in range(n)]
    tokens = (tokens.split() if isinstance(tokens, str) else list(tokens))
    if len(tokens) != n:
        raise ValueError(f"{fn}: {len(tokens)} tokens for {n} rows")
    if show not in ("weights", "scores"):
        raise ValueError(f'{fn}: show must be "weights" or "scores", got {show!r}')
    if row is not None and (isinstance(row, bool) or not isinstance(row, (int, np.integer))
                            or not 0 <= row < n):
        raise ValueError(f"{fn}: row must be None or an int in 0..{n - 1}, got {row!r}")
    inputs = _model.matrix_inputs(a if X is not None else None, a)
    return _classes().AttentionMatrix(inputs, tokens=[str(t) for t in tokens], causal=bool(causal),
                                      show=show, row=None if row is None else int(row),
                                      size=_size(fn, size, 560), caption=caption)


def head_view(weights, tokens=None, *, layer=0, head=None, causal=None, size=None):
    """A model's attention heads: pick a layer and a head, hover a token.

    Queries are listed on the left, keys on the right, and each (query,
    key) pair is a line as opaque as its weight. Hover (or focus, with the
    keyboard) a query to see where it attends, a key to see what attends to
    it; the hovered token's weights are written beside the tokens. The
    menus pick the layer and the head, or all heads overlaid (a colour a
    head). The causal triangle marks, dashed, the lines to keys after their
    query -- the ones a causal model masks -- and says how much of the
    weight they hold (0 for a decoder's weights).

    Every number shown is one of `weights`, to 3 decimals: nothing is
    computed, so the figure needs no kernel once drawn, and ``save_html``
    writes a page with the weights inside.

    Parameters
    ----------
    weights : array_like or AttentionTrace
        Shape (layers, heads, T, T), (heads, T, T) or (T, T), finite and
        non-negative; or a trace from :func:`attnpy.explain` (its
        ``.weights``, its tokens and its causal flag). float32 weights stay
        float32.
    tokens : sequence of str or str, optional
        The T token labels (a string is split on whitespace). Default: the
        trace's tokens, or 0..T-1.
    layer : int, optional
        The layer shown first.
    head : int or None, optional
        The head shown first; None overlays all heads.
    causal : bool or None, optional
        Show the causal triangle. None: on when every weight above the
        diagonal is 0 (a causal model's weights).
    size : int, optional
        The figure's widest width in pixels (default 720).

    Returns
    -------
    HeadView
        A widget: ``.layer``, ``.head``, ``.causal`` (read/write),
        ``.weights`` (the array given, 4-D), ``.tokens``,
        ``.save_html(path)``; its text form prints the shown weights.

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> X = np.random.default_rng(0).standard_normal((2, 4, 8))   # 2 heads, 4 tokens
    >>> t = attnpy.explain(X, X, X, causal=True, tokens="the cat sat down")
    >>> hv = attnpy.head_view(t, head=1)
    >>> hv.weights.shape, hv.causal
    ((1, 2, 4, 4), True)
    >>> print(hv)                                       # doctest: +NORMALIZE_WHITESPACE
    attnpy.head_view: 1 layers x 2 heads, 4 tokens; layer 0, head 1
    query \\ key  0 the  1 cat  2 sat  3 down
    0 the        1.000  0.000  0.000   0.000
    1 cat        0.080  0.920  0.000   0.000
    2 sat        0.036  0.020  0.944   0.000
    3 down       0.083  0.065  0.041   0.811
    """
    fn = "head_view"
    from ..teach import AttentionTrace
    if isinstance(weights, AttentionTrace):
        trace = weights
        weights = trace.weights
        if tokens is None:
            tokens = trace.tokens
        if causal is None and trace.causal:
            causal = True
    w = np.asarray(weights)
    if w.dtype not in (np.float32, np.float64):
        w = w.astype(np.float64)
    if w.ndim not in (2, 3, 4) or w.shape[-1] != w.shape[-2] or w.shape[-1] < 1 or 0 in w.shape:
        raise ValueError(f"{fn}: weights must have shape (layers, heads, T, T), (heads, T, T) "
                         f"or (T, T), got weights.shape={w.shape}")
    w = w.reshape((1,) * (4 - w.ndim) + w.shape)
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValueError(f"{fn}: weights must be finite and non-negative")
    w = np.array(w)                       # our own copy, read-only
    w.setflags(write=False)
    L, H, T, _ = w.shape
    if tokens is None:
        tokens = [str(i) for i in range(T)]
    tokens = tokens.split() if isinstance(tokens, str) else [str(s) for s in tokens]
    if len(tokens) != T:
        raise ValueError(f"{fn}: {len(tokens)} tokens for T={T} (weights.shape={w.shape})")
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not 0 <= layer < L:
        raise ValueError(f"{fn}: layer must be an int in 0..{L - 1}, got {layer!r}")
    if head is not None and (isinstance(head, bool) or not isinstance(head, (int, np.integer))
                             or not 0 <= head < H):
        raise ValueError(f"{fn}: head must be None or an int in 0..{H - 1}, got {head!r}")
    if causal is None:
        causal = bool((np.triu(w, 1) == 0).all())
    return _classes().HeadView(w, tokens=tokens, layer=int(layer),
                               head=None if head is None else int(head), causal=bool(causal),
                               size=_size(fn, size, 720))


__all__ = ["playground", "attention_matrix", "head_view"]
