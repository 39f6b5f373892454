"""Building blocks for stacks of confusion matrices, shape (n_workers, K, K).

Row ``k`` of a worker's matrix is the distribution of the label it gives to a task of
true class ``k``; every function here returns row-stochastic float64 stacks.
"""

from __future__ import annotations

import numpy as np


def dirichlet_rows(
    rng: np.random.Generator, n_workers: int, n_classes: int, concentration: float
) -> np.ndarray:
    """Every row drawn from a symmetric Dirichlet (``concentration=1``: uniform on the
    simplex)."""
    alpha = np.full(n_classes, concentration)
    return rng.dirichlet(alpha, size=(n_workers, n_classes))


def move_row_max_to_diagonal(confusions: np.ndarray) -> np.ndarray:
    """Swap, in every row, the diagonal entry with the row's largest entry (in place).

    The result is diagonally dominant (each diagonal entry is its row's maximum), as
    peerannot makes its simulated confusion matrices.
    """
    n_workers, n_classes, _ = confusions.shape
    workers = np.arange(n_workers)[:, None]
    classes = np.arange(n_classes)[None, :]
    largest = confusions.argmax(axis=2)
    diagonal = confusions[workers, classes, classes]
    confusions[workers, classes, classes] = confusions[workers, classes, largest]
    confusions[workers, classes, largest] = diagonal
    return confusions


def identity_rows(n_workers: int, n_classes: int) -> np.ndarray:
    """Workers who always give the true class (peerannot's hammers)."""
    return np.tile(np.eye(n_classes), (n_workers, 1, 1))


def uniform_rows(n_workers: int, n_classes: int) -> np.ndarray:
    """Workers who answer uniformly at random whatever the task (spammers)."""
    return np.full((n_workers, n_classes, n_classes), 1.0 / n_classes)


def spread_errors(
    rng: np.random.Generator, accuracy: np.ndarray, n_classes: int, concentration: float
) -> np.ndarray:
    """Diagonal ``accuracy[w]`` in every row of worker ``w``; the error mass
    ``1 - accuracy[w]`` is split over the other classes by a Dirichlet draw per row."""
    n_workers = len(accuracy)
    off_diagonal = ~np.eye(n_classes, dtype=bool)
    errors = (
        rng.dirichlet(np.full(n_classes - 1, concentration), size=(n_workers, n_classes))
        * (1.0 - accuracy)[:, None, None]
    )
    confusions = np.zeros((n_workers, n_classes, n_classes))
    confusions[:, off_diagonal] = errors.reshape(n_workers, -1)
    confusions[:, ~off_diagonal] = accuracy[:, None]
    return confusions


def cyclic_derangements(rng: np.random.Generator, n_workers: int, n_classes: int) -> np.ndarray:
    """One random derangement of the classes per worker, shape (n_workers, K).

    Each is a single cycle through the classes in a random order, so no class maps to
    itself: ``target[w, order[i]] = order[i + 1]``.
    """
    order = np.argsort(rng.random((n_workers, n_classes)), axis=1)
    target = np.empty_like(order)
    np.put_along_axis(target, order, np.roll(order, -1, axis=1), axis=1)
    return target
