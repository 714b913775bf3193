"""What is being compared: attnpy (or a stand-in), torch, thread counts,
and the machine's description printed atop every run."""
import contextlib
import os
import platform

import numpy as np

from . import config
from . import isa as isa_mod
from .tutorial import _standin_attention


class Env:
    """What is being compared: attnpy (or the stand-in), torch, thread counts."""

    def __init__(self, args):
        import attnpy  # a missing build raises ImportError: reported by main()
        self.attnpy = attnpy
        self.root = os.path.dirname(os.path.abspath(list(attnpy.__path__)[0]))
        self.attention = config._attention_override or getattr(attnpy, "attention", None)
        self.standin = self.attention is None
        if self.standin:
            self.attention = _standin_attention
        self.sdpa = getattr(attnpy, "scaled_dot_product_attention", None)
        self.has_threads = hasattr(attnpy, "set_num_threads")
        ncpu = os.cpu_count() or 1
        self.threads = args.threads or (attnpy.get_num_threads()
                                        if hasattr(attnpy, "get_num_threads") else ncpu)
        if self.has_threads:
            attnpy.set_num_threads(self.threads)
        # --isa: attnpy's set here, and ATTNPY_ISA for the bench's own
        # subprocesses (peak memory); restored by close()
        self.isa_forced = getattr(args, "isa", None)
        self._isa_env = os.environ.get("ATTNPY_ISA")
        if self.isa_forced:
            attnpy.set_isa(self.isa_forced)
            os.environ["ATTNPY_ISA"] = self.isa_forced
        self.isa = None
        core = getattr(attnpy, "_core", None)
        if core is not None and hasattr(core, "isa"):
            self.isa = core.isa()

        self.torch = self.F = None
        self.torch_error = None
        if "torch" not in args.skip:
            try:
                import torch
                import torch.nn.functional as F
                self.torch, self.F = torch, F
                torch.set_num_threads(self.threads)
            except Exception as exc:  # ImportError, or a broken install
                self.torch_error = "%s: %s" % (type(exc).__name__, exc)
        else:
            self.torch_error = "skipped (--skip torch)"

        # NumPy's BLAS (the tutorial's matmuls, the matmul reference): pinned
        # to the same thread count when threadpoolctl is there.
        self.blas_threads = "default (install threadpoolctl to pin it)"
        self._stack = contextlib.ExitStack()
        try:
            from threadpoolctl import threadpool_limits
            self._stack.enter_context(threadpool_limits(limits=self.threads, user_api="blas"))
            self.blas_threads = str(self.threads)
        except ImportError:
            env = os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS")
            if env:
                self.blas_threads = env + " (from the environment)"
        if self.torch is not None:
            self._stack.enter_context(self.torch.inference_mode())
        self.yardsticks = self._observe()

    def _observe(self):
        """What each yardstick library runs, judged against attnpy's set
        (bench/isa.py)."""
        seen = {}
        self.torch_probe = {}
        if self.torch is not None:
            cpu = getattr(getattr(self.torch, "backends", None), "cpu", None)
            if cpu is not None and hasattr(cpu, "get_cpu_capability"):
                seen["aten"] = cpu.get_cpu_capability()
            self.torch_probe = isa_mod.probe_torch()
            seen.update({k: v for k, v in self.torch_probe.items() if k in ("mkl", "onednn")})
        core = isa_mod.openblas_core()
        if core:
            seen["openblas"] = core
        simd = isa_mod.numpy_simd()
        if simd is not None:
            seen["numpy_simd"] = " ".join(simd.get("baseline", []) + simd.get("found", []))
        return isa_mod.judge(self.isa, bool(self.isa_forced), seen)

    def close(self):
        self._stack.close()
        if self.isa_forced:
            if self._isa_env is None:
                os.environ.pop("ATTNPY_ISA", None)
            else:
                os.environ["ATTNPY_ISA"] = self._isa_env

    def describe(self):
        try:
            blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
            blas = "%s %s" % (blas.get("name", "?"), blas.get("version", ""))
        except Exception:
            blas = "?"
        cpu = platform.processor() or platform.machine()
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if line.startswith("model name"):
                        cpu = line.split(":", 1)[1].strip()
                        break
        except OSError:
            pass
        return {
            "attnpy": getattr(self.attnpy, "__version__", "?"),
            "attnpy_path": self.root,
            "attention": "STAND-IN (tutorial NumPy code)" if self.standin else
                         ("override" if config._attention_override else "attnpy.attention"),
            "isa": self.isa, "threads": self.threads,
            "isa_forced": self.isa_forced, "isas": _isas(self.attnpy),
            "isa_child": bool(os.environ.get(isa_mod.CHILD_MARK)),
            "forced_env": ({k: os.environ.get(k) for k in isa_mod.env_names(self.isa_forced)}
                           if self.isa_forced else {}),
            "yardsticks": self.yardsticks,
            "openblas_coretype_env": os.environ.get("OPENBLAS_CORETYPE"),
            "torch_probe_error": self.torch_probe.get("error"),
            "numpy": np.__version__, "blas": blas.strip(), "blas_threads": self.blas_threads,
            "torch": self.torch.__version__ if self.torch is not None else None,
            "torch_note": self.torch_error,
            "python": platform.python_version(), "cpu": cpu,
            "cpu_count": os.cpu_count(),
            "loadavg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        }


def _isas(attnpy):
    try:
        return list(attnpy.isas())
    except Exception:     # an attnpy without the switch
        return []


def _mem_available():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _fmt_bytes(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return "%.1f %s" % (n / size, unit)
    return "%d B" % n
