"""The backward pass of one attention call, step by step: ``trace.backward``.

Given ``d_output`` (the gradient of a loss with respect to the attention's
output), the chain rule runs the forward steps in reverse:

=====  ===============================================  ==========
step   formula                                          shape
=====  ===============================================  ==========
dV     ``weights^T @ d_output``                         (..., S, Ev)
dP     ``d_output @ V^T``                               (..., L, S)
dS     ``weights * (dP - D)``, ``D = rowsum(d_output *  (..., L, S)
       output)`` (softmax's backward pass)
dQ     ``scale * dS @ K``                               (..., L, E)
dK     ``scale * dS^T @ Q``                             (..., S, E)
=====  ===============================================  ==========

``dS`` is also the gradient with respect to the bias; a masked cell has
weight 0, so it gets 0. A fully masked row's weights do not depend on its
scores ("zero", "uniform"): its dS row is 0. With soft-capping, dQ and dK
are computed from ``dS * (1 - (capped / softcap)^2)``, the gradient with
respect to the scaled scores (tanh' = 1 - tanh^2); dS stays the bias's.
The tables are computed in NumPy from the forward trace's exact weights and
output.
"""
import numpy as np

from .handcheck import CellDiff, CheckReport, _decimals_arg, _expected_array
from .text import _drift, _fmt, _labels, _round1, _short, _table

STEPS = ("dV", "dP", "dS", "dQ", "dK")

_FORMULAS = {
    "dV": "dV = weights^T @ d_output",
    "dP": "dP = d_output @ V^T",
    "dS": "dS = weights * (dP - D), D = rowsum(d_output * output)",
    "dQ": "dQ = scale * dS @ K",
    "dK": "dK = scale * dS^T @ Q",
}


def _t(a):
    return np.swapaxes(a, -1, -2)


def _grads(P, O, dO, Q, K, V, scale, dead, dfac=1.0):
    """(dV, dP, D, dS, dQ, dK) in float64 from float64 tables; dfac: the
    soft-cap's derivative (1.0 without)."""
    with np.errstate(invalid="ignore"):
        dV = np.matmul(_t(P), dO)
        dP = np.matmul(dO, _t(V))
        D = np.sum(dO * O, axis=-1)
        dS = P * (dP - D[..., None])
        dS = np.where(dead[..., None], 0.0, dS)
        dQ = scale * np.matmul(dS * dfac, K)
        dK = scale * np.matmul(_t(dS * dfac), Q)
    return dV, dP, D, dS, dQ, dK


