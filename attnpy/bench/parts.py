"""The parts of ``python -m attnpy bench`` after the main table.

Each part is ``part(env, args, cfg, R)``: it measures, stores its results
in R (the run's JSON) and prints them. PARTS lists them in the order they
run; a mode (config.MODES) names the parts it includes and ``--skip``
leaves any out. To add a benchmark row, write a part (measuring through
timing.time_interleaved, so that it is sampled like every other row) and
register it here.
"""
from .cases import bench_memory, bench_threads, bench_tiny
from .config import H_
from .env import _fmt_bytes
from .report import _p


def part_tiny(env, args, cfg, R):
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


def part_memory(env, args, cfg, R):
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


def part_threads(env, args, cfg, R):
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


def part_mha(env, args, cfg, R):
    from .mha import bench_mha
    R["mha"] = bench_mha(env, cfg, args.repeat)


def part_backward(env, args, cfg, R):
    from .backward import bench_backward
    R["backward"] = bench_backward(env, cfg, args.repeat)


def part_variants(env, args, cfg, R):
    from .variants import bench_variants
    R["variants"] = bench_variants(env, cfg, args.repeat)


def part_forward(env, args, cfg, R):
    from . import bits16
    rows = bits16.run_rows(
        env, cfg, args.repeat, "attention forward in 16 bits beside attnpy float32 and "
        "torch in the same dtype",
        [lambda s=s, c=c, d=d: bits16.forward_row(env, cfg, args.repeat, s, c, d)
         for s, c in bits16.FORWARD16 for d in bits16.DTYPES16])
    R["forward"] = {"rows16": rows, "targets": bits16.targets16(rows)}


def part_decode(env, args, cfg, R):
    from .decode import bench_decode
    R["decode"] = bench_decode(env, cfg, args.repeat)


def part_layer(env, args, cfg, R):
    from .layer import bench_layer
    R["layer"] = bench_layer(env, cfg, args.repeat)


def part_llm(env, args, cfg, R):
    from .llm import bench_llm
    R["llm"] = bench_llm(env, cfg, args.repeat)


def part_dask(env, args, cfg, R):
    from .dask_cluster import bench_dask
    R["dask"] = bench_dask(env)


# in the order they run; config.MODES says which parts each mode includes
# ("dask" is in none: it starts a local cluster, run it with --only dask;
# nor "llm": minutes, and a model package; run it with --only llm)
PARTS = {"tiny": part_tiny, "memory": part_memory, "threads": part_threads,
         "mha": part_mha, "forward": part_forward, "backward": part_backward, "decode": part_decode,
         "layer": part_layer,
         "variants": part_variants, "llm": part_llm, "dask": part_dask}
