"""Figures of a crowd, its scores and its learners (matplotlib).

Every function returns a :class:`matplotlib.figure.Figure` built without pyplot (no
global state, no display needed); :func:`save` writes it as PNG or SVG atomically.

- crowd: :func:`workload_histogram`, :func:`feedback_effort_histogram`,
  :func:`class_distribution` (truth vs annotations, as in the Self-Crowd paper's Fig. 1);
- confusion matrices: :func:`confusion_grid` (any stack), :func:`worker_confusions`,
  :func:`group_confusions` (CMM);
- scores: :func:`score_distributions`, :func:`pairwise_scores` (with Spearman
  correlations);
- learners: :func:`learning_curves` from ``history_``.

Examples
--------
>>> from crowdlearn.simulate import hammer_spammer
>>> data = hammer_spammer(n_worker=10, n_task=50, seed=0)
>>> workload_histogram(data).axes[0].get_xlabel()
'labels per worker'
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from crowdlearn._atomic import atomic_path
from crowdlearn.data import CrowdData


def save(figure: Figure, path: str | os.PathLike[str], dpi: int = 110) -> Path:
    """Write ``figure`` to ``path`` atomically; the format (png, svg, pdf) is the suffix."""
    target = Path(path)
    fmt = target.suffix.lstrip(".").lower() or "png"
    if fmt not in ("png", "svg", "pdf"):
        raise ValueError(f"figures are saved as png, svg or pdf, not {fmt!r}")
    with atomic_path(target) as tmp:
        figure.savefig(tmp, format=fmt, dpi=dpi, bbox_inches="tight")
    return target


def _histogram(values: np.ndarray, xlabel: str, title: str, bins: int, log: bool) -> Figure:
    figure = Figure(figsize=(5, 3.2))
    ax = figure.add_subplot()
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values)]
    if (
        len(values)
        and values.min() >= 0
        and values.max() < bins
        and np.allclose(values, values.round())
    ):
        edges = np.arange(values.max() + 2) - 0.5
    else:
        edges = bins
    ax.hist(values, bins=edges, color="#4C72B0", edgecolor="white")
    if log and len(values):
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("count")
    ax.set_title(title)
    figure.tight_layout()
    return figure


def workload_histogram(data: CrowdData, bins: int = 40, log: bool = True) -> Figure:
    """Histogram of the number of labels per worker."""
    if data.is_anonymous:
        raise ValueError("anonymous data have no workers")
    return _histogram(data.workload, "labels per worker", "Workload", bins, log)


def feedback_effort_histogram(data: CrowdData, bins: int = 40, log: bool = False) -> Figure:
    """Histogram of the number of labels per task."""
    return _histogram(data.feedback_effort, "labels per task", "Feedback effort", bins, log)


def class_distribution(data: CrowdData) -> Figure:
    """Share of each class among the true labels (when known) and among the annotations.

    The Self-Crowd paper's Fig. 1: crowds over-use some classes compared with the truth.
    """
    k = data.n_classes
    annotations = np.bincount(data.label, minlength=k) / max(data.n_annotations, 1)
    figure = Figure(figsize=(max(5, 0.6 * k + 2), 3.4))
    ax = figure.add_subplot()
    positions = np.arange(k)
    truth = None if data.truth is None else data.truth[data.truth >= 0]
    width = 0.4 if truth is not None and len(truth) else 0.8
    if width < 0.8:
        shares = np.bincount(truth, minlength=k) / len(truth)
        ax.bar(positions - width / 2, shares, width, label="truth", color="#55A868")
    ax.bar(
        positions + (width / 2 if width < 0.8 else 0),
        annotations,
        width,
        label="annotations",
        color="#4C72B0",
    )
    ax.set_xticks(positions, [str(c) for c in data.classes], rotation=45 if k > 6 else 0)
    ax.set_ylabel("share")
    ax.set_title("Class distribution")
    ax.legend()
    figure.tight_layout()
    return figure


def confusion_grid(
    matrices: Any,
    titles: Sequence[str] | None = None,
    classes: Sequence[Any] | None = None,
    ncols: int = 4,
    annotate: bool | None = None,
    suptitle: str | None = None,
) -> Figure:
    """A grid of confusion matrices (row = true class, column = given label).

    Parameters
    ----------
    matrices : array (K, K) or (n, K, K)
    titles : sequence of str, optional
        One per matrix.
    classes : sequence, optional
        Tick labels.
    ncols : int
        Panels per row.
    annotate : bool, optional
        Write the values in the cells; default when K <= 8.
    suptitle : str, optional
    """
    stack = np.asarray(matrices, dtype=np.float64)
    if stack.ndim == 2:
        stack = stack[None]
    if stack.ndim != 3 or stack.shape[1] != stack.shape[2]:
        raise ValueError(f"expected (n, K, K) matrices, got shape {stack.shape}")
    n, k = stack.shape[0], stack.shape[1]
    ncols = max(1, min(ncols, n))
    nrows = int(np.ceil(n / ncols))
    annotate = k <= 8 if annotate is None else annotate
    size = 1.0 + 0.35 * k
    figure = Figure(figsize=(ncols * size + 0.8, nrows * size + (0.5 if suptitle else 0.1)))
    labels = [str(c) for c in (classes if classes is not None else range(k))]
    for i in range(n):
        ax = figure.add_subplot(nrows, ncols, i + 1)
        image = ax.imshow(stack[i], vmin=0, vmax=1, cmap="Blues")
        if titles is not None:
            ax.set_title(str(titles[i]), fontsize=9)
        ax.set_xticks(range(k), labels, fontsize=7, rotation=90)
        ax.set_yticks(range(k), labels, fontsize=7)
        if annotate:
            for (row, col), value in np.ndenumerate(stack[i]):
                ax.text(
                    col,
                    row,
                    f"{value:.2f}",
                    ha="center",
                    va="center",
                    fontsize=6,
                    color="white" if value > 0.5 else "black",
                )
    figure.colorbar(image, ax=figure.axes, shrink=0.8)
    if suptitle:
        figure.suptitle(suptitle)
    return figure


def worker_confusions(
    confusions: Any,
    worker_ids: Sequence[Any],
    workers: Sequence[int] | None = None,
    classes: Sequence[Any] | None = None,
    max_workers: int = 12,
) -> Figure:
    """Confusion matrices of some workers (codes ``workers``, else the first ones), at most
    ``max_workers`` panels."""
    stack = np.asarray(confusions)
    chosen = np.arange(len(stack)) if workers is None else np.asarray(workers)
    chosen = chosen[:max_workers]
    titles = [f"worker {worker_ids[w]}" for w in chosen]
    return confusion_grid(stack[chosen], titles, classes, suptitle="Worker confusion matrices")


def group_confusions(model: Any, classes: Sequence[Any] | None = None) -> Figure:
    """The confusion matrix of each CMM group, titled with the group's weight."""
    weights = np.asarray(model.group_weights_)
    titles = [f"group {m} (alpha={w:.2f})" for m, w in enumerate(weights)]
    return confusion_grid(model.group_confusions_, titles, classes, suptitle="CMM groups")


