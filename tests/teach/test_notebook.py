"""examples/attention_walkthrough.ipynb runs top to bottom in a real kernel.

The notebook is executed with nbclient in a fresh IPython kernel whose
working directory and PYTHONPATH are the repository root, so it imports
this checkout's attnpy. Its outputs are then checked: no errors, the
tutorials' numbers printed, the HTML tables and the plots present.
"""
import functools
import math
import os
import re
from pathlib import Path

import pytest

# the [test] extra installs these; a missing one is an error, not a skip
import ipykernel  # noqa: F401  (the notebook's "python3" kernel)
import matplotlib  # noqa: F401
import nbclient
import nbformat

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "examples" / "attention_walkthrough.ipynb"


@functools.cache    # tests/layer and tests/teach both read minilm's run
def execute(path):
    """The notebook at `path`, executed in a fresh kernel (repo root as
    working directory and on PYTHONPATH), once per path and session:
    callers only read it."""
    env = {
        "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH",
                                                             ""),
        "JUPYTER_PLATFORM_DIRS": "1",   # no jupyter_core migration warning
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
    }
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        nb = nbformat.read(path, as_version=4)
        client = nbclient.NotebookClient(
            nb, timeout=180, kernel_name="python3",
            resources={"metadata": {"path": str(ROOT)}})
        client.execute()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb


@pytest.fixture(scope="module")
def executed():
    return execute(NOTEBOOK)


def outputs(nb):
    """(all text, all html, number of png images, error outputs)."""
    text, htmls, pngs, errors = [], [], 0, []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            if out.output_type == "error":
                errors.append(f"{out.ename}: {out.evalue}")
            elif out.output_type == "stream":
                if out.name == "stderr":
                    errors.append("stderr: " + out.text)
                text.append(out.text)
            else:
                data = out.get("data", {})
                text.append(data.get("text/plain", ""))
                htmls.append(data.get("text/html", ""))
                pngs += "image/png" in data
    return "\n".join(text), "\n".join(htmls), pngs, errors


NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?%?")


def cell_texts(nb):
    """{code cell index: the text it printed (streams and text/plain)}."""
    out = {}
    for k, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            out[k] = "".join(
                o.text if o.output_type == "stream"
                else o.get("data", {}).get("text/plain", "")
                for o in cell.get("outputs", []))
    return out


def same_text(stored, fresh, rtol=0.0, words_only=False):
    """The words of the two texts are equal, and their numbers too (within
    rtol; not compared with words_only)."""
    if not rtol and not words_only:
        return stored == fresh
    if NUMBER.sub("#", stored).split() != NUMBER.sub("#", fresh).split():
        return False
    if words_only:
        return True
    a = [float(x.rstrip("%")) for x in NUMBER.findall(stored)]
    b = [float(x.rstrip("%")) for x in NUMBER.findall(fresh)]
    return all(math.isclose(x, y, rel_tol=rtol, abs_tol=1e-12)
               for x, y in zip(a, b))


def stale_cells(path, fresh, tolerance=None):
    """Code cells whose stored output is not what a fresh run prints;
    tolerance: {cell index: rtol, or "words"} for cells whose last digits
    depend on the machine (BLAS, instruction set)."""
    stored = cell_texts(nbformat.read(path, as_version=4))
    new = cell_texts(fresh)
    tolerance = tolerance or {}
    bad = []
    for k in new:
        tol = tolerance.get(k, 0.0)
        ok = (same_text(stored[k], new[k], words_only=True) if tol == "words"
              else same_text(stored[k], new[k], rtol=tol))
        if not ok:
            bad.append((k, stored[k][:300], new[k][:300]))
    return bad


def test_stored_outputs_are_what_a_fresh_run_prints(executed):
    assert stale_cells(NOTEBOOK, executed) == []


def test_notebook_runs_without_errors(executed):
    _, _, _, errors = outputs(executed)
    assert errors == []
    for cell in executed.cells:
        if cell.cell_type == "code":
            assert cell.execution_count is not None


def test_notebook_prints_the_tutorials_numbers(executed):
    text, _, _, _ = outputs(executed)
    # "the cat sat": scores, scaled scores, weights
    assert "the  1.160  0.470  0.810" in text
    assert "the  0.580  0.235  0.405" in text
    assert "cat  0.307  0.371  0.321" in text
    assert "e^0.405 = 1.500; sum = 4.551; 1.500/4.551 = 0.32960" in text
    assert "1.264" not in text                # no implausible rounding path
    assert "explained by hand rounding of intermediates" in text
    assert "WRONG: differs beyond rounding" in text
    # the GPT-2 causal table and "cat" as a weighted sum
    assert "output_2 = 0.289 * V_1 + 0.711 * V_2" in text
    assert "no contribution from V_3: masked" in text
    # multi-head: explain's heads == MultiHeadAttention.forward, bit for bit
    assert "same weights as forward: True" in text
    assert "same output as forward:  True" in text
    assert "(1, 2, 6, 4)" in text
    # the prose's claims, shown by the numbers
    assert "shuffled tokens give the shuffled output rows: True" in text


def test_notebook_shows_tables_and_plots(executed):
    _, htmls, pngs, _ = outputs(executed)
    assert 'class="attnpy-w' in htmls       # trace heatmap tables
    assert 'class="attnpy-m' in htmls       # show(causal_mask)
    assert pngs >= 3                         # causal, heads, positional


def test_same_text_catches_a_changed_digit():
    assert same_text("w 0.330 ok", "w 0.330 ok")
    assert not same_text("w 0.330 ok", "w 0.329 ok")
    assert same_text("loss 0.000092", "loss 0.000093", rtol=0.5)
    assert not same_text("loss 0.000092", "loss 0.0092", rtol=0.5)
    assert not same_text("max err 1e-9", "max ERR 1e-9", words_only=True)
