"""Torch's results stored once, so that the fast suite checks attnpy
against torch without installing torch.

A test that compares with torch asks the ``torch_oracle`` fixture
(tests/conftest.py) for torch's side::

    want = torch_oracle("name", compute, *inputs)

``compute(*inputs)`` runs torch (it imports torch itself) and returns an
array or a tuple / list of arrays (``None`` items allowed). What the test
gets depends on pytest's ``--oracle`` option:

``stored`` (the default: the fast suite)
    the arrays stored under the test's id and ``name`` in
    ``tests/data/oracle/<test module>.npz``, with the digest of the inputs
    they were computed from. The test makes its inputs again (seeded); a
    digest that differs, or a missing entry, fails the test: the stored
    result no longer answers the test's question (remake the file with
    ``python tools/make_oracle_refs.py``).
``live`` (``.ci/run``'s oracle step, torch installed)
    ``compute(*inputs)`` now; it must equal the stored arrays up to a few
    units in the last place (torch's rounding may follow the CPU), and the
    inputs' digest must be the stored one: stale references fail.
``check`` (``tools/make_oracle_refs.py --check``)
    ``live``, and at the end every stored entry must have been read (an
    entry no test asks for is stale).
``record`` (``tools/make_oracle_refs.py``)
    ``compute(*inputs)`` now, written to the module's file at the end of
    the session.

In ``live``, ``check`` and ``record`` mode only the tests that use the
fixture, or that are marked ``oracle``, are collected. A test marked
``oracle`` (one the fast suite leaves out: a larger shape, the rest of a
grid) gets torch's result computed, never stored.
"""
import hashlib
import os

import numpy as np

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                    "oracle")
MODES = ("stored", "live", "check", "record")
# live against stored: this many units in the last place of the array's
# largest magnitude (torch's kernels round differently on other CPUs)
ULPS = 64


def digest(*inputs):
    """sha256 of the inputs' values, dtypes and shapes (nested tuples,
    lists and dicts of arrays, numbers, strings, None)."""
    h = hashlib.sha256()

    def feed(x):
        if isinstance(x, dict):
            h.update(b"{")
            for k in sorted(x):
                feed(k)
                feed(x[k])
            h.update(b"}")
        elif isinstance(x, (tuple, list)):
            h.update(b"(%d" % len(x))
            for v in x:
                feed(v)
            h.update(b")")
        elif isinstance(x, np.ndarray) or type(x).__module__ == "numpy":
            a = np.ascontiguousarray(x)
            h.update(f"{a.dtype.str}{a.shape}".encode())
            h.update(a.tobytes())
        elif x is None or isinstance(x, (bool, int, float, str)):
            h.update(f"{type(x).__name__}:{x!r};".encode())
        else:
            raise TypeError(f"torch_oracle: cannot digest {type(x)!r}")

    feed(inputs)
    return h.hexdigest()


def _flatten(result):
    """(items, n): the result's arrays (None kept) and -1 for one array,
    else the count."""
    if isinstance(result, (tuple, list)):
        return [None if r is None else np.asarray(r) for r in result], \
            len(result)
    return [np.asarray(result)], -1


def _close(live, stored, what):
    assert live.shape == stored.shape and live.dtype == stored.dtype, (
        f"{what}: torch now gives {live.dtype}{live.shape}, stored "
        f"{stored.dtype}{stored.shape}")
    if live.dtype.kind != "f":
        np.testing.assert_array_equal(live, stored, err_msg=what)
        return
    eps = np.finfo(live.dtype).eps
    scale = float(np.max(np.abs(stored[np.isfinite(stored)]), initial=0.0))
    np.testing.assert_allclose(live, stored, rtol=ULPS * eps,
                               atol=ULPS * eps * scale, equal_nan=True,
                               err_msg=f"{what}: torch's result moved from "
                                       f"the stored one (stale reference?)")


class Store:
    """The session's stored results, one .npz file a test module."""

    def __init__(self, mode):
        assert mode in MODES, mode
        self.mode = mode
        self.files = {}          # module -> {key: array}, as loaded
        self.recorded = {}       # module -> {key: array}
        self.read = set()        # (module, key) read in stored / live mode

    def path(self, module):
        return os.path.join(DATA, module + ".npz")

    def load(self, module):
        if module not in self.files:
            p = self.path(module)
            if os.path.exists(p):
                with np.load(p, allow_pickle=False) as f:
                    self.files[module] = {k: f[k] for k in f.files}
            else:
                self.files[module] = {}
        return self.files[module]

    def get(self, module, test, name, compute, inputs, live_only=False):
        """The result for test's `name` (live_only: a test marked oracle,
        which the fast suite leaves out: computed, never stored)."""
        key = f"{test}::{name}"
        if live_only:
            assert self.mode != "stored", f"{key}: marked oracle, not stored"
            items, n = _flatten(compute(*inputs))
            return _unflatten(items, n)
        sha = digest(*inputs)
        if self.mode == "record":
            items, n = _flatten(compute(*inputs))
            rec = self.recorded.setdefault(module, {})
            if key + "#n" in rec:      # a test module that imports the tests
                assert str(rec[key + "#sha"]) == sha, (   # of another
                    f"torch_oracle: {key} asked twice, with other inputs")
            rec[key + "#n"] = np.array(n)
            rec[key + "#sha"] = np.array(sha)
            for i, a in enumerate(items):
                if a is not None:
                    rec[f"{key}#{i}"] = a
            return _unflatten(items, n)
        stored = self.load(module)
        where = os.path.relpath(self.path(module),
                                os.path.dirname(os.path.dirname(DATA)))
        assert key + "#n" in stored, (
            f"{key}: no stored torch result in {where}; make it with "
            f"python tools/make_oracle_refs.py")
        assert str(stored[key + "#sha"]) == sha, (
            f"{key}: the test's inputs are not the ones the stored torch "
            f"result in {where} was computed from; remake it with "
            f"python tools/make_oracle_refs.py")
        n = int(stored[key + "#n"])
        items = [stored.get(f"{key}#{i}") for i in range(max(n, 1))]
        self.read.update((module, k) for k in stored
                         if k.startswith(key + "#"))
        if self.mode in ("live", "check"):
            live, n2 = _flatten(compute(*inputs))
            assert n2 == n, f"{key}: torch now returns {n2} items, stored {n}"
            for i, (a, b) in enumerate(zip(live, items)):
                assert (a is None) == (b is None), f"{key}#{i}: None changed"
                if a is not None:
                    _close(a, b, f"{key}#{i}")
            items = live
        return _unflatten(items, n)

    def finish(self):
        """record: write the file of each test module that asked torch,
        with this session's entries only (run all of a module's tests to
        remake its file: an entry left out fails its test, never passes
        it); returns a list of messages."""
        msgs = []
        if self.mode != "record":
            return msgs
        os.makedirs(DATA, exist_ok=True)
        for module, rec in sorted(self.recorded.items()):
            np.savez_compressed(self.path(module), **rec)
            msgs.append(f"torch_oracle: wrote {self.path(module)} "
                        f"({len(rec)} arrays, "
                        f"{os.path.getsize(self.path(module))} bytes)")
        return msgs

    def unread(self):
        """(module, key) entries of the stored files that no test read."""
        for name in sorted(os.listdir(DATA)) if os.path.isdir(DATA) else []:
            if name.endswith(".npz"):
                self.load(name[:-4])
        return sorted((m, k) for m, f in self.files.items() for k in f
                      if (m, k) not in self.read)


def _unflatten(items, n):
    return items[0] if n == -1 else tuple(items)
