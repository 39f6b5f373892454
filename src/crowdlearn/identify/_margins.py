"""Softmax margins of every candidate label, for AUM and WAUM.

A module of its own so that :mod:`crowdlearn.identify.difficulty` (the scores) and
:mod:`crowdlearn.identify.recorder` (the torch learner that records the margins) share it
without importing each other.
"""

from __future__ import annotations

import numpy as np


def margins(proba: np.ndarray) -> np.ndarray:
    """Margin of every candidate label: ``p_y - max_{k != y} p_k`` for each row and ``y``.

    Examples
    --------
    >>> margins(np.array([[0.7, 0.2, 0.1]]))
    array([[ 0.5, -0.5, -0.6]])
    """
    proba = np.asarray(proba, dtype=np.float64)
    order = np.argsort(proba, axis=1)
    rows = np.arange(len(proba))
    best = proba[rows, order[:, -1]]
    second = proba[rows, order[:, -2]] if proba.shape[1] > 1 else np.zeros(len(proba))
    others = np.where(np.arange(proba.shape[1]) == order[:, -1:], second[:, None], best[:, None])
    return proba - others
