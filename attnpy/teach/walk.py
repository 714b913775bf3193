"""The printed walk-through of a trace (``print(trace)``) and ``focus``."""
import math
from collections import namedtuple

import numpy as np

from .paths import exp_shift, exp_text
from .text import _drift, _fmt, _round1, _short, _table, _vec


def _par(s):
    """A negative factor in parentheses: 0.8*(-0.5)."""
    return f"({s})" if s.startswith("-") else s


def _blend(weights, V, js, d):
    """sum over j in js of weights[j] * V[j], from the numbers as printed
    (each rounded to d decimals): what a reader gets by hand."""
    out = np.zeros(V.shape[-1])
    for j in js:
        w = _round1(weights[j], d)
        out += np.array([w * _round1(v, d) for v in V[j]])
    return out


def rowsum_lines(tr, indent):
    """'each row sums to 1' with the evidence."""
    w = tr.weights.astype(np.float64)
    sums = w.sum(axis=-1)
    live = ~tr.fully_masked_rows
    tol = 1e-5 if tr.dtype == np.float32 else 1e-12
    if tr.weights.dtype.itemsize == 2:   # float16 / bfloat16 weights:
        # each rounded once by at most u = 2^-11 / 2^-8 of itself, so a
        # row of sum 1 moves by at most u (2u: room for float32's error)
        tol = 2.0 ** (-10 if tr.weights.dtype == np.float16 else -7)
    lines = []
    if live.any():
        dev = np.abs(sums[live] - 1.0)
        worst = float(np.max(dev)) if dev.size else 0.0
        if worst <= tol:
            lines.append(f"{indent}each row sums to 1: yes (every |row sum "
                         f"- 1| <= {tol:.0e}, {tr.dtype} rounding)")
        else:
            lines.append(f"{indent}each row sums to 1: NO (largest |row "
                         f"sum - 1| = {worst:.1e})")
    nf = int(np.count_nonzero(tr.fully_masked_rows))
    if nf:
        what = {"zero": "weights 0 and output 0",
                "uniform": "weights 1/S and output the mean of V",
                "nan": "NaN weights and output",
                "raise": "an error"}[tr.fully_masked]
        lines.append(f"{indent}{nf} fully masked row(s) (no key allowed):"
                     f" fully_masked={tr.fully_masked!r} gives {what}")
    return lines


def summary(tr):
    L, S, E, Ev = tr._dims()
    bs = tr.batch_shape
    n = int(np.prod(bs))
    lines = [f"AttentionTrace of {n} attention problem(s): leading "
             f"dimensions {bs}, each L = {L} queries, S = {S} keys, "
             f"E = {E}, Ev = {Ev}; {tr.dtype}",
             f"  weights {tr.weights.shape}, output "
             f"{tr.output.shape}, scale = {_short(tr.scale, 6)}"]
    lines += rowsum_lines(tr, indent="  ")
    example = ", ".join("0" for _ in bs)
    lines.append(f"Index it for the step-by-step walk-through of one: "
                 f"print(trace[{example}])")
    return "\n".join(lines)


# what every step of the walk-through needs: decimals, sizes, labels
_Walk = namedtuple("_Walk", "d L S E Ev ql kl flabels vlabels")


def _wt_inputs(tr, c):
    """The inputs Q, K, V (once when they are the same X)."""
    d, L, S, E, Ev, ql, kl, flabels, vlabels = c
    out = []
    if tr._same_qkv:
        out.append(f"Inputs: Q = K = V = X, shape ({L}, {E})")
        out += _table(tr.Q, ql, flabels, d)
    else:
        out.append(f"Inputs: Q ({L}, {E}), K ({S}, {E}), V ({S}, {Ev})")
        out.append("  Q")
        out += _table(tr.Q, ql, flabels, d)
        out.append("  K")
        out += _table(tr.K, kl, flabels, d)
        out.append("  V")
        out += _table(tr.V, kl, vlabels, d)
    out.append("")
    return out


def _wt_scores(tr, c):
    """Step 1: scores = Q @ K^T, one product written out."""
    d, L, S, E, ql, kl = c.d, c.L, c.S, c.E, c.ql, c.kl
    out = []
    out.append(f"Step 1. scores = Q @ K^T, shape ({L}, {S})")
    out.append("  scores[i, j] = Q[i] . K[j]: how well query i matches "
               "key j")
    if L and S:
        i, j = 0, (1 if S > 1 else 0)
        q = [_round1(v, d) for v in tr.Q[i]]
        k = [_round1(v, d) for v in tr.K[j]]
        if E <= 8:
            terms = " + ".join(f"{_short(a, d)}*{_par(_short(b, d))}"
                               for a, b in zip(q, k)) or "0"
            hand = sum(a * b for a, b in zip(q, k))
            note = _drift([(f"scores[{i}, {j}]", hand, tr.scores[i, j])],
                          d, "the inputs above are rounded")
            out.append(f"  e.g. scores[{i}, {j}] = {terms} = "
                       f"{_fmt(_round1(hand, d), d)}")
            if note:
                out.append("    " + note)
        else:
            out.append(f"  e.g. scores[{i}, {j}] = (sum of {E} products) = "
                       f"{_fmt(tr.scores[i, j], d)}")
    out += _table(tr.scores, ql, kl, d)
    out.append("")
    return out


