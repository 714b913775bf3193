"""examples/minilm_attention.ipynb: its stored outputs are what a fresh
run prints, and its prose says what they show (the notebook's own checks
live in tests/layer)."""
import re

import pytest

from test_notebook import ROOT, execute, outputs, stale_cells

NOTEBOOK = ROOT / "examples" / "minilm_attention.ipynb"
pytestmark = pytest.mark.oracle   # the real model: CI's oracle step


@pytest.fixture(scope="module")
def executed():
    return execute(NOTEBOOK)


def test_stored_outputs_are_what_a_fresh_run_prints(executed):
    # float32 weights and similarities: the last printed digit may follow
    # the BLAS and the instruction set
    # (18: the head view's text form, the top weights of every query)
    tol = {9: 0.05, 12: 0.05, 13: 0.01, 15: 0.01, 18: 0.05}
    assert stale_cells(NOTEBOOK, executed, tol) == []


def test_prose_says_what_the_heads_show(executed):
    text, _, _, _ = outputs(executed)
    prose = " ".join("".join(c.source) for c in executed.cells
                     if c.cell_type == "markdown")
    top = {int(h): [tuple(p.split("->")) for p in pairs.split(", ")]
           for h, pairs in re.findall(r"^head +(\d+) top keys: (.*)$", text,
                                      re.M)}
    later = [(q, k) for q, k in top[8] if k != "[CLS]" and k != q]
    assert later == [("the", "cat"), ("on", "mat"), ("the", "mat"),
                     ("it", "tired"), ("was", "tired")]
    assert "Head 8 sends the largest weight of five queries" in prose
    assert all(k == "[CLS]" for q, k in top[8] if (q, k) not in later)
    back = [(q, k) for q, k in top[11] if k != "[CLS]"]
    assert back == [("on", "sat"), ("the", "on")]
    assert 'head 11 sends "on" and "the" back' in prose
    n = int(re.search(r"more than half of it on \[CLS\]: (\d+) of 12",
                      text).group(1))
    assert f"In {n} of the 12 heads" in prose
