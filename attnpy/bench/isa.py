"""``--isa``: attnpy on one instruction set, and its yardsticks on the same.

attnpy's set is chosen in-process (``attnpy.set_isa``). The yardsticks'
libraries choose theirs once, when they load, from environment variables:

============  ===================================  ==========================
library       what it runs                         variable (avx2 / avx512)
============  ===================================  ==========================
torch ATen    SDPA's own loops (softmax, ...)      ATEN_CPU_CAPABILITY
                                                   avx2 / avx512
torch MKL     SDPA's and autograd's products       MKL_ENABLE_INSTRUCTIONS
                                                   AVX2 / AVX512
torch oneDNN  bfloat16 SDPA's products             ONEDNN_MAX_CPU_ISA
                                                   AVX2 / AVX512_CORE
OpenBLAS      np.matmul, the tutorial's products   OPENBLAS_CORETYPE
                                                   Haswell / SkylakeX
NumPy SIMD    np.exp, np.sum, ... (the tutorial's  NPY_DISABLE_CPU_FEATURES
              softmax, the NumPy readers)          its AVX-512 targets / --
============  ===================================  ==========================

"portable" and "baseline" set ATEN_CPU_CAPABILITY=default (ATen's loops
built for the base architecture) and nothing else.

So ``--isa avx2`` re-runs the command in a child process whose
environment has these set (and ATTNPY_ISA, for the bench's own
subprocesses), unless the environment already has them. The child is
marked (CHILD_MARK) and never re-runs itself. There the header shows
what each library really runs (observe()), and a yardstick whose library
did not take the set is marked MISMATCH; targets against it are N/A.

"amx" and "neon" force nothing: the libraries' defaults are their best
on this CPU (AVX-512 with AMX where they have it; NEON is AArch64's
base). Under "portable" and "baseline" only ATen's loops match attnpy's
plain C kernels; MKL, oneDNN, OpenBLAS and NumPy's loops keep their own
sets, so targets against torch, OpenBLAS or NumPy are N/A there.
"""
import os
import re
import subprocess
import sys

CHILD_MARK = "ATTNPY_BENCH_ISA_CHILD"

# attnpy's set -> the libraries' settings (the first table above)
FORCE = {
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2",
             "ONEDNN_MAX_CPU_ISA": "AVX2", "DNNL_MAX_CPU_ISA": "AVX2",
             "OPENBLAS_CORETYPE": "Haswell"},
    "avx512": {"ATEN_CPU_CAPABILITY": "avx512", "MKL_ENABLE_INSTRUCTIONS": "AVX512",
               "ONEDNN_MAX_CPU_ISA": "AVX512_CORE", "DNNL_MAX_CPU_ISA": "AVX512_CORE",
               "OPENBLAS_CORETYPE": "SkylakeX"},
    "portable": {"ATEN_CPU_CAPABILITY": "default"},
    "baseline": {"ATEN_CPU_CAPABILITY": "default"},
}
DEFAULTS = {"amx": "the libraries' defaults: their best here, AVX-512 and AMX "
                   "where they have it",
            "neon": "the libraries' defaults: NEON is AArch64's base"}
NO_YARDSTICK = {"portable", "baseline"}

# which libraries each yardstick of the targets runs on
GROUPS = {"torch": ("aten", "mkl", "onednn"), "blas": ("openblas",),
          "numpy": ("numpy_simd",)}
LIBS = {"aten": "torch ATen", "mkl": "torch MKL", "onednn": "torch oneDNN",
        "openblas": "OpenBLAS", "numpy_simd": "NumPy SIMD"}


def _avx512_dispatch(simd):
    """NumPy's dispatch targets beyond AVX2 that this CPU has (from
    np.show_config's "SIMD Extensions": names differ between NumPy
    versions)."""
    return [n for n in (simd or {}).get("found", [])
            if n.startswith("AVX512") or n == "X86_V4"]


def numpy_simd():
    """NumPy's "SIMD Extensions" dict (baseline, found, not found), or None."""
    import numpy as np
    try:
        return dict(np.show_config(mode="dicts")["SIMD Extensions"])
    except Exception:
        return None


