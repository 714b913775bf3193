"""Optional packages, imported when a feature needs them.

:func:`require` imports every module a feature needs and, when some are
missing, raises one ImportError that names all of them and the pip command
that installs them (not one package per attempt).
"""
import importlib


def require(what, modules, *, extra=None):
    """Import `modules` for `what`; return them in order.

    Parameters
    ----------
    what : str
        What needs them, for the message ("attnpy's interactive figures").
    modules : sequence of str or (str, str)
        Module names, or ``(module, pip package)`` pairs where the two differ.
    extra : str, optional
        The attnpy extra that installs them all, named in the message.

    Raises
    ------
    ImportError
        Naming every missing package and a pip command for them.

    Examples
    --------
    >>> from attnpy._deps import require
    >>> (np,) = require("this example", ["numpy"])
    >>> try:
    ...     require("this example", [("no_such_mod_1", "pkg-one"), "no_such_mod_2"])
    ... except ImportError as e:
    ...     print(e)
    this example needs 2 packages that are not installed: pkg-one, no_such_mod_2. Install them with: pip install pkg-one no_such_mod_2
    """
    found, missing = [], []
    for m in modules:
        name, pkg = (m, m) if isinstance(m, str) else m
        try:
            found.append(importlib.import_module(name))
        except ImportError:
            missing.append(pkg)
    if missing:
        n = len(missing)
        msg = (f"{what} needs {n} package{'s' if n > 1 else ''} that "
               f"{'are' if n > 1 else 'is'} not installed: {', '.join(missing)}. "
               f"Install {'them' if n > 1 else 'it'} with: pip install {' '.join(missing)}")
        if extra:
            msg += f' (or: pip install "attnpy[{extra}]")'
        raise ImportError(msg)
    return found
