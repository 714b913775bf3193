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


_PAGE = []     # the page a check works on: screenshot when eventually fails


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
            last = fn()
            try:                       # best effort: what the page showed
                shot(_PAGE[0], "failed-" + "".join(c if c.isalnum() else "-" for c in what))
            except Exception:          # noqa: BLE001 (no page, or closed)
                pass
            raise AssertionError(f"{what}: not true after {timeout} s (last: {last!r})")
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


def settled_query(page, root):
    """The query's position once it has not moved for 0.6 s (a front end
    may echo the positions of a drag back after the mouse is released)."""
    last, same = None, 0
    while same < 3:
        page.wait_for_timeout(200)
        q = point_of(root, "query")
        same = same + 1 if q == last else 0
        last = q
    return last


def drag_query(page, root, dx, dy):
    """Press on the query dot, move by (dx, dy) pixels in steps, release."""
    box = root.locator('[data-role="query"]').bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + dx, y + dy, steps=8)
    page.mouse.up()
    return settled_query(page, root)


def expected_playground(query, scaled=True, dim=2):
    pg = attnpy.playground(query=query, scaled=scaled, dim=dim)
    return pg, dict(zip(pg.tokens, pg.weights))


def check_playground(page, root, name):
    """Drag, arrow keys, output dot, scale toggle and head width d."""
    _PAGE[:] = [page]
    pg, want = expected_playground(point_of(root, "query"))
    eventually("initial weights", lambda: weights_match(root, want))
    shot(page, f"{name}-1-initial")
    before_q, before_out = point_of(root, "query"), point_of(root, "output")
    out_box = root.locator('[data-role="output"]').bounding_box()

    q = drag_query(page, root, -150, -60)                  # up and left
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
    n = round(root.locator('[data-role="cell"]').count() ** 0.5)
    return [[root.locator(f'[data-role="cell"][data-row="{i}"][data-col="{j}"]').text_content()
             for j in range(n)] for i in range(n)]


def table_matches(root, table, allowed, masked):
    """The shown cells are `table` to 3 decimals, `masked` where not allowed."""
    got = cell_texts(root)
    return all((same3(got[i][j], table[i][j]) if allowed[i][j] else got[i][j] == masked)
               for i in range(len(table)) for j in range(len(table))) and got


def check_matrix(page, root, name):
    """Causal toggle, row sums (weights only), scores with -inf, row highlight."""
    _PAGE[:] = [page]
    m = attnpy.attention_matrix()
    every = np.ones((6, 6), bool)
    eventually("initial weights", lambda: table_matches(root, m.weights, every, "0.000"))
    shot(page, f"{name}-1-weights")

    root.locator('[data-role="causal-toggle"]').click()
    m.causal = True
    lower = np.tril(every)
    got = eventually("causal weights", lambda: table_matches(root, m.weights, lower, "0.000"))
    assert all(got[i][j] == "0.000" for i in range(6) for j in range(i + 1, 6))
    assert texts(root, '[data-role="row-sum"]') == ["1.000"] * 6
    shot(page, f"{name}-2-causal")

    root.locator('[data-role="show-toggle"]').click()
    eventually("scores, masked cells -inf", lambda: table_matches(root, m.scores, lower, "−∞"))
    # a row of scores has no meaningful sum: the column is gone
    eventually("no row sums for scores", lambda: not root.locator(
        '[data-role="row-sum"]').first.is_visible())
    label = root.locator('[data-role="show-toggle"]').text_content()
    assert "raw" not in label and "before the softmax" in label, label
    root.locator('[data-role="causal-toggle"]').click()
    eventually("scores, no mask", lambda: table_matches(root, m.scores, every, "−∞") or print(cell_texts(root)))

    root.locator('[data-role="cell"][data-row="2"][data-col="4"]').click()
    eventually("row 2 highlighted", lambda: [
        root.locator(f'tr[data-row="{i}"]').get_attribute("data-selected") for i in range(6)]
        == ["false", "false", "true", "false", "false", "false"])
    note = root.locator('[data-role="row-note"]').text_content()
    # numbered as Python indexes: "sat" is row 2, "cat" column 1
    assert '"sat" (row 2)' in note and '"cat" (column 1)' in note, note
    shot(page, f"{name}-3-scores-row2")
    root.locator('[data-role="row-label"][data-row="5"]').focus()     # the keyboard
    page.keyboard.press("Enter")
    eventually("row 5 by keyboard", lambda: root.locator('tr[data-row="5"]').get_attribute(
        "data-selected") == "true" and root.locator('tr[data-row="2"]').get_attribute(
        "data-selected") == "false")
    root.locator('[data-role="show-toggle"]').click()
    eventually("live region: row 5's top weights", lambda: root.locator(
        '[data-role="announce"]').text_content().startswith('row 5 "mat": top weights: '))


