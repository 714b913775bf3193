"""The runtime: how many threads the kernels use, and which instruction set."""
from __future__ import annotations

from . import _core
from ._validate import flag as _flag

__all__ = ["set_num_threads", "get_num_threads", "isas", "get_isa", "set_isa"]


def set_num_threads(n: int) -> int:
    """Set how many threads attnpy's kernels use; returns the previous count.

    The default is the number of CPUs this process may run on, or the
    environment variable ``ATTNPY_NUM_THREADS`` when set (an integer from
    1 to 1024; any other value is ignored with a RuntimeWarning).

    Parameters
    ----------
    n : int
        From 1 to 1024. Results are the same bits for any count.

    Returns
    -------
    int
        The previous count.

    Examples
    --------
    >>> import attnpy
    >>> old = attnpy.set_num_threads(1)
    >>> attnpy.get_num_threads()
    1
    >>> _ = attnpy.set_num_threads(old)
    """
    return _core.set_num_threads(n)


def get_num_threads() -> int:
    """The number of threads attnpy's kernels use (see set_num_threads).

    Returns
    -------
    int
        Between 1 and 1024.

    Examples
    --------
    >>> import attnpy
    >>> attnpy.get_num_threads() >= 1
    True
    """
    return _core.get_num_threads()


def isas(*, opt_in: bool = True) -> list[str]:
    """The instruction sets this machine can run, best first.

    Every set runs the same kernels and gives the same bits -- on this
    machine and on any other, whatever its CPU or operating system -- so
    the choice is speed only. The exception is an opt-in set: ``"amx"``
    (Linux on a CPU with AMX-BF16), whose bfloat16 products by AMX tiles
    round in their own way; it is never chosen unless asked for.

    ``"portable"`` (the plain C kernels, the rule every other set follows;
    built for AVX2 + FMA too where the CPU has them) and ``"baseline"``
    (the same C for the architecture's base: slow on x86-64, whose base
    has no fused multiply-add) are always last; before them come the
    CPU's vector sets, such as ``"avx512"``, ``"avx2"`` or ``"neon"``. The
    Platforms page of the user guide lists every set and where it runs.

    NumPy's own products (the matrix products of `MultiHeadAttention` and
    `TransformerEncoderLayer`) are NumPy's BLAS, outside this promise.

    Parameters
    ----------
    opt_in : bool, default True
        Include the opt-in sets.

    Returns
    -------
    list of str
        Names `set_isa` accepts; ``"portable"`` and ``"baseline"`` are
        always there.

    Examples
    --------
    >>> import attnpy
    >>> "portable" in attnpy.isas()
    True
    >>> attnpy.get_isa() in attnpy.isas()
    True
    """
    opt_in = _flag(opt_in, "isas", "opt_in")
    return [name for name, opt, usable in _core.isas()
            if usable and (opt_in or not opt)]


def get_isa() -> str:
    """The instruction set attnpy's kernels use now (see `isas`).

    The first choice is the environment variable ``ATTNPY_ISA`` when it
    names a set this machine can run (anything else is ignored with a
    RuntimeWarning), else the best set that is not opt-in.

    Returns
    -------
    str
        One of `isas`.

    Examples
    --------
    >>> import attnpy
    >>> attnpy.get_isa() in attnpy.isas()
    True
    """
    return _core.isa()


def set_isa(name: str) -> str:
    """Choose the instruction set attnpy's kernels use; returns the previous one.

    Results do not change (every set but an opt-in one gives the same
    bits: see `isas`), only speed -- useful to compare sets, or for a
    teacher to check an answer key on the portable code.

    Parameters
    ----------
    name : str
        One of `isas`, or ``"auto"``: the best set that is not opt-in.

    Returns
    -------
    str
        The set in use before the call.

    Raises
    ------
    ValueError
        If this machine cannot run `name` (the message lists what it can).

    Examples
    --------
    >>> import numpy as np, attnpy
    >>> x = np.linspace(-1, 1, 12).reshape(3, 4)
    >>> old = attnpy.set_isa("portable")
    >>> a = attnpy.attention(x, x, x)
    >>> _ = attnpy.set_isa(old)
    >>> bool(np.array_equal(a, attnpy.attention(x, x, x)))
    True
    """
    if not isinstance(name, str):
        raise TypeError(f"set_isa: name must be a str, got {type(name).__name__}")
    old = _core.isa()
    try:
        _core.set_isa(name)
    except ValueError:
        raise ValueError(
            f"set_isa: {name!r} is not an instruction set this machine can "
            f"run; choose one of {isas()} or 'auto'") from None
    return old
