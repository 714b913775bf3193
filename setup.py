"""Build script for attnpy's C extension (attnpy._core).

Every C file under csrc/ (the pure C core in csrc/core/, the binding in
csrc/python/) is compiled into one extension module. No -march=native
and no fast-math flags: the AVX2 kernels are selected at run time
(``__attribute__((target("avx2,fma")))``), so the build runs on any x86-64,
and IEEE semantics (-inf masks, NaN checks) are kept.
"""
import glob
import os
import sys

import numpy as np
from setuptools import Extension, setup

sources = sorted(glob.glob(os.path.join("csrc", "**", "*.c"), recursive=True))

compile_args = ["-std=c11", "-O3", "-Wall", "-Wextra", "-fno-strict-aliasing",
                "-fvisibility=hidden", "-pthread"]
link_args = ["-pthread"]
if os.environ.get("ATTNPY_SANITIZE"):
    san = "-fsanitize=" + os.environ["ATTNPY_SANITIZE"]
    compile_args += [san, "-fno-omit-frame-pointer", "-g", "-O1"]
    link_args += [san]
if sys.platform == "win32":  # MSVC understands none of the above
    compile_args, link_args = [], []

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

setup(ext_modules=[ext])
