"""HTML heatmap tables of a trace for notebooks (inline CSS only)."""
import html
import math

import numpy as np

from .text import _elide, _fmt, _short


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


_DOTS = _CELL + "color:#9a9a9a;text-align:center;"


def _html_table(a, row_labels, col_labels, d, *, cls, blocked=None,
                lo=None, hi=None, caption=None, extra=None, text=None,
                limit=32):
    """A heatmap <table>: one <td class=cls> per cell of the 2-D array a;
    more than `limit` rows or columns are shortened with '...' (first and
    last ones shown), as the text tables are."""
    e = html.escape
    a = np.asarray(a, dtype=np.float64)
    nr, nc = a.shape
    if lo is None or hi is None:
        ok = np.isfinite(a) if blocked is None else np.isfinite(a) & ~blocked
        lo = float(np.min(a[ok])) if ok.any() else 0.0
        hi = float(np.max(a[ok])) if ok.any() else 1.0
    span = (hi - lo) or 1.0
    rows, cols = _elide(nr, limit), _elide(nc, limit)
    if len(rows) < nr or len(cols) < nc:
        caption = ((caption + "; ") if caption else "") + (
            f"{nr} x {nc}, first and last rows/columns shown")
    out = ['<table style="border-collapse:collapse;margin:4px 16px 4px 0;">']
    if caption:
        out.append('<caption style="caption-side:top;text-align:left;'
                   f'font-size:12px;color:#333333;">{e(caption)}</caption>')
    out.append(f'<thead><tr><th style="{_HEAD}"></th>')
    for c in cols:
        out.append(f'<th style="{_HEAD}">'
                   f'{"..." if c is None else e(col_labels[c])}</th>')
    if extra is not None:
        out.append(f'<th style="{_HEAD}">{e(extra[0])}</th>')
    out.append("</tr></thead><tbody>")
    for r in rows:
        out.append(f'<tr><th style="{_HEAD}text-align:left;">'
                   f'{"..." if r is None else e(row_labels[r])}</th>')
        for c in cols:
            if r is None or c is None:
                out.append(f'<td style="{_DOTS}">...</td>')
                continue
            out.append(_html_cell(a[r, c], r, c, d, cls, blocked, text,
                                  lo, span))
        if extra is not None:
            out.append(f'<td class="attnpy-extra" style="{_CELL}color:#555555;'
                       f'border-left:2px solid #cccccc;">'
                       f'{"..." if r is None else e(extra[1][r])}</td>')
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _html_cell(v, r, c, d, cls, blocked, text, lo, span):
    e = html.escape
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
    return (f'<td class="{klass}" style="{style}" '
            f'title="[{r}, {c}] = {e(repr(float(v)))}">{e(label)}</td>')


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
                caption=f"trace{list(idx)}.weights", limit=16))
        parts.append("</div>")
    parts.append("</div>")
    return "".join(parts)
