"""attnpy.explain and AttentionTrace: the tutorials' worked examples, checked.

The expected tables below are copied from the attention tutorials ("the
cat sat", the GPT-2 causal table, "I love Paris"):
they are the specification the walk-through must reproduce. Everything
else is computed here with NumPy.
"""
import html.parser
import os
import re
import runpy
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import attnpy
from attnpy import teach
from attnpy.teach import explain, show
from attnpy.teach.cli import cli

ROOT = Path(__file__).resolve().parents[2]

# "the cat sat", Q = K = V = X
X = np.array([[0.9, 0.3, 0.1, 0.5],
              [0.1, 0.8, 0.4, 0.2],
              [0.6, 0.1, 0.9, 0.3]])
TOKENS = ["the", "cat", "sat"]
CAT_SCORES = [[1.16, 0.47, 0.81], [0.47, 0.85, 0.56], [0.81, 0.56, 1.27]]
CAT_SCALED = [[0.58, 0.235, 0.405], [0.235, 0.425, 0.28],
               [0.405, 0.28, 0.635]]
CAT_WEIGHTS = [[0.393, 0.278, 0.330], [0.307, 0.371, 0.321],
                [0.318, 0.281, 0.401]]
CAT_OUTPUT0 = [0.580, 0.373, 0.447, 0.352]

# the GPT-2 walkthrough: given scaled scores, causal, and its weights
GPT2_TABLE = np.array([[1.0, 0.5, 2.0], [0.2, 1.1, 1.5], [0.3, 0.7, 1.2]])
GPT2_WEIGHTS = [[1.000, 0.000, 0.000], [0.289, 0.711, 0.000],
                [0.202, 0.301, 0.497]]

# "love" against I, love, Paris
PARIS_Q = np.array([[1.0, 0.0, 1.0, 0.0]])
PARIS_K = np.array([[1.0, 0.0, 0.0, 1.0], [0.0, 1.0, 1.0, 0.0],
                   [1.0, 0.0, 1.0, 0.0]])
PARIS_SCALED = [0.5, 0.5, 1.0]
PARIS_WEIGHTS = [0.27, 0.27, 0.45]


