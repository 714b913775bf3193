"""How many pytest-xdist workers -n auto starts (tests/conftest.py's
pytest_xdist_auto_num_workers): one per CPU, as pytest-xdist counts them
(the physical cores when psutil is there, else the CPUs this process may
use), but no more than the free memory holds at WORKER_BYTES each: a
worker's peak RSS over the fast suite was 0.5-0.87 GiB (Linux x86-64), and
a many-core laptop or container with little memory must not swap or be
killed. The free memory is the least of the system's available memory
and what this process's control group (Linux cgroup v2 or v1; Docker,
Kubernetes) still allows."""
import os

from attnpy.bench.env import _mem_available

WORKER_BYTES = 1 << 30


def auto_workers(cpus, free_bytes):
    """cpus, at most free_bytes // WORKER_BYTES, at least 1 (free_bytes
    None: unknown, then cpus)."""
    if free_bytes is not None:
        cpus = min(cpus, free_bytes // WORKER_BYTES)
    return max(1, cpus)


def cpus():
    try:
        import psutil
        n = psutil.cpu_count(logical=False) or psutil.cpu_count()
    except ImportError:
        n = None
    if not n:
        n = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
             else os.cpu_count())
    return n or 1


def _read_int(path):
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None    # "max": no limit


def cgroup_room(proc="/proc/self/cgroup", root="/sys/fs/cgroup"):
    """What this process's memory cgroup still allows (limit - usage), or
    None without a limit (or off Linux). proc and root: the files read."""
    try:
        with open(proc) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        hid, ctrl, path = (line.split(":", 2) + ["", ""])[:3]
        if hid == "0" and ctrl == "":                       # v2
            d, limit, used = root, "memory.max", "memory.current"
        elif "memory" in ctrl.split(","):                   # v1
            d = os.path.join(root, "memory")
            limit, used = "memory.limit_in_bytes", "memory.usage_in_bytes"
        else:
            continue
        # the group's own directory, else (inside a container's namespace,
        # where the path names the host's tree) the mounted root's
        for d in (d + path.rstrip("/"), d):
            lim = _read_int(os.path.join(d, limit))
            if lim is not None and lim < 1 << 60:   # v1 writes ~2^63: none
                return max(0, lim - (_read_int(os.path.join(d, used)) or 0))
    return None


def free_bytes():
    """The least of the available memory and the cgroup's room; None where
    neither is known."""
    known = [b for b in (_mem_available(), cgroup_room()) if b is not None]
    return min(known) if known else None


def auto():
    return auto_workers(cpus(), free_bytes())
