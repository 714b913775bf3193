"""attnpy._core.read_bytes, the benchmark's streaming read (private): it
reads every byte of the arrays it is given, on every instruction set and
thread count, and refuses what is not a list of contiguous arrays with an
error naming the argument. Here rather than under tests/bench, so that
the sanitized run covers its C."""
import sys

import numpy as np
import pytest

import attnpy

def _words_sum(arrays):
    """The sum read_bytes promises: native 64-bit words modulo 2**64, each
    array's last partial word padded with zero bytes."""
    total = 0
    for a in arrays:
        b = np.frombuffer(np.asarray(a).tobytes(order="A"), np.uint8)
        b = np.concatenate([b, np.zeros(-b.size % 8, np.uint8)])
        total += int(b.view(np.uint64).sum(dtype=np.uint64))
    return total % 2 ** 64


@pytest.mark.parametrize("name", attnpy.isas())
def test_read_bytes_reads_every_byte(name):
    rng = np.random.default_rng(3)
    arrays = [rng.integers(0, 256, n, dtype=np.uint8) for n in (0, 1, 7, 8, 9, 65536 + 3)]
    arrays += [rng.standard_normal((3, 70001)).astype(np.float32),
               np.asfortranarray(rng.standard_normal((257, 300))),
               np.full(2 ** 17 + 5, 255, np.uint8)]
    old, threads0 = attnpy.set_isa(name), attnpy.get_num_threads()
    try:
        for threads in (1, 2):
            attnpy.set_num_threads(threads)
            assert attnpy._core.read_bytes(arrays) == _words_sum(arrays)
            assert attnpy._core.read_bytes(tuple(arrays[-2:])) == _words_sum(arrays[-2:])
            assert attnpy._core.read_bytes([]) == 0
    finally:
        attnpy.set_isa(old)
        attnpy.set_num_threads(threads0)
    # every byte counts: one changed byte changes the sum
    a = np.zeros(100003, np.uint8)
    before = attnpy._core.read_bytes([a])
    a[100002] = 1
    assert attnpy._core.read_bytes([a]) == before + (1 << 8 * (100002 % 8)
                                                     if sys.byteorder == "little" else
                                                     1 << 8 * (7 - 100002 % 8))


def test_read_bytes_rejects_bad_input():
    with pytest.raises(TypeError, match=r"read_bytes: arrays must be a list or tuple of "
                                        r"NumPy arrays, got numpy.ndarray"):
        attnpy._core.read_bytes(np.zeros(4))
    with pytest.raises(TypeError, match=r"read_bytes: arrays\[1\] must be a NumPy array, "
                                        r"got bytes"):
        attnpy._core.read_bytes([np.zeros(4), b"abcd"])
    with pytest.raises(ValueError, match=r"read_bytes: arrays\[0\] \(shape \(4, 2\)\) is not "
                                         r"contiguous: it must be one block of memory"):
        attnpy._core.read_bytes([np.zeros((4, 4))[:, ::2]])
    with pytest.raises(TypeError):
        attnpy._core.read_bytes()
