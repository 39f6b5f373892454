"""Fused EM kernels (numba): one pass over the annotations per EM step, in parallel.

The per-block EM steps of Dawid-Skene, one-coin Dawid-Skene, GLAD and the vote counts
are, in NumPy, a chain of passes (a sparse product, ``np.bincount`` over cells, a
softmax) each with temporaries of the annotations' size. The kernels here do each step
in one pass over a block held in CSR form (``indptr`` per task, then the annotations'
codes), on several cores:

* a step is cut into ranges of tasks with about equal annotation counts; each range
  is one call of a compiled sequential kernel (``nogil``) on a pool of threads.
* **E-steps**: a range writes the posterior rows of its own tasks (no write race), in
  cache-sized tiles (the scores of a few hundred tasks are summed, exponentiated by a
  vectorised ``exp`` and normalised while they sit in cache: no temporary of the
  annotations' or the tasks' size).
* **M-steps**: each range adds into its own partial statistics (per worker or per
  (worker, label)), which are then summed (the reduce).
* **Products in registers**: Dawid-Skene's E-step with 3 to 16 classes multiplies
  probabilities (no ``exp`` per class) and its M-step reads a task's posteriors once,
  both with the K values in a tuple that stays in registers (kernels compiled per K,
  :mod:`~crowdlearn.aggregation._numba_products`; :func:`use_products`).
* **Shared passes**: Dawid-Skene's E-step can add the next M-step's sums of the rows
  it writes (:func:`ds_em_step`); majority vote counts, picks the class (random ties:
  NumPy's draws, reached by jump-ahead, :func:`pcg64_maps`) and writes the one-hot
  row of each task in one pass (:func:`majority_vote`); a trial of GLAD's ``alpha``
  step writes each task's sums for the ``log beta`` step that follows.

Each kernel computes the same arithmetic, in the same order per task, as the NumPy
path it replaces, so the results agree to rounding (the partial sums change only the
order of a sum; tests/aggregation/test_kernels.py checks 1e-10).

**Why a thread pool rather than numba's ``prange``**: the same kernels, but numba's
parallel regions (OpenMP's spinning barriers) lost 3-7x on a machine whose cores are
shared with other processes, while threads that sleep on a queue cost nothing there;
and a pool may be called from several threads at once (the Dask engine's), which
numba's ``workqueue`` layer refuses. It also compiles several times faster.

**When they run.** :func:`active` says whether a block of ``n`` annotations uses the
kernels: numba importable, not disabled by the environment variable
``CROWDLEARN_NO_NUMBA=1``, and ``n * weight >= MIN_ANNOTATIONS`` (2M), or ``n >=
MIN_LOADED`` (100k) once the kernels are loaded in the process. ``weight``
(:func:`weight`) is ``K / 2`` for Dawid-Skene and one-coin, 10 for GLAD, 1 for the
one-pass votes: 2M at K=2, 1M at K=4, 400k at K=10, 200k for GLAD.

Why: the first use in a process pays a fixed cost to import numba and load the cached
kernels (a first fit of 100k annotations on the kernels takes 0.27-0.33 s in a fresh
process against 0.01-0.09 s on NumPy), while the NumPy path's cost grows with the
annotations, the classes (its (annotations, K) temporaries) and the iterations. A fit
does not know its iterations beforehand, so the rule takes the size and K, and accepts a
bounded loss on short fits for the gain on long ones. Measured by
``benchmarks/speed/_kernel_threshold.py`` on a quiet machine (load 0.4, 2026-11-27; a
first fit in a fresh process, NumPy / kernels, medians of 3 for DS and 2 for GLAD): DS
K=2 (7 iterations) 0.28 at 1M, 0.55 at 2M; K=4 (13 iterations) 0.52 at 1M, 0.83 at 2M;
K=10 (53 iterations) 0.56 at 250k, 1.07 at 500k, 1.50 at 1M; GLAD K=2 1.45 at 250k, 2.95
at 500k; K=10 2.86 at 500k. The losses are at most the loading cost, once a process
(K=4 at 1M: 0.36 s against 0.19 s); the gains grow with the fit: ``aggregation-speed``'s
ten-class DS of 500k annotations (81 iterations) takes 0.568 s on the kernels against
0.82 s on NumPy, and ``scale``'s ten-class fit of 1M (27 iterations) 0.54 s against
0.41 s (both benchmarks' runs of 2026-11-27). Measured with the machine shared at load
about 3 the NumPy path, with its large temporaries, slowed more than the kernels and
the crossings sat near 2M x 2 / K.
Compiled
kernels are cached on disk (``cache=True``: compilation is paid once per machine).
If numba cannot be imported,
or a kernel fails to compile, the NumPy path is used, with a one-time
:class:`RuntimeWarning`. Threads: :func:`n_threads`, numba's setting
(``NUMBA_NUM_THREADS``, default the number of cores; ``numba.set_num_threads``).
"""

