"""Leak tests: 5,000 calls (100,000 with ``pytest --full``, a CI step) of
each main function -- successful calls on
tiny inputs through every binding path (fresh results, out=, temporaries
for aliasing, dtype conversions, strided copies, broadcast batch offset
tables) and error-raising calls -- must leave unchanged:

* the resident set size (RSS, /proc/self/statm): growth < 2 MiB after a
  warm-up (it sees C-level leaks the other counts cannot: from ~1,200
  bytes per call at 5,000 calls, ~60 at 100,000; see the detector test);
* the number of blocks held by Python's allocator
  (sys.getallocatedblocks): a leaked object per call would add one per call;
* the reference counts of the inputs, of the dtype singletons the binding
  uses and of the option strings: a leaked reference per call would add
  one per call.

The C core's own leaks and memory errors: tools/valgrind.sh (a step of
.ci/run) and tools/sanitize.sh (LeakSanitizer).
"""
import gc
import os
import sys

import numpy as np
import pytest

import attnpy

N_CALLS = 5_000
N_CALLS_FULL = 100_000
RSS_SLACK = 2 << 20          # bytes
BLOCK_SLACK = 2_000          # pymalloc blocks
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

rng = np.random.default_rng(5)
Q = rng.standard_normal((2, 3, 4))
K = rng.standard_normal((2, 5, 4))
V = rng.standard_normal((2, 5, 6))
Q32, K32, V32 = (a.astype(np.float32) for a in (Q, K, V))
Qh = Q.astype(np.float16)
Qi = (Q * 10).astype(np.int32)
Qt = np.ascontiguousarray(np.swapaxes(Q, -1, -2)).swapaxes(-1, -2)
Qbig = Q.astype(">f8")
MASK = rng.random((3, 5)) > 0.3
MASKF = MASK.astype(np.float64)
BIAS = rng.standard_normal((2, 1, 3, 5))
OUT = np.empty((2, 3, 6))
OUT16 = np.empty((2, 3, 6), np.float16)   # narrower than a float32 result
WOUT = np.empty((2, 3, 5))
OUT_T = np.empty((2, 6, 3)).swapaxes(-1, -2)
SQ = rng.standard_normal((2, 4, 4))          # L = S = E = Ev: out=SQ aliases
X = rng.standard_normal((3, 7))
XOUT = np.empty((3, 7))
PE = np.empty((6, 8))
H4 = rng.standard_normal((2, 3, 4, 5))
HOUT = np.empty((2, 4, 15))
ZERO_S = np.zeros((2, 0, 4)), np.zeros((2, 0, 6))
RO = np.empty((2, 3, 6))
RO.flags.writeable = False
HUGE = np.broadcast_to(np.zeros((1, 1)), (2 ** 45, 1))
BCAST_Q = np.broadcast_to(Q[:1], (8, 2, 3, 4))
# the attention variants: 4 query heads on 2 K/V heads, slopes per head
GQ = rng.standard_normal((2, 4, 3, 4))
GK, GV = rng.standard_normal((2, 2, 2, 5, 4))
SLOPES = rng.uniform(0, 1, 4)
GOUT, GLSE = attnpy.attention(GQ, GK, GV, enable_gqa=True, return_lse=True)
V3 = np.ones((3, 5, 6))
M44 = np.ones((4, 4))
M0 = np.zeros((3, 5))
R32 = rng.standard_normal((2, 3, 6)).astype(np.float32)
LSE = rng.standard_normal((2, 3))
sdpa = attnpy.scaled_dot_product_attention
# Note: the calls below never create arrays with np.ones/np.zeros/np.empty
# without a dtype= inside the measured loop: NumPy 2.4 itself leaks one
# reference to dtype('float64') per such call (harmless: a static object).


def sq_aliased():
    a = SQ.copy()
    return attnpy.attention(a, SQ, SQ, out=a)


