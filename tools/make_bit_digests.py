#!/usr/bin/env python3
"""Write (or check) the digests of the bits batteries.

    python tools/make_bit_digests.py             writes both tables
    python tools/make_bit_digests.py --check     fails if either is stale
    python tools/make_bit_digests.py --only c    (or py) one of them

The two batteries, each run once on the "portable" set (attnpy's plain C
kernels: the numeric rule every other set follows) with one thread:

py  tests/_battery.py, calls of the public functions, stored in
    tests/data/bits_digests.json; the fast suite checks every set this
    machine runs, at 1 to 4 threads, against these digests
    (tests/attention/test_bits_battery.py), and tools/test_wheel.sh does
    on AArch64 under qemu. Needs attnpy importable (built).
c   tests/c/test_bits.c, calls of the C core's entry points: this script
    compiles the core and test_bits.c (with BITS_NO_EXPECTED, so that a
    stale or missing table never stands in the way; $CC, default cc, and
    $CFLAGS, default -O1), runs ``test_bits --print`` and writes
    tests/c/bits_expected.h, the table test_bits includes (it reads no
    file, so it runs as it is under wine and qemu); test_bits checks
    every set at 1 to 4 threads against it, natively, under
    tools/cross_aarch64.sh (NEON) and tools/cross_windows.sh. Needs only
    a C compiler.

Never edit the tables by hand. After a deliberate change of the numbers
(a kernel's order of operations, a polynomial), rerun this script: it
lists the cases whose digests changed (and those added or removed), as
does the diff of the files; check that exactly the cases the change
should touch changed, and commit the tables with the change. A digest
changed by anything else is a finding, not a refresh.
"""
import argparse
import difflib
import glob
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATH = os.path.join(ROOT, "tests", "data", "bits_digests.json")
HEADER = os.path.join(ROOT, "tests", "c", "bits_expected.h")
SOURCE = os.path.join(ROOT, "tests", "c", "test_bits.c")
LINE = re.compile(r"^([!-~]+) ([0-9a-f]{64})$")


# --- the Python battery -------------------------------------------------------
def compute():
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import _battery  # noqa: E402
    import attnpy  # noqa: E402
    old_isa, old_threads = attnpy.set_isa("portable"), attnpy.set_num_threads(1)
    try:
        return {"set": "portable", "threads": 1,
                "digests": _battery.run()}
    finally:
        attnpy.set_isa(old_isa)
        attnpy.set_num_threads(old_threads)


def py_table(check):
    """Write or check tests/data/bits_digests.json; 0 when fine."""
    data = compute()
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    if check:
        with open(PATH, encoding="utf-8") as f:
            stored = json.load(f)
        bad = sorted(k for k in set(data["digests"]) | set(stored["digests"])
                     if data["digests"].get(k) != stored["digests"].get(k))
        if bad:
            print(f"make_bit_digests: {len(bad)} of {len(data['digests'])} "
                  f"digests differ from {PATH}:", *bad[:20], sep="\n  ")
            return 1
        print(f"make_bit_digests: {len(bad)} differ; "
              f"{len(data['digests'])} digests OK")
        return 0
    with open(PATH, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"make_bit_digests: {len(data['digests'])} digests -> {PATH}")
    return 0


# --- the C battery ------------------------------------------------------------
def c_build(out):
    """Compile the core and test_bits.c into out; return the program."""
    cc = shlex.split(os.environ.get("CC", "cc"))
    flags = (["-std=c11", "-Wall", "-Wextra", "-pthread"]
             + shlex.split(os.environ.get("CFLAGS", "-O1"))
             + ["-I" + os.path.join(ROOT, "csrc", "core"),
                "-I" + os.path.join(ROOT, "tests", "c")])
    # the core as tools/c_tests.sh links it: csrc/core/*/*.c
    srcs = sorted(glob.glob(os.path.join(ROOT, "csrc", "core", "*", "*.c")))

    def compile_one(src):
        obj = os.path.join(out, os.path.basename(src)[:-2] + ".o")
        subprocess.run(cc + flags + ["-c", src, "-o", obj], check=True)
        return obj

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        objs = list(pool.map(compile_one, srcs))
    prog = os.path.join(out, "test_bits")
    subprocess.run(cc + flags + ["-DBITS_NO_EXPECTED", SOURCE, "-o", prog]
                   + objs + ["-lm"], check=True)
    return prog


