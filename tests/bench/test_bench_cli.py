"""The benchmark's command line on tiny shapes: it runs, prints its table and
targets, writes the JSON it promises, and its correctness guard really runs
(and stops a wrong kernel). No timing is asserted: CI machines are noisy."""
import json
import re
import os
import subprocess
import sys

import numpy as np
import pytest

import attnpy
from attnpy import bench
from attnpy.bench import config, mha, targets, tutorial

ROOT = os.path.dirname(os.path.abspath(list(attnpy.__path__)[0]))
TARGET_COUNT = 11      # 3 speed targets, 4 torch cases, tiny, memory, threads,
                       # the sliding window
STATUSES = {"PASS", "FAIL", "SKIP", "N/A"}


def _run_cli(args, timeout=120):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + ([env["PYTHONPATH"]]
                                                  if env.get("PYTHONPATH") else []))
    return subprocess.run([sys.executable, "-m", "attnpy", "bench"] + args, cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_quick_on_tiny_shapes_prints_table_and_json(tmp_path):
    path = tmp_path / "bench.json"
    # --settle 0.01: the default 0.12 s idle pause before each of the 42
    # samples was most of this test's time (the pause still runs)
    p = _run_cli(["--quick", "--lengths", "16,48", "--skip", "torch", "--repeat", "2",
                  "--matmul-size", "512", "--settle", "0.01", "--json", str(path)])
    assert p.returncode == 0, p.stdout + p.stderr
    out = p.stdout
    assert "attention, (B,H,L,E) = (1,12,L,64)" in out
    assert "tutorial (NumPy)" in out and "torch SDPA" in out
    assert "machine matmul (np.matmul 512x512" in out
    assert "tiny: Q, K, V of shape (1, 3, 4)" in out
    assert "\ntargets\n" in out
    # a share of np.matmul above 100% is explained where it is printed
    pcts = [float(m) for m in re.findall(r" (\d+)%\*?  ok$", out, re.M)]
    assert pcts and (max(pcts) <= 100 or "%mm over 100% (" in out)
    # one table row per (dtype, mask, L), each checked before it was timed
    rows = [ln for ln in out.splitlines() if ln.startswith(("float32 ", "float64 "))]
    assert len(rows) == 2 * 2 * 2
    assert all(ln.rstrip().endswith("ok") for ln in rows), rows

    R = json.loads(path.read_text())
    assert {"meta", "matmul", "cases", "tiny", "targets"} <= set(R)
    assert R["meta"]["mode"] == "quick" and R["meta"]["guards_ok"] is True
    assert set(R["matmul"]) == {"float32", "float64"}
    assert all(R["matmul"][d]["gflops"] > 0 for d in R["matmul"])
    seen = {(c["dtype"], c["causal"], c["L"]) for c in R["cases"]}
    assert seen == {(d, c, L) for d in ("float32", "float64") for c in (False, True)
                    for L in (16, 48)}
    for c in R["cases"]:
        assert c["flops"] == 4 * 1 * 12 * c["L"] * c["L"] * 64 * (0.5 if c["causal"] else 1)
        g = c["guard"]
        assert g["ok"] is True and g["against"] == "tutorial, all rows"
        assert 0 <= g["max_abs_err"] <= g["bound"]
        assert set(c["results"]) == {"attnpy", "tutorial"}
        assert c["skipped"]["torch"].startswith("skipped")
        for st in c["results"].values():
            assert st["samples"] == 2
            assert 0 < st["q1_s"] <= st["median_s"] <= st["q3_s"]
            assert st["gflops"] > 0
        assert c["speedup_vs_tutorial"] > 0 and c["speedup_vs_torch"] is None
        assert c["tutorial_out_dtype"] == np.result_type(
            np.dtype(c["dtype"]), np.sqrt(64)).name      # the tutorial's own promotion
    assert R["tiny"]["guard"]["ok"] is True
    assert "attnpy.attention" in R["tiny"]["results"] and "tutorial" in R["tiny"]["results"]
    assert len(R["targets"]) == TARGET_COUNT
    assert {t["status"] for t in R["targets"]} <= STATUSES
    # --quick does not measure memory and threads: said so, not passed
    by_name = {t["target"]: t for t in R["targets"]}
    assert by_name["2 threads vs 1 at (1,12,2048,64) float32"]["status"] == "SKIP"


@pytest.mark.slow     # CI's full-counts step; the CLI's smoke test stays fast
def test_memory_threads_and_tutorial_skip(tmp_path):
    """The fresh-process peak-memory measurement and the thread scaling run
    (small L here), and the tutorial is skipped, with the reason, beyond
    --tutorial-max-length."""
    path = tmp_path / "bench.json"
    big = 80
    # (--only: the parts this test reads; the 16-bit and decode parts,
    # which other tests run, took 15-36 s of it)
    p = _run_cli(["--lengths", str(big), "--dtypes", "float32", "--only",
                  "table,memory,threads", "--repeat", "1", "--memory-length", "1024",
                  "--threads-length", "32",
                  "--tutorial-max-length", "64", "--json", str(path)])
    assert p.returncode == 0, p.stdout + p.stderr
    R = json.loads(path.read_text())
    for c in R["cases"]:
        assert c["L"] == big
        assert "tutorial" not in c["results"]
        assert c["skipped"]["tutorial"].startswith("L > 64")
        # the guard still ran, on sampled rows of the tutorial formula
        assert c["guard"]["ok"] is True and "sampled rows" in c["guard"]["against"]
    assert "skipped (a)" in p.stdout and "(a) L > 64" in p.stdout
    mem = R["memory"]
    assert mem["shape"] == [1, 1, 1024, 64]
    assert mem["tutorial_score_bytes"] == 1024 * 1024 * 4
    if getattr(attnpy, "attention", None) is None:
        assert "skipped" in mem
    else:
        assert mem["guard"]["ok"] is True, mem
        assert mem["out_bytes"] == 1024 * 64 * 4
        assert mem["extra_bytes"] >= 0
    th = R["threads"]
    assert th["shape"] == [1, 12, 32, 64]
    if "skipped" not in th:          # needs attnpy.set_num_threads and 2 CPUs
        assert th["guard"]["ok"] is True
        assert isinstance(th["same_result_1_vs_2"], bool)
        assert set(th["results"]) == {"1 thread", "2 threads"} and th["speedup"] > 0
    by_name = {t["target"]: t for t in R["targets"]}
    # measured at other sizes than the targets': reported, but not PASS/FAIL
    assert any("peak memory" in n and by_name[n]["status"] == "SKIP" for n in by_name)
    assert by_name["2 threads vs 1 at (1,12,2048,64) float32"]["status"] in {"SKIP", "N/A"}


def test_wrong_kernel_is_caught_and_not_timed(monkeypatch, tmp_path, capsys):
    def wrong(Q, K, V, *, causal=False, **kw):      # the opposite causality
        mask = tutorial.tutorial_causal_mask(Q.shape[-2]) if not causal else None
        return tutorial.tutorial_sdpa(Q, K, V, mask)[0]

    monkeypatch.setattr(config, "_attention_override", wrong)
    path = tmp_path / "bench.json"
    rc = bench.main(["--quick", "--lengths", "8", "--dtypes", "float64",
                      "--skip", "torch,matmul", "--json", str(path)])
    out = capsys.readouterr().out
    assert rc == 1
    assert "WRONG RESULT, not timed" in out and "CORRECTNESS GUARD FAILED" in out
    R = json.loads(path.read_text())
    assert R["meta"]["guards_ok"] is False
    assert all(not c["guard"]["ok"] and c["results"] == {} for c in R["cases"])
    assert not R["tiny"]["guard"]["ok"] and R["tiny"]["results"] == {}
    st = {t["target"]: t["status"] for t in R["targets"]}
    assert st["tiny (1,3,4) per call"] == "FAIL"


def test_tutorial_code_is_the_tutorials_formula():
    rng = np.random.default_rng(0)
    Q, K, V = (rng.standard_normal((2, 5, 3)) for _ in range(3))
    mask = tutorial.tutorial_causal_mask(5)
    assert np.array_equal(mask, np.tril(np.ones((5, 5))))
    out, w = tutorial.tutorial_sdpa(Q, K, V, mask)
    s = Q @ K.transpose(0, 2, 1) / np.sqrt(3)
    s = np.where(mask == 0, -1e9, s)
    e = np.exp(s - s.max(-1, keepdims=True))
    w_ref = e / e.sum(-1, keepdims=True)
    np.testing.assert_allclose(w, w_ref, rtol=1e-15, atol=0)
    np.testing.assert_allclose(out, w_ref @ V, rtol=1e-14, atol=1e-15)
    assert np.all(np.triu(w[0], 1) == 0)
    # the guard's sampled rows are exactly those rows of the full tutorial call
    rows = tutorial._guard_rows(5)
    assert np.array_equal(tutorial._tutorial_rows(Q, K, V, True, rows[1:3]), out[:, rows[1:3]])
    assert np.array_equal(tutorial._tutorial_rows(Q, K, V, False, rows),
                          tutorial.tutorial_sdpa(Q, K, V)[0][:, rows])


def test_usage_errors_and_help(capsys):
    assert bench.main(["--help"]) == 0
    assert "--quick" in capsys.readouterr().out
    assert bench.main(["--skip", "nonsense"]) == 2
    assert bench.main(["--quick", "--full"]) == 2
    assert bench.main(["--dtypes", "float16"]) == 2
    assert "--dtypes" in capsys.readouterr().err


@pytest.mark.slow     # CI's full-counts step; the CLI's smoke test stays fast
def test_matmul_sampled_with_the_target_rows(monkeypatch, tmp_path, capsys):
    """At the shapes of the '% of matmul' targets, np.matmul is sampled
    interleaved with the contenders and that rate is what %mm divides by."""
    monkeypatch.setattr(config, "MM_TARGET_CASES", {("float64", False, 16)})
    path = tmp_path / "bench.json"
    rc = bench.main(["--quick", "--lengths", "16", "--dtypes", "float64", "--skip",
                      "torch,tiny", "--repeat", "2", "--matmul-size", "300", "--json", str(path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    R = json.loads(path.read_text())
    plain, causal = sorted(R["cases"], key=lambda c: c["causal"])
    mm = plain["matmul_interleaved"]
    assert mm["samples"] == 2 and mm["gflops"] > 0
    assert "matmul_interleaved" not in causal
    assert targets._mm_rate(plain, R["matmul"]) == mm["gflops"]
    assert targets._mm_rate(causal, R["matmul"]) == R["matmul"]["float64"]["gflops"]
    row = [ln for ln in out.splitlines() if ln.startswith("float64  none ")][0]
    assert row.rstrip().endswith("*  ok")
    assert "*: %mm against np.matmul 300x300 sampled interleaved" in out


def _synthetic_run(matmul_size, attnpy_gf, mm_gf, x_tutorial, guard_ok=True):
    case = {"dtype": "float64", "causal": False, "L": 1024, "skipped": {},
            "guard": {"ok": guard_ok, "why": "max |attnpy - tutorial| = 1 > 0"},
            "results": {"attnpy": {"gflops": attnpy_gf}},
            "speedup_vs_tutorial": x_tutorial, "speedup_vs_torch": None,
            "matmul_interleaved": {"gflops": mm_gf}}
    return {"meta": {"matmul_size": matmul_size}, "cases": [case],
            "matmul": {"float64": {"gflops": 1e9}}}


def test_targets_judge_the_measured_figures():
    name = "float64 (1,12,1024,64) non-causal"          # >= 2.5x and >= 55 % of matmul
    def status(*a, **k):
        return {t["target"]: t for t in targets.evaluate_targets(_synthetic_run(*a, **k))}[name]
    assert status(2048, 56.0, 100.0, 2.6)["status"] == "PASS"
    assert "56% of matmul (56.0 / 100.0 GF/s)" in status(2048, 56.0, 100.0, 2.6)["measured"]
    assert status(2048, 54.0, 100.0, 2.6)["status"] == "FAIL"     # too far from matmul
    assert status(2048, 56.0, 100.0, 2.4)["status"] == "FAIL"     # too close to the tutorial
    assert status(2048, 99.0, 100.0, 9.0, guard_ok=False)["status"] == "FAIL"
    # a matmul yardstick of another size than the target's is not judged
    assert status(300, 56.0, 100.0, 2.6)["status"] == "SKIP"
    # torch missing: N/A; shapes not in the run: SKIP
    by = {t["target"]: t["status"] for t in targets.evaluate_targets(_synthetic_run(2048, 1, 1, 1))}
    assert by["ahead of torch SDPA: float32 (1,12,1024,64) causal"] == "SKIP"
    assert len(by) == TARGET_COUNT
    win = "window 256 over 8192, per query, vs causal 512"
    assert by[win] == "SKIP"
    for x, err, want in ((1.9, 0.0, "PASS"), (2.1, 0.0, "FAIL"),
                         (1.0, 1e-3, "FAIL")):
        R = _synthetic_run(2048, 1, 1, 1)
        R["variants"] = {"window": {"window_vs_causal512_per_query": x,
                                    "max_err_vs_mask": err}}
        got = {t["target"]: t for t in targets.evaluate_targets(R)}[win]
        assert got["status"] == want, (x, err, got)


@pytest.mark.slow     # CI's full-counts step; the CLI's smoke test stays fast
def test_mha_part_on_small_shapes(capsys):
    """The MultiHeadAttention part: class, by hand and (here) torch timed
    side by side, their outputs compared, memory measured in a child."""
    args, cfg = bench.cli._parse(["--quick", "--repeat", "1"])
    env = bench.env.Env(args)
    try:
        res = mha.bench_mha(env, cfg, 1, shapes=[(64, 16, 2, False),
                                                     (64, 16, 2, True)], long_L=128)
    finally:
        env.close()
    out = capsys.readouterr().out
    assert "MultiHeadAttention, float32 self-attention" in out
    assert len(res["shapes"]) == 2
    for r in res["shapes"]:
        assert set(r["results"]) >= {"class", "by hand"}
        assert r["max_rel_err"] < 1e-5
        assert r["mem_class"]["peak_bytes"] > 0 and r["mem_by_hand"]["peak_bytes"] > 0
    assert res["long"]["mem_class"]["peak_bytes"] > 0


def test_only_runs_the_named_parts(capsys):
    rc = bench.main(["--quick", "--only", "tiny", "--skip", "torch", "--repeat", "1",
                     "--settle", "0.01"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "tiny: Q, K, V" in out and "attention, (B,H,L,E)" not in out
    assert "machine matmul" not in out
    assert bench.main(["--only", "nonsense"]) == 2


@pytest.mark.oracle   # torch's column: CI's oracle step (the oracle extra)
def test_backward_part_on_small_shapes(capsys):
    """Forward + backward rows: attnpy, torch autograd and the NumPy
    backward timed side by side, gradients compared with torch's."""
    import numpy as np
    from attnpy.bench import backward
    args, cfg = bench.cli._parse(["--quick", "--repeat", "1"])
    env = bench.env.Env(args)
    try:
        res = backward.bench_backward(env, cfg, 1, shapes=[
            ((1, 2, 64, 16), np.float32, False), ((1, 2, 64, 16), np.float64, True)],
            memory=False)
    finally:
        env.close()
    out = capsys.readouterr().out
    assert "attention forward + backward" in out
    assert len(res["shapes"]) == 2
    for r in res["shapes"]:
        assert {"attnpy", "fwd", "bwd", "torch"} <= set(r["results"])
        assert r["max_rel_err_vs_torch"] < 1e-4 and r["bwd_vs_fwd"] > 0
    assert "numpy" in res["shapes"][0]["results"]


@pytest.mark.slow     # CI's full-counts step; the CLI's smoke test stays fast
def test_dask_part_on_a_small_cluster(capsys):
    """Two worker processes, a short sequence: the wall times, the workers'
    peak memory and the merge's share of the task time are reported."""
    from attnpy.bench import dask_cluster
    args, cfg = bench.cli._parse(["--quick"])
    env = bench.env.Env(args)
    try:
        r = dask_cluster.bench_dask(env, S=20_000, L=256, nq=4, nk=8)
    finally:
        env.close()
    assert "dask: (1, 256, 64) queries over S = 20000 keys" in capsys.readouterr().out
    assert r["max_rel_err"] < 1e-5
    assert len(r["worker_peak_rss"]) == 2 and min(r["worker_peak_rss"]) > 0
    assert r["partial_task_s"] > 0 and r["merge_task_s"] >= 0


@pytest.mark.oracle   # torch's column: CI's oracle step (the oracle extra)
def test_variants_part_on_small_shapes(capsys):
    """The variants rows: GQA, ALiBi, soft-cap against torch with the
    equivalent explicit inputs (checked before timing)."""
    from attnpy.bench import variants
    args, cfg = bench.cli._parse(["--quick", "--repeat", "1"])
    env = bench.env.Env(args)
    try:
        res = variants.bench_variants(env, cfg, 1, shape=(1, 8, 64, 16),
                                      window=False)
    finally:
        env.close()
    out = capsys.readouterr().out
    assert "attention variants" in out
    assert set(res["rows"]) == {"gqa", "alibi", "softcap"}
    for r in res["rows"].values():
        assert "torch" in r["results"]
        assert r["max_rel_err_vs_torch"] < 1e-4