GOOD = {
    "attention": lambda: attnpy.attention(Q, K, V),
    "attention-variants": lambda: attnpy.attention(
        Q, K, V, causal=True, window=(1, None), softcap=2.0,
        alibi_slopes=SLOPES[:2, None]),
    "attention-gqa-alibi": lambda: attnpy.attention(
        GQ, GK, GV, enable_gqa=True, alibi_slopes=SLOPES),
    "attention_backward-variants": lambda: attnpy.attention_backward(
        GOUT, GQ, GK, GV, GOUT, GLSE, enable_gqa=True),
    "attention-f32": lambda: attnpy.attention(Q32, K32, V32),
    "attention-mask-bias-causal": lambda: attnpy.attention(
        Q, K, V, mask=MASK, bias=BIAS, causal="bottom_right"),
    "attention-float-mask-policy": lambda: attnpy.attention(
        Q, K, V, mask=MASKF, fully_masked="uniform", scale=0.5),
    "attention-converted-f16-int-bigendian": lambda: attnpy.attention(
        Qh, Qi, Qbig),
    "attention-strided-out": lambda: attnpy.attention(Qt, K, V, out=OUT_T),
    "attention-broadcast-batch": lambda: attnpy.attention(BCAST_Q, K, V),
    "attention-out-aliases-input": sq_aliased,
    "attention-S=0": lambda: attnpy.attention(Q, *ZERO_S,
                                              fully_masked="uniform"),
    "sdpa": lambda: sdpa(Q, K, V),
    "sdpa-out-weights_out": lambda: sdpa(Q, K, V, mask=MASK, out=OUT,
                                         weights_out=WOUT),
    "softmax": lambda: attnpy.softmax(X),
    "softmax-axis0-out": lambda: attnpy.softmax(X, axis=0, out=XOUT),
    "softmax-int": lambda: attnpy.softmax(Qi),
    "softmax_backward": lambda: attnpy.softmax_backward(X, X),
    "softmax_backward-axis0-out-f32": lambda: attnpy.softmax_backward(
        X, X.T.astype(np.float32).T, axis=0, out=XOUT),
    "softmax_jacobian-axis0": lambda: attnpy.softmax_jacobian(X, 0),
    "positional_encoding": lambda: attnpy.positional_encoding(6, 8),
    "positional_encoding-out-f32": lambda: attnpy.positional_encoding(
        6, 8, out=PE),
    "add_positional_encoding": lambda: attnpy.add_positional_encoding(
        PE, offset=3),
    "combine_heads": lambda: attnpy.combine_heads(H4),
    "combine_heads-out": lambda: attnpy.combine_heads(H4, out=HOUT),
    "split_heads": lambda: attnpy.split_heads(X[None], 7),
    "causal_mask": lambda: attnpy.causal_mask(4, 6, align="bottom_right"),
    "padding_mask": lambda: attnpy.padding_mask([1, 3], 4),
    "attention-decode-L1": lambda: attnpy.attention(Q[:, :1], K, V,
                                                    mask=MASK[:1]),
    "sdpa-decode-L1": lambda: sdpa(Q32[:, :1], K32, V32),
    "rotary_embedding": lambda: attnpy.rotary_embedding(X[:, :6], offset=2),
    "rotary_embedding-inplace-f32": lambda: attnpy.rotary_embedding(
        R32, out=R32, interleaved=True),
    "rotary_embedding-strided-out": lambda: attnpy.rotary_embedding(
        Qt, out=OUT_T[..., :4]),
    "merge_attention": lambda: attnpy.merge_attention([V[:, :3], OUT],
                                                      [LSE, LSE[:1]]),
}