def _wt_scaled(tr, c):
    """Step 2: the scale and why."""
    d, E, ql, kl = c.d, c.E, c.ql, c.kl
    out = []
    if tr._scale_how == "default" and E > 0:
        why = (f"1/sqrt(E) = 1/sqrt({E}) = {_short(tr.scale, d + 3)}"
               f", i.e. divide by sqrt({E}) = "
               f"{_short(math.sqrt(E), d + 3)}")
    elif tr._scale_how == "default":
        why = "1 (E = 0)"
    else:
        why = f"{_short(tr.scale, d + 3)} (given)"
    out.append(f"Step 2. scaled = scores * scale, scale = {why}")
    if c.L and c.S:
        i, j = 0, (1 if c.S > 1 else 0)
        sv, sc = _round1(tr.scores[i, j], d), float(_short(tr.scale, d + 3))
        out.append(f"  e.g. scaled[{i}, {j}] = {_fmt(sv, d)} * "
                   f"{_short(sc, d + 3)} = {_fmt(_round1(sv * sc, d), d)}")
        note = _drift([(f"scaled[{i}, {j}]", sv * sc, tr.scaled[i, j])], d,
                      "the score above is rounded")
        if note:
            out.append("    " + note)
    out += _table(tr.scaled, ql, kl, d)
    out.append("")
    return out


def _wt_capped(tr, c):
    """Step 2b (softcap only): the scaled scores squashed by tanh."""
    if tr.softcap is None:
        return []
    cap = _short(tr.softcap, c.d + 3)
    out = [f"Step 2b. capped = softcap * tanh(scaled / softcap), softcap = "
           f"{cap}: every score pulled into (-{cap}, {cap}), small ones "
           "almost unchanged"]
    if c.L and c.S:
        x = _round1(tr.scaled[0, 0], c.d)
        hand = float(cap) * math.tanh(x / float(cap))
        out.append(f"  e.g. capped[0, 0] = {cap} * tanh({_fmt(x, c.d)} / "
                   f"{cap}) = {_fmt(_round1(hand, c.d), c.d)}")
        note = _drift([("capped[0, 0]", hand, tr.capped[0, 0])], c.d,
                      "the scaled score above is rounded")
        if note:
            out.append("    " + note)
    out += _table(tr.capped, c.ql, c.kl, c.d)
    out.append("")
    return out


def _masked_reasons(tr, L, S):
    reasons = []
    if tr._has_mask:
        reasons.append("mask == 0")
    if tr.causal == "top_left":
        reasons.append("causal: key j > query i")
    elif tr.causal == "bottom_right":
        reasons.append(f"causal (bottom right): key j > i + {S - L}")
    left, right = tr.window if tr.window is not None else (None, None)
    parts = ([f"j < i' - {left}"] if left is not None else []) + (
        [f"j > i' + {right}"] if right is not None else [])
    if parts:
        at = f"i + {S - L}" if tr.causal == "bottom_right" else "i"
        reasons.append(f"window: {' or '.join(parts)} (i' = {at})")
    if tr.bias is not None:
        reasons.append("bias -inf")
    return reasons


def _wt_masked(tr, c):
    """Step 3: what is blocked, and the masked table."""
    d, L, S, ql, kl = c.d, c.L, c.S, c.ql, c.kl
    out = []
    reasons = _masked_reasons(tr, L, S)
    terms = ["capped" if tr.softcap is not None else "scaled"]
    terms += ["bias"] * (tr.bias is not None) + ["alibi"] * (
        tr.alibi is not None)
    if reasons or len(terms) > 1:
        out.append(f"Step 3. masked = {' + '.join(terms)} where query i may "
                   f"attend to key j, -inf where it may not "
                   f"({'; '.join(reasons) or 'nothing blocked'})")
        if tr.bias is not None:
            out.append("  bias")
            out += _table(tr.bias, ql, kl, d)
        if tr.alibi is not None:
            out.append("  alibi = -slope * |i' - j|: the farther the key, "
                       "the lower its score")
            out += _table(tr.alibi, ql, kl, d)
        if len(terms) > 1:
            out.append("  masked")
        out += _table(tr.masked, ql, kl, d)
        out.append("  e^-inf = 0, so a blocked key gets weight 0")
    else:
        out.append("Step 3. no mask, no bias, not causal: "
                   f"masked = {terms[0]}")
    out.append("")
    return out


