"""PASS/FAIL of the project's speed targets from a run's results."""
from .config import MATMUL_N, MEMORY_L, MEMORY_LIMIT_MIB, THREADS_L
from .env import _fmt_bytes


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

    T.append(_window_target(R))
    T.extend(_decode_targets(R))
    return T


def _window_target(R):
    """The window target: a sliding window skips the key blocks it excludes."""
    w = (R.get("variants") or {}).get("window")
    t = {"target": "window 256 over 8192, per query, vs causal 512",
         "required": "<= 2.00x"}
    if w is None:
        return dict(t, status="SKIP", measured="not measured in this run")
    if w["max_err_vs_mask"] > 1e-5:
        return dict(t, status="FAIL", measured="wrong result: max err %.1e "
                    "vs the explicit mask" % w["max_err_vs_mask"])
    x = w["window_vs_causal512_per_query"]
    return dict(t, status="PASS" if x <= 2.0 else "FAIL",
                measured="%.2fx" % x)


def _decode_targets(R):
    """The targets the decode, forward and backward parts judged themselves
    (decode.py: >= 1.5x torch, >= 70% of the read rate, every thread;
    bits16.py: the 16-bit rows), when they ran."""
    return [{"target": t["target"], "status": t["status"], "measured": t["measured"],
             "required": t["required"]}
            for part in ("forward", "backward", "decode")
            for t in (R.get(part) or {}).get("targets", [])]
