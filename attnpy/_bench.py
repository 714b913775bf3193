"""``python -m attnpy bench``: attnpy vs the tutorial's NumPy code vs PyTorch.

One run prints, side by side, the median time and GFLOP/s of

* ``attnpy.attention`` (the fused C kernel),
* the tutorial's NumPy ``scaled_dot_product_attention`` (re-written below with
  the tutorial's formulas: matmul, ``/ sqrt(d_k)``, ``np.where(mask == 0,
  -1e9, s)`` with the float ``np.tril`` mask for causal, stable softmax,
  matmul),
* PyTorch's ``torch.nn.functional.scaled_dot_product_attention`` (only when
  torch can be imported; never a dependency of attnpy),

next to the machine's own ``np.matmul`` rate measured in the same run, plus a
tiny per-call case, the extra peak memory of a long causal call (in a fresh
subprocess), 1-vs-2-thread scaling, and a PASS/FAIL "targets" section.

Before anything is timed, attnpy's output is compared with the tutorial's
(the correctness guard): a fast but wrong kernel fails the run (exit code 1).

Timing: every contender is warmed up, then the contenders are run
interleaved (a, b, c, a, b, c, ...) so that machine noise hits all alike; the
median of the samples is reported with its inter-quartile range (IQR).
Before each sample the machine is left idle for a moment (--settle, 0.12 s):
OpenBLAS's and OpenMP's idle workers spin for up to ~0.1 s after a call, and
without the pause that spinning would be charged to whichever contender runs
next (measured here: attnpy at (1,12,1024,64) float32 drops from ~255 to
~185 GF/s when sampled right after an OpenBLAS matmul).

Run ``python -m attnpy bench --help`` for the options; benchmarks/README.md
explains the columns.
"""
import argparse
import contextlib
import gc
import json
import math
import os
import platform
import subprocess
import sys
import time

import numpy as np

__all__ = ["main"]

# ---------------------------------------------------------------------------
# The tutorial's code (002_: "Implementing scaled dot-product attention"),
# in our own words with the same formulas. The tutorial transposes K with
# K.transpose(0, 2, 1) for 3-D inputs and K.transpose(0, 1, 3, 2) for the
# 4-D heads of its MultiHeadAttention; swapaxes(-1, -2) is both.
# ---------------------------------------------------------------------------


def tutorial_softmax(x, axis=-1):
    """Numerically stable softmax, as the tutorial writes it."""
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def tutorial_sdpa(Q, K, V, mask=None):
    """The tutorial's scaled_dot_product_attention: returns (output, weights)."""
    d_k = Q.shape[-1]
    scores = np.matmul(Q, np.swapaxes(K, -1, -2)) / np.sqrt(d_k)
    if mask is not None:
        scores = np.where(mask == 0, -1e9, scores)
    weights = tutorial_softmax(scores, axis=-1)
    return np.matmul(weights, V), weights


def tutorial_causal_mask(seq_len):
    """The tutorial's create_causal_mask: a float64 lower-triangular 0/1 matrix."""
    return np.tril(np.ones((seq_len, seq_len)))


def _standin_attention(Q, K, V, *, causal=False):
    """Development stand-in used only while attnpy.attention does not exist."""
    mask = tutorial_causal_mask(Q.shape[-2]) if causal else None
    return tutorial_sdpa(Q, K, V, mask)[0]


# Tests may point this at another function (e.g. a deliberately wrong one, to
# check that the correctness guard catches it). None = use attnpy.attention.
_attention_override = None

# ---------------------------------------------------------------------------
# Modes and constants
# ---------------------------------------------------------------------------

B_, H_, E_ = 1, 12, 64
ALL_LENGTHS = (128, 256, 512, 1024, 2048, 4096, 8192)
TUTORIAL_MAX_L = 4096          # beyond this the tutorial is not run (memory/time)
MODES = {
    # lengths, seconds per case, min/max interleaved samples, min seconds per sample
    "quick": dict(lengths=(256, 1024), budget=0.6, min_samples=3, max_samples=9,
                  min_sample_s=0.005, parts=("tiny",)),
    "default": dict(lengths=ALL_LENGTHS[:-1], budget=2.0, min_samples=5,
                    max_samples=25, min_sample_s=0.02,
                    parts=("tiny", "memory", "threads")),
    "full": dict(lengths=ALL_LENGTHS, budget=5.0, min_samples=7, max_samples=41,
                 min_sample_s=0.05, parts=("tiny", "memory", "threads")),
}
TINY_SHAPE = (1, 3, 4)         # (B, L, E) = the tutorial's worked example size
MEMORY_L = 65536
MEMORY_LIMIT_MIB = 64
THREADS_L = 2048
MATMUL_N = 2048

# correctness guard: max|a - ref| <= ATOL + RTOL * max|ref|
GUARD_TOL = {"float32": (2e-5, 1e-4), "float64": (1e-11, 1e-9)}
GUARD_ROWS = 64                # rows checked when the full tutorial is not run
# the shapes of the "% of matmul" targets: there the matmul yardstick is also
# sampled interleaved with the contenders, so that load changes hit it alike
MM_TARGET_CASES = {("float32", False, 1024), ("float64", False, 1024)}


# ---------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------


class Contender:
    """One thing to time: fn() does one call; setup() (untimed) runs before
    every sample."""

    def __init__(self, name, fn, setup=None):
        self.name, self.fn, self.setup = name, fn, setup


def _percentiles(samples):
    q1, med, q3 = np.percentile(np.asarray(samples, dtype=float), [25, 50, 75])
    return float(q1), float(med), float(q3)


def _stats(samples, number):
    q1, med, q3 = _percentiles(samples)
    return {"median_s": med, "q1_s": q1, "q3_s": q3,
            "iqr_rel": (q3 - q1) / med if med > 0 else 0.0,
            "samples": len(samples), "calls_per_sample": number}


