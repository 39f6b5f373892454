"""The HTML report of label sets, ratings and comparisons.

One page, built like the categorical report (same style, tables and inlined figures,
nothing fetched): a summary of the data, the kind's default aggregation (its first rows),
the per-class, per-value or per-item view that the kind calls for, and the worker table
of the kind's scores (``crowdlearn.identify.<kind>.worker_scores``), capped by
:class:`~crowdlearn.report.ReportLimits`.
"""

from __future__ import annotations

import datetime as dt
import importlib
from typing import Any

import numpy as np
import pandas as pd

from crowdlearn.report._html import esc, image, page, table

#: The aggregation package of each kind.
_PACKAGES = {
    "multilabel": "crowdlearn.aggregation.label_sets",
    "rating": "crowdlearn.aggregation.ratings",
    "comparison": "crowdlearn.aggregation.comparisons",
    "text": "crowdlearn.aggregation.texts",
    "box": "crowdlearn.aggregation.boxes",
    "mask": "crowdlearn.aggregation.masks",
}
#: Rows of the worker and task tables without ``limits``.
_DEFAULT_ROWS = 200
_TITLES = {
    "multilabel": "Label sets",
    "rating": "Ratings",
    "comparison": "Pairwise comparisons",
    "text": "Free texts",
    "box": "Bounding boxes",
    "mask": "Segmentation masks",
}
#: Tasks drawn with every worker's answer and the result (boxes, masks).
_DRAWN = 6
#: Answers shown side by side for each of the worst-agreeing texts.
_SIDE_BY_SIDE = 20


def _workload_figure(counts: np.ndarray, what: str) -> Any:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(5, 3))
    axes = figure.subplots()
    axes.hist(counts, bins=min(30, max(int(counts.max()) if len(counts) else 1, 1)))
    axes.set_xlabel(f"{what} per worker")
    axes.set_ylabel("workers")
    return figure


def _values_figure(values: np.ndarray, xlabel: str) -> Any:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(5, 3))
    axes = figure.subplots()
    finite = values[np.isfinite(values)]
    # Values near float64's limits (ratings of 1e308) make matplotlib's bins and ticks
    # overflow: they are drawn in a power-of-ten unit the axis names.
    largest = float(np.max(np.abs(finite))) if finite.size else 0.0
    if largest > 1e100 or 0.0 < largest < 1e-100:
        exponent = int(np.floor(np.log10(largest)))
        finite = finite / 10.0**exponent
        xlabel = f"{xlabel} (x 1e{exponent})"
    axes.hist(finite, bins=30)
    axes.set_xlabel(xlabel)
    axes.set_ylabel("count")
    return figure


def _capped(frame: pd.DataFrame, rows: int, notes: list[str], what: str) -> pd.DataFrame:
    if len(frame) > rows:
        notes.append(f"the {what} table shows {rows} of {len(frame)} rows")
        return frame.head(rows)
    return frame


def _worst_texts(data: Any, model: Any, identify: Any, strategy: str, notes: list[str]) -> str:
    """The tasks whose answers agree least, each answer beside the aggregated text."""
    disagreement = np.asarray(identify.task_scores(data)["disagreement"], dtype=np.float64)
    order = np.argsort(-np.nan_to_num(disagreement, nan=-1.0), kind="stable")[:_SIDE_BY_SIDE]
    if data.n_tasks > _SIDE_BY_SIDE:
        notes.append(f"the worst-agreeing texts show {_SIDE_BY_SIDE} of {data.n_tasks} tasks")
    rows = []
    for t in order:
        answers = np.flatnonzero(data.task == t)
        rows.append({"task": data.task_ids[t], "who": f"result ({strategy})",
                     "text": str(model.texts_[t]), "disagreement": disagreement[t]})  # fmt: skip
        rows += [
            {"task": "", "who": str(data.worker_ids[data.worker[a]]), "text": str(data.text[a]),
             "disagreement": np.nan}
            for a in answers
        ]  # fmt: skip
    return '<h2 id="result">Worst-agreeing texts</h2>' + table(pd.DataFrame(rows), sortable=False)


