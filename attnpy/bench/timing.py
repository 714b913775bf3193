"""Timing: contenders sampled interleaved (or in blocks), medians and IQR.

Every contender is warmed up, then the contenders are run interleaved
(a, b, c, a, b, c, ...) so that machine noise hits all alike. Before each
sample the machine is left idle for a moment (``settle_s``, --settle):
OpenBLAS's and OpenMP's idle workers spin for up to ~0.1 s after a call,
and without the pause that spinning would be charged to whichever
contender runs next. time_blocked takes each contender's samples back to
back instead, in a few runs that take turns (the decode part: there a
sample right after torch's call ran at half speed despite the pause).
"""
import gc
import math
import time

import numpy as np


class Contender:
    """One thing to time: fn() does one call; setup() (untimed) runs before
    every sample."""

    def __init__(self, name, fn, setup=None):
        self.name, self.fn, self.setup = name, fn, setup


def _percentiles(samples):
    q1, med, q3 = np.percentile(np.asarray(samples, dtype=float), [25, 50, 75])
    return float(q1), float(med), float(q3)


def _stats(samples, number):
    q1, med, q3 = _percentiles(samples)
    return {"median_s": med, "q1_s": q1, "q3_s": q3,
            "iqr_rel": (q3 - q1) / med if med > 0 else 0.0,
            "samples": len(samples), "calls_per_sample": number}


def _estimate(c):
    """Seconds per call of an already warmed-up contender (one extra call,
    or a short loop when calls are fast)."""
    if c.setup:
        c.setup()
    n, total = 0, 0.0
    while total < 0.01 and n < 10000:
        t0 = time.perf_counter()
        c.fn()
        total += time.perf_counter() - t0
        n += 1
    return total / n


def _plan(contenders, est, cfg, repeat):
    """(calls per sample of each contender, samples per contender)."""
    number = {c.name: max(1, min(100000, math.ceil(cfg["min_sample_s"] / max(est[c.name], 1e-9))))
              for c in contenders}
    round_s = sum(number[c.name] * est[c.name] for c in contenders)
    if repeat:
        nsamples = max(1, int(repeat))
    else:
        nsamples = int(cfg["budget"] / max(round_s, 1e-9))
        nsamples = max(cfg["min_samples"], min(cfg["max_samples"], nsamples))
    return number, nsamples


def _sample(c, k):
    """Seconds per call of k calls of c.fn, back to back."""
    fn = c.fn
    t0 = time.perf_counter()
    for _ in range(k):
        fn()
    return (time.perf_counter() - t0) / k


# samples shorter than this (seconds) get an untimed call after the pause
WARM_S = 0.25


def time_interleaved(contenders, est, cfg, repeat=None):
    """Median seconds per call of each contender, sampled interleaved.

    est: {name: estimated seconds per call}. A sample is `number` calls
    (enough to last cfg.min_sample_s); samples per contender: --repeat, or as
    many as fit in cfg.budget, within [min_samples, max_samples].
    """
    number, nsamples = _plan(contenders, est, cfg, repeat)
    samples = {c.name: [] for c in contenders}
    settle = cfg.get("settle_s", 0.0) if len(contenders) > 1 else 0.0
    # after the pause, a short sample (under WARM_S) starts with one
    # untimed call: the first call after an idle pause runs slower (the
    # CPU's clock and the pools' threads wake up: +13% at 0.12 s for a
    # 19 ms call here, +50% at 0.5 s), a cost in ms that pulls short
    # samples' ratios towards 1, or away from it where one contender pays
    # more of it (torch's first calls did, here)
    warm = {c.name: settle > 0 and number[c.name] * est[c.name] < WARM_S
            for c in contenders}
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(nsamples):
            for c in contenders:
                if c.setup:
                    c.setup()
                if settle:
                    time.sleep(settle)  # let the last contender's pool idle
                if warm[c.name]:
                    c.fn()
                    if c.setup:
                        c.setup()
                samples[c.name].append(_sample(c, number[c.name]))
    finally:
        if gc_was:
            gc.enable()
    return {c.name: _stats(samples[c.name], number[c.name]) for c in contenders}


def time_blocked(contenders, est, cfg, repeat=None, blocks=2):
    """Median seconds per call of each contender, sampled in blocks.

    The samples of a contender are taken back to back, in `blocks` runs
    (as a decode loop calls it, token after token). Before each run the
    machine idles cfg.settle_s and the contender makes one untimed call:
    torch's OpenMP workers keep spinning after their call returns, and a
    sample taken right after a torch call pays for it on a 2-CPU machine;
    the untimed call also wakes the contender's own pool and reloads its
    data. Runs take turns with their order reversed every round (a b c,
    c b a, ...), so a slow drift of the machine's load hits all alike.
    Same arguments and result as time_interleaved.
    """
    number, nsamples = _plan(contenders, est, cfg, repeat)
    blocks = max(1, min(int(blocks), nsamples))
    per = [nsamples // blocks + (1 if i < nsamples % blocks else 0) for i in range(blocks)]
    samples = {c.name: [] for c in contenders}
    settle = cfg.get("settle_s", 0.0)
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for i, n in enumerate(per):
            for c in (contenders if i % 2 == 0 else contenders[::-1]):
                if c.setup:
                    c.setup()
                if settle:
                    time.sleep(settle)
                c.fn()          # untimed: wakes the pool after the pause
                for _ in range(n):
                    if c.setup:
                        c.setup()
                    samples[c.name].append(_sample(c, number[c.name]))
    finally:
        if gc_was:
            gc.enable()
    return {c.name: _stats(samples[c.name], number[c.name]) for c in contenders}
