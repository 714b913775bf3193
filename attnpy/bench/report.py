"""Printing a run: header, the main table, targets."""
import gc
import shlex
import sys
import time

import numpy as np

from . import config
from . import isa as isa_mod
from .config import B_, E_, H_
from .cases import bench_case
from .targets import _mm_rate


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
    _p("  CPU: %s, %s CPUs; attnpy's instruction sets here: %s"
       % (m["cpu"], m["cpu_count"], " ".join(m.get("isas") or []) or "?"))
    for line in isa_lines(m):
        _p("  " + line)
    _p("  python %s, load average %s"
       % (m["python"], " ".join("%.2f" % x for x in m["loadavg"]) if m["loadavg"] else "?"))
    if m["loadavg"] and m["loadavg"][0] > 0.5:
        _p("  WARNING: the machine is busy (load %.2f): expect noisy figures" % m["loadavg"][0])
    if m["attention"].startswith("STAND-IN"):
        _p("  WARNING: attnpy.attention is not available; timing a NumPy STAND-IN in its place."
           " Build attnpy first: python setup.py build_ext --inplace")


def isa_lines(m):
    """The header's lines on instruction sets: attnpy's, how it was
    chosen, and what each yardstick library runs (bench/isa.py)."""
    isa, forced = m.get("isa") or "?", m.get("isa_forced")
    env = m.get("forced_env") or {}
    if not forced:
        how = "the default; --isa NAME picks one and matches the yardsticks to it"
    else:
        libs_env = " ".join("%s=%s" % (k, shlex.quote(v)) for k, v in sorted(env.items())
                            if k != "ATTNPY_ISA" and v is not None)
        how = "--isa %s" % forced
        if libs_env:
            how += ("; re-run in a child process with " if m.get("isa_child")
                    else "; the environment had ") + libs_env
    lines = ["instruction sets: attnpy %s (%s)" % (isa, how)]
    libs = m.get("yardsticks") or {}
    shown = ["%s %s%s" % (isa_mod.LIBS[k], v["seen"], {
        "matched": " (matched)", "MISMATCH": " (NOT MATCHED)", "default": "",
        "none": "", "unknown": ""}[v["state"]])
        for k, v in libs.items() if v["seen"] is not None]
    lines.append("yardsticks run: " + ("; ".join(shown) or "nothing reported")
                 + ("" if forced else " (their defaults)"))
    if libs and libs.get("openblas", {}).get("seen") is None:
        coretype = m.get("openblas_coretype_env")
        lines.append("OpenBLAS's core type not reported: %s" % (
            "as set by OPENBLAS_CORETYPE=%s" % coretype if coretype
            else "its own choice (OPENBLAS_CORETYPE not set)"))
    if m.get("torch_probe_error"):
        lines.append("torch's MKL / oneDNN not reported: the probe failed (%s)"
                     % m["torch_probe_error"])
    if forced in isa_mod.NO_YARDSTICK:
        lines.append("NO MATCHED YARDSTICK for %s: only torch's ATen loops are set to their "
                     "plain build (ATEN_CPU_CAPABILITY=default), its products and NumPy's keep "
                     "their sets; "
                     "targets against torch, np.matmul or NumPy are N/A" % forced)
    elif forced in isa_mod.DEFAULTS:
        lines.append("%s: nothing forced, %s" % (forced, isa_mod.DEFAULTS[forced]))
    for k, v in libs.items():
        if v["state"] == "MISMATCH":
            lines.append("YARDSTICK NOT MATCHED: %s %s; targets against it are N/A"
                         % (isa_mod.LIBS[k], v["why"]))
    return lines


def _print_list(T):
    w = max(len(t["target"]) for t in T)
    for t in T:
        _p("  %-4s  %-*s  %s   [%s]" % (t["status"], w, t["target"], t["measured"], t["required"]))
    counts = {}
    for t in T:
        counts[t["status"]] = counts.get(t["status"], 0) + 1
    _p("  " + ", ".join("%d %s" % (n, s) for s, n in sorted(counts.items())))


def _print_targets(T, M=None, meta=None):
    _p("")
    _p("targets")
    _print_list(T)
    if M:
        meta = meta or {}
        _p("")
        _p("targets of --isa avx2 (attnpy %s; torch, OpenBLAS and NumPy as the header shows)"
           % (meta.get("isa") or "?"))
        _print_list(M)
        _p("  (the decode targets above -- >= 80% of the streaming read, 16-bit >= 1.8x "
           "float32 -- compare attnpy with itself: judged in every run)")


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
                                            and (dtype, causal, L) in config.MM_TARGET_CASES else 0))
                R["cases"].append(c)
                _p(_case_line(c, mm, notes))
                gc.collect()
    for i, why in enumerate(notes):
        _p("  (%s) %s" % (_label(i), why))
    _p("  vs tut. / vs torch: attnpy's speed-up (their median time / attnpy's); %mm: attnpy "
       "GF/s as a share of np.matmul's; check: attnpy == tutorial (allclose) before timing")
    over = [c for c in R["cases"] if c["guard"]["ok"] and _mm_rate(c, mm)
            and c["results"]["attnpy"]["gflops"] > _mm_rate(c, mm)]
    if over:
        _p("  %%mm over 100%% (%s): np.matmul is a yardstick, not a ceiling; it "
           "is the rate of one large square product (--matmul-size), and a "
           "small attention problem, whose blocks stay in the CPU cache, can "
           "run at more GF/s than that product" % ", ".join(
               "%s %s %d" % (c["dtype"], "causal" if c["causal"] else "none",
                             c["L"]) for c in over))
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