from __future__ import annotations

import importlib
import os
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

#: Blocks with fewer annotations keep the NumPy path while numba is not loaded in the
#: process (see the module docstring)...
MIN_ANNOTATIONS = 2_000_000
#: ... and once it is (the second of the two thresholds; the smaller one applies).
MIN_LOADED = 100_000

#: Seconds for which the thread count read from numba is reused.
THREADS_TTL = 1.0

#: Upper bound, in bytes, on the per-range partial statistics of an M-step.
PARTIAL_BYTES = 256 << 20

_STATE: dict[str, Any] = {"kernels": None, "failed": False, "noted": False}
_LOCK = threading.Lock()


def disabled_by_environment() -> bool:
    """Whether ``CROWDLEARN_NO_NUMBA`` asks for the NumPy path."""
    return os.environ.get("CROWDLEARN_NO_NUMBA", "").strip().lower() not in ("", "0", "false")


def available() -> bool:
    """Whether the compiled kernels can be used (numba loads, not disabled)."""
    if disabled_by_environment() or _STATE["failed"]:
        return False
    return _kernels() is not None


def active(n_annotations: int, weight: float = 1.0) -> bool:
    """Whether a block of ``n_annotations`` annotations runs on the kernels: at least
    :data:`MIN_ANNOTATIONS` divided by ``weight`` of them, or :data:`MIN_LOADED` once
    the kernels are loaded in this process, and numba available.

    ``weight`` is the method's NumPy cost per annotation and iteration relative to
    a two-class Dawid-Skene's (:func:`weight`): the loading cost is fixed, so a
    method whose NumPy iterations cost more pays it back on fewer annotations."""
    threshold = MIN_ANNOTATIONS / max(weight, 1.0)
    if _STATE["kernels"] is not None:
        threshold = min(threshold, MIN_LOADED)
    return n_annotations >= threshold and available()


#: Relative NumPy cost of a GLAD iteration per annotation (:func:`weight`).
GLAD_WEIGHT = 10.0


def weight(method: str, n_classes: int = 2) -> float:
    """The ``weight`` of :func:`active` for an EM method: ``n_classes / 2`` for
    Dawid-Skene and one-coin (their NumPy steps build (annotations, K) temporaries),
    :data:`GLAD_WEIGHT` for GLAD (exponentials and logarithms per annotation), 1 for
    the one-pass votes. Set from ``benchmarks/speed/_kernel_threshold.py`` (the module
    docstring gives its measurements and the trade-off)."""
    if method == "glad":
        return GLAD_WEIGHT
    if method in ("ds", "onecoin"):
        return max(n_classes, 2) / 2
    return 1.0


def ready(n_cells: int) -> bool:
    """Whether the kernels are already loaded in this process (no loading cost) and
    ``n_cells`` is at least :data:`MIN_LOADED`: for the steps after a fit (the labels'
    tie-break), which alone would not pay numba's loading."""
    return (
        _STATE["kernels"] is not None
        and n_cells >= min(MIN_ANNOTATIONS, MIN_LOADED)
        and available()
    )


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
    """Call kernel ``name`` once; None (after the one-time note) if it cannot compile."""
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