# --- what every figure must show ------------------------------------------------

def plane_terms(root):
    """The playground's printed table: {token: (plane, rest, score, scaled, weight)}."""
    out = {}
    for tok in attnpy.playground().tokens:
        cells = [root.locator(f'[data-role="{r}"][data-token="{tok}"]').first.text_content()
                 for r in ("plane-score", "rest-score", "score", "scaled-score", "weight-cell")]
        out[tok] = tuple(float(c) for c in cells)
    return out


def check_d_explained(page, root, name):
    """At d = 2, 16, 64, 512, with the query put on each key (dragged there),
    the weights shown are the softmax of what the figure prints: the plane
    part (from the drawn positions) plus the rest, times the scale."""
    for d in (2, 16, 64, 512):
        root.locator('[data-role="dim"]').select_option(str(d))
        for scaled in (True, False):
            pressed = root.locator('[data-role="scale-toggle"]').get_attribute("aria-pressed")
            if (pressed == "true") != scaled:
                root.locator('[data-role="scale-toggle"]').click()
            for tok in ("cat", "sat", "on"):
                key = root.locator(f'[data-role="key"][data-token="{tok}"]')
                kb = key.bounding_box()
                qb = root.locator('[data-role="query"]').bounding_box()
                page.mouse.move(qb["x"] + qb["width"] / 2, qb["y"] + qb["height"] / 2)
                page.mouse.down()
                page.mouse.move(kb["x"] + kb["width"] / 2, kb["y"] + kb["height"] / 2, steps=4)
                page.mouse.up()
                q = point_of(root, "query")
                k = (float(key.get_attribute("data-x")), float(key.get_attribute("data-y")))
                assert abs(q[0] - k[0]) < 0.1 and abs(q[1] - k[1]) < 0.1, (tok, q, k)
                want = attnpy.playground(query=q, dim=d, scaled=scaled)
                eventually(f"d={d} on {tok}", lambda: weights_match(root, dict(zip(want.tokens, want.weights))))
                terms = plane_terms(root)
                scale = 1 / math.sqrt(d) if scaled else 1.0
                keys = {t: (float(root.locator(f'[data-role="key"][data-token="{t}"]').get_attribute("data-x")),
                            float(root.locator(f'[data-role="key"][data-token="{t}"]').get_attribute("data-y")))
                        for t in terms}
                for t, (plane, rest, score, scaled_s, _) in terms.items():
                    # the plane part is q . k of the points drawn
                    assert abs(plane - (q[0] * keys[t][0] + q[1] * keys[t][1])) <= 0.0006, (t, plane)
                    assert abs(plane + rest - score) <= 0.0011, (t, plane, rest, score)
                    assert abs(score * scale - scaled_s) <= 0.0006 + 0.0005 * scale, (t, score, scaled_s)
                    if d == 2:
                        assert rest == 0.0
                x = np.array([(v[0] + v[1]) * scale for v in terms.values()])
                y = np.exp(x - x.max())
                y /= y.sum()
                shown = np.array([v[4] for v in terms.values()])
                assert np.abs(y - shown).max() <= 0.002, (d, scaled, tok, y, shown)
                cap = root.locator("caption").first.text_content()
                assert (f"d = {d}" in cap) and (("rest" in cap) or d == 2), cap
    shot(page, f"{name}-d-explained")


