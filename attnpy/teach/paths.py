"""Hand computations of one cell: the paths ``check`` accepts as rounding.

A person doing a step on paper writes every number down with `d`
decimals. The model of ``check``: every number written down is rounded to
nearest, except at most one, which may be rounded the other way (one unit
in the last decimal: the tutorial writes e^0.405 = 1.4993 as 1.500). The
numbers of the previous table are the user's own when given (``previous=``)
and otherwise the exact ones rounded to nearest (or the all-nearest hand
chain's). A cell's value is *explained* when one of these paths gives it.
"""
import math

import numpy as np

from .text import _approx, _fmt, _round1, _short


def other_way(x, d):
    """x rounded the other way at d decimals (None when x is exact there)."""
    near = _round1(x, d)
    if abs(near - x) <= 1e-9 * max(1.0, abs(x)) * 10.0 ** -d or \
            not math.isfinite(x):
        return None
    step = 10.0 ** -d
    return round(near - step if near > x else near + step, d + 2)


class _Path:
    """One way of writing the numbers of a cell: all to nearest, or `dev`
    (a slot name) the other way. Records the slots it meets."""

    def __init__(self, d, dev=None):
        self.d, self.dev = d, dev
        self.slots = []
        self.moved = None          # how far the deviating number moved

    def r(self, slot, x):
        """x as written down: nearest, or the other way for slot `dev`."""
        self.slots.append(slot)
        if slot == self.dev:
            o = other_way(x, self.d)
            if o is not None:
                self.moved = abs(o - x)
                return o
        return _round1(x, self.d)


def _scores(tr, lead, i, j, p, prev):
    q, k = tr.Q[lead][i].astype(float), tr.K[lead][j].astype(float)
    d = p.d
    t = [p.r(("prod", m), a * b) for m, (a, b) in enumerate(zip(q, k))]
    parts = [f"{_short(a, d + 3)}*{_short(b, d + 3)} = {_fmt(v, d)}"
             for a, b, v in zip(q[:6], k[:6], t[:6])]
    if len(t) > 6:
        parts.append("...")
    val = float(sum(t))
    return val, ", ".join(parts) + f"; sum = {_fmt(val, d)}"


def _scaled(tr, lead, i, j, p, prev):
    sv = prev(p, j)
    c = tr.scale                  # as given, or written with d decimals
    p.slots.append("scale")
    if p.dev == "scale" and _round1(c, p.d) != c:
        c, p.moved = _round1(c, p.d), abs(_round1(c, p.d) - c)
    val = sv * c
    return val, (f"{_fmt(sv, p.d)} * {_short(c, p.d + 3)} = "
                 f"{_approx(val, p.d)}")


def _masked(tr, lead, i, j, p, prev):
    if not tr.mask[lead][i, j]:
        return -math.inf, "blocked: -inf"
    sv = prev(p, j)
    d = p.d
    if tr.bias is None and tr.alibi is None and tr.softcap is None:
        return sv, f"allowed: the scaled score {_fmt(sv, d)}"
    if tr.softcap is None:
        cv, text = sv, _fmt(sv, d)
    else:
        cap = tr.softcap
        cv = p.r("cap", cap * math.tanh(sv / cap))
        text = (f"{_short(cap, d + 3)} * tanh({_fmt(sv, d)} / "
                f"{_short(cap, d + 3)}) = {_fmt(cv, d)}")
    val = cv
    for name, t in (("bias", tr.bias), ("alibi", tr.alibi)):
        if t is not None:
            b = float(t[lead][i, j])
            text += f" + {name} {_short(b, d + 3)}"
            val += b
    return val, f"{text} = {_approx(val, d)}"


def exp_shift(top):
    """Hand softmax takes e^x; with very large or very small scores it
    takes e^(x - top), which gives the same weights."""
    return top if (top > 30 or top < -5) else 0.0


def exp_text(x, shift, d):
    """'e^0.58' or 'e^(31.2 - 31.2)'."""
    if shift == 0.0:
        return f"e^{_short(x, d)}"
    sign = "-" if shift > 0 else "+"
    return f"e^({_short(x, d)} {sign} {_short(abs(shift), d)})"