def _estimate(c):
    """Seconds per call of an already warmed-up contender (one extra call,
    or a short loop when calls are fast)."""
    if c.setup:
        c.setup()
    n, total = 0, 0.0
    while total < 0.01 and n < 10000:
        t0 = time.perf_counter()
        c.fn()
        total += time.perf_counter() - t0
        n += 1
    return total / n


def time_interleaved(contenders, est, cfg, repeat=None):
    """Median seconds per call of each contender, sampled interleaved.

    est: {name: estimated seconds per call}. A sample is `number` calls
    (enough to last cfg.min_sample_s); samples per contender: --repeat, or as
    many as fit in cfg.budget, within [min_samples, max_samples].
    """
    number = {c.name: max(1, min(100000, math.ceil(cfg["min_sample_s"] / max(est[c.name], 1e-9))))
              for c in contenders}
    round_s = sum(number[c.name] * est[c.name] for c in contenders)
    if repeat:
        nsamples = max(1, int(repeat))
    else:
        nsamples = int(cfg["budget"] / max(round_s, 1e-9))
        nsamples = max(cfg["min_samples"], min(cfg["max_samples"], nsamples))
    samples = {c.name: [] for c in contenders}
    settle = cfg.get("settle_s", 0.0) if len(contenders) > 1 else 0.0
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(nsamples):
            for c in contenders:
                if c.setup:
                    c.setup()
                k = number[c.name]
                fn = c.fn
                if settle:
                    time.sleep(settle)  # let the last contender's pool idle
                t0 = time.perf_counter()
                for _ in range(k):
                    fn()
                samples[c.name].append((time.perf_counter() - t0) / k)
    finally:
        if gc_was:
            gc.enable()
    return {c.name: _stats(samples[c.name], number[c.name]) for c in contenders}


# ---------------------------------------------------------------------------
# Environment
# ---------------------------------------------------------------------------


class Env:
    """What is being compared: attnpy (or the stand-in), torch, thread counts."""

    def __init__(self, args):
        import attnpy  # a missing build raises ImportError: reported by main()
        self.attnpy = attnpy
        self.root = os.path.dirname(os.path.abspath(list(attnpy.__path__)[0]))
        self.attention = _attention_override or getattr(attnpy, "attention", None)
        self.standin = self.attention is None
        if self.standin:
            self.attention = _standin_attention
        self.sdpa = getattr(attnpy, "scaled_dot_product_attention", None)
        self.has_threads = hasattr(attnpy, "set_num_threads")
        ncpu = os.cpu_count() or 1
        self.threads = args.threads or (attnpy.get_num_threads()
                                        if hasattr(attnpy, "get_num_threads") else ncpu)
        if self.has_threads:
            attnpy.set_num_threads(self.threads)
        self.isa = None
        core = getattr(attnpy, "_core", None)
        if core is not None and hasattr(core, "isa"):
            self.isa = core.isa()

        self.torch = self.F = None
        self.torch_error = None
        if "torch" not in args.skip:
            try:
                import torch
                import torch.nn.functional as F
                self.torch, self.F = torch, F
                torch.set_num_threads(self.threads)
            except Exception as exc:  # ImportError, or a broken install
                self.torch_error = "%s: %s" % (type(exc).__name__, exc)
        else:
            self.torch_error = "skipped (--skip torch)"

        # NumPy's BLAS (the tutorial's matmuls, the matmul reference): pinned
        # to the same thread count when threadpoolctl is there.
        self.blas_threads = "default (install threadpoolctl to pin it)"
        self._stack = contextlib.ExitStack()
        try:
            from threadpoolctl import threadpool_limits
            self._stack.enter_context(threadpool_limits(limits=self.threads, user_api="blas"))
            self.blas_threads = str(self.threads)
        except ImportError:
            env = os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS")
            if env:
                self.blas_threads = env + " (from the environment)"
        if self.torch is not None:
            self._stack.enter_context(self.torch.inference_mode())

    def close(self):
        self._stack.close()

    def describe(self):
        try:
            blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
            blas = "%s %s" % (blas.get("name", "?"), blas.get("version", ""))
        except Exception:
            blas = "?"
        cpu = platform.processor() or platform.machine()
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if line.startswith("model name"):
                        cpu = line.split(":", 1)[1].strip()
                        break
        except OSError:
            pass
        return {
            "attnpy": getattr(self.attnpy, "__version__", "?"),
            "attnpy_path": self.root,
            "attention": "STAND-IN (tutorial NumPy code)" if self.standin else
                         ("override" if _attention_override else "attnpy.attention"),
            "isa": self.isa, "threads": self.threads,
            "numpy": np.__version__, "blas": blas.strip(), "blas_threads": self.blas_threads,
            "torch": self.torch.__version__ if self.torch is not None else None,
            "torch_note": self.torch_error,
            "python": platform.python_version(), "cpu": cpu,
            "cpu_count": os.cpu_count(),
            "loadavg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        }


def _mem_available():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _fmt_bytes(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return "%.1f %s" % (n / size, unit)
    return "%d B" % n


# ---------------------------------------------------------------------------
# Correctness guard
# ---------------------------------------------------------------------------


def _guard_rows(L):
    return np.unique(np.linspace(0, L - 1, min(L, GUARD_ROWS)).round().astype(np.intp))


def _tutorial_rows(Q, K, V, causal, rows):
    """Tutorial output for some query rows only (rows are independent)."""
    S = K.shape[-2]
    # rows of the tutorial's np.tril(np.ones((L, S))), without building it all
    mask = (np.arange(S)[None, :] <= np.asarray(rows)[:, None]).astype(np.float64) \
        if causal else None
    return tutorial_sdpa(Q[..., rows, :], K, V, mask)[0]


def _compare(got, ref, dtype_name):
    atol, rtol = GUARD_TOL[dtype_name]
    got = np.asarray(got)
    if got.shape != ref.shape:
        return {"ok": False, "max_abs_err": None,
                "why": "shape %s, expected %s" % (got.shape, ref.shape)}
    err = float(np.max(np.abs(got.astype(np.float64) - ref))) if ref.size else 0.0
    bound = atol + rtol * (float(np.max(np.abs(ref))) if ref.size else 0.0)
    ok = bool(np.isfinite(err) and err <= bound)
    return {"ok": ok, "max_abs_err": err, "bound": bound,
            "why": "" if ok else "max |attnpy - tutorial| = %.3g > %.3g" % (err, bound)}


# ---------------------------------------------------------------------------
# Parts of the run
# ---------------------------------------------------------------------------


def bench_matmul(cfg, repeat, n=MATMUL_N):
    """np.matmul of two n x n matrices, float32 and float64."""
    rng = np.random.default_rng(1)
    out = {}
    cons = []
    for dt in (np.float32, np.float64):
        a = rng.standard_normal((n, n), dtype=dt)
        b = rng.standard_normal((n, n), dtype=dt)
        cons.append(Contender(np.dtype(dt).name, (lambda a=a, b=b: np.matmul(a, b))))
    for c in cons:
        c.fn()
    est = {c.name: _estimate(c) for c in cons}
    res = time_interleaved(cons, est, cfg, repeat)
    flops = 2.0 * n ** 3
    for name, st in res.items():
        st["gflops"] = flops / st["median_s"] / 1e9
        out[name] = st
    return out


def _tutorial_skip_reason(L, dtype, max_l=TUTORIAL_MAX_L):
    # peak of the tutorial call: ~3 live (H, L, L) arrays (scores, shifted/exp,
    # result) of the dtype its `/ np.sqrt(d_k)` promotes to, + the float64
    # tril mask + a bool array
    itemsize = np.result_type(dtype, np.sqrt(np.float64(E_))).itemsize
    need = 3 * B_ * H_ * L * L * itemsize + L * L * 9
    avail = _mem_available()
    if L > max_l:
        return "L > %d (needs ~%s of L x L temporaries)" % (max_l, _fmt_bytes(need)), need
    if avail is not None and need > avail // 2:
        return "needs ~%s, only %s available" % (_fmt_bytes(need), _fmt_bytes(avail)), need
    return None, need


def _matmul_contender(dtype, n, seed=1):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n), dtype=dtype)
    b = rng.standard_normal((n, n), dtype=dtype)
    return Contender("matmul", lambda: np.matmul(a, b))


