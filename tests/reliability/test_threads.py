"""Thread safety: concurrent calls, changing the thread count under a
running call, fork after a threaded call, Ctrl-C during a long call.

* 8 Python threads calling attention / scaled_dot_product_attention /
  softmax concurrently on shared inputs get results bit for bit equal to
  serial calls (the GIL is released while the core computes);
* the result does not depend on set_num_threads (attn.h: "Results do not
  depend on exec->nthreads"), even while another thread keeps changing it;
* errors raised in many threads at once are the right ones;
* a process that forks after a threaded call has a working child (a
  private thread pool must not deadlock the child, as libgomp would);
* SIGINT (Ctrl-C, Jupyter's "interrupt") stops a long call with
  KeyboardInterrupt and the process keeps working.
"""
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import _interrupt
import attnpy

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
N_THREADS = 8

rng = np.random.default_rng(11)
# big enough that a call spends most of its time in the core (GIL released)
Q = rng.standard_normal((2, 4, 48, 32))
K = rng.standard_normal((2, 4, 64, 32))
V = rng.standard_normal((2, 4, 64, 24))
MASK = rng.random((48, 64)) > 0.2
Q32, K32, V32 = (a.astype(np.float32) for a in (Q, K, V))


@pytest.fixture(autouse=True)
def _restore_threads():
    old = attnpy.get_num_threads()
    yield
    attnpy.set_num_threads(old)


def calls():
    """name -> zero-argument call returning a tuple of arrays."""
    sdpa = attnpy.scaled_dot_product_attention
    return {
        "attention": lambda: (attnpy.attention(Q, K, V, mask=MASK),),
        "attention-f32-causal": lambda: (attnpy.attention(
            Q32, K32, V32, causal=True),),
        "sdpa": lambda: sdpa(Q, K, V, causal="bottom_right"),
        "softmax": lambda: (attnpy.softmax(Q, axis=-2),),
    }


def run_threads(target, n=N_THREADS):
    """Run target(i) in n threads started together; re-raise the first
    exception of any thread."""
    barrier = threading.Barrier(n)
    errors = []

    def body(i):
        try:
            barrier.wait()
            target(i)
        except BaseException as e:  # noqa: BLE001 -- reported below
            errors.append(e)
    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive(), "a thread did not finish in 120 s"
    if errors:
        raise errors[0]


def same_bits(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert g.tobytes() == w.tobytes()


@pytest.mark.parametrize("nthreads", [1, 2, 4])
def test_concurrent_calls_equal_serial_bitwise(nthreads):
    attnpy.set_num_threads(nthreads)
    cs = calls()
    serial = {name: c() for name, c in cs.items()}
    names = list(cs)
    inputs = [a.copy() for a in (Q, K, V, MASK)]

    def work(i):
        for rep in range(20):
            name = names[(i + rep) % len(names)]
            same_bits(cs[name](), serial[name])
    run_threads(work)
    for a, a0 in zip((Q, K, V, MASK), inputs):
        assert a.tobytes() == a0.tobytes()


def test_concurrent_calls_into_own_out_arrays():
    want = attnpy.attention(Q, K, V)
    outs = [np.full(want.shape, np.nan) for _ in range(N_THREADS)]
    wouts = [np.full(Q.shape[:-1] + (K.shape[-2],), np.nan)
             for _ in range(N_THREADS)]
    w_want = attnpy.scaled_dot_product_attention(Q, K, V)[1]

    def work(i):
        for _ in range(4):
            attnpy.attention(Q, K, V, out=outs[i])
            assert outs[i].tobytes() == want.tobytes()
            attnpy.scaled_dot_product_attention(Q, K, V, out=outs[i],
                                                weights_out=wouts[i])
            assert wouts[i].tobytes() == w_want.tobytes()
    run_threads(work)


def test_concurrent_errors_are_the_right_ones():
    def work(i):
        for _ in range(50):
            with pytest.raises(ValueError, match=r"^attention: K has"):
                attnpy.attention(Q, K[..., :5], V)
            with pytest.raises(ValueError, match="fully_masked"):
                attnpy.attention(Q, K, V, mask=np.zeros((48, 64), bool),
                                 fully_masked="raise")
            with pytest.raises(TypeError, match=r"^attention: Q"):
                attnpy.attention(Q.astype(complex), K, V)
    run_threads(work)


def test_result_does_not_depend_on_thread_count():
    results = {}
    for n in (1, 2, 3, 4, 7, 16):
        attnpy.set_num_threads(n)
        results[n] = {name: c() for name, c in calls().items()}
    for n, res in results.items():
        for name in res:
            same_bits(res[name], results[1][name])


def test_set_num_threads_while_other_threads_compute():
    cs = calls()
    attnpy.set_num_threads(1)
    serial = {name: c() for name, c in cs.items()}
    stop = threading.Event()
    seen = set()

    def changer():
        k = 0
        while not stop.is_set():
            n = 1 + k % 5
            attnpy.set_num_threads(n)
            seen.add(attnpy.get_num_threads())
            k += 1

    t = threading.Thread(target=changer)
    t.start()
    try:
        def work(i):
            for rep in range(8):
                name = list(cs)[(i + rep) % len(cs)]
                same_bits(cs[name](), serial[name])
        run_threads(work, n=4)
    finally:
        stop.set()
        t.join()
    assert seen <= {1, 2, 3, 4, 5} and len(seen) > 1


def run_child(code, timeout):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep
               + os.environ.get("PYTHONPATH", ""), PYTHONFAULTHANDLER="1")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                          cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


