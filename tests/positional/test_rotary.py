"""rotary_embedding, checked against two NumPy implementations written the
way models write them (complex rotation for GPT-J's interleaved pairs,
``x * cos + rotate_half(x) * sin`` for GPT-NeoX / Llama) and against
attnpy.reference, in every layout, in place and through out=.
"""
import re

import numpy as np
import pytest

import attnpy
from attnpy import reference as ref

from _arrays import TOLERANCES, all_arrays, snapshot, strided_empty


def close(got, want, dtype=None):
    rtol, atol = TOLERANCES[np.dtype(dtype or got.dtype)]
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------
# RoPE: NumPy implementations of both conventions, as models write them
# ---------------------------------------------------------------------------

def _angles(T, E, offset, base):
    inv_freq = 1.0 / base ** (np.arange(0, E, 2, dtype=np.float64) / E)
    return np.outer(offset + np.arange(T), inv_freq)          # (T, E/2)


def rope_gptj(x, offset=0, base=10000.0):
    """Interleaved pairs as complex numbers times e^(i theta)."""
    T, E = x.shape[-2:]
    z = x[..., 0::2].astype(np.float64) + 1j * x[..., 1::2]
    z = z * np.exp(1j * _angles(T, E, offset, base))
    y = np.empty(x.shape, np.float64)
    y[..., 0::2], y[..., 1::2] = z.real, z.imag
    return y


def rope_neox(x, offset=0, base=10000.0):
    """Llama / GPT-NeoX: x * cos + rotate_half(x) * sin."""
    T, E = x.shape[-2:]
    th = _angles(T, E, offset, base)
    cos = np.concatenate([np.cos(th)] * 2, axis=-1)
    sin = np.concatenate([np.sin(th)] * 2, axis=-1)
    x = x.astype(np.float64)
    x1, x2 = x[..., :E // 2], x[..., E // 2:]
    return x * cos + np.concatenate([-x2, x1], axis=-1) * sin


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rope_reference_matches_numpy_models(interleaved, dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 7, 16)).astype(dtype)
    model = rope_gptj if interleaved else rope_neox
    for offset, base in ((0, 10000.0), (5, 10000.0), (1000, 500000.0)):
        want = model(x, offset, base)
        got = ref.rotary_embedding(x, offset=offset, base=base,
                                   interleaved=interleaved)
        assert got.dtype == dtype
        close(got, want)


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rope_matches_reference_and_models(interleaved, dtype):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 2, 9, 32)).astype(dtype)
    model = rope_gptj if interleaved else rope_neox
    for offset in (0, 1, 77):
        got = attnpy.rotary_embedding(x, offset=offset,
                                      interleaved=interleaved)
        assert got.dtype == dtype and got.shape == x.shape
        close(got, ref.rotary_embedding(x, offset=offset,
                                        interleaved=interleaved))
        close(got, model(x, offset))


def test_rope_generated_arrays_match_reference():
    rng = np.random.default_rng(10)
    shapes = [(3, 4), (2, 3, 6), (2, 1, 3, 8), (0, 4), (3, 0), (2, 0, 2)]
    for desc, x in all_arrays(rng, shapes=shapes):
        before = snapshot(x)
        got = attnpy.rotary_embedding(x, offset=3, interleaved=True)
        want = ref.rotary_embedding(x, offset=3, interleaved=True)
        assert got.dtype == want.dtype and got.shape == want.shape, desc
        close(got, want)
        assert snapshot(x) == before, desc   # the input is left alone
        out = strided_empty(x.shape, want.dtype)
        assert attnpy.rotary_embedding(x, offset=3, interleaved=True,
                                       out=out) is out
        close(out, want)


