"""The suite under pytest-xdist (the README's `python -m pytest -n auto`).

The oracle store's check and record modes need every stored entry in one
process (which ones the tests read, the files written at the end): with
-n each worker would see a part, and check would call the others' entries
unread. So they refuse -n with a usage error, before any test runs.
"""
import os
import subprocess
import sys

import pytest

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
