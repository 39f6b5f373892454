"""Draw each annotation's label from its worker's confusion row of the true class."""

from __future__ import annotations

import numpy as np

#: Number of gathered CDF entries (annotations x classes) held in memory at once.
CHUNK_ENTRIES = 1 << 23


def draw_labels(
    confusions: np.ndarray,
    worker: np.ndarray,
    true_class: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """Labels drawn by inverse CDF: ``label ~ confusions[worker, true_class, :]``.

    Parameters
    ----------
    confusions : array of shape (n_workers, K, K)
        Row-stochastic matrices (row = true class, column = given label).
    worker, true_class : arrays of int, shape (n_annotations,)
        Index into ``confusions`` and true class of each annotation.
    rng : numpy Generator

    Returns
    -------
    array of int32, shape (n_annotations,)
    """
    n_classes = confusions.shape[-1]
    cdfs = np.cumsum(confusions, axis=-1)
    cdfs[..., -1] = 1.0  # rounding must never leave a uniform draw beyond the last class
    labels = np.empty(len(worker), dtype=np.int32)
    step = max(1, CHUNK_ENTRIES // n_classes)
    for start in range(0, len(worker), step):
        stop = start + step
        rows = cdfs[worker[start:stop], true_class[start:stop]]
        draws = rng.random(len(rows))
        labels[start:stop] = np.sum(rows <= draws[:, None], axis=1)
    return labels
