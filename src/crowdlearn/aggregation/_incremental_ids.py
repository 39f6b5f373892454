"""The ids and the (task, worker) pairs of merged annotations (``partial_fit``).

Split out of :mod:`crowdlearn.aggregation._incremental` (which imports them from here)
when its compiled passes made it longer than the project's 900 lines a module: the
union of held and new ids with the codes each side gets (fresh ids inserted in sorted
position, or appended), and the error for a new annotation that repeats a held (task,
worker) pair.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from crowdlearn.data import CrowdDataError
from crowdlearn.data.errors import plain, show


def _union_ids(old: np.ndarray, new: np.ndarray, what: str) -> tuple[np.ndarray, ...]:
    """Merged ids, the merged code of each old id, of each new id, and the fresh ids.

    Fresh ids are inserted in sorted position when the old ids are sorted (the order
    :meth:`CrowdData.from_arrays` gives), else appended.
    """
    if len(old) and len(new) and _id_kind(old) != _id_kind(new):
        raise CrowdDataError(
            f"the new annotations' {what} ids are {_id_kind(new)}s, the fitted ones "
            f"{_id_kind(old)}s (e.g. {show(old[:3])}): annotations of another dataset?"
        )
    ordered = _is_increasing(old)
    if ordered and old.dtype.kind in "iufb":
        # sorted numbers: a binary search per new id, no hash table of the old ones
        slot = np.minimum(np.searchsorted(old, new), max(len(old) - 1, 0))
        position = np.where(old[slot] == new, slot, -1) if len(old) else np.full(len(new), -1)
    else:
        position = pd.Index(old).get_indexer(new)
    fresh_rows = np.flatnonzero(position < 0)
    if len(fresh_rows) == 0:
        return old, np.arange(len(old)), position.astype(np.int64), new[:0]
    fresh = new[fresh_rows]
    after_held = ordered and _all_after(fresh, old)
    if ordered and not after_held and _is_increasing(fresh):
        slots = np.searchsorted(old, fresh)
        merged = np.insert(old, slots, fresh)
        shift = np.zeros(len(old) + 1, dtype=np.int64)
        np.add.at(shift, slots, 1)
        old_map = np.arange(len(old)) + np.cumsum(shift)[: len(old)]
        fresh_codes = slots + np.arange(len(fresh))
    else:  # appended (ids after every held one keep the merged ids sorted)
        merged = np.concatenate([old, np.sort(fresh) if after_held else fresh])
        old_map = np.arange(len(old))
        fresh_codes = len(old) + np.arange(len(fresh))
        if after_held:  # the new rows' codes follow their ids' sorted order
            fresh_codes[np.argsort(fresh, kind="stable")] = fresh_codes.copy()
    new_map = np.zeros(len(new), dtype=np.int64)
    known = position >= 0
    new_map[known] = old_map[position[known]]
    new_map[fresh_rows] = fresh_codes
    return merged, old_map, new_map, fresh


def _all_after(fresh: np.ndarray, old: np.ndarray) -> bool:
    """Whether every fresh id sorts after the last of the (sorted) old ids: they are
    then appended, with no held code moving."""
    if len(old) == 0:
        return True
    try:
        return bool(np.min(fresh) > old[-1])
    except TypeError:  # ids that do not compare
        return False


def _id_kind(ids: np.ndarray) -> str:
    if ids.dtype.kind == "O":
        return pd.api.types.infer_dtype(ids, skipna=True)
    return {"i": "integer", "u": "integer", "f": "floating", "b": "boolean"}.get(
        ids.dtype.kind, ids.dtype.kind
    )


def _is_increasing(ids: np.ndarray) -> bool:
    if ids.dtype.kind in "iuf":  # one vectorised comparison (NaN compares False)
        return len(ids) < 2 or bool(np.all(ids[1:] >= ids[:-1]))
    try:
        return bool(pd.Index(ids).is_monotonic_increasing)
    except TypeError:
        return False


def _refuse_held_pairs(
    touched: np.ndarray,
    held_local: np.ndarray,
    held_worker: np.ndarray,
    new_local: np.ndarray,
    new_worker: np.ndarray,
    n_workers: int,
    task_ids: np.ndarray,
    worker_ids: np.ndarray,
) -> None:
    """A CrowdDataError when a new (task, worker) pair is among the held ones (tasks
    as positions in ``touched``)."""
    if len(held_local) == 0:
        return
    held = np.sort(held_local.astype(np.int64) * n_workers + held_worker)
    keys = new_local.astype(np.int64) * n_workers + new_worker
    found = held[np.minimum(np.searchsorted(held, keys), len(held) - 1)] == keys
    repeated = np.flatnonzero(found)
    if len(repeated):
        first = repeated[0]
        _repeated_pairs_error(
            len(repeated), touched, touched[new_local[first]], new_worker[first], task_ids,
            worker_ids,
        )  # fmt: skip


def _repeated_pairs_error(
    count: int,
    touched: np.ndarray,
    task: int,
    worker: int,
    task_ids: np.ndarray,
    worker_ids: np.ndarray,
) -> None:
    """The CrowdDataError of ``count`` new annotations that repeat a held (task,
    worker) pair, the first of them on task code ``task`` by worker code ``worker``."""
    raise CrowdDataError(
        f"{count} new annotation(s) repeat a (task, worker) pair already held, "
        f"e.g. task {plain(task_ids[task])} by worker "
        f"{plain(worker_ids[worker])}; send only the annotations that arrived "
        "since the last update"
    )