def check_layout(page, root, name):
    """No two labels' boxes overlap, each inside its plane; nothing runs past
    the figure or the window; no table needs a scroll bar."""
    page.wait_for_timeout(150)
    res = page.evaluate("""(root) => {
      const box = (e) => e.getBoundingClientRect();
      const out = [];
      for (const svg of root.querySelectorAll("svg.attnpy-plane")) {
        const s = box(svg);
        // every point drawn inside the plane (a far point widens it)
        for (const e of svg.querySelectorAll('[data-role="key"], [data-role="query"], [data-role="output"]')) {
          const b = box(e);
          if (b.left < s.left - 0.5 || b.right > s.right + 0.5 || b.top < s.top - 0.5 || b.bottom > s.bottom + 0.5)
            out.push(`${e.getAttribute("data-role")} ${e.getAttribute("data-token") || ""} outside the plane`);
        }
        const labels = [...svg.querySelectorAll('[data-role="plane-label"]')].map((e) => [e.textContent, box(e)]);
        labels.forEach(([t, b], i) => {
          if (b.left < s.left - 0.5 || b.right > s.right + 0.5 || b.top < s.top - 0.5 || b.bottom > s.bottom + 0.5)
            out.push(`label ${t} outside the plane`);
          labels.slice(i + 1).forEach(([u, c]) => {
            const w = Math.min(b.right, c.right) - Math.max(b.left, c.left);
            const h = Math.min(b.bottom, c.bottom) - Math.max(b.top, c.top);
            if (w > 0.5 && h > 0.5) out.push(`labels ${t} and ${u} overlap`);
          });
        });
      }
      const r = box(root);
      for (const e of root.querySelectorAll("*")) {
        const b = box(e);
        if (b.width === 0 && b.height === 0) continue;
        if (e.closest(".attnpy-scroll") && e.closest(".attnpy-scroll") !== e) continue;
        if (b.right > r.right + 1 || b.left < r.left - 1) out.push(`${e.tagName} ${e.className.baseVal ?? e.className} outside the figure`);
      }
      for (const w of root.querySelectorAll(".attnpy-scroll"))
        if (w.scrollWidth > w.clientWidth + 1) out.push(`a table is wider than the figure (${w.scrollWidth} > ${w.clientWidth})`);
      if (document.documentElement.scrollWidth > window.innerWidth + 1)
        out.push(`the page scrolls sideways (${document.documentElement.scrollWidth} > ${window.innerWidth})`);
      if (r.right > window.innerWidth + 1) out.push("the figure runs past the window");
      return out;
    }""", root.element_handle())
    shot(page, name)
    assert res == [], res


def contrast_problems(page, root, minimum=4.5):
    """Text whose colour contrasts less than `minimum` with what is behind it."""
    return page.evaluate(r"""([root, minimum]) => {
      const parse = (t) => { const m = /rgba?\(([^)]+)\)/.exec(t || ""); if (!m) return null;
        const p = m[1].split(/[ ,/]+/).filter(Boolean).map(Number); return {rgb: p.slice(0, 3), a: p.length > 3 ? p[3] : 1}; };
      const lum = (c) => { const v = c.map((x) => { x /= 255; return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; });
        return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]; };
      const behind = (e) => { for (let n = e; n; n = n.parentElement) { const c = parse(getComputedStyle(n).backgroundColor);
        if (c && c.a > 0.5) return c.rgb; } return [255, 255, 255]; };
      const bad = [];
      const nodes = [...root.querySelectorAll("*")].filter((e) => [...e.childNodes].some((c) => c.nodeType === 3 && c.textContent.trim()));
      for (const e of nodes) {
        const st = getComputedStyle(e);
        if (st.visibility === "hidden" || st.display === "none") continue;
        const fg = parse(e instanceof SVGElement ? st.fill : st.color);
        if (!fg) continue;
        const a = lum(fg.rgb), b = lum(behind(e instanceof SVGElement ? e.ownerSVGElement : e));
        const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
        if (ratio < minimum) bad.push(`${e.tagName} "${e.textContent.slice(0, 20)}" ${ratio.toFixed(2)}`);
      }
      return bad;
    }""", [root.element_handle(), minimum])


