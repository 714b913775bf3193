"""Shared pytest setup: run against the checkout's attnpy, restore global
state (thread count, kernel path) after every test."""
import os
import sys

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
if sys.path[:1] != [ROOT]:
    sys.path.insert(0, ROOT)
if TESTS not in sys.path:  # _arrays.py, _grad_np.py for tests in subfolders
    sys.path.insert(1, TESTS)


@pytest.fixture(autouse=True)
def _restore_attnpy_state():
    import attnpy
    from attnpy import _core
    threads, isa = attnpy.get_num_threads(), _core.isa()
    yield
    attnpy.set_num_threads(threads)
    _core.set_isa(isa)
