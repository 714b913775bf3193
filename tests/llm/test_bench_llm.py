"""The ``llm`` part of ``python -m attnpy bench`` on short contexts,
attnpy's side only (torch skipped: transformers takes a minute to load
the model): its rows, tokens per second consistent with its medians,
attention's share, the float16 cache's comparison, the peak-memory
subprocess, the registration. No timing is asserted: the machines are
noisy."""
import numpy as np
import pytest

from attnpy import bench
from attnpy.bench import llm, parts

pytestmark = pytest.mark.oracle   # loads the real model twice (here, and
                                   # a fresh process for the peak memory)


def test_llm_part_rows_without_transformers(capsys):
    args, cfg = bench.cli._parse(["--quick", "--repeat", "1", "--threads",
                                  "1", "--skip", "torch"])
    env = bench.env.Env(args)
    try:
        res = llm.bench_llm(env, cfg, 1, contexts=(16, 40), memory=True)
    finally:
        env.close()
    out = capsys.readouterr().out
    assert "llm: SmolLM2-135M-Instruct (examples/smollm2.py) vs transformers" \
        in out
    assert "transformers: skipped (--skip torch)" in out
    assert [r["context"] for r in res["contexts"]] == [16, 40]
    for r in res["contexts"]:
        med = {k: v["median_s"] for k, v in r["results"].items()}
        assert set(med) == {"attnpy prefill", "attnpy decode",
                            "attnpy decode f32"}
        assert np.isclose(r["attnpy_prefill_tok_s"],
                          r["context"] / med["attnpy prefill"])
        assert np.isclose(r["attnpy_decode_tok_s"], 1 / med["attnpy decode"])
        assert np.isclose(r["attnpy_decode_f32_tok_s"],
                          1 / med["attnpy decode f32"])
        assert 0 < r["attention_share"] < 1
        # a decode step reads 96 MB of blocks: still mostly the products
        # at these short contexts
        assert r["matmul_share"] > 0.3
        assert np.isclose(r["attention_share"] + r["matmul_share"]
                          + r["other_share"], 1)
        assert "decode_speedup" not in r
    assert "targets" not in res
    # the products of the step, blocks against float32 weights
    micro = {m["name"]: m for m in res["micro"]}
    assert list(micro) == ["qkv", "o", "gate_up", "down", "output"]
    assert micro["output"]["qtype"] == "q8_0"
    assert micro["output"]["shape"] == [49152, 576]
    assert np.isclose(micro["down"]["quantized_gb_s"] * 1e9
                      * micro["down"]["quantized_s"], 576 * 1536 // 32 * 20)
    assert np.isclose(micro["down"]["float32_gb_s"] * 1e9
                      * micro["down"]["float32_s"], 576 * 1536 * 4)
    assert micro["qkv"]["layers"] == 30 and micro["output"]["layers"] == 1
    assert "decode products (x: 1 row), per product" in out
    # the float16 cache against the float32 one at the last context
    c16 = res["cache16"]
    assert c16["context"] == 40
    assert set(c16["results"]) == {"float32 cache", "float16 cache"}
    assert all(0 < share < 1 for share in c16["attention_share"])
    assert np.isclose(c16["share_drop"], 1 - c16["attention_share"][1]
                      / c16["attention_share"][0])
    assert c16["target_met"] == (c16["share_drop"] >= llm.TARGET_SHARE_DROP)
    assert "float16 KV cache at 40: decode" in out
    mem = res["memory"]
    assert set(mem) == {"attnpy"}
    # the weights alone are 540 MB in float32
    assert mem["attnpy"]["extra_bytes"] > 400e6
    assert "peak memory attnpy" in out


def test_registered_and_left_out_of_every_mode():
    assert parts.PARTS["llm"] is parts.part_llm
    assert all("llm" not in m["parts"] for m in bench.config.MODES.values())