def _weights(tr, lead, i, j, p, prev):
    d = p.d
    allowed = tr.mask[lead][i]
    if tr.fully_masked_rows[lead][i]:
        w = float(tr.weights[lead][i, j])
        return w, (f"fully masked row: fully_masked={tr.fully_masked!r} "
                   f"gives {_fmt(w, d)}")
    if not allowed[j]:
        return 0.0, "blocked key: weight 0"
    ks = [k for k in range(len(allowed)) if allowed[k]]
    x = {k: prev(p, k) for k in ks}
    shift = _round1(exp_shift(max(x.values())), d)
    e = {k: p.r(("e", k), math.exp(x[k] - shift)) for k in ks}
    parts = [f"{exp_text(x[k], shift, d)} = {_fmt(e[k], d)}" for k in ks[:6]]
    if len(ks) > 6:
        parts.append("...")
    tot = float(sum(e.values()))
    if tot <= 0:
        w = float(tr.weights[lead][i, j])
        return w, ", ".join(parts) + "; sum = 0: every e^x rounds to 0"
    val = e[j] / tot
    return val, (", ".join(parts) + f"; sum = {_fmt(tot, d)}; "
                 f"{_fmt(e[j], d)}/{_fmt(tot, d)} = {_approx(val, d)}")


def _output(tr, lead, i, j, p, prev):
    d = p.d
    if tr.fully_masked_rows[lead][i]:
        o = float(tr.output[lead][i, j])
        return o, (f"fully masked row: fully_masked={tr.fully_masked!r} "
                   f"gives {_fmt(o, d)}")
    v = tr.V[lead][:, j].astype(float)
    ks = [k for k in range(len(v)) if tr.mask[lead][i, k]]
    w = {k: prev(p, k) for k in ks}
    t = {k: p.r(("prod", k), w[k] * v[k]) for k in ks}
    parts = [f"{_fmt(w[k], d)}*{_short(v[k], d + 3)} = {_fmt(t[k], d)}"
             for k in ks[:6]]
    if len(ks) > 6:
        parts.append("...")
    val = float(sum(t.values()))
    return val, ", ".join(parts) + f"; sum = {_fmt(val, d)}"


CELL = {"scores": _scores, "scaled": _scaled, "masked": _masked,
        "weights": _weights, "output": _output}


def _fast(tr, step, lead, i, j, d, row):
    """{slot: (value, moved)} of the one-number-moved paths of a sum or a
    softmax cell, each in O(1) from the all-nearest numbers (None for the
    steps whose cells are O(1) anyway). Only a guide: the chosen path is
    recomputed in full."""
    def dev(x):
        o = other_way(x, d)
        return None if o is None else (o, abs(o - x))

    out = {}
    if step == "scores":
        prods = [a * b for a, b in zip(tr.Q[lead][i].astype(float),
                                       tr.K[lead][j].astype(float))]
        t = [_round1(x, d) for x in prods]
        tot = sum(t)
        for m, x in enumerate(prods):
            o = dev(x)
            if o is not None:
                out[("prod", m)] = (tot - t[m] + o[0], o[1])
        return out
    if step == "output" and not tr.fully_masked_rows[lead][i]:
        v = tr.V[lead][:, j].astype(float)
        ks = [k for k in range(len(v)) if tr.mask[lead][i, k]]
        w = {k: _round1(row[k][0], d) if not row[k][1] else row[k][0]
             for k in ks}
        t = {k: _round1(w[k] * v[k], d) for k in ks}
        tot = sum(t.values())
        for k in ks:
            o = None if row[k][1] else dev(row[k][0])
            if o is not None:
                out[("prev", k)] = (tot - t[k] + _round1(o[0] * v[k], d), o[1])
            o = dev(w[k] * v[k])
            if o is not None:
                out[("prod", k)] = (tot - t[k] + o[0], o[1])
        return out
    if step == "weights" and tr.mask[lead][i, j] and \
            not tr.fully_masked_rows[lead][i]:
        ks = [k for k in range(len(row)) if tr.mask[lead][i, k]]
        x = {k: row[k][0] if row[k][1] else _round1(row[k][0], d)
             for k in ks}
        shift = _round1(exp_shift(max(x.values())), d)
        e = {k: _round1(math.exp(x[k] - shift), d) for k in ks}
        tot = sum(e.values())
        for k in ks:
            for slot, new in ((("prev", k), None if row[k][1] else dev(
                    row[k][0])), (("e", k), dev(math.exp(x[k] - shift)))):
                if new is None:
                    continue
                ek = new[0] if slot[0] == "e" else _round1(
                    math.exp(new[0] - shift), d)
                s2 = tot - e[k] + ek
                if s2 > 0:
                    out[slot] = ((ek if k == j else e[j]) / s2, new[1])
        return out
    return None


