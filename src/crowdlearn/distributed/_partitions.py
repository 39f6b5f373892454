"""Annotations on a Dask cluster: one :class:`Partition` (a task block) per future.

Every task's annotations must sit in a single partition, because the E-step of a
task needs all of them. Partitions built from a CrowdData are task ranges; a Dask
DataFrame (or a Parquet directory read as one) is checked for tasks that straddle
partitions and shuffled by task only when some do (the Parquet generator writes whole
tasks per file, so its output needs no shuffle). Worker and class ids are factorised
globally in sorted order, the order :meth:`CrowdData.from_arrays` gives, so the codes
and therefore the results equal the in-memory engine's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from crowdlearn.aggregation._blocks import Block, BlockReader, make_block
from crowdlearn.aggregation._frames import require_columns
from crowdlearn.data import CrowdData, CrowdDataError


@dataclass(frozen=True)
class Partition:
    """One task block on a Dask worker and the user's ids of its tasks."""

    block: Block
    task_ids: np.ndarray


@dataclass
class DistributedCrowd:
    """Annotations held by a Dask cluster as futures of :class:`Partition`.

    Attributes
    ----------
    client : distributed.Client
    parts : list of Future
        One future per partition; each holds a :class:`Partition`.
    n_annotations, n_tasks, n_workers, n_classes : int
    worker_ids, classes : ndarray
        Global ids, in code order (sorted, as CrowdData assigns them).
    """

    client: Any
    parts: list
    n_annotations: int
    n_tasks: int
    n_workers: int
    n_classes: int
    worker_ids: np.ndarray
    classes: np.ndarray

    @property
    def npartitions(self) -> int:
        """Number of partitions."""
        return len(self.parts)


def is_dask_frame(value: Any) -> bool:
    """Whether ``value`` is a Dask DataFrame (tested without importing dask)."""
    return hasattr(value, "map_partitions") and hasattr(value, "columns")


def get_client(client: Any = None) -> Any:
    """``client`` or the current default ``distributed`` client."""
    try:
        import distributed
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("crowdlearn.distributed needs dask; install crowdlearn[dask]") from exc
    return client if client is not None else distributed.get_client()


def distribute(
    source: Any,
    client: Any = None,
    npartitions: int | None = None,
    columns: tuple[str, str, str] = ("task", "worker", "label"),
) -> DistributedCrowd:
    """Put annotations on the cluster as task-block partitions.

    Parameters
    ----------
    source : CrowdData, dask DataFrame, or str / path-like
        A CrowdData is split into ``npartitions`` task ranges (default: one per worker
        thread of the cluster) and scattered. A Dask DataFrame with the ``columns``, or
        a Parquet file or directory (read with ``dask.dataframe.read_parquet``), stays
        partitioned as it is, unless tasks straddle partitions (then it is shuffled by
        task into ``npartitions`` or its own number of partitions).
    client : distributed.Client, optional
        Default: the current client.
    npartitions : int, optional
    columns : (task, worker, label) column names

    Returns
    -------
    DistributedCrowd
    """
    client = get_client(client)
    if isinstance(source, DistributedCrowd):
        return source
    if isinstance(source, CrowdData):
        return _from_crowd_data(source, client, npartitions)
    if isinstance(source, (str, os.PathLike)):
        import dask.dataframe as dd

        source = dd.read_parquet(str(source), columns=list(columns))
    if not is_dask_frame(source):
        raise TypeError(
            "fit expects a CrowdData, a pandas or Dask DataFrame or a Parquet path, got "
            f"{type(source).__name__}"
        )
    return _from_dask_frame(source, client, npartitions, columns)


