"""examples/minilm_attention.ipynb runs top to bottom (a fresh kernel, the
repository root as working directory) and shows what it says: the real
model's tokens, explain's heads equal to the model's attention layer, the
12 heads drawn, and a similarity table that pairs related sentences."""
import re
import sys
from pathlib import Path

import pytest

# the notebook runner of tests/test_notebook.py (wherever the tests'
# regrouping puts it)
_TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(next(_TESTS.rglob("test_notebook.py")).parent))
from test_notebook import ROOT, execute, outputs  # noqa: E402

NOTEBOOK = ROOT / "examples" / "minilm_attention.ipynb"
pytestmark = pytest.mark.oracle   # the real model: CI's oracle step


@pytest.fixture(scope="module")
def executed():
    return execute(NOTEBOOK)


def test_runs_without_errors_and_draws_the_heads(executed):
    _, _, pngs, errors = outputs(executed)
    assert errors == []
    assert pngs >= 1
    for cell in executed.cells:
        if cell.cell_type == "code":
            assert cell.execution_count is not None


def test_heads_are_the_models_attention(executed):
    text, _, _, _ = outputs(executed)
    assert ("13 tokens: ['[CLS]', 'the', 'cat', 'sat', 'on', 'the', 'mat', "
            "'because', 'it', 'was', 'tired', '.', '[SEP]']") in text
    assert "weights: (12, 13, 13)" in text
    assert "explain's heads give the layer's attention: True" in text
    tops = re.findall(r"^head +(\d+): (\S+) ([\d.]+)", text, re.M)
    assert [int(h) for h, _, _ in tops] == list(range(12))
    assert all(0 < float(w) <= 1 for _, _, w in tops)
    assert 'output for query "it"' in text


def test_similarity_table_pairs_related_sentences(executed):
    text, _, _, _ = outputs(executed)
    rows = re.findall(r"^ ?(\d) (.+?)\s+((?:-?\d\.\d{3}\s*){5})$", text, re.M)
    assert [int(r[0]) for r in rows] == [0, 1, 2, 3, 4]
    sim = [[float(v) for v in r[2].split()] for r in rows]
    for i in range(5):
        assert sim[i][i] == pytest.approx(1.0, abs=1e-3)
        for j in range(5):
            assert sim[i][j] == sim[j][i]
    # cat with kitten, and markets with shares, above every other pair
    assert min(sim[0][1], sim[3][4]) > 0.4
    others = [sim[i][j] for i in range(5) for j in range(i + 1, 5)
              if (i, j) not in ((0, 1), (3, 4))]
    assert max(others) < 0.3
