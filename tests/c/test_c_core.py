"""Build and run the C core's own test programs (tests/c/test_*.c).

test_core.c checks the fast attention path (every instruction set the CPU
has, 1 and 2 threads) against the naive C oracle over many random problems,
the vector exp's ulp error, concurrent callers, fork() after a threaded
call, the poll / cancel protocol and the small kernels; test_decode.c the
split-K decode path (bitwise over 1, 2, 3 and 5 threads), attn_merge and
attn_rope; test_bwd.c the backward pass (fast vs naive on every ISA,
bitwise over 1/2/3/4/7 threads; naive vs finite differences) and the
forward's lse; test_platform.c the portability layer (x86 feature
detection, the caller's floating-point environment on every pool thread).
test_layer.c the layer family (layer norm, bias + activation, forward
and backward, against long double oracles and finite differences;
bitwise over 1, 2, 3 and 5 threads); test_llama.c the Llama pieces
(RMS norm, silu / swiglu, forward and backward, the same way).
test_variants.c the attention
variants (window, pos_shift, ALiBi, softcap): the naive oracle against
the equivalent explicit mask and bias, its backward against finite
differences, the tile and decode paths forward and backward against it on
every ISA, bitwise over 1 to 4 threads, a windowed decode that never reads
outside its window; test_variants_tile.c the variants in the tiled
forward and backward kernels on test_core.c's and test_bwd.c's random
problems, and window block skipping. All without the Python binding.
"""
import glob
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORE = os.path.join(ROOT, "csrc", "core")
CC = os.environ.get("CC", "gcc")


FLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g", "-pthread",
         "-I" + CORE]


def core_sources():
    # every C file of the pure core (csrc/core/; the binding is csrc/python/)
    return sorted(glob.glob(os.path.join(CORE, "**", "*.c"), recursive=True))


def compile_checked(cmd):
    """Run one compiler command: it must succeed without a single warning."""
    build = subprocess.run(cmd, capture_output=True, text=True)
    assert build.returncode == 0, "build failed:\n" + build.stderr
    assert build.stderr == "", "compiler warnings:\n" + build.stderr


@pytest.fixture(scope="module")
def core_objects(tmp_path_factory):
    """The core compiled once for every program (was once per program),
    a few compilers at a time."""
    if shutil.which(CC) is None:
        pytest.fail(f"C compiler {CC!r} not found (needed to build the C tests)")
    out = tmp_path_factory.mktemp("core")
    jobs = []
    for i, src in enumerate(core_sources()):
        obj = str(out / f"{i:02d}_{os.path.basename(src)[:-2]}.o")
        jobs.append((obj, [CC, *FLAGS, "-c", src, "-o", obj]))
    objs, running = [], []
    width = max(2, os.cpu_count() or 2)
    for obj, cmd in jobs:
        running.append((cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                               stderr=subprocess.PIPE, text=True)))
        objs.append(obj)
        while len(running) >= width or (running and obj == jobs[-1][0]):
            cmd_done, proc = running.pop(0)
            _, err = proc.communicate()
            assert proc.returncode == 0, f"build failed: {cmd_done}\n{err}"
            assert err == "", f"compiler warnings: {cmd_done}\n{err}"
    return objs


@pytest.mark.skipif(sys.platform == "win32", reason="gcc/pthreads build")
@pytest.mark.parametrize("program", ["test_core", "test_decode", "test_bwd",
                                     "test_platform", "test_layer",
                                     "test_llama", "test_variants",
                                     "test_variants_tile"])
def test_c_core(tmp_path, core_objects, program):
    exe = str(tmp_path / program)
    compile_checked([CC, *FLAGS, os.path.join(ROOT, "tests", "c", program + ".c"),
                     *core_objects, "-lm", "-o", exe])
    run = subprocess.run([exe, "60"], capture_output=True, text=True,
                         timeout=300)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    last = out.strip().splitlines()[-1]
    passed, failed = int(last.split()[0]), int(last.split()[2])
    assert failed == 0 and passed > (40 if program == "test_platform"
                                     else 1000), out
