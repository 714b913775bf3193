"""TransformerEncoderLayer vs the tutorial's NumPy layer vs
torch.nn.TransformerEncoderLayer (eval), and examples/minilm.py vs
sentence-transformers.

    python benchmarks/bench_layer.py [--threads N] [--budget SECONDS]

Float32, the same thread count for attnpy and torch (NumPy's BLAS is not
changed here). Times are medians of interleaved samples (attnpy's bench
harness); the ratios are side by side in one run. The tutorial's layer is
its own code (attnpy.reference.tutorial_*) on float32 arrays.
"""
import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if __name__ == "__main__":
    sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

import attnpy  # noqa: E402
from attnpy import reference as R  # noqa: E402
from attnpy._bench import Contender, time_interleaved  # noqa: E402

SHAPES = [(8, 128, 512, 8, 2048), (32, 128, 384, 12, 1536)]  # B, L, d, h, f


def tutorial_forward(layer, x):
    a = layer.attention

    def mha(X, mask):
        return R.tutorial_multi_head_attention(X, a.W_q, a.W_k, a.W_v, a.W_o,
                                               a.num_heads, mask)
    return R.tutorial_encoder_layer(x, mha, layer.W1, layer.b1, layer.W2,
                                    layer.b2)


def torch_layer(layer):
    import torch
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


def layer_rows(with_torch, cfg):
    print(f"{'(B, L, d), heads, d_ff':<28}{'attnpy ms':>10}{'tutorial ms':>12}"
          f"{'torch ms':>10}{'tutorial/attnpy':>17}{'torch/attnpy':>14}"
          f"{'max err':>10}")
    for B, L, d, h, f in SHAPES:
        # torch's LayerNorm form, so that every contender computes the same
        layer = attnpy.TransformerEncoderLayer(d, h, f, seed=0,
                                               dtype=np.float32,
                                               eps_in_sqrt=True,
                                               layer_norm_eps=1e-5)
        x = np.random.default_rng(1).standard_normal((B, L, d),
                                                     dtype=np.float32)
        got = layer.forward(x)
        cs = [Contender("attnpy", lambda: layer.forward(x)),
              Contender("tutorial", lambda: tutorial_forward(layer, x))]
        err = 0.0
        if with_torch:
            import torch
            tl, xt = torch_layer(layer), torch.from_numpy(x)

            def run_torch():
                with torch.inference_mode():
                    return tl(xt)
            err = float(np.abs(run_torch().numpy() - got).max())
            cs.append(Contender("torch", run_torch))
        t = time_interleaved(cs, {c.name: 0.05 for c in cs}, cfg)
        med = {k: v["median_s"] * 1e3 for k, v in t.items()}
        tt, ta = med.get("torch"), med["attnpy"]
        name = f"({B}, {L}, {d}), {h}, {f}"
        print(f"{name:<28}{ta:>10.1f}{med['tutorial']:>12.1f}"
              f"{(f'{tt:.1f}' if tt else '-'):>10}"
              f"{med['tutorial'] / ta:>17.2f}"
              f"{(f'{tt / ta:.2f}' if tt else '-'):>14}{err:>10.1e}")


def minilm_row(cfg):
    try:
        sys.path.insert(0, os.path.join(ROOT, "examples"))
        import minilm
        from sentence_transformers import SentenceTransformer
        model = minilm.MiniLM()
        st = SentenceTransformer(str(minilm.model_dir()), device="cpu")
    except ImportError as exc:
        print(f"MiniLM: skipped ({exc})")
        return
    words = ("the attention of every token to every other token is what a "
             "transformer computes in each of its layers").split()
    rng = np.random.default_rng(0)
    sents = [" ".join(rng.choice(words, 110)) for _ in range(32)]
    n = model.tokenize(sents)[1]
    err = float(np.abs(model.embed(sents)
                       - st.encode(sents, batch_size=32)).max())
    cs = [Contender("attnpy", lambda: model.embed(sents)),
          Contender("st", lambda: st.encode(sents, batch_size=32))]
    t = time_interleaved(cs, {c.name: 0.3 for c in cs}, cfg)
    med = {k: v["median_s"] * 1e3 for k, v in t.items()}
    print(f"MiniLM, 32 sentences of {n.min()}-{n.max()} tokens: attnpy "
          f"{med['attnpy']:.1f} ms, sentence-transformers {med['st']:.1f} ms,"
          f" st/attnpy {med['st'] / med['attnpy']:.2f}, max err {err:.1e}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=attnpy.get_num_threads())
    ap.add_argument("--budget", type=float, default=6.0,
                    help="seconds of sampling per row (default 6)")
    args = ap.parse_args(argv)
    attnpy.set_num_threads(args.threads)
    try:
        import torch
        torch.set_num_threads(args.threads)
        with_torch = True
    except ImportError:
        with_torch = False
    cfg = {"budget": args.budget, "min_samples": 5, "max_samples": 41,
           "min_sample_s": 0.05, "settle_s": 0.12}
    print(f"Encoder layer, float32, {args.threads} threads; medians of "
          f"interleaved samples")
    layer_rows(with_torch, cfg)
    minilm_row(cfg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
