"""Shapes, modes and tolerances of ``python -m attnpy bench``."""


B_, H_, E_ = 1, 12, 64

ALL_LENGTHS = (128, 256, 512, 1024, 2048, 4096, 8192)

TUTORIAL_MAX_L = 4096          # beyond this the tutorial is not run (memory/time)

MODES = {
    # lengths, seconds per case, min/max interleaved samples, min seconds per sample
    "quick": dict(lengths=(256, 1024), budget=0.6, min_samples=3, max_samples=9,
                  min_sample_s=0.005, parts=("tiny",)),
    "default": dict(lengths=ALL_LENGTHS[:-1], budget=2.0, min_samples=5,
                    max_samples=25, min_sample_s=0.02,
                    parts=("tiny", "memory", "threads", "mha", "forward", "backward",
                           "decode")),
    "full": dict(lengths=ALL_LENGTHS, budget=5.0, min_samples=7, max_samples=41,
                 min_sample_s=0.05, parts=("tiny", "memory", "threads", "mha", "forward",
                                           "backward", "decode", "variants")),
}

TINY_SHAPE = (1, 3, 4)         # (B, L, E) = the tutorial's worked example size

MEMORY_L = 65536

MEMORY_LIMIT_MIB = 64

THREADS_L = 2048

MATMUL_N = 2048

# correctness guard: max|a - ref| <= ATOL + RTOL * max|ref|
GUARD_TOL = {"float32": (2e-5, 1e-4), "float64": (1e-11, 1e-9)}

GUARD_ROWS = 64                # rows checked when the full tutorial is not run

# the shapes of the "% of matmul" targets: there the matmul yardstick is also
# sampled interleaved with the contenders, so that load changes hit it alike
MM_TARGET_CASES = {("float32", False, 1024), ("float32", False, 4096),
                   ("float64", False, 1024)}

# Tests may point this at another function (e.g. a deliberately wrong one, to
# check that the correctness guard catches it). None = use attnpy.attention.
_attention_override = None
