"""The figures in a real browser (headless Chromium, through Playwright): the
saved pages, and the live widgets in JupyterLab, Notebook 7, Voila and
marimo, each started here on 127.0.0.1; and nbconvert's HTML of an
executed notebook, opened with the network cut. Run with
tools/browser_tests.sh, or ``pytest -m browser tests/widgets``."""
import json
import urllib.request

import nbclient
import nbformat
import numpy as np
import pytest

import attnpy

import _browser
import _servers
from _checks import (check_d_explained, check_dark, contrast_problems, check_head_view, check_layout, check_matrix,
                     check_playground, check_query_control, eventually, head_width, point_of, shot,
                     weights_match, expected_playground, same3)

pytestmark = pytest.mark.browser
# every JavaScript error fails a test (the page fixture, tests/conftest.py)
VIEWPORT = (1100, 1000)

# the head view's weights, made the same way in the notebooks and here
HEADS_CODE = ("import numpy as np\n"
              "X = np.random.default_rng(7).standard_normal((2, 3, 6, 8))\n"
              "heads = attnpy.explain(X, X, X, tokens='the cat sat on the mat').weights\n")


def heads_weights():
    scope = {"attnpy": attnpy}
    exec(HEADS_CODE, scope)
    return scope["heads"], "the cat sat on the mat".split()


def saved(tmp_path, fig, name):
    return f"file://{fig.save_html(tmp_path / name)}"


# --- the saved pages ------------------------------------------------------------

def test_saved_playground(page, tmp_path):
    page.goto(saved(tmp_path, attnpy.playground(), "playground.html"))
    root = page.locator(".attnpy-playground")
    assert root.locator('[data-role="source"]').get_attribute("data-source") == "page"
    check_query_control(page, root)
    check_playground(page, root, "saved-playground")
    assert page.errors == []


def test_saved_playground_d_explained(page, tmp_path):
    """At every d the weights are the softmax of the printed plane + rest."""
    page.goto(saved(tmp_path, attnpy.playground(), "playground.html"))
    check_d_explained(page, page.locator(".attnpy-playground"), "saved")
    assert page.errors == []


def test_saved_matrix(page, tmp_path):
    page.goto(saved(tmp_path, attnpy.attention_matrix(), "matrix.html"))
    check_matrix(page, page.locator(".attnpy-matrix"), "saved-matrix")
    assert page.errors == []


def test_saved_head_view(page, tmp_path):
    w, tokens = heads_weights()
    page.goto(saved(tmp_path, attnpy.head_view(w, tokens), "heads.html"))
    check_head_view(page, page.locator(".attnpy-heads"), w, tokens, "saved-heads")
    assert page.errors == []


def test_query_on_a_key(page, tmp_path):
    """The guide's example, the query on "cat": the key stays visible above
    the query dot, its weight shows as a ring (its arrow has no length),
    and the labels of q, cat and the output stay apart."""
    pg = attnpy.playground(query=(2.6, 1.0))
    page.goto(saved(tmp_path, pg, "on-cat.html"))
    root = page.locator(".attnpy-playground")
    key = root.locator('[data-role="key"][data-token="cat"]')
    b = key.bounding_box()
    top = page.evaluate("([x, y]) => { const e = document.elementFromPoint(x, y); "
                        "return [e.getAttribute('data-role'), e.getAttribute('data-token')]; }",
                        [b["x"] + b["width"] / 2, b["y"] + b["height"] / 2])
    assert top == ["key", "cat"], top
    halo = root.locator('[data-role="halo"][data-token="cat"]')
    assert halo.get_attribute("visibility") == "visible"
    w = dict(zip(pg.tokens, pg.weights))["cat"]
    assert abs(float(halo.get_attribute("stroke-width")) - (0.5 + 14 * w)) < 1e-6
    assert all(root.locator(f'[data-role="halo"][data-token="{t}"]').get_attribute("visibility")
               == "hidden" for t in pg.tokens if t != "cat")
    check_layout(page, root, "on-cat")
    assert page.errors == []


def layout_figures():
    w, tokens = heads_weights()
    return {
        "playground": lambda size: attnpy.playground(size=size),
        "playground-on-cat": lambda size: attnpy.playground(query=(2.6, 1.0), size=size),
        "playground-far": lambda size: attnpy.playground(query=(6.0, 0.0), size=size,
                                                         keys=[(0.6, -2.5), (2.6, 1.0), (-1.0, 2.6),
                                                               (-5.0, 1.0), (-2.6, -1.0), (5.0, 2.5)]),
        "playground-d512": lambda size: attnpy.playground(dim=512, size=size),
        "matrix": lambda size: attnpy.attention_matrix(causal=True, show="scores", row=2, size=size),
        "heads": lambda size: attnpy.head_view(w, tokens, size=size),
    }