def c_digests(prog):
    """[(name, digest)] in the battery's order, from test_bits --print."""
    run = subprocess.run([prog, "--print"], capture_output=True, text=True,
                         check=True)
    rows, seen = [], set()
    for line in run.stdout.splitlines():
        m = LINE.match(line)
        if not m:
            sys.exit(f"make_bit_digests: unexpected output line: {line!r}")
        name, digest = m.groups()
        if '"' in name or "\\" in name:
            sys.exit(f"make_bit_digests: a case name needs no escape: {name}")
        if name in seen:
            sys.exit(f"make_bit_digests: two cases named {name}")
        seen.add(name)
        rows.append((name, digest))
    if len(rows) < 100:
        sys.exit(f"make_bit_digests: only {len(rows)} cases printed")
    return rows


def c_render(rows):
    """The header's text."""
    head = f"""\
/*
 * tests/c/bits_expected.h -- GENERATED by tools/make_bit_digests.py from
 * `test_bits --print` ("portable", one thread): do not edit by hand.
 * The expected SHA-256 digest of each case of the C digest battery
 * (tests/c/test_bits.c), {len(rows)} cases, in the battery's order.
 *
 * After a deliberate numeric change, rerun the script: it lists the
 * cases whose digests changed, and the diff of this file shows them.
 */
/* clang-format off */
static const bits_digest bits_expected[] = {{
"""
    body = "".join(f'    {{"{n}",\n     "{d}"}},\n' for n, d in rows)
    return head + body + "    {NULL, NULL}};\n"


def c_report(old, rows):
    """Print which cases changed, were added or removed against old."""
    new = dict(rows)
    changed = [n for n, d in rows if n in old and old[n] != d]
    added = [n for n, _ in rows if n not in old]
    removed = [n for n in old if n not in new]
    for what, names in (("changed", changed), ("added", added),
                        ("removed", removed)):
        for n in names[:40]:
            print(f"  {what}: {n}")
        if len(names) > 40:
            print(f"  ... and {len(names) - 40} more {what}")
    print(f"make_bit_digests: C battery, {len(rows)} cases; {len(changed)} "
          f"changed, {len(added)} added, {len(removed)} removed")


def c_table(check):
    """Write or check tests/c/bits_expected.h; 0 when fine."""
    with tempfile.TemporaryDirectory(prefix="attnpy-bits.") as tmp:
        rows = c_digests(c_build(tmp))
    text = c_render(rows)
    old_text = ""
    if os.path.exists(HEADER):
        with open(HEADER, encoding="utf-8") as f:
            old_text = f.read()
    c_report(dict(re.findall(r'\{"([^"]+)",\s*"([0-9a-f]{64})"\}', old_text)),
             rows)
    if check:
        if text != old_text:
            sys.stdout.writelines(difflib.unified_diff(
                old_text.splitlines(True), text.splitlines(True),
                "tests/c/bits_expected.h (committed)",
                "tests/c/bits_expected.h (generated)"))
            print("make_bit_digests: tests/c/bits_expected.h is out of date")
            return 1
        print("make_bit_digests: tests/c/bits_expected.h is up to date")
        return 0
    if text != old_text:
        with open(HEADER, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"make_bit_digests: {len(rows)} digests -> {HEADER}")
    else:
        print("make_bit_digests: tests/c/bits_expected.h unchanged")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true",
                   help="fail if the stored digests differ from a new run")
    p.add_argument("--only", choices=("py", "c"),
                   help="one battery: py (tests/_battery.py) or c "
                        "(tests/c/test_bits.c); default both")
    opt = p.parse_args(argv)
    status = 0
    if opt.only in (None, "py"):
        status |= py_table(opt.check)
    if opt.only in (None, "c"):
        status |= c_table(opt.check)
    return status


if __name__ == "__main__":
    sys.exit(main())
