"""Shared pytest setup: run against the checkout's attnpy, put tests/ on
sys.path for the shared helpers (_arrays, _grad_np, _interrupt, fuzz_calls,
_registry, _browser, _oracle, _workers) that the test folders import,
restore global state (thread count, kernel path) after every test, keep what outlives a
test module out of the garbage collector's full passes, torch's results
stored or computed (``--oracle``, the ``torch_oracle`` fixture:
tests/_oracle.py), and one headless Chromium for the browser tests
(launched only when one of them runs); under pytest-xdist, -n auto's
worker count (tests/_workers.py) and the oracle modes that need one
process."""
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
    parser.addoption(
        "--oracle", default="stored",
        choices=("stored", "live", "check", "record"),
        help="torch's results for the torch_oracle fixture: stored (the "
             "fast suite: tests/data/oracle, no torch needed), live "
             "(computed now and compared with the stored ones), check "
             "(live, and no stored entry left unread), record (computed "
             "and written); live, check and record run only the tests "
             "that ask torch (tests/_oracle.py, tools/make_oracle_refs.py)")


TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
for _p in (TESTS, ROOT):          # ROOT ends up first
    if _p in sys.path:
        sys.path.remove(_p)
    sys.path.insert(0, _p)


def pytest_configure(config):
    import _oracle
    mode = config.getoption("--oracle")
    # check and record hold one view of every stored entry (which ones
    # were read, the files written at the end): pytest-xdist's workers
    # would each hold a part, so both run in one process
    # (xdist turns -n N into N "popen" --tx entries before this hook)
    workers = (getattr(config, "workerinput", None) is not None
               or config.getoption("tx", None))
    if mode in ("check", "record") and workers:
        raise pytest.UsageError(
            f"--oracle {mode} runs in one process: leave out -n "
            f"(pytest-xdist)")
    config._oracle_store = _oracle.Store(mode)


@pytest.hookimpl(optionalhook=True)   # a hook of pytest-xdist, when there
def pytest_xdist_auto_num_workers(config):
    """pytest-xdist's count for -n auto: the CPUs, as many as the free
    memory holds (tests/_workers.py); PYTEST_XDIST_AUTO_NUM_WORKERS and
    -n logical keep xdist's own count."""
    if (os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS")
            or config.option.numprocesses == "logical"):
        return None          # xdist's own hook: the count asked for
    import _workers
    return _workers.auto()


def pytest_collection_modifyitems(config, items):
    """--oracle live / check / record: only the tests that ask torch (the
    torch_oracle fixture, or the oracle marker)."""
    if config.getoption("--oracle") == "stored":
        return
    keep, drop = [], []
    for item in items:
        uses = ("torch_oracle" in getattr(item, "fixturenames", ())
                or item.get_closest_marker("oracle") is not None)
        (keep if uses else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_sessionfinish(session, exitstatus):
    store = session.config._oracle_store
    for msg in store.finish():
        print("\n" + msg)
    if store.mode == "check" and not session.config.option.collectonly:
        unread = store.unread()
        if unread:
            print(f"\ntorch_oracle: {len(unread)} stored entries no test "
                  f"read (stale: remake with tools/make_oracle_refs.py), "
                  f"e.g. {unread[:5]}")
            session.exitstatus = 1


@pytest.fixture
def torch_oracle(request):
    """torch_oracle(name, compute, *inputs): torch's result for this test,
    stored or computed (tests/_oracle.py)."""
    store = request.config._oracle_store
    # the module that defines the test (tests imported by another module
    # share its entries)
    module = request.node.function.__module__.rsplit(".", 1)[-1]

    live_only = request.node.get_closest_marker("oracle") is not None

    def get(name, compute, *inputs):
        return store.get(module, request.node.name, name, compute, inputs,
                         live_only)
    return get


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
