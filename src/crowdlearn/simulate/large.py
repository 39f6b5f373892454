"""Large synthetic crowds written straight to Parquet, in chunks of bounded memory.

The model is Dawid and Skene's (as :func:`~crowdlearn.simulate.independent_confusion`):
each worker has a confusion matrix whose rows are Dirichlet(1, ..., 1) draws with the
largest entry moved onto the diagonal, or, with ``accuracy``, a one-coin matrix
(``accuracy`` on the diagonal, errors spread evenly, the binary setup of spark-crowd's
benchmarks). Each task gets ``feedback`` distinct workers: a uniformly drawn first
worker and the next ``feedback - 1`` codes modulo ``n_workers``.

Files hold whole tasks, sorted by task code, with int32 columns ``task``, ``worker``,
``label`` and ``truth``; one file per chunk (``part-00000.parquet``, ...), so
:func:`crowdlearn.io.read_parquet` and the Dask engine read them as they are.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from crowdlearn._atomic import atomic_directory
from crowdlearn._progress import Progress, progress_bar
from crowdlearn.data._memory import array_bytes, check_allocation


def worker_confusions(
    n_workers: int, n_classes: int, rng: np.random.Generator, accuracy: float | None = None
) -> np.ndarray:
    """(n_workers, K, K) row-stochastic confusion matrices, diagonally dominant."""
    if accuracy is not None:
        off = (1.0 - accuracy) / (n_classes - 1)
        matrices = np.full((n_workers, n_classes, n_classes), off)
        matrices[:, np.arange(n_classes), np.arange(n_classes)] = accuracy
        return matrices
    matrices = rng.dirichlet(np.ones(n_classes), size=(n_workers, n_classes))
    top = matrices.argmax(axis=2)
    diagonal = np.arange(n_classes)
    rows = np.arange(n_workers)[:, None]
    largest = matrices[rows, diagonal[None, :], top].copy()
    matrices[rows, diagonal[None, :], top] = matrices[rows, diagonal[None, :], diagonal[None, :]]
    matrices[rows, diagonal[None, :], diagonal[None, :]] = largest
    return matrices


def write_synthetic_parquet(
    path: str | os.PathLike[str],
    n_annotations: int,
    *,
    n_classes: int = 2,
    feedback: int = 10,
    n_workers: int = 1000,
    accuracy: float | None = None,
    chunk_annotations: int = 5_000_000,
    seed: int = 0,
    truth_path: str | os.PathLike[str] | None = None,
    progress: Progress = False,
) -> dict[str, int]:
    """Write a synthetic crowd of about ``n_annotations`` annotations to a Parquet
    directory, one chunk at a time (memory O(chunk_annotations * n_classes)).

    Parameters
    ----------
    path : str or path-like
        Output directory; it appears only when complete (atomic rename).
    n_annotations : int
        Target size; the crowd has ``n_annotations // feedback`` tasks.
    n_classes : int, default 2
    feedback : int, default 10
        Distinct workers per task (at most ``n_workers``).
    n_workers : int, default 1000
    accuracy : float, optional
        One-coin workers of this accuracy; default: Dirichlet confusion matrices.
    chunk_annotations : int, default 5_000_000
        Annotations per file (rounded down to whole tasks).
    seed : int, default 0
    truth_path : str or path-like, optional
        Also save the true class of each task (int8, in task order) to this ``.npy``
        file (outside the directory, so that Parquet readers do not see it).
    progress : True, False or "auto", default False
        A bar over the annotations written.

    Returns
    -------
    dict
        ``n_tasks``, ``n_workers``, ``n_classes``, ``n_annotations`` and ``n_files``.
    """
    if n_classes < 2 or feedback < 1 or feedback > n_workers:
        raise ValueError("need n_classes >= 2 and 1 <= feedback <= n_workers")
    check_allocation(
        array_bytes([n_workers, n_classes, n_classes]),
        f"the confusion matrices of {n_workers} workers x {n_classes} x {n_classes} classes",
    )
    n_tasks = max(n_annotations // feedback, 1)
    tasks_per_chunk = max(chunk_annotations // feedback, 1)
    rng = np.random.default_rng(seed)
    cumulative = np.cumsum(worker_confusions(n_workers, n_classes, rng, accuracy), axis=2)
    cumulative[..., -1] = 1.0
    n_files = 0
    truths = []
    bar = progress_bar(progress=progress, desc="generate", total=n_tasks * feedback, unit="rows")
    with bar, atomic_directory(path) as tmp:
        for start in range(0, n_tasks, tasks_per_chunk):
            stop = min(start + tasks_per_chunk, n_tasks)
            table = _chunk(start, stop, n_classes, feedback, n_workers, cumulative, rng)
            pq.write_table(
                table, Path(tmp) / f"part-{n_files:05d}.parquet", row_group_size=1 << 20
            )
            n_files += 1
            truths.append(table.column("truth").to_numpy()[::feedback].astype(np.int8))
            bar.update(table.num_rows)
    if truth_path is not None:
        np.save(truth_path, np.concatenate(truths))
    return {
        "n_tasks": n_tasks,
        "n_workers": n_workers,
        "n_classes": n_classes,
        "n_annotations": n_tasks * feedback,
        "n_files": n_files,
    }


def _chunk(
    start: int,
    stop: int,
    n_classes: int,
    feedback: int,
    n_workers: int,
    cumulative: np.ndarray,
    rng: np.random.Generator,
) -> pa.Table:
    n = stop - start
    truth = rng.integers(0, n_classes, size=n, dtype=np.int32)
    first = rng.integers(0, n_workers, size=n, dtype=np.int64)
    worker = ((first[:, None] + np.arange(feedback)) % n_workers).astype(np.int32).ravel()
    row_truth = np.repeat(truth, feedback)
    rows = cumulative[worker, row_truth]  # (n * feedback, K) cumulative probabilities
    draw = rng.random(len(worker))
    label = (draw[:, None] > rows).sum(axis=1).astype(np.int32)
    task = np.repeat(np.arange(start, stop, dtype=np.int32), feedback)
    return pa.table({"task": task, "worker": worker, "label": label, "truth": row_truth})
