"""The ``decode`` part of ``python -m attnpy bench`` on small shapes: its
rows (attnpy, torch, the NumPy readers, the one-head thread count and
1-thread time, the windowed decode), its targets among the run's, its
JSON, and its correctness guard stopping a wrong kernel. No timing is
asserted: the machines are noisy. The rows run without torch (--skip
torch: the fast suite) and with it (CI's oracle step, marked oracle: the
torch column must run there)."""
import json

import numpy as np
import pytest

import attnpy
from attnpy import bench
from attnpy.bench import decode

SMALL = [((1, 4, 1, 16), 512, True), ((1, 1, 1, 16), 4096, True),
         ((2, 2, 3, 8), 300, False)]
SMALL_WINDOW = dict(shape=(1, 1, 1, 16), S=4096, W=64)
SMALL16 = [((1, 2, 1, 16), 256)]


def _env(torch=True):
    # a 0.01 s idle pause before each run instead of 0.12 s: the pauses
    # were most of the rows test's time (torch's spinning threads are a
    # timing matter; no timing is asserted)
    args, cfg = bench.cli._parse(["--quick", "--repeat", "1", "--settle", "0.01"]
                                 + ([] if torch else ["--skip", "torch"]))
    env = bench.env.Env(args)
    if torch:
        assert env.torch is not None, env.torch_error   # fail, never skip
    return env, cfg


WITH_TORCH = [pytest.param(False, id="no torch"),
              pytest.param(True, id="torch", marks=pytest.mark.oracle)]


@pytest.mark.parametrize("torch", WITH_TORCH)
def test_decode_part_rows_on_small_shapes(capsys, torch):
    env, cfg = _env(torch)
    try:
        res = decode.bench_decode(env, cfg, 1, cases=SMALL, window=SMALL_WINDOW,
                                  cases16=SMALL16)
    finally:
        env.close()
    out = capsys.readouterr().out
    assert "decode: one query row against a K/V cache" in out
    assert res["guards_ok"]
    assert len(res["rows"]) == 3
    for r in res["rows"]:
        assert r["guard"]["ok"]
        assert r["guard"]["against"] == ("torch" if torch else "reference")
        names = set(r["results"])
        assert "attnpy" in names and ("torch" in names) == torch
        assert (r["vs_torch"] is not None) == torch
        assert {n for n in names if n.startswith("read:")} == {
            "read: f32 sum", "read: i64 sum", "read: f32 max", "read: f32 dot"}
        assert r["read_s"] == min(v["median_s"] for k, v in r["results"].items()
                                  if k.startswith("read:"))
        assert np.isclose(r["of_read"], r["read_s"] / r["attnpy_s"])
        # the streaming read of the same K and V bytes on attnpy's threads
        assert "stream" in names
        assert r["stream_s"] == r["results"]["stream"]["median_s"] > 0
        assert np.isclose(r["of_stream"], r["stream_s"] / r["attnpy_s"])
        assert np.isclose(r["stream_gbs"], r["bytes"] / r["stream_s"] / 1e9)
        assert r["bytes"] == 2 * r["S"] * np.prod(r["shape"]) // r["shape"][2] * 4
    one = res["rows"][1]                    # B * H == 1: threads and 1 thread
    assert one["attnpy_1thread_s"] > 0
    assert 1 <= len(one["thread_shares"]) and max(one["thread_shares"]) == 1.0
    assert "thread_shares" not in res["rows"][0]
    w = res["window"]
    assert w["guard"]["ok"]
    assert set(w["results"]) == {"window", "last W keys", "full cache"}
    assert "window: the last 64 of 4096 keys" in out
    # targets: the two target rows only, each vs torch (when torch ran) and
    # the streaming read, and the one-head row's threads; then the 16-bit
    # row in each dtype, vs attnpy float32, vs torch (N/A without torch)
    # and vs the streaming read of its 16-bit K and V
    names = [t["target"] for t in res["targets"]]
    assert len(names) == (5 if torch else 3) + 2 * 3
    assert sum(n.endswith("vs the streaming read") for n in names) == 2 + 2
    for r in res["rows16"]:
        assert r["of_stream"] > 0 and r["stream_gbs"] > 0
        assert "stream" in r["results"]
    assert "stream " in out and "NumPy read " in out
    for t in res["targets"]:
        if "vs torch" in t["target"] and not torch:
            assert t["status"] == "N/A" and t["measured"] == "torch not run"
        else:
            assert t["status"] in ("PASS", "FAIL"), t
    assert sum("vs torch SDPA" in n for n in names) == (2 if torch else 0)
    if not torch:
        assert "(no torch)" in out
    assert len(res["rows16"]) == 2 and "decode in 16 bits" in out
    assert sum(n.startswith("decode (1,2,1,16) S=256 ") for n in names) == 6
    assert sum("threads used" in n for n in names) == 1
    assert not any("(2,2,3,8)" in n for n in names)


@pytest.mark.oracle   # the rows above through the CLI, torch among them
def test_decode_part_from_the_command_line(monkeypatch, tmp_path, capsys):
    """--only decode runs just this part; its targets join the run's
    targets and its rows the JSON (with torch's column: CI's oracle step)."""
    monkeypatch.setattr(decode, "CASES", SMALL[:2])
    monkeypatch.setattr(decode, "WINDOW", SMALL_WINDOW)
    monkeypatch.setattr(decode.bits16, "DECODE16", SMALL16)
    path = tmp_path / "r.json"
    rc = bench.main(["--only", "decode", "--repeat", "1", "--json", str(path)])
    out = capsys.readouterr().out
    assert rc == 0
    assert "decode: one query row" in out and "tiny: Q, K, V" not in out
    R = json.loads(path.read_text())
    assert len(R["decode"]["rows"]) == 2
    decode_targets = [t for t in R["targets"] if t["target"].startswith("decode ")]
    assert len(decode_targets) == 5 + 6
    assert all(t["required"] for t in decode_targets)
    # the same rows sampled interleaved (the bench's earlier way)
    rc = bench.main(["--only", "decode", "--repeat", "1", "--sampling", "interleaved"])
    assert rc == 0
    assert "medians of interleaved samples" in capsys.readouterr().out


@pytest.mark.parametrize("torch", WITH_TORCH)
def test_wrong_decode_is_caught_and_not_timed(monkeypatch, capsys, torch):
    real = attnpy.attention

    def wrong(Q, K, V, **kw):
        return real(Q, K, V, **kw) + 1e-2

    monkeypatch.setattr(attnpy, "attention", wrong)
    env, cfg = _env(torch)
    try:
        res = decode.bench_decode(env, cfg, 1, cases=SMALL[:1], window=False, cases16=[])
    finally:
        env.close()
    out = capsys.readouterr().out
    assert "WRONG RESULT, not timed" in out
    assert not res["guards_ok"]
    assert "results" not in res["rows"][0]
    assert res["targets"][0]["status"] == "FAIL"