def bench_case(env, L, dtype, causal, cfg, repeat, seed, tutorial_max_l=TUTORIAL_MAX_L,
               with_matmul=0):
    """One shape: guard, then time attnpy / tutorial / torch interleaved (and
    an n x n np.matmul too when with_matmul = n > 0)."""
    dname = np.dtype(dtype).name
    rng = np.random.default_rng([seed, L, int(causal), np.dtype(dtype).itemsize])
    shape = (B_, H_, L, E_)
    Q, K, V = (rng.standard_normal(shape, dtype=dtype) for _ in range(3))
    flops = 4.0 * B_ * H_ * L * L * E_ * (0.5 if causal else 1.0)
    case = {"dtype": dname, "causal": bool(causal), "B": B_, "H": H_, "L": L, "S": L,
            "E": E_, "flops": flops, "results": {}, "skipped": {}}

    cons = [Contender("attnpy", lambda: env.attention(Q, K, V, causal=causal))]
    skip, need = _tutorial_skip_reason(L, dtype, tutorial_max_l)
    case["tutorial_bytes_estimate"] = need
    mask = None
    if skip:
        case["skipped"]["tutorial"] = skip
    else:
        mask = tutorial_causal_mask(L) if causal else None
        cons.append(Contender("tutorial", lambda: tutorial_sdpa(Q, K, V, mask)))
    if env.torch is not None:
        tq, tk, tv = (env.torch.from_numpy(a) for a in (Q, K, V))
        F = env.F
        cons.append(Contender("torch", lambda: F.scaled_dot_product_attention(
            tq, tk, tv, is_causal=bool(causal))))
    else:
        case["skipped"]["torch"] = env.torch_error or "not importable"

    # warm-up + correctness guard (first call of each contender)
    got = np.asarray(cons[0].fn())
    if "tutorial" not in case["skipped"]:
        ref = tutorial_sdpa(Q, K, V, mask)[0]
        against = "tutorial, all rows"
    else:
        rows = _guard_rows(L)
        ref = _tutorial_rows(Q, K, V, causal, rows)
        got = got[..., rows, :]
        against = "tutorial, %d sampled rows" % len(rows)
    guard = _compare(got, ref, dname)
    guard["against"] = against
    case["guard"] = guard
    case["tutorial_out_dtype"] = ref.dtype.name
    del got
    if env.torch is not None:
        tout = cons[-1].fn().numpy()
        if ref.shape[-2] != L:
            tout = tout[..., _guard_rows(L), :]
        case["torch_guard"] = _compare(tout, ref, dname)
        del tout
    del ref
    if not guard["ok"]:
        return case                      # a wrong kernel is not timed
    # every contender has now run once (the guard's calls were the warm-up)
    if with_matmul:
        cons.append(_matmul_contender(dtype, with_matmul))
        cons[-1].fn()
    est = {c.name: _estimate(c) for c in cons}
    res = time_interleaved(cons, est, cfg, repeat)
    if with_matmul:
        st = res.pop("matmul")
        st["gflops"] = 2.0 * with_matmul ** 3 / st["median_s"] / 1e9
        case["matmul_interleaved"] = st
    for name, st in res.items():
        st["gflops"] = flops / st["median_s"] / 1e9
        case["results"][name] = st
    a = res["attnpy"]["median_s"]
    case["speedup_vs_tutorial"] = res["tutorial"]["median_s"] / a if "tutorial" in res else None
    case["speedup_vs_torch"] = res["torch"]["median_s"] / a if "torch" in res else None
    return case


