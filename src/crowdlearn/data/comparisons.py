"""Pairwise comparisons: "which of the two is better / older / more relevant".

Each annotation is one worker's choice between two items, stored as the item codes of
the ``left`` and ``right`` items shown and the code of the preferred one, ``winner``
(``-1`` for a declared tie). Items are an id axis of their own (``item_ids``), coded
like tasks; the scores that comparison models infer are per item.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from crowdlearn.data._ids import as_id_array, factorize
from crowdlearn.data._kinds import KindData, check_codes, frame_column, id_axis, readonly
from crowdlearn.data.errors import CrowdDataError, show

#: Crowd-kit's layout: worker, left, right, label (label = the preferred item).
COLUMNS = ("worker", "left", "right", "label")


class Comparisons(KindData):
    """Pairwise preferences between items.

    Parameters
    ----------
    worker, left, right : array-like of int
        Worker code and the codes of the two items of each comparison.
    winner : array-like of int
        The preferred item's code (``left`` or ``right``), or ``-1`` for a tie.
    item_ids, worker_ids : array-like, optional
    truth : array of shape (n_items,), optional
        True scores (higher = preferred), NaN where unknown.

    Examples
    --------
    >>> c = Comparisons.from_arrays(
    ...     worker=["w1", "w1", "w2"], left=["a", "b", "a"], right=["b", "c", "c"],
    ...     label=["a", "b", "c"],
    ... )
    >>> c
    Comparisons(n_items=3, n_workers=2, n_annotations=3)
    >>> c.winner, c.loser
    (array([0, 1, 2], dtype=int32), array([1, 2, 0], dtype=int32))
    """

    kind = "comparison"
    _rows = ("worker", "left", "right", "winner")
    _axes = ("item_ids", "worker_ids")
    _extras = ("truth",)

    def __init__(
        self,
        worker: Any,
        left: Any,
        right: Any,
        winner: Any,
        *,
        item_ids: Any = None,
        worker_ids: Any = None,
        n_items: int | None = None,
        truth: Any = None,
    ) -> None:
        left_codes, right_codes = np.asarray(left), np.asarray(right)
        extent = np.concatenate([left_codes.ravel(), right_codes.ravel()])
        item_ids = id_axis(item_ids, n_items, extent, "item")
        worker_codes = np.asarray(worker)
        worker_ids = id_axis(worker_ids, None, worker_codes, "worker")
        worker = check_codes(worker_codes, len(worker_ids), "worker")
        left = check_codes(left_codes, len(item_ids), "left item")
        right = check_codes(right_codes, len(item_ids), "right item")
        winner = np.asarray(winner)
        if not (len(worker) == len(left) == len(right) == len(winner)):
            raise CrowdDataError(
                "worker, left, right and winner differ in length: "
                f"{len(worker)}, {len(left)}, {len(right)}, {len(winner)}"
            )
        if len(worker) == 0:
            raise CrowdDataError("empty data: there are no comparisons")
        winner = winner.astype(np.int32)
        same = np.flatnonzero(left == right)
        if len(same):
            raise CrowdDataError(
                f"rows {show(same)} compare an item with itself (left == right: "
                f"{show(item_ids[left[same]])})"
            )
        neither = np.flatnonzero((winner != left) & (winner != right) & (winner != -1))
        if len(neither):
            raise CrowdDataError(
                f"rows {show(neither)}: the label is neither the left nor the right item"
            )
        if truth is not None:
            truth = np.asarray(truth, dtype=np.float64)
            if truth.shape != (len(item_ids),):
                raise CrowdDataError(
                    f"truth must have one score per item ({len(item_ids)}), got {truth.shape}"
                )
            if np.all(np.isnan(truth)):
                truth = None
        self.worker = readonly(worker)
        self.left = readonly(left)
        self.right = readonly(right)
        self.winner = readonly(winner)
        self.item_ids = readonly(item_ids)
        self.worker_ids = readonly(worker_ids)
        self.truth = None if truth is None else readonly(truth)
        self._freeze()

    @classmethod
    def from_arrays(
        cls,
        worker: Any,
        left: Any,
        right: Any,
        label: Any,
        *,
        item_ids: Any = None,
        worker_ids: Any = None,
        tie: Any = None,
        truth: Any = None,
    ) -> Comparisons:
        """Build from crowd-kit's layout with any hashable ids.

        Parameters
        ----------
        worker, left, right : array-like
            The worker and the two items of each comparison.
        label : array-like
            The preferred item (equal to ``left`` or ``right``).
        tie : hashable, optional
            The label value that declares a tie (e.g. ``"tie"``); without it every
            label must name one of the two items.
        truth : Mapping / Series of item id -> score, or a sequence aligned with the
            item codes, optional.
        """
        left_arr, right_arr = as_id_array(left, "left"), as_id_array(right, "right")
        label_arr = as_id_array(label, "label")
        if not (len(left_arr) == len(right_arr) == len(label_arr)):
            raise CrowdDataError(
                f"left, right and label differ in length: {len(left_arr)}, {len(right_arr)}, "
                f"{len(label_arr)}"
            )
        both = np.concatenate([left_arr, right_arr])
        codes, item_ids = factorize(both, "item", item_ids)
        n = len(left_arr)
        left_codes, right_codes = codes[:n], codes[n:]
        if tie is not None:
            _check_tie_is_no_item(tie, item_ids)
        ties = np.zeros(n, dtype=bool) if tie is None else _is_tie(label_arr, tie)
        winner = np.full(n, -1, dtype=np.int32)
        is_left = _same(label_arr, left_arr) & ~ties
        is_right = _same(label_arr, right_arr) & ~ties
        winner[is_left] = left_codes[is_left]
        winner[is_right] = right_codes[is_right]
        neither = np.flatnonzero(~(is_left | is_right | ties))
        same = np.flatnonzero(left_codes == right_codes)
        if len(same):
            raise CrowdDataError(
                f"rows {show(same)} compare an item with itself (left == right: "
                f"{show(item_ids[left_codes[same]])})"
            )
        if len(neither):
            hint = "" if tie is not None else "; declare the value that means a tie (tie=...)"
            raise CrowdDataError(
                f"rows {show(neither)}: the label {show(label_arr[neither])} is neither the left "
                f"nor the right item{hint}"
            )
        worker_codes, worker_ids = factorize(worker, "worker", worker_ids)
        truth_values = None
        if truth is not None:
            truth_values = _item_scores(truth, item_ids)
        return cls(
            worker_codes,
            left_codes,
            right_codes,
            winner,
            item_ids=item_ids,
            worker_ids=worker_ids,
            truth=truth_values,
        )

    @classmethod
    def from_frame(
        cls,
        frame: pd.DataFrame,
        worker: str = "worker",
        left: str = "left",
        right: str = "right",
        label: str = "label",
        **kwargs: Any,
    ) -> Comparisons:
        """Build from a DataFrame in crowd-kit's layout (worker, left, right, label)."""
        return cls.from_arrays(
            frame_column(frame, worker, "worker"),
            frame_column(frame, left, "left"),
            frame_column(frame, right, "right"),
            frame_column(frame, label, "label"),
            **kwargs,
        )

    @property
    def n_items(self) -> int:
        return len(self.item_ids)

    @property
    def ties(self) -> np.ndarray:
        """Mask of the comparisons declared a tie."""
        return self.winner < 0

    @property
    def loser(self) -> np.ndarray:
        """The item not preferred (``-1`` for a tie)."""
        loser = np.where(self.winner == self.left, self.right, self.left).astype(np.int32)
        loser[self.winner < 0] = -1
        return loser

    def to_frame(self) -> pd.DataFrame:
        """crowd-kit's layout: worker, left, right, label (None for a tie)."""
        label = self.item_ids[np.maximum(self.winner, 0)].astype(object)
        label[self.winner < 0] = None
        return pd.DataFrame(
            {
                "worker": self.worker_ids[self.worker],
                "left": self.item_ids[self.left],
                "right": self.item_ids[self.right],
                "label": label,
            }
        )

    def __repr__(self) -> str:
        extras = f", ties={int(np.sum(self.ties))}" if np.any(self.ties) else ""
        if self.truth is not None:
            extras += f", truth={int(np.sum(~np.isnan(self.truth)))} known"
        return (
            f"Comparisons(n_items={self.n_items}, n_workers={self.n_workers}, "
            f"n_annotations={self.n_annotations}{extras})"
        )


