"""Every worked line of the teaching output adds up as printed.

The walk-through (print(trace)), focus(), the backward trace and
``python -m attnpy`` write cells out by hand. Here those lines are parsed
back and redone in exact decimal arithmetic from the numbers printed on
them: printed terms must add up to the printed sum, printed quotients must
round to the printed result, and where the hand value differs from the
exact table the line must say so ("exact 0.240; by hand 0.241").
"""
import math
import re
from decimal import ROUND_HALF_UP, Decimal, getcontext

import numpy as np
import pytest

import attnpy

getcontext().prec = 50
NUM = r"-?\d+(?:\.\d+)?"


def rnd(x, d=3):
    """Half away from zero at d decimals, on the decimal value."""
    return Decimal(x).quantize(Decimal(1).scaleb(-d), rounding=ROUND_HALF_UP)


def D(s):
    return Decimal(s.strip("()"))


def drift_ok(text, name, hand, shown):
    """The hand value, rounded, is what the table shows (`shown`, a
    Decimal as printed), or the text says 'name: exact <shown>; by hand
    <hand rounded>'."""
    if rnd(hand) == shown:
        return True
    return f"{name}: exact {shown}; by hand {rnd(hand)}" in text


def table(text, title, nrows):
    """{row label: [floats]} of the first table after the line starting
    with `title` (or the line containing it)."""
    lines = text.splitlines()
    k = next(n for n, ln in enumerate(lines) if ln.startswith(title))
    while not re.match(r"^\s+\S+(\s+\S+)+$", lines[k + 1]) or "=" in lines[k + 1]:
        k += 1
    out = {}
    for ln in lines[k + 2:k + 2 + nrows]:
        parts = ln.split("|")[0].split()
        out[parts[0]] = [Decimal(v) if v != "-inf" else None for v in parts[1:]]
    return out


def check_walkthrough(text, tr):
    L, S = tr.weights.shape
    inputs = table(text, "Inputs:", L)
    # Step 1: scores[i, j] = a*b + ... = r
    m = re.search(rf"e\.g\. scores\[(\d+), (\d+)\] = (.*) = ({NUM})\n", text)
    terms = [t.split("*") for t in m.group(3).split(" + ")]
    total = sum(D(a) * D(b) for a, b in terms)
    assert rnd(total) == D(m.group(4)), m.group(0)
    i, j = int(m.group(1)), int(m.group(2))
    shown = list(table(text, "Step 1.", L).values())[i][j]
    assert drift_ok(text, f"scores[{i}, {j}]", total, shown)
    # Step 2: scaled[i, j] = s * c = r
    m = re.search(rf"e\.g\. scaled\[(\d+), (\d+)\] = ({NUM}) \* ({NUM}) = ({NUM})",
                  text)
    assert rnd(D(m.group(3)) * D(m.group(4))) == D(m.group(5)), m.group(0)
    # Step 4: e^x = e, ...; sum = s;  e/s = w, ...
    m = re.search(r"e\.g\. row (\d+) \(\S+\): (.*); sum = (" + NUM + ")", text)
    i = int(m.group(1))
    es = []
    for x, e in re.findall(rf"e\^({NUM}) = ({NUM})", m.group(2)):
        assert rnd(math.exp(float(x))) == D(e), (x, e)
        es.append(D(e))
    assert sum(es) == D(m.group(3)), m.group(0)       # the terms add up
    m2 = re.search(rf"so weights\[{i}\] = (.*)", text)
    weights = table(text, "Step 4.", L)
    row = list(weights.values())[i]
    cols = [k for k in range(S) if tr.mask[i, k]]
    for k, (a, s, w) in zip(cols, re.findall(rf"({NUM})/({NUM}) = ({NUM})",
                                             m2.group(1))):
        assert rnd(D(a) / D(s)) == D(w), (a, s, w)
        assert drift_ok(text, f"weights[{i}, {k}]", D(a) / D(s), row[k])
    # Step 5: output[i] = w * V[j] + ... = [vector], V from the inputs table
    m = re.search(r"e\.g\. output\[(\d+)\] = (.*) = \[(.*)\]", text)
    i = int(m.group(1))
    V = [vals for vals in (inputs if tr._same_qkv else {}).values()]
    hand = [Decimal(0)] * tr.V.shape[1]
    for w, j in re.findall(rf"({NUM}) \* V\[(\d+)\]", m.group(2)):
        hand = [h + D(w) * v for h, v in zip(hand, V[int(j)])]
    printed = [D(v) for v in m.group(3).split(", ")]
    out = list(table(text, "Step 5.", L).values())[i]
    for k, (h, p) in enumerate(zip(hand, printed)):
        assert rnd(h) == p, (k, h, p)
        assert drift_ok(text, f"output[{i}, {k}]", h, out[k])


def check_focus(text, tr):
    m = re.search(r"output_(\d+) = (.*?)(?:   \(|\n)", text)
    weights = {int(j): D(w) for w, j in
               re.findall(rf"({NUM}) \* V_(\d+)", m.group(2))}
    V = {int(j): [D(v) for v in vec.split(", ")] for j, vec in
         re.findall(r"V_(\d+) = V\[\d+\](?: \"\S+\")? = \[(.*)\]", text)}
    hand = [sum(weights[j] * V[j][k] for j in weights)
            for k in range(tr.V.shape[1])]
    res = re.findall(r"output_\d+ = \[(.*)\]", text)[-1]
    printed = [D(v) for v in res.split(", ")]
    i = int(m.group(1)) - 1
    for k, (h, p) in enumerate(zip(hand, printed)):
        assert rnd(h) == p, (text, k)
        assert drift_ok(text, f"column {k}", h,
                        Decimal(f"{tr.output[i, k]:.3f}".replace("-0.000", "0.000")))


