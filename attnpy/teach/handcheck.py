"""``trace.check``: a table computed by hand against the exact one, and the
hand-rounding model that tells a rounding difference from a slip.

A difference is *explained by hand rounding of intermediates* when doing
the step by hand at the table's decimals gives it: every number written
down rounded to nearest, or one of them rounded the other way (as the
tutorial writes e^0.405 = 1.4993 as 1.500), starting from the user's own
previous table when given (checked first) and from the exact one rounded
otherwise (paths.py).
"""
import math
from dataclasses import dataclass

import numpy as np

from .paths import as_rows, best_path, cell_paths
from .text import STEPS, _fmt, _labels, _vec


SHOWN = 30          # cells (and notes) a report prints; all are attributes


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
        The smallest and largest values of the hand paths check accepts
        (every number to nearest, or one rounded the other way).
    how : str
        The hand computation of this cell (rounding to nearest), written
        out.
    how_other : str
        When `expected` is explained but rounding to nearest does not give
        it: the computation with the one number rounded the other way that
        gives it ('' otherwise).
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
    previous : CheckReport or None
        The check of the table given as ``previous=`` (done first).
    notes : list of str
        Rows of weights that do not sum to 1 or are not the softmax of
        the scores.
    """

    def __init__(self, step, decimals, checked, differences, notes,
                 previous=None):
        self.step = step
        self.previous = previous
        self.decimals = decimals
        self.checked = checked
        self.differences = differences
        self.wrong = [c for c in differences if not c.explained]
        self.explained = [c for c in differences if c.explained]
        self.ok = not self.wrong and (previous is None or previous.ok)
        self.exact = not differences
        self.notes = notes

    def __bool__(self):
        return self.ok

    def __str__(self):
        d = self.decimals
        n = len(self.differences)
        lines = [f"check of {self.step!r} at {d} decimals: "
                 + ("OK" if self.ok else "NOT OK")]
        if self.previous is not None:
            p = self.previous
            lines.append(f"  your previous table ({p.step!r}, previous=) was "
                         "checked first:")
            lines += ["    " + t for t in str(p).splitlines()]
            if p.wrong:
                lines.append(f"  its wrong cells were not used: the hand "
                             f"computation below takes the exact {p.step} "
                             "there")
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
            shown = self.differences[:SHOWN]
            rows = [("cell", "row", "col", "expected", "exact", "diff")]
            for c in shown:
                rows.append((str(list(c.index)), c.row, c.col,
                             _fmt(c.expected, d), _fmt(c.exact, d + 2),
                             ("" if not math.isfinite(c.diff) else
                              f"{c.diff:+.{d + 2}f}")))
            w = [max(len(r[k]) for r in rows) for k in range(6)]

            def line(r):
                return "  " + "  ".join(r[k].ljust(w[k]) if k < 3 else
                                        r[k].rjust(w[k]) for k in range(6))
            lines.append(line(rows[0]) + "  verdict")
            for r, c in zip(rows[1:], shown):
                lines.append(line(r) + "  " + (
                    "explained by hand rounding of intermediates"
                    if c.explained else "WRONG: differs beyond rounding"))
                src = (f" from your {self.previous.step}" + (
                    " (the exact ones where yours are wrong)"
                    if self.previous.wrong else "")
                       if self.previous is not None else "")
                if c.how:
                    lines.append(f"      by hand{src}: {c.how}")
                if c.how_other:
                    lines.append(f"      with one number rounded the other "
                                 f"way: {c.how_other}")
                if math.isfinite(c.hand_low) and math.isfinite(c.hand_high):
                    lo, hi = _round(c.hand_low, d), _round(c.hand_high, d)
                    span = (_fmt(lo, d) if lo == hi
                            else f"{_fmt(lo, d)} .. {_fmt(hi, d)}")
                    lines.append(f"      hand rounding gives {span}; "
                                 f"exact {_fmt(c.exact, d)}")
            if n > SHOWN:
                lines.append(f"  ... and {n - SHOWN} more cells "
                             "(report.differences lists them all)")
        notes = self.notes[:SHOWN] + ([f"... and {len(self.notes) - SHOWN} "
                                       "more notes"]
                                      if len(self.notes) > SHOWN else [])
        lines += ["  note: " + s for s in notes]
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


def _expected_array(expected, shape, step, who="AttentionTrace.check",
                    argname="expected"):
    """(values as float64, checked-cell mask) from a nested list/array;
    errors name the method `who` and its argument `argname`."""
    obj = np.array(expected, dtype=object)
    if obj.shape != shape:
        raise ValueError(f"{who}: {argname} has shape {obj.shape} but the "
                         f"{step!r} table has shape {shape}")
    given = np.vectorize(lambda v: v is not None, otypes=[bool])(obj) \
        if obj.size else np.zeros(shape, bool)
    try:
        vals = np.where(given, obj, np.nan).astype(np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{who}: {argname} must hold numbers (or None for "
                        f"cells not checked)") from None
    return vals, given




def _infer_decimals(expected, given):
    """The decimals a table was written with: the most any given cell
    shows (0.29 -> 2, 1 -> 0), a cell's decimals being the fewest that
    give its value to within a few units of its float type's last place
    (so 0.1 + 0.05 and float32(0.15) count as 2), at most 12."""
    arr = expected if isinstance(expected, np.ndarray) else None
    dtype = arr.dtype if arr is not None and arr.dtype.kind == "f" \
        else np.dtype(np.float64)
    obj = np.array(expected, dtype=object)
    most = 0
    for v, g in zip(obj.flat, given.flat):
        if not g:
            continue
        try:
            x = float(v)
        except (TypeError, ValueError):
            continue
        if not np.isfinite(x) or abs(x) >= 1e9:
            continue
        ulp = 4 * float(np.spacing(dtype.type(abs(x))))
        k = next((k for k in range(13) if abs(x - round(x, k)) <= ulp), 12)
        most = max(most, k)
    return most


def _hand_chain(tr, d):
    """Every step done by hand from the inputs, every number written down
    rounded to nearest at d decimals (float64 tables)."""
    f = np.float64
    with np.errstate(all="ignore"):
        prod = tr.Q.astype(f)[..., :, None, :] * tr.K.astype(f)[..., None, :, :]
        chain = {"scores": _round(prod, d).sum(axis=-1)}
        chain["scaled"] = _round(chain["scores"], d) * tr.scale
        sc = _round(chain["scaled"], d)
        if tr.softcap is not None:
            sc = _round(tr.softcap * np.tanh(sc / tr.softcap), d)
        for t in (tr.bias, tr.alibi):
            if t is not None:
                sc = sc + t.astype(f)
        chain["masked"] = np.where(tr.mask, sc, -np.inf)
        x = _round(chain["masked"], d)
        top = np.max(x, axis=-1, keepdims=True, initial=-np.inf)
        shift = _round(np.where((top > 30) | (top < -5), top, 0.0), d)
        e = np.where(tr.mask, _round(np.exp(x - shift), d), 0.0)
        w = e / e.sum(axis=-1, keepdims=True)
        w = np.where(tr.fully_masked_rows[..., None] | ~np.isfinite(w),
                     tr.weights.astype(f), w)
        chain["weights"] = w
        t = _round(_round(w, d)[..., :, :, None]
                   * tr.V.astype(f)[..., None, :, :], d)
        chain["output"] = np.where(tr.fully_masked_rows[..., None],
                                   tr.output.astype(f), t.sum(axis=-2))
    return chain


def _bases(tr, step, d, previous, pgood):
    """The ways of writing the previous table: a list of (table, fixed)
    (see paths.cell_paths); [(None, None)] for the first step."""
    if step == "scores":
        return [(None, None)]
    pstep = STEPS[STEPS.index(step) - 1]
    exact = _round(getattr(tr, pstep).astype(np.float64), d)
    if previous is not None:          # the user's numbers where right
        return [(np.where(pgood, previous, exact), pgood)]
    chain = _round(_hand_chain(tr, d)[pstep], d)
    same = np.array_equal(chain, exact, equal_nan=True)
    return [(exact, None)] + ([] if same else [(chain, None)])


def _softmax_notes(tr, vals, given, wrong, d):
    """Rows of a weights table mostly wrong: say what softmax gives."""
    notes = []
    L = tr.weights.shape[-2]
    ql = _labels(tr.tokens, L)
    for idx in np.ndindex(*wrong.shape[:-1]):
        nw = int(np.count_nonzero(wrong[idx]))
        if nw < 2 or nw * 2 < int(np.count_nonzero(given[idx])):
            continue
        shown = list(idx[:-1]) + [ql[idx[-1]]] if idx[:-1] else ql[idx[-1]]
        notes.append(
            f"row {shown}: these weights are not the softmax of the masked "
            f"scores {_vec(tr.masked[idx], d)}: softmax gives "
            f"{_vec(tr.weights[idx], d)}, yours {_vec(vals[idx], d)}")
    return notes


def _check_previous(tr, step, previous, d):
    """The user's previous table, checked first: (values, good, report)."""
    if step == "scores":
        raise ValueError("AttentionTrace.check: 'scores' is the first "
                         "step; it has no previous table")
    pstep = STEPS[STEPS.index(step) - 1]
    pshape = getattr(tr, pstep).shape
    pvals, pgiven = _expected_array(previous, pshape, pstep,
                                    argname="previous")
    prep = _check(tr, pstep, previous, d, None)
    bad = np.zeros(pshape, bool)
    for c in prep.wrong:
        bad[c.index] = True
    return np.nan_to_num(pvals, nan=0.0), pgiven & ~bad, prep


