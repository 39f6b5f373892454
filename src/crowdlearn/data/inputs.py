"""Task inputs for learners: numeric arrays or files (images) read on demand.

A learner needs, for a batch of task codes, an array of their inputs. Numeric features
already in memory are wrapped by :class:`ArrayInputs`; images stored as files (the
peerannot layout: ``train/<class>/<name>-<task index>.png``) by
:class:`ImageFolderInputs`, which reads them with Pillow only when a batch asks for
them. Any object with the same four members works (:class:`TaskInputs`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from crowdlearn.data.errors import CrowdDataError, show

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp")


@runtime_checkable
class TaskInputs(Protocol):
    """What a learner needs from task inputs."""

    def __len__(self) -> int: ...

    @property
    def item_shape(self) -> tuple[int, ...]:
        """Shape of one task's input (e.g. ``(512,)`` or ``(3, 32, 32)``)."""
        ...

    def take(self, indices: np.ndarray) -> np.ndarray:
        """float32 array of shape ``(len(indices), *item_shape)``."""
        ...

    def subset(self, indices: np.ndarray) -> TaskInputs:
        """The inputs of some tasks, in the given order."""
        ...


class ArrayInputs:
    """Inputs held in a numeric array, one row (or sub-array) per task.

    Examples
    --------
    >>> inputs = ArrayInputs(np.arange(6).reshape(3, 2))
    >>> inputs.take(np.array([2, 0]))
    array([[4., 5.],
           [0., 1.]], dtype=float32)
    """

    def __init__(self, array: Any) -> None:
        array = np.asarray(array)
        if array.ndim < 2:
            raise CrowdDataError(f"inputs need one row per task, got shape {array.shape}")
        if array.dtype.kind not in "fiub":
            raise CrowdDataError(f"inputs must be numeric, got dtype {array.dtype}")
        self.array = array

    def __len__(self) -> int:
        return len(self.array)

    @property
    def item_shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape[1:])

    def take(self, indices: np.ndarray) -> np.ndarray:
        return np.asarray(self.array[indices], dtype=np.float32)

    def subset(self, indices: np.ndarray) -> ArrayInputs:
        return ArrayInputs(self.array[np.asarray(indices)])

    def __repr__(self) -> str:
        return f"ArrayInputs(shape={self.array.shape})"


class ImageFolderInputs:
    """Images stored as files, one per task, read with Pillow when a batch needs them.

    Pixels are returned as float32 in [0, 1], channels first: ``(C, H, W)``.

    Parameters
    ----------
    paths : sequence of path-like
        The image file of each task, in task-code order.
    size : (width, height), optional
        Resize every image to this size; default: the first image's size (all images
        must then have it).
    mode : {"RGB", "L"}, default "RGB"
        Colour (3 channels) or greyscale (1 channel).
    cache : bool, default True
        Keep decoded images in memory after their first read.
    """

    def __init__(
        self,
        paths: Sequence[str | os.PathLike[str]],
        size: tuple[int, int] | None = None,
        mode: str = "RGB",
        cache: bool = True,
    ) -> None:
        if mode not in ("RGB", "L"):
            raise ValueError(f"mode must be 'RGB' or 'L', got {mode!r}")
        self.paths = [Path(p) for p in paths]
        if not self.paths:
            raise CrowdDataError("ImageFolderInputs needs at least one image path")
        missing = [str(p) for p in self.paths if not p.is_file()]
        if missing:
            raise CrowdDataError(f"image files not found: {show(missing)}")
        self.mode = mode
        self.cache = cache
        self._cached: dict[int, np.ndarray] = {}
        self.size = size if size is not None else self._open(self.paths[0]).size

    @classmethod
    def from_folder(
        cls, folder: str | os.PathLike[str], n_tasks: int | None = None, **kwargs: Any
    ) -> ImageFolderInputs:
        """Images of a peerannot split folder: ``<folder>/<class>/<name>-<task>.<ext>``,
        where ``<task>`` is the task index (0..n_tasks-1) in ``answers.json``.

        Parameters
        ----------
        folder : path-like
            E.g. ``dataset/train``.
        n_tasks : int, optional
            Expected number of tasks; every index 0..n_tasks-1 must have an image.
        **kwargs
            ``size``, ``mode``, ``cache``.
        """
        root = Path(folder)
        if not root.is_dir():
            raise CrowdDataError(f"{root}: no such image folder")
        found: dict[int, Path] = {}
        for path in sorted(root.rglob("*")):
            if path.suffix.lower() not in IMAGE_SUFFIXES:
                continue
            match = re.search(r"-(\d+)$", path.stem)
            if match is None:
                raise CrowdDataError(
                    f"{path}: image names must end with -<task index> (peerannot layout)"
                )
            index = int(match.group(1))
            if index in found:
                raise CrowdDataError(f"{root}: two images for task {index}: {path}")
            found[index] = path
        n = n_tasks if n_tasks is not None else (max(found) + 1 if found else 0)
        absent = [i for i in range(n) if i not in found]
        if absent or not found:
            raise CrowdDataError(f"{root}: no image for tasks {show(absent or [0])}")
        return cls([found[i] for i in range(n)], **kwargs)

    def __len__(self) -> int:
        return len(self.paths)

    @property
    def item_shape(self) -> tuple[int, ...]:
        channels = 3 if self.mode == "RGB" else 1
        return (channels, self.size[1], self.size[0])

    def take(self, indices: np.ndarray) -> np.ndarray:
        indices = np.asarray(indices)
        batch = np.empty((len(indices), *self.item_shape), dtype=np.float32)
        for row, index in enumerate(indices.tolist()):
            batch[row] = self._pixels(index)
        return batch

    def subset(self, indices: np.ndarray) -> ImageFolderInputs:
        picked = [self.paths[i] for i in np.asarray(indices).tolist()]
        return ImageFolderInputs(picked, size=self.size, mode=self.mode, cache=self.cache)

    def _open(self, path: Path) -> Any:
        from PIL import Image

        try:
            with Image.open(path) as image:
                return image.convert(self.mode)
        except OSError as error:
            raise CrowdDataError(f"{path}: cannot read the image ({error})") from None

    def _pixels(self, index: int) -> np.ndarray:
        if index in self._cached:
            return self._cached[index]
        image = self._open(self.paths[index])
        if image.size != tuple(self.size):
            image = image.resize(tuple(self.size))
        pixels = np.asarray(image, dtype=np.float32) / 255.0
        pixels = pixels[None] if pixels.ndim == 2 else pixels.transpose(2, 0, 1)
        if self.cache:
            self._cached[index] = pixels
        return pixels

    def __repr__(self) -> str:
        return f"ImageFolderInputs({len(self)} images, item_shape={self.item_shape})"


def as_inputs(value: Any) -> TaskInputs:
    """An inputs object from an array (wrapped in :class:`ArrayInputs`) or an object
    that already follows :class:`TaskInputs`."""
    if isinstance(value, TaskInputs):
        return value
    return ArrayInputs(value)
