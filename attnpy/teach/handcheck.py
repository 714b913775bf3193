"""``trace.check``: a table computed by hand against the exact one, and the
hand-rounding model that tells a rounding difference from a slip.

A difference is *explained by hand rounding of intermediates* when the
value can be reached by doing the step by hand at `decimals` decimals: every
number written down on the way rounded down or up, as the tutorials do.
"""
import math
from dataclasses import dataclass

import numpy as np

from .text import STEPS, _fmt, _labels, _short


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


def _capped(tr, scaled):
    """The soft-cap of scaled scores (identity without softcap); it is
    increasing, so it maps a range's ends to the range's ends."""
    if tr.softcap is None:
        return scaled
    return tr.softcap * np.tanh(scaled / tr.softcap)


def _added(tr, lead=(), i=slice(None), j=slice(None)):
    """bias + alibi (float64) of the cells, 0.0 when neither."""
    add = 0.0
    for t in (tr.bias, tr.alibi):
        if t is not None:
            add = add + t[lead][..., i, j].astype(np.float64)
    return add


def _hand_masked(tr, scaled_r):
    with np.errstate(all="ignore"):
        return np.where(tr.mask, _capped(tr, scaled_r) + _added(tr), -np.inf)


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


def _exact_where_undefined(tr, exact, lo, hi):
    """Fully masked rows and non-finite bounds: no hand range, the exact
    value only."""
    fully = tr.fully_masked_rows[..., None] | ~np.isfinite(lo) | ~np.isfinite(hi)
    return np.where(fully, exact, lo), np.where(fully, exact, hi)


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
            b = _added(tr)
            lo = np.where(tr.mask, _capped(tr, slo) + b, -np.inf)
            hi = np.where(tr.mask, _capped(tr, shi) + b, -np.inf)
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
            lo, hi = _exact_where_undefined(tr, exact, lo, hi)
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
            lo, hi = _exact_where_undefined(tr, exact, lo, hi)
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
            if tr.bias is None and tr.alibi is None and tr.softcap is None:
                return f"allowed: the scaled score {_fmt(sv, d)}", float(sv)
            cv = float(_capped(tr, sv))
            text = (f"{_fmt(sv, d)}" if tr.softcap is None else
                    f"{_short(tr.softcap, d)} * tanh({_fmt(sv, d)} / "
                    f"{_short(tr.softcap, d)}) = {_fmt(cv, d + 1)}")
            for name, t in (("bias", tr.bias), ("alibi", tr.alibi)):
                if t is not None:
                    text += f" + {name} {_fmt(t[lead][i, j], d)}"
            val = cv + float(_added(tr, lead, i, j))
            return f"{text} = {_fmt(val, d + 1)}", val
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
