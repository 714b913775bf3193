"""``show``: any mask or small array as a table (text and HTML)."""
from __future__ import annotations

import html
from typing import Sequence, Union

import numpy as np

from .._types import ArrayLike

from .text import _split_tokens, _table
from .html import _html_table


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
        ncols = a.shape[-1] if a.ndim else 1
        if self.tokens is not None and len(self.tokens) != ncols:
            raise ValueError(f"show: tokens has {len(self.tokens)} entries "
                             f"but the array has {ncols} columns (shape "
                             f"{a.shape}); give one token per column")
        self.decimals = decimals
        self.is_mask = a.dtype == bool or (
            a.size > 0 and bool(np.all((a == 0) | (a == 1))))

    def _kind(self):
        """What the title says: only what the array tells."""
        a = self.array
        if a.dtype == bool:
            return "mask (1 = may attend)"
        if self.is_mask:
            return f"{a.dtype} array of 0 and 1 (as a mask: 1 = may attend)"
        return str(a.dtype)

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
        lines = [f"{self._kind()}, shape {a.shape}"]
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
        kind = self._kind() + (", grey 0 = blocked" if self.is_mask else "")
        parts = ['<div class="attnpy-show" style="font-family:sans-serif;">',
                 f'<div style="font-size:12px;color:#333333;">{e(kind)}, '
                 f'shape {e(str(a.shape))}</div>',
                 '<div style="display:flex;flex-wrap:wrap;">']
        panels = self._panels()
        limit = 32 if len(panels) == 1 else 12
        for title, p, rl, cl in panels:
            if self.is_mask:
                vals = (p != 0).astype(np.float64)
                parts.append(_html_table(
                    vals, rl, cl, 0, cls="attnpy-m", blocked=vals == 0,
                    lo=0.0, hi=2.5, caption=title or None, limit=limit,
                    text=lambda r, c, v=vals: "1" if v[r, c] else "0"))
            else:
                parts.append(_html_table(p.astype(np.float64), rl, cl,
                                         self.decimals, cls="attnpy-a",
                                         caption=title or None, limit=limit))
        parts.append("</div></div>")
        return "".join(parts)


def show(mask_or_array: ArrayLike,
         tokens: Union[str, Sequence[str], None] = None, *,
         decimals: int = 3) -> ArrayView:
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
        Labels of the columns (keys), one per column, and, when they fit,
        of the rows (with fewer rows than columns, the last tokens).
    decimals : int, optional
        Decimals for non-mask arrays, 0..15 (default 3).

    Returns
    -------
    ArrayView
        Has ``_repr_html_`` (notebook) and a text ``str()``; large arrays
        show their first and last rows and columns.

    Raises
    ------
    ValueError
        When `tokens` does not have one entry per column, or `decimals` is
        not in 0..15 (TypeError: not an int).

    Examples
    --------
    >>> import numpy as np
    >>> from attnpy import show
    >>> print(show(np.tril(np.ones((3, 3), bool)), tokens="the cat sat"))
    mask (1 = may attend), shape (3, 3)
           the  cat  sat
      the    1    0    0
      cat    1    1    0
      sat    1    1    1
    """
    if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)):
        raise TypeError(f"show: decimals must be an int, not "
                        f"{type(decimals).__name__}")
    if not 0 <= decimals <= 15:
        raise ValueError(f"show: decimals must be in 0..15, not {decimals}")
    return ArrayView(mask_or_array, tokens, int(decimals))
