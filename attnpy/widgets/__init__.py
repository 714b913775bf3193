"""attnpy.widgets: the two interactive attention figures for notebooks.

- :func:`playground`: six keys in a plane, a query you drag, the weights.
- :func:`attention_matrix`: the attention matrix of a short sentence.

Both are anywidget widgets (JupyterLab, Notebook 7, VS Code, Colab; needs
``pip install "attnpy[widget]"``). In a kernel every number they show is
computed by :func:`attnpy.explain`; ``save_html`` writes a page that runs
the same formulas in the browser, with no kernel and no network.
This module imports anywidget only when a figure is made.
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
    query and to every key: the scores then spread like ``sqrt(d)``, and
    with the scale switched off the softmax turns one-hot, so the largest
    gradient that softmax's Jacobian ``diag(y) - y y^T`` sends to a key
    other than the argmax falls towards 0 -- the figure's table shows it
    for every ``d``. The 1/sqrt(d) scale keeps the weights spread.

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

    Rows are queries, columns keys, each cell the weight that query gives
    that key (or its score). Click a row to highlight its query; the
    buttons switch between the softmax weights and the raw scores, and the
    causal mask on and off (masked cells -- the upper triangle -- are
    blanked). The last column is each row's sum: 1.000 for the weights.

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


__all__ = ["playground", "attention_matrix"]