class BackwardTrace:
    """Every table of the backward pass of one attention call.

    Made by :meth:`AttentionTrace.backward`. All arrays are read-only, of
    the trace's dtype, with its leading dimensions.

    Attributes
    ----------
    forward : AttentionTrace
        The forward pass differentiated.
    d_output : ndarray, (..., L, Ev)
        The gradient of the loss with respect to the output.
    dV : ndarray, (..., S, Ev)
    dP : ndarray, (..., L, S)
        Gradient with respect to the weights.
    D : ndarray, (..., L)
        ``rowsum(d_output * output)`` (= ``rowsum(weights * dP)``).
    dS : ndarray, (..., L, S)
        Gradient with respect to the masked scores (the softmax's input),
        and so with respect to the bias.
    dQ : ndarray, (..., L, E)
    dK : ndarray, (..., S, E)
    """

    def __init__(self, forward, d_output):
        tr = forward
        f64 = [np.asarray(a, np.float64) for a in
               (tr.weights, tr.output, d_output, tr.Q, tr.K, tr.V)]
        # the rows whose weights do not depend on their scores
        dead = tr.fully_masked_rows & (tr.fully_masked != "nan")
        self._dfac = 1.0
        if tr.softcap is not None:
            self._dfac = 1 - (tr.capped.astype(np.float64) / tr.softcap) ** 2
        tables = _grads(*f64, tr.scale, dead, self._dfac)
        self.forward = tr
        self.d_output = np.array(d_output, dtype=tr.dtype)
        for name, a in zip(("dV", "dP", "D", "dS", "dQ", "dK"), tables):
            setattr(self, name, a.astype(tr.dtype))
        for name in ("d_output", "dV", "dP", "D", "dS", "dQ", "dK"):
            getattr(self, name).setflags(write=False)
        self._dead = dead

    @property
    def steps(self):
        """The step names, in order: dV, dP, dS, dQ, dK."""
        return STEPS

    def __repr__(self):
        return (f"<BackwardTrace dQ {self.dQ.shape}, dK {self.dK.shape}, "
                f"dV {self.dV.shape}, {self.dQ.dtype}>")

    # -- the cells by hand ------------------------------------------------

    def _hand_tables(self, d):
        """The tables recomputed from every input table rounded to d
        decimals, as a person working from the printed tables would."""
        tr = self.forward
        r = [np.round(np.asarray(a, np.float64), d) for a in
             (tr.weights, tr.output, self.d_output, tr.Q, tr.K, tr.V)]
        dV, dP, _, _, _, _ = _grads(*r, tr.scale, self._dead, self._dfac)
        D = np.round(self.D.astype(np.float64), d)
        P, dPr = r[0], np.round(self.dP.astype(np.float64), d)
        with np.errstate(invalid="ignore"):
            dS = np.where(self._dead[..., None], 0.0, P * (dPr - D[..., None]))
        dSr = np.round(self.dS.astype(np.float64), d) * self._dfac
        dQ = tr.scale * np.matmul(dSr, r[4])
        dK = tr.scale * np.matmul(_t(dSr), r[3])
        return dict(dV=dV, dP=dP, dS=dS, dQ=dQ, dK=dK)

    def _how(self, step, idx, d):
        """The computation of one cell, written out with d decimals, its
        result from the numbers as written (and the exact value where the
        two part)."""
        tr = self.forward
        r = lambda x: _round1(x, d)  # noqa: E731
        f = lambda x: _fmt(x, d)  # noqa: E731
        *b, i, j = idx
        b = tuple(b)
        name = f"{step}[{', '.join(str(k) for k in idx)}]"
        if step == "dS":
            P, dP, D = (r(tr.weights[b + (i, j)]), r(self.dP[b + (i, j)]),
                        r(self.D[b + (i,)]))
            if self._dead[b + (i,)]:
                return "0 (a fully masked row: its weights ignore the scores)"
            hand = P * (dP - D)
            text = (f"weights * (dP - D) = {f(P)} * ({f(dP)} - {f(D)}) = "
                    f"{f(r(hand))}")
        else:
            dSc = self.dS * self._dfac          # the scaled scores' gradient
            a, x, pre = {
                "dV": (_t(tr.weights), self.d_output, ""),
                "dP": (self.d_output, _t(tr.V), ""),
                "dQ": (dSc, tr.K, _short(tr.scale, 6)),
                "dK": (_t(dSc), tr.Q, _short(tr.scale, 6)),
            }[step]
            row = [r(v) for v in a[b + (i,)]]
            col = [r(v) for v in x[b + (slice(None), j)]]
            terms = " + ".join(f"{f(p)}*{f(q)}" for p, q in zip(row, col))
            hand = sum(p * q for p, q in zip(row, col))
            if pre:
                hand *= float(pre)
                text = f"{pre} * ({terms}) = {f(r(hand))}"
            else:
                text = f"{terms} = {f(r(hand))}"
        drift = _drift([(name, hand, getattr(self, step)[idx])], d,
                       "the numbers above are rounded")
        return text + (f"\n    {drift}" if drift else "")

    # -- check ------------------------------------------------------------

    def check(self, step, expected, decimals=None):
        """Compare a gradient table computed by hand with the exact one.

        A cell that differs from the exact value by more than rounding at
        `decimals` is *explained by hand rounding* when it is what the
        step's formula gives from the printed tables (each rounded to
        `decimals`), rounded to `decimals`.

        Parameters
        ----------
        step : {"dV", "dP", "dS", "dQ", "dK"}
        expected : array_like
            Your table, the shape of that step (None: a cell not checked).
        decimals : int, optional
            The decimals the table was computed with; by default read off
            the table (the most decimals any cell shows).

        Returns
        -------
        CheckReport
            As :meth:`AttentionTrace.check`'s.

        Examples
        --------
        >>> import numpy as np
        >>> from attnpy import explain
        >>> X = np.array([[1.0, 0.0], [0.0, 1.0]])
        >>> bw = explain(X, X, X).backward([[1.0, 0.0], [0.0, 0.0]])
        >>> bw.dV.round(3)
        array([[0.67, 0.  ],
               [0.33, 0.  ]])
        >>> bw.check("dV", [[0.67, 0.0], [0.33, 0.0]]).ok
        True
        >>> bw.check("dV", [[0.67, 0.0], [0.5, 0.0]]).ok   # a slip
        False
        """
        if step not in STEPS:
            raise ValueError(f"BackwardTrace.check: step must be one of "
                             f"{STEPS}, not {step!r}")
        exact = getattr(self, step).astype(np.float64)
        vals, given = _expected_array(expected, exact.shape, step,
                                      "BackwardTrace.check")
        d = _decimals_arg(decimals, "BackwardTrace.check", expected, given)
        hand = self._hand_tables(d)[step]
        tol = 0.5 * 10.0 ** -d + 1e-9 * np.maximum(1.0, np.abs(exact))
        with np.errstate(invalid="ignore"):
            match = np.abs(vals - exact) <= tol
            explained = np.abs(vals - np.round(hand, d)) <= tol
        rl, cl = self._labels(step)
        diffs = []
        for idx in zip(*np.nonzero(given & ~match)):
            idx = tuple(int(k) for k in idx)
            e, x, h = float(vals[idx]), float(exact[idx]), float(hand[idx])
            diffs.append(CellDiff(
                index=idx, row=rl[idx[-2]], col=cl[idx[-1]], expected=e,
                exact=x, diff=e - x, explained=bool(explained[idx]), hand=h,
                hand_low=h, hand_high=h, how=self._how(step, idx, d)))
        return CheckReport(step, d, int(np.count_nonzero(given)), diffs, [])

    # -- the walk-through -------------------------------------------------

    def _labels(self, step):
        tr = self.forward
        L, S = tr.weights.shape[-2:]
        ql, kl = _labels(tr.tokens, L), _labels(tr.key_tokens, S)
        feats = [str(k) for k in range(getattr(self, step).shape[-1])]
        return {"dV": (kl, feats), "dP": (ql, kl), "dS": (ql, kl),
                "dQ": (ql, feats), "dK": (kl, feats)}[step]

    def _worked_cell(self, step):
        """The cell of largest magnitude of a step, for the hand example."""
        a = np.abs(np.nan_to_num(getattr(self, step).astype(np.float64)))
        return tuple(int(k) for k in np.unravel_index(np.argmax(a), a.shape))

    def _dx_lines(self, d):
        """Q = K = V = X: the gradient of X is the sum of the three."""
        dX = sum(getattr(self, n).astype(np.float64) for n in ("dQ", "dK",
                                                                 "dV"))
        rl, cl = self._labels("dQ")
        lines = ["Q = K = V = X, so X gets all three gradients: "
                 "dX = dQ + dK + dV, shape " + str(dX.shape)]
        lines += _table(dX, rl, cl, d)
        if dX.size:
            t = [_round1(getattr(self, n)[0, 0], d) for n in ("dQ", "dK",
                                                               "dV")]
            lines.append(f"  e.g. dX[{rl[0]}, {cl[0]}] = " + " + ".join(
                _fmt(v, d) for v in t) + f" = {_fmt(_round1(sum(t), d), d)}")
            drift = _drift([(f"dX[{rl[0]}, {cl[0]}]", sum(t), dX[0, 0])], d,
                           "the three terms above are rounded")
            if drift:
                lines.append("    " + drift)
        return lines

    def __str__(self):
        tr = self.forward
        d = tr.decimals
        if tr.batch_shape:
            return (f"{self!r}\nIndex the forward trace for the walk-through "
                    f"of one head: trace[{', '.join('0' for _ in tr.batch_shape)}]"
                    ".backward(d_output)")
        lines = [f"Backward pass: d_output = dLoss/d(output) given, shape "
                 f"{self.d_output.shape}; scale = {_short(tr.scale, 6)}"]
        for k, step in enumerate(STEPS, 1):
            a = getattr(self, step)
            lines.append(f"Step {k}. {_FORMULAS[step]}, shape {a.shape}")
            rl, cl = self._labels(step)
            extra = (("D", [_fmt(v, d) for v in self.D]) if step == "dS"
                     else None)
            lines += _table(a, rl, cl, d, extra=extra)
            if step == "dS" and tr.softcap is not None:
                lines.append(f"  soft-cap: dQ and dK use dS * (1 - (capped / "
                             f"{_short(tr.softcap, 6)})^2), the gradient of "
                             "the scaled scores (tanh' = 1 - tanh^2)")
            if step in ("dS", "dQ") and a.size:
                idx = self._worked_cell(step)
                lines.append(f"  by hand: {step}[{rl[idx[0]]}, {cl[idx[1]]}]"
                             f" = {self._how(step, idx, d)}")
        if tr._same_qkv:
            lines += self._dx_lines(d)
        lines.append("dQ, dK, dV: the gradients with respect to Q, K, V; dS "
                     "is also the bias's. Check a table of yours with "
                     "check(step, table).")
        return "\n".join(lines)


def backward(trace, d_output):
    """See AttentionTrace.backward."""
    fname = "AttentionTrace.backward"
    try:
        g = np.asarray(d_output)
    except Exception as exc:  # noqa: BLE001 -- any conversion failure
        raise TypeError(f"{fname}: d_output must be an array of real "
                        f"numbers") from exc
    if g.dtype.kind not in "biuf":
        raise TypeError(f"{fname}: d_output must be an array of real "
                        f"numbers, got dtype {g.dtype}")
    if g.shape != trace.output.shape:
        raise ValueError(f"{fname}: d_output must have the output's shape "
                         f"{trace.output.shape}, got {g.shape}")
    return BackwardTrace(trace, g)
