"""Compiled passes of ``partial_fit`` (numba, :mod:`crowdlearn.aggregation._numba_incremental`).

An update after a fit on the fused EM kernels (:mod:`crowdlearn.aggregation._kernels`)
would otherwise spend its time in NumPy passes with temporaries: the bound on every
task's log-odds (a sparse product over all annotations), the margins of the fit's
posteriors (all tasks), the touched tasks' block with the check for repeated (task,
worker) pairs (sorts, ``bincount``s and fancy indexing), the local E-steps (a product,
then a softmax), the copy of the codes when new rows are inserted, and the random keys
of tied rows. Each function here does one of them in one pass, on the thread pool of
``_kernels`` when it goes over all tasks or annotations, in the calling thread when
it is small (a pool's hand-offs cost more than a pass over a few hundred thousand rows).

Every function returns None where the kernels do not run (numba missing, disabled by
``CROWDLEARN_NO_NUMBA=1``, or a compile error, noted once as in ``_kernels``); the
caller then runs its NumPy form, which computes the same values: the same arithmetic
in the same order for the copies, counts, bounds and margins; up to rounding for the
local E-step (a vectorised exp, logarithms of products of row sums) and the sums of
its statistics (tests/aggregation/test_incremental_kernels.py compares them: the same
labels and recomputed tasks, posteriors to 1e-10).
:func:`wanted` says whether an update of a given size uses them (numba already
loaded, by a fit or an earlier update, or very large data: an update alone does not
repay numba's loading).
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

import crowdlearn.aggregation._kernels as _kernels

#: Rows (or tasks) below which a pass runs in the calling thread.
SERIAL_ROWS = 1 << 18

_MODULE: dict[str, Any] = {"module": None}


#: Annotations from which an update loads numba itself (no fit has loaded it in the
#: process: a command-line update on a state file). Loading costs about 0.3 s (the
#: first-fit measure of ``_kernels``' docstring), while the kernels spare an update a
#: part of its time (some tens of milliseconds at 10M annotations, where a NumPy
#: update of 1 % takes about 0.1 s): they repay their loading only near 100M.
LOAD_MIN = 100_000_000


def wanted(n_annotations: int) -> bool:
    """Whether an update over ``n_annotations`` annotations uses the kernels: numba
    available, and either already loaded in this process (by a fit, or an earlier
    update) with ``_kernels.ready``'s size (100k), or at least :data:`LOAD_MIN`."""
    if _kernels.ready(n_annotations):
        return True
    return n_annotations >= LOAD_MIN and _kernels.available()


def _module() -> Any:
    """The module of the kernels (imported on first use), or None."""
    if _MODULE["module"] is None:
        if not _kernels.available():
            return None
        try:
            _MODULE["module"] = importlib.import_module(
                "crowdlearn.aggregation._numba_incremental"
            )
        except Exception as error:  # numba present but this module does not load
            _kernels._note(f"the incremental kernels could not be imported: {error}")
            return None
    return _MODULE["module"]


def _run(name: str, calls: list[tuple]) -> list | None:
    """Kernel ``name`` once per argument tuple (on the pool when several); None if
    the kernels cannot run."""
    if not _kernels.available():
        return None
    module = _module()
    if module is None:
        return None
    kernel = getattr(module, name)
    try:
        if len(calls) == 1:
            return [kernel(*calls[0])]
        futures = [_kernels._pool().submit(kernel, *args) for args in calls]
        return [future.result() for future in futures]
    except Exception as error:
        if _kernels._is_compile_error(error):
            _kernels._note(f"{name} failed to compile: {type(error).__name__}: {error}")
            return None
        raise


def _bounds(n: int, weights: np.ndarray | None = None) -> np.ndarray:
    """Range bounds over ``n`` items: one range when small or single-threaded, else
    one per thread (by ``weights``' CSR pointer when given: equal annotation counts)."""
    threads = _kernels.n_threads()
    total = n if weights is None else int(weights[-1])
    if threads == 1 or total < SERIAL_ROWS:
        return np.array([0, n], dtype=np.int64)
    if weights is not None:
        return _kernels.task_ranges(weights, threads)
    return np.unique(np.linspace(0, n, threads + 1).astype(np.int64))


