"""Shared pytest setup: run against the checkout's attnpy, put tests/ on
sys.path for the shared helpers (_arrays, _grad_np, _interrupt, fuzz_calls)
that the test folders import, restore global state (thread count, kernel
path) after every test."""
import os
import sys

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
for _p in (TESTS, ROOT):          # ROOT ends up first
    if _p in sys.path:
        sys.path.remove(_p)
    sys.path.insert(0, _p)


@pytest.fixture(autouse=True)
def _restore_attnpy_state():
    import attnpy
    from attnpy import _core
    threads, isa = attnpy.get_num_threads(), _core.isa()
    yield
    attnpy.set_num_threads(threads)
    _core.set_isa(isa)