def _worst(scores: np.ndarray, n: int, worst_high: bool) -> np.ndarray:
    """The ``n`` task codes with the worst scores (NaN last)."""
    values = np.asarray(scores, dtype=np.float64)
    key = np.where(np.isnan(values), -np.inf if worst_high else np.inf, values)
    order = np.argsort(-key if worst_high else key, kind="stable")
    return order[:n]


def _drawn_boxes(data: Any, model: Any, identify: Any, strategy: str, notes: list[str]) -> str:
    """The tasks whose boxes agree least, each worker's boxes (thin, one colour per
    worker) under the aggregated ones (thick, black)."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    scores = identify.task_scores(data)
    tasks = _worst(scores["mean_iou"], _DRAWN, worst_high=False)
    if data.n_tasks > _DRAWN:
        notes.append(f"the drawn boxes show {_DRAWN} of {data.n_tasks} tasks (lowest mean IoU)")
    figure = Figure(figsize=(3.2 * len(tasks), 3.2))
    axes = np.atleast_1d(figure.subplots(1, len(tasks)))
    colours = [f"C{i % 10}" for i in range(data.n_workers)]
    result = model.boxes_
    for ax, t in zip(axes, tasks, strict=True):
        rows = np.flatnonzero((data.task == t) & (data.label >= 0))
        for r in rows:
            x0, y0, x1, y1 = data.coords[r]
            ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, lw=1,
                                   ec=colours[data.worker[r]], alpha=0.8))  # fmt: skip
        for box in result[result["task"] == t].itertuples():
            width, height = box.x_max - box.x_min, box.y_max - box.y_min
            corner = (box.x_min, box.y_min)
            ax.add_patch(Rectangle(corner, width, height, fill=False, lw=2.5, ec="black"))
        ax.autoscale_view()
        ax.invert_yaxis()  # image coordinates: y grows downwards
        ax.set_title(f"{data.task_ids[t]}", fontsize=9)
        ax.set_aspect("equal")
    return (
        f'<h2 id="result">Boxes of the least agreeing tasks ({esc(strategy)}: black)</h2>'
        + image(figure, "each worker's boxes and the aggregated boxes")
    )


def _drawn_masks(data: Any, model: Any, identify: Any, strategy: str, notes: list[str]) -> str:
    """The tasks whose masks agree least: every worker's mask, then the result."""
    from matplotlib.figure import Figure

    tasks = _worst(model.agreement_, 4, worst_high=False)
    if data.n_tasks > len(tasks):
        notes.append(
            f"the drawn masks show {len(tasks)} of {data.n_tasks} tasks (lowest agreement)"
        )
    drawn = [(t, *data.task_masks(int(t))) for t in tasks]
    width = max(len(workers) for _, workers, _ in drawn) + 1
    figure = Figure(figsize=(1.6 * width, 1.7 * len(drawn)))
    axes = np.asarray(figure.subplots(len(drawn), width, squeeze=False))
    for row, (t, workers, masks) in zip(axes, drawn, strict=True):
        for ax in row:
            ax.axis("off")
        for ax, w, mask in zip(row, workers, masks, strict=False):
            ax.imshow(mask, cmap="gray", interpolation="nearest")
            ax.set_title(str(data.worker_ids[w]), fontsize=7)
        row[-1].imshow(model.masks_(int(t)), cmap="magma", interpolation="nearest")
        row[-1].set_title(f"{data.task_ids[t]}: result", fontsize=7)
    return (
        f'<h2 id="result">Masks of the least agreeing tasks ({esc(strategy)}, right)</h2>'
        + image(figure, "each worker's mask and the aggregated mask")
    )