def bench_tiny(env, cfg, repeat, seed):
    """The tutorial's worked-example size: per-call time in microseconds."""
    B, L, E = TINY_SHAPE
    rng = np.random.default_rng([seed, 7])
    Q, K, V = (rng.standard_normal((B, L, E)) for _ in range(3))
    cons = [Contender("attnpy.attention", lambda: env.attention(Q, K, V))]
    if env.sdpa is not None and not env.standin:
        cons.append(Contender("attnpy.scaled_dot_product_attention",
                              lambda: env.sdpa(Q, K, V)))
    cons.append(Contender("tutorial", lambda: tutorial_sdpa(Q, K, V)))
    if env.torch is not None:
        tq, tk, tv = (env.torch.from_numpy(a) for a in (Q, K, V))
        F = env.F
        cons.append(Contender("torch", lambda: F.scaled_dot_product_attention(tq, tk, tv)))
    ref = tutorial_sdpa(Q, K, V)[0]
    out = {"shape": list(TINY_SHAPE), "dtype": "float64", "results": {}}
    guard = _compare(env.attention(Q, K, V), ref, "float64")
    guard["against"] = "tutorial, all rows"
    if env.sdpa is not None and not env.standin:
        g2 = _compare(env.sdpa(Q, K, V)[0], ref, "float64")
        if not g2["ok"]:
            guard = dict(g2, against="tutorial (attnpy.scaled_dot_product_attention)")
    out["guard"] = guard
    if not guard["ok"]:
        return out
    # warm-up: a short loop each
    for c in cons:
        t_end = time.perf_counter() + 0.05
        while time.perf_counter() < t_end:
            c.fn()
    est = {c.name: _estimate(c) for c in cons}
    res = time_interleaved(cons, est, dict(cfg, min_sample_s=max(cfg["min_sample_s"], 0.01)),
                           repeat)
    out["results"] = res
    a = res["attnpy.attention"]["median_s"]
    out["speedup_vs_tutorial"] = res["tutorial"]["median_s"] / a
    out["speedup_vs_torch"] = res["torch"]["median_s"] / a if "torch" in res else None
    return out


_MEMORY_CHILD = r"""
import json, os, resource, sys
root, L, E, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
sys.path.insert(0, root)
import numpy as np
import attnpy
from attnpy import _bench

def status():
    vals = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM"):
                    vals[k] = int(v.split()[0]) * 1024
    except OSError:
        pass
    return vals

def maxrss():
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r if sys.platform == "darwin" else r * 1024

if hasattr(attnpy, "set_num_threads"):
    attnpy.set_num_threads(threads)
rng = np.random.default_rng(3)
# generated straight in float32: no float64 temporaries raise the peak
Q, K, V = (rng.standard_normal((1, 1, L, E), dtype=np.float32) for _ in range(3))
small = rng.standard_normal((1, 1, 64, E), dtype=np.float32)
attnpy.attention(small, small, small, causal=True)     # load + start threads
method = "VmHWM reset via /proc/self/clear_refs"
try:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = status()
    base = before["VmRSS"]
    if before["VmHWM"] > base + (1 << 20):
        raise OSError("peak not reset")
except (OSError, KeyError):
    method = "ru_maxrss before/after"
    base = maxrss()
t0 = __import__("time").perf_counter()
out = attnpy.attention(Q, K, V, causal=True)
dt = __import__("time").perf_counter() - t0
peak = status().get("VmHWM") if method.startswith("VmHWM") else maxrss()
rows = _bench._guard_rows(L)
ref = _bench._tutorial_rows(Q, K, V, True, rows)
guard = _bench._compare(out[..., rows, :], ref, "float32")
guard["against"] = "tutorial, %d sampled rows" % len(rows)
print(json.dumps({"extra_bytes": int(peak - base), "base_rss": int(base),
                  "peak": int(peak), "method": method, "seconds": dt,
                  "out_bytes": int(out.nbytes), "guard": guard}))
"""


def bench_memory(env, L, timeout):
    """Extra peak RSS of one (1,1,L,64) float32 causal call, in a fresh process."""
    res = {"shape": [1, 1, L, E_], "dtype": "float32", "causal": True,
           "tutorial_score_bytes": L * L * 4, "limit_bytes": MEMORY_LIMIT_MIB << 20}
    if getattr(env.attnpy, "attention", None) is None:
        res["skipped"] = "attnpy.attention not available (stand-in would need the full L x L)"
        return res
    envvars = dict(os.environ)
    envvars["PYTHONPATH"] = os.pathsep.join(
        [env.root] + ([envvars["PYTHONPATH"]] if envvars.get("PYTHONPATH") else []))
    cmd = [sys.executable, "-c", _MEMORY_CHILD, env.root, str(L), str(E_), str(env.threads)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=envvars)
    except subprocess.TimeoutExpired:
        res["skipped"] = "timed out after %d s" % timeout
        return res
    if p.returncode != 0:
        res["error"] = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
        return res
    res.update(json.loads(p.stdout.strip().splitlines()[-1]))
    return res


