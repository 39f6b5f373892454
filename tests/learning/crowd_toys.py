"""Shared toy data for the learners' tests: Gaussian blobs with a simulated crowd, and
small hand-checkable batches.

Kept in one place so that every learner's "beats MV+NN" and "loss by hand" tests run on
the same data (importable because pytest puts this folder on ``sys.path``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from crowdlearn.learning._batches import TaskBatch
from crowdlearn.simulate import crowd_on_features

#: The crowd of ``noisy_crowd``: experts, inexperts and half spammers.
GROUPS = {"expert": 0.3, "inexpert": 0.2, "spammer": 0.5}

#: Three tasks, five annotations by four workers (worker 3 is absent), three classes.
POSITIONS, WORKERS, LABELS = [0, 0, 1, 2, 2], [0, 2, 1, 0, 1], [1, 0, 2, 2, 0]
#: The classifier's logits for those three tasks.
LOGITS = [[0.2, -0.4, 1.0], [1.5, 0.1, -0.3], [-0.7, 0.9, 0.4]]
#: Four workers' free 3 x 3 confusion parameters (before any normalisation).
PARAMETERS = [
    [[1.0, 0.5, -0.2], [0.0, 2.0, 0.3], [-1.0, 0.1, 0.8]],
    [[0.3, -0.6, 1.2], [1.1, 0.0, -0.4], [0.2, 0.7, 0.5]],
    [[2.0, 0.0, 0.0], [0.0, 1.0, 0.6], [-0.5, 0.0, 1.5]],
    [[0.0, 1.0, 0.0], [1.0, 0.0, 1.0], [0.0, 0.0, 0.0]],
]


def blobs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` points of three Gaussian classes in six dimensions."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=n)
    X = rng.normal(size=(n, 6)) + 2.0 * np.eye(3, 6)[y]
    return X.astype(np.float32), y


def noisy_crowd(
    seed: int = 0,
    n_train: int = 400,
    groups: dict[str, float] | None = None,
    info: bool = False,
):
    """A crowd of 20 workers (4 labels per task) on ``n_train`` blobs; the next 200
    points are the test split. Returns ``(crowd, X_test, y_test)``; with ``info`` the
    first item is the simulator's ``(crowd, info)`` result."""
    X, y = blobs(n_train + 200, seed)
    result = crowd_on_features(
        X[:n_train],
        y[:n_train],
        n_workers=20,
        labels_per_task=4,
        groups=GROUPS if groups is None else groups,
        seed=seed,
        return_info=info,
    )
    return result, X[n_train:], y[n_train:]


def toy_batch(
    positions: Sequence[int] = POSITIONS,
    workers: Sequence[int] = WORKERS,
    labels: Sequence[int] = LABELS,
    x: Sequence[Sequence[float]] | None = None,
) -> TaskBatch:
    """A batch of ``max(positions) + 1`` tasks with the given annotations (position in
    the batch, worker, label); features ``x`` default to zeros in two dimensions."""
    n_tasks = max(positions) + 1
    return TaskBatch(
        tasks=np.arange(n_tasks),
        x=torch.zeros(n_tasks, 2) if x is None else torch.tensor(x),
        position=torch.tensor(list(positions)),
        worker=torch.tensor(list(workers)),
        label=torch.tensor(list(labels)),
    )


def triples_batch(
    annotations: Sequence[tuple[int, int, int]], x: Sequence[Sequence[float]] | None = None
) -> TaskBatch:
    """``toy_batch`` from (task, worker, label) triples."""
    positions, workers, labels = zip(*annotations, strict=True)
    return toy_batch(positions, workers, labels, x)
