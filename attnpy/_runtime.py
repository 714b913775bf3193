"""The runtime: how many threads the kernels use."""
from __future__ import annotations

from . import _core

__all__ = ["set_num_threads", "get_num_threads"]


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
