"""A self-contained HTML report on a crowd: one file, images inlined, no network request.

:func:`build_report` computes everything (with a tqdm progress bar) and returns the HTML
text; :func:`write_report` writes it atomically. The page has a dataset summary, the
workload / feedback-effort / class histograms, a worker table (annotations, agreement with
the Dawid-Skene aggregate, spammer score, trace, group) sorted by reliability with
suspected spammers flagged, the hardest tasks, a comparison of aggregation strategies and
confusion matrices. Large crowds are handled by capping the tables and subsampling the
scatter plots (:class:`ReportLimits`); the page says when it does.

Examples
--------
>>> from crowdlearn.simulate import hammer_spammer
>>> data = hammer_spammer(n_worker=8, n_task=30, n_classes=3, feedback=3, seed=0)
>>> text = build_report(data, strategies=("mv", "ds"), progress=False)
>>> text.startswith("<!DOCTYPE html>") and "Suspected spammers" in text
True
"""

from __future__ import annotations

import datetime as dt
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from crowdlearn._atomic import atomic_open
from crowdlearn._progress import progress_bar, scoped
from crowdlearn.data import CrowdData
from crowdlearn.report._html import esc, image, page, table

#: Strategies compared by default (names of :data:`crowdlearn.aggregation.STRATEGIES`).
DEFAULT_STRATEGIES = ("mv", "naivesoft", "ds", "glad")


@dataclass(frozen=True)
class ReportLimits:
    """Caps that keep the page small for large crowds.

    Attributes
    ----------
    worker_rows : int
        Rows of the worker table (the most and the least reliable halves are shown).
    task_rows : int
        Rows of the hardest-task table.
    plot_points : int
        Points of each scatter plot (a random subsample of the tasks).
    worker_panels : int
        Per-worker confusion matrices drawn (half most reliable, half least).
    spammer_threshold : float
        Workers with a spammer score below it are flagged...
    min_labels : int
        ...when they gave at least this many labels (fewer labels give unreliable
        confusion estimates).
    """

    worker_rows: int = 200
    task_rows: int = 50
    plot_points: int = 3000
    worker_panels: int = 8
    spammer_threshold: float = 0.1
    min_labels: int = 10