def bench_threads(env, cfg, repeat, seed, L=THREADS_L):
    """attnpy with 1 vs 2 threads at (1,12,L,64) float32, non-causal."""
    res = {"shape": [B_, H_, L, E_], "dtype": "float32", "causal": False}
    if not env.has_threads or env.standin:
        res["skipped"] = "attnpy.set_num_threads / attnpy.attention not available"
        return res
    if (os.cpu_count() or 1) < 2:
        res["skipped"] = "only one CPU"
        return res
    rng = np.random.default_rng([seed, 11])
    Q, K, V = (rng.standard_normal((B_, H_, L, E_), dtype=np.float32) for _ in range(3))
    at = env.attnpy
    cons = [Contender("1 thread", lambda: env.attention(Q, K, V), lambda: at.set_num_threads(1)),
            Contender("2 threads", lambda: env.attention(Q, K, V), lambda: at.set_num_threads(2))]
    try:
        outs = []
        for c in cons:
            c.setup()
            outs.append(np.asarray(c.fn()))
        rows = _guard_rows(L)
        guard = _compare(outs[1][..., rows, :], _tutorial_rows(Q, K, V, False, rows), "float32")
        guard["against"] = "tutorial, %d sampled rows" % len(rows)
        res["guard"] = guard
        res["same_result_1_vs_2"] = bool(np.array_equal(outs[0], outs[1]))
        del outs
        if not guard["ok"]:
            return res
        est = {c.name: _estimate(c) for c in cons}
        r = time_interleaved(cons, est, cfg, repeat)
    finally:
        at.set_num_threads(env.threads)
    flops = 4.0 * B_ * H_ * L * L * E_
    for st in r.values():
        st["gflops"] = flops / st["median_s"] / 1e9
    res["results"] = r
    res["speedup"] = r["1 thread"]["median_s"] / r["2 threads"]["median_s"]
    return res


# ---------------------------------------------------------------------------
# Targets (project issue 3)
# ---------------------------------------------------------------------------


def _find(cases, dtype, causal, L):
    for c in cases:
        if c["dtype"] == dtype and c["causal"] == causal and c["L"] == L:
            return c
    return None


def _mm_rate(c, mm):
    """The matmul GF/s a case is compared with: sampled with it if it was,
    else the run's own matmul figure."""
    if "matmul_interleaved" in c:
        return c["matmul_interleaved"]["gflops"]
    return mm.get(c["dtype"], {}).get("gflops")


def evaluate_targets(R):
    cases = R["cases"]
    mm = R.get("matmul", {})
    T = []

    def add(name, status, measured, required):
        T.append({"target": name, "status": status, "measured": measured, "required": required})

    def case_or_status(dtype, causal, L):
        c = _find(cases, dtype, causal, L)
        if c is None:
            return None, "SKIP", "not measured in this run"
        if not c["guard"]["ok"]:
            return None, "FAIL", "wrong result: " + c["guard"]["why"]
        return c, None, None

    def vs_tutorial_and_matmul(name, dtype, causal, L, min_x, min_frac):
        c, st, why = case_or_status(dtype, causal, L)
        req = ">= %gx tutorial" % min_x + (" and >= %d%% of %s matmul" % (min_frac * 100, dtype)
                                          if min_frac else "")
        if c is None:
            return add(name, st, why, req)
        x = c.get("speedup_vs_tutorial")
        if x is None:
            return add(name, "SKIP", "tutorial not run: " + c["skipped"].get("tutorial", "?"), req)
        ok = x >= min_x
        meas = "%.2fx tutorial" % x
        if min_frac:
            g = c["results"]["attnpy"]["gflops"]
            ref = _mm_rate(c, mm)
            n = R["meta"].get("matmul_size", MATMUL_N)
            if ref and n != MATMUL_N:
                return add(name, "SKIP", "matmul yardstick %dx%d, not %dx%d"
                           % (n, n, MATMUL_N, MATMUL_N), req)
            if ref:
                frac = g / ref
                ok = ok and frac >= min_frac
                meas += ", %.0f%% of matmul (%.1f / %.1f GF/s)" % (frac * 100, g, ref)
            else:
                ok = False
                meas += ", matmul rate not measured"
        add(name, "PASS" if ok else "FAIL", meas, req)

    vs_tutorial_and_matmul("float32 (1,12,1024,64) non-causal", "float32", False, 1024, 4, 0.60)
    vs_tutorial_and_matmul("float32 (1,12,2048,64) causal (tutorial with tril mask)",
                           "float32", True, 2048, 7, None)
    vs_tutorial_and_matmul("float64 (1,12,1024,64) non-causal", "float64", False, 1024, 2.5, 0.55)
    for L in (1024, 4096):
        for causal in (False, True):
            name = "ahead of torch SDPA: float32 (1,12,%d,64) %s" % (
                L, "causal" if causal else "non-causal")
            req = "attnpy faster than torch (> 1.00x)"
            c, st, why = case_or_status("float32", causal, L)
            if c is None:
                add(name, st, why, req)
            elif c.get("speedup_vs_torch") is None:
                add(name, "N/A", "torch: " + c["skipped"].get("torch", "not run"), req)
            else:
                x = c["speedup_vs_torch"]
                add(name, "PASS" if x > 1.0 else "FAIL", "%.2fx torch" % x, req)

    tiny = R.get("tiny")
    name, req = "tiny (1,3,4) per call", ">= 5x faster than the tutorial per call"
    if tiny is None:
        add(name, "SKIP", "not measured in this run", req)
    elif not tiny["guard"]["ok"]:
        add(name, "FAIL", "wrong result: " + tiny["guard"]["why"], req)
    else:
        a = tiny["results"]["attnpy.attention"]["median_s"] * 1e6
        t = tiny["results"]["tutorial"]["median_s"] * 1e6
        x = tiny["speedup_vs_tutorial"]
        add(name, "PASS" if x >= 5 else "FAIL", "%.2fx (%.2f us vs %.2f us)" % (x, a, t), req)

    mem = R.get("memory")
    name = "(1,1,65536,64) float32 causal extra peak memory"
    req = "< %d MiB" % MEMORY_LIMIT_MIB
    if mem is None:
        add(name, "SKIP", "not measured in this run", req)
    else:
        if mem["shape"][2] != MEMORY_L:
            name = "(1,1,%d,64) float32 causal extra peak memory (target is at L=%d)" % (
                mem["shape"][2], MEMORY_L)
        if "skipped" in mem:
            add(name, "SKIP", mem["skipped"], req)
        elif "error" in mem:
            add(name, "FAIL", "error: " + mem["error"], req)
        elif not mem["guard"]["ok"]:
            add(name, "FAIL", "wrong result: " + mem["guard"]["why"], req)
        else:
            mib = mem["extra_bytes"] / 2 ** 20
            st = "PASS" if mib < MEMORY_LIMIT_MIB else "FAIL"
            if mem["shape"][2] != MEMORY_L:
                st = "SKIP"
            add(name, st, "%.1f MiB (tutorial: %s per score matrix)" % (
                mib, _fmt_bytes(mem["tutorial_score_bytes"])), req)

    th = R.get("threads")
    name, req = "2 threads vs 1 at (1,12,2048,64) float32", ">= 1.80x"
    if th is None:
        add(name, "SKIP", "not measured in this run", req)
    elif th["shape"][2] != THREADS_L:
        add(name, "SKIP", "measured at L=%d, not %d" % (th["shape"][2], THREADS_L), req)
    elif "skipped" in th:
        add(name, "N/A", th["skipped"], req)
    elif not th["guard"]["ok"]:
        add(name, "FAIL", "wrong result: " + th["guard"]["why"], req)
    else:
        x = th["speedup"]
        add(name, "PASS" if x >= 1.8 else "FAIL", "%.2fx" % x, req)
    return T