def _wt_weights(tr, c):
    """Step 4: the softmax, one row by hand; returns (lines, that row)."""
    d, L, S, ql, kl = c.d, c.L, c.S, c.ql, c.kl
    out = []
    out.append(f"Step 4. weights = softmax(masked), row by row, shape "
               f"({L}, {S})")
    out.append("  weights[i, j] = e^masked[i, j] / (sum over k of "
               "e^masked[i, k])")
    # the example row: the first that sees two keys (or one, if S == 1)
    counts = np.count_nonzero(tr.mask, axis=-1)
    rows = np.flatnonzero(counts >= min(2, S)) if S else np.array([], int)
    ex = int(rows[0]) if rows.size else None
    if ex is not None:
        out += _softmax_row(tr, ex, d, S, ql)
    sums = tr.weights.astype(np.float64).sum(axis=-1)
    rs = [_fmt(s, d) for s in sums]
    out += _table(tr.weights, ql, kl, d, extra=("row sum", rs))
    out += rowsum_lines(tr, indent="  ")
    out.append("")
    return out, ex


def _softmax_row(tr, i, d, S, ql):
    """Row i of the softmax by hand: every e^x written with d decimals,
    their sum, the quotients, and where those part from the exact weights."""
    ks = [j for j in range(S) if tr.mask[i, j]]
    x = {j: _round1(tr.masked[i, j], d) for j in ks}
    shift = _round1(exp_shift(max(x.values())), d)
    e = {j: _round1(math.exp(x[j] - shift), d) for j in ks}
    tot = _round1(sum(e.values()), d)
    parts = [f"{exp_text(x[j], shift, d)} = {_fmt(e[j], d)}" for j in ks[:6]]
    blocked = S - len(ks)
    keys = "key" if blocked == 1 else "keys"
    note = f" ({blocked} blocked {keys}: e^-inf = 0)" if blocked else ""
    if len(ks) > 6:
        parts.append(f"... ({len(ks)} terms)")
    out = [f"  e.g. row {i} ({ql[i]}): " + ", ".join(parts)
           + f"; sum = {_fmt(tot, d)}{note}"]
    if tot <= 0:
        out.append("    every e^x rounds to 0 at these decimals: the weights "
                   "need more of them")
        return out
    quot = [f"{_fmt(e[j], d)}/{_fmt(tot, d)} = {_fmt(_round1(e[j] / tot, d), d)}"
            for j in ks[:4]]
    out.append(f"    so weights[{i}] = " + ", ".join(quot)
               + (", ..." if len(ks) > 4 else "")
               + (f", 0 for the blocked {keys}" if blocked else ""))
    drift = _drift([(f"weights[{i}, {j}]", e[j] / tot, tr.weights[i, j])
                    for j in ks[:4]], d,
                   f"the e^x above are rounded to {d} decimals")
    if drift:
        out.append("    " + drift)
    return out


def _wt_output(tr, c, c_ex):
    """Step 5: output = weights @ V, and what to try next."""
    d, L, S, Ev, ql, vlabels = c.d, c.L, c.S, c.Ev, c.ql, c.vlabels
    out = []
    out.append(f"Step 5. output = weights @ V, shape ({L}, {Ev})")
    out.append("  output[i] = sum over j of weights[i, j] * V[j]: a blend "
               "of the value rows")
    ex = c_ex
    if ex is not None:
        i = ex
        nz = [j for j in range(S) if tr.weights[i, j] != 0]
        terms = " + ".join(f"{_fmt(tr.weights[i, j], d)} * V[{j}]"
                           for j in nz[:6])
        if len(nz) > 6:
            out.append(f"  e.g. output[{i}] = {terms} + ... ({len(nz)} "
                       "terms)")
        else:
            hand = _blend(tr.weights[i], tr.V, nz, d)
            out.append(f"  e.g. output[{i}] = {terms} = "
                       f"{_vec([_round1(h, d) for h in hand], d)}")
            drift = _drift([(f"output[{i}, {k}]", h, x) for k, (h, x) in
                            enumerate(zip(hand, tr.output[i]))], d,
                           f"the weights above are rounded to {d} decimals")
            if drift:
                out.append("    " + drift)
    out += _table(tr.output, ql, vlabels, d)
    out.append("")
    some = ql[1] if L > 1 else (ql[0] if L else "0")
    hint = (f'trace.focus("{some}")' if tr.tokens is not None
            else f"trace.focus({1 if L > 1 else 0})")
    out.append(f"{hint} writes one output row as a weighted sum of value "
               "rows; trace.check(step, table) checks a table computed "
               "by hand.")
    return out


