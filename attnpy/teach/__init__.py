"""attnpy.teach: attention with numbers a person can check.

One module per job:

- trace      ``explain`` and :class:`AttentionTrace`: every intermediate
             table of one attention call (the C core's numbers, bitwise)
- walk       the printed walk-through (``print(trace)``) and ``focus``
- handcheck  ``trace.check``: hand-computed tables against the exact ones
- paths      the hand computations check accepts for one cell (every
             number to nearest, or one rounded the other way)
- html       heatmap tables for notebooks (``_repr_html_``)
- view       ``show``: masks and small arrays as tables
- plot       matplotlib heatmaps (``trace.plot()``), imported lazily
- text       number and table formatting shared by all of them
- cli        ``python -m attnpy explain``
- backward   ``trace.backward(d_output)``: :class:`BackwardTrace`, the
             backward pass's tables (dV, dP, dS, dQ, dK) and their check

A new kind of trace (e.g. the backward pass) is a class beside
AttentionTrace in its own module, with its steps' tables as attributes, a
walk-through in the style of walk.py, and check() through handcheck.
"""
from .backward import BackwardTrace
from .handcheck import CellDiff, CheckReport
from .trace import AttentionTrace, explain
from .view import ArrayView, show
from .walk import Focus

__all__ = ["explain", "AttentionTrace", "BackwardTrace", "Focus", "CheckReport", "CellDiff",
           "show", "ArrayView"]
