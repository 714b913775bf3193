"""PASS/FAIL of the project's speed targets from a run's results.

Two lists. evaluate_targets: the standing targets, judged in every run.
evaluate_matched: the targets set for the run with attnpy and its
yardsticks on AVX2 (``--isa avx2``: bench/isa.py); none in other runs. A target that compares
with a yardstick (torch, NumPy's BLAS or NumPy's own SIMD loops) names it
("yardstick"); where that yardstick did not run attnpy's set, the target
is N/A with the reason, its figure still shown, never silently compared.
"""
from . import isa as isa_mod
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

    def add(name, status, measured, required, yardstick=None):
        T.append({"target": name, "status": status, "measured": measured, "required": required,
                  "yardstick": yardstick})

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
        add_ = lambda *a: add(*a, yardstick="blas+numpy")  # noqa: E731 (the tutorial)
        if c is None:
            return add_(name, st, why, req)
        x = c.get("speedup_vs_tutorial")
        if x is None:
            return add_(name, "SKIP", "tutorial not run: " + c["skipped"].get("tutorial", "?"),
                        req)
        ok = x >= min_x
        meas = "%.2fx tutorial" % x
        if min_frac:
            g = c["results"]["attnpy"]["gflops"]
            ref = _mm_rate(c, mm)
            n = R["meta"].get("matmul_size", MATMUL_N)
            if ref and n != MATMUL_N:
                return add_(name, "SKIP", "matmul yardstick %dx%d, not %dx%d"
                            % (n, n, MATMUL_N, MATMUL_N), req)
            if ref:
                frac = g / ref
                ok = ok and frac >= min_frac
                meas += ", %.0f%% of matmul (%.1f / %.1f GF/s)" % (frac * 100, g, ref)
            else:
                ok = False
                meas += ", matmul rate not measured"
        add_(name, "PASS" if ok else "FAIL", meas, req)

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
            _vs_torch(add, name, req, (c, st, why), lambda x: x > 1.0, "%.2fx torch")

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
        add(name, "PASS" if x >= 5 else "FAIL", "%.2fx (%.2f us vs %.2f us)" % (x, a, t), req,
            "blas+numpy")

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
    return mark_unmatched(T, R["meta"].get("yardsticks"))


def _vs_torch(add, name, req, found, ok, fmt):
    """A target on a main-table case's speed-up over torch SDPA: found is
    (case, status, why) of the case lookup; ok(x) judges the speed-up."""
    c, st, why = found
    if c is None:
        add(name, st, why, req, "torch")
    elif c.get("speedup_vs_torch") is None:
        add(name, "N/A", "torch: " + c["skipped"].get("torch", "not run"), req, "torch")
    else:
        x = c["speedup_vs_torch"]
        add(name, "PASS" if ok(x) else "FAIL", fmt % x, req, "torch")


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
    (decode.py: >= 1.5x torch, >= 80% of the streaming read, every thread;
    bits16.py: the 16-bit rows), when they ran."""
    return [{"target": t["target"], "status": t["status"], "measured": t["measured"],
             "required": t["required"], "yardstick": t.get("yardstick")}
            for part in ("forward", "backward", "decode")
            for t in (R.get(part) or {}).get("targets", [])]


def yardstick_state(yardstick, libs):
    """(ok, why) of a target's yardstick ("torch", "blas+numpy", ...) under
    the run's judged libraries (isa.judge; None: a run without them)."""
    if not yardstick or not libs:
        return True, ""
    for group in yardstick.split("+"):
        ok, why = isa_mod.group_state(libs, group)
        if not ok:
            return False, why
    return True, ""


def mark_unmatched(T, libs):
    """Targets whose yardstick did not run attnpy's set: N/A, the figure
    kept, the reason appended."""
    for t in T:
        ok, why = yardstick_state(t.get("yardstick"), libs)
        if not ok and t["status"] in ("PASS", "FAIL"):
            t["status"] = "N/A"
            t["measured"] += "  -- not judged: " + why
    return T


# ---- the targets of a run with matched yardsticks ---------------------------

MATCHED = {"mm_frac": 0.90, "vs_torch": 1.2, "bwd_max": 2.3,
           # fwd+bwd vs torch autograd, by (dtype, causal)
           "fwdbwd_vs_torch": {("float32", False): 1.3, ("float32", True): 1.5,
                               ("float64", False): 2.0}}
MATCHED_LENGTHS = (1024, 4096)


