#!/usr/bin/env python3
"""Two builds of attnpy side by side: ``python -m attnpy bench`` run in
turns on each (before, after, after, before, ...), and attnpy's median
time of every row compared.

    python tools/bench_compare.py BEFORE_DIR AFTER_DIR [--rounds 3]
        [--out PREFIX] [--env NAME=VALUE ...] [-- BENCH ARGS...]

BEFORE_DIR and AFTER_DIR are checkouts with the extension built in place
(``python setup.py build_ext --inplace``); each bench runs with its
checkout first on ``sys.path``. The bench's own yardsticks (the tutorial,
torch, matmul) run in every run too; only attnpy's times are compared
here. Each round runs both builds, in alternating order, so that a slow
spell of a shared machine hits them alike. Printed per row: each build's
median over the rounds, and after / before (above 1: slower), with
every round's ratio; rows more than 5% slower are marked. The JSON of
every run is kept (PREFIX-before-1.json ...), and

    python tools/bench_compare.py --json BEFORE.json... -- AFTER.json...

compares stored runs."""
import argparse
import json
import os
import statistics
import subprocess
import sys

# the fields that name a row, in the order they are printed
ID_FIELDS = ("kind", "dtype", "causal", "shape", "B", "H", "L", "S", "E",
             "case", "d_model", "heads", "W")
# whose time is attnpy's, in a row's results
OWN = ("attnpy", "class", "float16", "bfloat16")


def rows_of(obj, path="", out=None):
    """{row name: attnpy's median seconds} of one bench JSON."""
    out = {} if out is None else out
    if isinstance(obj, dict):
        res = obj.get("results")
        if isinstance(res, dict):
            ident = [path] + ["%s=%s" % (k, obj[k]) for k in ID_FIELDS
                              if k in obj and not isinstance(obj[k], dict)]
            for who, r in res.items():
                if not isinstance(r, dict) or "median_s" not in r:
                    continue
                if who in OWN or who == obj.get("dtype"):
                    out[" ".join(ident + [who])] = r["median_s"]
        for k, v in obj.items():
            if k not in ("results", "meta", "targets"):
                rows_of(v, path + "/" + k if path else k, out)
    elif isinstance(obj, list):
        for v in obj:
            rows_of(v, path, out)
    return out


def run_bench(checkout, json_path, bench_args, env_extra):
    env = dict(os.environ)
    env.update(env_extra)
    env["PYTHONPATH"] = checkout + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-m", "attnpy", "bench", "--json", json_path]
    cmd += bench_args
    print("  $ (cd %s) %s" % (checkout, " ".join(cmd[1:])), flush=True)
    r = subprocess.run(cmd, cwd=checkout, env=env, capture_output=True,
                       text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stdout[-3000:] + r.stderr[-3000:])
        raise SystemExit("bench failed in %s" % checkout)
    with open(json_path) as fh:
        return json.load(fh)


def compare(before, after):
    """before, after: lists of bench JSONs, one per round."""
    b_rows = [rows_of(d) for d in before]
    a_rows = [rows_of(d) for d in after]
    names = [n for n in b_rows[0] if all(n in r for r in b_rows + a_rows)]
    for label, runs in (("before", before), ("after", after)):
        m = runs[0].get("meta", {})
        print("%s: attnpy from %s, isa %s, %s threads; %s" % (
            label, m.get("attnpy_path"), m.get("isa"), m.get("threads"),
            m.get("cpu")))
    print("%-78s %10s %10s %7s  %s" % ("row (attnpy's median)", "before ms",
                                       "after ms", "ratio", "per round"))
    slower = []
    for n in names:
        bs = [r[n] for r in b_rows]
        as_ = [r[n] for r in a_rows]
        per = [a / b for a, b in zip(as_, bs)]
        ratio = statistics.median(as_) / statistics.median(bs)
        mark = "  <-- slower" if ratio > 1.05 else ""
        if ratio > 1.05:
            slower.append(n)
        print("%-78s %10.3f %10.3f %7.3f  %s%s" % (
            n[:78], statistics.median(bs) * 1e3, statistics.median(as_) * 1e3,
            ratio, " ".join("%.3f" % p for p in per), mark))
    print("%d rows, %d more than 5%% slower (after / before > 1.05)"
          % (len(names), len(slower)))
    return slower


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    bench_args = []
    if "--" in argv:
        i = argv.index("--")
        argv, bench_args = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="*")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="bench-compare")
    ap.add_argument("--env", action="append", default=[],
                    help="NAME=VALUE for both builds' runs")
    ap.add_argument("--json", action="store_true",
                    help="compare stored JSON: BEFORE... -- AFTER...")
    a = ap.parse_args(argv)
    if a.json:
        before = [json.load(open(p)) for p in a.dirs]
        after = [json.load(open(p)) for p in bench_args]
        compare(before, after)
        return 0
    if len(a.dirs) != 2:
        ap.error("give BEFORE_DIR and AFTER_DIR")
    dirs = [os.path.abspath(d) for d in a.dirs]
    env_extra = dict(e.split("=", 1) for e in a.env)
    runs = {"before": [], "after": []}
    for r in range(a.rounds):
        order = ("before", "after") if r % 2 == 0 else ("after", "before")
        for label in order:
            d = dirs[0] if label == "before" else dirs[1]
            path = os.path.abspath("%s-%s-%d.json" % (a.out, label, r + 1))
            runs[label].append(run_bench(d, path, bench_args, env_extra))
    compare(runs["before"], runs["after"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