def score_distributions(scores: pd.DataFrame, bins: int = 30) -> Figure:
    """One histogram per column of a score table (NaN left out)."""
    columns = list(scores.columns)
    if not columns:
        raise ValueError("no score to plot")
    ncols = min(3, len(columns))
    nrows = int(np.ceil(len(columns) / ncols))
    figure = Figure(figsize=(3.4 * ncols, 2.6 * nrows))
    for i, name in enumerate(columns):
        ax = figure.add_subplot(nrows, ncols, i + 1)
        values = pd.to_numeric(scores[name], errors="coerce").to_numpy(dtype=np.float64)
        values = values[np.isfinite(values)]
        # Scores equal up to rounding (a range narrower than the float spacing) make
        # numpy refuse several bins: one bin is the honest histogram then.
        spread = float(np.ptp(values)) if len(values) else 0.0
        scale = float(np.abs(values).max()) if len(values) else 0.0
        n_bins = bins if spread > 1e-9 * max(1.0, scale) else 1
        ax.hist(values, bins=n_bins, color="#8172B2", edgecolor="white")
        ax.set_title(str(name), fontsize=10)
    figure.tight_layout()
    return figure


def pairwise_scores(scores: pd.DataFrame, max_points: int = 3000, seed: int = 0) -> Figure:
    """Scatter plots of every pair of score columns, each titled with the Spearman
    correlation over all rows (the points drawn are a random subsample of at most
    ``max_points`` rows)."""
    from scipy.stats import spearmanr

    columns = list(scores.columns)
    if len(columns) < 2:
        raise ValueError("pairwise plots need at least two scores")
    numeric = scores.apply(pd.to_numeric, errors="coerce")
    shown = numeric
    if len(numeric) > max_points:
        shown = numeric.sample(max_points, random_state=seed)
    pairs = [(a, b) for i, a in enumerate(columns) for b in columns[i + 1 :]]
    ncols = min(3, len(pairs))
    nrows = int(np.ceil(len(pairs) / ncols))
    figure = Figure(figsize=(3.4 * ncols, 3.0 * nrows))
    for i, (a, b) in enumerate(pairs):
        ax = figure.add_subplot(nrows, ncols, i + 1)
        both = numeric[[a, b]].dropna()
        varied = len(both) > 2 and both[a].nunique() > 1 and both[b].nunique() > 1
        rho = spearmanr(both[a], both[b]).statistic if varied else float("nan")
        ax.scatter(shown[a], shown[b], s=4, alpha=0.4, color="#C44E52")
        ax.set_xlabel(str(a))
        ax.set_ylabel(str(b))
        ax.set_title(f"Spearman rho = {rho:.2f}", fontsize=9)
    figure.tight_layout()
    return figure


def learning_curves(history: pd.DataFrame, metrics: Sequence[str] | None = None) -> Figure:
    """Per-epoch curves of a learner's ``history_`` (losses on one panel, the other
    metrics on another)."""
    if "epoch" not in history.columns:
        raise ValueError("a learning history needs an 'epoch' column")
    numeric = [c for c in history.columns if c not in ("epoch", "seconds", "lr")]
    numeric = [c for c in numeric if pd.api.types.is_numeric_dtype(history[c])]
    names = list(metrics) if metrics is not None else numeric
    losses = [c for c in names if "loss" in c or "likelihood" in c]
    others = [c for c in names if c not in losses]
    panels = [group for group in (losses, others) if group]
    figure = Figure(figsize=(4.2 * len(panels), 3.2))
    for i, group in enumerate(panels):
        ax = figure.add_subplot(1, len(panels), i + 1)
        for column in group:
            ax.plot(history["epoch"], history[column], marker="o", markersize=3, label=column)
        ax.set_xlabel("epoch")
        ax.legend(fontsize=8)
    figure.tight_layout()
    return figure


__all__ = [
    "class_distribution",
    "confusion_grid",
    "feedback_effort_histogram",
    "group_confusions",
    "learning_curves",
    "pairwise_scores",
    "save",
    "score_distributions",
    "worker_confusions",
    "workload_histogram",
]
