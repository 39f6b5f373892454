"""Masks: binary segmentation masks, one per (task, worker), loaded one task at a time.

Each annotation is one worker's mask of one task's image: a 2-D boolean array of that
task's size (tasks may differ in size; every mask of a task has the task's size, else
an error naming the task and the worker). Masks are big, so :class:`Masks` holds only
the annotations' task and worker codes and a *source* that loads the masks of one task
on demand (:meth:`Masks.task_masks`): an in-memory list (:meth:`Masks.from_arrays`, for
small data and tests), files in a folder (:meth:`Masks.from_folder`), read when a
task is asked for, or COCO run-length encodings (:meth:`Masks.from_rle`), decoded
then. Aggregators make passes over the tasks one at a time, so at most one task's
masks are in memory at once.

Folder layout (``crowdlearn aggregate --kind mask FOLDER``)::

    FOLDER/TASK/WORKER.npy      one worker's mask of one task (or WORKER.png)
    FOLDER/_truth/TASK.npy      optional: the true mask of a task (or TASK.png)

Every sub-folder is a task (named by the folder; folders whose name starts with ``_``
or ``.`` are not tasks) and every ``.npy`` or ``.png`` file in it is a worker's mask
(named by the file's stem). A ``.npy`` file holds a 2-D array (bool, or numbers:
nonzero is foreground; read with ``allow_pickle=False``); a ``.png`` file is read with
Pillow (not a dependency of crowdlearn: ``pip install pillow``), any nonzero channel
is foreground; a PNG whose header declares more pixels than Pillow's
``MAX_IMAGE_PIXELS`` (a decompression bomb) is refused before any pixel is decoded.
A folder holds one format (the command line writes its results in it).
The truth, where known, is one mask per task (``None`` where unknown), loaded lazily
by :meth:`Masks.truth_mask`.
"""

from __future__ import annotations

import os
import struct
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from crowdlearn.data._ids import factorize
from crowdlearn.data._kinds import TaskKindData, check_codes, id_axis, keep_rows, readonly
from crowdlearn.data.errors import CrowdDataError, show

#: The file formats of the folder layout, by suffix.
SUFFIXES = (".npy", ".png")


def as_mask(array: Any, where: str) -> np.ndarray:
    """A 2-D bool array (nonzero = foreground), or one error saying ``where`` it came from."""
    arr = np.asarray(array)
    if arr.dtype.kind not in "biuf":
        raise CrowdDataError(f"{where}: a mask must hold booleans or numbers, got {arr.dtype}")
    if arr.ndim != 2 or arr.size == 0:
        raise CrowdDataError(
            f"{where}: a mask must be a non-empty 2-D array, got shape {arr.shape}"
        )
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise CrowdDataError(f"{where}: a mask holds NaN or infinite values")
    return arr if arr.dtype == bool else arr != 0


