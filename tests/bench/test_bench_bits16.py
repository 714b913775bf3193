"""The benchmark's 16-bit rows and its blocked sampling on small shapes: a
row is timed beside attnpy float32 and torch in the same dtype, a 16-bit
call attnpy refuses prints as refused (its targets FAIL, nothing crashes),
a wrong 16-bit result is caught and not timed. No timing is asserted.
The rows run without torch (--skip torch: the fast suite) and with it
(CI's oracle step, marked oracle: the torch column must run there)."""
import numpy as np
import pytest

import attnpy
from attnpy import bench
from attnpy.bench import bits16, timing
from test_bench_decode import _env as _env_cfg   # (env, cfg), torch or not

KINDS = [("decode", lambda env, cfg, d: bits16.decode_row(env, cfg, 1, (1, 2, 1, 16), 256, d)),
         ("forward", lambda env, cfg, d: bits16.forward_row(env, cfg, 1, (1, 2, 32, 16),
                                                            True, d)),
         ("backward", lambda env, cfg, d: bits16.backward_row(env, cfg, 1, (1, 2, 32, 16),
                                                              False, d))]


@pytest.fixture
def env_cfg():
    env, cfg = _env_cfg(torch=False)
    yield env, cfg
    env.close()


@pytest.mark.parametrize("torch", [
    pytest.param(False, id="no torch"),
    pytest.param(True, id="torch", marks=pytest.mark.oracle)])
@pytest.mark.parametrize("kind,make", KINDS, ids=[k for k, _ in KINDS])
@pytest.mark.parametrize("dtype", bits16.DTYPES16)
def test_row_is_timed_or_says_why_not(capsys, kind, make, dtype, torch):
    env, cfg = _env_cfg(torch)
    try:
        _check_row(env, cfg, capsys, kind, make, dtype, torch)
    finally:
        env.close()


def _check_row(env, cfg, capsys, kind, make, dtype, torch):
    r = make(env, cfg, dtype)
    bits16.print_row(r)
    out = capsys.readouterr().out
    assert r["kind"] == kind and r["dtype"] == dtype
    if "refused" in r:                   # a build without this 16-bit path
        assert "attnpy refuses the 16-bit call" in out and r["refused"] in out
        assert "results" not in r
    else:
        assert r["guard"]["ok"], r["guard"]["why"]
        assert set(r["results"]) == {dtype, "float32"} | (
            {"torch " + dtype} if torch else set()) | (
            {"stream"} if kind == "decode" else set())
        assert np.isclose(r["vs_f32"], r["ms"]["float32"] / r["ms"][dtype])
        if kind == "decode":   # the streaming read of the 16-bit K and V
            assert np.isclose(r["of_stream"], r["ms"]["stream"] / r["ms"][dtype])
            assert np.isclose(r["stream_gbs"], 2 * 2 * 256 * 16 * 2 / r["ms"]["stream"] / 1e6)
            assert "stream " in out
        else:
            assert "of_stream" not in r
        if torch:
            assert np.isclose(r["vs_torch"], r["ms"]["torch " + dtype] / r["ms"][dtype])
        else:
            assert r["vs_torch"] is None and "(no torch)" in out
    ts = bits16.targets16([r], amx=True)
    want = {"decode": 3, "forward": 2 + (dtype == "bfloat16"), "backward": 1}[kind]
    assert len(ts) == want
    for t in ts:
        if "vs torch" in t["target"] and not torch and "refused" not in r:
            assert t["status"] == "N/A" and t["measured"] == "torch not run"
        else:
            assert t["status"] in ("PASS", "FAIL"), t
    if "refused" in r:
        assert all(t["status"] == "FAIL" and "refuses" in t["measured"] for t in ts)


def test_refused_call_prints_and_fails_targets(env_cfg, monkeypatch, capsys):
    real = attnpy.attention

    def refuse(Q, K, V, **kw):
        if np.asarray(Q).dtype.itemsize == 2:
            raise TypeError("attention: Q has dtype float16: not supported")
        return real(Q, K, V, **kw)

    monkeypatch.setattr(attnpy, "attention", refuse)
    env, cfg = env_cfg
    rows = bits16.run_rows(env, cfg, 1, "test rows",
                           [lambda: KINDS[0][1](env, cfg, "float16")])
    out = capsys.readouterr().out
    assert "attnpy refuses the 16-bit call: TypeError: attention: Q has dtype float16" in out
    ts = bits16.targets16(rows)
    assert [t["status"] for t in ts] == ["FAIL", "FAIL", "FAIL"]


def test_a_16_bit_call_returning_float32_counts_as_refused(env_cfg, monkeypatch):
    real = attnpy.attention
    monkeypatch.setattr(attnpy, "attention",
                        lambda Q, K, V, **kw: real(*(np.asarray(x, np.float32) for x in (Q, K, V)),
                                                   **kw))
    env, cfg = env_cfg
    r = KINDS[1][1](env, cfg, "float16")
    assert "returns float32, not float16" in r["refused"]


def test_wrong_16_bit_result_is_caught_and_not_timed(env_cfg, monkeypatch, capsys):
    real = attnpy.attention

    def wrong(Q, K, V, **kw):
        out = real(Q, K, V, **kw)
        if np.asarray(Q).dtype == np.float32:
            return out
        dt = np.asarray(Q).dtype
        return (np.asarray(out, np.float32) + 0.05).astype(dt)

    monkeypatch.setattr(attnpy, "attention", wrong)
    env, cfg = env_cfg
    r = KINDS[0][1](env, cfg, "float16")
    assert "refused" not in r, r.get("refused")   # the stand-in returns float16
    assert not r["guard"]["ok"] and "results" not in r
    bits16.print_row(r)
    assert "WRONG RESULT, not timed" in capsys.readouterr().out
    assert bits16.targets16([r])[0]["status"] == "FAIL"


def test_time_blocked_takes_each_contenders_samples_in_runs():
    log = []
    cs = [timing.Contender(n, lambda n=n: log.append(n)) for n in "ab"]
    cfg = dict(min_sample_s=0.0, budget=0.0, min_samples=1, max_samples=1, settle_s=0.0)
    st = timing.time_blocked(cs, {"a": 1.0, "b": 1.0}, cfg, repeat=5, blocks=2)
    assert {k: v["samples"] for k, v in st.items()} == {"a": 5, "b": 5}
    # one untimed call + 3 samples of a, the same of b, then b's last run first
    assert "".join(log) == "a" * 4 + "b" * 4 + "b" * 3 + "a" * 3
    assert all(v["median_s"] >= 0 for v in st.values())
