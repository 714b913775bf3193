"""attnpy.dask: attention over Dask arrays equals attnpy.attention.

Chunkings along every axis (batch, heads, queries, keys), causal in both
alignments, masks, biases, broadcast K/V, every fully_masked policy, on the
threaded scheduler; then the same on a dask.distributed LocalCluster with
two worker processes started here, including a worker that dies mid-task.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import dask.array as da

import attnpy
import attnpy.dask

TOL = {np.float32: 2e-5, np.float64: 1e-12}


def data(shape_q, S, Ev=None, dtype=np.float64, seed=0, kv_batch=None):
    rng = np.random.default_rng(seed)
    *batch, L, E = shape_q
    kvb = tuple(batch) if kv_batch is None else kv_batch
    Q = rng.standard_normal(shape_q).astype(dtype)
    K = rng.standard_normal(kvb + (S, E)).astype(dtype)
    V = rng.standard_normal(kvb + (S, Ev or E)).astype(dtype)
    return Q, K, V


def check(got, want, dtype):
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype])


CHUNKS = [  # (Q chunks, K/V chunks) for Q (2, 3, 50, 8), K/V (2, 3, 70, 8)
    ((2, 3, 50, 8), (2, 3, 70, 8)),          # one block
    ((1, 1, 50, 8), (1, 1, 70, 8)),          # batch and heads split
    ((2, 3, 16, 8), (2, 3, 70, 8)),          # query blocks
    ((2, 3, 50, 8), (2, 3, 9, 8)),           # key blocks (8 of them: a tree)
    ((1, 2, 13, 8), (1, 2, 20, 8)),          # everything, uneven
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("causal", [False, True, "bottom_right"])
@pytest.mark.parametrize("qc, kc", CHUNKS)
def test_chunkings(dtype, causal, qc, kc):
    Q, K, V = data((2, 3, 50, 8), 70, dtype=dtype)
    want = attnpy.attention(Q, K, V, causal=causal)
    got = attnpy.dask.attention(da.from_array(Q, chunks=qc), da.from_array(K, chunks=kc),
                                da.from_array(V, chunks=kc), causal=causal,
                                split_every=3)
    assert isinstance(got, da.Array)
    check(got.compute(scheduler="threads"), want, dtype)


@pytest.mark.parametrize("causal", [True, "bottom_right"])
def test_causal_more_queries_than_keys(causal):
    # bottom_right with L > S: the first L - S rows see no key at all
    Q, K, V = data((1, 40, 4), 12, seed=1)
    want = attnpy.attention(Q, K, V, causal=causal)
    got = attnpy.dask.attention(da.from_array(Q, chunks=(1, 7, 4)),
                                da.from_array(K, chunks=(1, 5, 4)),
                                da.from_array(V, chunks=(1, 5, 4)), causal=causal)
    check(got.compute(), want, np.float64)


def test_future_key_blocks_are_never_computed():
    Q, K, V = data((1, 64, 4), 64, seed=2)
    got = attnpy.dask.attention(da.from_array(Q, chunks=(1, 16, 4)),
                                da.from_array(K, chunks=(1, 16, 4)),
                                da.from_array(V, chunks=(1, 16, 4)), causal=True)
    parts = [k for k in dict(got.__dask_graph__()) if "-part" in str(k[0])]
    assert len(parts) == 4 + 3 + 2 + 1            # the lower triangle of blocks
    check(got.compute(), attnpy.attention(Q, K, V, causal=True), np.float64)


@pytest.mark.parametrize("mask_kind", ["bool LS", "float 1S", "per batch"])
def test_mask_and_bias(mask_kind):
    rng = np.random.default_rng(3)
    Q, K, V = data((2, 2, 30, 8), 45, seed=3)
    if mask_kind == "bool LS":
        mask = rng.random((30, 45)) > 0.3
    elif mask_kind == "float 1S":
        mask = (rng.random((1, 45)) > 0.2).astype(float)
    else:
        mask = rng.random((2, 1, 30, 45)) > 0.5
    bias = rng.standard_normal((2, 1, 1, 45))
    want = attnpy.attention(Q, K, V, mask=mask, bias=bias, causal=True)
    dmask = da.from_array(mask, chunks=mask.shape) if mask_kind != "float 1S" else mask
    got = attnpy.dask.attention(da.from_array(Q, chunks=(1, 2, 11, 8)),
                                da.from_array(K, chunks=(2, 2, 10, 8)),
                                da.from_array(V, chunks=(2, 2, 10, 8)),
                                mask=dmask, bias=bias, causal=True)
    check(got.compute(), want, np.float64)


def test_broadcast_kv_and_numpy_inputs():
    # one K/V head for 4 query heads, K/V given as NumPy
    Q, K, V = data((2, 4, 20, 8), 33, seed=4, kv_batch=(2, 1))
    want = attnpy.attention(Q, K, V)
    got = attnpy.dask.attention(da.from_array(Q, chunks=(1, 2, 10, 8)), K, V)
    check(got.compute(), want, np.float64)


def gqa_data(dtype=np.float64, seed=10):
    """6 query heads over 2 K/V heads, a per-head mask and a shared bias;
    the expected result repeats K/V heads explicitly (head h reads K/V head
    h // 3), which is what enable_gqa means."""
    Q, K, V = data((2, 6, 24, 8), 40, dtype=dtype, seed=seed, kv_batch=(2, 2))
    rng = np.random.default_rng(seed + 1)
    mask = rng.random((2, 6, 24, 40)) > 0.2
    bias = rng.standard_normal((1, 24, 40)).astype(dtype)
    return Q, K, V, mask, bias


def gqa_want(Q, K, V, mask, bias, causal):
    g = Q.shape[-3] // K.shape[-3]
    return attnpy.attention(Q, np.repeat(K, g, axis=-3), np.repeat(V, g, axis=-3),
                            mask=mask, bias=bias, causal=causal)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("causal", [False, True, "bottom_right"])
@pytest.mark.parametrize("qc, kc", [((2, 6, 24, 8), (2, 2, 40, 8)),
                                    ((1, 2, 10, 8), (1, 1, 15, 8)),    # heads not aligned with groups
                                    ((2, 3, 24, 8), (2, 2, 7, 8))])
def test_gqa(dtype, causal, qc, kc):
    Q, K, V, mask, bias = gqa_data(dtype)
    want = gqa_want(Q, K, V, mask, bias, causal)
    got, lse = attnpy.dask.attention(
        da.from_array(Q, chunks=qc), da.from_array(K, chunks=kc),
        da.from_array(V, chunks=kc), mask=da.from_array(mask, chunks=(1, 3, 12, 20)),
        bias=bias, causal=causal, enable_gqa=True, return_lse=True)
    assert got.shape == Q.shape[:-1] + (8,) and lse.shape == Q.shape[:-1]
    check(got.compute(scheduler="threads"), want, dtype)
    check(want, attnpy.attention(Q, K, V, mask=mask, bias=bias, causal=causal,
                                 enable_gqa=True), dtype)   # the same contract


VARIANTS = [dict(window=(5, 0)), dict(window=(None, 3)), dict(window=(4, 6)),
            dict(alibi_slopes=2.0 ** -np.arange(1, 7)), dict(softcap=2.0),
            dict(window=(7, 2), alibi_slopes=np.linspace(0.1, 0.6, 6),
                 softcap=3.0)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("causal", [False, True, "bottom_right"])
@pytest.mark.parametrize("kw", VARIANTS)
def test_variants_at_their_place_in_the_sequence(dtype, causal, kw):
    """window, ALiBi and softcap over uneven query and key chunks equal the
    one-process call: each block sees global positions."""
    Q, K, V = data((2, 6, 30, 8), 41, dtype=dtype, seed=12)
    want = attnpy.attention(Q, K, V, causal=causal, **kw)
    got = attnpy.dask.attention(da.from_array(Q, chunks=(1, 4, 7, 8)),
                                da.from_array(K, chunks=(2, 6, 9, 8)),
                                da.from_array(V, chunks=(2, 6, 9, 8)),
                                causal=causal, split_every=2, **kw)
    check(got.compute(scheduler="threads"), want, dtype)


def test_variants_with_gqa_and_mask():
    Q, K, V, mask, bias = gqa_data(seed=13)
    slopes = np.linspace(0.05, 0.3, 6)
    kw = dict(window=(6, 1), alibi_slopes=slopes, softcap=4.0, causal="bottom_right")
    want = attnpy.attention(Q, K, V, mask=mask, bias=bias, enable_gqa=True, **kw)
    got = attnpy.dask.attention(da.from_array(Q, chunks=(1, 3, 10, 8)),
                                da.from_array(K, chunks=(1, 2, 9, 8)),
                                da.from_array(V, chunks=(1, 2, 9, 8)), mask=mask,
                                bias=bias, enable_gqa=True, **kw)
    check(got.compute(scheduler="threads"), want, np.float64)


def test_window_skips_pairs_outside_it():
    """A window of 4 keys over 8 key chunks: each query chunk's partials are
    only the key chunks its rows can see."""
    Q, K, V = data((1, 64, 4), 64, seed=14)
    got = attnpy.dask.attention(da.from_array(Q, chunks=(1, 8, 4)),
                                da.from_array(K, chunks=(1, 8, 4)),
                                da.from_array(V, chunks=(1, 8, 4)),
                                causal=True, window=(3, 0))
    parts = [k for k in dict(got.__dask_graph__()) if isinstance(k, tuple)
             and str(k[0]).endswith("-part")]
    assert len(parts) == 8 + 7          # its own chunk, and the one before
    check(got.compute(), attnpy.attention(Q, K, V, causal=True, window=(3, 0)),
          np.float64)


def test_variant_errors_are_named():
    Q, K, V = data((1, 6, 4), 10, seed=15)
    with pytest.raises(ValueError, match="window sides"):
        attnpy.dask.attention(Q, K, V, window=(-1, 2))
    with pytest.raises(TypeError, match="window must be"):
        attnpy.dask.attention(Q, K, V, window=3)
    with pytest.raises(ValueError, match="softcap"):
        attnpy.dask.attention(Q, K, V, softcap=0.0)
    with pytest.raises(ValueError, match="alibi_slopes of shape"):
        attnpy.dask.attention(Q, K, V, alibi_slopes=np.ones(3))


def test_gqa_bad_heads_are_named():
    Q, K, V, mask, bias = gqa_data()
    with pytest.raises(ValueError, match="multiple of the key/value heads"):
        attnpy.dask.attention(Q, K[:, :1].repeat(4, axis=1), V[:, :1].repeat(4, axis=1),
                              enable_gqa=True)
    with pytest.raises(ValueError, match="mask has 4 heads"):
        attnpy.dask.attention(Q, K, V, mask=mask[:, :4], enable_gqa=True)
    with pytest.raises(ValueError, match="needs a head axis"):
        attnpy.dask.attention(Q[0, 0], K[0, 0], V[0, 0], enable_gqa=True)


@pytest.mark.parametrize("policy", ["zero", "uniform", "nan"])
def test_fully_masked_policies(policy):
    Q, K, V = data((1, 6, 4), 10, seed=5)
    mask = np.ones((6, 10), bool)
    mask[2] = False                                  # row 2 sees nothing
    want = attnpy.attention(Q, K, V, mask=mask, fully_masked=policy)
    got = attnpy.dask.attention(da.from_array(Q, chunks=(1, 3, 4)),
                                da.from_array(K, chunks=(1, 4, 4)),
                                da.from_array(V, chunks=(1, 4, 4)),
                                mask=mask, fully_masked=policy).compute()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_fully_masked_raise_and_lse():
    Q, K, V = data((1, 6, 4), 10, seed=6)
    mask = np.ones((6, 10), bool)
    mask[4] = False
    kw = dict(mask=mask, fully_masked="raise")
    d = [da.from_array(x, chunks=(1, 3, 4)) for x in (Q, K, V)]
    with pytest.raises(ValueError, match="query row 4 may attend to no key"):
        attnpy.dask.attention(*d, **kw).compute()
    out, lse = attnpy.dask.attention(*d, mask=mask, return_lse=True)
    want_out, want_lse = attnpy.attention(Q, K, V, mask=mask, return_lse=True)
    np.testing.assert_allclose(out.compute(), want_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(lse.compute(), want_lse, rtol=1e-12, atol=1e-12)


def test_bad_input_is_named():
    Q, K, V = data((1, 6, 4), 10, seed=7)
    with pytest.raises(ValueError, match="K has 3 features but Q has 4"):
        attnpy.dask.attention(Q, K[..., :3], V)
    with pytest.raises(ValueError, match="fully_masked"):
        attnpy.dask.attention(Q, K, V, fully_masked="ignore")
    with pytest.raises(ValueError, match="mask of shape"):
        attnpy.dask.attention(Q, K, V, mask=np.ones((6, 9)))


def test_import_attnpy_does_not_import_dask():
    code = ("import sys, attnpy; attnpy.attention; "
            "assert 'dask' not in sys.modules and 'attnpy.dask' not in sys.modules")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(attnpy.__file__)))
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


# --- a real scheduler: two worker processes ----------------------------------

@pytest.fixture(scope="module")
def client():
    from dask.distributed import Client, LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None, silence_logs=40) as cluster, \
            Client(cluster) as c:
        yield c


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_distributed_equals_local(client, dtype):
    Q, K, V = data((2, 2, 40, 8), 64, dtype=dtype, seed=8)
    for causal in (False, True, "bottom_right"):
        want = attnpy.attention(Q, K, V, causal=causal)
        got = attnpy.dask.attention(da.from_array(Q, chunks=(1, 2, 20, 8)),
                                    da.from_array(K, chunks=(2, 1, 16, 8)),
                                    da.from_array(V, chunks=(2, 1, 16, 8)),
                                    causal=causal)
        check(client.compute(got).result(), want, dtype)
    Q, K, V, mask, bias = gqa_data(dtype, seed=11)         # GQA, mask, bias
    want = gqa_want(Q, K, V, mask, bias, "bottom_right")
    got = attnpy.dask.attention(da.from_array(Q, chunks=(1, 3, 12, 8)),
                                da.from_array(K, chunks=(1, 2, 16, 8)),
                                da.from_array(V, chunks=(1, 2, 16, 8)), mask=mask,
                                bias=bias, causal="bottom_right", enable_gqa=True)
    check(client.compute(got).result(), want, dtype)


def _die_once(block, flag):
    """Kill this worker process the first time any worker runs it (never
    the test's own process: dask also calls this on empty arrays to learn
    the output's type)."""
    from dask.distributed import get_worker
    try:
        get_worker()
    except ValueError:               # not inside a worker
        return block
    try:
        fd = os.open(flag, os.O_CREAT | os.O_EXCL)
    except FileExistsError:
        return block
    os.close(fd)
    os._exit(1)


@pytest.mark.slow
def test_killed_worker_is_retried_not_wrong(client, tmp_path):
    Q, K, V = data((1, 32, 8), 48, seed=9)
    flag = str(tmp_path / "died")
    Kd = da.from_array(K, chunks=(1, 16, 8)).map_blocks(
        _die_once, flag, dtype=K.dtype, meta=np.empty((0, 0, 0), K.dtype))
    got = attnpy.dask.attention(da.from_array(Q, chunks=(1, 16, 8)), Kd,
                                da.from_array(V, chunks=(1, 16, 8)))
    res = client.compute(got).result(timeout=120)
    assert os.path.exists(flag)                    # a worker really died
    np.testing.assert_allclose(res, attnpy.attention(Q, K, V), rtol=1e-12, atol=1e-12)
