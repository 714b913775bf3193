"""check() is never fooled: the previous table is checked first, and a
difference is explained only by hand computations that use the user's own
numbers or round to nearest (one number at most rounded the other way)."""
import re

import numpy as np

import attnpy

X = np.array([[0.9, 0.3, 0.1, 0.5], [0.1, 0.8, 0.4, 0.2],
              [0.6, 0.1, 0.9, 0.3]])
TUTORIAL = [[0.393, 0.278, 0.330], [0.307, 0.371, 0.321],
            [0.318, 0.281, 0.401]]
NONE4 = [None] * 4


def cat_sat():
    return attnpy.explain(X, X, X, tokens="the cat sat")


def test_a_wrong_previous_table_does_not_explain_a_wrong_output():
    tr = cat_sat()
    bad = [[0.500, 0.278, 0.330]] + TUTORIAL[1:]
    report = tr.check("output", [[0.676] + NONE4[1:], NONE4, NONE4],
                      previous=bad)
    assert not report.ok
    assert [c.index for c in report.wrong] == [(0, 0)]
    assert not report.previous.ok
    assert [c.index for c in report.previous.wrong] == [(0, 0)]
    text = str(report)
    assert "NOT OK" in text and "checked first" in text
    assert "0.500*" not in text          # the wrong weight is not used


def test_paths_use_only_the_users_numbers():
    tr = cat_sat()
    report = tr.check("output", [[0.576] + NONE4[1:], NONE4, NONE4],
                      previous=TUTORIAL)
    assert not report.ok and report.previous.ok
    # the tutorial's own output row, from its own weights
    row = [[0.580, 0.373, 0.447, 0.352], NONE4, NONE4]
    report = tr.check("output", row, previous=TUTORIAL)
    assert report.ok and report.explained
    for c in report.differences:
        for path in filter(None, (c.how, c.how_other)):
            ws = [float(w) for w in re.findall(r"(\d\.\d+)\*", path)]
            assert ws and all(w in TUTORIAL[0] for w in ws), path


def test_the_tutorials_own_path_is_the_one_shown():
    report = cat_sat().check("weights", TUTORIAL)
    (cell,) = report.explained
    assert ("e^0.58 = 1.786, e^0.235 = 1.265, e^0.405 = 1.500; sum = 4.551;"
            " 1.500/4.551" in cell.how_other)
    assert "1.264" not in str(report)     # e^0.235 = 1.26491 is not 1.264
    # the printed quotients round as the verdict says
    for a, b, q in re.findall(r"(\d\.\d+)/(\d\.\d+) = (\d\.\d+)", str(report)):
        assert abs(float(a) / float(b) - float(q)) < 5e-6


def test_a_cell_needing_several_numbers_rounded_the_wrong_way_is_wrong():
    tr = cat_sat()
    # 0.576 needs 0.392 (not 0.393) and two products rounded down
    report = tr.check("output", [[0.576] + NONE4[1:], NONE4, NONE4])
    assert not report.ok


def test_decimals_are_read_off_the_table():
    table = np.array([[1.0, 0.5, 2.0], [0.2, 1.1, 1.5], [0.3, 0.7, 1.2]])
    tr = attnpy.explain(table, np.eye(3), np.eye(3), causal=True, scale=1.0)
    two = [[1, 0, 0], [0.29, 0.71, 0], [0.20, 0.30, 0.50]]
    report = tr.check("weights", two)
    assert report.decimals == 2 and report.exact
    assert "at 2 decimals" in str(report)
    assert not tr.check("weights", two, decimals=3).ok   # when told 3
    three = [[1, 0, 0], [0.289, 0.711, 0], [0.202, 0.301, 0.497]]
    assert tr.check("weights", three).decimals == 3


def test_weights_that_are_not_a_softmax_say_so():
    scores = np.array([[0.1, 0.6, 0.1, 0.1, 0.05, 0.05]])
    tr = attnpy.explain(scores, np.eye(6), np.eye(6), scale=1.0,
                        tokens="sat", key_tokens="The cat sat on the mat")
    report = tr.check("weights", [[0.11, 0.56, 0.11, 0.11, 0.06, 0.05]])
    assert len(report.wrong) == 6
    text = str(report)
    assert "these weights are not the softmax of the masked scores" in text
    assert "softmax gives [0.15, 0.25, 0.15, 0.15, 0.15, 0.15]" in text


def test_backward_check_reads_decimals_off_the_table():
    tr = attnpy.explain(X, X, X, causal=True)
    d_out = np.zeros((3, 4))
    d_out[2] = 1.0
    bw = tr.backward(d_out)
    two = np.round(bw.dS, 2)
    assert bw.check("dS", two).ok and bw.check("dS", two).decimals == 2


def test_decimals_of_float32_and_computed_tables():
    tr = attnpy.explain(X.astype(np.float32), X.astype(np.float32),
                        X.astype(np.float32))
    two = np.round(tr.weights, 2)                  # float32 0.39, 0.28, ...
    assert tr.check("weights", two).decimals == 2
    assert tr.check("weights", np.round(tr.weights.astype(float), 2)
                    + 0.0).decimals == 2
    noisy = np.round(cat_sat().weights, 2) + 0.01 - 0.01   # 0.39000000000000001
    assert cat_sat().check("weights", noisy).decimals == 2


def test_a_large_table_is_reported_briefly():
    # 4,096 cells as 256 queries x 16 keys: a cell's hand check walks its
    # row of keys, so 64 x 64 took 4x longer for the same report
    X = np.random.default_rng(0).standard_normal((256, 8))
    tr = attnpy.explain(X, X[:16], X[:16])
    report = tr.check("weights", np.round(tr.weights, 3) + 0.002)
    assert len(report.differences) == 256 * 16 and not report.ok
    text = str(report)
    assert "... and 4066 more cells" in text and len(text) < 60_000


def test_the_quick_path_values_are_the_full_ones():
    """The O(1) screening of sum and softmax cells gives the values the
    full hand computations give."""
    from attnpy.teach import handcheck, paths
    rng = np.random.default_rng(4)
    seen = 0
    for _ in range(15):
        Xr = np.round(rng.uniform(-1, 1, (3, 4)), 1)
        tr = attnpy.explain(Xr, Xr, Xr, causal=bool(rng.integers(2)))
        for step in ("scores", "weights", "output"):
            tables = handcheck._bases(tr, step, 3, None, None)
            bases = [None if t is None else paths.as_rows(t, f)
                     for t, f in tables]
            for idx in np.ndindex(getattr(tr, step).shape):
                full = paths.cell_paths(tr, step, idx, 3, bases)
                quick = paths.cell_paths(tr, step, idx, 3, bases,
                                         expected=1e9, tol=0.0)
                assert sorted(round(v, 12) for v, *_ in full) == \
                    sorted(round(v, 12) for v, *_ in quick), (step, idx)
                seen += len(full)
    assert seen > 1000
