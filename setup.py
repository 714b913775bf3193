"""Build script for attnpy's C extension (attnpy._core).

Every C file under csrc/ (the pure C core in csrc/core/, the binding in
csrc/python/) is compiled into one extension module. No -march=native
and no fast-math flags: the AVX2 / AVX-512 kernels are selected at run
time (``__attribute__((target("avx2,fma")))`` with gcc and clang; MSVC
emits their intrinsics without a flag), so the build runs on any x86-64;
AArch64 builds always have the NEON kernels. IEEE semantics (-inf masks,
NaN checks) are kept, and a*b+c is never contracted into an FMA behind
the kernels' back (-ffp-contract=off: clang contracts by default, and
gcc does on AArch64), so every platform rounds the same operations.
"""
import functools
import glob
import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# csrc/core/testing/ holds the C tests' oracles: not part of the extension
sources = sorted(s for s in glob.glob(os.path.join("csrc", "**", "*.c"),
                                      recursive=True)
                 if os.path.join("csrc", "core", "testing") not in s)



def msvc():
    """True when setuptools will compile with MSVC (or clang-cl)."""
    if sys.platform != "win32":
        return False
    from setuptools._distutils.ccompiler import get_default_compiler
    return get_default_compiler() == "msvc"


if msvc():
    # C11 with its atomics (Visual Studio 2022 17.5+); Win32 threads
    # (csrc/core/runtime/thread.h); /fp:precise is the default.
    compile_args = ["/std:c11", "/experimental:c11atomics", "/O2", "/W3"]
    link_args = []
else:
    compile_args = ["-std=c11", "-O3", "-Wall", "-Wextra",
                    "-fno-strict-aliasing", "-ffp-contract=off",
                    "-fvisibility=hidden"]
    link_args = []
    if sys.platform != "win32":  # mingw-w64 builds use Win32 threads
        compile_args.append("-pthread")
        link_args.append("-pthread")
    # No debug info (Python's own CFLAGS bring -g): a quarter of the
    # compile time, and the wheels are built without it too. CFLAGS=-g
    # (or -ggdb ...) in the environment keeps it; the sanitizer builds
    # below add line tables back (-g1: a report's file and line, at 60%
    # of -g's compile time).
    if not any(f.startswith("-g") and f != "-g0"
               for f in os.environ.get("CFLAGS", "").split()):
        compile_args.append("-g0")
    if os.environ.get("ATTNPY_SANITIZE"):
        san = "-fsanitize=" + os.environ["ATTNPY_SANITIZE"]
        compile_args += [san, "-fno-omit-frame-pointer", "-g1", "-O1"]
        # tools/sanitize.sh links the C tests with these objects: the
        # sets' math rows they check (csrc/core/isa/kernels.h)
        compile_args.append("-DATTN_MATH_ROWS=1")
        link_args += [san]

ext = Extension(
    "attnpy._core",
    sources=sources,
    depends=glob.glob(os.path.join("csrc", "**", "*.h"), recursive=True),
    include_dirs=[np.get_include(), os.path.join("csrc", "core")],
    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_2_0_API_VERSION"),
                   ("NPY_TARGET_VERSION", "NPY_2_0_API_VERSION")],
    libraries=[] if sys.platform == "win32" else ["m"],
    extra_compile_args=compile_args,
    extra_link_args=link_args,
)

def build_jobs():
    """Compiler processes at once: ATTNPY_BUILD_JOBS, else one per CPU."""
    try:
        return max(1, int(os.environ.get("ATTNPY_BUILD_JOBS", "0"))
                   or len(os.sched_getaffinity(0)))
    except (AttributeError, ValueError):
        return os.cpu_count() or 1


_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"', re.M)


@functools.lru_cache(maxsize=None)
def compile_cost(path, depth=0):
    """A file's size with its quoted #includes (from its folder or
    csrc/core) expanded, once per inclusion: the kernel files include the
    tile templates once per ISA and precision, and take 5-50x longer to
    compile than the rest. An estimate, only for the order of compiles.
    Cached: the same header is reached along many paths (the expansion
    took a minute uncached)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return 0
    cost = len(text)
    if depth < 16:
        for name in _INCLUDE.findall(text):
            for base in (os.path.dirname(path), os.path.join("csrc", "core")):
                if os.path.isfile(os.path.join(base, name)):
                    cost += compile_cost(os.path.join(base, name), depth + 1)
                    break
    return cost


class parallel_build_ext(build_ext):
    """build_ext compiling the extension's C files in parallel (setuptools
    compiles one file at a time; its --parallel only builds several
    extensions at once). Only for the unix-style compilers (gcc, clang,
    mingw), whose compile() is _setup_compile then _compile per file;
    MSVC keeps its own. The costliest files start first (compile_cost):
    in path order the longest one started late and ran alone at the end
    (a 2-CPU build took ~1.2x as long)."""

    def build_extensions(self):
        cc = self.compiler
        jobs = build_jobs()
        if cc.compiler_type in ("unix", "mingw32", "cygwin") and jobs > 1:
            def compile(sources, output_dir=None, macros=None,
                        include_dirs=None, debug=0, extra_preargs=None,
                        extra_postargs=None, depends=None):
                macros, objects, extra_postargs, pp_opts, build = \
                    cc._setup_compile(output_dir, macros, include_dirs,
                                      sources, depends, extra_postargs)
                cc_args = cc._get_cc_args(pp_opts, debug, extra_preargs)

                def one(obj):
                    src, ext_ = build[obj]
                    cc._compile(obj, src, ext_, cc_args, extra_postargs,
                                pp_opts)

                todo = sorted((o for o in objects if o in build),
                              key=lambda o: -compile_cost(build[o][0]))
                with ThreadPoolExecutor(jobs) as pool:
                    list(pool.map(one, todo))
                return objects

            cc.compile = compile
        super().build_extensions()


setup(ext_modules=[ext], cmdclass={"build_ext": parallel_build_ext})
