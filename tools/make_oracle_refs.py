"""Make, or check, torch's results that the fast suite compares attnpy with
(tests/data/oracle/*.npz; tests/_oracle.py says how they are used).

    python tools/make_oracle_refs.py            # compute and write them
    python tools/make_oracle_refs.py --check    # compute, compare, write nothing

Both need the oracle extra (``pip install -e ".[oracle]"``: torch). The
tests that ask torch run under pytest with ``--oracle=record`` (write) or
``--oracle=check`` (each stored result must be torch's result today, for
the inputs the test makes today, and every stored entry must be asked
for); the tests marked ``oracle`` run against torch itself in both modes.
``--check`` is a step of ``.ci/run`` (tools/oracle_tests.sh). Further
arguments go to pytest (e.g. a test file, to remake only its entries).
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv):
    check = "--check" in argv
    rest = [a for a in argv if a != "--check"]
    try:
        import torch
    except ImportError:
        print("make_oracle_refs.py needs torch: pip install -e \".[oracle]\"",
              file=sys.stderr)
        return 2
    print(f"torch {torch.__version__}", flush=True)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
           "--oracle=" + ("check" if check else "record"),
           # every test that asks torch: browser tests never do; the slow
           # ones are among them (the addopts' -m is overridden here)
           "-m", "not browser", "--durations=5"]
    cmd += rest or ["tests"]
    return subprocess.call(cmd, cwd=ROOT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
