"""The ``decode`` part of ``python -m attnpy bench``: one query row against
a long key/value cache (the split-K decode kernel of attention, L <= 4).

For each case (B, H, L, E) with S cached keys, float32, medians of
samples taken in blocks (timing.time_blocked: each contender's samples
back to back after a pause and an untimed call, the contenders taking
turns; torch gets the same thread count) of

- attnpy: ``attention(Q, K, V)``;
- torch: ``scaled_dot_product_attention`` (when torch imports);
- the streaming read of the same K and V bytes by attnpy's own threads
  (``attnpy._core.read_bytes``: every byte summed front to back, on the
  scheduler's threads with the instruction set in use): the rate decoding
  can at best reach, since it reads K and V once;
- NumPy's read rate, for comparison: NumPy reductions over an array of
  the cache's size, split in one part per thread, each part reduced by
  its own thread (float32 sum, int64 sum of the same bytes, float32 max,
  float32 dot); the fastest reader counts.

Then, for a one-head case, how many threads did attnpy's work (each
thread's CPU time while it runs, from /proc, against the busiest one's)
and its 1-thread time; and a windowed decode: the last W keys of the
S = 65536 cache (``causal="bottom_right", window=(W - 1, 0)``) against the
full cache and against a cache of W keys, the cost it should approach (the
keys outside the window are never read).

Every attnpy output is checked first (against torch, or the NumPy
reference, or the explicit window): a wrong result is reported, not timed.
The decode targets: attnpy >= 1.5x torch and >= 80% of the streaming
read rate on (1, 32, 1, 128) S = 4096 and (1, 1, 1, 128) S = 65536, and
every thread used on the one-head case.
"""
import os
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import attnpy

from . import bits16
from .report import _p
from .timing import Contender, _estimate, time_blocked, time_interleaved

CASES = [  # (B, H, L, E), S, one of the decode targets
    ((1, 32, 1, 128), 4096, True),
    ((1, 1, 1, 128), 65536, True),
    ((16, 8, 1, 64), 2048, False),
    ((1, 32, 4, 128), 4096, False),
]
WINDOW = dict(shape=(1, 1, 1, 128), S=65536, W=256)
TARGET_TORCH = 1.5
TARGET_STREAM = 0.80      # of the streaming read of the same bytes


def stream_reader(arrays):
    """The streaming-read contender of arrays (attnpy._core.read_bytes on
    attnpy's threads, the set in use), or None in a build without it."""
    read = getattr(getattr(attnpy, "_core", None), "read_bytes", None)
    if read is None:
        return None
    arrays = [np.ascontiguousarray(a) for a in arrays]
    return Contender("stream", lambda: read(arrays))


