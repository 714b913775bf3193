"""The suite under pytest-xdist (the README's `python -m pytest -n auto`).

-n auto starts one worker per CPU, no more than the free memory holds at
1 GiB a worker (tests/_workers.py).

The oracle store's check and record modes need every stored entry in one
process (which ones the tests read, the files written at the end): with
-n each worker would see a part, and check would call the others' entries
unread. So they refuse -n with a usage error, before any test runs.
"""
import os
import re
import subprocess
import sys

import pytest

import _workers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _pytest(*args, **env):
    """A child pytest on one small test file (tests/positional/test_rotary.py),
    PYTEST_XDIST_AUTO_NUM_WORKERS only as env gives it."""
    base = {k: v for k, v in os.environ.items()
            if k != "PYTEST_XDIST_AUTO_NUM_WORKERS"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args,
         "tests/positional/test_rotary.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=180,
        env=dict(base, **env))


@pytest.mark.parametrize("mode", ["check", "record"])
def test_oracle_check_and_record_refuse_workers(mode):
    r = _pytest("-n", "2", f"--oracle={mode}")
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout + r.stderr
    assert f"--oracle {mode} runs in one process" in r.stderr, r.stderr
    assert "passed" not in r.stdout


@pytest.mark.parametrize("cpus, free_gib, want", [
    (8, 64, 8), (8, 4.5, 4), (2, 24, 2), (16, 0.2, 1), (1, 0, 1), (4, None, 4)])
def test_auto_workers_are_the_cpus_the_memory_holds(cpus, free_gib, want):
    free = None if free_gib is None else int(free_gib * _workers.WORKER_BYTES)
    assert _workers.auto_workers(cpus, free) == want


def _run_rotary(**env):
    """pytest -n auto on the small file; its output."""
    r = _pytest("-n", "auto", "-v", "-k", "matches_numpy_models", **env)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_auto_starts_the_workers_conftest_counts():
    """The hook is the one xdist asks: the count it prints is ours (the
    free memory may change while the child starts: either count before or
    after), and PYTEST_XDIST_AUTO_NUM_WORKERS still sets it."""
    before = _workers.auto()
    out = _run_rotary()
    counts = {before, _workers.auto()}
    m = re.search(r"created: (\d+)/(\d+) workers?", out)
    assert m and m[1] == m[2] and int(m[1]) in counts, (counts, out)
    assert "created: 3/3 workers" in _run_rotary(
        PYTEST_XDIST_AUTO_NUM_WORKERS="3")


@pytest.mark.parametrize("proc, limit, usage, want", [
    ("0::/\n", "4294967296\n", "1073741824\n", 3 << 30),  # v2: 4 GiB, 1 used
    ("0::/\n", "max\n", "1073741824\n", None),             # v2: no limit
    ("4:memory:/job\n0::/\n", "2147483648\n", "0\n", 2 << 30)])  # v1
def test_cgroup_room_reads_a_containers_limit(tmp_path, proc, limit, usage,
                                              want):
    """A container's memory limit bounds the workers (MemAvailable is the
    host's there)."""
    (tmp_path / "cgroup").write_text(proc)
    v1 = ":memory:" in proc
    d = tmp_path / "fs" / ("memory/job" if v1 else "")
    d.mkdir(parents=True)
    names = (("memory.limit_in_bytes", "memory.usage_in_bytes") if v1
             else ("memory.max", "memory.current"))
    (d / names[0]).write_text(limit)
    (d / names[1]).write_text(usage)
    assert _workers.cgroup_room(str(tmp_path / "cgroup"),
                                str(tmp_path / "fs")) == want
