"""``python -m attnpy bench``: options and the run itself.

A run measures np.matmul, then the main table, then each part of PARTS
that the mode includes and --skip does not name. Add a benchmark row by
writing a part (a function ``part(env, args, cfg, R)`` that measures,
stores its results in R and prints them) and registering it in PARTS.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

from .config import B_, E_, GUARD_TOL, H_, MATMUL_N, MEMORY_L, MODES, THREADS_L, TUTORIAL_MAX_L
from .env import Env, _fmt_bytes
from . import isa as isa_mod
from .cases import bench_matmul
from .timing import WARM_S
from .parts import PARTS
from .targets import evaluate_matched, evaluate_targets
from .report import _p, _print_header, _print_table, _print_targets


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
                    help="leave out parts: table (the main table), matmul, torch, "
                         + ", ".join(PARTS))
    ap.add_argument("--only", default="", metavar="PART,...",
                    help="run only these parts (of table, matmul, %s), whatever "
                         "the mode includes" % ", ".join(PARTS))
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
                         "not slow the next one; a sample shorter than %g s "
                         "then starts with an untimed call (default 0.12; 0: "
                         "none)" % WARM_S)
    ap.add_argument("--sampling", choices=("blocked", "interleaved"), default="blocked",
                    help="how the decode part samples its contenders: blocked (default: "
                         "each contender's samples back to back, after a pause and an "
                         "untimed call) or interleaved (a, b, c, a, b, c, ...)")
    ap.add_argument("--isa", metavar="NAME",
                    help="attnpy's instruction set (one of attnpy.isas(); default: the one "
                         "in use), with torch, OpenBLAS and NumPy made to run the same "
                         "where they can: the command re-runs itself in a child whose "
                         "environment sets ATEN_CPU_CAPABILITY, MKL_ENABLE_INSTRUCTIONS, "
                         "ONEDNN_MAX_CPU_ISA, OPENBLAS_CORETYPE (and NumPy's "
                         "NPY_DISABLE_CPU_FEATURES for avx2; for portable and baseline "
                         "ATEN_CPU_CAPABILITY=default only); the header shows what each "
                         "library really runs")
    ap.add_argument("--strict", action="store_true",
                    help="exit with status 2 when a target FAILs")
    args = ap.parse_args(argv)
    args.skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    known = {"table", "matmul", "torch"} | set(PARTS)
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    bad = (args.skip | only) - known
    if bad:
        ap.error("--skip/--only: unknown part(s) %s" % ", ".join(sorted(bad)))
    args.only = only
    if args.threads is not None and args.threads < 1:
        ap.error("--threads must be >= 1")
    if args.matmul_size < 1:
        ap.error("--matmul-size must be >= 1")
    if args.repeat is not None and args.repeat < 1:
        ap.error("--repeat must be >= 1")
    args.mode = "quick" if args.quick else "full" if args.full else "default"
    cfg = dict(MODES[args.mode])
    if args.only:   # named parts run even when the mode leaves them out
        cfg["parts"] = tuple(p for p in PARTS if p in args.only)
        args.skip |= ({"table", "matmul"} - args.only)
    if not args.settle >= 0:
        ap.error("--settle must be >= 0")
    cfg["settle_s"] = args.settle
    cfg["sampling"] = args.sampling
    if args.lengths:
        try:
            cfg["lengths"] = tuple(int(x) for x in args.lengths.split(",") if x.strip())
        except ValueError:
            ap.error("--lengths: comma-separated integers, e.g. 128,1024")
        if not cfg["lengths"] or min(cfg["lengths"]) < 1:
            ap.error("--lengths: positive integers")
    if args.isa is not None:
        known = _known_isas()
        if args.isa not in known:
            ap.error("--isa: %r is not an instruction set this machine runs (attnpy.isas(): %s)"
                     % (args.isa, ", ".join(known) or "none: attnpy has no set_isa"))
    args.dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    if not args.dtypes or set(args.dtypes) - {"float32", "float64"}:
        ap.error("--dtypes: float32 and/or float64")
    return args, cfg


def _known_isas():
    try:
        import attnpy
        return list(attnpy.isas())
    except Exception:    # no build, or a build without the switch
        return []


def main(argv=None):
    """Run the benchmark; returns the exit code (0 ok, 1 a wrong result, 2 usage
    error or --strict with a failed target)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args, cfg = _parse(argv)
    except SystemExit as exc:          # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else 2
    if args.isa:
        # the yardsticks' libraries read their settings when they load:
        # a child process with them set, unless this one has them already
        where, env = isa_mod.plan(args.isa, os.environ)
        if where == "child":
            import attnpy
            root = os.path.dirname(os.path.abspath(list(attnpy.__path__)[0]))
            return isa_mod.run_child(argv, env, root)
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

    for name, part in PARTS.items():
        if name in cfg["parts"] and name not in args.skip:
            part(env, args, cfg, R)

    R["targets"] = evaluate_targets(R)
    R["matched_targets"] = evaluate_matched(R)
    _print_targets(R["targets"], R["matched_targets"], R["meta"])
    wrong = [c for c in R["cases"] if not c["guard"]["ok"]]
    if R.get("tiny") and not R["tiny"]["guard"]["ok"]:
        wrong.append(R["tiny"])
    if R.get("memory", {}).get("guard") and not R["memory"]["guard"]["ok"]:
        wrong.append(R["memory"])
    if R.get("threads", {}).get("guard") and not R["threads"]["guard"]["ok"]:
        wrong.append(R["threads"])
    if R.get("decode") and not R["decode"]["guards_ok"]:
        wrong.append(R["decode"])
    for part in ("forward", "backward"):
        wrong += [r for r in (R.get(part) or {}).get("rows16", [])
                  if "guard" in r and not r["guard"]["ok"]]
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
    if args.strict and any(t["status"] == "FAIL"
                           for t in R["targets"] + R["matched_targets"]):
        return 2
    return 0