def run_ranges(name: str, bounds: np.ndarray, args: tuple, per_range: list | None = None) -> Any:
    """Call kernel ``name(*args, first, last, *per_range[r])`` for each range ``r`` of
    ``bounds`` on the thread pool (a single range in the calling thread); the list of
    results, or None (after the one-time note) if the kernel cannot compile."""
    per = [
        (int(bounds[r]), int(bounds[r + 1]), *(() if per_range is None else per_range[r]))
        for r in range(len(bounds) - 1)
    ]
    return run_ranges_each(name, args, per)


def run_ranges_each(name: str, args: tuple, per_range: list) -> Any:
    """Call kernel ``name(*args, *per_range[r])`` for each ``r`` on the thread pool (a
    single one in the calling thread); the list of results, or None (after the
    one-time note) if the kernel cannot compile."""
    module = _kernels()
    if module is None:
        return None
    kernel = getattr(module, name)

    def call(r: int) -> Any:
        return kernel(*args, *per_range[r])

    try:
        if len(per_range) == 1:
            return [call(0)]
        futures = [_pool().submit(call, r) for r in range(len(per_range))]
        return [future.result() for future in futures]
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


def n_threads() -> int:
    """Threads a step runs on: numba's setting (``NUMBA_NUM_THREADS``, default the
    number of cores, or ``numba.set_num_threads``; read in the calling thread and
    cached for :data:`THREADS_TTL` seconds, the call costs about a millisecond), 1
    without numba, and 1 when called from a thread other than the main one: the caller
    (Dask's workers, a user's pool) already runs several steps at once, and more
    threads per step would only share the same cores."""
    if _kernels() is None or threading.current_thread() is not threading.main_thread():
        return 1
    cached = _STATE.get("threads")
    now = time.monotonic()
    if cached is None or now - cached[1] > THREADS_TTL:
        import numba

        cached = (max(1, int(numba.get_num_threads())), now)
        _STATE["threads"] = cached
    return cached[0]


def _pool() -> ThreadPoolExecutor:
    """The shared pool of worker threads, made again when the thread count changes or
    in a forked child (whose copy of the pool has no threads)."""
    key = (n_threads(), os.getpid())
    pool = _STATE.get("pool")
    if pool is None or _STATE.get("pool_key") != key:
        with _LOCK:
            pool = _STATE.get("pool")
            if pool is None or _STATE.get("pool_key") != key:
                pool = ThreadPoolExecutor(key[0], thread_name_prefix="crowdlearn")
                _STATE["pool"], _STATE["pool_key"] = pool, key
    return pool


def task_ranges(indptr: np.ndarray, n_ranges: int) -> np.ndarray:
    """Bounds (n_ranges + 1,) of task ranges with about equal annotation counts (fewer
    when there are fewer tasks)."""
    n_tasks = len(indptr) - 1
    n_ranges = max(1, min(n_ranges, n_tasks))
    # integer targets: float ones would make searchsorted copy indptr to float64
    targets = np.linspace(0, int(indptr[-1]), n_ranges + 1)[1:-1].astype(indptr.dtype)
    cuts = np.searchsorted(indptr, targets)
    bounds = np.concatenate([[0], np.clip(cuts, 0, n_tasks), [n_tasks]]).astype(np.int64)
    return np.unique(np.maximum.accumulate(bounds)) if n_tasks else np.array([0, 0])


