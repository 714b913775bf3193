"""Write (or check) the digests of the bits battery.

    python tools/make_bit_digests.py            writes tests/data/bits_digests.json
    python tools/make_bit_digests.py --check    fails if the file is stale

The battery (tests/_battery.py) runs once, on the "portable" set (attnpy's
plain C kernels: the numeric rule every other set follows) with one
thread; the fast suite then checks every set this machine runs, at 1 to 4
threads, against these digests (tests/attention/test_bits_battery.py),
and tools/test_wheel.sh does on AArch64 under qemu. After a deliberate
change of the numbers, rerun this script: the diff of the file names the
cases that changed.
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATH = os.path.join(ROOT, "tests", "data", "bits_digests.json")


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


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true",
                   help="fail if the stored digests differ from a new run")
    opt = p.parse_args(argv)
    data = compute()
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    if opt.check:
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


if __name__ == "__main__":
    sys.exit(main())