BAD = {
    "attention-E-mismatch": (lambda: attnpy.attention(Q, V, V), ValueError),
    "attention-bad-window": (lambda: attnpy.attention(Q, K, V,
                                                      window=(-1, 0)),
                             ValueError),
    "attention-bad-alibi": (lambda: attnpy.attention(
        Q, K, V, alibi_slopes=SLOPES), ValueError),
    "attention-bad-softcap": (lambda: attnpy.attention(Q, K, V, softcap=0),
                              ValueError),
    "attention-gqa-heads": (lambda: attnpy.attention(
        GQ, GK[:, :1].repeat(3, 1), GV, enable_gqa=True), ValueError),
    "attention-batch-mismatch": (lambda: attnpy.attention(Q, K, V3),
                                 ValueError),
    "attention-complex": (lambda: attnpy.attention(Q.astype(complex), K, V),
                          TypeError),
    "attention-None": (lambda: attnpy.attention(Q, None, V), TypeError),
    "attention-bad-causal": (lambda: attnpy.attention(Q, K, V,
                                                      causal="sideways"),
                             ValueError),
    "attention-bad-mask-shape": (lambda: attnpy.attention(
        Q, K, V, mask=M44), ValueError),
    "attention-bad-scale": (lambda: attnpy.attention(Q, K, V, scale="x"),
                            TypeError),
    "attention-out-readonly": (lambda: attnpy.attention(Q, K, V, out=RO),
                               ValueError),
    "attention-out-wrong-dtype": (lambda: attnpy.attention(Q32, K32, V32,
                                                           out=OUT16),
                                  TypeError),
    "attention-fully-masked-raise": (lambda: attnpy.attention(
        Q, K, V, mask=M0, fully_masked="raise"), ValueError),
    "attention-too-big": (lambda: attnpy.attention(HUGE, HUGE, HUGE),
                          (MemoryError, ValueError)),
    "sdpa-bad-weights_out": (lambda: sdpa(Q, K, V, weights_out=OUT),
                             ValueError),
    "softmax-bad-axis": (lambda: attnpy.softmax(X, axis=5), ValueError),
    "softmax-bad-out": (lambda: attnpy.softmax(X, out=OUT), ValueError),
    "softmax-object": (lambda: attnpy.softmax(X.astype(object)), TypeError),
    "softmax_backward-shapes": (lambda: attnpy.softmax_backward(X, X.T),
                                ValueError),
    "softmax_backward-object": (lambda: attnpy.softmax_backward(
        X, X.astype(object)), TypeError),
    "softmax_jacobian-bad-axis": (lambda: attnpy.softmax_jacobian(X, 5),
                                  ValueError),
    "positional_encoding-bad-base": (lambda: attnpy.positional_encoding(
        4, 4, base=-1.0), ValueError),
    "add_positional_encoding-int": (lambda: attnpy.add_positional_encoding(
        Qi), TypeError),
    "combine_heads-2d": (lambda: attnpy.combine_heads(X), ValueError),
    "combine_heads-bad-out": (lambda: attnpy.combine_heads(H4, out=XOUT),
                              ValueError),
    "set_num_threads-0": (lambda: attnpy.set_num_threads(0), ValueError),
    "rotary_embedding-odd-E": (lambda: attnpy.rotary_embedding(X),
                               ValueError),
    "merge_attention-shapes": (lambda: attnpy.merge_attention(
        [OUT, OUT], [LSE, LSE[:, :2]]), ValueError),
    "merge_attention-complex": (lambda: attnpy.merge_attention(
        [OUT], [LSE.astype(complex)]), TypeError),
}

WATCHED = [Q, K, V, Q32, Qh, Qi, Qt, Qbig, MASK, MASKF, BIAS, OUT, WOUT, OUT_T,
           SQ, X, XOUT, PE, H4, HOUT, RO, HUGE, BCAST_Q, *ZERO_S, R32, LSE,
           GQ, GK, GV, SLOPES, GOUT, GLSE,
           np.dtype(np.float64), np.dtype(np.float32), np.dtype(bool),
           np.dtype(np.int32), np.dtype(np.float16),
           "zero", "uniform", "nan", "raise", "top_left", "bottom_right",
           attnpy.attention, sdpa]


def rss():
    """Resident set size in bytes from /proc (Linux); 0 elsewhere, where
    only the reference-count and allocator-block checks have teeth."""
    if not os.path.exists("/proc/self/statm"):
        return 0
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * PAGE


REF_NOISE = 2        # per n calls; a per-call leak changes counts by >= n


def refcounts():
    return [sys.getrefcount(o) for o in WATCHED]


