"""The ``dask`` part of ``python -m attnpy bench`` (not in any mode by
default: ``python -m attnpy bench --only dask``): one long sequence over a
dask.distributed LocalCluster of 2 worker processes vs plain
``attnpy.attention`` in one process.

Single head, S = 1,000,000 keys, E = 64, float32, four query blocks of
512: K and V (512 MB together) are generated chunk by chunk on the
workers, so no process but the single-process baseline ever holds them
whole. Reported: wall time of both, each worker's peak RSS against the
bytes of K and V, and the time of the merge tasks against the time of
the partial attentions (from the scheduler's task stream).
"""
import resource
import sys
import time

import numpy as np

import attnpy

from .report import _p

S_KEYS, E_DIM, Q_BLOCK, Q_BLOCKS, K_CHUNKS = 1_000_000, 64, 512, 4, 16


def _peak_rss():
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r if sys.platform == "darwin" else r * 1024


def _inputs(S, E, L, nq, nk):
    import dask.array as da
    rng = da.random.default_rng(0)
    kc = -(-S // nk)
    Q = rng.standard_normal((1, L, E), dtype=np.float32, chunks=(1, L // nq, E))
    K = rng.standard_normal((1, S, E), dtype=np.float32, chunks=(1, kc, E))
    V = rng.standard_normal((1, S, E), dtype=np.float32, chunks=(1, kc, E))
    return Q, K, V


def _task_seconds(stream, tag):
    return sum(sum(s["stop"] - s["start"] for s in t["startstops"]
                   if s["action"] == "compute")
               for t in stream if tag in str(t["key"]))


def bench_dask(env, S=S_KEYS, E=E_DIM, L=Q_BLOCK * Q_BLOCKS, nq=Q_BLOCKS,
               nk=K_CHUNKS, workers=2):
    """Run the comparison; returns a dict for the run's JSON."""
    try:
        import attnpy.dask as adask
        from dask.distributed import Client, LocalCluster, get_task_stream
    except ImportError as exc:
        _p("\ndask: skipped (%s; pip install 'attnpy[dask]')" % exc)
        return {"skipped": str(exc)}
    Q, K, V = _inputs(S, E, L, nq, nk)
    out = adask.attention(Q, K, V)
    kv_bytes = 2 * S * E * 4
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None, silence_logs=40) as cluster, \
            Client(cluster) as client:
        client.run(lambda: attnpy.set_num_threads(1))
        base = client.run(_peak_rss)
        t0 = time.perf_counter()
        with get_task_stream(client) as ts:
            got = client.compute(out).result()
        wall = time.perf_counter() - t0
        peaks = client.run(_peak_rss)
        stream = ts.data
    part_s = _task_seconds(stream, "-part")
    merge_s = _task_seconds(stream, "-merge") + _task_seconds(stream, "-res")
    # the same problem in one process: K and V whole
    q, k, v = (np.asarray(a.compute(scheduler="threads")) for a in (Q, K, V))
    threads = attnpy.set_num_threads(workers)
    t0 = time.perf_counter()
    ref = attnpy.attention(q, k, v)
    one = time.perf_counter() - t0
    attnpy.set_num_threads(threads)
    err = float(np.abs(got - ref).max() / np.abs(ref).max())
    res = {"S": S, "E": E, "L": L, "query_blocks": nq, "key_chunks": nk,
           "workers": workers, "wall_s": wall, "single_process_s": one,
           "worker_peak_rss": list(peaks.values()),
           "worker_rss_before": list(base.values()), "kv_bytes": kv_bytes,
           "partial_task_s": part_s, "merge_task_s": merge_s,
           "max_rel_err": err}
    _p("")
    _p("dask: (1, %d, %d) queries over S = %d keys, float32, %d query blocks x %d key "
       "chunks, LocalCluster of %d worker processes (1 thread each)" % (L, E, S, nq, nk, workers))
    _p("  wall %.2f s (one process, %d threads, K and V whole: %.2f s); max rel err %.1e"
       % (wall, workers, one, err))
    _p("  worker peak RSS %s MiB (K and V together: %d MiB)"
       % (" / ".join(str(p >> 20) for p in peaks.values()), kv_bytes >> 20))
    _p("  task time: partial attentions %.2f s, merges %.3f s (%.1f%% of the partials)"
       % (part_s, merge_s, 100 * merge_s / part_s if part_s else 0.0))
    return res
