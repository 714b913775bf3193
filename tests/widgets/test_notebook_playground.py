"""examples/playground.ipynb runs top to bottom in a fresh kernel and shows
what it says: the widgets, the geometry of the default keys, the head-width
table (one-hot and a vanishing gradient without the scale), the matrix."""
import re

import pytest

from teach.test_notebook import ROOT, execute, outputs

NOTEBOOK = ROOT / "examples" / "playground.ipynb"


@pytest.fixture(scope="module")
def executed():
    """The executed notebook, and its outputs' text (errors: none)."""
    nb = execute(NOTEBOOK)
    text, _, _, errors = outputs(nb)
    assert errors == []
    return nb, text


def test_runs_and_shows_the_widgets(executed):
    nb, text = executed
    views = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
             if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert len(views) == 3
    assert re.search(r"^sat +score +0\.000 +weight", text, re.M)
    assert re.search(r"^mat +score +-7\.760", text, re.M)
    assert "True 0.7071067811865475" in text          # explain's weights, bit for bit


def test_head_width_table(executed):
    text = executed[1]
    rows = re.findall(r"^ *(\d+) +(on|off) +([\d.]+) +([\d.e+-]+)$", text, re.M)
    assert [(int(d), s) for d, s, _, _ in rows] == [
        (d, s) for d in (2, 16, 64, 512) for s in ("on", "off")]
    off = [float(g) for _, s, _, g in rows if s == "off"]
    on = [float(g) for _, s, _, g in rows if s == "on"]
    assert off == sorted(off, reverse=True) and off[-1] < 1e-12
    assert min(on) > 0.05
    assert [float(w) for _, s, w, _ in rows if s == "off"][-1] == 1.0


def test_matrix_cells(executed):
    text = executed[1]
    assert "row sums: [1. 1. 1. 1. 1. 1.]" in text
    assert '"sat" attends most to "cat"' in text
    assert "[0.06  0.807 0.133 0.    0.    0.   ]" in text


def test_prose_follows_the_numbers(executed):
    """The d section's sentences quote the notebook's own printed numbers."""
    nb, text = executed
    prose = " ".join(c.source for c in nb.cells if c.cell_type == "markdown")
    cat = re.search(r"^cat +plane +([\d.-]+) +rest +([\d.-]+) .* weight ([\d.]+)$", text, re.M)
    on = re.search(r"^on +plane +([\d.-]+) +rest +([\d.-]+) .* weight ([\d.]+)$", text, re.M)
    assert "softmax of (plane + rest) / sqrt(512) is the weights: True" in text
    assert "(7.760) but not the largest score" in prose and cat.group(1) == "7.760"
    assert on.group(1) == "-5.500" and on.group(2) == "65.433" and on.group(3) == "0.728"
    assert "plane part of −5.500 and a\nrest of 65.433, so it takes 0.728" in prose
    rows = re.findall(r"^ *(\d+) +(on|off) +([\d.]+) +([\d.e+-]+)$", text, re.M)
    top = {(int(d), s): w for d, s, w, _ in rows}
    grad = {(int(d), s): float(g) for d, s, _, g in rows}
    off = ", ".join(top[d, "off"] for d in (2, 16, 64, 512))
    on_ = ", ".join(top[d, "on"] for d in (2, 16, 64)) + " and " + top[512, "on"]
    assert f"({off})" in prose, off
    assert f"top weight is {on_}" in prose, on_
    assert "gradient 0.23, 0.21, 0.19 and 0.07" in prose
    assert [round(grad[d, "on"], 2) for d in (2, 16, 64, 512)] == [0.23, 0.21, 0.19, 0.07]
    assert f"about {grad[512, 'off']:.0e}".replace("e-", "e-") in prose, grad[512, "off"]
    assert grad[512, "on"] / grad[512, "off"] > 1e21
