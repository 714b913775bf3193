"""Benchmark decoding: one query row against a long key/value cache.

A thin wrapper: the benchmark is the ``decode`` part of
``python -m attnpy bench`` (attnpy/bench/decode.py), so that an installed
attnpy runs the same thing. This runs that part alone:

    python benchmarks/bench_decode.py [--threads N] [--repeat N] [--json PATH]

attnpy, torch SDPA, a streaming read of the same K and V bytes on
attnpy's threads, and NumPy reductions reading an array of the cache's
size (one part per thread), sampled in blocks that take turns
(``--sampling interleaved``: one sample of each in turn); a windowed
decode, the 16-bit rows, and the decode targets. Any other option of
``python -m attnpy bench`` works (``--isa NAME`` among them).
"""
import os
import sys

if __name__ == "__main__":
    # run from a source checkout: use the attnpy built in place next to this folder
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from attnpy.bench import main
    sys.exit(main(["--only", "decode"] + sys.argv[1:]))