def forced_env(isa, simd=None):
    """The environment variables --isa `isa` sets (ATTNPY_ISA included)."""
    env = {"ATTNPY_ISA": isa}
    env.update(FORCE.get(isa, {}))
    if isa == "avx2":
        off = _avx512_dispatch(numpy_simd() if simd is None else simd)
        if off:
            env["NPY_DISABLE_CPU_FEATURES"] = " ".join(off)
    return env


def env_names(isa):
    """The names of the variables --isa `isa` may set."""
    return ["ATTNPY_ISA"] + list(FORCE.get(isa, {})) + (
        ["NPY_DISABLE_CPU_FEATURES"] if isa == "avx2" else [])


def plan(isa, environ, simd=None):
    """What main() does for --isa `isa` in a process with `environ`:
    ("here", {}) run in this process (the environment already matches, or
    the set forces no library, or this is the child already: a library
    that still did not take the set shows as MISMATCH, and there is no
    loop); ("child", env) run the same command in a child with env."""
    want = forced_env(isa, simd)
    if isa not in FORCE:
        return "here", want
    if all(environ.get(k) == v for k, v in want.items()):
        return "here", want
    if environ.get(CHILD_MARK):
        return "here", want
    env = dict(environ)
    env.update(want)
    env[CHILD_MARK] = "1"
    return "child", env


def run_child(argv, env, root):
    """``python -m attnpy bench argv`` in a child with env (attnpy from
    root first on its path); its exit code. Its output is this
    process's."""
    env = dict(env)
    env["PYTHONPATH"] = os.pathsep.join(
        [root] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    sys.stdout.flush()
    sys.stderr.flush()
    p = subprocess.Popen([sys.executable, "-m", "attnpy", "bench"] + list(argv), env=env)
    while True:
        try:
            return p.wait()
        except KeyboardInterrupt:    # the child got the Ctrl-C too: let it stop
            continue


# ---- what the libraries really run -------------------------------------------

_PROBE = r"""
import torch
a = torch.ones(64, 64)
torch.mm(a, a)                                   # MKL's first call prints its path
torch.nn.functional.conv2d(torch.ones(1, 64, 32, 32), torch.ones(64, 64, 3, 3))
print("ATEN", torch.backends.cpu.get_cpu_capability())   # oneDNN's conv prints its isa
"""


def parse_probe(text):
    """{"aten", "mkl", "onednn"} from the probe's output (MKL_VERBOSE and
    ONEDNN_VERBOSE lines); a library that printed nothing is missing."""
    out = {}
    m = re.search(r"^ATEN (\S+)", text, re.M)
    if m:
        out["aten"] = m.group(1)
    m = re.search(r"^MKL_VERBOSE .*? architecture (.*?)(?:, (?:Lnx|Win|OSX|Mac)\b|$)",
                  text, re.M)
    if m:
        names = re.findall(r"\(Intel\(R\) ([^)]+)\)", m.group(1))
        out["mkl"] = " + ".join(names) if names else m.group(1).strip()
    m = re.search(r"^onednn_verbose,.*?info,cpu,isa:(.*)$", text, re.M)
    if m:
        out["onednn"] = m.group(1).strip()
    return out


def probe_torch(timeout=120):
    """What torch's libraries run in a process with this environment: a
    child with MKL_VERBOSE and ONEDNN_VERBOSE on (their only report of the
    instruction set they chose) makes one product and one convolution.
    {} when it fails (the reason under "error")."""
    env = dict(os.environ, MKL_VERBOSE="1", ONEDNN_VERBOSE="1")
    try:
        p = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                           timeout=timeout, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": "%s: %s" % (type(exc).__name__, exc)}
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]}
    return parse_probe(p.stdout)