def check_dark(page, root, name):
    """A dark backdrop gives the dark palette, and every text keeps 4.5:1."""
    eventually("dark palette", lambda: "attnpy-dark" in root.get_attribute("class"))
    bg = page.evaluate("(e) => getComputedStyle(e).backgroundColor", root.element_handle())
    assert bg not in ("rgb(255, 255, 255)", "rgba(0, 0, 0, 0)"), bg
    # the matrix paints its cells itself: repainted for the dark theme, its
    # smallest weights sit on a dark cell
    cells = page.evaluate("""(e) => [...e.querySelectorAll('td[data-role="cell"]')].map(
        (c) => getComputedStyle(c).backgroundColor)""", root.element_handle())
    if cells:
        darkest = min(sum(int(v) for v in c[c.index("(") + 1:c.index(")")].split(",")[:3]) for c in cells)
        assert darkest < 3 * 80, cells
    shot(page, name)
    assert contrast_problems(page, root) == []


def head_width(root):
    """The playground's d and scale as the page shows them."""
    return {"dim": int(root.locator('[data-role="dim"]').input_value()),
            "scaled": root.locator('[data-role="scale-toggle"]').get_attribute("aria-pressed") == "true"}


def check_query_control(page, root):
    """The accessibility tree shows the query as a slider whose value is
    read aloud, and the live region carries the top weights."""
    q = root.get_by_role("slider", name="query q")
    assert q.count() == 1
    x, y = point_of(root, "query")
    tree = root.aria_snapshot()
    assert 'slider "query q"' in tree, tree
    assert q.get_attribute("aria-valuetext") == f"x {x:.2f}, y {y:.2f}"
    q.focus()
    page.keyboard.press("ArrowUp")
    eventually("value after ArrowUp", lambda: root.get_by_role("slider", name="query q")
               .get_attribute("aria-valuetext") == f"x {x:.2f}, y {y + 0.1:.2f}")
    live = root.locator('[aria-live="polite"]')
    assert live.count() == 1
    pg = attnpy.playground(query=(x, round(y + 0.1, 2)), **head_width(root))
    top = sorted(zip(pg.weights, pg.tokens), reverse=True)[0]
    eventually("live region", lambda: live.text_content().startswith(
        f"top weights: {top[1]} {top[0]:.3f}"))


def check_head_view(page, root, weights, tokens, name):
    """Hover a query and a key, switch heads and layers: every weight
    shown is the one given."""
    L, H, T, _ = weights.shape

    def shown(selector):
        loc = root.locator(selector)
        return [(int(loc.nth(i).get_attribute("data-head")), int(loc.nth(i).get_attribute("data-row")),
                 int(loc.nth(i).get_attribute("data-col")), loc.nth(i).get_attribute("aria-label"))
                for i in range(loc.count())]

    for layer, head in ((0, 0), (L - 1, H - 1), (min(1, L - 1), None)):
        root.locator('[data-role="layer"]').select_option(str(layer))
        root.locator('[data-role="head"]').select_option("all" if head is None else str(head))
        heads = range(H) if head is None else [head]
        i = T - 1
        root.locator(f'[data-role="token"][data-side="query"][data-index="{i}"]').hover()
        lines = shown(f'[data-role="weight"][data-layer="{layer}"][data-row="{i}"][visibility="visible"]')
        assert sorted((h, c) for h, _, c, _ in lines) == [(h, c) for h in heads for c in range(T)]
        for h, r, c, text in lines:
            assert same3(text, float(weights[layer, h, r, c])), (layer, h, r, c, text)
        others = root.locator('[data-role="weight"][visibility="visible"]')
        assert others.count() == len(lines)                   # only the hovered query's
        if head is not None:
            nums = texts(root, '[data-role="weight-label"][data-side="key"]')
            assert all(same3(nums[c], float(weights[layer, head, i, c])) for c in range(T)), nums
        j = 0
        root.locator(f'[data-role="token"][data-side="key"][data-index="{j}"]').hover()
        lines = shown(f'[data-role="weight"][data-layer="{layer}"][visibility="visible"]')
        assert sorted((h, r) for h, r, _, _ in lines) == [(h, r) for h in heads for r in range(T)]
        assert all(c == j and same3(t, float(weights[layer, h, r, c])) for h, r, c, t in lines)
        top = max((float(weights[layer, h, r, j]), r) for h in heads for r in range(T))
        ann = root.locator('[data-role="announce"]').text_content()
        assert ann.startswith(f'key {j} "{tokens[j]}" is attended most by: {top[1]} '), ann
        shot(page, f"{name}-L{layer}-H{head}")
    page.mouse.move(0, 0)