def read_mask(path: str | os.PathLike[str]) -> np.ndarray:
    """One mask file (``.npy`` or ``.png``) as a 2-D bool array; a file that is not a mask
    is one :class:`CrowdDataError` naming it."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".npy":
        try:
            _check_npy_size(path)
            array = np.load(path, allow_pickle=False)
        except CrowdDataError:
            raise
        except (ValueError, OSError, EOFError) as exc:
            raise CrowdDataError(f"{path}: not a .npy array ({exc})") from None
        return as_mask(array, str(path))
    if suffix == ".png":
        try:
            from PIL import Image, UnidentifiedImageError
        except ImportError:
            raise CrowdDataError(
                f"{path}: reading PNG masks needs Pillow (pip install pillow); "
                "or save the masks as .npy files"
            ) from None
        bombs = (Image.DecompressionBombError, Image.DecompressionBombWarning)
        try:
            with warnings.catch_warnings():
                # Pillow warns above MAX_IMAGE_PIXELS and refuses above twice that: both
                # are refused here, before any pixel is decoded
                warnings.simplefilter("error", Image.DecompressionBombWarning)
                with Image.open(path) as image:
                    array = np.asarray(image)
        except bombs:
            raise CrowdDataError(_too_many_pixels(path, Image.MAX_IMAGE_PIXELS)) from None
        except (UnidentifiedImageError, OSError, ValueError) as exc:
            raise CrowdDataError(f"{path}: not a PNG image ({exc})") from None
        if array.ndim == 3:
            array = array.any(axis=2)
        return as_mask(array, str(path))
    raise CrowdDataError(f"{path}: masks are .npy or .png files, not {suffix or 'no suffix'}")


def _check_npy_size(path: Path) -> None:
    """Refuse a ``.npy`` file whose header declares more data than the file holds (a
    few bytes declaring 40000 x 40000 values would otherwise be allocated first)."""
    with open(path, "rb") as handle:
        version = np.lib.format.read_magic(handle)
        read_header = (
            np.lib.format.read_array_header_1_0
            if version == (1, 0)
            else np.lib.format.read_array_header_2_0
        )
        shape, _, dtype = read_header(handle)
        offset = handle.tell()
    if dtype.hasobject:
        return  # np.load refuses it (allow_pickle=False)
    declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
    held = path.stat().st_size - offset
    if declared > held:
        raise CrowdDataError(
            f"{path}: the array declares shape {tuple(shape)} ({declared:,} bytes) but the "
            f"file holds {held:,} bytes"
        )


def _too_many_pixels(path: Path, limit: int | None) -> str:
    """The refusal of a PNG whose header declares more pixels than Pillow's limit (a
    decompression bomb: a few bytes that would inflate to gigabytes)."""
    size = ""
    with open(path, "rb") as handle:
        head = handle.read(24)
    if head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR":
        width, height = struct.unpack(">II", head[16:24])
        size = f" declares {width} x {height} pixels,"
    return (
        f"{path}: the image{size} more than the {limit:,} pixels a PNG mask may have "
        "(Pillow's guard against decompression bombs, PIL.Image.MAX_IMAGE_PIXELS); "
        "save such a mask as a .npy file"
    )


def write_mask(path: str | os.PathLike[str], mask: np.ndarray) -> None:
    """Write one bool mask as ``.npy`` or as a black/white 8-bit ``.png`` (by suffix)."""
    path = Path(path)
    mask = np.asarray(mask, dtype=bool)
    if path.suffix.lower() == ".png":
        try:
            from PIL import Image
        except ImportError:
            raise CrowdDataError("writing PNG masks needs Pillow (pip install pillow)") from None
        Image.fromarray(mask.astype(np.uint8) * 255).save(path)
    else:
        with open(path, "wb") as handle:
            np.save(handle, mask, allow_pickle=False)


def _rle_counts(counts: Any, where: str) -> list[int]:
    """The run lengths of a COCO RLE: a list of ints, or the compressed string (each
    count in 5-bit groups, low first, as characters from ``0`` (48), bit 0x20: more
    groups follow, bit 0x10 of the last group: the value is negative; from the third
    count on, each is stored as its difference with the count two places before)."""
    if isinstance(counts, (list, tuple, np.ndarray)):
        return [int(c) for c in counts]
    if isinstance(counts, bytes):
        counts = counts.decode("ascii")
    if not isinstance(counts, str):
        raise CrowdDataError(f"{where}: RLE counts must be a list of ints or a string")
    out: list[int] = []
    position = 0
    while position < len(counts):
        value, shift, more = 0, 0, True
        while more:
            if position >= len(counts):
                raise CrowdDataError(f"{where}: the RLE string ends inside a count")
            group = ord(counts[position]) - 48
            if not 0 <= group < 64:
                raise CrowdDataError(f"{where}: {counts[position]!r} is not an RLE character")
            value |= (group & 0x1F) << shift
            more = bool(group & 0x20)
            position += 1
            shift += 5
            if not more and group & 0x10:
                value |= -1 << shift
        if len(out) > 2:
            value += out[-2]
        out.append(value)
    return out


def decode_rle(rle: Mapping[str, Any], where: str = "RLE") -> np.ndarray:
    """A COCO run-length encoding ``{"size": [height, width], "counts": ...}`` as a 2-D
    bool mask. The runs alternate background and foreground, background first, over the
    pixels in column-major order (down the first column, then the next)."""
    try:
        height, width = (int(v) for v in rle["size"])
        counts = _rle_counts(rle["counts"], where)
    except (KeyError, TypeError, ValueError) as exc:
        raise CrowdDataError(f"{where}: not a COCO RLE ({type(exc).__name__}: {exc})") from None
    runs = np.asarray(counts, dtype=np.int64)
    if (runs < 0).any() or runs.sum() != height * width:
        raise CrowdDataError(
            f"{where}: the RLE runs cover {int(runs.sum())} pixels, its size "
            f"{height}x{width} has {height * width}"
        )
    values = np.zeros(len(runs), dtype=bool)
    values[1::2] = True
    flat = np.repeat(values, runs)
    return flat.reshape(width, height).T.copy()


class Masks(TaskKindData):
    """Binary segmentation masks from a crowd, loaded one task at a time.

    Parameters
    ----------
    task, worker : array-like of int
        Task and worker code of each annotation.
    source : sequence
        One entry per annotation: a 2-D array (held in memory) or a path to a ``.npy`` /
        ``.png`` file (read when its task is asked for) or a COCO RLE dict (decoded then).
    task_ids, worker_ids : array-like, optional
    truth : sequence of shape (n_tasks,), optional
        Per task: a 2-D array, a file path or ``None`` (unknown).
    duplicates : {"error", "first", "last"}

    Examples
    --------
    >>> import numpy as np
    >>> a = np.array([[1, 1], [0, 0]], dtype=bool)
    >>> m = Masks.from_arrays(["t", "t"], ["w1", "w2"], [a, a | a.T])
    >>> m
    Masks(n_tasks=1, n_workers=2, n_annotations=2)
    >>> workers, stack = m.task_masks(0)
    >>> workers.tolist(), stack.shape
    ([0, 1], (2, 2, 2))
    """

    kind = "mask"
    _rows = ("task", "worker")
    _axes = ("task_ids", "worker_ids")
    _extras = ()

    def __init__(
        self,
        task: Any,
        worker: Any,
        source: Sequence[Any],
        *,
        task_ids: Any = None,
        worker_ids: Any = None,
        n_tasks: int | None = None,
        truth: Sequence[Any] | None = None,
        duplicates: str = "error",
    ) -> None:
        task_codes, worker_codes = np.asarray(task), np.asarray(worker)
        task_ids = id_axis(task_ids, n_tasks, task_codes, "task")
        worker_ids = id_axis(worker_ids, None, worker_codes, "worker")
        task = check_codes(task_codes, len(task_ids), "task")
        worker = check_codes(worker_codes, len(worker_ids), "worker")
        source = list(source)
        if not (len(task) == len(worker) == len(source)):
            raise CrowdDataError(
                f"task, worker and masks differ in length: {len(task)}, {len(worker)}, "
                f"{len(source)}"
            )
        if len(task) == 0:
            raise CrowdDataError("empty data: there are no annotations")
        if duplicates == "keep":
            raise CrowdDataError(
                "masks take one mask per (task, worker): duplicates='keep' is refused"
            )
        keep = keep_rows(task, worker, len(worker_ids), duplicates, task_ids, worker_ids)
        if keep is not None:
            task, worker = task[keep], worker[keep]
            source = [source[i] for i in np.asarray(keep).tolist()]
        empty = np.flatnonzero(np.bincount(task, minlength=len(task_ids)) == 0)
        if len(empty):
            raise CrowdDataError(f"tasks {show(task_ids[empty])} have no masks")
        if truth is not None:
            truth = list(truth)
            if len(truth) != len(task_ids):
                raise CrowdDataError(
                    f"truth must have one mask per task ({len(task_ids)}), got {len(truth)}"
                )
            if all(t is None for t in truth):
                truth = None
        order = np.argsort(task, kind="stable")
        counts = np.bincount(task, minlength=len(task_ids))
        self.task = readonly(task)
        self.worker = readonly(worker)
        self.task_ids = readonly(task_ids)
        self.worker_ids = readonly(worker_ids)
        self._source = source
        self._truth = truth
        self._order = order
        self._starts = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        self._freeze()

    # ------------------------------------------------------------------ constructors

    @classmethod
    def from_arrays(
        cls,
        task: Any,
        worker: Any,
        masks: Sequence[Any],
        *,
        task_ids: Any = None,
        worker_ids: Any = None,
        truth: Any = None,
        duplicates: str = "error",
    ) -> Masks:
        """Build from one mask per annotation (arrays or file paths) with any hashable ids.

        In-memory masks are checked here (2-D, the same size within a task); file paths
        are checked when their task is loaded.

        Parameters
        ----------
        masks : sequence of 2-D arrays or paths
        truth : Mapping keyed by task id, or a sequence aligned with the task codes,
            optional (masks or paths; ``None`` where unknown).
        """
        task_codes, task_ids = factorize(task, "task", task_ids)
        worker_codes, worker_ids = factorize(worker, "worker", worker_ids)
        masks = list(masks)
        for row, value in enumerate(masks):
            if not isinstance(value, (str, os.PathLike)):
                masks[row] = readonly(
                    as_mask(
                        value,
                        f"task {task_ids[task_codes[row]]!r}, worker "
                        f"{worker_ids[worker_codes[row]]!r}",
                    )
                )
        aligned = None if truth is None else _aligned(truth, task_ids)
        if aligned is not None:
            aligned = [
                v
                if v is None or isinstance(v, (str, os.PathLike))
                else readonly(as_mask(v, f"truth of task {task_ids[t]!r}"))
                for t, v in enumerate(aligned)
            ]
        data = cls(
            task_codes,
            worker_codes,
            masks,
            task_ids=task_ids,
            worker_ids=worker_ids,
            truth=aligned,
            duplicates=duplicates,
        )
        if all(not isinstance(v, (str, os.PathLike)) for v in data._source):
            for t in range(data.n_tasks):
                data.task_masks(t)  # sizes checked now, not in the middle of a fit
        return data

    @classmethod
    def from_rle(
        cls,
        task: Any,
        worker: Any,
        rle: Sequence[Mapping[str, Any]],
        *,
        truth: Any = None,
        duplicates: str = "error",
    ) -> Masks:
        """Build from COCO run-length encodings, one per annotation, decoded when their
        task is loaded.

        Parameters
        ----------
        rle : sequence of dicts ``{"size": [height, width], "counts": list or str}``
            Uncompressed (a list of run lengths) or compressed (COCO's string) counts.
        truth : Mapping keyed by task id, or a sequence aligned with the task codes,
            optional (RLE dicts; ``None`` where unknown).

        Examples
        --------
        >>> m = Masks.from_rle(["t"], ["w"], [{"size": [2, 2], "counts": [1, 2, 1]}])
        >>> m.task_masks(0)[1][0].astype(int).tolist()
        [[0, 1], [1, 0]]
        """
        task_codes, task_ids = factorize(task, "task")
        worker_codes, worker_ids = factorize(worker, "worker")
        rle = list(rle)
        for row, value in enumerate(rle):
            if not isinstance(value, Mapping):
                raise CrowdDataError(
                    f"row {row}: expected a COCO RLE dict, got {type(value).__name__}"
                )
        aligned = None if truth is None else _aligned(truth, task_ids)
        return cls(
            task_codes,
            worker_codes,
            rle,
            task_ids=task_ids,
            worker_ids=worker_ids,
            truth=aligned,
            duplicates=duplicates,
        )

    @classmethod
    def from_folder(cls, folder: str | os.PathLike[str], *, duplicates: str = "error") -> Masks:
        """Index a folder laid out as ``FOLDER/TASK/WORKER.npy|png`` (truth in
        ``FOLDER/_truth/TASK.npy|png``); nothing is read but the file names."""
        root = Path(folder)
        if not root.is_dir():
            raise CrowdDataError(f"{root}: not a folder of masks (FOLDER/TASK/WORKER.npy)")
        tasks, workers, paths = [], [], []
        suffixes = set()
        for task_dir in sorted(p for p in root.iterdir() if p.is_dir()):
            if task_dir.name.startswith(("_", ".")):
                continue
            for file in sorted(task_dir.iterdir()):
                if file.is_file() and file.suffix.lower() in SUFFIXES:
                    tasks.append(task_dir.name)
                    workers.append(file.stem)
                    paths.append(str(file))
                    suffixes.add(file.suffix.lower())
        if not paths:
            raise CrowdDataError(
                f"{root}: no masks found; the layout is FOLDER/TASK/WORKER.npy (or .png)"
            )
        if len(suffixes) > 1:
            raise CrowdDataError(f"{root}: mixes .npy and .png masks; use one format")
        task_codes, task_ids = factorize(np.array(tasks, dtype=object), "task")
        worker_codes, worker_ids = factorize(np.array(workers, dtype=object), "worker")
        truth: list[Any] | None = None
        truth_dir = root / "_truth"
        if truth_dir.is_dir():
            found = {
                f.stem: str(f)
                for f in truth_dir.iterdir()
                if f.is_file() and f.suffix.lower() in SUFFIXES
            }
            unknown = sorted(set(found) - {str(t) for t in task_ids.tolist()})
            if unknown:
                raise CrowdDataError(f"{truth_dir}: truth names unknown tasks: {show(unknown)}")
            truth = [found.get(str(t)) for t in task_ids.tolist()]
        data = cls(
            task_codes,
            worker_codes,
            paths,
            task_ids=task_ids,
            worker_ids=worker_ids,
            truth=truth,
            duplicates=duplicates,
        )
        object.__setattr__(data, "_format", suffixes.pop().lstrip("."))
        return data

    # ------------------------------------------------------------------ access

    @property
    def mask_format(self) -> str:
        """``"png"`` for a folder of PNG masks, else ``"npy"`` (what the CLI writes)."""
        return getattr(self, "_format", "npy")

    @property
    def has_truth(self) -> bool:
        return self._truth is not None

    def task_rows(self, t: int) -> np.ndarray:
        """The annotation rows of task ``t`` (in row order)."""
        return self._order[self._starts[t] : self._starts[t + 1]]

    def task_masks(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """Task ``t``'s worker codes (k,) and masks, bool (k, height, width).

        A mask of another size than the task's first mask is an error naming the task
        and the worker.
        """
        rows = self.task_rows(t)
        loaded = []
        for row in rows.tolist():
            loaded.append(_load(self._source[row], self, row))
        shape = loaded[0].shape
        for row, mask in zip(rows.tolist(), loaded, strict=True):
            if mask.shape != shape:
                first = self.worker_ids[self.worker[rows[0]]]
                raise CrowdDataError(
                    f"task {self.task_ids[t]!r}: the mask of worker "
                    f"{self.worker_ids[self.worker[row]]!r} is {mask.shape[0]}x{mask.shape[1]}, "
                    f"the task's masks are {shape[0]}x{shape[1]} (worker {first!r})"
                )
        return self.worker[rows], np.stack(loaded)

    def iter_tasks(self) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """``(t, workers, masks)`` for every task in code order, one task loaded at a time."""
        for t in range(self.n_tasks):
            workers, masks = self.task_masks(t)
            yield t, workers, masks

    def truth_mask(self, t: int) -> np.ndarray | None:
        """The true mask of task ``t`` (``None`` where unknown)."""
        if self._truth is None or self._truth[t] is None:
            return None
        value = self._truth[t]
        if isinstance(value, Mapping):
            return decode_rle(value, f"truth of task {self.task_ids[t]!r}")
        return read_mask(value) if isinstance(value, (str, os.PathLike)) else value

    def __eq__(self, other: object) -> bool:
        same = super().__eq__(other)
        if same is not True:
            return same
        assert isinstance(other, Masks)
        for t in range(self.n_tasks):
            (wa, ma), (wb, mb) = self.task_masks(t), other.task_masks(t)
            if not (np.array_equal(wa, wb) and np.array_equal(ma, mb)):
                return False
        return True

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        extras = ""
        if self._truth is not None:
            known = sum(t is not None for t in self._truth)
            extras += f", truth={known} known"
        return (
            f"Masks(n_tasks={self.n_tasks}, n_workers={self.n_workers}, "
            f"n_annotations={self.n_annotations}{extras})"
        )


def _load(value: Any, data: Masks, row: int) -> np.ndarray:
    """One annotation's mask from its source entry (array, path or RLE)."""
    if isinstance(value, (str, os.PathLike)):
        return read_mask(value)
    if isinstance(value, Mapping):
        where = (
            f"task {data.task_ids[data.task[row]]!r}, worker {data.worker_ids[data.worker[row]]!r}"
        )
        return decode_rle(value, where)
    return value


def _aligned(truth: Any, task_ids: np.ndarray) -> list[Any]:
    if isinstance(truth, Mapping):
        known = set(task_ids.tolist())
        unknown = [t for t in truth if t not in known]
        if unknown:
            raise CrowdDataError(f"truth names unknown tasks: {show(unknown)}")
        return [truth.get(t) for t in task_ids.tolist()]
    cells = list(truth)
    if len(cells) != len(task_ids):
        raise CrowdDataError(f"truth has {len(cells)} entries for {len(task_ids)} tasks")
    return cells