def each_saved_figure(page, tmp_path, size=None):
    """Open each of layout_figures() as a saved page: (name, figure root)."""
    for name, make in layout_figures().items():
        page.goto(saved(tmp_path, make(size), f"{name}.html"))
        root = page.locator(".attnpy-fig")
        root.wait_for()
        yield name, root


@pytest.mark.parametrize("width", [400, 800, 1200])
def test_layout_holds(browser, tmp_path, width):
    """Every figure, at its default size and at 1200 px, in a window 400,
    800 or 1200 px wide: labels apart and inside, nothing past the edge,
    the text 1/44 of the width the figure gets (11 to 22 px)."""
    page = _browser.new_page(browser, width, 900)
    try:
        for size in (None, 1200):
            for name, root in each_saved_figure(page, tmp_path, size):
                check_layout(page, root, f"layout-{width}-{name}-{size}")
                fs = float(page.evaluate("(e) => parseFloat(getComputedStyle(e).fontSize)",
                                         root.element_handle()))
                fig_w = root.bounding_box()["width"]
                assert 11 <= fs <= 22 and abs(fs - max(11, min(22, fig_w / 44))) < 0.2, (fs, fig_w)
        assert page.errors == []
    finally:
        page.close()


def test_layout_phone(browser, tmp_path):
    """A 390-px phone: the viewport meta makes the page 390 px wide (not 980),
    and the figures fit it."""
    page = _browser.new_page(browser, 390, 844, is_mobile=True, has_touch=True,
                             device_scale_factor=3)
    try:
        for name, root in each_saved_figure(page, tmp_path):
            assert page.evaluate("window.innerWidth") == 390
            check_layout(page, root, f"layout-phone-{name}")
        assert page.errors == []
    finally:
        page.close()


def test_dark_theme(browser, tmp_path):
    """With a dark colour scheme, each saved page is dark and all its text
    contrasts at least 4.5:1."""
    page = _browser.new_page(browser, 1000, 900, color_scheme="dark")
    try:
        for name, root in each_saved_figure(page, tmp_path):
            check_dark(page, root, f"dark-{name}")
        assert page.errors == []
    finally:
        page.close()


def test_light_theme_contrast(page, tmp_path):
    for name, root in each_saved_figure(page, tmp_path):
        assert "attnpy-dark" not in root.get_attribute("class")
        assert contrast_problems(page, root) == [], name
    assert page.errors == []


# --- nbconvert's HTML, offline ----------------------------------------------------

def notebook(cells):
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells],
                                    metadata={"kernelspec": {"name": "python3", "language": "python",
                                                             "display_name": "Python 3"}})


FIGURE_CELLS = ["import attnpy\npg = attnpy.playground()\npg",
                "m = attnpy.attention_matrix()\nm",
                "import attnpy\n" + HEADS_CODE + "hv = attnpy.head_view(heads, 'the cat sat on the mat')\nhv"]