def check_backward(text):
    m = re.search(rf"= ({NUM}) \* \(({NUM}) - ({NUM})\) = ({NUM})", text)
    if m:
        assert rnd(D(m.group(1)) * (D(m.group(2)) - D(m.group(3)))) == \
            D(m.group(4)), m.group(0)
    for m in re.finditer(rf"by hand: d[QK]\[.*?\] = ({NUM}) \* \((.*)\) = "
                         rf"({NUM})", text):
        terms = [t.split("*") for t in m.group(2).split(" + ")]
        total = D(m.group(1)) * sum(D(a) * D(b) for a, b in terms)
        assert rnd(total) == D(m.group(3)), m.group(0)
    m = re.search(rf"e\.g\. dX\[.*?\] = ({NUM}) \+ ({NUM}) \+ ({NUM}) = ({NUM})",
                  text)
    if m:
        assert D(m.group(1)) + D(m.group(2)) + D(m.group(3)) == D(m.group(4))


def one_decimal_inputs(n, seed):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        yield np.round(rng.uniform(-1, 1, (3, 4)), 1) + 0.0


@pytest.mark.parametrize("causal", [False, True])
def test_worked_lines_add_up_over_random_one_decimal_inputs(causal):
    drifted = 0
    for X in one_decimal_inputs(200, seed=11 if causal else 12):
        tr = attnpy.explain(X, X, X, causal=causal)
        text = str(tr)
        check_walkthrough(text, tr)
        drifted += "by hand" in text
        for i in range(3):
            check_focus(str(tr.focus(i)), tr)
        bw = tr.backward(np.round(np.cos(X * 7), 1))
        check_backward(str(bw))
    assert drifted > 0     # the lines that part from the table say so


def test_worked_lines_with_a_mask_and_other_decimals():
    rng = np.random.default_rng(5)
    for X in one_decimal_inputs(100, seed=13):
        mask = rng.random((3, 3)) < 0.7
        mask[np.arange(3), rng.integers(0, 3, 3)] = True
        tr = attnpy.explain(X, X, X, mask=mask)
        check_walkthrough(str(tr), tr)
        for i in range(3):
            check_focus(str(tr.focus(i)), tr)


def test_the_reported_inputs():
    X = np.array([[-0.9, 0, -0.1, 0.8], [0.3, 0, 0, -0.5],
                  [-1, -0.6, 0.4, -0.6]])
    text = str(attnpy.explain(X, X, X))
    assert "sum = 3.999" in text          # 2.075 + 0.715 + 1.209
    X = np.array([[0.8, 0.3, 0.1, -0.2], [-0.2, -0.5, -0.9, 0.8],
                  [-0.1, 0.1, -0.4, 0.5]])
    text = str(attnpy.explain(X, X, X, causal=True))
    assert "0.756/3.143 = 0.241, 2.387/3.143 = 0.759" in text
    assert "weights[1, 0]: exact 0.240; by hand 0.241" in text
    cat = np.array([[0.9, 0.3, 0.1, 0.5], [0.1, 0.8, 0.4, 0.2],
                    [0.6, 0.1, 0.9, 0.3]])
    focus = str(attnpy.explain(cat, cat, cat, tokens="the cat sat").focus("cat"))
    assert "output_2 = [0.506, 0.421, 0.468, 0.324]" in focus
    assert "column 2: exact 0.469; by hand 0.468" in focus


def test_rowsum_line_states_a_bound_not_a_platform_value():
    cat = np.array([[0.9, 0.3, 0.1, 0.5], [0.1, 0.8, 0.4, 0.2],
                    [0.6, 0.1, 0.9, 0.3]])
    for dtype in (np.float64, np.float32):
        text = str(attnpy.explain(*(cat.astype(dtype),) * 3))
        assert "each row sums to 1: yes (every |row sum - 1| <= " in text
        assert "e-16" not in text and "0.0e+00" not in text


def test_backward_names_dx_when_q_k_v_are_one_x():
    cat = np.array([[0.9, 0.3, 0.1, 0.5], [0.1, 0.8, 0.4, 0.2],
                    [0.6, 0.1, 0.9, 0.3]])
    bw = attnpy.explain(cat, cat, cat).backward(np.ones((3, 4)))
    assert "dX = dQ + dK + dV" in str(bw)
    bw = attnpy.explain(cat, cat[::-1], cat).backward(np.ones((3, 4)))
    assert "dX" not in str(bw)


def test_focus_names_the_other_occurrences_of_a_token():
    X = np.round(np.random.default_rng(0).uniform(-1, 1, (6, 4)), 1)
    tr = attnpy.explain(X, X, X, tokens="the cat sat on the mat")
    text = str(tr.focus("the"))
    assert '"the" is also query i = 5: see trace.focus(4)' in text
    assert "also" not in str(tr.focus("cat"))