FORK = """
    import os, sys, threading
    import numpy as np
    import attnpy

    rng = np.random.default_rng(3)
    Q, K, V = rng.standard_normal((3, 2, 4, 96, 32))
    attnpy.set_num_threads(4)
    want = attnpy.attention(Q, K, V, causal=True)   # threaded call first
    # and one from another Python thread too
    t = threading.Thread(target=attnpy.attention, args=(Q, K, V))
    t.start(); t.join()

    def child_body():
        got = attnpy.attention(Q, K, V, causal=True)
        ok = got.tobytes() == want.tobytes()
        attnpy.set_num_threads(2)
        ok &= attnpy.attention(Q, K, V, causal=True).tobytes() == want.tobytes()
        o, w = attnpy.scaled_dot_product_attention(Q, K, V, causal=True)
        ok &= o.tobytes() == want.tobytes()
        return ok

    pids = []
    for _ in range(3):
        pid = os.fork()
        if pid == 0:
            try:
                code = 0 if child_body() else 3
            except BaseException:
                code = 4
            os._exit(code)
        pids.append(pid)
    codes = [os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in pids]
    # the parent still works too
    same = attnpy.attention(Q, K, V, causal=True).tobytes() == want.tobytes()
    print("children", codes, "parent", same)
    sys.exit(0 if codes == [0, 0, 0] and same else 1)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this OS")
def test_fork_after_threaded_call():
    r = run_child(FORK, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "children [0, 0, 0] parent True" in r.stdout


# ~1e12 flops through broadcast views (no memory): minutes of work
CTRL_C_SETUP = """
    import numpy as np
    import attnpy
    Q = np.broadcast_to(np.ones((1, 1, 128)), (256, 4096, 128))
    V = np.broadcast_to(np.ones((1, 1, 1)), (256, 4096, 1))
"""
WORKS_AFTER = """
    import numpy as np, attnpy
    x = np.arange(12.0).reshape(2, 2, 3)
    print("works after:", np.allclose(attnpy.attention(x, x, x),
                                      attnpy.reference.attention(x, x, x)))
"""


def test_ctrl_c_interrupts_a_long_call():
    """attn.h: the core polls about every 100 ms, the binding turns SIGINT
    into KeyboardInterrupt. A notebook's "interrupt kernel" must work:
    promptly for the core's polling (tests/_interrupt.py), and the module
    works after."""
    code = _interrupt.child_code(CTRL_C_SETUP, "attnpy.attention(Q, Q, V)",
                                 1.0)
    code += "\n" + textwrap.dedent(WORKS_AFTER)
    try:
        r = run_child(code, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("SIGINT did not stop a long attention call within 60 s "
                    "(does the kernel call exec->poll?)")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.strip().splitlines()
    assert lines[-1] == "works after: True", r.stdout
    _interrupt.check("\n".join(lines[:-1]))
