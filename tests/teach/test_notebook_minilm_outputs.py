"""examples/minilm_attention.ipynb: its stored outputs are what a fresh
run prints (the notebook's own checks live in tests/layer)."""
from test_notebook import ROOT, execute, stale_cells

NOTEBOOK = ROOT / "examples" / "minilm_attention.ipynb"


def test_stored_outputs_are_what_a_fresh_run_prints():
    fresh = execute(NOTEBOOK)
    # float32 weights and similarities: the last printed digit may follow
    # the BLAS and the instruction set
    assert stale_cells(NOTEBOOK, fresh, {10: 0.02, 11: 0.01, 13: 0.01}) == []