def fwdbwd_bound(r, mm):
    """(GF/s, x): the most a forward + backward row r of the backward part
    can beat torch autograd by on this machine at np.matmul's rate mm (the
    run's matmul part, same dtype): its 7 products (forward Q K^T and P V;
    backward Q K^T again, dV, dP, dQ, dK), each 2 B H L L E flops (causal:
    the (L + 1) / 2L of the pairs at or below the diagonal), take at least
    flops / rate, exps and softmax left out; x = torch's time / that.
    None without the figures."""
    rate = (mm.get(r.get("dtype")) or {}).get("gflops")
    torch_s = ((r.get("results") or {}).get("torch") or {}).get("median_s")
    if not rate or not torch_s or "shape" not in r:
        return None
    B, H, L, E = r["shape"]
    share = (L + 1) / (2.0 * L) if r["causal"] else 1.0
    least_s = 7 * 2.0 * B * H * L * L * E * share / (rate * 1e9)
    return rate, torch_s / least_s


def evaluate_matched(R):
    """The targets set for the run with matched yardsticks (``--isa avx2``):
    forward float32 >= 90% of np.matmul and >= 1.2x torch SDPA at
    L = 1024 and 4096; forward + backward vs torch autograd >= 1.3x in
    float32 (>= 1.5x causal at (1,12,2048,64), >= 2x float64 at
    (1,12,1024,64)); backward <= 2.3x the forward. [] in any other run
    (the yardsticks ran their own sets there). A target whose yardstick
    did not take AVX2 (the header's NOT MATCHED) is N/A, its figure
    kept."""
    meta = R["meta"]
    if meta.get("isa_forced") != "avx2":
        return []
    cases, mm = R["cases"], R.get("matmul", {})
    T = []

    def add(name, status, measured, required, yardstick=None):
        T.append({"target": name, "status": status, "measured": measured, "required": required,
                  "yardstick": yardstick})

    def case(L, causal):
        c = _find(cases, "float32", causal, L)
        if c is None:
            return None, "SKIP", "not measured in this run"
        if not c["guard"]["ok"]:
            return None, "FAIL", "wrong result: " + c["guard"]["why"]
        return c, None, None

    for L in MATCHED_LENGTHS:
        name = "forward float32 (1,12,%d,64) non-causal vs np.matmul" % L
        req = ">= %.0f%% of np.matmul float32" % (100 * MATCHED["mm_frac"])
        c, st, why = case(L, False)
        ref = _mm_rate(c, mm) if c else None
        n = meta.get("matmul_size", MATMUL_N)
        if c is None:
            add(name, st, why, req, "blas")
        elif not ref:
            add(name, "SKIP", "matmul rate not measured", req, "blas")
        elif n != MATMUL_N:
            add(name, "SKIP", "matmul yardstick %dx%d, not %dx%d" % (n, n, MATMUL_N, MATMUL_N),
                req, "blas")
        else:
            g = c["results"]["attnpy"]["gflops"]
            add(name, "PASS" if g / ref >= MATCHED["mm_frac"] else "FAIL",
                "%.0f%% (%.1f / %.1f GF/s)" % (100 * g / ref, g, ref), req, "blas")
        _vs_torch(add, "forward float32 (1,12,%d,64) non-causal vs torch SDPA" % L,
                  ">= %.1fx torch" % MATCHED["vs_torch"], (c, st, why),
                  lambda x: x >= MATCHED["vs_torch"], "%.2fx")

    rows = {(r["dtype"], r["causal"]): r for r in (R.get("backward") or {}).get("shapes", [])}
    shapes = {("float32", False): "(1,12,1024,64)", ("float32", True): "(1,12,2048,64)",
              ("float64", False): "(1,12,1024,64)"}
    for key, need in MATCHED["fwdbwd_vs_torch"].items():
        dtype, causal = key
        desc = "%s %s%s" % (dtype, shapes[key], " causal" if causal else "")
        name = "forward+backward %s vs torch autograd" % desc
        req = ">= %.1fx torch" % need
        r = rows.get(key)
        if r is None:
            add(name, "SKIP", "not measured in this run", req, "torch")
        elif r["torch_vs_attnpy"] is None:
            add(name, "N/A", "torch not run", req, "torch")
        else:
            x = r["torch_vs_attnpy"]
            meas = "%.2fx" % x
            b = fwdbwd_bound(r, mm)
            if b is not None:
                meas += "; at np.matmul's %.1f GF/s its 7 products allow at most %.2fx" % b
                if b[1] < need:
                    meas += ": past this machine's matmul"
            add(name, "PASS" if x >= need else "FAIL", meas, req, "torch")
    for key in MATCHED["fwdbwd_vs_torch"]:
        dtype, causal = key
        name = "backward / forward %s %s%s" % (dtype, shapes[key], " causal" if causal else "")
        req = "<= %.1fx the forward" % MATCHED["bwd_max"]
        r = rows.get(key)
        if r is None:
            add(name, "SKIP", "not measured in this run", req)
        else:
            x = r["bwd_vs_fwd"]
            add(name, "PASS" if x <= MATCHED["bwd_max"] else "FAIL", "%.2fx" % x, req)

    return mark_unmatched(T, meta.get("yardsticks"))
