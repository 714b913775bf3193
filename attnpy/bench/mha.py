"""The ``mha`` part of ``python -m attnpy bench``: MultiHeadAttention vs the
same steps by hand vs torch.nn.MultiheadAttention.

Float32 self-attention, ``need_weights=False`` everywhere, the same thread
count for attnpy and torch. Times are medians of interleaved samples; peak
extra memory is measured in a fresh process per contender with
tracemalloc (which sees NumPy's allocations).

"By hand" is what a reader writes from the tutorial with attnpy's fused
kernel: three projections, split_heads views, attnpy.attention, the head
combine and the output projection.
"""
import json
import subprocess
import sys

import numpy as np

import attnpy

from .report import _p
from .timing import Contender, _estimate, time_interleaved

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


def torch_layer(mha, torch):
    d, h = mha.d_model, mha.num_heads
    layer = torch.nn.MultiheadAttention(d, h, bias=False, batch_first=True)
    with torch.no_grad():
        w = np.concatenate([mha.W_q.T, mha.W_k.T, mha.W_v.T])
        layer.in_proj_weight.copy_(torch.from_numpy(w))
        layer.out_proj.weight.copy_(torch.from_numpy(mha.W_o.T.copy()))
    layer.eval()
    return layer


def contenders(L, d, h, causal, torch):
    mha = attnpy.MultiHeadAttention(d, h, dtype=np.float32, seed=0)
    x = np.random.default_rng(1).standard_normal((1, L, d), dtype=np.float32)
    ref = by_hand(mha, x, causal)
    got = mha(x, causal=causal)
    err = float(np.abs(got - ref).max() / np.abs(ref).max())
    cs = [Contender("class", lambda: mha(x, causal=causal)),
          Contender("by hand", lambda: by_hand(mha, x, causal))]
    if torch is not None:
        layer = torch_layer(mha, torch)
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
from attnpy.bench import mha as bench_mha
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


def peak_memory(root, L, d, h, causal, which, threads):
    p = subprocess.run([sys.executable, "-c", _CHILD, root, str(L), str(d), str(h),
                        "1" if causal else "0", which, str(threads)],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def _mem(m):
    return "%d MiB" % (m["peak_bytes"] >> 20) if "peak_bytes" in m else "error"


def bench_mha(env, cfg, repeat, shapes=SHAPES, long_L=65536):
    """Every shape of SHAPES, then the memory of one causal call at long_L."""
    _p("")
    _p("MultiHeadAttention, float32 self-attention, need_weights=False, %d threads; "
       "medians of interleaved samples; memory: tracemalloc peak in a fresh process"
       % env.threads)
    _p("  %-26s %9s %9s %9s %11s %12s %22s %11s" % (
        "shape (B, L, d), heads", "class ms", "hand ms", "torch ms", "class/hand",
        "torch/class", "peak mem class / hand", "max rel err"))
    res = []
    for L, d, h, causal in shapes:
        cs, err = contenders(L, d, h, causal, env.torch)
        for c in cs:
            c.fn()
        t = time_interleaved(cs, {c.name: _estimate(c) for c in cs}, cfg, repeat)
        med = {k: v["median_s"] for k, v in t.items()}
        mc = peak_memory(env.root, L, d, h, causal, "class", env.threads)
        mh = peak_memory(env.root, L, d, h, causal, "by hand", env.threads)
        r = {"L": L, "d_model": d, "heads": h, "causal": causal, "results": t,
             "max_rel_err": err, "mem_class": mc, "mem_by_hand": mh,
             "class_vs_hand": med["class"] / med["by hand"]}
        tt = med.get("torch")
        r["torch_vs_class"] = tt / med["class"] if tt else None
        res.append(r)
        _p("  %-26s %9.1f %9.1f %9s %11.2f %12s %22s %11.1e" % (
            "(1, %d, %d), %d%s" % (L, d, h, " causal" if causal else ""),
            med["class"] * 1e3, med["by hand"] * 1e3,
            "%.1f" % (tt * 1e3) if tt else "-", r["class_vs_hand"],
            "%.2f" % r["torch_vs_class"] if tt else "-",
            "%s / %s" % (_mem(mc), _mem(mh)), err))
    out = {"shapes": res}
    if long_L:
        mc = peak_memory(env.root, long_L, 256, 4, True, "class", env.threads)
        mh = peak_memory(env.root, long_L, 256, 4, True, "by hand", env.threads)
        out["long"] = {"L": long_L, "mem_class": mc, "mem_by_hand": mh}
        _p("  (1, %d, 256), 4 causal: peak memory class %s, by hand %s (one L x L float32 "
           "array: %d GiB)%s" % (long_L, _mem(mc), _mem(mh), long_L * long_L * 4 >> 30,
                                 "; error: " + mc["error"] if "error" in mc else ""))
    return out