def walkthrough(tr):
    """The whole walk-through of a one-head trace, as the tutorials do it:
    inputs, then each step with its formula, a worked cell and its table."""
    d = tr._decimals
    L, S, E, Ev = tr._dims()
    c = _Walk(d, L, S, E, Ev, tr._qlabels(), tr._klabels(),
              [str(k) for k in range(E)], [str(k) for k in range(Ev)])
    title = "Attention, step by step"
    if tr.tokens is not None:
        title += ": " + " ".join(tr.key_tokens or tr.tokens)
    out = [title,
           f"L = {L} {'query' if L == 1 else 'queries'}, S = {S} "
           f"key{'' if S == 1 else 's'}, E = {E} features per "
           f"query/key, Ev = {Ev} per value; {tr.dtype}; numbers "
           f"rounded to {d} decimals", ""]
    out += _wt_inputs(tr, c) + _wt_scores(tr, c) + _wt_scaled(tr, c)
    out += _wt_capped(tr, c) + _wt_masked(tr, c)
    lines, ex = _wt_weights(tr, c)
    out += lines + _wt_output(tr, c, ex)
    return "\n".join(out)



class Focus:
    """One output row of a trace as the weighted sum of value rows.

    Made by :meth:`AttentionTrace.focus`. Attributes: ``index`` (0-based
    query index), ``token`` (or None), ``weights`` (the weights row, S),
    ``terms`` (list of ``(j, weight)`` for the keys that contribute, j
    0-based), ``values`` (V, (S, Ev)), ``output`` (the output row, Ev).
    """

    def __init__(self, trace, i, also=()):
        self.index = i
        self._also = list(also)
        self.token = None if trace.tokens is None else trace.tokens[i]
        self.weights = trace.weights[i]
        self.values = trace.V
        self.output = trace.output[i]
        self.fully_masked = bool(trace.fully_masked_rows[i])
        allowed = trace.mask[i]
        if self.fully_masked and trace.fully_masked == "uniform":
            self.terms = [(j, float(self.weights[j]))
                          for j in range(len(self.weights))]
        elif self.fully_masked:
            self.terms = []
        else:
            self.terms = [(j, float(self.weights[j]))
                          for j in range(len(self.weights)) if allowed[j]]
        self._blocked = [j for j in range(len(self.weights))
                         if not allowed[j]]
        self._policy = trace.fully_masked
        self._klabels = trace.key_tokens
        self._decimals = trace.decimals
        self._text = self._render()

    def _render(self):
        d = self._decimals
        i1 = self.index + 1
        who = (f'query "{self.token}" (i = {i1}; Python index {self.index})'
               if self.token is not None
               else f"query i = {i1} (Python index {self.index})")
        lines = [f"output for {who}:"]
        if self._also:
            where = ", ".join(f"i = {k + 1}: see trace.focus({k})"
                              for k in self._also)
            lines.append(f'  ("{self.token}" is also query {where})')
        if self.fully_masked and not self.terms:
            lines.append(f"  output_{i1}: the query may attend to no key "
                         f"(fully masked); fully_masked="
                         f"{self._policy!r} gives "
                         + _vec(self.output, d))
            return "\n".join(lines)
        shown = self.terms[:8]
        rhs = " + ".join(f"{_fmt(w, d)} * V_{j + 1}" for j, w in shown)
        if len(self.terms) > 8:
            rhs += f" + ... ({len(self.terms)} terms)"
        if not self.terms:
            rhs = "0"
        note = ""
        if self._blocked and not self.fully_masked:
            names = ", ".join(f"V_{j + 1}" for j in self._blocked[:6])
            if len(self._blocked) > 6:
                names += ", ..."
            note = f"   (no contribution from {names}: masked)"
        if self.fully_masked:
            note = (f"   (fully masked: fully_masked={self._policy!r} "
                    "gives weights 1/S)")
        lines.append(f"  output_{i1} = {rhs}{note}")
        for j, _ in shown:
            lab = (f' "{self._klabels[j]}"' if self._klabels is not None
                   else "")
            lines.append(f"    V_{j + 1} = V[{j}]{lab} = "
                         f"{_vec(self.values[j], d)}")
        if len(self.terms) > 8:
            lines.append(f"  output_{i1} = {_vec(self.output, d)}")
            return "\n".join(lines)
        hand = _blend(self.weights, self.values, [j for j, _ in self.terms],
                      d)
        lines.append(f"  output_{i1} = "
                     f"{_vec([_round1(h, d) for h in hand], d)}")
        drift = _drift([(f"column {k}", h, x) for k, (h, x) in
                        enumerate(zip(hand, self.output))], d,
                       f"the weights above are rounded to {d} decimals")
        if drift:
            lines.append("    " + drift)
        return "\n".join(lines)

    def __str__(self):
        return self._text

    __repr__ = __str__
