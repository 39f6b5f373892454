"""Simulated segmentation crowds with a known truth (binary masks).

Each task is an image of height and width drawn uniformly in ``size`` (tasks differ in
size unless the range is one number); its true mask is the union of 1 to
``max_shapes`` ellipses (uniform count), each with a centre inside the image, semi-axes
uniform in [8 %, 30 %] of the shorter side and a uniform rotation. Each task is
segmented by ``per_task`` distinct workers drawn uniformly. Each worker has one type,
drawn with the probabilities of ``mix`` (the rest of the shares go to "good"):

* ``good``: the true ellipses with each semi-axis moved by a uniform amount in
  [-1, 1] pixel (boundary jitter);
* ``dilate`` / ``erode``: every semi-axis ``offset`` pixels longer / shorter (an
  eroded ellipse can vanish);
* ``shift``: the true shapes moved by ``offset`` pixels in a random direction (per task);
* ``omit``: one shape of the task left out (where it has more than one), else good;
* ``noise``: a good mask with each pixel flipped with probability ``flip``.

Masks are rendered analytically from the ellipses (no image library). With
``folder=`` the masks are written as ``FOLDER/TASK/WORKER.npy`` and the truth as
``FOLDER/_truth/TASK.npy`` one task at a time and the result is read lazily from the
folder (:meth:`crowdlearn.data.Masks.from_folder`: big crowds never sit in memory);
else it is held in memory. ``return_info=True`` also returns each worker's type.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from crowdlearn.data.masks import Masks, write_mask

#: Worker types and their default shares.
DEFAULT_MIX = {"dilate": 0.1, "erode": 0.1, "shift": 0.1, "omit": 0.1, "noise": 0.1}
_TYPES = ("good", "dilate", "erode", "shift", "omit", "noise")


def _render(
    shape: tuple[int, int], shapes: np.ndarray, grow: np.ndarray, shift: np.ndarray
) -> np.ndarray:
    """Union of ellipses (rows: cy, cx, a, b, angle) with semi-axes + ``grow`` and
    centres + ``shift`` (dy, dx)."""
    ys, xs = np.ogrid[: shape[0], : shape[1]]
    out = np.zeros(shape, dtype=bool)
    for (cy, cx, a, b, angle), g in zip(shapes, grow, strict=True):
        a, b = a + g, b + g
        if a <= 0 or b <= 0:
            continue
        dy, dx = ys - (cy + shift[0]), xs - (cx + shift[1])
        cos, sin = np.cos(angle), np.sin(angle)
        u, v = dx * cos + dy * sin, -dx * sin + dy * cos
        out |= (u / a) ** 2 + (v / b) ** 2 <= 1.0
    return out


def simulate_masks(
    n_tasks: int = 50,
    n_workers: int = 10,
    per_task: int = 5,
    *,
    size: int | tuple[int, int] = (48, 80),
    max_shapes: int = 3,
    mix: dict[str, float] | None = None,
    offset: float = 3.0,
    flip: float = 0.05,
    folder: str | os.PathLike[str] | None = None,
    random_state: int | np.random.Generator | None = None,
    return_info: bool = False,
) -> Masks | tuple[Masks, dict[str, Any]]:
    """A simulated segmentation crowd (see the module docstring).

    Parameters
    ----------
    n_tasks, n_workers, per_task : int
        ``per_task`` distinct workers (at most ``n_workers``) segment each task.
    size : int or (int, int)
        A task's height and width are drawn uniformly in this range (pixels).
    max_shapes : int
        Each true mask is the union of 1 to ``max_shapes`` ellipses.
    mix : dict, optional
        Share of each worker type (``dilate``, ``erode``, ``shift``, ``omit``,
        ``noise``); the rest are ``good``. Default :data:`DEFAULT_MIX`.
    offset : float
        Pixels of dilation, erosion or shift.
    flip : float
        Pixel flip probability of ``noise`` workers.
    folder : path, optional
        Write the masks there (one task at a time) and read them lazily.
    random_state : int or Generator, optional
    return_info : bool
        Also return ``{"types": array of worker type names}``.

    Examples
    --------
    >>> data = simulate_masks(n_tasks=3, n_workers=4, per_task=3, random_state=0)
    >>> data
    Masks(n_tasks=3, n_workers=4, n_annotations=9, truth=3 known)
    """
    if not 1 <= per_task <= n_workers:
        raise ValueError(f"per_task must be in [1, n_workers={n_workers}], got {per_task}")
    if n_tasks < 1 or max_shapes < 1:
        raise ValueError("n_tasks and max_shapes must be at least 1")
    mix = dict(DEFAULT_MIX if mix is None else mix)
    unknown = sorted(set(mix) - set(_TYPES))
    if unknown:
        raise ValueError(f"unknown worker types {unknown}; the types are {list(_TYPES)}")
    shares = np.array([0.0] + [float(mix.get(t, 0.0)) for t in _TYPES[1:]])
    if (shares < 0).any() or shares.sum() > 1:
        raise ValueError("the shares of mix must be >= 0 and sum to at most 1")
    shares[0] = 1 - shares.sum()
    rng = np.random.default_rng(random_state)
    low, high = (size, size) if isinstance(size, int) else size
    types = rng.choice(len(_TYPES), size=n_workers, p=shares)
    root = None if folder is None else Path(folder)
    if root is not None:
        (root / "_truth").mkdir(parents=True, exist_ok=True)
    tasks: list[int] = []
    workers: list[int] = []
    masks: list[Any] = []
    truths: list[Any] = []
    width = len(str(n_tasks - 1))
    for t in range(n_tasks):
        shape = (int(rng.integers(low, high + 1)), int(rng.integers(low, high + 1)))
        k = int(rng.integers(1, max_shapes + 1))
        side = min(shape)
        shapes = np.column_stack(
            [
                rng.uniform(0, shape[0], k),
                rng.uniform(0, shape[1], k),
                rng.uniform(0.08, 0.3, k) * side,
                rng.uniform(0.08, 0.3, k) * side,
                rng.uniform(0, np.pi, k),
            ]
        )
        zero = np.zeros(2)
        truth = _render(shape, shapes, np.zeros(k), zero)
        chosen = rng.choice(n_workers, size=per_task, replace=False)
        name = f"t{t:0{width}d}"
        if root is not None:
            (root / name).mkdir(exist_ok=True)
            write_mask(root / "_truth" / f"{name}.npy", truth)
        for w in chosen.tolist():
            kind = _TYPES[types[w]]
            grow = rng.uniform(-1, 1, k)
            shift = zero
            keep = np.ones(k, dtype=bool)
            if kind == "dilate":
                grow = np.full(k, offset)
            elif kind == "erode":
                grow = np.full(k, -offset)
            elif kind == "shift":
                angle = rng.uniform(0, 2 * np.pi)
                shift = offset * np.array([np.sin(angle), np.cos(angle)])
            elif kind == "omit" and k > 1:
                keep[rng.integers(k)] = False
            mask = _render(shape, shapes[keep], grow[keep], shift)
            if kind == "noise":
                mask ^= rng.random(shape) < flip
            if root is not None:
                write_mask(root / name / f"w{w}.npy", mask)
            else:
                tasks.append(t)
                workers.append(w)
                masks.append(mask)
        if root is None:
            truths.append(truth)
    if root is not None:
        data = Masks.from_folder(root)
    else:
        data = Masks.from_arrays(
            tasks,
            workers,
            masks,
            task_ids=np.arange(n_tasks),
            worker_ids=np.arange(n_workers),
            truth=truths,
        )
    if return_info:
        names = np.array([_TYPES[i] for i in types.tolist()])
        if root is not None:  # folder worker ids are "w<code>", sorted as text
            order = [int(str(w)[1:]) for w in data.worker_ids.tolist()]
            names = names[order]
        return data, {"types": names}
    return data
