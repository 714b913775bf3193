"""Numbers and tables as text: the formatting every teaching view shares."""
import math

import numpy as np



STEPS = ("scores", "scaled", "masked", "weights", "output")


def _fmt(x, d):
    """x with d decimals; nan/inf/-inf spelled out; never '-0.000'."""
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    s = f"{x:.{d}f}"
    if s.startswith("-") and float(s) == 0.0:
        s = s[1:]
    return s


def _short(x, d):
    """x with at most d decimals and no trailing zeros (0.9, 1, 0.235)."""
    s = _fmt(x, d)
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s if s not in ("", "-") else "0"


def _elide(n, limit):
    """Indices to show out of n, with None standing for '...'."""
    if n <= limit:
        return list(range(n))
    head = (limit + 1) // 2
    tail = limit - head
    return list(range(head)) + [None] + list(range(n - tail, n))


def _table(a, row_labels, col_labels, d, *, indent="  ", extra=None,
           max_rows=16, max_cols=12):
    """Lines of a labelled text table of the 2-D array `a`.

    extra: optional (header, list of row strings) appended after a '|'.
    """
    a = np.asarray(a)
    nr, nc = a.shape
    rows = _elide(nr, max_rows)
    cols = _elide(nc, max_cols)
    rl = ["..." if r is None else row_labels[r] for r in rows]
    head = ["..." if c is None else col_labels[c] for c in cols]
    body = [[("..." if (r is None or c is None) else _fmt(a[r, c], d))
             for c in cols] for r in rows]
    widths = [max([len(head[k])] + [len(row[k]) for row in body])
              for k in range(len(cols))]
    lw = max([len(x) for x in rl] + [0])
    lines = []
    hdr = " " * lw + "".join("  " + h.rjust(w) for h, w in zip(head, widths))
    if extra is not None:
        ew = max([len(extra[0])] + [len(s) for s in extra[1]])
        hdr += "  | " + extra[0].rjust(ew)
    lines.append(indent + hdr.rstrip() if extra is None else indent + hdr)
    for k, (lab, row) in enumerate(zip(rl, body)):
        line = lab.ljust(lw) + "".join("  " + v.rjust(w)
                                       for v, w in zip(row, widths))
        if extra is not None:
            r = rows[k]
            line += "  | " + ("..." if r is None else extra[1][r]).rjust(ew)
        lines.append(indent + line)
    if nr == 0 or nc == 0:
        lines.append(indent + f"(empty: shape {a.shape})")
    return lines


def _vec(v, d, limit=8):
    """'[0.900, 0.300, ...]' for a 1-D array."""
    idx = _elide(len(v), limit)
    return "[" + ", ".join("..." if k is None else _fmt(v[k], d)
                           for k in idx) + "]"


def _labels(tokens, n):
    return list(tokens) if tokens is not None else [str(i) for i in range(n)]


def _split_tokens(t, what):
    if t is None:
        return None
    if isinstance(t, str):
        return t.split()
    try:
        return [str(x) for x in t]
    except TypeError:
        raise TypeError(f"explain: {what} must be a string or a sequence of "
                        f"strings, not {type(t).__name__}") from None


def _round1(x, d):
    """x rounded to d decimals the way a person does: halves away from 0
    (on the decimal the number stands for: 0.1965 becomes 0.197)."""
    x = float(x)
    if not math.isfinite(x):
        return x
    t = abs(x) * 10.0 ** d
    r = math.floor(t + 0.5 + 1e-9 * max(1.0, t))
    return math.copysign(r / 10.0 ** d, x) if r else 0.0


def _approx(x, d):
    """x with d + 2 decimals (more if needed) so that rounding what is
    printed to d decimals gives x rounded to d decimals."""
    want = _round1(x, d)
    for extra in range(2, 8):
        s = _fmt(x, d + extra)
        if not math.isfinite(float(x)) or _round1(float(s), d) == want:
            return s
    return _fmt(x, d + 8)


def _drift(pairs, d, why):
    """'' when every (name, by hand, exact) agrees at d decimals, else the
    line that says where the hand value and the exact one part (the exact
    one printed as the tables print it)."""
    bad = [(n, _fmt(_round1(h, d), d), _fmt(e, d)) for n, h, e in pairs]
    bad = [b for b in bad if b[1] != b[2]]
    if not bad:
        return ""
    return ("; ".join(f"{n}: exact {e}; by hand {h}" for n, h, e in bad)
            + f" ({why})")
