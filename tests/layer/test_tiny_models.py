"""examples/minilm.py on a small model in the real one's file format
(tests/_tiny_models.py: a 2-layer BERT, 32 features, a WordPiece
vocabulary of its own): its embeddings are sentence-transformers' for the
same files (stored once in tests/data/minilm_tiny_ref.npz by
tools/make_minilm_ref.py, with the files' sha256) to 2e-5, empty /
accented / CJK / over-long sentences included, as the real model's test
holds it (tests/layer/test_minilm.py, CI's oracle step). Needs safetensors
and tokenizers; not torch, sentence-transformers or the real weights."""
import os

import numpy as np
import pytest

from _tiny_models import write_tiny_minilm
from test_minilm import ROOT, check_embeddings, minilm  # noqa: F401


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny_minilm")
    return path, write_tiny_minilm(path)


@pytest.fixture(scope="module")
def ref():
    d = np.load(os.path.join(ROOT, "tests", "data", "minilm_tiny_ref.npz"))
    return [str(s) for s in d["sentences"]], d["embeddings"], \
        str(d["files_sha256"])


def test_the_files_are_the_ones_the_reference_came_from(tiny, ref):
    assert tiny[1] == ref[2]


def test_embeddings_equal_sentence_transformers(minilm, tiny, ref):
    sentences, want, _ = ref
    model = minilm.MiniLM(tiny[0])
    assert len(model.layers) == 2 and want.shape == (len(sentences), 32)
    check_embeddings(minilm, model, sentences, want, model.embed(sentences))


def test_similarity_table(minilm, tiny, ref):
    sentences = ref[0][:3]
    model = minilm.MiniLM(tiny[0])
    lines = minilm.similarity_table(sentences, model).splitlines()
    assert len(lines) == 4
    sim = np.array([[float(v) for v in line.split()[-3:]]
                    for line in lines[1:]])
    e = model.embed(sentences)
    np.testing.assert_allclose(sim, e @ e.T, atol=5e-4)   # printed to 3 places
    np.testing.assert_allclose(np.diag(sim), 1, atol=1e-3)
