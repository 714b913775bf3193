"""attnpy.quantized_matmul: GGUF Q4_1 / Q8_0 blocks against gguf's own
dequantizer, the NumPy twin, and the kernel's summation order computed
exactly in NumPy (bit for bit, on every instruction set and thread
count). Real tensors of SmolLM2's file: tests/llm/test_smollm2.py (which
has the model loaded already)."""
import numpy as np
import pytest

import attnpy
from attnpy import _core
from attnpy.reference.quant import dequantize
from _qblocks import make_blocks, ordered_matmul

QTYPES = ["q4_1", "q8_0"]


@pytest.fixture
def isa_restored():
    yield
    _core.set_isa("auto")


@pytest.mark.parametrize("qtype", QTYPES)
def test_twin_decodes_as_gguf(qtype):
    import gguf  # a test dependency (pyproject: test extra)
    rng = np.random.default_rng(1)
    w = make_blocks(rng, 7, 96, qtype)
    want = gguf.dequantize(w, getattr(gguf.GGMLQuantizationType,
                                      qtype.upper()))
    assert want.dtype == np.float32
    np.testing.assert_array_equal(dequantize(w, qtype), want)


@pytest.mark.parametrize("qtype", QTYPES)
def test_bits_are_the_fixed_order_on_every_isa(qtype, isa_restored):
    rng = np.random.default_rng(2)
    # N = 23: groups of 4 rows (AVX-512) and 2 (AVX2) plus leftovers;
    # K = 160: 5 blocks
    w = make_blocks(rng, 23, 160, qtype)
    x = rng.standard_normal((3, 160)).astype(np.float32)
    want = ordered_matmul(x, dequantize(w, qtype))
    isas = attnpy.isas()
    assert "portable" in isas
    for name in isas:
        _core.set_isa(name)
        got = attnpy.quantized_matmul(x, w, qtype)
        np.testing.assert_array_equal(got, want, err_msg=name)


@pytest.mark.parametrize("qtype", QTYPES)
def test_against_the_twin_batched_1d_and_strided(qtype):
    rng = np.random.default_rng(3)
    w = make_blocks(rng, 40, 64, qtype)
    x = rng.standard_normal((2, 3, 64)).astype(np.float32)
    want = attnpy.reference.quantized_matmul(x, w, qtype)
    got = attnpy.quantized_matmul(x, w, qtype)
    assert got.shape == (2, 3, 40) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # each row alone, 1-D: the same bits as inside the batch
    np.testing.assert_array_equal(attnpy.quantized_matmul(x[1, 2], w, qtype),
                                  got[1, 2])
    # non-contiguous x (every other feature of a wider array), strided
    # weight rows, big-endian x: the values decide, not the layout
    wide = np.zeros((2, 3, 128), np.float32)
    wide[..., ::2] = x
    np.testing.assert_array_equal(
        attnpy.quantized_matmul(wide[..., ::2], w, qtype), got)
    wpad = np.zeros((40, w.shape[1] + 8), np.uint8)
    wpad[:, :w.shape[1]] = w
    np.testing.assert_array_equal(
        attnpy.quantized_matmul(x, wpad[:, :w.shape[1]], qtype), got)
    np.testing.assert_array_equal(
        attnpy.quantized_matmul(x.astype(">f4"), w, qtype), got)


def test_out_fresh_strided_and_aliasing():
    rng = np.random.default_rng(4)
    w = make_blocks(rng, 32, 32, "q4_1")
    x = rng.standard_normal((4, 32)).astype(np.float32)
    want = attnpy.quantized_matmul(x, w, "q4_1")
    out = np.empty((4, 32), np.float32)
    assert attnpy.quantized_matmul(x, w, "q4_1", out=out) is out
    np.testing.assert_array_equal(out, want)
    out_t = np.empty((32, 4), np.float32).T
    assert attnpy.quantized_matmul(x, w, "q4_1", out=out_t) is out_t
    np.testing.assert_array_equal(out_t, want)
    xa = x.copy()                       # out is x itself (N == K)
    attnpy.quantized_matmul(xa, w, "q4_1", out=xa)
    np.testing.assert_array_equal(xa, want)


@pytest.mark.parametrize("qtype", QTYPES)
def test_thread_count_does_not_change_the_bits(qtype):
    rng = np.random.default_rng(5)
    w = make_blocks(rng, 1000, 256, qtype)
    x = rng.standard_normal(256).astype(np.float32)
    before = attnpy.get_num_threads()
    try:
        runs = []
        for n in (1, 2, 3):
            attnpy.set_num_threads(n)
            runs.append(attnpy.quantized_matmul(x, w, qtype))
    finally:
        attnpy.set_num_threads(before)
    for r in runs[1:]:
        np.testing.assert_array_equal(r, runs[0])


