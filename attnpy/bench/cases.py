"""The measured parts of the attention benchmark: np.matmul's rate, one
(dtype, causal, L) row of the main table, the tiny per-call case, peak
memory in a fresh process, 1-vs-2-thread scaling."""
import json
import os
import subprocess
import sys
import time

import numpy as np

from .config import B_, E_, H_, MATMUL_N, MEMORY_LIMIT_MIB, THREADS_L, TINY_SHAPE, TUTORIAL_MAX_L
from .tutorial import _compare, _guard_rows, _tutorial_rows, tutorial_causal_mask, tutorial_sdpa
from .timing import Contender, _estimate, time_interleaved
from .env import _fmt_bytes, _mem_available


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
from attnpy.bench import tutorial as _tut

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
rows = _tut._guard_rows(L)
ref = _tut._tutorial_rows(Q, K, V, True, rows)
guard = _tut._compare(out[..., rows, :], ref, "float32")
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
