"""examples/gradients.ipynb runs top to bottom and shows what it claims:
the 1/sqrt(d) table, a falling training loss, gradients that match finite
differences, the plots."""
import math
import re

import pytest

from test_notebook import ROOT, execute, outputs, stale_cells

NOTEBOOK = ROOT / "examples" / "gradients.ipynb"

# running the notebook takes ~7 s: with the slow tests (CI's full-counts)
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def executed():
    return execute(NOTEBOOK)


def test_stored_outputs_are_what_a_fresh_run_prints(executed):
    # the finite-difference errors are rounding noise and the training's
    # last digits follow the BLAS: their words must match, their numbers
    # only roughly (training) or not at all (noise)
    assert stale_cells(NOTEBOOK, executed, {9: "words", 10: 0.5}) == []


def test_prose_says_what_the_table_shows(executed):
    text, _, _, _ = outputs(executed)
    raw = [float(r[3]) for r in re.findall(
        r"^\s*(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.e+-]+)\s+([\d.e+-]+)\s+"
        r"([\d.]+)%\s+([\d.]+)%$", text, re.M)]
    prose = "".join(c.source for c in executed.cells
                    if c.cell_type == "markdown")
    assert "less than one order of magnitude from\n$d = 2$ to $d = 8$" in prose
    assert raw[0] / raw[1] < 10                       # d = 2 -> 8
    assert all(a / b >= 100 for a, b in zip(raw[1:], raw[2:]))
    orders = [round(math.log10(a / b)) for a, b in zip(raw[2:], raw[3:])]
    assert "(4 from $d = 32$ to\n$128$, 9 from $128$ to $512$, 18 from $512$ to $2048$)" in prose
    assert orders == [4, 9, 18], orders
    assert "orders of magnitude\nper doubling" not in prose


def test_runs_without_errors(executed):
    _, _, pngs, errors = outputs(executed)
    assert errors == []
    assert pngs >= 2          # the gradient-vs-d plot, the training plots


def test_scale_keeps_gradient_flowing(executed):
    text, _, _, _ = outputs(executed)
    rows = re.findall(r"^\s*(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.e+-]+)\s+"
                      r"([\d.e+-]+)\s+([\d.]+)%\s+([\d.]+)%$", text, re.M)
    assert [int(r[0]) for r in rows] == [2, 8, 32, 128, 512, 2048]
    raw = [float(r[3]) for r in rows]
    scaled = [float(r[4]) for r in rows]
    # raw: the typical non-argmax gradient collapses as d grows
    assert all(a > b for a, b in zip(raw, raw[1:]))
    assert raw[-1] < 1e-20 < raw[0]
    # scaled: it does not depend on d (within a factor 2)
    assert max(scaled) < 2 * min(scaled)
    assert float(rows[-1][1]) > 0.9 > float(rows[-1][2])   # peaked vs not


def test_gradients_checked_and_loss_falls(executed):
    text, _, _, _ = outputs(executed)
    err = float(re.search(r"max relative error vs central finite "
                          r"differences: ([\d.e+-]+)", text).group(1))
    assert err < 1e-6
    first, last = map(float, re.search(
        r"loss: ([\d.]+) \(first 20 steps\) -> ([\d.]+) \(last 20 steps\)",
        text).groups())
    assert last < first / 20
    attn = float(re.search(r"mean attention on the marked token ([\d.]+)",
                           text).group(1))
    assert attn > 0.5
    assert "rows sum to 0 (to within 1e-15: True;" in text


def test_backward_trace_section(executed):
    text, _, _, _ = outputs(executed)
    assert "Step 3. dS = weights * (dP - D)" in text
    assert "by hand: dS[sat, cat] = weights * (dP - D) = 0.281 * " in text
    assert "check of 'dS' at 3 decimals: OK" in text
    assert "1 is wrong" in text
