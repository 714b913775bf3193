"""Shared pytest setup: run against the checkout's attnpy, restore global
state (thread count, kernel path) after every test."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if sys.path[:1] != [ROOT]:
    sys.path.insert(0, ROOT)


@pytest.fixture(autouse=True)
def _restore_attnpy_state():
    import attnpy
    from attnpy import _core
    threads, isa = attnpy.get_num_threads(), _core.isa()
    yield
    attnpy.set_num_threads(threads)
    _core.set_isa(isa)
