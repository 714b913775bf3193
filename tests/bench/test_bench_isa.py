"""``python -m attnpy bench --isa NAME``: the environment of the re-run
child, the refusal of an unknown set, the header's lines on the CPU and
the instruction sets, and the targets of ``--isa avx2``. No timing is
asserted (the streaming read the decode rows are set against,
``attnpy._core.read_bytes``: tests/reliability/test_read_bytes.py)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import attnpy
from attnpy import bench
from attnpy.bench import isa as isa_mod
from attnpy.bench import report, targets

ROOT = os.path.dirname(os.path.abspath(list(attnpy.__path__)[0]))
SIMD_AVX512 = {"baseline": ["X86_V2"], "found": ["X86_V3", "X86_V4", "AVX512_ICL"],
               "not found": ["AVX512_SPR"]}


# ---- the child's environment -------------------------------------------------

def test_forced_env_of_each_set():
    e = isa_mod.forced_env("avx2", SIMD_AVX512)
    assert e["ATTNPY_ISA"] == "avx2"
    assert e["ATEN_CPU_CAPABILITY"] == "avx2"
    assert e["OPENBLAS_CORETYPE"] == "Haswell"
    assert e["MKL_ENABLE_INSTRUCTIONS"] == "AVX2"
    # NumPy's AVX-512 loops that this CPU has are switched off, no others
    assert e["NPY_DISABLE_CPU_FEATURES"].split() == ["X86_V4", "AVX512_ICL"]
    # a CPU without AVX-512: nothing of NumPy's to switch off
    assert "NPY_DISABLE_CPU_FEATURES" not in isa_mod.forced_env(
        "avx2", {"baseline": ["X86_V2"], "found": ["X86_V3"]})

    e = isa_mod.forced_env("avx512", SIMD_AVX512)
    assert (e["ATTNPY_ISA"], e["ATEN_CPU_CAPABILITY"], e["OPENBLAS_CORETYPE"]) == (
        "avx512", "avx512", "SkylakeX")
    assert "NPY_DISABLE_CPU_FEATURES" not in e

    for name in ("portable", "baseline"):
        assert isa_mod.forced_env(name, SIMD_AVX512) == {
            "ATTNPY_ISA": name, "ATEN_CPU_CAPABILITY": "default"}
    # amx: the libraries' defaults are their best here; only attnpy's own
    assert isa_mod.forced_env("amx", SIMD_AVX512) == {"ATTNPY_ISA": "amx"}
    # env_names lists every variable forced_env may set
    for name in ("avx2", "avx512", "portable", "amx"):
        assert set(isa_mod.forced_env(name, SIMD_AVX512)) <= set(isa_mod.env_names(name))


def test_plan_runs_a_child_once_with_the_environment():
    base = {"PATH": "/bin", "OPENBLAS_CORETYPE": "Zen"}
    where, env = isa_mod.plan("avx2", base, SIMD_AVX512)
    assert where == "child"
    assert env["PATH"] == "/bin"                      # the rest is kept
    assert env["OPENBLAS_CORETYPE"] == "Haswell"      # the caller's value replaced
    assert env["ATEN_CPU_CAPABILITY"] == "avx2" and env["ATTNPY_ISA"] == "avx2"
    assert env[isa_mod.CHILD_MARK] == "1"
    assert base == {"PATH": "/bin", "OPENBLAS_CORETYPE": "Zen"}   # not modified
    # the child (or a shell that set all of it) runs here: no loop
    assert isa_mod.plan("avx2", env, SIMD_AVX512)[0] == "here"
    done = dict(isa_mod.forced_env("avx2", SIMD_AVX512))
    assert isa_mod.plan("avx2", done, SIMD_AVX512)[0] == "here"
    # a child whose environment did not take runs here too (marked MISMATCH)
    assert isa_mod.plan("avx2", {isa_mod.CHILD_MARK: "1"}, SIMD_AVX512)[0] == "here"
    assert isa_mod.plan("portable", {}, SIMD_AVX512)[0] == "child"
    assert isa_mod.plan("amx", {}, SIMD_AVX512) == ("here", {"ATTNPY_ISA": "amx"})


def test_run_child_reruns_the_command(monkeypatch):
    seen = {}

    class FakePopen:
        def __init__(self, cmd, env):
            seen.update(cmd=cmd, env=env)

        def wait(self):
            return 7

    monkeypatch.setattr(isa_mod.subprocess, "Popen", FakePopen)
    rc = isa_mod.run_child(["--isa", "avx2", "--quick"], {"PYTHONPATH": "/x", "A": "1"}, "/r")
    assert rc == 7
    assert seen["cmd"] == [sys.executable, "-m", "attnpy", "bench", "--isa", "avx2", "--quick"]
    assert seen["env"]["PYTHONPATH"] == os.pathsep.join(["/r", "/x"]) and seen["env"]["A"] == "1"


def test_main_reruns_itself_for_isa(monkeypatch):
    name = "baseline"                   # every machine has it
    got = {}

    def fake_child(argv, env, root):
        got.update(argv=argv, env=env, root=root)
        return 5

    monkeypatch.delenv(isa_mod.CHILD_MARK, raising=False)
    monkeypatch.delenv("ATEN_CPU_CAPABILITY", raising=False)
    monkeypatch.setattr(isa_mod, "run_child", fake_child)
    assert bench.main(["--isa", name, "--quick"]) == 5
    assert got["argv"] == ["--isa", name, "--quick"] and got["root"] == ROOT
    assert got["env"]["ATTNPY_ISA"] == name
    assert got["env"]["ATEN_CPU_CAPABILITY"] == "default"


def test_unknown_isa_names_the_known_sets(capsys):
    assert bench.main(["--isa", "sse9"]) == 2
    err = capsys.readouterr().err
    assert "--isa: 'sse9' is not an instruction set this machine runs" in err
    assert "attnpy.isas(): " + ", ".join(attnpy.isas()) in err


# ---- what the libraries run --------------------------------------------------

def test_parse_probe_and_judge():
    text = ("MKL_VERBOSE oneMKL 2024.0 Product build 1 for Intel(R) 64 architecture "
            "Intel(R) Advanced Vector Extensions 2 (Intel(R) AVX2) enabled processors, "
            "Lnx 2.00GHz lp64 gnu_thread\n"
            "onednn_verbose,v1,info,cpu,isa:Intel AVX2\n"
            "ATEN AVX2\n")
    seen = isa_mod.parse_probe(text)
    assert seen == {"aten": "AVX2", "mkl": "AVX2", "onednn": "Intel AVX2"}
    seen.update(openblas="Haswell", numpy_simd="X86_V2 X86_V3")
    libs = isa_mod.judge("avx2", True, seen)
    assert {k: v["state"] for k, v in libs.items()} == dict.fromkeys(isa_mod.LIBS, "matched")
    # OpenBLAS did not take the set: its targets are not judged
    libs = isa_mod.judge("avx2", True, dict(seen, openblas="SkylakeX"))
    assert libs["openblas"]["state"] == "MISMATCH"
    assert isa_mod.group_state(libs, "blas") == (
        False, "OpenBLAS not matched: asked for avx2, runs SkylakeX")
    assert isa_mod.group_state(libs, "torch") == (True, "")
    # without --isa every library runs its default
    assert {v["state"] for v in isa_mod.judge("avx512", False, seen).values()} == {"default"}
    # portable: ATen's default loops match, nothing else does
    libs = isa_mod.judge("portable", True, dict(seen, aten="DEFAULT"))
    assert libs["aten"]["state"] == "matched" and libs["mkl"]["state"] == "none"
    assert not isa_mod.group_state(libs, "torch")[0]


def test_openblas_core_is_the_running_one():
    blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"]
    if "openblas" not in blas or "avx2" not in attnpy.isas():
        pytest.skip("NumPy's BLAS is %s on a CPU whose sets are %s" % (blas, attnpy.isas()))
    code = "from attnpy.bench import isa; print(isa.openblas_core())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, OPENBLAS_CORETYPE="Haswell",
                                  PYTHONPATH=ROOT), cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Haswell"


# ---- the header --------------------------------------------------------------

def test_header_names_cpu_and_every_set(tmp_path):
    """A real re-run (baseline: on every machine; torch skipped, so no
    probe): the header names the CPU model, attnpy's set, the child's
    environment and OpenBLAS's core type or what set it."""
    path = tmp_path / "b.json"
    env = dict(os.environ)
    env.pop(isa_mod.CHILD_MARK, None)
    env["PYTHONPATH"] = ROOT
    p = subprocess.run([sys.executable, "-m", "attnpy", "bench", "--isa", "baseline",
                        "--only", "matmul", "--matmul-size", "64", "--repeat", "1",
                        "--skip", "torch", "--json", str(path)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    out = p.stdout
    m = json.loads(path.read_text())["meta"]
    assert m["isa"] == "baseline" and m["isa_forced"] == "baseline" and m["isa_child"]
    assert m["forced_env"]["ATEN_CPU_CAPABILITY"] == "default"
    assert "  CPU: %s, %d CPUs" % (m["cpu"], os.cpu_count()) in out
    with open("/proc/cpuinfo") as f:
        model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")),
                     None)
    if model is not None:
        assert m["cpu"] == model
    assert ("instruction sets: attnpy baseline (--isa baseline; re-run in a child process "
            "with ATEN_CPU_CAPABILITY=default)") in out
    assert "yardsticks run: " in out and "NO MATCHED YARDSTICK for baseline" in out
    ob = m["yardsticks"]["openblas"]["seen"]
    assert ("OpenBLAS %s" % ob in out) if ob else ("OpenBLAS's core type not reported" in out)
    # no --isa avx2: no list of its targets
    assert "targets of --isa avx2" not in out


def test_isa_lines_without_isa_and_unreported_openblas():
    libs = isa_mod.judge("avx512", False, {"aten": "AVX512"})
    m = {"isa": "avx512", "isa_forced": None, "yardsticks": libs,
         "openblas_coretype_env": "SkylakeX"}
    lines = report.isa_lines(m)
    assert lines[0].startswith("instruction sets: attnpy avx512 (the default;")
    assert lines[1] == "yardsticks run: torch ATen AVX512 (their defaults)"
    assert lines[2] == ("OpenBLAS's core type not reported: as set by "
                        "OPENBLAS_CORETYPE=SkylakeX")
    m["openblas_coretype_env"] = None
    assert report.isa_lines(m)[2].endswith("its own choice (OPENBLAS_CORETYPE not set)")
    # a value with spaces is quoted as a shell would need it
    m.update(isa_forced="avx2", isa_child=True,
             forced_env={"ATTNPY_ISA": "avx2", "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL"})
    assert "NPY_DISABLE_CPU_FEATURES='X86_V4 AVX512_ICL'" in report.isa_lines(m)[0]


# ---- the targets of --isa avx2 -----------------------------------------------

def _matched_run(isa_forced, libs=None):
    case = lambda L, gf, x: {  # noqa: E731
        "dtype": "float32", "causal": False, "L": L, "guard": {"ok": True},
        "results": {"attnpy": {"gflops": gf}}, "speedup_vs_torch": x, "skipped": {}}
    back = [{"dtype": "float32", "causal": False, "torch_vs_attnpy": 1.4, "bwd_vs_fwd": 2.0},
            {"dtype": "float32", "causal": True, "torch_vs_attnpy": 1.4, "bwd_vs_fwd": 2.5},
            {"dtype": "float64", "causal": False, "torch_vs_attnpy": 2.1, "bwd_vs_fwd": 1.5}]
    return {"meta": {"isa_forced": isa_forced, "isa": isa_forced or "avx512",
                     "yardsticks": libs},
            "cases": [case(1024, 95.0, 1.3), case(4096, 80.0, 1.1)],
            "matmul": {"float32": {"gflops": 100.0}}, "backward": {"shapes": back}}


def test_avx2_targets_judge_the_figures():
    assert targets.evaluate_matched(_matched_run(None)) == []
    assert targets.evaluate_matched(_matched_run("avx512")) == []
    T = {t["target"]: t for t in targets.evaluate_matched(_matched_run("avx2"))}
    assert len(T) == 10
    st = {k: v["status"] for k, v in T.items()}
    assert st["forward float32 (1,12,1024,64) non-causal vs np.matmul"] == "PASS"
    assert T["forward float32 (1,12,1024,64) non-causal vs np.matmul"]["measured"].startswith(
        "95% (95.0 / 100.0 GF/s)")
    assert st["forward float32 (1,12,4096,64) non-causal vs np.matmul"] == "FAIL"
    assert st["forward float32 (1,12,1024,64) non-causal vs torch SDPA"] == "PASS"
    assert st["forward float32 (1,12,4096,64) non-causal vs torch SDPA"] == "FAIL"
    assert st["forward+backward float32 (1,12,1024,64) vs torch autograd"] == "PASS"
    assert st["forward+backward float32 (1,12,2048,64) causal vs torch autograd"] == "FAIL"
    assert st["forward+backward float64 (1,12,1024,64) vs torch autograd"] == "PASS"
    assert st["backward / forward float32 (1,12,2048,64) causal"] == "FAIL"
    assert st["backward / forward float64 (1,12,1024,64)"] == "PASS"
    # no shapes or torch times in these rows: no bound in the figure
    assert T["forward+backward float32 (1,12,1024,64) vs torch autograd"]["measured"] == "1.40x"
    # torch's MKL did not take AVX2: its targets are N/A, their figures kept
    libs = isa_mod.judge("avx2", True, {"aten": "AVX2", "mkl": "AVX-512", "openblas": "Haswell"})
    T = {t["target"]: t for t in targets.evaluate_matched(_matched_run("avx2", libs))}
    t = T["forward float32 (1,12,1024,64) non-causal vs torch SDPA"]
    assert t["status"] == "N/A" and t["measured"].startswith("1.30x  -- not judged: torch MKL")
    assert T["forward float32 (1,12,1024,64) non-causal vs np.matmul"]["status"] == "PASS"
    assert T["backward / forward float32 (1,12,1024,64)"]["status"] == "PASS"


def test_fwdbwd_bound_is_seven_products_at_the_matmul_rate():
    # 7 products of 2*1*12*1024*1024*64 flops at 200 GF/s: 56.37 ms
    row = {"dtype": "float32", "causal": False, "shape": [1, 12, 1024, 64],
           "results": {"torch": {"median_s": 0.0679}}, "torch_vs_attnpy": 1.2,
           "bwd_vs_fwd": 2.2}
    mm = {"float32": {"gflops": 200.0}}
    rate, x = targets.fwdbwd_bound(row, mm)
    least = 7 * 2.0 * 12 * 1024 * 1024 * 64 / 200e9
    assert rate == 200.0 and x == pytest.approx(0.0679 / least) and 1.20 < x < 1.21
    # causal: the (L + 1) / 2L of the pairs at or below the diagonal
    _, xc = targets.fwdbwd_bound(dict(row, causal=True), mm)
    assert xc == pytest.approx(x * 2 * 1024 / 1025)
    # no matmul figure of the dtype, or no torch time: no bound
    assert targets.fwdbwd_bound(dict(row, dtype="float64"), mm) is None
    assert targets.fwdbwd_bound(dict(row, results={}), mm) is None
    # in the target's figure, and said when the target is past it
    R = _matched_run("avx2")
    R["backward"]["shapes"][0] = row
    R["matmul"] = mm
    T = {t["target"]: t for t in targets.evaluate_matched(R)}
    t = T["forward+backward float32 (1,12,1024,64) vs torch autograd"]
    assert t["status"] == "FAIL"
    assert t["measured"] == ("1.20x; at np.matmul's 200.0 GF/s its 7 products allow at "
                             "most 1.20x: past this machine's matmul")
    R["backward"]["shapes"][0] = dict(row, results={"torch": {"median_s": 0.1}},
                                      torch_vs_attnpy=1.31)
    t = {t["target"]: t for t in targets.evaluate_matched(R)}[
        "forward+backward float32 (1,12,1024,64) vs torch autograd"]
    assert t["status"] == "PASS" and t["measured"].endswith("allow at most 1.77x")
