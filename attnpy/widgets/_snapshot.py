"""Static snapshots and text forms of the figures.

A snapshot is plain HTML with inline SVG and inline styles (no script, no
style sheet, no network): what nbconvert, GitHub and a notebook opened
without its kernel show in place of the live figure. It draws the state
the figure had when it was displayed and says so. When the live figure
renders, the figures' style sheet hides every snapshot on the page
(``.attnpy-snapshot``), so a live notebook shows the figure once.
"""
import html

import numpy as np

_BOX = ("class=\"attnpy-snapshot\" style=\"font-family: system-ui, sans-serif; "
        "background: #ffffff; color: #222222; padding: 8px; max-width: 100%; "
        "overflow-x: auto; border: 1px solid #dddddd\"")
_CELL = "padding: 1px 6px; border: 1px solid #dddddd; text-align: right"
KEY, QUERY, OUTPUT = "#0072B2", "#D55E00", "#009E73"
MAX_LINES = 1500


def _e(text):
    return html.escape(str(text), quote=True)


def label(token):
    """A token as a label: a newline or a tab in it shown, not laid out."""
    return str(token).replace("\n", "↵").replace("\t", "⇥")


def table(header, rows, role_rows=None):
    """An HTML table; role_rows[i][j]: extra attributes of cell (i, j)."""
    out = ["<table style=\"border-collapse: collapse; font-variant-numeric: tabular-nums; "
           "margin: 4px 0\"><thead><tr>"]
    out += [f"<th style=\"{_CELL}\">{_e(h)}</th>" for h in header]
    out.append("</tr></thead><tbody>")
    for i, row in enumerate(rows):
        out.append("<tr>")
        for j, v in enumerate(row):
            tag = "th" if j == 0 else "td"
            extra = role_rows[i][j] if role_rows else ""
            out.append(f"<{tag} style=\"{_CELL}\"{extra}>{_e(v)}</{tag}>")
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def wrap(kind, title, body):
    return (f"<div {_BOX} data-attnpy-snapshot=\"{kind}\">"
            f"<div style=\"font-size: 0.9em; color: #444444\">{_e(title)}</div>{body}</div>")


def playground_svg(keys, tokens, query, weights, output, extent):
    view, unit = 400, 200 / extent
    px = lambda x, y: (view / 2 + x * unit, view / 2 - y * unit)  # noqa: E731
    parts = [f"<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {view} {view}\" "
             f"width=\"360\" height=\"360\" role=\"img\" aria-label=\"the query and the keys\" "
             f"style=\"max-width: 100%; height: auto; border: 1px solid #dddddd\">"]
    for v in range(-int(extent), int(extent) + 1):
        a, b = px(v, v)
        c = "#9a9a9a" if v == 0 else "#e4e4e4"
        parts.append(f"<line x1=\"{a:.1f}\" y1=\"0\" x2=\"{a:.1f}\" y2=\"{view}\" stroke=\"{c}\"/>"
                     f"<line x1=\"0\" y1=\"{b:.1f}\" x2=\"{view}\" y2=\"{b:.1f}\" stroke=\"{c}\"/>")
    qa, qb = px(*query)
    for (kx, ky), w in zip(keys, weights):
        a, b = px(kx, ky)
        parts.append(f"<line x1=\"{qa:.1f}\" y1=\"{qb:.1f}\" x2=\"{a:.1f}\" y2=\"{b:.1f}\" "
                     f"stroke=\"{KEY}\" stroke-opacity=\"0.55\" stroke-width=\"{0.5 + 14 * w:.2f}\"/>")
    oa, ob = px(*output)
    o0 = px(0, 0)
    parts.append(f"<line x1=\"{o0[0]}\" y1=\"{o0[1]}\" x2=\"{oa:.1f}\" y2=\"{ob:.1f}\" "
                 f"stroke=\"{OUTPUT}\" stroke-width=\"2\" stroke-dasharray=\"6 4\"/>")
    parts.append(f"<circle cx=\"{qa:.1f}\" cy=\"{qb:.1f}\" r=\"10\" fill=\"{QUERY}\" "
                 f"fill-opacity=\"0.8\"/>")
    for (kx, ky), tok in zip(keys, tokens):
        a, b = px(kx, ky)
        parts.append(f"<rect x=\"{a - 6:.1f}\" y=\"{b - 6:.1f}\" width=\"12\" height=\"12\" "
                     f"fill=\"{KEY}\" stroke=\"#ffffff\"/><text x=\"{a + 9:.1f}\" y=\"{b - 8:.1f}\" "
                     f"font-size=\"13\" fill=\"#222222\">{_e(tok)}</text>")
    parts.append(f"<circle cx=\"{oa:.1f}\" cy=\"{ob:.1f}\" r=\"7\" fill=\"{OUTPUT}\" "
                 f"stroke=\"#ffffff\" stroke-width=\"2\"/></svg>")
    return "".join(parts)


def head_svg(tokens, weights, title):
    """Two columns of tokens (queries left, keys right), a line per pair as
    opaque as its weight (weights: (T, T), or (H, T, T) overlaid)."""
    w = np.asarray(weights)
    if w.ndim == 2:
        w = w[None]
    n = len(tokens)
    row, h = 18, 18 * n + 24
    parts = [f"<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 360 {h}\" width=\"360\" "
             f"height=\"{h}\" role=\"img\" aria-label=\"{_e(title)}\" style=\"max-width: 100%; "
             "height: auto\">"]
    # the lines as opaque as their weights, the heaviest MAX_LINES of them
    # (a long text's snapshot stays small; the faintest are near invisible)
    a = w / w.shape[0] ** 0.5
    order = np.argsort(a, axis=None)[::-1][:MAX_LINES]
    for hd, i, j in zip(*np.unravel_index(order, a.shape)):
        if a[hd, i, j] < 0.01:
            break
        parts.append(f"<line x1=\"110\" y1=\"{20 + row * i}\" x2=\"250\" "
                     f"y2=\"{20 + row * j}\" stroke=\"{KEY}\" "
                     f"stroke-opacity=\"{min(1.0, a[hd, i, j]):.3f}\" stroke-width=\"2\"/>")
    for i, tok in enumerate(tokens):
        y = 24 + row * i
        parts.append(f"<text x=\"104\" y=\"{y}\" text-anchor=\"end\" font-size=\"12\" "
                     f"fill=\"#222222\">{i} {_e(label(tok))}</text><text x=\"256\" y=\"{y}\" "
                     f"font-size=\"12\" fill=\"#222222\">{i} {_e(label(tok))}</text>")
    parts.append("</svg>")
    return "".join(parts)


def table_text(header, rows, widths=None):
    """A plain-text table: the first column left-aligned, the rest right."""
    cols = [header] + rows
    widths = widths or [max(len(str(r[c])) for r in cols) for c in range(len(header))]
    fmt = lambda r: "  ".join(str(v).ljust(widths[c]) if c == 0 else str(v).rjust(widths[c])  # noqa: E731
                              for c, v in enumerate(r)).rstrip()
    return "\n".join(fmt(r) for r in cols)