def _from_crowd_data(data: CrowdData, client: Any, npartitions: int | None) -> DistributedCrowd:
    if data.is_anonymous:
        raise CrowdDataError("the Dask engine needs worker ids; the data are anonymous")
    if npartitions is None:
        npartitions = max(sum(client.nthreads().values()), 1)
    chunk = -(-data.n_annotations // npartitions)
    reader = BlockReader(data, chunk)
    parts = [
        Partition(
            Block(0, block.n_tasks, block.indptr, block.task.copy(), block.worker, block.label),
            data.task_ids[block.start : block.stop],
        )
        for block in reader
    ]
    futures = client.scatter(parts, hash=False)
    return DistributedCrowd(
        client,
        futures,
        data.n_annotations,
        data.n_tasks,
        data.n_workers,
        data.n_classes,
        data.worker_ids,
        data.classes,
    )


def _task_range(frame: pd.DataFrame, task: str) -> pd.DataFrame:
    values = frame[task]
    if len(values) == 0:
        return pd.DataFrame({"low": [], "high": [], "rows": []})
    return pd.DataFrame({"low": [values.min()], "high": [values.max()], "rows": [len(values)]})


def _distinct(values: pd.Series) -> pd.Series:
    """The distinct values of a partition (merged and sorted on the client)."""
    return pd.Series(values.unique(), name=values.name)


def _straddles(ranges: pd.DataFrame) -> bool:
    """Whether some task may appear in two partitions (overlapping [min, max] ranges)."""
    ranges = ranges[ranges["rows"] > 0].sort_values(["low", "high"])
    return bool((ranges["low"].to_numpy()[1:] <= ranges["high"].to_numpy()[:-1]).any())


def _from_dask_frame(
    frame: Any, client: Any, npartitions: int | None, columns: tuple[str, str, str]
) -> DistributedCrowd:
    import dask

    task, worker, label = columns
    require_columns(frame, columns, "the Dask engine")
    frame = frame[list(columns)]
    ranges, worker_ids, classes, nulls = client.compute(
        [
            frame.map_partitions(_task_range, task, meta={"low": "O", "high": "O", "rows": "i8"}),
            frame[worker].map_partitions(_distinct, meta=frame[worker]._meta),
            frame[label].map_partitions(_distinct, meta=frame[label]._meta),
            frame.isna().sum(),
        ],
        sync=True,
    )
    if int(nulls.sum()) > 0:
        raise CrowdDataError(f"the annotations have null ids: {nulls.to_dict()}")
    if _straddles(ranges):
        frame = frame.shuffle(task, npartitions=npartitions or frame.npartitions)
    worker_ids = np.unique(worker_ids.to_numpy())
    classes = np.unique(classes.to_numpy())
    make = dask.delayed(frame_partition, pure=True)
    parts = [
        make(part, columns, worker_ids, classes) for part in frame.to_delayed(optimize_graph=True)
    ]
    futures = client.compute(parts)
    sizes = client.gather([client.submit(_sizes, f, pure=False) for f in futures])
    keep = [f for f, (_, rows) in zip(futures, sizes, strict=True) if rows > 0]
    return DistributedCrowd(
        client,
        keep,
        int(sum(rows for _, rows in sizes)),
        int(sum(n for n, _ in sizes)),
        len(worker_ids),
        len(classes),
        worker_ids,
        classes,
    )


def _sizes(part: Partition) -> tuple[int, int]:
    return part.block.n_tasks, len(part.block.task)


def frame_partition(
    frame: pd.DataFrame,
    columns: tuple[str, str, str],
    worker_ids: np.ndarray,
    classes: np.ndarray,
) -> Partition:
    """A :class:`Partition` from a pandas partition: local task codes in sorted id order,
    global worker and class codes from the sorted global ids."""
    task, worker, label = columns
    task_ids, local = np.unique(frame[task].to_numpy(), return_inverse=True)
    order = np.argsort(local, kind="stable")
    worker_codes = np.searchsorted(worker_ids, frame[worker].to_numpy())
    label_codes = np.searchsorted(classes, frame[label].to_numpy())
    return Partition(
        make_block(
            0,
            len(task_ids),
            local[order].astype(np.int32),
            worker_codes[order].astype(np.int32),
            label_codes[order].astype(np.int32),
        ),
        task_ids,
    )