def test_rope_positions_offset_and_relative_angle():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 10, 8))
    full = attnpy.rotary_embedding(x)
    # the tail of a sequence is the sequence started at an offset
    np.testing.assert_allclose(attnpy.rotary_embedding(x[:, 6:], offset=6),
                               full[:, 6:], rtol=1e-14, atol=1e-14)
    # q_m . k_n depends on m - n only
    q, k = rng.standard_normal((2, 8))
    rq = attnpy.rotary_embedding(np.tile(q, (30, 1)))
    rk = attnpy.rotary_embedding(np.tile(k, (30, 1)))
    d1, d2 = rq[12] @ rk[9], rq[25] @ rk[22]
    assert abs(d1 - d2) < 1e-12 and abs(d1 - q @ k) > 1e-3
    # a rotation keeps the norm of every pair
    np.testing.assert_allclose(np.linalg.norm(full, axis=-1),
                               np.linalg.norm(x, axis=-1), rtol=1e-13)


def test_rope_in_place_out_and_layouts():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 5, 12)).astype(np.float32)
    want = attnpy.rotary_embedding(x)
    # a transposed (non-contiguous) view, rotated in place
    buf = np.ascontiguousarray(np.swapaxes(x, -1, -2))
    view = np.swapaxes(buf, -1, -2)
    assert attnpy.rotary_embedding(view, out=view) is view
    assert view.tobytes() == want.tobytes()
    out = np.empty_like(x)
    assert attnpy.rotary_embedding(x, out=out) is out
    assert out.tobytes() == want.tobytes()
    # float16 stays float16 (read in 16 bits, rounded once); int -> float64
    assert attnpy.rotary_embedding(x.astype(np.float16)).dtype == np.float16
    xi = np.arange(24).reshape(2, 12)
    close(attnpy.rotary_embedding(xi), ref.rotary_embedding(xi))


def test_rope_errors():
    with pytest.raises(ValueError, match=r"rotary_embedding.*odd.*\(2, 5\)"):
        attnpy.rotary_embedding(np.zeros((2, 5)))
    with pytest.raises(ValueError, match="rotary_embedding"):
        ref.rotary_embedding(np.zeros((2, 5)))
    with pytest.raises(ValueError, match="rotary_embedding: x"):
        attnpy.rotary_embedding(np.zeros(4))
    with pytest.raises(TypeError, match="rotary_embedding: x"):
        attnpy.rotary_embedding(np.zeros((2, 4), np.complex128))
    with pytest.raises(ValueError, match="rotary_embedding: offset"):
        attnpy.rotary_embedding(np.zeros((2, 4)), offset=-1)
    with pytest.raises(ValueError, match="rotary_embedding: base"):
        attnpy.rotary_embedding(np.zeros((2, 4)), base=0)
    with pytest.raises(ValueError, match=r"rotary_embedding: out .*\(2, 6\)"):
        attnpy.rotary_embedding(np.zeros((2, 4)), out=np.zeros((2, 6)))
    with pytest.raises(TypeError,
                       match="rotary_embedding: interleaved must be True or "
                             "False, got ndarray"):
        attnpy.rotary_embedding(np.zeros((2, 4)),
                                interleaved=np.array([True, False]))
    x = np.arange(8.0).reshape(2, 4)
    for same in (np.True_, 1, np.int64(1)):     # as before: 0 / 1 work
        np.testing.assert_array_equal(
            attnpy.rotary_embedding(x, interleaved=same),
            attnpy.rotary_embedding(x, interleaved=True))


@pytest.mark.parametrize("f", [attnpy.rotary_embedding,
                               attnpy.add_positional_encoding],
                         ids=lambda f: f.__name__)
def test_offset_past_float64_is_refused_with_a_message(f):
    """Positions are float64 numbers: an offset float64 cannot hold is
    refused with a message (10**400 was a bare OverflowError); large ones
    it can hold compute as the NumPy twin does."""
    x = np.zeros((3, 4))
    twin = getattr(ref, f.__name__)
    np.testing.assert_allclose(f(x.copy(), offset=10 ** 20),
                               twin(x.copy(), offset=10 ** 20), atol=1e-12)
    with pytest.raises(ValueError, match=rf"^{f.__name__}: offset "
                       r"1\.000e\+400 is past the largest float64"):
        f(x, offset=10 ** 400)
