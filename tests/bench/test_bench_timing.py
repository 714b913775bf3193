"""The bench's interleaved sampling: after the idle pause, a short sample
starts with one untimed call (the first call after a pause runs slower,
for every contender); a long sample, or no pause, gets none."""
from attnpy.bench.timing import WARM_S, Contender, time_interleaved


def _counting(name):
    calls = {"fn": 0, "setup": 0}

    def fn():
        calls["fn"] += 1

    def setup():
        calls["setup"] += 1

    return Contender(name, fn, setup), calls


def _run(est_s, settle_s):
    a, ca = _counting("a")
    b, cb = _counting("b")
    cfg = dict(min_sample_s=0.0, budget=0.0, min_samples=1, max_samples=1,
               settle_s=settle_s)
    res = time_interleaved([a, b], {"a": est_s, "b": est_s}, cfg, repeat=3)
    assert set(res) == {"a", "b"}
    return ca, cb


def test_a_short_sample_after_the_pause_starts_with_an_untimed_call():
    ca, cb = _run(WARM_S / 10, 0.001)
    # 3 samples of 1 call each, each after one untimed call; setup before
    # the untimed call and again before the timed one
    assert ca == {"fn": 6, "setup": 6} and cb == ca


def test_no_untimed_call_for_a_long_sample_or_without_a_pause():
    for est_s, settle_s in ((WARM_S * 2, 0.001), (WARM_S / 10, 0.0)):
        ca, cb = _run(est_s, settle_s)
        assert ca == {"fn": 3, "setup": 3} and cb == ca
