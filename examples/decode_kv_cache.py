"""Token-by-token decoding with attnpy.KVCache, checked against the full pass.

A tiny decoder-only transformer (random weights: pre-norm blocks with
rotary positions, multi-head causal self-attention and a ReLU MLP) runs the same tokens two ways:

1. the full pass: all positions at once, ``attention(..., causal=True)``;
2. a prompt, then one token at a time: each layer appends the new keys and
   values to its ``attnpy.KVCache`` and the new query rows attend to the
   cache (``causal="bottom_right"``: the last query row sees every cached
   key). One query row is what attnpy's split-K decode kernel is for.

The logits agree to float32 rounding (the two paths sum in different
orders), and greedy generation with the cache picks the tokens a full
recomputation at every step picks. Run:

    python examples/decode_kv_cache.py
"""
import os
import sys

import numpy as np

if __name__ == "__main__":  # a source checkout: the attnpy built in place
    sys.path.insert(0, os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))

import attnpy  # noqa: E402

VOCAB, D_MODEL, HEADS, LAYERS, D_FF = 97, 64, 4, 2, 128


def init(seed=0, dtype=np.float32):
    """Random weights (scaled so activations stay of order 1)."""
    rng = np.random.default_rng(seed)

    def w(n_in, n_out):
        return (rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(
            dtype)

    layers = [dict(W_qkv=w(D_MODEL, 3 * D_MODEL), W_o=w(D_MODEL, D_MODEL),
                   W_1=w(D_MODEL, D_FF), W_2=w(D_FF, D_MODEL))
              for _ in range(LAYERS)]
    embed = rng.standard_normal((VOCAB, D_MODEL)).astype(dtype)
    return dict(embed=embed, layers=layers, W_out=w(D_MODEL, VOCAB))


def rms_norm(x, eps=1e-6):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)


def block(x, layer, offset, cache=None):
    """One pre-norm block on x (B, T, D_MODEL), positions offset..offset+T-1."""
    q, k, v = np.split(rms_norm(x) @ layer["W_qkv"], 3, axis=-1)
    q, k, v = (attnpy.split_heads(a, HEADS) for a in (q, k, v))  # (B,H,T,dk)
    q = attnpy.rotary_embedding(q, offset=offset)
    k = attnpy.rotary_embedding(k, offset=offset)
    if cache is None:
        o = attnpy.attention(q, k, v, causal=True)
    else:
        K, V = cache.append(k, v)            # views of the cache, no copy
        o = attnpy.attention(q, K, V, causal="bottom_right")
    x = x + attnpy.combine_heads(o) @ layer["W_o"]
    return x + np.maximum(rms_norm(x) @ layer["W_1"], 0) @ layer["W_2"]


def forward(model, tokens, offset=0, caches=None):
    """Logits (B, T, VOCAB) of tokens (B, T) at positions offset.."""
    x = model["embed"][tokens]
    for i, layer in enumerate(model["layers"]):
        x = block(x, layer, offset, None if caches is None else caches[i])
    return rms_norm(x) @ model["W_out"]


def new_caches(batch, max_len, dtype=np.float32):
    return [attnpy.KVCache(batch, HEADS, max_len, D_MODEL // HEADS,
                           dtype=dtype) for _ in range(LAYERS)]


def decode_vs_full(T=48, prompt=16, batch=2, seed=0):
    """Max |logits| difference between token-by-token and the full pass."""
    model = init(seed)
    tokens = np.random.default_rng(seed + 1).integers(0, VOCAB, (batch, T))
    full = forward(model, tokens)
    caches = new_caches(batch, T)
    steps = [forward(model, tokens[:, :prompt], 0, caches)]
    for t in range(prompt, T):
        steps.append(forward(model, tokens[:, t:t + 1], t, caches))
    stepwise = np.concatenate(steps, axis=1)
    assert caches[0].length == T
    return float(np.max(np.abs(stepwise - full))), float(np.max(np.abs(full)))


def generate(model, prompt, n_new, caches=None):
    """Greedy generation: with caches, one new token per forward call;
    without, the whole sequence recomputed at every step."""
    seq = np.array(prompt)
    if caches is not None:
        logits = forward(model, seq, 0, caches)
    for _ in range(n_new):
        if caches is None:
            logits = forward(model, seq)
        nxt = np.argmax(logits[:, -1], axis=-1)[:, None]
        seq = np.concatenate([seq, nxt], axis=1)
        if caches is not None:
            logits = forward(model, nxt, seq.shape[1] - 1, caches)
    return seq


def main():
    err, scale = decode_vs_full()
    print(f"token by token vs full pass: max |difference| of the logits "
          f"{err:.2e} (logits up to {scale:.1f})")
    model = init(0)
    prompt = np.random.default_rng(2).integers(0, VOCAB, (2, 5))
    with_cache = generate(model, prompt, 12, new_caches(2, 17))
    recomputed = generate(model, prompt, 12)
    print("greedy tokens with the cache:", with_cache[0, 5:].tolist())
    print("same as recomputing the full pass each step:",
          bool(np.array_equal(with_cache, recomputed)))
    return err <= 1e-4 * max(scale, 1.0) and np.array_equal(with_cache,
                                                            recomputed)


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
