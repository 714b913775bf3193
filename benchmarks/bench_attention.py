"""Benchmark attnpy.attention vs the tutorial's NumPy code vs PyTorch SDPA.

A thin wrapper: the benchmark lives in attnpy/bench/ so that
``python -m attnpy bench`` runs the same thing from an installed attnpy.

    python benchmarks/bench_attention.py [--quick | --full] [--json PATH]
                                         [--threads N] [--repeat N] ...

See benchmarks/README.md for what the columns mean.
"""
import os
import sys

if __name__ == "__main__":
    # run from a source checkout: use the attnpy built in place next to this folder
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from attnpy.bench import main
    sys.exit(main(sys.argv[1:]))
