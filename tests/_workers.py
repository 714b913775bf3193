"""How many pytest-xdist workers -n auto starts (tests/conftest.py's
pytest_xdist_auto_num_workers): one per CPU, as pytest-xdist counts them
(the physical cores when psutil is there, else the CPUs this process may
use), but no more than the free memory holds at WORKER_BYTES each: a
worker's peak RSS over the fast suite was 0.5-0.87 GiB (Linux x86-64), and
a many-core laptop with little memory must not swap."""
import os

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


def free_bytes():
    """The memory available to new processes, or None where unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def auto():
    return auto_workers(cpus(), free_bytes())
