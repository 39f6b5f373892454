"""Benchmark ``em-floor``: time per EM iteration against the memory-bandwidth floor.

An EM iteration must at least read each annotation's codes in the E-step and again in
the M-step and write, then read, the task posteriors; no implementation can beat the
time the machine takes to move those bytes. This benchmark measures, for Dawid-Skene
(``ds``, its defaults: the Dirichlet prior and ``lone_labels="vote"``), one-coin
Dawid-Skene (``onecoin-ds``), GLAD and majority vote (``mv``) at 5M annotations with 10
classes (1M tasks) and 100M annotations with 2 classes (20M tasks):

* ``floor_mb``, the bytes one iteration must touch, counted in the layout the kernels
  read (annotations sorted by task, so a task's annotations are one range of a CSR
  pointer ``indptr`` of 8 bytes a task; codes int32; posteriors float64, K a task):

  - ``ds``: E-step and M-step each read ``indptr`` and one int32 code per annotation
    (``worker * K + label``, built once per fit) and write, respectively read, the
    posteriors: ``2 (8 T + 4 N) + 2 (8 K T)`` bytes;
  - ``onecoin-ds``: the same with two codes (worker, label) per annotation:
    ``2 (8 T + 8 N) + 2 (8 K T)``;
  - ``glad``: each pass over the annotations (the E-step; every evaluation of the
    per-worker sums of the M-step's ``alpha`` Newton steps and step halvings, which
    GLAD's algorithm needs; one pass per ``log beta`` step, whose sums, step and
    halvings are each task's own; ``passes`` is their number per iteration, counted in
    the run) reads ``indptr``, two codes, the task difficulties (8 T) and the posteriors
    (8 K T, written by the E-step): ``passes (16 T + 8 N + 8 K T)``;
  - ``mv`` (not iterative: one fit): read the task and label codes (8 N) and write the
    vote counts and the one-hot posteriors (8 K T each): ``8 N + 16 K T``.

  The worker x class tables (a few hundred KB) stay in cache and are not counted.
* ``bandwidth_gbs``, what a plain NumPy reduction (``a.sum()`` over a float64 array of
  256 MB, best of 5) reaches in the same process: probed before the first method of a
  size and after each, the best so far (the strictest floor, on a machine whose load
  varies), and ``floor_ms`` = bytes / bandwidth.
* ``iteration_ms``, the time of an iteration once EM runs: the median of the
  durations of iterations 3 to 2 + M of a fit with ``tol=0`` and ``max_iter`` = 2 + M
  (from its ``history_``, whose ``seconds`` are stamped after each iteration; the
  smallest median of the repeats), so that set-up (the codes' layout, the initial
  posteriors, the labels) is not counted; for ``mv`` the time of a fit (its vote
  counts not cached beforehand). ``marginal_ms`` (raw CSV only) is the measure used
  before: fits with ``max_iter`` = 2 and 2 + M (best of the repeats each), their
  difference divided by M. At 100M annotations, where M = 3 and one fit each, it was
  dominated by the set-up's variation (it allocates and fills some 2 GB, and two
  identical fits' set-ups differed by more than M iterations) on a shared machine,
  while the iterations' own durations varied little.
* ``ratio`` = iteration / floor (the goal of issue 46: within 2x for ``ds``,
  ``onecoin-ds`` and ``mv``, within 3x for ``glad``), and ``numpy_ms``, the same
  marginal time on the NumPy path (``CROWDLEARN_NO_NUMBA``'s path; at 5M only), with
  ``speedup`` = numpy / fused.

The kernels are numba's (:mod:`crowdlearn.aggregation._kernels`), on numba's threads
(``threads``); the NumPy reduction runs on one. Crowd: the Dawid-Skene model of the
``incremental`` benchmark (Dirichlet confusion rows with the largest entry moved to
the diagonal), 5 labels a task from 2,000 workers (each task's a uniformly drawn first
worker and the next 4 codes), sorted by task.
"""

from __future__ import annotations

import gc
import os
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks._registry import BenchResult, machine_description, register
from crowdlearn import CrowdData
from crowdlearn.aggregation import GLAD, DawidSkene, MajorityVote, OneCoinDawidSkene, _kernels
from crowdlearn.simulate.large import worker_confusions