def test_nbconvert_html_shows_each_figure_offline(page, tmp_path, monkeypatch):
    """An executed notebook with its widget state stored: nbconvert's HTML
    asks the network for the widget script, which fails here; the
    snapshots show each figure anyway, with attnpy's numbers."""
    from nbconvert import HTMLExporter
    monkeypatch.setenv("PYTHONPATH", _servers.ROOT)
    nb = notebook(FIGURE_CELLS)
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", store_widget_state=True,
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert "application/vnd.jupyter.widget-state+json" in nb.metadata["widgets"]
    body, _ = HTMLExporter().from_notebook_node(nb)
    path = tmp_path / "figures.html"
    path.write_text(body, encoding="utf-8")
    blocked = []
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:")
               else (blocked.append(r.request.url), r.abort()))
    page.goto(f"file://{path}")
    page.wait_for_timeout(500)
    assert blocked, "the page asked the network for nothing: the test would prove nothing"
    for kind in ("playground", "matrix", "heads"):
        snap = page.locator(f'[data-attnpy-snapshot="{kind}"]')
        assert snap.count() == 1 and snap.is_visible(), kind
        assert snap.bounding_box()["height"] > 100, kind
    pg = attnpy.playground()
    snap = page.locator('[data-attnpy-snapshot="playground"]')
    assert weights_match(snap, dict(zip(pg.tokens, pg.weights)))
    m = attnpy.attention_matrix()
    cells = page.locator('[data-attnpy-snapshot="matrix"] [data-role="cell"]')
    assert cells.count() == 36
    assert all(same3(cells.nth(k).text_content(), m.weights[k // 6, k % 6]) for k in range(36))
    shot(page, "nbconvert-offline")
    # the network failures are nbconvert's widget script; attnpy adds none
    assert [e for e in page.errors if "attnpy" in e] == []


# --- live front ends ------------------------------------------------------------------

@pytest.fixture(scope="module")
def jupyter(tmp_path_factory):
    home = tmp_path_factory.mktemp("jupyter")
    nbformat.write(notebook(FIGURE_CELLS), home / "figures.ipynb")
    server = _servers.jupyter(home)
    yield server
    server.stop()


def ours(errors):
    """The errors that concern attnpy's figures: their messages, or a stack
    through anywidget or the figures' module (loaded from a blob: or
    data: URL). The front ends log errors of their own (Notebook 7.6
    throws one while loading its settings); those are not ours."""
    return [e for e in errors if any(w in e for w in ("attnpy", "anywidget", "blob:", "data:text/javascript"))]


def kernel_idle(server):
    with urllib.request.urlopen(server.url("/api/kernels")) as r:
        return any(k["execution_state"] == "idle" for k in json.load(r))


def run_all_until(page, server, figure, run_all, timeout=120):
    """Accept the kernel dialog, run every cell, until `figure` shows."""
    import time
    end = time.monotonic() + timeout
    accept = page.locator(".jp-Dialog .jp-mod-accept")
    while not kernel_idle(server):                  # the kernel is ready
        assert time.monotonic() < end, "no kernel"
        if accept.count() and accept.first.is_visible():
            accept.first.click()
        page.wait_for_timeout(500)
    page.wait_for_timeout(1000)
    while not figure.is_visible():
        if time.monotonic() > end:
            shot(page, "run-all-failed")
            raise AssertionError("the notebook's cells did not show the figure")
        if accept.count() and accept.first.is_visible():
            accept.first.click()
        if page.locator(".jp-InputPrompt:text-is('[ ]:')").count():    # not run yet
            run_all()
        page.wait_for_timeout(1000)


def kernel_id(server):
    with urllib.request.urlopen(server.url("/api/sessions")) as r:
        return json.load(r)[0]["kernel"]["id"]


def restart_kernel(server):
    req = urllib.request.Request(server.url(f"/api/kernels/{kernel_id(server)}/restart"),
                                 method="POST", data=b"")
    urllib.request.urlopen(req, timeout=60).read()


def check_after_restart(page, root, server):
    """After a kernel restart, five ArrowLefts: every number shown belongs
    to the query drawn (computed in the browser, and said so)."""
    before = point_of(root, "query")
    restart_kernel(server)
    page.wait_for_timeout(2000)
    root.locator('[data-role="query"]').focus()
    for _ in range(5):
        page.keyboard.press("ArrowLeft")
    q = eventually("the query moved", lambda: point_of(root, "query") != before and point_of(root, "query"))
    assert q == (round(before[0] - 0.5, 2), before[1]), (before, q)
    label = root.locator(".attnpy-qlabel").text_content()
    assert label == f"q ({q[0]:.2f}, {q[1]:.2f})", label
    pg, want = expected_playground(q, **head_width(root))
    eventually("weights of the query drawn", lambda: weights_match(root, want))
    scores = dict(zip(pg.tokens, pg.scores))
    for tok in pg.tokens:
        cell = root.locator(f'[data-role="score"][data-token="{tok}"]').text_content()
        assert same3(cell, scores[tok]), (tok, cell)
    assert np.allclose(point_of(root, "output"), pg.output, atol=1e-9)
    eventually("says the kernel is gone", lambda: root.locator('[data-role="source"]')
               .get_attribute("data-source") == "browser-disconnected")
    shot(page, "after-restart")


def open_notebook(page, server, path):
    """figures.ipynb in JupyterLab (/lab/tree/) or Notebook 7 (/notebooks/),
    every cell run (Run > Run All Cells: the same command in both)."""
    page.goto(server.url(path))
    page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=60000)

    def run_all():
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.locator('.lm-Menu-item[data-command="runmenu:run-all"]').click()
    run_all_until(page, server, page.locator(".attnpy-heads [data-role=token]").first, run_all)
    news = page.locator(".jp-toast-button:text-is('No')")    # Lab's news question
    if news.count() and news.first.is_visible():
        news.first.click()


def open_lab(page, server):
    open_notebook(page, server, "/lab/tree/figures.ipynb")


def check_all_figures(page, name):
    """The three figures of FIGURE_CELLS, live in a front end."""
    check_playground(page, page.locator(".attnpy-playground"), f"{name}-playground")
    check_matrix(page, page.locator(".attnpy-matrix"), f"{name}-matrix")
    w, tokens = heads_weights()
    check_head_view(page, page.locator(".attnpy-heads"), w, tokens, f"{name}-heads")
    assert ours(page.errors) == [], page.errors


def lab_theme(page, theme):
    page.get_by_role("menuitem", name="Settings", exact=True).click()
    page.get_by_text("Theme", exact=True).hover()
    page.get_by_text(theme, exact=True).click()


def test_jupyterlab(jupyter, page):
    open_lab(page, jupyter)
    pg_root = page.locator(".attnpy-playground")
    eventually("numbers from the kernel", lambda: pg_root.locator('[data-role="source"]')
               .get_attribute("data-source") == "kernel")
    # the live figures hide their snapshots
    assert page.locator('[data-attnpy-snapshot="playground"]').count() == 1
    assert not page.locator('[data-attnpy-snapshot="playground"]').is_visible()
    check_playground(page, pg_root, "lab-playground")
    check_query_control(page, pg_root)
    check_matrix(page, page.locator(".attnpy-matrix"), "lab-matrix")
    w, tokens = heads_weights()
    check_head_view(page, page.locator(".attnpy-heads"), w, tokens, "lab-heads")
    check_layout(page, pg_root, "lab-layout")
    check_after_restart(page, pg_root, jupyter)
    assert ours(page.errors) == [], page.errors


def test_jupyterlab_dark(jupyter, page):
    """JupyterLab's dark theme: the figures turn dark, text keeps 4.5:1."""
    open_lab(page, jupyter)
    lab_theme(page, "JupyterLab Dark")
    for kind in ("playground", "matrix", "heads"):
        check_dark(page, page.locator(f".attnpy-{kind}"), f"lab-dark-{kind}")
    lab_theme(page, "JupyterLab Light")
    eventually("light again", lambda: "attnpy-dark" not in page.locator(".attnpy-playground")
               .get_attribute("class"))
    assert ours(page.errors) == [], page.errors


def test_notebook7(jupyter, page):
    open_notebook(page, jupyter, "/notebooks/figures.ipynb")
    check_all_figures(page, "nb7")


def test_voila(tmp_path, page):
    nbformat.write(notebook(FIGURE_CELLS), tmp_path / "figures.ipynb")
    server = _servers.voila(tmp_path, tmp_path / "figures.ipynb")
    try:
        page.goto(server.url("/"), timeout=120000)
        page.locator(".attnpy-heads [data-role=token]").first.wait_for(timeout=120000)
        check_all_figures(page, "voila")
        assert not page.locator('[data-attnpy-snapshot="playground"]').is_visible()
    finally:
        server.stop()


MARIMO_APP = '''import marimo

app = marimo.App()


@app.cell
def _():
    import attnpy
    pg = attnpy.playground()
    pg
    return (attnpy,)


@app.cell
def _(attnpy):
    m = attnpy.attention_matrix()
    m
    return


@app.cell
def _(attnpy):
{heads}    hv = attnpy.head_view(heads, "the cat sat on the mat")
    hv
    return


if __name__ == "__main__":
    app.run()
'''


@pytest.mark.parametrize("mode", ["run", "edit"])
def test_marimo(tmp_path, page, mode):
    heads = "".join("    " + line + "\n" for line in HEADS_CODE.splitlines())
    (tmp_path / "figures_app.py").write_text(MARIMO_APP.format(heads=heads))
    server = _servers.marimo(tmp_path, tmp_path / "figures_app.py", mode)
    try:
        page.goto(server.url("/"), timeout=120000)
        figure = page.locator(".attnpy-heads [data-role=token]").first
        if mode == "edit":            # the editor opens with the cells not run
            page.get_by_text("attnpy.head_view").first.wait_for(timeout=60000)
            for _ in range(6):
                page.get_by_test_id("run-button").last.click(timeout=60000)
                try:
                    figure.wait_for(timeout=20000)
                    break
                except Exception:     # noqa: BLE001 (not ready yet: again)
                    pass
        figure.wait_for(timeout=120000)
        check_all_figures(page, f"marimo-{mode}")
    finally:
        server.stop()
