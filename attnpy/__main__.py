"""Command line: ``python -m attnpy [explain|bench] ...``.

``python -m attnpy``           the "the cat sat" worked example, step by step
``python -m attnpy explain``   the walkthrough of any example (see --help)
``python -m attnpy bench``     attnpy vs the tutorial NumPy code vs PyTorch
"""
import os
import sys


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "explain":
        from .teach.cli import cli
        return cli(argv[1:])
    if argv and argv[0] == "bench":
        from .bench import main as bench_main
        return bench_main(argv[1:])
    from ._demo import main as demo_main
    return demo_main(argv)


def run():
    """main(), quiet when the reader stops early (``| head``)."""
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader has gone: send what is left of stdout nowhere, so the
        # interpreter's own flush at exit does not complain again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    return code


if __name__ == "__main__":
    sys.exit(run())