def measure(call, n):
    for _ in range(n // 20):       # warm-up: caches, allocator arenas
        call()
    # cheap: what was alive at this module's start is frozen (gc.freeze,
    # tests/conftest.py), so this walks only what the calls made
    gc.collect()
    r0, b0, c0 = rss(), sys.getallocatedblocks(), refcounts()
    for _ in range(n):
        call()
    gc.collect()
    r1, b1, c1 = rss(), sys.getallocatedblocks(), refcounts()
    # a leak changes a count by about n; a change of one or two is another
    # part of the process (an earlier test's garbage, freed meanwhile)
    # dropping its reference to a shared object such as an interned string
    return r1 - r0, b1 - b0, [(repr(o)[:40], a, b) for o, a, b in
                              zip(WATCHED, c0, c1) if abs(a - b) > REF_NOISE]


@pytest.fixture(scope="module")
def n_calls(request):
    return N_CALLS_FULL if request.config.getoption("full") else N_CALLS


def check(call, n):
    drss, dblocks, refs = measure(call, n)
    assert not refs, f"reference counts changed (object, before, after): {refs}"
    assert dblocks < BLOCK_SLACK, f"{dblocks} more Python allocator blocks"
    if drss >= RSS_SLACK:
        # a leak grows the RSS again on every n calls; a one-off growth
        # (pages of code or of the heap touched once, seen in a CI run at
        # 2.2 MiB) does not: the second measurement decides
        drss = measure(call, n)[0]
    assert drss < RSS_SLACK, f"RSS grew by {drss / 2 ** 20:.1f} MiB"


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Leak checks measure the binding; the result is the same for any
    thread count (tests/reliability/test_threads.py)."""
    old = attnpy.set_num_threads(1)
    yield
    attnpy.set_num_threads(old)


@pytest.mark.parametrize("call", GOOD.values(), ids=GOOD.keys())
def test_no_leak_successful_calls(call, n_calls):
    call()  # it works at all
    check(call, n_calls)


@pytest.mark.parametrize("call, exc", BAD.values(), ids=BAD.keys())
def test_no_leak_failing_calls(call, exc, n_calls):
    def failing():
        try:
            call()
        except exc:
            return
        raise AssertionError("no exception")
    check(failing, n_calls)


def _trim_heap():
    """glibc's malloc_trim(0): the heap's free pages back to the system
    (elsewhere nothing)."""
    import ctypes
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):
        return
    trim.argtypes = [ctypes.c_size_t]
    trim(0)


def test_leak_detector_detects_a_leak(n_calls):
    """The measurement can fail, at the count the checks use: a call that
    keeps one array (48 MiB over the calls, at least 64 float64) and one
    extra reference to Q per call is caught by all three counts. The
    reference and allocator-block counts see a leaked object or reference
    of any size; RSS only sees a leak once it outgrows the heap's free
    pages plus the 2 MiB slack: ~4 MiB of them after the earlier tests of
    a full run, over 10 MiB when tests/reliability runs alone (a 12 MiB
    leak grew the RSS by 0.00 MiB there), so ~10 KiB a call at 5,000
    calls, ~500 bytes at 100,000 (--full). Which tests ran before this
    one in the same process varies under pytest-xdist, and with it the
    free pages: so glibc's free heap pages are given back first
    (malloc_trim), and the leak's arrays touch new pages."""
    kept = []
    size = max(64, (48 << 20) // (8 * n_calls))

    def leaky():
        kept.append((np.empty(size), Q))
    _trim_heap()
    drss, dblocks, refs = measure(leaky, n_calls)
    kept.clear()
    assert refs, "the extra references were not seen"
    assert dblocks >= n_calls, f"only {dblocks} more allocator blocks"
    assert drss > RSS_SLACK, f"RSS grew by only {drss / 2 ** 20:.2f} MiB"
    # check's second measurement (after a growth) sees a leak of raw
    # memory alone (no object, no pymalloc block) grow again; 36 MiB a
    # measurement, past the heap pages the arrays above left free
    import ctypes
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    raw = np.zeros(3 * n_calls, np.uint64)  # no Python object a call
    count = np.zeros(1, np.intp)

    def leaky_raw():
        p = libc.malloc(24 * size)
        ctypes.memset(p, 1, 24 * size)  # touched: resident
        raw[count[0]] = p
        count[0] += 1
    try:
        with pytest.raises(AssertionError, match="RSS grew"):
            check(leaky_raw, n_calls)
    finally:
        for p in raw[:count[0]]:
            libc.free(int(p))


def test_results_have_no_extra_references():
    """A fresh result is referenced only by the caller."""
    for call in (lambda: attnpy.attention(Q, K, V),
                 lambda: attnpy.rotary_embedding(X[:, :6]),
                 lambda: attnpy.softmax(X),
                 lambda: attnpy.combine_heads(H4),
                 lambda: attnpy.positional_encoding(3, 4)):
        r = call()
        assert sys.getrefcount(r) == 2   # r and getrefcount's argument
    o, w = sdpa(Q, K, V)
    assert sys.getrefcount(o) == 2 and sys.getrefcount(w) == 2
    o, lse = attnpy.merge_attention([OUT], [LSE])
    assert sys.getrefcount(o) == 2 and sys.getrefcount(lse) == 2
    r = sdpa(Q, K, V, out=OUT, weights_out=WOUT)
    assert r[0] is OUT and r[1] is WOUT
