"""Short run of the crash fuzzer (tests/fuzz_calls.py) in a child process.

The child dies if a call crashes the interpreter (segfault, abort), so the
exit code tells crash from pass; the summary line tells how many calls were
made and how many failed. The long run is
``python tests/fuzz_calls.py --calls 10000 --seed N``.
"""
import os
import re
import subprocess
import sys

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(TESTS)
SUMMARY = re.compile(r"^fuzz_calls: seed=(\d+) calls=(\d+) ok=(\d+) "
                     r"expected_errors=(\d+) unexpected_errors=(\d+) "
                     r"failures=(\d+) distinct=(\d+)",
                     re.M)


def run_fuzzer(*args, timeout=300):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep
               + os.environ.get("PYTHONPATH", ""), PYTHONFAULTHANDLER="1")
    return subprocess.run([sys.executable, os.path.join(TESTS, "fuzz_calls.py"),
                           *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_fuzz_short_run():
    calls = 3000
    r = run_fuzzer("--calls", str(calls), "--seed", "20240605")
    report = r.stdout[-6000:] + r.stderr[-4000:]
    assert r.returncode >= 0, f"fuzzer crashed (signal {-r.returncode}):\n" \
        + report
    m = SUMMARY.search(r.stdout)
    assert m, "no summary line:\n" + report
    seed, n, ok, errors, unexpected, failures, _ = map(int, m.groups())
    assert n == calls and ok + errors + unexpected == calls, report
    # both kinds of calls are exercised in quantity
    assert ok > calls // 5 and errors > calls // 5, report
    assert unexpected == 0 and failures == 0, report
    assert r.returncode == 0, report


def test_fuzz_replay_one_call():
    """--only replays one call of a seed (how a failure is reproduced)."""
    r = run_fuzzer("--seed", "7", "--only", "123", "--log")
    assert r.returncode in (0, 1), r.stdout + r.stderr
    assert r.stdout.startswith("[123] "), r.stdout
    m = SUMMARY.search(r.stdout)
    assert m and int(m.group(2)) == 1, r.stdout
