"""Row functions on short rows, beside their NumPy twins, side by side.

The same 2**22 float32 elements cut into rows of n = 1 ... 64 elements:
with few elements a row, the per-row work (the row's last n % W elements,
its offsets, its reductions) is what a call costs. Each function and its
NumPy twin (attnpy.reference) take turns in rounds, in one process; the
figures are median milliseconds per call and twin / attnpy (above 1:
attnpy is faster).

    python benchmarks/bench_short_rows.py [--isa SET] [--rounds K]
                                          [--elems E] [--lengths 1,2,...]
"""
import argparse
import platform
import statistics
import time

import numpy as np

import attnpy
from attnpy import reference as ref


def cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def calls(x, out):
    """name -> (attnpy call, twin call)"""
    return {
        "softmax": (lambda: attnpy.softmax(x, out=out),
                    lambda: ref.softmax(x)),
        "gelu": (lambda: attnpy.gelu(x, out=out), lambda: ref.gelu(x)),
        "silu": (lambda: attnpy.silu(x, out=out), lambda: ref.silu(x)),
        "layer_norm": (lambda: attnpy.layer_norm(x, out=out),
                       lambda: ref.layer_norm(x)),
    }


def median_ms(f, rounds, times):
    for _ in range(rounds):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--isa", default="auto")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--elems", type=int, default=1 << 22)
    ap.add_argument("--lengths", default="1,2,4,8,15,16,17,64")
    a = ap.parse_args(argv)
    attnpy.set_isa(a.isa)
    print(f"attnpy {attnpy.__version__} from {attnpy.__file__}")
    print(f"CPU: {cpu_model()}; instruction set {attnpy.get_isa()}; "
          f"threads {attnpy.get_num_threads()}; numpy {np.__version__}")
    print(f"{a.elems} float32 elements in rows of n; median ms per call "
          f"({a.rounds} rounds, attnpy and twin in turn); twin/attnpy")
    rng = np.random.default_rng(0)
    names = None
    for n in (int(s) for s in a.lengths.split(",")):
        x = rng.standard_normal((a.elems // n, n)).astype(np.float32)
        out = np.empty_like(x)
        cs = calls(x, out)
        if names is None:
            names = list(cs)
            print("    n      rows | " + " | ".join(
                f"{k:>24s}" for k in names))
        cells = []
        for k in names:
            mine, twin = cs[k]
            mine(), twin()                       # warm
            tm, tt = [], []
            for _ in range(a.rounds):
                median_ms(mine, 1, tm)
                median_ms(twin, 1, tt)
            m, t = statistics.median(tm), statistics.median(tt)
            cells.append(f"{m * 1e3:7.2f} {t * 1e3:7.2f} {t / m:6.2f}x")
        print(f"{n:5d} {x.shape[0]:9d} | " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