# ---------------------------------------------------------------------------
# Printing
# ---------------------------------------------------------------------------


def _p(*a):
    print(*a)
    sys.stdout.flush()


def _cell(st):
    """ms, GF/s, IQR% of one contender (17 + 8 + 5 chars)."""
    return "%9.3f %8.1f %4.0f%%" % (st["median_s"] * 1e3, st["gflops"], st["iqr_rel"] * 100)


_HDR1 = ("%-8s %-6s %5s | %-24s | %-24s | %-24s | %8s %7s %6s  %s"
         % ("", "", "", "attnpy", "tutorial (NumPy)", "torch SDPA", "vs tut.", "vs torch",
            "%mm", "check"))
_HDR2 = ("%-8s %-6s %5s | %9s %8s %5s | %9s %8s %5s | %9s %8s %5s | %8s %7s %6s  %s"
         % ("dtype", "mask", "L", "ms", "GF/s", "IQR", "ms", "GF/s", "IQR", "ms", "GF/s", "IQR",
            "x", "x", "", ""))


def _label(i):
    return chr(ord("a") + i) if i < 26 else str(i)


def _case_line(c, mm, notes):
    def cell(name):
        if name in c["results"]:
            s = _cell(c["results"][name])
            if name == "torch" and not c.get("torch_guard", {}).get("ok", True):
                s = s[:-1] + "!"
            return s
        why = c["skipped"].get(name)
        if why is None:
            return "%24s" % "--"
        if why not in notes:
            notes.append(why)
        return "%24s" % ("skipped (%s)" % _label(notes.index(why)))
    head = "%-8s %-6s %5d" % (c["dtype"], "causal" if c["causal"] else "none", c["L"])
    if not c["guard"]["ok"]:
        return head + " | WRONG RESULT, not timed: " + c["guard"]["why"]
    x_t = "%7.2fx" % c["speedup_vs_tutorial"] if c.get("speedup_vs_tutorial") else "%8s" % "--"
    x_p = "%6.2fx" % c["speedup_vs_torch"] if c.get("speedup_vs_torch") else "%7s" % "--"
    ref = _mm_rate(c, mm)
    pct = "%5.0f%%" % (100 * c["results"]["attnpy"]["gflops"] / ref) if ref else "%6s" % "--"
    if "matmul_interleaved" in c:
        pct = pct[1:] + "*"
    return "%s | %s | %s | %s | %s %s %s  ok" % (head, cell("attnpy"), cell("tutorial"),
                                                  cell("torch"), x_t, x_p, pct)


def _print_header(R):
    m = R["meta"]
    _p("attnpy bench -- mode %s, %s" % (m["mode"], time.strftime("%Y-%m-%d %H:%M:%S")))
    _p("  attention: %s  (attnpy %s from %s, isa %s, %d thread%s)"
       % (m["attention"], m["attnpy"], m["attnpy_path"], m["isa"] or "?", m["threads"],
          "" if m["threads"] == 1 else "s"))
    _p("  numpy %s, BLAS %s, BLAS threads %s" % (m["numpy"], m["blas"], m["blas_threads"]))
    _p("  torch %s" % (("%s (%d threads)" % (m["torch"], m["threads"])) if m["torch"]
                       else "not compared: " + (m["torch_note"] or "not importable")))
    _p("  python %s, %s, %s CPUs, load average %s"
       % (m["python"], m["cpu"], m["cpu_count"],
          " ".join("%.2f" % x for x in m["loadavg"]) if m["loadavg"] else "?"))
    if m["loadavg"] and m["loadavg"][0] > 0.5:
        _p("  WARNING: the machine is busy (load %.2f): expect noisy figures" % m["loadavg"][0])
    if m["attention"].startswith("STAND-IN"):
        _p("  WARNING: attnpy.attention is not available; timing a NumPy STAND-IN in its place."
           " Build attnpy first: python setup.py build_ext --inplace")


def _print_targets(T):
    _p("")
    _p("targets (project issue 3)")
    w = max(len(t["target"]) for t in T)
    for t in T:
        _p("  %-4s  %-*s  %s   [%s]" % (t["status"], w, t["target"], t["measured"], t["required"]))
    counts = {}
    for t in T:
        counts[t["status"]] = counts.get(t["status"], 0) + 1
    _p("  " + ", ".join("%d %s" % (n, s) for s, n in sorted(counts.items())))


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------