def _check_tie_is_no_item(tie: Any, item_ids: np.ndarray) -> None:
    """Refuse a tie label that is also an item's id (or spelled like one: ``"1"`` and the
    item ``1``): a label equal to it would mean both a win of that item and a tie."""
    spelled = str(tie)
    clash = [item for item in item_ids.tolist() if item == tie or str(item) == spelled]
    if clash:
        raise CrowdDataError(
            f"the tie label {tie!r} is also an item ({clash[0]!r}): a label {spelled} would "
            "mean both that item won and a tie; declare a tie label that names no item"
        )


def _is_tie(label: np.ndarray, tie: Any) -> np.ndarray:
    """The labels equal to ``tie``, or spelled like it (the command line's ``--tie 0`` is
    text; a column of labels 0, 1, 2 is read as integers)."""
    spelled = str(tie)
    return np.fromiter((x == tie or str(x) == spelled for x in label.tolist()), bool, len(label))


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Where ``a`` equals ``b``; where the two differ in type, where they are spelled
    alike (labels read as text beside integer items: ``"1"`` names the item ``1``)."""
    if a.dtype == object or b.dtype == object or a.dtype.kind != b.dtype.kind:
        return np.fromiter(
            (
                x == y or (type(x) is not type(y) and str(x) == str(y))
                for x, y in zip(a.tolist(), b.tolist(), strict=True)
            ),
            bool,
            len(a),
        )
    return a == b


def _item_scores(truth: Any, item_ids: np.ndarray) -> np.ndarray:
    if isinstance(truth, (Mapping, pd.Series)):
        lookup = pd.Series(dict(truth.items()), dtype=float)
        return lookup.reindex(pd.Index(item_ids)).to_numpy(dtype=np.float64)
    values = np.asarray(truth, dtype=np.float64)
    if values.shape != (len(item_ids),):
        raise CrowdDataError(f"truth has {len(values)} entries for {len(item_ids)} items")
    return values
