"""matplotlib heatmaps of a trace (``trace.plot()``), imported lazily."""
import numpy as np

from .text import _fmt

MAX_INCHES = 20.0        # a figure's side at most; larger maps shrink


def _fit(w, h):
    """(w, h) scaled down to MAX_INCHES a side, keeping the aspect."""
    k = min(1.0, MAX_INCHES / w, MAX_INCHES / h)
    return (w * k, h * k)


def _ticks(n, labels, most=32):
    """Tick positions and labels: all of them, or about `most` evenly
    spaced ones for a long axis."""
    step = max(1, -(-n // most))
    pos = list(range(0, n, step))
    return pos, [labels[k] for k in pos]


def _import_pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("AttentionTrace.plot needs matplotlib, which is not "
                          'installed: pip install "attnpy[plot]"') from exc
    return plt


def _draw(ax, tr, cmap, annotate, d, *, fontsize=9, xlabel=True,
          ylabel=True):
    import matplotlib
    cm = matplotlib.colormaps[cmap].with_extremes(bad="#d9d9d9")
    data = np.ma.masked_array(tr.weights.astype(np.float64), mask=~tr.mask)
    im = ax.imshow(data, cmap=cm, vmin=0.0, vmax=1.0, aspect="equal",
                   interpolation="nearest")
    L, S = tr.weights.shape
    klabels = tr._klabels()
    ax.set_xticks(*_ticks(S, klabels))
    ax.set_yticks(*_ticks(L, tr._qlabels()))
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
            fig, ax = plt.subplots(figsize=_fit(1.6 + 0.75 * max(S, 3),
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
                                 figsize=_fit(1.2 + side * ncols,
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
