"""What the browser tests check, on a saved page or in JupyterLab alike.

Each check takes a Playwright page and the figure's root locator, acts
like a reader (mouse, keyboard, clicks) and compares what is on screen
with attnpy computed here, in the test's own process.
"""
import math
import os
import time

import numpy as np

import attnpy

SHOTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_screenshots")


def shot(page, name):
    os.makedirs(SHOTS, exist_ok=True)
    page.screenshot(path=os.path.join(SHOTS, f"{name}.png"), full_page=True)


def same3(text, value):
    """The shown text is `value` to 3 decimals (either neighbour at a tie)."""
    if text == f"{value:.3f}":
        return True
    try:
        shown = float(text)
    except (TypeError, ValueError):          # blank: the kernel has not answered yet
        return False
    # a half-way value (0.0625) rounds up in JavaScript and to even in Python
    return abs(shown - value) <= 0.0005 + 1e-12 and \
        abs(abs(value * 1000 - math.trunc(value * 1000)) - 0.5) < 1e-9


def eventually(what, fn, timeout=15.0):
    """fn() until it returns a true value (the kernel answers asynchronously)."""
    end = time.monotonic() + timeout
    while True:
        try:
            result = fn()
        except AssertionError:
            result = None
        if result:
            return result
        if time.monotonic() > end:
            raise AssertionError(f"{what}: not true after {timeout} s (last: {fn()!r})")
        time.sleep(0.1)


def texts(root, selector):
    loc = root.locator(selector)
    return [loc.nth(i).text_content() for i in range(loc.count())]


def shown_weights(root):
    loc = root.locator('[data-role="weight"]')
    return {loc.nth(i).get_attribute("data-token"): loc.nth(i).text_content()
            for i in range(loc.count())}


def weights_match(root, expected):
    got = shown_weights(root)
    ok = len(got) == len(expected) and all(same3(got[t], w) for t, w in expected.items())
    return ok and got


def point_of(root, role):
    el = root.locator(f'[data-role="{role}"]').first
    return float(el.get_attribute("data-x")), float(el.get_attribute("data-y"))


def drag_query(page, root, dx, dy):
    """Press on the query dot, move by (dx, dy) pixels in steps, release."""
    box = root.locator('[data-role="query"]').bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + dx, y + dy, steps=8)
    page.mouse.up()


def expected_playground(query, scaled=True, dim=2):
    pg = attnpy.playground(query=query, scaled=scaled, dim=dim)
    return pg, dict(zip(pg.tokens, pg.weights))


def check_playground(page, root, name):
    """Drag, arrow keys, output dot, scale toggle and head width d."""
    pg, want = expected_playground(point_of(root, "query"))
    eventually("initial weights", lambda: weights_match(root, want))
    shot(page, f"{name}-1-initial")
    before_q, before_out = point_of(root, "query"), point_of(root, "output")
    out_box = root.locator('[data-role="output"]').bounding_box()

    drag_query(page, root, -150, -60)                      # up and left
    q = point_of(root, "query")
    assert q[0] < before_q[0] - 1 and q[1] > before_q[1] + 0.3, (before_q, q)
    pg, want = expected_playground(q)
    eventually("weights after the drag", lambda: weights_match(root, want))
    out = eventually("output after the drag", lambda: (
        np.allclose(point_of(root, "output"), pg.output, rtol=0, atol=1e-12)
        and point_of(root, "output")))
    assert not np.allclose(out, before_out)
    assert root.locator('[data-role="output"]').bounding_box() != out_box
    shot(page, f"{name}-2-dragged")

    root.locator('[data-role="query"]').focus()
    page.keyboard.press("ArrowRight")
    eventually("arrow key", lambda: point_of(root, "query") == (round(q[0] + 0.1, 2), q[1]))
    pg, want = expected_playground(point_of(root, "query"))
    eventually("weights after the arrow key", lambda: weights_match(root, want))

    root.locator('[data-role="dim"]').select_option("512")
    pg, want = expected_playground(pg.query, True, 512)
    eventually("weights at d = 512, scaled", lambda: weights_match(root, want))
    assert max(want.values()) < 0.99                      # the scale keeps them spread
    root.locator('[data-role="scale-toggle"]').click()
    pg, want = expected_playground(pg.query, False, 512)
    got = eventually("weights at d = 512, unscaled", lambda: weights_match(root, want))
    assert sorted(got.values()) == ["0.000"] * 5 + ["1.000"]      # one-hot
    grads = eventually("gradient table", lambda: len(
        texts(root, '[data-role="grad-unscaled"]')) == 4 and texts(root, '[data-role="grad-unscaled"]'))
    shown = [float(g) for g in grads]
    demo = [r["grad_unscaled"] for r in pg._demo]
    assert np.allclose(shown, demo, rtol=0.01, atol=0), (shown, demo)
    assert shown[-1] < 1e-6 < shown[0]                    # falling towards 0
    shot(page, f"{name}-3-d512-unscaled")


def cell_texts(root):
    n = root.locator('[data-role="row-sum"]').count()
    return [[root.locator(f'[data-role="cell"][data-row="{i}"][data-col="{j}"]').text_content()
             for j in range(n)] for i in range(n)]


def table_matches(root, table, allowed):
    got = cell_texts(root)
    return all((same3(got[i][j], table[i][j]) if allowed[i][j] else got[i][j] == "")
               for i in range(len(table)) for j in range(len(table))) and got


def check_matrix(page, root, name):
    """Causal toggle, row sums, raw scores, row highlight."""
    m = attnpy.attention_matrix()
    every = np.ones((6, 6), bool)
    eventually("initial weights", lambda: table_matches(root, m.weights, every))
    shot(page, f"{name}-1-weights")

    root.locator('[data-role="causal-toggle"]').click()
    m.causal = True
    lower = np.tril(every)
    got = eventually("causal weights", lambda: table_matches(root, m.weights, lower))
    assert all(got[i][j] == "" for i in range(6) for j in range(i + 1, 6))
    assert texts(root, '[data-role="row-sum"]') == ["1.000"] * 6
    shot(page, f"{name}-2-causal")

    root.locator('[data-role="show-toggle"]').click()
    eventually("raw scores", lambda: table_matches(root, m.scores, lower))
    root.locator('[data-role="causal-toggle"]').click()
    eventually("raw scores, no mask", lambda: table_matches(root, m.scores, every))
    sums = [float(s) for s in texts(root, '[data-role="row-sum"]')]
    assert np.allclose(sums, m.scores.sum(1), atol=0.0005)

    root.locator('[data-role="cell"][data-row="2"][data-col="4"]').click()
    eventually("row 2 highlighted", lambda: [
        root.locator(f'tr[data-row="{i}"]').get_attribute("data-selected") for i in range(6)]
        == ["false", "false", "true", "false", "false", "false"])
    note = root.locator('[data-role="row-note"]').text_content()
    assert '"sat"' in note and '"cat"' in note, note
    shot(page, f"{name}-3-scores-row2")
    root.locator('[data-role="row-label"][data-row="5"]').focus()     # the keyboard
    page.keyboard.press("Enter")
    eventually("row 5 by keyboard", lambda: root.locator('tr[data-row="5"]').get_attribute(
        "data-selected") == "true" and root.locator('tr[data-row="2"]').get_attribute(
        "data-selected") == "false")
