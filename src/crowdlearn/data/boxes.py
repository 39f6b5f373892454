"""Boxes: bounding boxes drawn by workers on images (object detection).

Each annotation row is one box drawn by one worker on one task: its class (coded like
classes: ``classes`` holds the ids, sorted unless declared) and its corners
``x_min, y_min, x_max, y_max`` (float64, ``x_max >= x_min`` and ``y_max >= y_min``).
A worker may draw several boxes on a task, so there is no duplicate policy on
(task, worker).

A worker who saw a task and drew nothing is one row whose four coordinates are all
missing (NaN) and whose class is missing: its class code is ``-1``. These rows count
when an aggregator asks how many workers saw a task (an object seen by one worker of
three is not one seen by one worker of one). A row with some but not all coordinates
missing, or with an infinite coordinate, is an error naming its rows. A box of zero
area (``x_min == x_max`` or ``y_min == y_max``) is left out with a
:class:`~crowdlearn.data.CrowdDataWarning` saying how many: its row becomes "saw the task,
drew nothing".

The truth, where known, is a table of true boxes (:attr:`Boxes.truth`, a DataFrame
with columns ``task`` (code), ``class`` (code), ``x_min``, ``y_min``, ``x_max``,
``y_max``); it covers every task (a task without a truth row holds no object). ``None``
when unknown.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from crowdlearn.data._ids import factorize
from crowdlearn.data._kinds import TaskKindData, check_codes, frame_column, id_axis, readonly
from crowdlearn.data.errors import CrowdDataError, CrowdDataWarning, show

#: The coordinate columns, in order.
COORDINATES = ("x_min", "y_min", "x_max", "y_max")


def _coordinates(values: Any, what: str, allow_empty_rows: bool) -> np.ndarray:
    """An (n, 4) float64 array of corners, with one error naming the bad rows."""
    try:
        coords = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise CrowdDataError(f"{what}: box coordinates must be numbers ({error})") from None
    if coords.ndim != 2 or coords.shape[1] != 4:
        raise CrowdDataError(
            f"{what}: expected 4 coordinates (x_min, y_min, x_max, y_max) per row, "
            f"got shape {coords.shape}"
        )
    nan = np.isnan(coords)
    empty = nan.all(axis=1)
    partial = np.flatnonzero(nan.any(axis=1) & ~empty)
    if partial.size:
        raise CrowdDataError(
            f"{what}: rows {show(partial)} have some coordinates missing (a row with all "
            "four missing means the worker drew nothing)"
        )
    if empty.any() and not allow_empty_rows:
        raise CrowdDataError(f"{what}: rows {show(np.flatnonzero(empty))} have no coordinates")
    infinite = np.flatnonzero(np.isinf(coords).any(axis=1))
    if infinite.size:
        raise CrowdDataError(f"{what}: rows {show(infinite)} have infinite coordinates")
    for axis, (low, high) in (("x", (0, 2)), ("y", (1, 3))):
        bad = np.flatnonzero(coords[:, high] < coords[:, low])
        if bad.size:
            raise CrowdDataError(
                f"{what}: rows {show(bad)} have {axis}_max < {axis}_min "
                f"({show(coords[bad, high].tolist())} < {show(coords[bad, low].tolist())})"
            )
    return coords


class Boxes(TaskKindData):
    """Bounding boxes drawn by a crowd.

    Parameters
    ----------
    task, worker : array-like of int
        Task and worker code of each row.
    label : array-like of int
        Class code of each box (``-1`` on a row where the worker drew nothing).
    coords : array of shape (n_rows, 4)
        ``x_min, y_min, x_max, y_max`` of each box (all NaN: the worker drew nothing).
    task_ids, worker_ids, classes : array-like, optional
    n_tasks : int, optional
    truth : DataFrame, optional
        True boxes: columns ``task`` and ``class`` (codes) and the four coordinates.

    Examples
    --------
    >>> b = Boxes.from_arrays(["img1", "img1", "img2"], ["w1", "w2", "w1"],
    ...                       ["cat", "cat", None], [0, 1, None], [0, 0, None],
    ...                       [10, 11, None], [10, 9, None])
    >>> b
    Boxes(n_tasks=2, n_workers=2, n_classes=1, n_boxes=2, n_annotations=3)
    >>> b.label.tolist()
    [0, 0, -1]
    """

    kind = "box"
    _rows = ("task", "worker", "label", "coords")
    _axes = ("task_ids", "worker_ids", "classes")
    _extras = ("truth",)

    def __init__(
        self,
        task: Any,
        worker: Any,
        label: Any,
        coords: Any,
        *,
        task_ids: Any = None,
        worker_ids: Any = None,
        classes: Any = None,
        n_tasks: int | None = None,
        truth: pd.DataFrame | None = None,
    ) -> None:
        task_codes, worker_codes = np.asarray(task), np.asarray(worker)
        task_ids = id_axis(task_ids, n_tasks, task_codes, "task")
        worker_ids = id_axis(worker_ids, None, worker_codes, "worker")
        task = check_codes(task_codes, len(task_ids), "task")
        worker = check_codes(worker_codes, len(worker_ids), "worker")
        label = np.asarray(label)
        if len(label) and label.dtype.kind not in "iu":
            raise CrowdDataError(f"class codes must be integers, got dtype {label.dtype}")
        label = label.astype(np.int32)
        coords = _coordinates(coords, "boxes", allow_empty_rows=True)
        if not (len(task) == len(worker) == len(label) == len(coords)):
            raise CrowdDataError(
                f"task, worker, label and coordinates differ in length: {len(task)}, "
                f"{len(worker)}, {len(label)}, {len(coords)}"
            )
        if len(task) == 0:
            raise CrowdDataError("empty data: there are no annotations")
        drawn = ~np.isnan(coords[:, 0])
        coords, label, drawn = _without_zero_area(coords, label, drawn)
        n_classes = (
            len(classes)
            if classes is not None
            else (int(label[drawn].max()) + 1 if drawn.any() else 0)
        )
        classes = id_axis(classes, n_classes, label[drawn], "label")
        bad = np.flatnonzero(drawn & ((label < 0) | (label >= len(classes))))
        if bad.size:
            raise CrowdDataError(
                f"class codes must be in [0, {len(classes)}); rows {show(bad)} hold "
                f"{show(label[bad])}"
            )
        label = np.where(drawn, label, -1).astype(np.int32)
        if truth is not None:
            truth = _truth_table(truth, len(task_ids), len(classes))
        self.task = readonly(task)
        self.worker = readonly(worker)
        self.label = readonly(label)
        self.coords = readonly(coords)
        self.task_ids = readonly(task_ids)
        self.worker_ids = readonly(worker_ids)
        self.classes = readonly(classes)
        self.truth = truth
        self._freeze()

    @classmethod
    def from_arrays(
        cls,
        task: Any,
        worker: Any,
        label: Any,
        x_min: Any,
        y_min: Any,
        x_max: Any,
        y_max: Any,
        *,
        task_ids: Any = None,
        worker_ids: Any = None,
        classes: Any = None,
        truth: pd.DataFrame | None = None,
    ) -> Boxes:
        """Build from one entry per row with any hashable ids.

        Parameters
        ----------
        label : array-like
            Class of each box (None/NaN on a row where the worker drew nothing).
        x_min, y_min, x_max, y_max : array-like of float
            Corners (all four NaN/None: the worker saw the task and drew nothing).
        truth : DataFrame, optional
            True boxes with columns ``task``, ``label`` (or ``class``) and the four
            coordinates, in the user's ids; every task not listed holds no object.
        """
        task_codes, task_ids = factorize(task, "task", task_ids)
        worker_codes, worker_ids = factorize(worker, "worker", worker_ids)
        coords = np.column_stack(
            [pd.to_numeric(pd.Series(list(v)), errors="coerce") if not isinstance(v, np.ndarray)
             else v for v in (x_min, y_min, x_max, y_max)]
        )  # fmt: skip
        coords = _coordinates(coords, "boxes", allow_empty_rows=True)
        drawn = ~np.isnan(coords[:, 0])
        labels = np.asarray(pd.Series(list(label), dtype=object))
        missing = np.flatnonzero(drawn & pd.isna(labels))
        if missing.size:
            raise CrowdDataError(f"boxes at rows {show(missing)} have no class")
        codes = np.full(len(labels), -1, dtype=np.int32)
        class_ids = classes
        if drawn.any():
            drawn_codes, class_ids = factorize(labels[drawn], "label", classes)
            codes[drawn] = drawn_codes
        elif classes is None:
            class_ids = np.empty(0, dtype=object)
        truth_codes = None
        if truth is not None:
            truth_codes = _truth_codes(truth, task_ids, np.asarray(class_ids))
        return cls(
            task_codes,
            worker_codes,
            codes,
            coords,
            task_ids=task_ids,
            worker_ids=worker_ids,
            classes=class_ids,
            truth=truth_codes,
        )

    @classmethod
    def from_frame(
        cls,
        frame: pd.DataFrame,
        task: str = "task",
        worker: str = "worker",
        label: str = "label",
        **kwargs: Any,
    ) -> Boxes:
        """Build from a DataFrame with one row per box: ``task``, ``worker``, ``label``
        (the class) and ``x_min``, ``y_min``, ``x_max``, ``y_max``."""
        return cls.from_arrays(
            frame_column(frame, task, "task"),
            frame_column(frame, worker, "worker"),
            frame_column(frame, label, "label"),
            *(_numbers(frame_column(frame, name, name), name) for name in COORDINATES),
            **kwargs,
        )

    @classmethod
    def from_coco(cls, document: Mapping[str, Any]) -> Boxes:
        """Build from a COCO object-detection document (a dict, as ``json.load`` gives).

        ``annotations`` holds one box per entry: ``image_id`` (the task),
        ``category_id`` (the class; its ``name`` in ``categories`` when listed), ``bbox``
        ``[x, y, width, height]`` and the worker in one of the fields ``annotator``,
        ``worker``, ``worker_id``, ``annotator_id``, ``user_id`` (COCO itself has none).
        Every image of ``images`` is a task, even one nobody drew on.

        Examples
        --------
        >>> doc = {"images": [{"id": 1}, {"id": 2}],
        ...        "categories": [{"id": 7, "name": "cat"}],
        ...        "annotations": [{"image_id": 1, "category_id": 7, "bbox": [0, 0, 4, 2],
        ...                         "annotator": "w1"}]}
        >>> b = Boxes.from_coco(doc)
        >>> b.n_tasks, b.classes.tolist(), b.coords.tolist()
        (2, ['cat'], [[0.0, 0.0, 4.0, 2.0]])
        """
        if not isinstance(document, Mapping) or not isinstance(document.get("annotations"), list):
            raise CrowdDataError("a COCO document needs a list of 'annotations'")
        annotations = document["annotations"]
        if not annotations:
            raise CrowdDataError("empty data: the COCO document has no annotations")
        fields = ("annotator", "worker", "worker_id", "annotator_id", "user_id")
        field = next((f for f in fields if f in annotations[0]), None)
        if field is None:
            raise CrowdDataError(
                f"COCO annotations name no worker: add one of the fields {', '.join(fields)}"
            )
        names = {c.get("id"): c.get("name", c.get("id")) for c in document.get("categories", [])}
        rows, bad = [], []
        for k, entry in enumerate(annotations):
            box = entry.get("bbox")
            if (
                field not in entry
                or "image_id" not in entry
                or not isinstance(box, (list, tuple))
                or len(box) != 4
            ):
                bad.append(k)
                continue
            category = entry.get("category_id")
            x, y, w, h = (float(v) for v in box)
            rows.append(
                (
                    entry["image_id"],
                    entry[field],
                    names.get(category, category),
                    x,
                    y,
                    x + w,
                    y + h,
                )
            )
        if bad:
            raise CrowdDataError(
                f"COCO annotations {show(bad)} lack image_id, {field} or a 4-number bbox"
            )
        task, worker, label, x_min, y_min, x_max, y_max = (
            list(c) for c in zip(*rows, strict=True)
        )
        images = [i.get("id") for i in document.get("images", [])]
        seen = list(dict.fromkeys([*images, *task]))
        corners = (np.array(c, dtype=np.float64) for c in (x_min, y_min, x_max, y_max))
        return cls.from_arrays(
            task, worker, label, *corners, task_ids=sorted(seen) if images else None
        )

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def drawn(self) -> np.ndarray:
        """Bool mask of the rows that hold a box (not "drew nothing")."""
        return self.label >= 0

    @property
    def n_boxes(self) -> int:
        return int(self.drawn.sum())

    def to_frame(self) -> pd.DataFrame:
        """One row per annotation: task, worker, label and the four coordinates (a row
        where the worker drew nothing has a missing label and NaN coordinates)."""
        labels = np.empty(len(self.label), dtype=object)
        drawn = self.drawn
        labels[drawn] = self.classes[self.label[drawn]]
        labels[~drawn] = None
        frame = pd.DataFrame(
            {
                "task": self.task_ids[self.task],
                "worker": self.worker_ids[self.worker],
                "label": labels,
            }
        )
        for k, name in enumerate(COORDINATES):
            frame[name] = self.coords[:, k]
        return frame

    def __repr__(self) -> str:
        extras = "" if self.truth is None else f", truth={len(self.truth)} boxes"
        return (
            f"Boxes(n_tasks={self.n_tasks}, n_workers={self.n_workers}, "
            f"n_classes={self.n_classes}, n_boxes={self.n_boxes}, "
            f"n_annotations={self.n_annotations}{extras})"
        )


def _without_zero_area(
    coords: np.ndarray, label: np.ndarray, drawn: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Boxes of zero area (``x_min == x_max`` or ``y_min == y_max``: a click, not a
    drag) are left out with one warning saying how many: their rows become "saw the task,
    drew nothing" (all coordinates missing, class -1), so their workers still count as
    having seen the task. Such a box has IoU 0 with every box and could only ever form a
    candidate object of its own."""
    zero = np.flatnonzero(
        drawn & ((coords[:, 2] == coords[:, 0]) | (coords[:, 3] == coords[:, 1]))
    )
    if not zero.size:
        return coords, label, drawn
    warnings.warn(
        f"{zero.size} box{'es' if zero.size > 1 else ''} of zero area (x_min == x_max or "
        f"y_min == y_max) at rows {show(zero)} left out; their workers still count as "
        "having seen the task",
        CrowdDataWarning,
        stacklevel=4,
    )
    coords, label, drawn = coords.copy(), label.copy(), drawn.copy()
    coords[zero] = np.nan
    label[zero] = -1
    drawn[zero] = False
    return coords, label, drawn