def np_softmax(s):
    with np.errstate(invalid="ignore", divide="ignore"):
        e = np.exp(s - np.max(s, axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


def table_after(text, header, ncols=None):
    """{row label: [numbers]} of the first table after the line `header`."""
    lines = text.splitlines()
    start = next(k for k, ln in enumerate(lines) if ln.startswith(header))
    rows = {}
    for ln in lines[start + 1:]:
        if not ln.strip():
            break
        parts = ln.split()
        nums = []
        for p in parts[1:]:
            if p == "|":
                break
            try:
                nums.append(float(p))
            except ValueError:
                nums = None
                break
        if nums and (ncols is None or len(nums) == ncols):
            rows.setdefault(parts[0], nums)
    return rows


def cat_sat(**kw):
    return explain(X, X, X, tokens="the cat sat", **kw)


def causal_table():
    return explain(GPT2_TABLE, np.eye(3), np.eye(3), causal=True, scale=1.0,
                   tokens="The cat sat")


# ---------------------------------------------------------------------------
# explain is the C core's attention, bit for bit
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", ["plain", "masked", "batched"])
def test_bitwise_same_as_sdpa_and_attention(dtype, case):
    rng = np.random.default_rng(7)
    kw = {}
    if case == "plain":
        Q = rng.standard_normal((5, 8)).astype(dtype)
        K = rng.standard_normal((6, 8)).astype(dtype)
        V = rng.standard_normal((6, 3)).astype(dtype)
    elif case == "masked":
        Q = rng.standard_normal((6, 4)).astype(dtype)
        K = rng.standard_normal((6, 4)).astype(dtype)
        V = rng.standard_normal((6, 5)).astype(dtype)
        kw = dict(mask=rng.random((6, 6)) > 0.3, causal=True,
                  bias=rng.standard_normal((6, 6)), scale=0.3,
                  fully_masked="uniform")
    else:
        Q = rng.standard_normal((2, 3, 7, 4)).astype(dtype)
        K = rng.standard_normal((2, 1, 9, 4)).astype(dtype)   # shared head
        V = rng.standard_normal((9, 2)).astype(dtype)
        kw = dict(mask=attnpy.padding_mask([9, 4], 9),
                  causal="bottom_right")
    tr = explain(Q, K, V, **kw)
    out, w = attnpy.scaled_dot_product_attention(Q, K, V, **kw)
    kw2 = dict(kw)
    mask = kw2.pop("mask", None)
    out2 = attnpy.attention(Q, K, V, mask=mask, **kw2)
    assert tr.weights.dtype == w.dtype == np.dtype(dtype)
    assert tr.weights.shape == w.shape and tr.output.shape == out.shape
    assert tr.weights.tobytes() == np.ascontiguousarray(w).tobytes()
    assert tr.output.tobytes() == np.ascontiguousarray(out).tobytes()
    assert tr.output.tobytes() == np.ascontiguousarray(out2).tobytes()


def test_trace_arrays_follow_the_semantics():
    rng = np.random.default_rng(3)
    Q = rng.standard_normal((2, 4, 3))
    K = rng.standard_normal((2, 5, 3))
    V = rng.standard_normal((5, 2))
    mask = np.ones((4, 5))
    mask[1, :] = 0                    # query 1 sees nothing: fully masked
    bias = np.zeros((4, 5))
    bias[2, 4] = -np.inf              # a -inf bias blocks too
    bias[3, 0] = 0.25
    tr = explain(Q, K, V, mask, bias=bias, causal="bottom_right")
    np.testing.assert_allclose(tr.scores, Q @ np.swapaxes(K, -1, -2),
                               rtol=1e-12, atol=1e-12)
    assert tr.scale == 1 / np.sqrt(3)
    np.testing.assert_allclose(tr.scaled, tr.scores * tr.scale, rtol=1e-15)
    allowed = (mask != 0) & (np.arange(5)[None, :]
                             <= np.arange(4)[:, None] + 1) & (bias != -np.inf)
    assert tr.mask.dtype == bool
    assert np.array_equal(tr.mask, np.broadcast_to(allowed, (2, 4, 5)))
    expect = np.where(allowed, tr.scaled + bias, -np.inf)
    np.testing.assert_allclose(tr.masked, expect, rtol=1e-15)
    assert np.array_equal(tr.fully_masked_rows,
                          np.broadcast_to(~allowed.any(-1), (2, 4)))
    np.testing.assert_allclose(tr.weights[:, [0, 2, 3]],
                               np_softmax(expect)[:, [0, 2, 3]], rtol=1e-12)
    assert np.all(tr.weights[:, 1] == 0) and np.all(tr.output[:, 1] == 0)
    for name in ("scores", "scaled", "masked", "weights", "output", "mask"):
        assert not getattr(tr, name).flags.writeable, name


def test_trace_keeps_its_own_copy_and_errors_name_explain():
    Xc = X.copy()
    tr = explain(Xc, Xc, Xc)
    Xc[0, 0] = 100.0
    assert tr.Q[0, 0] == 0.9 and tr.V[0, 0] == 0.9
    assert np.array_equal(Xc[1:], X[1:])
    with pytest.raises(ValueError, match=r"^explain: K has 3 features"):
        explain(X, X[:, :3], X)
    with pytest.raises(ValueError, match=r"^explain: .*fully_masked"):
        explain(X, X, X, fully_masked="ignore")
    tr16 = explain(X.astype(np.float16), X, X.astype(np.float16))
    assert tr16.dtype == np.float64             # result_type(f16, f64)
    tr32 = explain(X.astype(np.float16), X.astype(np.float32),
                   X.astype(np.float32))
    assert tr32.dtype == np.float32 and tr32.scores.dtype == np.float32
    assert tr32.masked.dtype == np.float32 and tr32.Q.dtype == np.float32


def test_explain_is_attnpy_explain():
    assert attnpy.explain is explain
    assert attnpy.AttentionTrace is teach.AttentionTrace
    assert attnpy.show is show


# ---------------------------------------------------------------------------
# the walk-through reproduces the tutorials
# ---------------------------------------------------------------------------

def test_walkthrough_the_cat_sat():
    text = str(cat_sat())
    scores = table_after(text, "Step 1.")
    scaled = table_after(text, "Step 2.")
    weights = table_after(text, "Step 4.")
    output = table_after(text, "Step 5.", ncols=4)
    for k, tok in enumerate(TOKENS):
        assert scores[tok] == CAT_SCORES[k]
        assert scaled[tok] == CAT_SCALED[k]
        assert output[tok] == list(np.round((np_softmax(X @ X.T / 2) @ X)[k],
                                            3))
    # The weights are the tutorial's to 3 decimals except one cell: the
    # tutorial rounded by hand and wrote 0.330 where exactly it is 0.32950.
    got = np.array([weights[t] for t in TOKENS])
    diff = np.argwhere(got != np.array(CAT_WEIGHTS))
    assert diff.tolist() == [[0, 2]]
    assert got[0, 2] == 0.329
    assert "e.g. scores[0, 1] = 0.9*0.1 + 0.3*0.8 + 0.1*0.4 + 0.5*0.2 = 0.470" \
        in text
    assert "scale = 1/sqrt(E) = 1/sqrt(4) = 0.5" in text
    assert "e^0.58 = 1.786, e^0.235 = 1.265, e^0.405 = 1.499" in text
    assert "each row sums to 1: yes" in text
    rowsums = re.findall(r"\|\s+([0-9.]+)$", text, flags=re.M)
    assert rowsums == ["1.000"] * 3
    assert "Q = K = V = X" in text
    # the tutorial's own output[0] differs only in hand rounding
    assert np.max(np.abs(np.array(output["the"]) - CAT_OUTPUT0)) <= 0.0015


def test_walkthrough_causal_table_and_focus_on_cat():
    tr = causal_table()
    text = str(tr)
    masked = text[text.index("Step 3."):text.index("Step 4.")]
    assert "causal: key j > query i" in masked
    ms = table_after(text, "Step 3.")
    assert ms["The"][0] == 1.0 and np.isneginf(ms["The"][1:]).all()
    assert ms["cat"][:2] == [0.2, 1.1] and np.isneginf(ms["cat"][2])
    w = table_after(text, "Step 4.")
    assert [w[t] for t in ("The", "cat", "sat")] == GPT2_WEIGHTS
    # the scaled scores are the tutorial's table
    assert np.array_equal(tr.scaled, GPT2_TABLE)
    focus = tr.focus("cat")
    s = str(focus)
    assert "output_2 = 0.289 * V_1 + 0.711 * V_2" in s
    assert "no contribution from V_3: masked" in s
    assert focus.index == 1 and focus.token == "cat"
    assert [j for j, _ in focus.terms] == [0, 1]
    assert np.array_equal(focus.output, tr.output[1])
    np.testing.assert_allclose(
        focus.output, sum(wj * tr.V[j] for j, wj in focus.terms), rtol=1e-12)
    assert str(tr.focus(1)) == s
    assert str(tr.focus(-2)) == s


def test_walkthrough_i_love_paris():
    tr = explain(PARIS_Q, PARIS_K, np.eye(3), tokens="love",
                 key_tokens="I love Paris")
    tr.decimals = 2
    text = str(tr)
    assert table_after(text, "Step 2.")["love"] == PARIS_SCALED
    assert table_after(text, "Step 4.")["love"] == PARIS_WEIGHTS
    assert "e^0.5 = 1.65, e^0.5 = 1.65, e^1 = 2.72; sum = 6.02" in text
    s = str(tr.focus("love"))
    assert "output_1 = 0.27 * V_1 + 0.27 * V_2 + 0.45 * V_3" in s
    assert 'V_3 = V[2] "Paris"' in s
    # the same with all three tokens as queries: the second row is "love"
    tr3 = explain(PARIS_K, PARIS_K, np.eye(3), tokens="I love Paris")
    assert tr3.tokens == tr3.key_tokens == ["I", "love", "Paris"]


def test_decimals_setting():
    tr = cat_sat()
    assert tr.decimals == 3
    tr.decimals = 5
    assert "0.32950" in str(tr)
    assert "0.32950" in str(tr.focus(0))
    with pytest.raises(ValueError, match="decimals"):
        tr.decimals = -1
    with pytest.raises(TypeError, match="decimals"):
        tr.decimals = 2.5


def test_tokens_rules():
    tr = explain(np.ones((2, 4)), np.ones((5, 4)), np.ones((5, 1)),
                 tokens="a b c d e", causal="bottom_right")
    assert tr.tokens == ["d", "e"] and tr.key_tokens == list("abcde")
    with pytest.raises(ValueError, match="tokens has 2 entries"):
        explain(X, X, X, tokens="a b")
    tr = explain(X, X, X)
    assert tr.tokens is None
    assert "focus(1)" in str(tr)
    with pytest.raises(ValueError, match="no tokens"):
        tr.focus("cat")


def test_focus_errors_and_batched():
    tr = cat_sat()
    with pytest.raises(ValueError, match="no query token 'dog'"):
        tr.focus("dog")
    with pytest.raises(IndexError):
        tr.focus(3)
    with pytest.raises(TypeError):
        tr.focus(1.0)
    b = explain(np.stack([X, X]), X, X)
    with pytest.raises(ValueError, match="index it first"):
        b.focus(0)


def test_fully_masked_row_in_walkthrough_and_focus():
    mask = np.array([[1, 1, 1], [0, 0, 0], [1, 0, 1]])
    for policy, w1 in (("zero", 0.0), ("uniform", 1 / 3)):
        tr = explain(X, X, X, mask, tokens="the cat sat", fully_masked=policy)
        text = str(tr)
        assert "1 fully masked row(s)" in text
        assert f"fully_masked={policy!r}" in text
        np.testing.assert_allclose(tr.weights[1], w1)
        f = str(tr.focus("cat"))
        assert "fully" in f


def test_batched_trace_summary_and_indexing():
    rng = np.random.default_rng(5)
    Q = rng.standard_normal((2, 3, 4, 6))
    K = rng.standard_normal((3, 5, 6))             # broadcast over batch
    V = rng.standard_normal((5, 2))
    tr = explain(Q, K, V, causal=True)
    assert tr.batch_shape == (2, 3)
    text = str(tr)
    assert "Index it" in text and "print(trace[0, 0])" in text
    assert "Step 1." not in text
    sub = tr[1, 2]
    assert sub.batch_shape == ()
    assert np.array_equal(sub.weights, tr.weights[1, 2])
    assert np.array_equal(sub.scores, tr.scores[1, 2])
    assert np.array_equal(sub.K, K[2]) and np.array_equal(sub.Q, Q[1, 2])
    assert "Step 5." in str(sub)
    one = explain(Q[1, 2], K[2], V, causal=True)
    assert np.array_equal(one.weights, sub.weights)
    assert tr[0].batch_shape == (3,)
    assert tr[:, 1].batch_shape == (2,)
    assert tr[-1, -1].weights.tobytes() == sub.weights.tobytes()
    with pytest.raises(IndexError, match="leading dimension"):
        tr[0, 0, 0]
    with pytest.raises(IndexError):
        tr[..., 0]
    with pytest.raises(IndexError):
        cat_sat()[0]
    assert "batch_shape=(2, 3)" in repr(tr)


# ---------------------------------------------------------------------------
# check(): a hand-computed table against the exact one
# ---------------------------------------------------------------------------

def test_check_accepts_the_tutorials_weights_with_rounding_explained():
    tr = cat_sat()
    report = tr.check("weights", CAT_WEIGHTS)
    assert report.ok and bool(report) and not report.exact
    assert report.checked == 9
    assert len(report.differences) == 1 and not report.wrong
    cell = report.differences[0]
    assert cell.index == (0, 2) and (cell.row, cell.col) == ("the", "sat")
    assert cell.expected == 0.330
    assert cell.exact == tr.weights[0, 2]
    assert cell.diff == pytest.approx(0.330 - tr.weights[0, 2])
    assert cell.explained
    assert cell.hand_low <= 0.330 + 0.0005 and cell.hand_high >= 0.330 - 5e-4
    text = str(report)
    assert "explained by hand rounding of intermediates" in text
    # the other way of rounding is exactly what the tutorial did
    assert "e^0.405 = 1.500" in cell.how_other
    assert "WRONG" not in text


def test_check_flags_a_wrong_cell():
    tr = cat_sat()
    bad = [row[:] for row in CAT_WEIGHTS]
    bad[1][1] = 0.471
    report = tr.check("weights", bad)
    assert not report.ok
    assert [c.index for c in report.wrong] == [(1, 1)]
    assert [c.index for c in report.explained] == [(0, 2)]
    c = report.wrong[0]
    assert c.expected == 0.471 and c.exact == tr.weights[1, 1]
    assert c.diff == pytest.approx(0.471 - tr.weights[1, 1])
    assert not c.explained
    text = str(report)
    assert "WRONG" in text and "NOT OK" in text
    assert "sums to 1.099" in text
    # a subtle slip, beyond what rounding can do, is flagged too
    bad = [row[:] for row in CAT_WEIGHTS]
    bad[2][2] = 0.404
    assert [c.index for c in tr.check("weights", bad).wrong] == [(2, 2)]


def test_check_output_against_the_tutorial():
    tr = cat_sat()
    row0 = [CAT_OUTPUT0, [None] * 4, [None] * 4]
    report = tr.check("output", row0)
    assert report.ok and report.checked == 4
    exact0 = np.round(tr.output[0], 3)
    assert sorted(c.index for c in report.differences) == sorted(
        (0, k) for k in range(4) if exact0[k] != CAT_OUTPUT0[k])
    assert all(c.explained for c in report.differences)
    # starting from the tutorial's own weights reproduces its output exactly
    report = tr.check("output", row0, previous=CAT_WEIGHTS)
    assert report.ok
    assert all(c.hand == pytest.approx(c.expected, abs=1e-12)
               for c in report.differences)
    wrong = [[0.600, 0.373, 0.447, 0.352], [None] * 4, [None] * 4]
    assert [c.index for c in tr.check("output", wrong).wrong] == [(0, 0)]


def test_check_other_steps():
    tr = cat_sat()
    assert tr.check("scores", CAT_SCORES).exact
    assert tr.check("scaled", CAT_SCALED).exact
    assert tr.check("masked", CAT_SCALED).exact
    bad = [row[:] for row in CAT_SCORES]
    bad[2][2] = 1.37
    r = tr.check("scores", bad)
    assert [c.index for c in r.wrong] == [(2, 2)]
    assert "0.9*0.9 = 0.81" in r.wrong[0].how   # 2 decimals, as written
    ct = causal_table()
    masked = [[1.0, -np.inf, -1e9], [0.2, 1.1, -np.inf], [0.3, 0.7, 1.2]]
    assert ct.check("masked", masked).ok
    assert not ct.check("masked", [[1.0, 0.5, 2.0], [0.2, 1.1, 1.5],
                                   [0.3, 0.7, 1.2]]).ok
    assert ct.check("weights", GPT2_WEIGHTS).exact
    two = [[1, 0, 0], [0.29, 0.71, 0], [0.20, 0.30, 0.50]]
    assert ct.check("weights", two, decimals=2).exact
    assert not ct.check("weights", two, decimals=3).ok


def test_check_batched_and_errors():
    b = explain(np.stack([X, X]), X, X, tokens="the cat sat")
    exp = np.stack([CAT_WEIGHTS, CAT_WEIGHTS])
    exp[1, 0, 0] = 0.5
    r = b.check("weights", exp)
    assert [c.index for c in r.wrong] == [(1, 0, 0)]
    assert [c.index for c in r.explained] == [(0, 0, 2), (1, 0, 2)]
    tr = cat_sat()
    with pytest.raises(ValueError, match="step must be one of"):
        tr.check("softmax", CAT_WEIGHTS)
    with pytest.raises(ValueError, match=r"shape \(2, 3\).*\(3, 3\)"):
        tr.check("weights", CAT_WEIGHTS[:2])
    with pytest.raises(TypeError, match="numbers"):
        tr.check("weights", [["a", "b", "c"]] * 3)
    with pytest.raises(ValueError, match="no previous"):
        tr.check("scores", CAT_SCORES, previous=CAT_SCORES)
    # a bad previous= table is named as previous, not as expected
    with pytest.raises(ValueError, match=r"^AttentionTrace.check: previous "
                       r"has shape \(2, 3\) but the 'masked' table"):
        tr.check("weights", CAT_WEIGHTS, previous=CAT_SCORES[:2])
    with pytest.raises(TypeError, match="^AttentionTrace.check: previous "
                       "must hold numbers"):
        tr.check("weights", CAT_WEIGHTS, previous=[["a", "b", "c"]] * 3)


# ---------------------------------------------------------------------------
# notebooks: HTML
# ---------------------------------------------------------------------------

VOID = {"br", "hr", "img", "meta", "link", "input", "col", "wbr"}


class Collector(html.parser.HTMLParser):
    """Checks nesting and collects the class of every <td>."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.tds, self.tags = [], [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "td":
            self.tds.append(dict(attrs).get("class", ""))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:]}")
        else:
            self.stack.pop()


def parse(markup):
    p = Collector()
    p.feed(markup)
    p.close()
    assert not p.errors and not p.stack, (p.errors, p.stack)
    assert "script" not in p.tags and "style" not in p.tags
    assert "<script" not in markup.lower()
    return p


def count(classes, cls):
    return sum(cls in c.split() for c in classes)


def test_repr_html_one_cell_per_weight():
    tr = explain(X, X, X, tokens="the cat <sat>", causal=True)
    markup = tr._repr_html_()
    p = parse(markup)
    L, S = tr.weights.shape
    assert count(p.tds, "attnpy-w") == L * S
    assert count(p.tds, "attnpy-s") == L * S
    blocked = int(np.count_nonzero(~tr.mask))
    assert count(p.tds, "attnpy-blocked") == 2 * blocked
    assert "&lt;sat&gt;" in markup and "<sat>" not in markup
    assert "0.453" in markup       # softmax(0.235, 0.425)[0], the cat row
    assert "-inf" in markup


def test_repr_html_batched():
    Q = np.random.default_rng(1).standard_normal((2, 2, 3, 4))
    tr = explain(Q, Q, Q)
    p = parse(tr._repr_html_())
    assert count(p.tds, "attnpy-w") == 4 * 9
    sub = parse(tr[1, 0]._repr_html_())
    assert count(sub.tds, "attnpy-w") == 9


def test_show_masks():
    cm = attnpy.causal_mask(3, 4, align="bottom_right")
    v = show(cm, tokens="a b c d")
    p = parse(v._repr_html_())
    assert count(p.tds, "attnpy-m") == 12
    assert count(p.tds, "attnpy-blocked") == int(np.count_nonzero(~cm))
    text = str(v)
    assert text.splitlines()[0] == "mask (1 = may attend), shape (3, 4)"
    rows = table_after(text, "mask")        # queries: the last 3 tokens
    assert list(rows) == ["b", "c", "d"]
    assert rows["c"] == [1, 1, 1, 0]
    pm = attnpy.padding_mask([2, 4], 4)
    p = parse(show(pm)._repr_html_())
    assert count(p.tds, "attnpy-m") == 8
    assert count(p.tds, "attnpy-blocked") == 2
    tril = show(np.tril(np.ones((3, 3))), tokens="the cat sat")
    assert str(tril).splitlines()[2].split() == ["the", "1", "0", "0"]
    arr = show(np.array([[0.5, -1.25]]))
    assert not arr.is_mask and "-1.250" in str(arr)
    parse(arr._repr_html_())
    with pytest.raises(TypeError):
        show(np.array(["a"]))


# ---------------------------------------------------------------------------
# matplotlib
# ---------------------------------------------------------------------------

@pytest.fixture
def agg():
    import matplotlib as mpl  # in the [test] extra: missing is an error
    mpl.use("Agg")
    import matplotlib.pyplot as plt
    yield plt
    plt.close("all")


def test_plot_single_head(agg):
    tr = cat_sat(causal=True)
    fig, ax = tr.plot()
    img = ax.get_images()[0]
    data = img.get_array()
    assert data.shape == (3, 3)
    assert np.array_equal(np.ma.getmaskarray(data), ~tr.mask)
    assert [t.get_text() for t in ax.get_xticklabels()] == TOKENS
    texts = [t.get_text() for t in ax.texts]
    assert "0.453" in texts and "1.000" in texts
    fig2, ax2 = agg.subplots()
    f, a = tr.plot(ax=ax2, annotate=False)
    assert f is fig2 and a is ax2 and not a.texts


def test_plot_multi_head_grid(agg):
    Q = np.random.default_rng(2).standard_normal((2, 3, 4, 4))
    fig, axes = explain(Q, Q, Q, causal=True).plot()
    assert axes.shape == (2, 3)
    assert all(len(a.get_images()) == 1 for a in axes.flat)
    assert axes[1, 2].get_title() == "[1, 2]"
    fig, axes = explain(Q[0], Q[0], Q[0]).plot()
    assert axes.shape == (1, 3) and axes[0, 1].get_title() == "head 1"


def test_plot_without_matplotlib(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r'pip install "attnpy\[plot\]"'):
        cat_sat().plot()


def png_size(path):
    with open(path, "rb") as fh:
        head = fh.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR"
    return struct.unpack(">II", head[16:24])


def test_docs_heatmap_regenerates(agg, tmp_path):
    committed = ROOT / "docs" / "heatmap.png"
    assert committed.exists()
    mod = runpy.run_path(str(ROOT / "examples" / "make_heatmap.py"))
    out = tmp_path / "heatmap.png"
    mod["main"](str(out))
    assert png_size(out) == png_size(committed)
    assert out.stat().st_size > 5000


# ---------------------------------------------------------------------------
# python -m attnpy explain
# ---------------------------------------------------------------------------

def test_cli_walkthrough(capsys):
    assert cli(["--tokens", "the cat sat"]) == 0
    text = capsys.readouterr().out
    assert table_after(text, "Step 1.")["cat"] == CAT_SCORES[1]
    assert table_after(text, "Step 2.")["sat"] == CAT_SCALED[2]
    assert table_after(text, "Step 4.")["cat"] == CAT_WEIGHTS[1]


def test_cli_causal_decimals_focus(capsys):
    assert cli(["--tokens", "the cat sat", "--causal", "--decimals",
                       "2", "--focus", "cat"]) == 0
    text = capsys.readouterr().out
    w = np.round(np_softmax(np.array([0.235, 0.425])), 2).tolist()
    assert table_after(text, "Step 4.")["cat"] == w + [0.0]
    assert table_after(text, "Step 1.")["the"] == CAT_SCORES[0]
    assert "-inf" in text
    assert f"output_2 = {w[0]:.2f} * V_1 + {w[1]:.2f} * V_2" in text


def test_cli_other_inputs_and_errors(capsys):
    assert cli(["--example", "causal-table"]) == 0
    text = capsys.readouterr().out
    assert table_after(text, "Step 4.")["cat"] == GPT2_WEIGHTS[1]
    assert cli(["--x", "1 0; 0 1", "--tokens", "yes no"]) == 0
    assert "yes" in capsys.readouterr().out
    assert cli(["--tokens", "a b c d e", "--seed", "1"]) == 0
    assert "L = 5 queries" in capsys.readouterr().out
    assert cli(["--bogus"]) == 2
    assert cli(["--decimals", "99"]) == 2
    assert cli(["--x", "1 2; 3"]) == 2
    assert cli(["--focus", "dog"]) == 2
    assert "no query token" in capsys.readouterr().err
    assert cli(["--help"]) == 0


def test_cli_subprocess():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-m", "attnpy", "explain", "--tokens",
                        "the cat sat"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert table_after(r.stdout, "Step 1.")["the"] == CAT_SCORES[0]
    assert "each row sums to 1: yes" in r.stdout
    r = subprocess.run([sys.executable, "-m", "attnpy", "explain", "--nope"],
                       cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and "usage" in r.stderr


def test_docs_check_by_hand_examples_run():
    """docs/check_by_hand.md (the README section) shows true output."""
    import doctest
    res = doctest.testfile(str(ROOT / "docs" / "check_by_hand.md"),
                           module_relative=False, verbose=False,
                           optionflags=doctest.NORMALIZE_WHITESPACE)
    assert res.attempted >= 10 and res.failed == 0
    text = (ROOT / "docs" / "check_by_hand.md").read_text()
    assert "](heatmap.png)" in text