NAME = "em-floor"
#: (annotations, classes): the sizes of issue 46.
SIZES = ((5_000_000, 10), (100_000_000, 2))
QUICK_SIZES = ((150_000, 10), (200_000, 2))
FEEDBACK, N_WORKERS = 5, 2_000
#: Array of the bandwidth probe (bytes).
PROBE_BYTES, QUICK_PROBE_BYTES = 256 << 20, 16 << 20
#: (first max_iter, extra iterations M) of the marginal measure; at the largest size
#: M = 3 and one run each (GLAD's iteration there takes about a minute).
BASE_ITER, EXTRA_ITER, LARGE_EXTRA_ITER, QUICK_EXTRA_ITER = 2, 8, 3, 2
#: The NumPy path is timed at sizes up to this many annotations.
NUMPY_UP_TO = 5_000_000
METHODS: dict[str, Callable[[int], Any]] = {
    "ds": lambda n: DawidSkene(max_iter=n, tol=0, progress=False),
    "onecoin-ds": lambda n: OneCoinDawidSkene(max_iter=n, tol=0, progress=False),
    "glad": lambda n: GLAD(max_iter=n, tol=0, progress=False),
    "mv": lambda n: MajorityVote(),
}
GOALS = {"ds": 2.0, "onecoin-ds": 2.0, "mv": 2.0, "glad": 3.0}
#: Kernels whose calls are GLAD's passes over the annotations.
GLAD_PASSES = ("glad_e_range", "glad_alpha_range", "glad_beta_newton_range")


def simulate(n_annotations: int, k: int, seed: int) -> CrowdData:
    """A Dawid-Skene crowd sorted by task (see the module docstring)."""
    rng = np.random.default_rng(seed)
    n_tasks = n_annotations // FEEDBACK
    cumulative = np.cumsum(worker_confusions(N_WORKERS, k, rng), axis=2)
    cumulative[..., -1] = 1.0
    truth = rng.integers(0, k, n_tasks)
    task = np.repeat(np.arange(n_tasks, dtype=np.int32), FEEDBACK)
    first = rng.integers(0, N_WORKERS, n_tasks)
    worker = ((first[:, None] + np.arange(FEEDBACK)) % N_WORKERS).astype(np.int32).ravel()
    del first
    label = np.empty(len(task), dtype=np.int32)
    for start in range(0, len(task), 1 << 21):  # bounded temporaries
        rows = slice(start, start + (1 << 21))
        thresholds = cumulative[worker[rows], truth[task[rows]]]
        draws = rng.random(len(thresholds))[:, None]
        label[rows] = (draws > thresholds).sum(axis=1)
    return CrowdData(task, worker, label, n_tasks=n_tasks, n_workers=N_WORKERS, n_classes=k)