def build_kind_report(
    data: Any, title: str | None = None, limits: Any = None, strategy: str | None = None
) -> str:
    """The HTML text of the report on label sets, ratings or comparisons.

    Parameters
    ----------
    data : LabelSets, Ratings or Comparisons
    title : str, optional
    limits : ReportLimits, optional
        Caps of the worker and task tables.
    strategy : str, optional
        The aggregation strategy shown (default: the kind's default strategy).
    """
    worker_rows = getattr(limits, "worker_rows", _DEFAULT_ROWS)
    task_rows = getattr(limits, "task_rows", _DEFAULT_ROWS)
    kind = data.kind
    title = title or "crowdlearn report"
    aggregation = importlib.import_module(_PACKAGES[kind])
    identify = importlib.import_module(_PACKAGES[kind].replace(".aggregation.", ".identify."))
    strategy = strategy or aggregation.DEFAULT_STRATEGY
    model = aggregation.make_aggregator(strategy).fit(data)
    notes: list[str] = []
    counts = np.bincount(data.worker, minlength=data.n_workers)
    summary = [("kind", _TITLES[kind]), ("workers", data.n_workers)]
    sections = []
    if kind == "comparison":
        summary += [("items", data.n_items), ("comparisons", data.n_annotations)]
        scores = pd.DataFrame({"item": data.item_ids, "score": np.asarray(model.scores_)})
        scores = scores.sort_values("score", ascending=False, kind="stable")
        seen = np.bincount(np.concatenate([data.left, data.right]), minlength=data.n_items)
        scores["comparisons"] = seen[scores.index.to_numpy()]
        top = _capped(scores, task_rows, notes, "item")
        sections.append(
            f'<h2 id="result">Items by score ({esc(strategy)})</h2>'
            + table(top.reset_index(drop=True))
            + image(_values_figure(np.asarray(model.scores_), "score"), "score histogram")
        )
    else:
        summary += [("tasks", data.n_tasks), ("answers", data.n_annotations)]
        if kind == "multilabel":
            chosen = np.asarray(data.answers, dtype=np.float64).mean(axis=0)
            per_class = pd.DataFrame(
                {
                    "class": [str(c) for c in data.classes],
                    "share of answers selecting it": chosen,
                    f"tasks labelled ({strategy})": np.asarray(model.labels_).sum(axis=0),
                }
            )
            empty = float(np.mean(~np.asarray(data.answers).any(axis=1)))
            summary.append(("empty answers ('none of these')", f"{empty:.3f}"))
            sections.append(f'<h2 id="result">Classes ({esc(strategy)})</h2>' + table(per_class))
        elif kind == "text":
            sections.append(_worst_texts(data, model, identify, strategy, notes))
        elif kind == "box":
            sections.append(_drawn_boxes(data, model, identify, strategy, notes))
        elif kind == "mask":
            sections.append(_drawn_masks(data, model, identify, strategy, notes))
        else:
            values = np.asarray(model.values_, dtype=np.float64)
            xlabel = "rank in the declared order" if data.levels is not None else "value"
            sections.append(
                f'<h2 id="result">Aggregated ratings ({esc(strategy)})</h2>'
                + image(_values_figure(values, xlabel), "histogram of the aggregated ratings")
            )
        tasks = pd.DataFrame({"task": data.task_ids, **identify.task_scores(data)})
        if len(tasks.columns) > 1:
            tasks = tasks.sort_values(tasks.columns[1], ascending=False, kind="stable")
        sections.append(
            '<h2 id="tasks">Tasks</h2>'
            + table(_capped(tasks, task_rows, notes, "task").reset_index(drop=True))
        )
    workers = pd.DataFrame({"worker": data.worker_ids, **identify.worker_scores(data)})
    workers["answers"] = counts
    workers = workers.sort_values("answers", ascending=False, kind="stable")
    sections.append(
        '<h2 id="workers">Workers</h2>'
        + table(_capped(workers, worker_rows, notes, "worker").reset_index(drop=True))
        + image(_workload_figure(counts, "answers"), "answers per worker")
    )
    summary_frame = pd.DataFrame(summary, columns=["", "value"]).astype(str)
    header = [
        f"<h1>{esc(title)}</h1>",
        f'<p class="meta">{esc(repr(data))}; generated {dt.datetime.now():%Y-%m-%d %H:%M} '
        "by crowdlearn.</p>",
        '<h2 id="summary">Summary</h2>' + table(summary_frame, sortable=False),
    ]
    if notes:
        items = "".join(f"<li>{esc(line)}</li>" for line in notes)
        header.append(f'<div class="note" id="notes"><strong>Notes</strong><ul>{items}</ul></div>')
    return page(title, "\n".join(header + sections))
