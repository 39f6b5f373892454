"""Fused EM kernels (numba): one pass over the annotations per EM step, in parallel.

The per-block EM steps of Dawid-Skene, one-coin Dawid-Skene, GLAD and the vote counts
are, in NumPy, a chain of passes (a sparse product, ``np.bincount`` over cells, a
softmax) each with temporaries of the annotations' size. The kernels here do each step
in one pass over a block held in CSR form (``indptr`` per task, then the annotations'
codes), parallel over the cores:

* **E-steps** are ``prange`` loops over tasks: each task's row of log-scores is summed
  from its own annotations, normalised and written by the one thread that owns it (no
  write race, no temporary).
* **M-steps** split the tasks into a few ranges of equal annotation counts; each range
  adds into its own partial statistics (``prange`` over the ranges), which are then
  summed (the reduce).

Each kernel computes the same arithmetic, in the same order per task, as the NumPy
path it replaces, so the results agree to rounding (the M-step's partial sums change
only the order of a sum; tests/aggregation/test_kernels.py checks 1e-10).

**When they run.** :func:`active` says whether a block of ``n`` annotations uses the
kernels: numba importable, not disabled by the environment variable
``CROWDLEARN_NO_NUMBA=1``, and ``n >= MIN_ANNOTATIONS`` (below that, NumPy's
vectorised passes take well under a millisecond and a first call would pay the
compilation where the kernels are not yet cached). Compiled kernels are cached on disk
(``cache=True``: compilation is paid once per machine). If numba cannot be imported,
or a kernel fails to compile, the NumPy path is used, with a one-time
:class:`RuntimeWarning`. Threads: numba's (``NUMBA_NUM_THREADS``, default the number
of cores; ``numba.set_num_threads`` at run time).
"""

from __future__ import annotations

import importlib
import os
import warnings
from typing import Any

import numpy as np

#: Blocks with fewer annotations keep the NumPy path (see the module docstring).
MIN_ANNOTATIONS = 100_000

#: Upper bound, in bytes, on the per-range partial statistics of an M-step.
PARTIAL_BYTES = 256 << 20

_STATE: dict[str, Any] = {"kernels": None, "failed": False, "noted": False}


def disabled_by_environment() -> bool:
    """Whether ``CROWDLEARN_NO_NUMBA`` asks for the NumPy path."""
    return os.environ.get("CROWDLEARN_NO_NUMBA", "").strip().lower() not in ("", "0", "false")


def available() -> bool:
    """Whether the compiled kernels can be used (numba loads, not disabled)."""
    if disabled_by_environment() or _STATE["failed"]:
        return False
    return _kernels() is not None


def active(n_annotations: int) -> bool:
    """Whether a block of ``n_annotations`` annotations runs on the kernels."""
    return n_annotations >= MIN_ANNOTATIONS and available()


def _note(reason: str) -> None:
    """The one-time note that the NumPy path is used instead."""
    _STATE["failed"] = True
    if not _STATE["noted"]:
        _STATE["noted"] = True
        warnings.warn(
            f"crowdlearn: the compiled EM kernels are unavailable ({reason}); "
            "using the NumPy path (same results, slower)",
            RuntimeWarning,
            stacklevel=3,
        )


def _kernels() -> Any:
    """The module of compiled kernels (imports numba on first use), or None."""
    if _STATE["kernels"] is None and not _STATE["failed"]:
        try:
            _numba_kernels = importlib.import_module("crowdlearn.aggregation._numba_kernels")
        except Exception as error:
            _note(f"numba could not be imported: {type(error).__name__}: {error}")
            return None
        _STATE["kernels"] = _numba_kernels
    return _STATE["kernels"]


def run(name: str, *args: Any) -> Any:
    """Call kernel ``name``; None (after the one-time note) if it cannot compile."""
    module = _kernels()
    if module is None:
        return None
    try:
        return getattr(module, name)(*args)
    except Exception as error:
        if _is_compile_error(error):
            _note(f"{name} failed to compile: {type(error).__name__}: {error}")
            return None
        raise


def _is_compile_error(error: Exception) -> bool:
    try:
        from numba.core.errors import NumbaError
    except Exception:
        return False
    return isinstance(error, NumbaError)


def task_ranges(indptr: np.ndarray, n_ranges: int) -> np.ndarray:
    """Bounds (n_ranges + 1,) of task ranges with about equal annotation counts."""
    n_tasks = len(indptr) - 1
    targets = np.linspace(0, int(indptr[-1]), n_ranges + 1)[1:-1]
    cuts = np.searchsorted(indptr, targets)
    bounds = np.concatenate([[0], np.clip(cuts, 0, n_tasks), [n_tasks]]).astype(np.int64)
    return np.maximum.accumulate(bounds)


def n_ranges(partial_size: int, itemsize: int = 8) -> int:
    """Number of M-step ranges: the thread count, bounded by :data:`PARTIAL_BYTES`."""
    try:
        import numba

        threads = int(numba.get_num_threads())
    except Exception:
        threads = 1
    fit = max(1, PARTIAL_BYTES // max(partial_size * itemsize, 1))
    return int(max(1, min(threads, fit)))


def e_ranges(indptr: np.ndarray) -> np.ndarray:
    """Task ranges for a parallel E-step: several per thread, for load balance."""
    return task_ranges(indptr, 8 * n_ranges(0))


def empty_gold(gold: np.ndarray | None) -> np.ndarray:
    """The gold codes as the kernels take them: an empty array for none."""
    return np.empty(0, dtype=np.int64) if gold is None else np.ascontiguousarray(gold)