def test_empty_and_zero_k():
    w = make_blocks(np.random.default_rng(7), 5, 32, "q8_0")
    assert attnpy.quantized_matmul(np.ones((0, 32), np.float32), w,
                                   "q8_0").shape == (0, 5)
    z = attnpy.quantized_matmul(np.ones((2, 0), np.float32),
                                np.zeros((3, 0), np.uint8), "q4_1")
    np.testing.assert_array_equal(z, np.zeros((2, 3), np.float32))


@pytest.mark.parametrize("qtype", ["q4_1", "q8_0"])
def test_empty_on_either_side_like_the_twin(qtype):
    """No rows of weight (N = 0), no x rows, K = 0: attnpy and the twin
    agree on shape and value (the twin once failed on N = 0)."""
    from attnpy.reference import quantized_matmul as twin
    nb = {"q4_1": 20, "q8_0": 34}[qtype]
    for x, w in ((np.ones((3, 64), np.float32), np.zeros((0, 2 * nb), np.uint8)),
                 (np.ones((0, 64), np.float32),
                  make_blocks(np.random.default_rng(8), 4, 64, qtype)),
                 (np.ones((2, 0), np.float32), np.zeros((3, 0), np.uint8))):
        got, want = attnpy.quantized_matmul(x, w, qtype), twin(x, w, qtype)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        assert dequantize(w, qtype).shape == (w.shape[0], x.shape[-1])


def test_bad_inputs_name_function_argument_and_shapes():
    rng = np.random.default_rng(8)
    w = make_blocks(rng, 4, 64, "q4_1")
    x = np.ones(64, np.float32)
    f = attnpy.quantized_matmul
    cases = [
        ((np.ones(48, np.float32), w, "q4_1"), ValueError, "multiple of 32"),
        ((x, w[:, :-1], "q4_1"), ValueError, r"weight.shape=\(4, 39\)"),
        ((x, w, "q8_0"), ValueError, "weight must have shape"),
        ((x, w, "q4_0"), ValueError, "qtype must be 'q4_1' or 'q8_0'"),
        ((x, w, 3), TypeError, "qtype must be a str"),
        ((x.astype(np.float64), w, "q4_1"), TypeError, "x must have dtype"),
        ((x, w.view(np.int8), "q4_1"), TypeError, "weight must have dtype"),
        ((np.float32(1), w, "q4_1"), ValueError, "at least 1 dimension"),
        ((x, w[0], "q4_1"), ValueError, "weight must have shape"),
    ]
    for args, exc, msg in cases:
        with pytest.raises(exc, match="quantized_matmul: .*" + msg):
            f(*args)
    with pytest.raises(ValueError, match="out has shape"):
        f(x, w, "q4_1", out=np.empty(5, np.float32))
    with pytest.raises(TypeError, match="out has dtype"):
        f(x, w, "q4_1", out=np.empty(4, np.float64))
    ro = np.empty(4, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        f(x, w, "q4_1", out=ro)


def test_the_binding_checks_what_it_is_given():
    """_core.qmatmul called directly (no wrapper): wrong shapes, dtypes,
    strides or overlapping out raise instead of reading out of bounds."""
    w = make_blocks(np.random.default_rng(9), 4, 64, "q8_0")
    x = np.ones((1, 64), np.float32)
    out = np.empty((1, 4), np.float32)
    q = _core.qmatmul
    with pytest.raises(ValueError, match="shapes do not fit"):
        q(x, w[:, :-2], out, qtype="q8_0")
    with pytest.raises(ValueError, match="shapes do not fit"):
        q(x, w, np.empty((1, 5), np.float32), qtype="q8_0")
    with pytest.raises(ValueError, match="unit-stride"):
        q(np.ones((1, 128), np.float32)[:, ::2], w, out, qtype="q8_0")
    with pytest.raises(TypeError, match="float32"):
        q(x.astype(np.float64), w, out, qtype="q8_0")
    with pytest.raises(ValueError, match="q4_1"):
        q(x, w, out, qtype="q5_0")
    buf = np.ones((1, 64), np.float32)
    with pytest.raises(ValueError, match="overlaps"):
        q(buf, w, buf[:, :4], qtype="q8_0")
    assert q(x, w, out, qtype="q8_0") is out
