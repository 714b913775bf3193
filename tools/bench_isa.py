"""Every kernel path of this build side by side, against the tutorial's NumPy.

    python tools/bench_isa.py [--shape B,H,L,E] [--dtype float32] [--causal]
                              [--backward] [--repeat N] [--threads N]

Times ``attnpy.attention`` with each instruction set this CPU runs
(``attnpy.isas()``, set by ``attnpy.set_isa``) and the tutorial's
``scaled_dot_product_attention`` (attnpy.bench.tutorial.tutorial_sdpa), interleaved
(one call of each per round, so that load on the machine hits them alike),
and prints each one's median time, GFLOP/s (4 B H L S E flops; half for
causal) and its speed relative to the widest path and to the tutorial.
The default shape is the issue's float32 (1, 12, 1024, 64).
--backward times ``attnpy.attention_backward`` instead (the gradients of
Q, K, V from the forward's out and lse; 10 B H L S E flops, 2.5 times the
forward's: five block products); no tutorial row then (it has no backward).
"""
import argparse
import statistics
import time

import numpy as np

import attnpy
from attnpy.bench.tutorial import tutorial_causal_mask, tutorial_sdpa

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="1,12,1024,64",
                    help="B,H,L,E of Q, K and V (default 1,12,1024,64)")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--backward", action="store_true",
                    help="time attention_backward instead of attention")
    ap.add_argument("--repeat", type=int, default=15,
                    help="interleaved rounds (default 15)")
    ap.add_argument("--threads", type=int, default=None,
                    help="attnpy threads (default: attnpy's default)")
    a = ap.parse_args(argv)
    B, H, L, E = (int(x) for x in a.shape.split(","))
    rng = np.random.default_rng(0)
    Q, K, V = (rng.standard_normal((B, H, L, E)).astype(a.dtype)
               for _ in range(3))
    if a.threads:
        attnpy.set_num_threads(a.threads)
    mask = tutorial_causal_mask(L) if a.causal else None
    before = attnpy.get_isa()
    if a.backward:
        out, lse = attnpy.attention(Q, K, V, causal=a.causal, return_lse=True)
        dout = rng.standard_normal(out.shape).astype(a.dtype)

    def run_isa(name):
        def f():
            attnpy.set_isa(name)
            if a.backward:
                attnpy.attention_backward(dout, Q, K, V, out, lse,
                                          causal=a.causal)
            else:
                attnpy.attention(Q, K, V, causal=a.causal)
        return f

    calls = {}
    for name in reversed(attnpy.isas()):  # this CPU's sets, narrowest first
        calls[name] = run_isa(name)
    isas = list(calls)
    if not a.backward:
        calls["tutorial"] = lambda: tutorial_sdpa(Q, K, V, mask)
    times = {name: [] for name in calls}
    try:
        for f in calls.values():  # warm up (pool threads, page faults)
            f()
        for _ in range(a.repeat):
            for name, f in calls.items():
                t0 = time.perf_counter()
                f()
                times[name].append(time.perf_counter() - t0)
    finally:
        attnpy.set_isa(before)
    flops = ((10.0 if a.backward else 4.0) * B * H * L * L * E
             * (0.5 if a.causal else 1.0))
    med = {n: statistics.median(t) for n, t in times.items()}
    widest = isas[-1]
    print("%s%s %s%s, %d threads, median of %d interleaved rounds"
          % ("backward, " if a.backward else "", a.dtype, (B, H, L, E),
             " causal" if a.causal else "", attnpy.get_num_threads(),
             a.repeat))
    tut = "tutorial" in med
    print("%-10s %10s %9s %10s %12s" % ("path", "ms", "GFLOP/s",
                                         "/" + widest,
                                         "/tutorial" if tut else ""))
    for n, t in med.items():
        print("%-10s %10.2f %9.1f %10.2f %12s"
              % (n, t * 1e3, flops / t / 1e9, med[widest] / t,
                 "%.2f" % (med["tutorial"] / t) if tut else ""))


if __name__ == "__main__":
    main()