def _parse(argv):
    ap = argparse.ArgumentParser(
        prog="python -m attnpy bench",
        description="Benchmark attnpy.attention against the tutorial's NumPy code and "
                    "PyTorch's scaled_dot_product_attention (when torch is installed).")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true",
                   help="small subset: L in 256, 1024; tiny case; no memory/thread parts")
    g.add_argument("--full", action="store_true",
                   help="every L up to 8192 (attnpy and torch only beyond %d), more samples"
                        % TUTORIAL_MAX_L)
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    ap.add_argument("--threads", type=int, metavar="N",
                    help="threads for attnpy, torch and (with threadpoolctl) NumPy's BLAS "
                         "(default: attnpy.get_num_threads())")
    ap.add_argument("--repeat", type=int, metavar="N",
                    help="interleaved samples per contender (default: as many as fit the "
                         "mode's time budget)")
    ap.add_argument("--lengths", metavar="L,L,...",
                    help="override the sequence lengths of the main table")
    ap.add_argument("--dtypes", default="float32,float64", metavar="D,D",
                    help="dtypes of the main table (default: float32,float64)")
    ap.add_argument("--skip", default="", metavar="PART,...",
                    help="leave out parts: table (the main table), tiny, memory, threads, "
                         "matmul, torch")
    ap.add_argument("--memory-length", type=int, default=MEMORY_L, metavar="L",
                    help="L of the peak-memory run (default %d, the target's)" % MEMORY_L)
    ap.add_argument("--matmul-size", type=int, default=MATMUL_N, metavar="N",
                    help="size of the np.matmul yardstick (default %d)" % MATMUL_N)
    ap.add_argument("--threads-length", type=int, default=THREADS_L, metavar="L",
                    help="L of the 1-vs-2-thread run (default %d, the target's)" % THREADS_L)
    ap.add_argument("--tutorial-max-length", type=int, default=TUTORIAL_MAX_L, metavar="L",
                    help="run the tutorial code only up to this L (default %d; it needs "
                         "3 x H*L*L*itemsize bytes)" % TUTORIAL_MAX_L)
    ap.add_argument("--seed", type=int, default=0, help="random inputs' seed (default 0)")
    ap.add_argument("--settle", type=float, default=0.12, metavar="S",
                    help="idle seconds before each interleaved sample, so that "
                         "the previous contender's spinning thread pool does "
                         "not slow the next one (default 0.12; 0: none)")
    ap.add_argument("--strict", action="store_true",
                    help="exit with status 2 when a target FAILs")
    args = ap.parse_args(argv)
    args.skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    bad = args.skip - {"table", "tiny", "memory", "threads", "matmul", "torch"}
    if bad:
        ap.error("--skip: unknown part(s) %s" % ", ".join(sorted(bad)))
    if args.threads is not None and args.threads < 1:
        ap.error("--threads must be >= 1")
    if args.matmul_size < 1:
        ap.error("--matmul-size must be >= 1")
    if args.repeat is not None and args.repeat < 1:
        ap.error("--repeat must be >= 1")
    args.mode = "quick" if args.quick else "full" if args.full else "default"
    cfg = dict(MODES[args.mode])
    if not args.settle >= 0:
        ap.error("--settle must be >= 0")
    cfg["settle_s"] = args.settle
    if args.lengths:
        try:
            cfg["lengths"] = tuple(int(x) for x in args.lengths.split(",") if x.strip())
        except ValueError:
            ap.error("--lengths: comma-separated integers, e.g. 128,1024")
        if not cfg["lengths"] or min(cfg["lengths"]) < 1:
            ap.error("--lengths: positive integers")
    args.dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    if not args.dtypes or set(args.dtypes) - {"float32", "float64"}:
        ap.error("--dtypes: float32 and/or float64")
    return args, cfg