def cell_sums(
    pointer: np.ndarray,
    worker: np.ndarray,
    label: np.ndarray,
    values: np.ndarray,
    k: int,
    out: np.ndarray | None = None,
) -> np.ndarray | None:
    """Per task of ``pointer`` (annotations sorted by task), the sum over its rows of
    ``values[worker * k + label]`` (float64, into ``out`` when given): ``design @
    values`` of the (worker, label) design, without the design."""
    n_tasks = len(pointer) - 1
    out = np.empty(n_tasks) if out is None else out
    values = np.ascontiguousarray(values, dtype=np.float64)
    bounds = _bounds(n_tasks, pointer)
    args = (pointer, _kernels.unsigned(worker), _kernels.unsigned(label), values, int(k), out)
    calls = [(*args, int(bounds[r]), int(bounds[r + 1])) for r in range(len(bounds) - 1)]
    return None if _run("cell_sums_range", calls) is None else out


def probas_margins(probas: np.ndarray, floor: float, out: np.ndarray) -> bool:
    """``log(top / max(next, floor))`` per row of ``probas`` (k >= 2) into ``out``
    (the ratios by the kernel, then NumPy's logarithm: the NumPy form's values);
    False if the kernels cannot run."""
    probas = np.ascontiguousarray(probas)
    n, k = probas.shape
    bounds = np.unique(_bounds(n * k) // k)  # ranges of cells, cut at rows
    bounds[-1] = n
    calls = [
        (probas, float(floor), out, int(bounds[r]), int(bounds[r + 1]))
        for r in range(len(bounds) - 1)
    ]
    if n == 0:
        return True
    if _run("margins_range", calls) is None:
        return False
    np.log(out, out=out)
    return True


def gather(
    base: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    tail: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    new: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    n_workers: int | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int] | None:
    """The block of some tasks: each ``(start, stop, worker, label)`` gives, per task,
    the range of its base, tail and new rows in those codes. Returns local task codes,
    workers, labels (int32), ``is_new``, and, with ``n_workers``, how many new rows
    repeat a held (task, worker) pair and the first of them (-1 if none)."""
    counts = [stop - start for start, stop, _, _ in (base, tail, new)]
    sizes = counts[0] + counts[1] + counts[2]
    offsets = np.zeros(len(sizes), dtype=np.int64)
    if len(sizes) > 1:
        np.cumsum(sizes[:-1], out=offsets[1:])
    total = int(sizes.sum())
    local = np.empty(total, dtype=np.int32)
    worker = np.empty(total, dtype=np.int32)
    label = np.empty(total, dtype=np.int32)
    is_new = np.empty(total, dtype=np.bool_)
    stamps = np.full(0 if n_workers is None else n_workers, -1, dtype=np.int64)
    args: list[Any] = []
    for start, stop, codes, labels in (base, tail, new):
        args += [
            np.ascontiguousarray(start, dtype=np.int64),
            np.ascontiguousarray(stop, dtype=np.int64),
            _as_int32(codes),
            _as_int32(labels),
        ]
    done = _run("gather_block", [(*args, offsets, local, worker, label, is_new, stamps)])
    if done is None:
        return None
    repeated, first = done[0]
    return local, worker, label, is_new, int(repeated), int(first)


def _as_int32(codes: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(codes, dtype=np.int32)


def local_e_step(
    indptr: np.ndarray,
    columns: np.ndarray,
    table: np.ndarray,
    log_prior: np.ndarray,
    statistics: str | None = None,
) -> tuple[np.ndarray, float, np.ndarray, tuple[np.ndarray, np.ndarray] | None] | None:
    """E-step of a small block (float64) from the log tables of
    ``IncrementalEMMixin._log_tables`` (``columns``: worker * K + label per row):
    posteriors, log-likelihood, margins (the top score against the next), and, with
    ``statistics`` (Dawid-Skene's ``lone_labels``, "em" or "vote"), the next M-step's
    sums of those posteriors (``dawid_skene.confusion_statistics``) from the same
    pass, else None."""
    n_tasks, k = len(indptr) - 1, table.shape[1]
    probas = np.empty((n_tasks, k))
    margins = np.empty(n_tasks)
    mode = {None: 0, "em": 1, "vote": 2}[statistics]
    counts = np.zeros((len(table), k) if mode else (0, k))
    totals = np.zeros(k)
    args = (
        np.ascontiguousarray(indptr, dtype=np.int64),
        np.ascontiguousarray(columns, dtype=np.int64),
        np.ascontiguousarray(table, dtype=np.float64),
        np.ascontiguousarray(log_prior, dtype=np.float64),
        probas,
        margins,
        mode,
        counts,
        totals,
    )
    done = _run("local_e_step", [args])
    if done is None:
        return None
    return probas, float(done[0]), margins, (counts, totals) if mode else None


def interleave(old: np.ndarray, new: np.ndarray, slots: np.ndarray) -> np.ndarray | None:
    """``old`` with ``new[j]`` inserted before ``old[slots[j]]`` (``slots``
    non-decreasing; equal slots keep ``new``'s order), int32: ``np.insert``'s result,
    in one pass (split over the pool by new rows)."""
    out = np.empty(len(old) + len(new), dtype=np.int32)
    slots = np.ascontiguousarray(slots, dtype=np.int64)
    threads = _kernels.n_threads()
    n_ranges = 1 if threads == 1 or len(out) < SERIAL_ROWS or len(new) < 2 else threads
    cuts = np.unique(np.linspace(0, len(new), n_ranges + 1).astype(np.int64))
    if len(cuts) < 2:
        cuts = np.array([0, 0], dtype=np.int64)
    args = (_as_int32(old), _as_int32(new), slots, out)
    calls = [(*args, int(cuts[r]), int(cuts[r + 1])) for r in range(len(cuts) - 1)]
    return None if _run("interleave_range", calls) is None else out


def row_keys(random_state: Any, rows: np.ndarray, k: int) -> np.ndarray | None:
    """``np.random.default_rng(random_state).random((n, k))[rows]`` by jump-ahead
    (no draw of the other rows); None for a seed that is not an integer."""
    maps = _kernels.pcg64_maps(random_state, k)
    if maps is None:
        return None
    start, powers, cells, _ = maps
    keys = np.empty((len(rows), k))
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    done = _run("row_keys", [(start, powers, cells, rows, int(k), keys)])
    return None if done is None else keys


def settle(
    pointer: np.ndarray,
    worker: np.ndarray,
    label: np.ndarray,
    spread: np.ndarray,
    k: int,
    c0: float,
    eps: float,
    tail_sums: np.ndarray | None,
    margins: np.ndarray,
    probas: np.ndarray | None = None,
    floor: float = 0.0,
    crude: tuple[float, np.ndarray | None, np.ndarray] | None = None,
    out: np.ndarray | None = None,
) -> tuple[np.ndarray, int] | None:
    """``refresh=0``'s exact label bound in one parallel pass over all tasks and the
    base's annotations: ``margins`` (all tasks) lowered in place by ``c0 + sum of
    spread[worker * k + label]`` over each task's rows (base rows from ``pointer``,
    plus ``tail_sums``), after being set from ``probas`` (its rows: ``log(top /
    max(next, floor))``; later tasks: -inf) when given. Returns the mask of the tasks
    whose margin is then at most ``eps`` and, with ``crude`` = (the largest spread,
    the tail's rows per task or None, a mask of the tasks to leave out), how many
    other tasks have a finite held margin within ``eps`` of the crude bound (see
    ``_incremental_em``); 0 without. ``out``: where the lowered margins go instead
    of ``margins`` (which is then only read)."""
    target = margins if out is None else out
    n_tasks = len(target)
    unsure = np.empty(n_tasks, dtype=np.bool_)
    rows = np.empty((0, 2)) if probas is None else np.ascontiguousarray(probas)
    tails = np.empty(0) if tail_sums is None else np.ascontiguousarray(tail_sums, np.float64)
    largest, tail_counts, skip = 0.0, None, np.empty(0, dtype=np.bool_)
    if crude is not None:
        largest, tail_counts, skip = crude
    counts = np.empty(0, dtype=np.int64) if tail_counts is None else tail_counts
    # ranges of equal annotation counts over the base's tasks (later tasks: the last)
    bounds = _bounds(len(pointer) - 1, pointer)
    bounds[-1] = n_tasks
    args = (
        pointer,
        _kernels.unsigned(worker),
        _kernels.unsigned(label),
        np.ascontiguousarray(spread, dtype=np.float64),
        int(k),
        float(c0),
        float(eps),
        tails,
        rows,
        float(floor),
        len(rows),
        margins,
        target,
        unsure,
        float(largest),
        np.ascontiguousarray(counts, dtype=np.int64),
        np.ascontiguousarray(skip, dtype=np.bool_),
    )
    calls = [(*args, int(bounds[r]), int(bounds[r + 1])) for r in range(len(bounds) - 1)]
    done = _run("settle_range", calls)
    return None if done is None else (unsure, int(sum(done)))


def sorted_pointer(task: np.ndarray, n_tasks: int) -> np.ndarray | None:
    """The task pointer (n_tasks + 1,) of task codes sorted by task, with the check
    that they are, in one parallel pass; None if they are not sorted (or no kernel)."""
    pointer = np.empty(n_tasks + 1, dtype=np.int64)
    n = len(task)
    bounds = _bounds(n)
    task = np.ascontiguousarray(task)
    calls = [(task, pointer, int(bounds[r]), int(bounds[r + 1])) for r in range(len(bounds) - 1)]
    if n and (int(task[-1]) >= n_tasks or int(task[0]) < 0):
        return None
    done = _run("pointer_range", calls)
    if done is None or not all(done):
        return None
    return pointer


def store_votes(
    pointer: np.ndarray,
    worker: np.ndarray,
    label: np.ndarray,
    tail: tuple[np.ndarray, np.ndarray, np.ndarray],
    weights: np.ndarray,
    n_tasks: int,
    k: int,
    shares: bool = False,
) -> np.ndarray | None:
    """(n_tasks, K) total weight of the votes per class of the annotations of a store
    (a base sorted by task with its ``pointer``, and a ``tail`` of (task, worker,
    label) codes sorted by task), each task's base rows then its tail rows added in
    row order: the sums of one pass over the merged annotations, without merging.
    ``shares``: each row as ``weighted_vote.vote_shares`` makes it, in the same pass
    (a sum over more than eight classes may then differ from NumPy's in rounding)."""
    layout = _store_layout(pointer, worker, label, tail, n_tasks)
    if layout is None:
        return None
    head, bounds = layout
    out = np.empty((n_tasks, k))
    args = (*head, np.ascontiguousarray(weights, dtype=np.float64), bool(shares), out)
    calls = [(*args, int(bounds[r]), int(bounds[r + 1])) for r in range(len(bounds) - 1)]
    return None if _run("store_votes_range", calls) is None else out


def _store_layout(
    pointer: np.ndarray,
    worker: np.ndarray,
    label: np.ndarray,
    tail: tuple[np.ndarray, np.ndarray, np.ndarray],
    n_tasks: int,
) -> tuple[tuple, np.ndarray] | None:
    """The arrays a store's kernels read first (the base's pointer and codes, the
    tail's task pointer and codes, as unsigned views) and the task bounds of the
    threads' ranges; None where the tail's pointer cannot be built."""
    tail_task, tail_worker, tail_label = tail
    tail_pointer = np.zeros(1, dtype=np.int64)
    if len(tail_task):
        tail_pointer = sorted_pointer(tail_task, n_tasks)
        if tail_pointer is None:
            return None
    bounds = _bounds(len(pointer) - 1, pointer)
    bounds[-1] = n_tasks
    head = (
        pointer,
        _kernels.unsigned(worker),
        _kernels.unsigned(label),
        tail_pointer,
        _kernels.unsigned(_as_int32(tail_worker)),
        _kernels.unsigned(_as_int32(tail_label)),
    )
    return head, bounds


def store_e_step(
    pointer: np.ndarray,
    worker: np.ndarray,
    label: np.ndarray,
    tail: tuple[np.ndarray, np.ndarray, np.ndarray],
    table: np.ndarray,
    log_prior: np.ndarray,
    out: np.ndarray,
    correctness: tuple[np.ndarray, np.ndarray] | None = None,
) -> float | None:
    """A Dawid-Skene E-step over all tasks of a store (base and tail, as
    :func:`store_votes` reads them) into ``out`` (n_tasks, K) float64, in parallel;
    its log-likelihood, or None where the kernels do not run. With ``correctness``
    (one-coin's per-worker ``log_right`` and ``log_wrong``), one-coin's E-step
    (``table`` is then not read)."""
    layout = _store_layout(pointer, worker, label, tail, len(out))
    if layout is None:
        return None
    head, bounds = layout
    args = (
        *head,
        np.ascontiguousarray(table, dtype=np.float64),
        np.ascontiguousarray(log_prior, dtype=np.float64),
        out,
        *(
            (np.empty(0), np.empty(0))
            if correctness is None
            else (np.ascontiguousarray(v, dtype=np.float64) for v in correctness)
        ),
    )
    calls = [(*args, int(bounds[r]), int(bounds[r + 1])) for r in range(len(bounds) - 1)]
    done = _run("store_e_range", calls)
    return None if done is None else float(sum(done))
