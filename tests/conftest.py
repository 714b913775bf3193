"""Shared pytest setup: run against the checkout's attnpy, put tests/ on
sys.path for the shared helpers (_arrays, _grad_np, _interrupt, fuzz_calls,
_registry, _browser) that the test folders import, restore global state
(thread count, kernel path) after every test, keep what outlives a test
module out of the garbage collector's full passes, and one headless
Chromium for the browser tests (launched only when one of them runs)."""
import gc
import os
import sys

import pytest

# The C test programs (tests/c) are built with gcc/clang and pthreads for a
# POSIX host: elsewhere they are not collected. Windows builds and runs the
# same programs with mingw-w64 under wine: tools/cross_windows.sh, a step of
# .ci/run.
collect_ignore = [] if os.name == "posix" else ["c"]


def pytest_addoption(parser):
    parser.addoption(
        "--full", action="store_true", default=False,
        help="full counts: 100,000 calls per leak check instead of 5,000, "
             "60 random problems per C test program instead of their "
             "default 6-8 (a step of .ci/run; docs/guide/testing.md)")


TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
for _p in (TESTS, ROOT):          # ROOT ends up first
    if _p in sys.path:
        sys.path.remove(_p)
    sys.path.insert(0, _p)


@pytest.fixture(autouse=True, scope="module")
def _freeze_survivors():
    """At each test module's start: collect, then freeze (gc.freeze) what
    is still alive -- the imported modules (torch, transformers, dask ...:
    ~400,000 objects) and long-lived caches. Python's full collections,
    which the allocations of a test trigger now and then, and the leak
    checks' explicit ones then walk only what was made since, ~0.3 s less
    each in a full run. Cycles among frozen objects are never collected:
    only objects that survived a module boundary are frozen."""
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True)
def _restore_attnpy_state():
    import attnpy
    from attnpy import _core
    threads, isa = attnpy.get_num_threads(), _core.isa()
    yield
    attnpy.set_num_threads(threads)
    _core.set_isa(isa)


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium (tests/_browser.py), shared by tests/widgets and
    tests/docs."""
    import _browser
    p, b = _browser.launch()
    yield b
    _browser.close(p, b)


@pytest.fixture
def page(browser, request):
    """A fresh page of that browser whose ``errors`` list the test asserts
    empty; the test module sets its size (VIEWPORT) and whether failed
    requests count (CHECK_REQUESTS)."""
    import _browser
    pg = _browser.new_page(browser, *request.module.VIEWPORT,
                           requests=getattr(request.module,
                                            "CHECK_REQUESTS", False))
    yield pg
    pg.close()