class _Notes:
    """Notes shown at the top of the page (capping, skipped steps)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, text: str) -> None:
        self.lines.append(text)


def _fit_strategies(
    data: CrowdData, strategies: tuple[str, ...], notes: _Notes
) -> dict[str, dict[str, Any]]:
    from crowdlearn.aggregation import make_aggregator

    fitted: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys((*strategies, "ds")):
        start = time.perf_counter()
        try:
            model = make_aggregator(name)
            if "random_state" in model.get_params():
                model.set_params(random_state=0)
            model.fit(data)
        except ValueError as error:
            notes.add(f"strategy {name} skipped: {error}")
            continue
        fitted[name] = {
            "model": model,
            "labels": np.asarray(model.predict()),
            "seconds": time.perf_counter() - start,
        }
    return fitted


def _summary(data: CrowdData, use_truth: bool, alpha: float) -> pd.DataFrame:
    from crowdlearn.metrics import imbalance_ratio, self_crowd_r

    cells = data.n_tasks * max(data.n_workers, 1)
    rows: list[tuple[str, Any]] = [
        ("tasks", data.n_tasks),
        ("workers", data.n_workers),
        ("annotations", data.n_annotations),
        ("classes", data.n_classes),
        (
            "class names",
            ", ".join(str(c) for c in data.classes[:20]) + (" ..." if data.n_classes > 20 else ""),
        ),
        ("labels per task (mean)", data.n_annotations / max(data.n_tasks, 1)),
        ("labels per worker (mean)", data.n_annotations / max(data.n_workers, 1)),
        ("sparsity (share of empty task x worker cells)", 1.0 - data.n_annotations / cells),
        ("imbalance ratio of the annotations (largest / smallest class)", imbalance_ratio(data)),
        ("Self-Crowd R of the annotations", self_crowd_r(data)),
        ("Krippendorff's alpha (nominal)", alpha),
    ]
    if use_truth:
        known = data.truth[data.truth >= 0]
        rows.append(("tasks with known truth", len(known)))
        rows.append(
            (
                "imbalance ratio of the truth (largest / smallest class)",
                imbalance_ratio(known, data.n_classes),
            )
        )
        rows.append(("Self-Crowd R of the truth", self_crowd_r(known, data.n_classes)))
    return pd.DataFrame({"statistic": [r[0] for r in rows], "value": [_plain(r[1]) for r in rows]})


def _plain(value: Any) -> str:
    if isinstance(value, float | np.floating):
        return "n/a" if np.isnan(value) else f"{value:.3f}"
    return str(value)


def _worker_table(
    data: CrowdData,
    fitted: dict[str, dict[str, Any]],
    groups: np.ndarray | None,
    use_truth: bool,
    limits: ReportLimits,
) -> tuple[pd.DataFrame, np.ndarray]:
    from crowdlearn.identify import agreement_with_labels, confusion_trace, spammer_score

    ds = fitted["ds"]["model"]
    frame = pd.DataFrame(
        {
            "worker": [str(w) for w in data.worker_ids],
            "annotations": np.asarray(data.workload),
            "agreement with DS": agreement_with_labels(data, fitted["ds"]["labels"]),
            "spammer score": spammer_score(data, ds),
            "trace": confusion_trace(data, ds),
        }
    )
    if "glad" in fitted:
        frame["GLAD ability"] = np.asarray(fitted["glad"]["model"].alphas_)
    if use_truth:
        frame["accuracy (truth)"] = agreement_with_labels(data, data.truth)
    if groups is not None:
        frame["group"] = groups
    suspect = (frame["spammer score"] < limits.spammer_threshold) & (
        frame["annotations"] >= limits.min_labels
    )
    frame["suspected spammer"] = np.where(suspect, "yes", "")
    order = np.lexsort((np.arange(len(frame)), -frame["spammer score"].to_numpy()))
    return frame.iloc[order].reset_index(drop=True), order


def _capped(frame: pd.DataFrame, rows: int) -> tuple[pd.DataFrame, int | None, int]:
    """Head and tail halves of a long table, the position of the gap, rows left out."""
    if len(frame) <= rows:
        return frame, None, 0
    half = rows // 2
    shown = pd.concat([frame.iloc[:half], frame.iloc[len(frame) - (rows - half) :]])
    return shown, half, len(frame) - rows


def _votes_text(data: CrowdData, tasks: np.ndarray) -> list[str]:
    counts = data.vote_counts[tasks]
    texts = []
    for row in range(len(tasks)):
        start, end = counts.indptr[row], counts.indptr[row + 1]
        pairs = sorted(
            zip(counts.data[start:end], counts.indices[start:end], strict=True), reverse=True
        )
        texts.append(", ".join(f"{data.classes[k]}: {n}" for n, k in pairs))
    return texts


def _hardest_tasks(
    data: CrowdData,
    fitted: dict[str, dict[str, Any]],
    entropy: np.ndarray,
    difficulty: np.ndarray | None,
    use_truth: bool,
    rows: int,
) -> pd.DataFrame:
    secondary = np.zeros(data.n_tasks) if difficulty is None else -difficulty
    primary = np.where(np.isnan(entropy), np.inf, -entropy)
    order = np.lexsort((np.arange(data.n_tasks), secondary, primary))[:rows]
    frame = pd.DataFrame(
        {
            "task": [str(t) for t in data.task_ids[order]],
            "labels": np.asarray(data.feedback_effort)[order],
            "votes": _votes_text(data, order),
            "entropy": entropy[order],
        }
    )
    if difficulty is not None:
        frame["GLAD difficulty"] = difficulty[order]
    for name in ("mv", "ds"):
        if name in fitted:
            frame[f"{name} label"] = [str(c) for c in data.classes[fitted[name]["labels"][order]]]
    if use_truth:
        truth = data.truth[order]
        frame["truth"] = [str(data.classes[t]) if t >= 0 else "" for t in truth]
    return frame


def _strategy_tables(
    data: CrowdData, fitted: dict[str, dict[str, Any]], use_truth: bool
) -> tuple[pd.DataFrame, pd.DataFrame]:
    from crowdlearn.metrics import accuracy

    names = list(fitted)
    annotated = np.asarray(data.feedback_effort) > 0
    agreement = pd.DataFrame(
        [
            [
                float(np.mean(fitted[a]["labels"][annotated] == fitted[b]["labels"][annotated]))
                for b in names
            ]
            for a in names
        ],
        columns=names,
    )
    agreement.insert(0, "strategy", names)
    summary = pd.DataFrame(
        {"strategy": names, "fit seconds": [fitted[n]["seconds"] for n in names]}
    )
    if use_truth:
        summary["accuracy (truth)"] = [accuracy(data.truth, fitted[n]["labels"]) for n in names]
    return summary, agreement


def _groups(data: CrowdData, notes: _Notes) -> tuple[np.ndarray | None, Any]:
    from crowdlearn.aggregation import DSWC

    try:
        # at most one group per worker (DSWC would warn and do the same)
        groups = min(3, data.n_workers)
        model = DSWC(n_clusters=groups, max_restarts=1, random_state=0).fit(data)
    except ValueError as error:
        notes.add(f"worker groups skipped: {error}")
        return None, None
    return model.memberships_.argmax(axis=1), model


@scoped
def build_report(
    data: CrowdData,
    title: str | None = None,
    use_truth: bool = True,
    strategies: tuple[str, ...] = DEFAULT_STRATEGIES,
    limits: ReportLimits | None = None,
    progress: bool | Literal["auto"] = "auto",
    seed: int = 0,
) -> str:
    """The HTML text of the report on ``data``.

    Parameters
    ----------
    data : CrowdData
        With worker ids (anonymous data have no worker table).
    title : str, optional
        Page title; default "crowdlearn report".
    use_truth : bool
        Use ``data.truth`` (when known) for accuracies and the class distribution.
    strategies : tuple of str
        Aggregation strategies to compare (Dawid-Skene is always fitted: its labels and
        confusions feed the worker table).
    limits : ReportLimits, optional
        Table and plot caps.
    progress : bool or "auto", default "auto"
        Show a tqdm progress bar on stderr ("auto": when stderr is a terminal).
    seed : int
        Seed of the plot subsampling.
    """
    from crowdlearn import plots
    from crowdlearn.identify import glad_difficulty, krippendorff_alpha, vote_entropy
    from crowdlearn.metrics import empirical_confusions, global_confusion

    if data.is_anonymous:
        raise ValueError("the report needs worker ids; the data are anonymous")
    from crowdlearn.aggregation import make_aggregator

    for name in strategies:
        make_aggregator(name)  # an unknown name or bad parameter fails before any work
    limits = limits or ReportLimits()
    title = title or "crowdlearn report"
    use_truth = bool(use_truth and data.truth is not None and np.any(data.truth >= 0))
    notes = _Notes()
    sections: list[str] = []
    steps = [
        "agreement",
        "strategies",
        "groups",
        "histograms",
        "workers",
        "tasks",
        "comparison",
        "confusions",
        "scores",
    ]
    bar = progress_bar(total=len(steps), progress=progress, desc="report", unit="step")

    def step(name: str) -> None:
        bar.set_postfix_str(name)
        bar.update(1)

    alpha = krippendorff_alpha(data)
    step("agreement")
    fitted = _fit_strategies(data, tuple(strategies), notes)
    step("strategies")
    groups, group_model = _groups(data, notes)
    step("groups")

    sections.append('<h2 id="summary">Dataset summary</h2>')
    sections.append(table(_summary(data, use_truth, alpha), sortable=False))
    figures = [
        image(plots.workload_histogram(data), "workload histogram"),
        image(plots.feedback_effort_histogram(data), "feedback effort histogram"),
        image(
            plots.class_distribution(data if use_truth else data.with_truth(None)),
            "class distribution",
        ),
    ]
    sections.append('<h2 id="histograms">Workload, feedback effort and classes</h2>')
    sections.append(f'<div class="figures">{"".join(figures)}</div>')
    step("histograms")

    workers, order = _worker_table(data, fitted, groups, use_truth, limits)
    suspects = workers["suspected spammer"] == "yes"
    shown, gap, left_out = _capped(workers, limits.worker_rows)
    gap_text = f"... {left_out} workers in between not shown ..."
    if left_out:
        notes.add(
            f"worker table capped: the {gap} most and {len(shown) - gap} least reliable of "
            f"{len(workers)} workers are shown (crowdlearn identify writes the full table)"
        )
    sections.append('<h2 id="workers">Workers</h2>')
    sections.append(
        f"<p>Sorted by spammer score (Raykar &amp; Yu 2011; 1 = perfect, 0 = answers "
        f"independent of the truth) of the Dawid-Skene confusion matrices. "
        f"<strong>Suspected spammers</strong> (highlighted): score below "
        f"{limits.spammer_threshold} with at least {limits.min_labels} labels; "
        f"{int(suspects.sum())} of {len(workers)} workers. Group: most probable cluster of "
        f"Dawid-Skene with worker clusters (DSWC, 3 clusters).</p>"
    )
    sections.append(
        table(
            shown,
            flagged=(shown["suspected spammer"] == "yes").to_numpy(),
            gap_after=gap,
            gap_text=gap_text,
            table_id="worker-table",
        )
    )
    step("workers")

    entropy = vote_entropy(data)
    difficulty = glad_difficulty(data, fitted["glad"]["model"]) if "glad" in fitted else None
    hardest = _hardest_tasks(data, fitted, entropy, difficulty, use_truth, limits.task_rows)
    sections.append('<h2 id="tasks">Hardest tasks</h2>')
    sections.append(
        f"<p>The {len(hardest)} tasks of highest vote entropy"
        f"{' (ties broken by GLAD difficulty 1/beta)' if difficulty is not None else ''}"
        f", of {data.n_tasks}.</p>"
    )
    sections.append(table(hardest, table_id="task-table"))
    step("tasks")

    summary, agreement = _strategy_tables(data, fitted, use_truth)
    sections.append('<h2 id="strategies">Aggregation strategies</h2>')
    sections.append(table(summary, table_id="strategy-table"))
    sections.append("<p>Share of annotated tasks on which two strategies give the same label:</p>")
    sections.append(table(agreement, sortable=False, table_id="strategy-agreement"))
    step("comparison")

    sections.append('<h2 id="confusions">Confusion matrices</h2>')
    ds = fitted["ds"]["model"]
    matrices = [global_confusion(ds.confusions_, np.asarray(data.workload, dtype=float))]
    titles = ["Dawid-Skene, workload-weighted mean"]
    if use_truth:
        matrices.append(empirical_confusions(data, per_worker=False))
        titles.append("observed against the truth")
    confusion_figures = [
        image(
            plots.confusion_grid(
                np.stack(matrices), titles, data.classes, ncols=2, suptitle="Global confusion"
            ),
            "global confusion",
        )
    ]
    panels = max(limits.worker_panels // 2, 1)
    # workers with few labels have near-uniform estimated rows; draw the others first
    eligible = order[np.asarray(data.workload)[order] >= limits.min_labels]
    eligible = eligible if len(eligible) else order
    chosen = np.unique(np.concatenate([eligible[:panels], eligible[-panels:]]))
    chosen = eligible[np.isin(eligible, chosen)]
    confusion_figures.append(
        image(
            plots.worker_confusions(
                ds.confusions_, data.worker_ids, chosen, data.classes, max_workers=2 * panels
            ),
            "worker confusions",
        )
    )
    if group_model is not None:
        sizes = np.bincount(groups, minlength=group_model.cluster_confusions_.shape[0])
        confusion_figures.append(
            image(
                plots.confusion_grid(
                    group_model.cluster_confusions_,
                    [f"group {g} ({n} workers)" for g, n in enumerate(sizes)],
                    data.classes,
                    ncols=3,
                    suptitle="Worker groups (DSWC)",
                ),
                "group confusions",
            )
        )
    if data.n_workers > 2 * panels:
        notes.add(
            f"per-worker confusion matrices: the {panels} most and {panels} least reliable "
            f"workers with at least {limits.min_labels} labels, of {data.n_workers}, are drawn"
        )
    sections.append(f'<div class="figures">{"".join(confusion_figures)}</div>')
    step("confusions")

    score_columns = ["spammer score", "trace", "agreement with DS"]
    score_columns += [c for c in ("GLAD ability", "accuracy (truth)") if c in workers]
    task_scores = pd.DataFrame({"entropy": entropy, "labels per task": data.feedback_effort})
    if difficulty is not None:
        task_scores["GLAD difficulty"] = difficulty
    score_figures = [
        image(plots.score_distributions(workers[score_columns]), "worker score distributions")
    ]
    if task_scores.shape[1] >= 2:
        score_figures.append(
            image(
                plots.pairwise_scores(task_scores, max_points=limits.plot_points, seed=seed),
                "pairwise difficulty scores",
            )
        )
    if data.n_tasks > limits.plot_points:
        notes.add(
            f"difficulty scatter plots: {limits.plot_points} random tasks of "
            f"{data.n_tasks} are drawn (correlations use all tasks)"
        )
    sections.append('<h2 id="scores">Score distributions</h2>')
    sections.append(f'<div class="figures">{"".join(score_figures)}</div>')
    step("scores")
    bar.close()

    header = [
        f"<h1>{esc(title)}</h1>",
        f'<p class="meta">{esc(repr(data))}; generated {dt.datetime.now():%Y-%m-%d %H:%M} '
        "by crowdlearn.</p>",
        '<nav><a href="#summary">summary</a><a href="#histograms">histograms</a>'
        '<a href="#workers">workers</a><a href="#tasks">hardest tasks</a>'
        '<a href="#strategies">strategies</a><a href="#confusions">confusions</a>'
        '<a href="#scores">scores</a></nav>',
    ]
    if notes.lines:
        items = "".join(f"<li>{esc(line)}</li>" for line in notes.lines)
        header.append(f'<div class="note" id="notes"><strong>Notes</strong><ul>{items}</ul></div>')
    return page(title, "\n".join(header + sections))


def write_report(data: CrowdData, path: str | os.PathLike[str], **options: Any) -> Path:
    """Build the report (see :func:`build_report` for ``options``) and write it atomically.

    Label sets, ratings and comparisons get their kind's report
    (:func:`crowdlearn.report._kinds.build_kind_report`: options ``title``, ``limits``,
    ``strategy``); spans theirs (:func:`crowdlearn.report._spans.build_spans_report`:
    the same options and ``use_truth``).
    """
    if getattr(data, "kind", None) == "spans":
        from crowdlearn.report._spans import build_spans_report

        text = build_spans_report(data, **options)
    elif getattr(data, "kind", None) in (
        "multilabel",
        "rating",
        "comparison",
        "text",
        "box",
        "mask",
    ):
        from crowdlearn.report._kinds import build_kind_report

        text = build_kind_report(data, **options)
    else:
        text = build_report(data, **options)
    target = Path(path)
    with atomic_open(target) as handle:
        handle.write(text)
    return target


__all__ = ["DEFAULT_STRATEGIES", "ReportLimits", "build_report", "write_report"]