def main(argv=None):
    """Run the benchmark; returns the exit code (0 ok, 1 a wrong result, 2 usage
    error or --strict with a failed target)."""
    try:
        args, cfg = _parse(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:          # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else 2
    try:
        env = Env(args)
    except ImportError as exc:
        print("attnpy bench: cannot import attnpy (%s). Build it first: "
              "python setup.py build_ext --inplace" % exc, file=sys.stderr)
        return 2
    try:
        return _run(env, args, cfg)
    finally:
        env.close()


def _print_table(env, args, cfg, R, mm):
    """The main table: every (dtype, mask, L), measured and printed row by row."""
    _p("")
    _p("attention, (B,H,L,E) = (%d,%d,L,%d), S = L; median ms per call, GF/s = 4*B*H*L*S*E/t "
       "(causal: half), IQR = spread of the samples" % (B_, H_, E_))
    _p(_HDR1)
    _p(_HDR2)
    notes = []
    for dtype in args.dtypes:
        for causal in (False, True):
            for L in cfg["lengths"]:
                c = bench_case(env, L, np.dtype(dtype).type, causal, cfg, args.repeat, args.seed,
                               args.tutorial_max_length,
                               with_matmul=(args.matmul_size if "matmul" not in args.skip
                                            and (dtype, causal, L) in MM_TARGET_CASES else 0))
                R["cases"].append(c)
                _p(_case_line(c, mm, notes))
                gc.collect()
    for i, why in enumerate(notes):
        _p("  (%s) %s" % (_label(i), why))
    _p("  vs tut. / vs torch: attnpy's speed-up (their median time / attnpy's); %mm: attnpy "
       "GF/s as a share of np.matmul's; check: attnpy == tutorial (allclose) before timing")
    if any("matmul_interleaved" in c for c in R["cases"]):
        _p("  *: %%mm against np.matmul %dx%d sampled interleaved with this row's contenders (%s)"
           % (args.matmul_size, args.matmul_size, ", ".join(
               "%s %s %d: %.1f GF/s" % (c["dtype"], "causal" if c["causal"] else "none", c["L"],
                                        c["matmul_interleaved"]["gflops"])
               for c in R["cases"] if "matmul_interleaved" in c)))
    _p("  causal: attnpy causal=True, torch is_causal=True, tutorial np.where(mask == 0, -1e9, s)"
       " with np.tril(np.ones((L, L))) built once outside the timed call")
    if any(c["dtype"] != c.get("tutorial_out_dtype", c["dtype"]) for c in R["cases"]):
        _p("  tutorial float32: its `/ np.sqrt(d_k)` divides by a NumPy float64 scalar, which"
           " under NumPy 2 promotes the scores, softmax and weights @ V to float64 (as a"
           " tutorial user gets)")
    if any(not c.get("torch_guard", {}).get("ok", True) for c in R["cases"]):
        _p("  !: torch's output differs from the tutorial's beyond the tolerance")


def _run(env, args, cfg):
    t_start = time.perf_counter()
    R = {"meta": dict(env.describe(), mode=args.mode, matmul_size=args.matmul_size, lengths=list(cfg["lengths"]),
                      dtypes=args.dtypes, shape="(B,H,L,E) = (%d,%d,L,%d)" % (B_, H_, E_),
                      flops="4*B*H*L*S*E, halved for causal",
                      guard_tolerance={k: {"atol": v[0], "rtol": v[1]}
                                       for k, v in GUARD_TOL.items()}),
         "cases": []}
    _print_header(R)

    if "matmul" not in args.skip:
        R["matmul"] = bench_matmul(cfg, args.repeat, args.matmul_size)
        _p("  machine matmul (np.matmul %dx%d, same run): %s"
           % (args.matmul_size, args.matmul_size, ", ".join(
               "%s %.1f GF/s (IQR %.0f%%)" % (k, v["gflops"], v["iqr_rel"] * 100)
               for k, v in R["matmul"].items())))
    mm = R.get("matmul", {})

    if "table" not in args.skip:
        _print_table(env, args, cfg, R, mm)

    if "tiny" in cfg["parts"] and "tiny" not in args.skip:
        R["tiny"] = t = bench_tiny(env, cfg, args.repeat, args.seed)
        _p("")
        _p("tiny: Q, K, V of shape %s float64 (the tutorial's example size), per call"
           % (tuple(t["shape"]),))
        if not t["guard"]["ok"]:
            _p("  WRONG RESULT, not timed: " + t["guard"]["why"])
        else:
            base = t["results"]["tutorial"]["median_s"]
            for name, st in t["results"].items():
                _p("  %-38s %9.2f us  (IQR %3.0f%%, %d x %d calls)  tutorial/this %6.2fx"
                   % (name, st["median_s"] * 1e6, st["iqr_rel"] * 100, st["samples"],
                      st["calls_per_sample"], base / st["median_s"]))

    if "memory" in cfg["parts"] and "memory" not in args.skip:
        L = args.memory_length
        R["memory"] = m = bench_memory(env, L, timeout=900)
        _p("")
        _p("peak memory: attnpy.attention on (1,1,%d,64) float32 causal in a fresh process" % L)
        if "skipped" in m:
            _p("  skipped: " + m["skipped"])
        elif "error" in m:
            _p("  ERROR: " + m["error"])
        else:
            _p("  extra peak RSS %s (output itself %s; %s; %.2f s), guard %s; the tutorial "
               "would need %s per L x L score matrix (x3 live at its peak)"
               % (_fmt_bytes(m["extra_bytes"]), _fmt_bytes(m["out_bytes"]), m["method"],
                  m["seconds"], "ok" if m["guard"]["ok"] else "WRONG: " + m["guard"]["why"],
                  _fmt_bytes(m["tutorial_score_bytes"])))

    if "threads" in cfg["parts"] and "threads" not in args.skip:
        R["threads"] = th = bench_threads(env, cfg, args.repeat, args.seed, args.threads_length)
        _p("")
        _p("thread scaling: attnpy.attention (1,%d,%d,64) float32 non-causal"
           % (H_, args.threads_length))
        if "skipped" in th:
            _p("  skipped: " + th["skipped"])
        elif not th["guard"]["ok"]:
            _p("  WRONG RESULT, not timed: " + th["guard"]["why"])
        else:
            for name, st in th["results"].items():
                _p("  %-10s %9.3f ms %8.1f GF/s  (IQR %.0f%%)" % (
                    name, st["median_s"] * 1e3, st["gflops"], st["iqr_rel"] * 100))
            _p("  speed-up 2 vs 1: %.2fx; guard ok; 1- and 2-thread outputs %s"
               % (th["speedup"], "bitwise identical" if th["same_result_1_vs_2"]
                  else "DIFFER (the core promises results independent of the thread count)"))

    R["targets"] = evaluate_targets(R)
    _print_targets(R["targets"])
    wrong = [c for c in R["cases"] if not c["guard"]["ok"]]
    if R.get("tiny") and not R["tiny"]["guard"]["ok"]:
        wrong.append(R["tiny"])
    if R.get("memory", {}).get("guard") and not R["memory"]["guard"]["ok"]:
        wrong.append(R["memory"])
    if R.get("threads", {}).get("guard") and not R["threads"]["guard"]["ok"]:
        wrong.append(R["threads"])
    R["meta"]["guards_ok"] = not wrong
    R["meta"]["seconds"] = time.perf_counter() - t_start
    R["meta"]["loadavg_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    _p("  run took %.0f s%s" % (R["meta"]["seconds"], (", load average at the end %.2f"
                                                       % R["meta"]["loadavg_end"][0])
                                if R["meta"]["loadavg_end"] else ""))
    if wrong:
        _p("  CORRECTNESS GUARD FAILED: attnpy's output differs from the tutorial's "
           "(%d case%s)" % (len(wrong), "" if len(wrong) == 1 else "s"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(R, f, indent=1)
        _p("  results written to %s" % args.json)
    if wrong:
        return 1
    if args.strict and any(t["status"] == "FAIL" for t in R["targets"]):
        return 2
    return 0
