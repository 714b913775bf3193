"""float16 / bfloat16 against float32 in the row functions, side by side.

Each function is called on the same values stored as float32, float16
and bfloat16 (out= preallocated where the function has it, so the three
calls do the same work but for the bytes read and written), in rounds
that take turns between the three, all in one process; the figure is the
median time per call and the ratio 16-bit / float32 (below 1: the 16-bit
call is faster).

    python benchmarks/bench_rows16.py [--rows R] [--n N] [--rounds K]
                                      [--threads T] [--only NAME,...]
"""
import argparse
import statistics
import time

import ml_dtypes
import numpy as np

import attnpy

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.dtype(np.float32), np.dtype(np.float16), BF16]


def cases(R, n, rng):
    """name -> function of a dtype returning a zero-argument call."""
    base = {k: rng.standard_normal((R, n)).astype(np.float32)
            for k in ("x", "dy", "u")}
    vec = rng.standard_normal(n).astype(np.float32)
    outs = [rng.standard_normal((R, n)).astype(np.float32) for _ in range(2)]
    lses = [rng.standard_normal(R).astype(np.float32) for _ in range(2)]
    W1 = (rng.standard_normal((n, 256)) * 0.05).astype(np.float32)
    W2 = (rng.standard_normal((256, n)) * 0.05).astype(np.float32)

    def make(dt):
        x, dy, u = (base[k].astype(dt) for k in ("x", "dy", "u"))
        w = vec.astype(dt)
        out = np.empty((R, n), dt)
        y = attnpy.softmax(x)
        o16 = [o.astype(dt) for o in outs]
        xr = x.reshape(R // 64, 64, n) if R % 64 == 0 else x[None]
        outr = out.reshape(xr.shape)
        w1, w2, b1 = W1.astype(dt), W2.astype(dt), vec[:256].astype(dt)
        xs = x[:64]
        return {
            "softmax": lambda: attnpy.softmax(x, out=out),
            "softmax_backward":
                lambda: attnpy.softmax_backward(dy, y, out=out),
            "rotary_embedding":
                lambda: attnpy.rotary_embedding(xr, offset=5, out=outr),
            "merge_attention": lambda: attnpy.merge_attention(o16, lses),
            "layer_norm": lambda: attnpy.layer_norm(x, weight=w, bias=w,
                                                    out=out),
            "layer_norm_backward":
                lambda: attnpy.layer_norm_backward(dy, x, weight=w, out=out),
            "gelu": lambda: attnpy.gelu(x, out=out),
            "gelu_backward": lambda: attnpy.gelu_backward(dy, x, out=out),
            "rms_norm": lambda: attnpy.rms_norm(x, weight=w, out=out),
            "rms_norm_backward":
                lambda: attnpy.rms_norm_backward(dy, x, weight=w),
            "silu": lambda: attnpy.silu(x, out=out),
            "swiglu": lambda: attnpy.swiglu(x, u, out=out),
            "swiglu_backward": lambda: attnpy.swiglu_backward(dy, x, u),
            "feed_forward(64 rows)":
                lambda: attnpy.feed_forward(xs, w1, b1, w2, w,
                                            activation="gelu"),
        }
    return {dt: make(dt) for dt in DTYPES}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    attnpy.set_num_threads(a.threads)
    rng = np.random.default_rng(0)
    calls = cases(a.rows, a.n, rng)
    names = [k for k in calls[DTYPES[0]]
             if not a.only or k in a.only.split(",")]
    print(f"attnpy {attnpy.__version__}, isa {attnpy._core.isa()}, threads "
          f"{a.threads}, x ({a.rows}, {a.n}), {a.rounds} rounds, medians")
    print(f"{'function':24s} {'float32 ms':>11s} {'float16 ms':>11s} "
          f"{'bfloat16 ms':>12s} {'f16/f32':>8s} {'bf16/f32':>9s}")
    for name in names:
        times = {dt: [] for dt in DTYPES}
        for dt in DTYPES:       # warm up (pages, thread pool)
            calls[dt][name]()
        for _ in range(a.rounds):
            for dt in DTYPES:   # turns: the three see the same machine
                t0 = time.perf_counter()
                calls[dt][name]()
                times[dt].append(time.perf_counter() - t0)
        med = [statistics.median(times[dt]) * 1e3 for dt in DTYPES]
        print(f"{name:24s} {med[0]:11.2f} {med[1]:11.2f} {med[2]:12.2f} "
              f"{med[1] / med[0]:8.2f} {med[2] / med[0]:9.2f}")


if __name__ == "__main__":
    main()