def sum_ranges(partial_size: int, itemsize: int = 8) -> int:
    """Number of M-step ranges: the thread count, bounded by :data:`PARTIAL_BYTES`."""
    fit = max(1, PARTIAL_BYTES // max(partial_size * itemsize, 1))
    return int(max(1, min(n_threads(), fit)))


def e_ranges(indptr: np.ndarray) -> np.ndarray:
    """Task ranges of an E-step: a few per thread (the pool balances them)."""
    threads = n_threads()
    return task_ranges(indptr, 1 if threads == 1 else 4 * threads)


def unsigned(codes: np.ndarray) -> np.ndarray:
    """Non-negative integer codes as the unsigned type of their width (a view): numba
    then indexes with them without the check for a negative index (about a tenth of a
    two-class Dawid-Skene step)."""
    if codes.dtype.kind == "i" and codes.flags.c_contiguous:
        return codes.view(f"u{codes.dtype.itemsize}")
    return codes


def empty_gold(gold: np.ndarray | None) -> np.ndarray:
    """The gold codes as the kernels take them: an empty array for none."""
    return np.empty(0, dtype=np.int64) if gold is None else np.ascontiguousarray(gold)


# ------------------------------------------------------------------ the steps


def ds_e_step(
    indptr: np.ndarray,
    columns: np.ndarray,
    table: np.ndarray,
    log_prior: np.ndarray,
    gold: np.ndarray | None,
    hard: bool,
    out: np.ndarray,
) -> float | None:
    """Dawid-Skene E-step of a block into ``out``; its log-likelihood (None: no kernel).
    Soft posteriors in float64 with :data:`PRODUCT_CLASSES` classes are computed from
    products of probabilities (``ds_e_product_range``: no exponential per class), the
    others from sums of logarithms (``ds_e_range``)."""
    bounds = e_ranges(indptr)
    codes = unsigned(columns)
    if use_products(table, out, hard):
        one = (1.0,) * table.shape[1]  # the kernel is compiled per number of classes
        # exp(-inf) = 0: a zero confusion or prior is a zero product, as in the log path
        with np.errstate(under="ignore"):
            probabilities, prior = np.exp(table), np.exp(log_prior)
        args = (indptr, codes, probabilities, prior, table, log_prior, empty_gold(gold), one)
        parts = run_ranges("ds_e_product_range", bounds, args, [(out,)] * (len(bounds) - 1))
    else:
        args = (indptr, codes, table, log_prior, empty_gold(gold), bool(hard))
        parts = run_ranges("ds_e_range", bounds, args, [(out,)] * (len(bounds) - 1))
    return None if parts is None else float(sum(parts))


#: Numbers of classes whose Dawid-Skene E-step multiplies probabilities (a tuple of K
#: running products in registers; two classes have their own one-exponential path).
PRODUCT_CLASSES = range(3, 17)


def use_products(table: np.ndarray, out: np.ndarray, hard: bool) -> bool:
    """Whether :func:`ds_e_step` takes the products' kernel (see there)."""
    return (
        not hard
        and table.shape[1] in PRODUCT_CLASSES
        and table.dtype == np.float64
        and out.dtype == np.float64
    )


def ds_m_step(
    indptr: np.ndarray,
    columns: np.ndarray,
    probas: np.ndarray,
    gold: np.ndarray | None,
    lone_vote: bool,
    n_columns: int,
) -> tuple[np.ndarray, np.ndarray] | None:
    """Dawid-Skene M-step sums of a block: ``design.T @ probas`` and the class-prior
    counts (None: no kernel)."""
    k = probas.shape[1]
    bounds = task_ranges(indptr, sum_ranges(n_columns * k + k, probas.itemsize))
    args = (indptr, unsigned(columns), probas, empty_gold(gold), bool(lone_vote))
    name = "ds_m_range"
    zeroed = k not in PRODUCT_CLASSES
    if not zeroed:  # each task's posteriors held in registers; the kernel zeroes its sums
        name, args = "ds_m_tuple_range", (*args, (1.0,) * k)
    tables = [_partial_table(n_columns, k, probas.dtype, zeroed) for _ in range(len(bounds) - 1)]
    parts = [(partial[:-1], partial[-1]) for partial in tables]
    if run_ranges(name, bounds, args, parts) is None:
        return None
    return _summed(tables)


def _partial_table(n_columns: int, k: int, dtype: Any, zeroed: bool = True) -> np.ndarray:
    """One range's partial Dawid-Skene M-step sums: ``counts`` (n_columns, K) and, as
    its last row, ``totals`` (K,): each range's totals in its own table, never in a
    cache line that another thread writes (small arrays allocated one after the other
    can share one, and every task adds to its totals). Not ``zeroed``: left empty for
    a kernel that zeroes it (in its own thread, in parallel; ``np.zeros`` zeroes in
    the calling thread, one table after the other)."""
    shape = (n_columns + 1, k)
    return np.zeros(shape, dtype=dtype) if zeroed else np.empty(shape, dtype=dtype)


def _summed(tables: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The partial tables of :func:`_partial_table` summed in range order: (counts,
    totals)."""
    total = tables[0]
    for more in tables[1:]:
        total += more
    return total[:-1], total[-1].copy()


def ds_confusions(counts: np.ndarray, pseudo: np.ndarray, floor: float) -> np.ndarray | None:
    """Dawid-Skene's confusion matrices from the M-step sums (``counts`` (n_workers *
    K, K) float64) and pseudo-counts (K, K), in one pass (``ds_confusions``); None
    where the kernels are not loaded (the loading would cost more) or cannot run."""
    if not ready(counts.size) or counts.dtype != np.float64:
        return None
    return run("ds_confusions", np.ascontiguousarray(counts), pseudo, float(floor))


def ds_em_step(
    indptr: np.ndarray,
    columns: np.ndarray,
    table: np.ndarray,
    log_prior: np.ndarray,
    gold: np.ndarray | None,
    hard: bool,
    lone_vote: bool,
    n_columns: int,
    out: np.ndarray,
) -> tuple[float, np.ndarray, np.ndarray] | None:
    """:func:`ds_e_step` into ``out`` and, in the same pass over the annotations,
    :func:`ds_m_step` of the posteriors it writes (the next M-step's sums): the
    log-likelihood, ``counts`` and ``totals`` (None: no kernel). Ranges: two per
    thread (the pool balances them), each adding into its own partial sums, summed
    in range order (the same result whatever thread ran which range)."""
    k = table.shape[1]
    threads = n_threads()
    wanted = 1 if threads == 1 else 2 * threads
    fit = max(1, PARTIAL_BYTES // max((n_columns * k + k) * out.itemsize, 1))
    bounds = task_ranges(indptr, int(min(wanted, fit)))
    tables = [_partial_table(n_columns, k, out.dtype) for _ in range(len(bounds) - 1)]
    parts = [(out, partial[:-1], partial[-1]) for partial in tables]
    codes = unsigned(columns)
    args = (indptr, codes, table, log_prior, empty_gold(gold), bool(hard), bool(lone_vote))
    likelihoods = run_ranges("ds_em_range", bounds, args, parts)
    if likelihoods is None:
        return None
    return (float(sum(likelihoods)), *_summed(tables))


def correctness_e_step(
    indptr: np.ndarray,
    worker: np.ndarray,
    label: np.ndarray,
    log_right: np.ndarray,
    log_wrong: np.ndarray,
    log_prior: np.ndarray,
    out: np.ndarray,
) -> float | None:
    """One-coin E-step (per-worker log-probabilities) into ``out``; the log-likelihood."""
    bounds = e_ranges(indptr)
    args = (indptr, worker, label, log_right, log_wrong, True, log_prior)
    parts = run_ranges("correctness_e_range", bounds, args, [(out,)] * (len(bounds) - 1))
    return None if parts is None else float(sum(parts))


def skill_sums(
    indptr: np.ndarray, worker: np.ndarray, label: np.ndarray, probas: np.ndarray, n_workers: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """One-coin M-step sums of a block (see one_coin.skill_statistics)."""
    k = probas.shape[1]
    bounds = task_ranges(indptr, sum_ranges(2 * n_workers + k))
    parts = [
        (np.zeros(n_workers), np.zeros(n_workers, dtype=np.int64), np.zeros(k, probas.dtype))
        for _ in range(len(bounds) - 1)
    ]
    if run_ranges("skill_range", bounds, (indptr, worker, label, probas), parts) is None:
        return None
    sums, counts, class_totals = parts[0]
    for more in parts[1:]:
        sums += more[0]
        counts += more[1]
        class_totals += more[2]
    return sums, counts, class_totals


def glad_e_step(
    indptr: np.ndarray,
    worker: np.ndarray,
    label: np.ndarray,
    alphas: np.ndarray,
    log_betas: np.ndarray,
    log_k_minus_1: float,
    log_prior: np.ndarray,
    out: np.ndarray,
) -> float | None:
    """GLAD E-step into ``out``; the log-likelihood without the parameters' prior."""
    bounds = e_ranges(indptr)
    as_float32 = out.dtype == np.float32
    codes = (indptr, unsigned(worker), unsigned(label))
    args = (*codes, alphas, log_betas, log_k_minus_1, log_prior, as_float32)
    parts = run_ranges("glad_e_range", bounds, args, [(out,)] * (len(bounds) - 1))
    return None if parts is None else float(sum(parts))


def glad_alpha_sums(
    indptr: np.ndarray,
    worker: np.ndarray,
    label: np.ndarray,
    probas: np.ndarray,
    alphas: np.ndarray,
    log_betas: np.ndarray,
    log_k_minus_1: float,
    derivatives: bool,
    task_sums: np.ndarray | None = None,
) -> np.ndarray | None:
    """Per worker: GLAD's Q terms (and slopes, curvatures) in ``alpha``, (3 or 1, W).
    With ``task_sums`` (n_tasks, 4), each task's sums for the ``log beta`` step at
    these parameters are written there as well (see glad_alpha_range)."""
    n_out = 3 if derivatives else 1
    bounds = task_ranges(indptr, sum_ranges(n_out * len(alphas)))
    parts = [(np.zeros((n_out, len(alphas))),) for _ in range(len(bounds) - 1)]
    codes = (indptr, unsigned(worker), unsigned(label))
    ahead = np.empty((0, 4)) if task_sums is None else task_sums
    args = (*codes, probas, alphas, log_betas, log_k_minus_1, bool(derivatives), ahead)
    if run_ranges("glad_alpha_range", bounds, args, parts) is None:
        return None
    total = parts[0][0]
    for (more,) in parts[1:]:
        total += more
    return total


def votes(
    task: np.ndarray,
    worker: np.ndarray,
    label: np.ndarray,
    weights: np.ndarray | None,
    n_tasks: int,
    k: int,
) -> np.ndarray | None:
    """(n_tasks, K) votes per class in one pass over the annotations: the total weight
    (float64) with per-worker ``weights``, else the counts (int64). In parallel over
    ranges of whole tasks when ``task`` is sorted (checked in the same pool), else one
    sequential pass."""
    n = len(task)
    threads = n_threads()
    ranges = np.linspace(0, n, threads + 1).astype(np.int64)
    ordered = run_ranges("sorted_range", ranges, (task,))
    if ordered is None:
        return None
    out = np.zeros((n_tasks, k), dtype=np.int64 if weights is None else np.float64)
    weights = np.empty(0, dtype=np.int64) if weights is None else weights
    if all(ordered) and threads > 1:
        cuts = np.unique(run("task_cuts", task, 4 * threads))
    else:
        cuts = np.array([0, n], dtype=np.int64)
    args = (task, worker, label, weights)
    if run_ranges("votes_range", cuts, args, [(out,)] * (len(cuts) - 1)) is None:
        return None
    return out


#: Rows of random keys drawn at a time by :func:`break_ties` (bounded memory).
KEY_ROWS = 1 << 16


def break_ties(scores: np.ndarray, random_state: int | None) -> np.ndarray | None:
    """:func:`crowdlearn.aggregation._base.break_ties` in one pass over the table (and,
    with ties and a ``random_state``, the same random keys drawn in slices of
    :data:`KEY_ROWS` rows: the generator's stream is the same, the memory bounded);
    None if the kernels cannot run or a score is NaN (NumPy's rules then apply)."""
    scores = np.ascontiguousarray(scores)
    n, k = scores.shape
    labels = np.empty(n, dtype=np.int64)
    n_top = np.empty(n, dtype=np.int64)
    bounds = np.linspace(0, n, n_threads() + 1).astype(np.int64)
    nan = run_ranges("top_range", bounds, (scores,), [(labels, n_top)] * (len(bounds) - 1))
    if nan is None or sum(nan):
        return None
    if random_state is None:
        return labels
    tied = np.flatnonzero(n_top > 1)
    if len(tied) == 0:
        return labels
    generator = np.random.default_rng(random_state)
    last = int(tied[-1]) + 1
    for start in range(0, last, KEY_ROWS):
        stop = min(start + KEY_ROWS, last)
        keys = generator.random((stop - start, k))
        rows = tied[np.searchsorted(tied, start) : np.searchsorted(tied, stop)]
        if len(rows) and run("pick_tied", scores, keys, start, rows, labels) is None:
            return None
    return labels


def one_hot(labels: np.ndarray, k: int) -> np.ndarray | None:
    """(n, K) float64 rows one-hot at ``labels``, written in one parallel pass."""
    n = len(labels)
    out = np.empty((n, k))
    bounds = np.linspace(0, n, n_threads() + 1).astype(np.int64)
    done = run_ranges(
        "one_hot_range", bounds, (np.ascontiguousarray(labels),), [(out,)] * n_threads()
    )
    return None if done is None else out


def glad_beta_newton(
    indptr: np.ndarray,
    worker: np.ndarray,
    label: np.ndarray,
    probas: np.ndarray,
    alphas: np.ndarray,
    log_betas: np.ndarray,
    log_k_minus_1: float,
    prior_mean: float,
    max_halvings: int = 30,
    task_sums: np.ndarray | None = None,
) -> float | None:
    """GLAD's Newton step on every ``log beta`` in place (glad.newton_step with the
    per-task sums), task by task in one pass; the largest step (None: no kernel).
    ``task_sums``: the per-task sums at the current parameters, when the last trial
    of ``alpha`` computed them (glad_alpha_sums): not computed again."""
    trial = np.empty(len(indptr) - 1)
    bounds = e_ranges(indptr)
    args = (indptr, unsigned(worker), unsigned(label), probas, alphas, log_betas, log_k_minus_1)
    ahead = np.empty((0, 4)) if task_sums is None else task_sums
    parts = run_ranges(
        "glad_beta_newton_range",
        bounds,
        (*args, float(prior_mean), int(max_halvings), trial, ahead),
    )
    return None if parts is None else float(max(parts, default=0.0))


# ------------------------------------------------------------------ NumPy's PCG64 stream

#: Row gaps between tied tasks reached by one precomputed map (longer: powers of two).
ROWS_AHEAD = 64
_PCG_MULTIPLIER = 0x2360ED051FC65DA44385DF649FCCF645
_MASK128 = (1 << 128) - 1
_MASK64 = (1 << 64) - 1


def _split(value: int) -> tuple[int, int]:
    return value >> 64, value & _MASK64


def pcg64_maps(random_state: Any, k: int) -> tuple[np.ndarray, ...] | None:
    """For the draws of ``np.random.default_rng(random_state).random(...)`` computed
    in the kernels: the generator's first state (2,), the maps (A high, A low, C high,
    C low) of 2^i steps (64, 4), of 1..k steps (k, 4) and of d rows (d k steps,
    d < :data:`ROWS_AHEAD`) (ROWS_AHEAD, 4), as uint64; None when the
    generator is not a seeded PCG64 (a Generator passed in, whose stream the NumPy path
    would consume)."""
    if not isinstance(random_state, (int, np.integer)) or isinstance(random_state, bool):
        return None
    bit_generator = np.random.default_rng(random_state).bit_generator
    state = bit_generator.state
    if state.get("bit_generator") != "PCG64":
        return None
    start, increment = int(state["state"]["state"]), int(state["state"]["inc"])
    powers = np.empty((64, 4), dtype=np.uint64)
    mult, plus = _PCG_MULTIPLIER, increment
    for i in range(64):
        powers[i] = (*_split(mult), *_split(plus))
        plus = ((mult + 1) * plus) & _MASK128
        mult = (mult * mult) & _MASK128
    cells = np.empty((k, 4), dtype=np.uint64)
    mult, plus = _PCG_MULTIPLIER, increment
    for c in range(k):
        cells[c] = (*_split(mult), *_split(plus))
        plus = (plus * _PCG_MULTIPLIER + increment) & _MASK128
        mult = (mult * _PCG_MULTIPLIER) & _MASK128
    rows_ahead = np.zeros((ROWS_AHEAD, 4), dtype=np.uint64)
    row_mult = (int(cells[-1, 0]) << 64) | int(cells[-1, 1])  # the map of k steps
    row_plus = (int(cells[-1, 2]) << 64) | int(cells[-1, 3])
    mult, plus = 1, 0  # the map of d rows (d * k steps), d = 0, 1, ...
    for d in range(ROWS_AHEAD):
        rows_ahead[d] = (*_split(mult), *_split(plus))
        plus = (plus * row_mult + row_plus) & _MASK128
        mult = (mult * row_mult) & _MASK128
    return np.array(_split(start), dtype=np.uint64), powers, cells, rows_ahead


def majority_vote(
    task: np.ndarray,
    label: np.ndarray,
    n_tasks: int,
    k: int,
    tie_break: str,
    random_state: int | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Majority vote in one parallel pass over annotations sorted by task: the vote
    counts (n_tasks, K) int64, the one-hot posteriors (n_tasks, K) and the labels
    (n_tasks,), equal to the NumPy path's (vote counts, ``_base.break_ties`` with the
    same random keys, one-hot rows). None where it does not apply (annotations not
    sorted by task, a tie-break the NumPy path refuses or a seed that is not an
    integer: the NumPy path then runs, with its errors) or the kernel cannot run."""
    if tie_break == "random":
        maps = pcg64_maps(random_state, k) if random_state is not None else None
        if maps is None:
            return None
    elif tie_break == "lowest":
        none = np.zeros((1, 4), np.uint64)
        maps = (np.zeros(2, np.uint64), none, none, none)
    else:
        return None
    n = len(task)
    threads = n_threads()
    cuts = np.array([0, n], dtype=np.int64)
    if threads > 1 and n:
        cut = run("task_cuts", task, 4 * threads)
        if cut is None:
            return None
        cuts = np.unique(cut)
    inner = task[np.minimum(cuts[1:-1], max(n - 1, 0))].astype(np.int64)
    task_bounds = np.concatenate([[0], inner, [n_tasks]]).astype(np.int64)
    if np.any(np.diff(task_bounds) < 0):
        return None  # not sorted by task
    counts = np.empty((n_tasks, k), dtype=np.int64)
    probas = np.empty((n_tasks, k))
    labels = np.empty(n_tasks, dtype=np.int64)
    start, powers, cells, rows_ahead = maps
    args = (task, label)
    per_range = [
        (int(task_bounds[r]), int(task_bounds[r + 1]), tie_break == "random", powers, cells,
         rows_ahead, start, int(cuts[r]), int(cuts[r + 1]), counts, probas, labels)
        for r in range(len(cuts) - 1)
    ]  # fmt: skip
    done = run_ranges_each("majority_range", args, per_range)
    if done is None or not all(done):
        return None
    return counts, probas, labels