def bandwidth(n_bytes: int, repeats: int = 5) -> float:
    """Bytes per second of ``a.sum()`` over a float64 array of ``n_bytes`` (best of)."""
    array = np.ones(n_bytes // 8)
    array.sum()
    best = min(_timed(array.sum) for _ in range(repeats))
    return n_bytes / best


def _timed(call: Callable[[], Any]) -> float:
    clock = time.perf_counter()
    call()
    return time.perf_counter() - clock


def floor_bytes(method: str, n: int, n_tasks: int, k: int, passes: float) -> float:
    """Bytes an iteration must touch (see the module docstring)."""
    posteriors = 8 * k * n_tasks
    if method == "ds":
        return 2 * (8 * n_tasks + 4 * n) + 2 * posteriors
    if method == "onecoin-ds":
        return 2 * (8 * n_tasks + 8 * n) + 2 * posteriors
    if method == "glad":
        return passes * (16 * n_tasks + 8 * n + posteriors)
    return 8 * n + 2 * posteriors


class _CallCounter:
    """Counts the steps run through :func:`_kernels.run_ranges` while active (one call
    is one pass over a block's annotations)."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self._run = _kernels.run_ranges

    def __enter__(self) -> _CallCounter:
        def counted(name: str, *args: Any) -> Any:
            self.calls[name] += 1
            return self._run(name, *args)

        _kernels.run_ranges = counted
        return self

    def __exit__(self, *exc: object) -> None:
        _kernels.run_ranges = self._run


def fit_time(
    method: str, data: CrowdData, max_iter: int, repeats: int
) -> tuple[float, int, float]:
    """Best wall time of a fit, the GLAD passes of its last run, and the smallest over
    the repeats of the median duration of the iterations after the first
    :data:`BASE_ITER` (from the fit's ``history_``; NaN without one)."""
    best, passes, per_iteration = float("inf"), 0, float("inf")
    for _ in range(repeats):
        data.__dict__.pop("vote_counts", None)  # MV: count the votes in the fit
        gc.collect()
        with _CallCounter() as counter:
            clock = time.perf_counter()
            model = METHODS[method](max_iter).fit(data)
            best = min(best, time.perf_counter() - clock)
        passes = sum(counter.calls[name] for name in GLAD_PASSES)
        history = getattr(model, "history_", None)
        if history is not None and len(history) > BASE_ITER:
            durations = np.diff(history["seconds"].to_numpy())[BASE_ITER - 1 :]
            per_iteration = min(per_iteration, float(np.median(durations)))
    return best, passes, per_iteration if per_iteration < float("inf") else float("nan")


def marginal(method: str, data: CrowdData, extra: int, repeats: int) -> tuple[float, float, float]:
    """Seconds per iteration (the median of iterations 3 to 2 + ``extra``; a fit's time
    for MV), GLAD passes per iteration, and the marginal seconds per iteration of the
    difference of two fits (see the module docstring)."""
    if method == "mv":
        seconds = fit_time(method, data, 0, repeats)[0]
        return seconds, 0.0, seconds
    short, short_passes, _ = fit_time(method, data, BASE_ITER, repeats)
    long, long_passes, per_iteration = fit_time(method, data, BASE_ITER + extra, repeats)
    return (
        per_iteration,
        (long_passes - short_passes) / extra,
        max(long - short, 0.0) / extra,
    )


def threads() -> int:
    """numba's thread count (1 without numba)."""
    return _kernels.n_threads() if _kernels.available() else 1


@register(NAME, "time per EM iteration against the memory-bandwidth floor (5M K=10, 100M K=2)")
def bench_em_floor(out: Path, quick: bool, seeds: int) -> BenchResult:
    sizes = QUICK_SIZES if quick else SIZES
    extra = QUICK_EXTRA_ITER if quick else EXTRA_ITER
    repeats = 1 if quick else 3
    fused = _kernels.available()
    rows = []
    for n, k in sizes:
        if not quick and n >= 100_000_000:
            extra, repeats = LARGE_EXTRA_ITER, 1
        data = simulate(n, k, seed=0)
        probe = QUICK_PROBE_BYTES if quick else PROBE_BYTES
        speed = bandwidth(probe)
        for method in METHODS:
            # warm-up: compilation or the kernels' cache, numba's threads
            METHODS[method](1).fit(data)
            seconds, passes, difference = marginal(method, data, extra, repeats)
            # the probe again after each method: the best bandwidth seen at this size
            # (the strictest floor) on a machine whose load varies
            speed = max(speed, bandwidth(probe))
            n_bytes = floor_bytes(method, n, data.n_tasks, k, passes)
            floor_s = n_bytes / speed
            row = {
                "annotations": n,
                "classes": k,
                "method": method,
                "floor_mb": n_bytes / 1e6,
                "bandwidth_gbs": speed / 1e9,
                "floor_ms": floor_s * 1e3,
                "iteration_ms": seconds * 1e3,
                "marginal_ms": difference * 1e3,
                "ratio": seconds / floor_s,
                "goal": GOALS[method],
                "passes": passes if method == "glad" else np.nan,
                "numpy_ms": np.nan,
                "speedup": np.nan,
                "threads": threads(),
                "kernels": "numba" if fused else "numpy",
            }
            if n <= NUMPY_UP_TO and fused:
                saved = os.environ.get("CROWDLEARN_NO_NUMBA")
                os.environ["CROWDLEARN_NO_NUMBA"] = "1"
                try:
                    numpy_s, _, _ = marginal(method, data, extra, repeats)
                finally:
                    if saved is None:
                        del os.environ["CROWDLEARN_NO_NUMBA"]
                    else:
                        os.environ["CROWDLEARN_NO_NUMBA"] = saved
                row["numpy_ms"] = numpy_s * 1e3
                row["speedup"] = numpy_s / seconds if seconds > 0 else np.nan
            rows.append(row)
            print(f"{NAME}: {row}", flush=True)
        del data
        gc.collect()
    raw = pd.DataFrame(rows)
    columns = [
        "annotations",
        "classes",
        "method",
        "floor_mb",
        "bandwidth_gbs",
        "floor_ms",
        "iteration_ms",
        "ratio",
        "goal",
        "passes",
        "numpy_ms",
        "speedup",
        "threads",
    ]
    met = raw[raw["ratio"] <= raw["goal"]]
    summary = (
        f"{len(met)} of {len(raw)} rows within their goal (ratio <= goal); "
        f"kernels: {'numba' if fused else 'NumPy (numba unavailable)'}."
    )
    notes = [
        "floor_mb: bytes an iteration must touch (module docstring of "
        "benchmarks/speed/floor.py: codes read in the E- and M-steps, posteriors "
        "written and read; GLAD: per pass, times its passes); floor_ms = floor_mb / "
        "bandwidth_gbs (a NumPy sum over 256 MB, one thread, same process, best of the "
        "probes so far at that size); "
        "iteration_ms: median duration of iterations 3..2+M of a fit with "
        "max_iter=2+M, tol=0 (its history_), M=8 and the smallest of 3 fits at 5M, M=3 "
        "and one fit at 100M (mv: a fit); the raw CSV's marginal_ms is the former "
        "measure, (fit with max_iter=2+M minus fit with max_iter=2) / M; "
        "numpy_ms: the same on the NumPy path (5M only).",
        f"Machine: {machine_description()}; numba threads: {threads()}.",
    ]
    return BenchResult(raw=raw, table=raw[columns], notes=notes, summary=summary)
