"""The suite under pytest-xdist (the README's `python -m pytest -n auto`).

-n auto starts one worker per CPU, no more than the free memory holds at
1 GiB a worker (tests/_workers.py).

The oracle store's check and record modes need every stored entry in one
process (which ones the tests read, the files written at the end): with
-n each worker would see a part, and check would call the others' entries
unread. So they refuse -n with a usage error, before any test runs.
"""
import os
import subprocess
import sys

import pytest

import _workers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("mode", ["check", "record"])
def test_oracle_check_and_record_refuse_workers(mode):
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2",
         f"--oracle={mode}", "tests/positional/test_rotary.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout + r.stderr
    assert f"--oracle {mode} runs in one process" in r.stderr, r.stderr
    assert "passed" not in r.stdout


@pytest.mark.parametrize("cpus, free_gib, want", [
    (8, 64, 8), (8, 4.5, 4), (2, 24, 2), (16, 0.2, 1), (1, 0, 1), (4, None, 4)])
def test_auto_workers_are_the_cpus_the_memory_holds(cpus, free_gib, want):
    free = None if free_gib is None else int(free_gib * _workers.WORKER_BYTES)
    assert _workers.auto_workers(cpus, free) == want


def test_auto_starts_the_workers_conftest_counts():
    """The hook is the one xdist asks: the count it prints is ours, and
    PYTEST_XDIST_AUTO_NUM_WORKERS still sets it."""
    env = {k: v for k, v in os.environ.items()
           if k != "PYTEST_XDIST_AUTO_NUM_WORKERS"}
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n",
         "auto", "-v", "tests/positional/test_rotary.py", "-k",
         "matches_numpy_models"],
        cwd=ROOT, capture_output=True, text=True, timeout=180, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    cpus = _workers.auto()
    assert f"created: {cpus}/{cpus} workers" in r.stdout, r.stdout
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n",
         "auto", "-v", "tests/positional/test_rotary.py", "-k",
         "matches_numpy_models"],
        cwd=ROOT, capture_output=True, text=True, timeout=180,
        env=dict(env, PYTEST_XDIST_AUTO_NUM_WORKERS="3"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "created: 3/3 workers" in r.stdout, r.stdout