def readers(nbytes, threads, pool):
    """Contenders reading an array of nbytes, one part per thread."""
    buf = np.ones(max(nbytes // 4, threads), np.float32)
    parts = np.array_split(buf, threads)
    kernels = {
        "read: f32 sum": np.add.reduce,
        "read: i64 sum": lambda p: np.add.reduce(p[:p.size // 2 * 2].view(np.int64)),
        "read: f32 max": np.maximum.reduce,
        "read: f32 dot": lambda p: np.dot(p, p),
    }
    return [Contender(name, lambda k=k: list(pool.map(k, parts)))
            for name, k in kernels.items()]


def _guard(out, ref, what):
    err = float(np.max(np.abs(out - ref))) if out.size else 0.0
    tol = 2e-5 + 1e-4 * float(np.max(np.abs(ref)) if ref.size else 0.0)
    return {"ok": bool(err <= tol), "max_abs_err": err, "against": what,
            "why": "" if err <= tol else "max |attnpy - %s| = %.3g > %.3g" % (what, err, tol)}


def _thread_cpu():
    """{thread id: CPU seconds} of this process's threads (Linux), or {}."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    cpu = {}
    try:
        for tid in os.listdir("/proc/self/task"):
            with open("/proc/self/task/%s/stat" % tid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            cpu[tid] = (int(fields[11]) + int(fields[12])) / tick
    except OSError:
        return {}
    return cpu


def thread_shares(fn, seconds=0.5):
    """While fn runs over and over: the CPU share of each thread that
    worked, relative to the busiest (a thread counts when it did at least a
    quarter of the busiest one's work; Linux, else []). Other processes'
    load lowers every thread alike, not the shares."""
    time.sleep(0.3)  # let torch's / BLAS's idle threads stop spinning
    t0, w0, n = _thread_cpu(), time.perf_counter(), 0
    while time.perf_counter() - w0 < seconds or n < 3:
        fn()
        n += 1
    t1 = _thread_cpu()
    used = sorted((t1[k] - t0.get(k, 0.0) for k in t1), reverse=True)
    if not used or used[0] <= 0:
        return []
    return [u / used[0] for u in used if u >= 0.25 * used[0]]


def _arrays(shape, S, seed=0):
    B, H, L, E = shape
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape, dtype=np.float32),
            rng.standard_normal((B, H, S, E), dtype=np.float32),
            rng.standard_normal((B, H, S, E), dtype=np.float32))


def decode_case(env, cfg, repeat, shape, S, pool, one_thread=True):
    """One row: attnpy, torch and the readers, in blocks."""
    Q, K, V = _arrays(shape, S)
    nbytes = K.nbytes + V.nbytes
    out = attnpy.attention(Q, K, V)
    row = {"shape": list(shape), "S": S, "bytes": nbytes}
    cs = [Contender("attnpy", lambda: attnpy.attention(Q, K, V))]
    if env.torch is not None:
        tq, tk, tv = (env.torch.from_numpy(a) for a in (Q, K, V))
        sdpa = env.F.scaled_dot_product_attention
        row["guard"] = _guard(out, sdpa(tq, tk, tv).numpy(), "torch")
        cs.append(Contender("torch", lambda: sdpa(tq, tk, tv)))
    else:
        row["guard"] = _guard(out, attnpy.reference.attention(Q, K, V), "reference")
    if not row["guard"]["ok"]:
        return row
    stream = stream_reader([K, V])
    if stream is not None:
        cs.append(stream)
    cs += readers(nbytes, env.threads, pool)
    for c in cs:
        c.fn()
    sample = time_interleaved if cfg.get("sampling") == "interleaved" else time_blocked
    st = sample(cs, {c.name: _estimate(c) for c in cs}, cfg, repeat)
    t = {k: v["median_s"] for k, v in st.items()}
    read = min(v for k, v in t.items() if k.startswith("read:"))
    row.update(results=st, attnpy_s=t["attnpy"], torch_s=t.get("torch"), read_s=read,
               attnpy_gbs=nbytes / t["attnpy"] / 1e9, read_gbs=nbytes / read / 1e9,
               of_read=read / t["attnpy"],
               vs_torch=t["torch"] / t["attnpy"] if "torch" in t else None,
               stream_s=t.get("stream"),
               stream_gbs=nbytes / t["stream"] / 1e9 if "stream" in t else None,
               of_stream=t["stream"] / t["attnpy"] if "stream" in t else None)
    if one_thread and shape[0] * shape[1] == 1 and env.has_threads:
        env.attnpy.set_num_threads(1)
        try:
            row["attnpy_1thread_s"] = time_interleaved(
                cs[:1], {"attnpy": _estimate(cs[0])}, cfg, repeat)["attnpy"]["median_s"]
        finally:
            env.attnpy.set_num_threads(env.threads)
        row["thread_shares"] = thread_shares(cs[0].fn)
    return row


def window_case(env, cfg, repeat, shape, S, W):
    """The last W keys of an S-key cache: full cache, window, W-key cache."""
    Q, K, V = _arrays(shape, S, seed=1)
    kw = dict(causal="bottom_right", window=(W - 1, 0))
    kt, vt = (np.ascontiguousarray(x[:, :, S - W:]) for x in (K, V))
    row = {"shape": list(shape), "S": S, "W": W}
    row["guard"] = _guard(attnpy.attention(Q, K, V, **kw), attnpy.attention(Q, kt, vt),
                          "attention over the window's keys")
    if not row["guard"]["ok"]:
        return row
    cs = [Contender("window", lambda: attnpy.attention(Q, K, V, **kw)),
          Contender("last W keys", lambda: attnpy.attention(Q, kt, vt)),
          Contender("full cache", lambda: attnpy.attention(Q, K, V))]
    st = time_interleaved(cs, {c.name: _estimate(c) for c in cs}, cfg, repeat)
    t = {k: v["median_s"] for k, v in st.items()}
    row.update(results=st, window_vs_w_keys=t["window"] / t["last W keys"],
               full_vs_window=t["full cache"] / t["window"])
    return row


def _print_row(r):
    B, H, L, E = r["shape"]
    head = "  (%2d,%2d,%d,%3d) S=%6d %6.1f MiB" % (B, H, L, E, r["S"], r["bytes"] / 2 ** 20)
    if not r["guard"]["ok"]:
        _p(head + "  WRONG RESULT, not timed: " + r["guard"]["why"])
        return
    torch_s = ("torch %8.3f ms, attnpy %5.2fx faster" % (r["torch_s"] * 1e3, r["vs_torch"])
               if r["torch_s"] else "(no torch)")
    stream = ("stream %6.1f GB/s: attnpy at %3.0f%%" % (r["stream_gbs"], 100 * r["of_stream"])
              if r.get("of_stream") else "stream: not in this build")
    _p("%s | attnpy %8.3f ms %6.1f GB/s | %s | %s | NumPy read %6.1f GB/s (attnpy at %3.0f%%)"
       % (head, r["attnpy_s"] * 1e3, r["attnpy_gbs"], torch_s, stream, r["read_gbs"],
          100 * r["of_read"]))
    if "thread_shares" in r:
        _p("      one head: %d threads worked (CPU shares %s); 1 thread %.3f ms (%.2fx the time)"
           % (len(r["thread_shares"]), ", ".join("%.2f" % x for x in r["thread_shares"]),
              r["attnpy_1thread_s"] * 1e3, r["attnpy_1thread_s"] / r["attnpy_s"]))


def decode_targets(rows, threads):
    """[{target, status, measured, required}] of the decode targets."""
    res = []

    def add(name, ok, measured, required, yardstick=None):
        res.append({"target": name, "status": "PASS" if ok else "FAIL",
                    "measured": measured, "required": required, "yardstick": yardstick})

    for r in rows:
        name = "decode (%d,%d,%d,%d) S=%d float32" % (*r["shape"], r["S"])
        if not r["guard"]["ok"]:
            add(name, False, "wrong result: " + r["guard"]["why"], "a right result")
            continue
        if r["vs_torch"] is not None:
            add(name + " vs torch SDPA", r["vs_torch"] >= TARGET_TORCH,
                "%.2fx" % r["vs_torch"], ">= %gx torch" % TARGET_TORCH, "torch")
        req = ">= %.0f%% of the streaming read" % (100 * TARGET_STREAM)
        if r.get("of_stream") is None:
            res.append({"target": name + " vs the streaming read", "status": "N/A",
                        "measured": "no attnpy._core.read_bytes in this build",
                        "required": req, "yardstick": None})
        else:
            add(name + " vs the streaming read", r["of_stream"] >= TARGET_STREAM,
                "%.0f%% (%.1f of %.1f GB/s)" % (100 * r["of_stream"], r["attnpy_gbs"],
                                                 r["stream_gbs"]), req)
        if r.get("thread_shares"):
            n = len(r["thread_shares"])
            add(name + " threads used", n >= threads, "%d of %d" % (n, threads),
                "every thread")
    return res


def bench_decode(env, cfg, repeat, cases=None, window=None, cases16=None):
    """Every case of cases (default CASES), then the windowed decode of
    window (default WINDOW; False: none), then the 16-bit rows of cases16
    (default bits16.DECODE16: [(shape, S)]); prints the rows."""
    cases = CASES if cases is None else cases
    window = WINDOW if window is None else window
    cases16 = bits16.DECODE16 if cases16 is None else cases16
    _p("")
    _p("decode: one query row against a K/V cache, float32, %d threads, medians of "
       "%s" % (env.threads, "interleaved samples" if cfg.get("sampling") == "interleaved"
               else "samples in blocks (each contender's back to back)"))
    rows = []
    with ThreadPoolExecutor(env.threads) as pool:
        for shape, S, is_target in cases:
            rows.append(dict(decode_case(env, cfg, repeat, shape, S, pool), target=is_target))
            _print_row(rows[-1])
    out = {"rows": rows}
    if window:
        w = out["window"] = window_case(env, cfg, repeat, window["shape"], window["S"],
                                        window["W"])
        head = "  window: the last %d of %d keys, %s" % (w["W"], w["S"], tuple(w["shape"]))
        if not w["guard"]["ok"]:
            _p(head + "  WRONG RESULT, not timed: " + w["guard"]["why"])
        else:
            t = {k: v["median_s"] * 1e3 for k, v in w["results"].items()}
            _p("%s: %.3f ms; a %d-key cache %.3f ms (window / that %.2fx); the full cache "
               "%.3f ms (%.0fx the window)" % (head, t["window"], w["W"], t["last W keys"],
                                               w["window_vs_w_keys"], t["full cache"],
                                               w["full_vs_window"]))
    out["rows16"] = bits16.run_rows(
        env, cfg, repeat, "decode in 16 bits beside attnpy float32 and torch in the same dtype",
        [lambda s=s, S=S, d=d: bits16.decode_row(env, cfg, repeat, s, S, d)
         for s, S in cases16 for d in bits16.DTYPES16])
    out["targets"] = (decode_targets([r for r in rows if r["target"]], env.threads)
                      + bits16.targets16(out["rows16"]))
    out["guards_ok"] = all(r["guard"]["ok"] for r in rows + [out.get("window")]
                           + out["rows16"] if r and "guard" in r)
    return out
