"""Optional packages, imported when a feature needs them.

:func:`require` imports every module a feature needs and, when some are
missing, raises one ImportError that names all of them and the pip command
that installs them (not one package per attempt).
"""
import importlib
import importlib.util


def _pairs(modules):
    return [(m, m) if isinstance(m, str) else tuple(m) for m in modules]


def _found(name):
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):    # a missing parent package, or one blocked
        return False


def require(what, modules, *, extra=None, install=None, load=True):
    """Import `modules` for `what`; return them in order.

    Parameters
    ----------
    what : str
        What needs them, for the message ("attnpy's interactive figures").
    modules : sequence of str or (str, str)
        Module names, or ``(module, pip package)`` pairs where the two differ.
    extra : str, optional
        The attnpy extra that installs them all, named in the message.
    install : str, optional
        The install command to name instead of ``pip install <missing>``.
    load : bool, optional
        Import them (default); False only checks that they are installed
        (for packages whose import needs more than the feature does).

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
    pairs = _pairs(modules)
    missing = [pkg for name, pkg in pairs if not _found(name)]
    if missing:
        n = len(missing)
        msg = (f"{what} needs {n} package{'s' if n > 1 else ''} that "
               f"{'are' if n > 1 else 'is'} not installed: {', '.join(missing)}. "
               f"Install {'them' if n > 1 else 'it'} with: "
               f"{install or 'pip install ' + ' '.join(missing)}")
        if extra:
            msg += f' (or: pip install "attnpy[{extra}]")'
        raise ImportError(msg)
    return [importlib.import_module(name) for name, _ in pairs] if load else []