def _check(tr, step, expected, decimals, previous):
    if step not in STEPS:
        raise ValueError(f"AttentionTrace.check: step must be one of {STEPS},"
                         f" not {step!r}")
    exact = getattr(tr, step).astype(np.float64)
    vals, given = _expected_array(expected, exact.shape, step)
    d = _decimals_arg(decimals, "AttentionTrace.check", expected, given)
    prep = None
    if previous is not None:
        pvals, pgood, prep = _check_previous(tr, step, previous, d)
    tables = _bases(tr, step, d, None if previous is None else pvals,
                    None if previous is None else pgood)
    bases = [None if t is None else as_rows(t, fx) for t, fx in tables]
    tol = 0.5 * 10.0 ** -d + 1e-9 * np.maximum(1.0, np.abs(exact))
    with np.errstate(all="ignore"):
        finite = np.isfinite(exact)
        match = np.where(finite, np.abs(vals - exact) <= tol,
                         (vals == exact) | (np.isnan(vals) & np.isnan(exact)))
        if step == "masked":                        # -1e9 fills blocked cells
            match |= np.isneginf(exact) & (vals <= -1e9)
    ql = _labels(tr.tokens, tr.weights.shape[-2])
    cl = (_labels(tr.key_tokens, tr.weights.shape[-1]) if step != "output"
          else [str(k) for k in range(tr.output.shape[-1])])
    diffs = []
    for idx in zip(*np.nonzero(given & ~match)):
        idx = tuple(int(k) for k in idx)
        e, x = float(vals[idx]), float(exact[idx])
        paths = cell_paths(tr, step, idx, d, bases, expected=e,
                           tol=float(tol[idx])) if finite[idx] else []
        hit = best_path(paths, e, float(tol[idx])) if np.isfinite(e) else None
        vs = [p[0] for p in paths if np.isfinite(p[0])] or [x]
        with np.errstate(all="ignore"):
            diff = e - x
        diffs.append(CellDiff(
            index=idx, row=ql[idx[-2]], col=cl[idx[-1]], expected=e, exact=x,
            diff=diff, explained=hit is not None,
            hand=paths[0][0] if paths else x, hand_low=min(vs),
            hand_high=max(vs), how=paths[0][1] if paths else "",
            how_other="" if hit is None or hit is paths[0] else hit[1]))
    wrong = np.zeros(exact.shape, bool)
    for c in diffs:
        wrong[c.index] = not c.explained
    notes = _softmax_notes(tr, vals, given, wrong, d) \
        if step == "weights" else []
    if step == "weights":
        with np.errstate(all="ignore"):
            rs = np.where(given, vals, 0.0).sum(-1)
        full = given.all(-1) & ~tr.fully_masked_rows
        bad = full & (np.abs(rs - 1.0) > 10.0 ** -d * given.shape[-1])
        for idx in zip(*np.nonzero(bad)):
            idx = tuple(int(k) for k in idx)
            notes.append(f"row {list(idx)} of your table sums to "
                         f"{_fmt(rs[idx], d)}, not 1")
    return CheckReport(step, d, int(np.count_nonzero(given)), diffs, notes,
                       previous=prep)


def _decimals_arg(decimals, who, expected, given):
    """check's decimals: as given (0..12), or read off the table."""
    if decimals is None:
        return _infer_decimals(expected, given)
    if isinstance(decimals, bool) or not isinstance(decimals,
                                                    (int, np.integer)):
        raise TypeError(f"{who}: decimals must be an int or None")
    if not 0 <= decimals <= 12:
        raise ValueError(f"{who}: decimals must be in 0..12, not {decimals}")
    return int(decimals)