def _loaded_openblas():
    """Paths of the OpenBLAS libraries this process has loaded (Linux's
    /proc/self/maps), NumPy's among them once NumPy is imported."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split(None, 5)[-1].strip() for line in f if "openblas" in line.lower()}
    except OSError:
        return []
    return sorted(p for p in paths if p.startswith("/"))


def openblas_core():
    """The core type OpenBLAS chose when it loaded in this process, or None.

    Asked of the library itself (``openblas_get_corename`` under the
    prefix and suffix NumPy's wheels give it, by ctypes on the library
    already loaded), else of threadpoolctl when it is installed. Not from
    np.show_config: its "openblas configuration" names the core of the
    machine that built OpenBLAS."""
    import ctypes
    import numpy  # noqa: F401 (loads NumPy's OpenBLAS)
    for path in _loaded_openblas():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in ("openblas_get_corename", "openblas_get_corename64_",
                     "scipy_openblas_get_corename", "scipy_openblas_get_corename64_"):
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.restype = ctypes.c_char_p
                core = fn()
                if core:
                    return core.decode("ascii", "replace").strip()
    try:
        from threadpoolctl import threadpool_info
        for lib in threadpool_info():
            if lib.get("internal_api") == "openblas" and lib.get("architecture"):
                return lib["architecture"]
    except Exception:      # not installed, or a version that fails here
        pass
    return None


def _has(text, *words):
    t = text.upper().replace("-", "")
    return all(w in t for w in words)


def _lib_ok(isa, lib, seen):
    """Does the library's observed set `seen` match attnpy's forced `isa`?"""
    if isa in NO_YARDSTICK:
        return lib == "aten" and seen.upper() == "DEFAULT"
    if isa == "avx2":
        return {"aten": lambda s: s.upper() == "AVX2",
                "mkl": lambda s: _has(s, "AVX2") and not _has(s, "AVX512")
                and not _has(s, "AMX"),
                "onednn": lambda s: _has(s, "AVX2") and not _has(s, "AVX512")
                and not _has(s, "AMX") and not _has(s, "AVX10"),
                "openblas": lambda s: s.lower() == "haswell",
                "numpy_simd": lambda s: not _avx512_dispatch({"found": s.split()}),
                }[lib](seen)
    return {"aten": lambda s: s.upper() == "AVX512",
            "mkl": lambda s: _has(s, "AVX512") and not _has(s, "AMX"),
            "onednn": lambda s: _has(s, "AVX512") and not _has(s, "AMX"),
            "openblas": lambda s: s.lower() == "skylakex",
            }[lib](seen)


def judge(isa, forced, seen):
    """Each library's state for attnpy's set `isa`.

    forced: True when --isa was given. seen: {lib: what it runs} (a
    missing lib: not loaded or not reported). Returns {lib: {"seen",
    "state", "why"}} with state "matched", "MISMATCH", "default" (not
    forced: no --isa, or a set that forces nothing), "none" (no library
    runs attnpy's set: portable, baseline) or "unknown" (not reported)."""
    out = {}
    for lib in LIBS:
        s = seen.get(lib)
        if s is None:
            out[lib] = {"seen": None, "state": "unknown", "why": "not reported"}
        elif not forced or isa in DEFAULTS:
            out[lib] = {"seen": s, "state": "default", "why": "not forced"}
        elif isa in NO_YARDSTICK and lib != "aten":
            out[lib] = {"seen": s, "state": "none",
                        "why": "no library runs attnpy's %s code" % isa}
        elif isa not in FORCE or (lib == "numpy_simd" and isa != "avx2"):
            out[lib] = {"seen": s, "state": "default", "why": "not forced"}
        elif _lib_ok(isa, lib, s):
            out[lib] = {"seen": s, "state": "matched", "why": ""}
        else:
            out[lib] = {"seen": s, "state": "MISMATCH",
                        "why": "asked for %s, runs %s" % (isa, s)}
    return out


def group_state(libs, group):
    """(ok, why) of a yardstick group ("torch", "blas", "numpy"): not ok
    when one of its libraries is MISMATCH, or when no library runs
    attnpy's set (portable, baseline)."""
    bad = [(lib, libs[lib]) for lib in GROUPS[group] if lib in libs
           and libs[lib]["state"] in ("MISMATCH", "none")]
    if not bad:
        return True, ""
    lib, st = bad[0]
    if st["state"] == "none":
        return False, "no matched yardstick (%s)" % st["why"]
    return False, "%s not matched: %s" % (LIBS[lib], st["why"])
