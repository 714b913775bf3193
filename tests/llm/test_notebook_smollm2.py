"""examples/smollm2_attention.ipynb runs top to bottom (a fresh kernel, the
repository root as working directory) and shows what its prose says: the
answer, the cache growing by 46080 bytes a position, explain equal to the
model's attention, the cached decode close to the full pass with the same
greedy tokens, the per-layer weights of the query "Paris" the text
describes, and a float16 cache giving the same greedy tokens. The saved
copy's numbers are those its prose quotes."""
import os
import re
import sys
from pathlib import Path

import nbformat
import pytest

_TESTS = Path(__file__).resolve().parents[1]
for _name in ("test_notebook.py", "test_notebook_minilm.py"):
    sys.path.insert(0, str(next(_TESTS.rglob(_name)).parent))
from test_notebook import ROOT, execute, outputs  # noqa: E402
# runs with this module's `executed`: no error, every cell run, a figure
from test_notebook_minilm import (  # noqa: E402,F401
    test_runs_without_errors_and_draws_the_heads)

NOTEBOOK = ROOT / "examples" / "smollm2_attention.ipynb"
pytestmark = pytest.mark.oracle   # a kernel that loads the real model


@pytest.fixture(scope="module")
def executed():
    # one BLAS thread for the kernel: OpenBLAS's spinning threads made the
    # model's small products several times slower on a busy machine
    old = os.environ.get("OPENBLAS_NUM_THREADS")
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        return execute(NOTEBOOK)
    finally:
        if old is None:
            os.environ.pop("OPENBLAS_NUM_THREADS")
        else:
            os.environ["OPENBLAS_NUM_THREADS"] = old


def _layers(text):
    rows = re.findall(r"^layer +(\d+): (.+)$", text, re.M)
    return {int(k): [(t, int(p), float(w)) for t, p, w in
                     re.findall(r"('.*?')@(\d+) ([\d.]+)", rest)]
            for k, rest in rows}


def _check(text):
    assert "answer: 'The capital of France is Paris.'" in text
    assert "bytes per position: 46080" in text
    assert "explain's output is the layer's attention: True" in text
    assert "same greedy token at every step: True" in text
    diff, big = re.search(r"max \|cached - full\|: (\S+) +\(largest \|logit\| "
                          r"(\S+)\)", text).groups()
    assert float(diff) <= 1e-5 * float(big) * 10
    layers = _layers(text)
    assert sorted(layers) == list(range(30))
    for k in range(3):
        assert max(w for _, _, w in layers[k]) <= 0.08
    for k in range(3, 11):
        the = [w for t, p, w in layers[k] if (t, p) == ("' the'", 26)]
        assert the and 0.24 <= the[0] <= 0.49, k
    for k in range(12, 30):
        t, p, w = layers[k][0]
        assert (t, p) == ("'<|im_start|>'", 0) and 0.41 <= w <= 0.82, k
    # attnpy's part: a query row alone against its cache is the full pass's
    same, total = map(int, re.search(
        r"attention, one query row against its cache vs the full pass: "
        r"(\d+) of (\d+) rows bitwise equal", text).groups())
    assert total == 30 * 8 and same == total
    # the float16 cache: half the bytes, the same greedy tokens
    assert "float16 cache: bytes per position 23040 dtype float16" in text
    assert "float16 cache, same greedy token at every step: True" in text
    d16, big16 = map(float, re.search(
        r"max \|float16 cache - float32 cache\|: (\S+) +\(largest \|logit\| "
        r"(\S+)\)", text).groups())
    gap = float(re.search(r"two best logits \(float32 cache\): (\S+)",
                          text).group(1))
    assert 0 < d16 < 0.01 * big16 and gap > 0
    return float(diff), int(re.search(r"(?<!attention, )rows bitwise equal: (\d+) of 8\n",
                                      text).group(1))


def test_shows_what_its_text_says(executed):
    _check(outputs(executed)[0])


def test_the_saved_copy_has_the_numbers_its_prose_quotes():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    diff, bitwise = _check(outputs(nb)[0])
    prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "differ by at most %.1e" % diff in prose
    assert bitwise == 0 and "no row of logits was bitwise equal" in prose
    assert "gave every answer row of every layer the same bits" in prose
    text = outputs(nb)[0]
    d16 = float(re.search(r"max \|float16 cache - float32 cache\|: (\S+)",
                          text).group(1))
    gap = float(re.search(r"two best logits \(float32 cache\): (\S+)",
                          text).group(1))
    assert "differ from the float32 cache's by at most %.1e" % d16 in prose
    assert "never closer than %.3f apart" % gap in prose