def cell_paths(tr, step, idx, d, bases, search=True, expected=None,
               tol=0.0):
    """The accepted hand paths of one cell: a list of (value, text, cost,
    moved), the all-nearest paths first (cost 0).

    bases: for each way of writing the previous table, a function
    row -> list of (value, fixed) of the previous step's row i (fixed:
    the user's number, never rounded the other way). search False: the
    all-nearest paths only. With `expected`, the paths of a sum or softmax
    cell are screened quickly and only those that give `expected` (within
    tol) are written out, with the extremes of the others' values.
    """
    *lead, i, j = idx
    lead = tuple(lead)
    fn = CELL[step]
    out, runs = [], []
    for base in bases:
        row = base(lead, i) if base is not None else []

        def run(slot, row=row):
            def prev(p, k):
                v, fixed = row[k]
                return v if fixed else p.r(("prev", k), v)
            p = _Path(d, slot)
            val, text = fn(tr, lead, i, j, p, prev)
            return p, val, text

        p0, val, text = run(None)
        out.append((val, text, 0, 0.0))
        if not search:
            continue
        fast = None if expected is None else _fast(tr, step, lead, i, j, d,
                                                   row)
        if fast is None:
            for slot in dict.fromkeys(p0.slots):
                p, val, text = run(slot)
                if p.moved is not None:
                    out.append((val, text, 1, p.moved))
            continue
        for slot, (val, moved) in fast.items():
            runs.append((run, slot))
            out.append((val, len(runs) - 1, 1, moved))
    if expected is not None and runs:
        _write_out_best(out, runs, expected, tol)
    return [(v, t if isinstance(t, str) else "", c, m) for v, t, c, m in out]


def _write_out_best(out, runs, expected, tol):
    """Write out in full (text and exact value) the quickly screened path
    that best gives `expected`; a screened value that the full path does
    not confirm is replaced by the full one."""
    order = sorted(range(len(out)), key=lambda n: (out[n][2], out[n][3]))
    for n in order:
        val, text, cost, moved = out[n]
        if isinstance(text, str) or abs(val - expected) > tol:
            continue
        run, slot = runs[text]
        p, val, text = run(slot)
        out[n] = (val, text, cost, moved)
        if abs(val - expected) <= tol:
            return


def best_path(paths, expected, tol):
    """The path that gives `expected` with the fewest numbers rounded the
    other way, and of those the smallest move; None if none does."""
    hits = [p for p in paths if abs(p[0] - expected) <= tol and (
        p[1] or p[2] == 0)]
    if not hits:
        return None
    return min(hits, key=lambda p: (p[2], p[3]))


def as_rows(a, fixed=None):
    """A base from a float64 table (..., L, n): row -> [(value, fixed)];
    `fixed` (bool, the table's shape): the user's own numbers."""
    a = np.asarray(a, np.float64)
    fixed = np.zeros(a.shape, bool) if fixed is None else fixed

    def base(lead, i):
        return [(float(v), bool(f)) for v, f in zip(a[lead][i],
                                                    fixed[lead][i])]
    return base

