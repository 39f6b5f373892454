"""Simulated object-detection crowds with a known truth (bounding boxes).

Each task is an image of ``image_size`` x ``image_size`` pixels holding a number of
objects uniform in ``objects`` (0 allowed), each of a class drawn uniformly among
``n_classes``, with a width and height uniform in ``object_size`` (a fraction of the
image side) at a uniform position inside the image. Each task is seen by ``per_task``
distinct workers drawn uniformly. The worker mix:

* every worker has a recall (probability of drawing each true object) uniform in
  ``recall``, a mean number of false boxes per image uniform in ``false_boxes``
  (Poisson; a false box has a random position, size and class), a corner noise
  uniform in ``noise`` (each corner moves by a normal deviate of that standard
  deviation times the object's side: loose or shifted boxes), and a probability
  uniform in ``wrong_class`` of naming another class;
* a share ``sloppy`` of the workers are sloppy: recall halved, three times the false
  boxes and the corner noise.

A worker who sees an image and draws nothing gives one row with no box, so that it is
counted as having seen the image. The result is a :class:`~crowdlearn.data.Boxes`
with ``truth``; ``return_info=True`` also returns a dict of each worker's parameters
(``recall``, ``false_boxes``, ``noise``, ``wrong_class``, ``sloppy``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from crowdlearn.data.boxes import COORDINATES, Boxes


def simulate_boxes(
    n_tasks: int = 100,
    n_workers: int = 20,
    per_task: int = 5,
    n_classes: int = 3,
    objects: tuple[int, int] = (0, 4),
    object_size: tuple[float, float] = (0.1, 0.4),
    image_size: float = 100.0,
    recall: tuple[float, float] = (0.7, 0.98),
    false_boxes: tuple[float, float] = (0.0, 0.3),
    noise: tuple[float, float] = (0.02, 0.1),
    wrong_class: tuple[float, float] = (0.0, 0.15),
    sloppy: float = 0.2,
    random_state: int | None = 0,
    return_info: bool = False,
) -> Boxes | tuple[Boxes, dict[str, np.ndarray]]:
    """A simulated detection crowd (see the module docstring for the parameters).

    Examples
    --------
    >>> data = simulate_boxes(n_tasks=10, n_workers=6, per_task=3, random_state=0)
    >>> data.n_tasks, data.n_workers, data.truth is not None
    (10, 6, True)
    """
    if not 1 <= per_task <= n_workers:
        raise ValueError(f"per_task must be in [1, n_workers={n_workers}], got {per_task}")
    if n_tasks < 1 or n_classes < 1:
        raise ValueError("n_tasks and n_classes must be at least 1")
    if not 0 <= sloppy <= 1:
        raise ValueError(f"sloppy must be in [0, 1], got {sloppy}")
    rng = np.random.default_rng(random_state)
    w_recall = rng.uniform(*recall, n_workers)
    w_false = rng.uniform(*false_boxes, n_workers)
    w_noise = rng.uniform(*noise, n_workers)
    w_wrong = rng.uniform(*wrong_class, n_workers)
    is_sloppy = rng.random(n_workers) < sloppy
    w_recall = np.where(is_sloppy, w_recall / 2, w_recall)
    w_false = np.where(is_sloppy, w_false * 3, w_false)
    w_noise = np.where(is_sloppy, w_noise * 3, w_noise)

    def random_boxes(n: int) -> np.ndarray:
        size = rng.uniform(*object_size, (n, 2)) * image_size
        corner = rng.uniform(0, 1, (n, 2)) * (image_size - size)
        return np.column_stack([corner, corner + size])

    n_objects = rng.integers(objects[0], objects[1] + 1, n_tasks)
    t_task = np.repeat(np.arange(n_tasks), n_objects)
    t_box = random_boxes(len(t_task))
    t_class = rng.integers(0, n_classes, len(t_task))
    # each task seen by per_task distinct workers
    seen = np.argsort(rng.random((n_tasks, n_workers)), axis=1)[:, :per_task]
    s_task = np.repeat(np.arange(n_tasks), per_task)
    s_worker = seen.ravel()
    # true objects drawn: every (object, worker who saw its task) pair
    starts = np.concatenate(([0], np.cumsum(n_objects)[:-1]))
    pair_obj = np.repeat(starts[s_task], n_objects[s_task]) + (
        np.arange(n_objects[s_task].sum())
        - np.repeat(np.cumsum(n_objects[s_task]) - n_objects[s_task], n_objects[s_task])
    )
    pair_worker = np.repeat(s_worker, n_objects[s_task])
    keep = rng.random(len(pair_obj)) < w_recall[pair_worker]
    obj, worker = pair_obj[keep], pair_worker[keep]
    side = np.column_stack([t_box[obj, 2] - t_box[obj, 0], t_box[obj, 3] - t_box[obj, 1]] * 2)
    box = t_box[obj] + rng.normal(0, 1, (len(obj), 4)) * side * w_noise[worker, None]
    box = np.column_stack(
        [np.minimum(box[:, 0], box[:, 2]), np.minimum(box[:, 1], box[:, 3]),
         np.maximum(box[:, 0], box[:, 2]), np.maximum(box[:, 1], box[:, 3])]
    )  # fmt: skip
    label = t_class[obj].copy()
    wrong = (rng.random(len(obj)) < w_wrong[worker]) & (n_classes > 1)
    label[wrong] = (label[wrong] + rng.integers(1, max(n_classes, 2), wrong.sum())) % n_classes
    task = t_task[obj]
    # false boxes
    n_false = rng.poisson(w_false[s_worker])
    f_task = np.repeat(s_task, n_false)
    f_worker = np.repeat(s_worker, n_false)
    f_box = random_boxes(len(f_task))
    f_label = rng.integers(0, n_classes, len(f_task))
    task = np.concatenate([task, f_task])
    worker = np.concatenate([worker, f_worker])
    box = np.vstack([box, f_box])
    label = np.concatenate([label, f_label])
    # workers who saw a task and drew nothing: one empty row
    drew = np.zeros((n_tasks, n_workers), dtype=bool)
    drew[task, worker] = True
    empty = ~drew[s_task, s_worker]
    task = np.concatenate([task, s_task[empty]])
    worker = np.concatenate([worker, s_worker[empty]])
    box = np.vstack([box, np.full((int(empty.sum()), 4), np.nan)])
    label = np.concatenate([label, np.full(int(empty.sum()), -1)])
    order = np.lexsort((worker, task))
    truth = pd.DataFrame({"task": t_task, "class": t_class})
    for k, name in enumerate(COORDINATES):
        truth[name] = t_box[:, k]
    data = Boxes(
        task[order],
        worker[order],
        label[order],
        box[order],
        task_ids=np.arange(n_tasks),
        worker_ids=np.arange(n_workers),
        classes=np.arange(n_classes),
        truth=truth,
    )
    if not return_info:
        return data
    info: dict[str, Any] = {
        "recall": w_recall,
        "false_boxes": w_false,
        "noise": w_noise,
        "wrong_class": w_wrong,
        "sloppy": is_sloppy,
    }
    return data, info
