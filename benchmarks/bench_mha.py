"""MultiHeadAttention vs the same steps by hand vs torch.nn.MultiheadAttention.

    python benchmarks/bench_mha.py [--threads N] [--budget SECONDS] [--quick]

Float32 self-attention, ``need_weights=False`` everywhere, the same thread
count for attnpy, NumPy's BLAS (not changed here) and torch. Times are
medians of interleaved samples (attnpy's bench harness, with its idle
pause between contenders); peak extra memory is measured in a fresh
process per contender (tracemalloc sees NumPy's allocations, and torch's
through RSS), so the ratios below are side by side in one run.

"By hand" is what a reader writes from the tutorial with attnpy's fused
kernel: three projections, split_heads views, attnpy.attention, the head
combine and the output projection.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if __name__ == "__main__":
    sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

import attnpy  # noqa: E402
from attnpy._bench import Contender, time_interleaved  # noqa: E402

SHAPES = [  # (L, d_model, heads, causal)
    (8192, 256, 4, False),
    (8192, 256, 4, True),
    (4096, 512, 8, False),
]


def by_hand(mha, x, causal):
    """The tutorial's steps with attnpy's fused kernel."""
    Q = attnpy.split_heads(x @ mha.W_q, mha.num_heads)
    K = attnpy.split_heads(x @ mha.W_k, mha.num_heads)
    V = attnpy.split_heads(x @ mha.W_v, mha.num_heads)
    out = attnpy.attention(Q, K, V, causal=causal)
    return attnpy.combine_heads(out) @ mha.W_o


def torch_layer(mha):
    import torch
    d, h = mha.d_model, mha.num_heads
    layer = torch.nn.MultiheadAttention(d, h, bias=False, batch_first=True)
    with torch.no_grad():
        w = np.concatenate([mha.W_q.T, mha.W_k.T, mha.W_v.T])
        layer.in_proj_weight.copy_(torch.from_numpy(w))
        layer.out_proj.weight.copy_(torch.from_numpy(mha.W_o.T.copy()))
    layer.eval()
    return layer


def contenders(L, d, h, causal, with_torch):
    mha = attnpy.MultiHeadAttention(d, h, dtype=np.float32, seed=0)
    x = np.random.default_rng(1).standard_normal((1, L, d), dtype=np.float32)
    ref = by_hand(mha, x, causal)
    got = mha(x, causal=causal)
    err = float(np.abs(got - ref).max() / np.abs(ref).max())
    cs = [Contender("class", lambda: mha(x, causal=causal)),
          Contender("by hand", lambda: by_hand(mha, x, causal))]
    if with_torch:
        import torch
        layer = torch_layer(mha)
        xt = torch.from_numpy(x)
        m = torch.nn.Transformer.generate_square_subsequent_mask(L) if causal else None

        def run_torch():
            with torch.inference_mode():
                return layer(xt, xt, xt, need_weights=False, attn_mask=m,
                             is_causal=causal)[0]
        terr = float(np.abs(run_torch().numpy() - ref).max() / np.abs(ref).max())
        err = max(err, terr)
        cs.append(Contender("torch", run_torch))
    return cs, err


# one contender's peak memory in a fresh process
_CHILD = r"""
import json, sys, tracemalloc
sys.path.insert(0, sys.argv[1])
import numpy as np, attnpy
sys.path.insert(0, sys.argv[1] + "/benchmarks")
import bench_mha
L, d, h, causal, which = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1", sys.argv[6]
attnpy.set_num_threads(int(sys.argv[7]))
mha = attnpy.MultiHeadAttention(d, h, dtype=np.float32, seed=0)
x = np.random.default_rng(1).standard_normal((1, L, d), dtype=np.float32)
f = (lambda: mha(x, causal=causal)) if which == "class" else (lambda: bench_mha.by_hand(mha, x, causal))
f()                                   # warm up (threads, first-call allocations)
tracemalloc.start()
out = f()
cur, peak = tracemalloc.get_traced_memory()
print(json.dumps({"peak_bytes": peak, "out_bytes": out.nbytes}))
"""


def peak_memory(L, d, h, causal, which, threads):
    p = subprocess.run([sys.executable, "-c", _CHILD, ROOT, str(L), str(d), str(h),
                        "1" if causal else "0", which, str(threads)],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=attnpy.get_num_threads())
    ap.add_argument("--budget", type=float, default=6.0,
                    help="seconds of sampling per shape (default 6)")
    ap.add_argument("--quick", action="store_true",
                    help="smaller budget, no 65,536-token run")
    args = ap.parse_args(argv)
    attnpy.set_num_threads(args.threads)
    try:
        import torch
        torch.set_num_threads(args.threads)
        with_torch = True
    except ImportError:
        with_torch = False
    cfg = {"budget": 1.5 if args.quick else args.budget, "min_samples": 5,
           "max_samples": 41, "min_sample_s": 0.05, "settle_s": 0.12}
    print(f"MultiHeadAttention, float32, need_weights=False, {args.threads} "
          f"threads; medians of interleaved samples")
    print(f"{'shape (B, L, d), heads':<28}{'class ms':>10}{'by hand ms':>12}"
          f"{'torch ms':>10}{'class/hand':>12}{'torch/class':>12}"
          f"{'mem class/hand':>16}{'max rel err':>13}")
    for L, d, h, causal in SHAPES:
        cs, err = contenders(L, d, h, causal, with_torch)
        est = {c.name: 0.2 for c in cs}
        t = time_interleaved(cs, est, cfg)
        med = {k: v["median_s"] * 1e3 for k, v in t.items()}
        mc = peak_memory(L, d, h, causal, "class", args.threads)
        mh = peak_memory(L, d, h, causal, "by hand", args.threads)
        mem = (f"{mc['peak_bytes'] / mh['peak_bytes']:.2f}"
               f" ({mc['peak_bytes'] >> 20}/{mh['peak_bytes'] >> 20} MiB)"
               if "peak_bytes" in mc and "peak_bytes" in mh else "n/a")
        cls, hand, tt = med["class"], med["by hand"], med.get("torch")
        name = f"(1, {L}, {d}), {h}{' causal' if causal else ''}"
        print(f"{name:<28}{cls:>10.1f}{hand:>12.1f}"
              f"{(f'{tt:.1f}' if tt else '-'):>10}{cls / hand:>12.2f}"
              f"{(f'{tt / cls:.2f}' if tt else '-'):>12}{mem:>16}{err:>13.1e}")
    if not args.quick:
        L = 65536
        mc = peak_memory(L, 256, 4, True, "class", args.threads)
        mh = peak_memory(L, 256, 4, True, "by hand", args.threads)
        print(f"(1, {L}, 256), 4 causal: peak extra memory class "
              f"{mc.get('peak_bytes', 0) >> 20} MiB, by hand "
              f"{mh.get('peak_bytes', 0) >> 20} MiB "
              f"(one L x L float32 array would be {L * L * 4 >> 30} GiB)"
              + (f"; error: {mc['error']}" if "error" in mc else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