def _numbers(column: pd.Series, name: str) -> np.ndarray:
    """A coordinate column as float64, with one error naming the cells that are not
    numbers (missing cells stay NaN)."""
    values = pd.to_numeric(column, errors="coerce").to_numpy(np.float64)
    bad = np.flatnonzero(np.isnan(values) & column.notna().to_numpy())
    if bad.size:
        raise CrowdDataError(
            f"{name}: rows {show(bad)} are not numbers ({show(column.iloc[bad].tolist())})"
        )
    return values


def _truth_codes(truth: pd.DataFrame, task_ids: np.ndarray, classes: np.ndarray) -> pd.DataFrame:
    """The truth table in the user's ids -> codes."""
    if not isinstance(truth, pd.DataFrame):
        raise CrowdDataError(
            "truth must be a DataFrame with columns task, label and "
            f"{', '.join(COORDINATES)}; got {type(truth).__name__}"
        )
    name = "label" if "label" in truth.columns else "class"
    for column in ("task", name, *COORDINATES):
        frame_column(truth, column, "truth")
    task_lookup = {t: k for k, t in enumerate(task_ids.tolist())}
    class_lookup = {c: k for k, c in enumerate(classes.tolist())}
    tasks = truth["task"].tolist()
    unknown = [t for t in tasks if t not in task_lookup]
    if unknown:
        raise CrowdDataError(f"truth names unknown tasks: {show(unknown)}")
    labels = truth[name].tolist()
    unseen = [c for c in labels if c not in class_lookup]
    if unseen:
        raise CrowdDataError(
            f"truth names classes no worker drew: {show(unseen)}; declare them with classes="
        )
    out = pd.DataFrame(
        {
            "task": np.array([task_lookup[t] for t in tasks], dtype=np.int32),
            "class": np.array([class_lookup[c] for c in labels], dtype=np.int32),
        }
    )
    coords = _coordinates(truth[list(COORDINATES)].to_numpy(np.float64), "truth", False)
    for k, column in enumerate(COORDINATES):
        out[column] = coords[:, k]
    return out


def _truth_table(truth: pd.DataFrame, n_tasks: int, n_classes: int) -> pd.DataFrame:
    """A truth table already in codes, checked."""
    if not isinstance(truth, pd.DataFrame):
        raise CrowdDataError(f"truth must be a DataFrame, got {type(truth).__name__}")
    for column in ("task", "class", *COORDINATES):
        frame_column(truth, column, "truth")
    task = check_codes(truth["task"].to_numpy(), n_tasks, "truth task")
    label = check_codes(truth["class"].to_numpy(), n_classes, "truth class")
    coords = _coordinates(truth[list(COORDINATES)].to_numpy(np.float64), "truth", False)
    out = pd.DataFrame({"task": task, "class": label})
    for k, column in enumerate(COORDINATES):
        out[column] = coords[:, k]
    return out.reset_index(drop=True)
