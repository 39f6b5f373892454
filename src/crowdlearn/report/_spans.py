"""The HTML report of spans (sequence tags): where the crowd disagrees, and who.

One page, built like the other kinds' reports (same style, tables, nothing fetched): a
summary of the data; the least-agreeing documents (lowest mean pairwise span F1
between their workers, :func:`crowdlearn.identify.spans.task_scores`), each shown as
its text with the aggregated spans marked, then each worker's spans on the same text
(and the true spans with ``use_truth``); the task table; the worker table (span
precision and recall against the aggregated spans, against the truth where known, the
aggregator's own worker scores).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pandas as pd

from crowdlearn.report._html import esc, image, page, table

#: Documents shown with every worker's spans (at most; ``limits.task_rows`` caps it too).
SHOWN_DOCUMENTS = 10
#: Tokens of a document shown (the rest is cut, said on the page).
SHOWN_TOKENS = 400
_DEFAULT_ROWS = 200


def marked_text(tokens: Any, spans: Any, cut: int = SHOWN_TOKENS) -> str:
    """HTML of ``tokens`` with each span ``(start, end, label)`` in a ``<mark>`` that
    names its label (later spans win where spans overlap); the first ``cut`` tokens.

    >>> marked_text(["Ada", "Lovelace", "wrote"], [(0, 2, "PER")])
    '<mark title="PER">Ada Lovelace <sub>PER</sub></mark> wrote'
    """
    owner: dict[int, tuple[int, int, str]] = {}
    for start, end, label in spans:
        for i in range(start, end):
            owner[i] = (start, end, str(label))
    words: list[str] = []
    i, n = 0, min(len(tokens), cut)
    while i < n:
        span = owner.get(i)
        if span is not None and span[0] == i:
            inside = " ".join(esc(t) for t in tokens[i : min(span[1], n)])
            words.append(f'<mark title="{esc(span[2])}">{inside} <sub>{esc(span[2])}</sub></mark>')
            i = span[1]
            continue
        words.append(esc(tokens[i]))
        i += 1
    if len(tokens) > cut:
        words.append(f"... ({len(tokens) - cut} more tokens)")
    return " ".join(words)


def _document(rows: list[tuple[str, str, str]]) -> str:
    """A table of (who, score, marked text) rows; the text cells hold HTML."""
    body = "".join(
        f'<tr><td class="text">{esc(who)}</td><td>{esc(score)}</td>'
        f'<td class="text">{text}</td></tr>'
        for who, score, text in rows
    )
    return (
        '<table><thead><tr><th class="text">who</th><th>span F1 with the result</th>'
        f'<th class="text">spans</th></tr></thead><tbody>{body}</tbody></table>'
    )


def _f1(a: set, b: set) -> str:
    from crowdlearn.identify.spans import pair_f1

    return f"{pair_f1(a, b):.3f}"


def least_agreeing(
    data: Any,
    result: pd.DataFrame,
    agreement: np.ndarray,
    strategy: str,
    n: int,
    truth: dict[int, set] | None,
    notes: list[str],
) -> str:
    """The ``n`` documents whose workers agree least, each worker's spans under the result."""
    key = np.where(np.isnan(agreement), np.inf, agreement)
    order = np.argsort(key, kind="stable")[:n]
    if data.n_tasks > len(order):
        notes.append(
            f"the least-agreeing documents show {len(order)} of {data.n_tasks} documents "
            "(lowest mean pairwise span F1 between their workers)"
        )
    codes = pd.Index(data.task_ids).get_indexer(result["task"].to_numpy())
    label_codes = pd.Index(data.labels).get_indexer(result["label"].to_numpy())
    by_task: dict[int, set] = {}
    for t, s, e, lab in zip(
        codes.tolist(),
        result["start"].tolist(),
        result["end"].tolist(),
        label_codes.tolist(),
        strict=True,
    ):
        by_task.setdefault(t, set()).add((int(s), int(e), int(lab)))
    names = [str(label) for label in data.labels.tolist()]

    def named(spans: set) -> list[tuple[int, int, str]]:
        return [(s, e, names[lab] if lab >= 0 else "?") for s, e, lab in sorted(spans)]

    sections = []
    for t in order.tolist():
        tokens = data.tokens[t]
        consensus = by_task.get(t, set())
        rows = [(f"result ({strategy})", "", marked_text(tokens, named(consensus)))]
        if truth is not None:
            true = truth.get(t, set())
            rows.append(("truth", _f1(true, consensus), marked_text(tokens, named(true))))
        answered = np.flatnonzero(data.task == t)
        workers: dict[int, set] = {}
        for row in answered.tolist():
            spans = workers.setdefault(int(data.worker[row]), set())
            if data.label[row] >= 0:
                spans.add((int(data.start[row]), int(data.end[row]), int(data.label[row])))
        for w, spans in sorted(workers.items()):
            rows.append(
                (str(data.worker_ids[w]), _f1(spans, consensus), marked_text(tokens, named(spans)))
            )
        value = agreement[t]
        shown = "n/a (one worker)" if np.isnan(value) else f"{value:.3f}"
        sections.append(
            f"<h3>{esc(data.task_ids[t])}: mean pairwise span F1 {esc(shown)}, "
            f"{len(workers)} workers, {len(tokens)} tokens</h3>" + _document(rows)
        )
    if any(len(data.tokens[t]) > SHOWN_TOKENS for t in order.tolist()):
        notes.append(f"documents longer than {SHOWN_TOKENS} tokens are cut")
    return (
        f'<h2 id="result">Least-agreeing documents ({esc(strategy)})</h2>'
        "<p>Each document's text with the aggregated spans marked, then each worker's "
        "spans with the span F1 of that worker's spans against the result.</p>"
        + "\n".join(sections)
    )


def _histogram(values: np.ndarray, xlabel: str) -> Any:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(5, 3))
    axes = figure.subplots()
    finite = values[np.isfinite(values)]
    axes.hist(finite, bins=20, range=(0, 1))
    axes.set_xlabel(xlabel)
    axes.set_ylabel("documents")
    return figure


def build_spans_report(
    data: Any,
    title: str | None = None,
    limits: Any = None,
    strategy: str | None = None,
    use_truth: bool = False,
) -> str:
    """The HTML text of the report on spans.

    Parameters
    ----------
    data : Spans
    title : str, optional
    limits : ReportLimits, optional
        Caps of the worker and task tables (and of the documents shown: at most
        ``min(task_rows, SHOWN_DOCUMENTS)``).
    strategy : str, optional
        The span aggregator shown (a name of ``SPAN_STRATEGIES``; default
        ``DEFAULT_SPAN_STRATEGY``).
    use_truth : bool
        Show the true spans under each document and score the result and the workers
        against them (the data must carry truth).
    """
    from crowdlearn.aggregation.spans._make import default_strategy, make_span_aggregator
    from crowdlearn.identify.spans import (
        data_truth,
        task_frame,
        truth_codes,
        truth_scores,
        worker_frame,
    )

    worker_rows = getattr(limits, "worker_rows", _DEFAULT_ROWS)
    task_rows = getattr(limits, "task_rows", _DEFAULT_ROWS)
    title = title or "crowdlearn report"
    name, model = make_span_aggregator(strategy or default_strategy())
    model.fit(data)
    result = model.predict() if hasattr(model, "predict") else model.labels_
    notes: list[str] = []
    tasks = task_frame(data, result)
    workers = worker_frame(data, model, result)
    if not use_truth:
        workers = workers.drop(columns=[c for c in workers.columns if c.startswith("truth_")])
    summary = [
        ("kind", "Spans (sequence tags)"),
        ("documents", data.n_tasks),
        ("workers", data.n_workers),
        (
            "answers (worker, document)",
            len(set(zip(data.task.tolist(), data.worker.tolist(), strict=True))),
        ),
        ("tokens", int(np.sum(data.n_tokens))),
        ("spans marked by workers", int(np.sum(data.label >= 0))),
        ("labels", ", ".join(map(str, data.labels.tolist()))),
        (f"spans of the result ({name})", len(result)),
        (
            "mean pairwise span F1 between workers",
            f"{np.nanmean(tasks['agreement']):.3f}" if tasks["agreement"].notna().any() else "n/a",
        ),
    ]
    truth = None
    if use_truth:
        truth = truth_codes(data)
        scores = truth_scores(result, data_truth(data))
        summary.append(
            (
                f"strict span P / R / F1 of {name} against the truth",
                f"{scores['precision']:.3f} / {scores['recall']:.3f} / {scores['f1']:.3f}",
            )
        )
    shown = min(task_rows, SHOWN_DOCUMENTS)
    agreement = tasks["agreement"].to_numpy(np.float64)
    sections = [
        least_agreeing(data, result, agreement, name, shown, truth, notes),
        '<h2 id="tasks">Documents</h2>'
        + table(
            _capped(tasks.sort_values("agreement", kind="stable"), task_rows, notes, "document")
        )
        + image(
            _histogram(agreement, "mean pairwise span F1 between workers"),
            "histogram of the documents' agreement",
        ),
        '<h2 id="workers">Workers</h2>'
        "<p>Span precision, recall and F1 of each worker's spans against the result "
        f"({esc(name)})"
        + (" and against the truth (truth_ columns)" if use_truth else "")
        + "; model_ columns are the aggregator's own worker scores.</p>"
        + table(
            _capped(
                workers.sort_values("n_tasks", ascending=False, kind="stable"),
                worker_rows,
                notes,
                "worker",
            )
        ),
    ]
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


def _capped(frame: pd.DataFrame, rows: int, notes: list[str], what: str) -> pd.DataFrame:
    if len(frame) > rows:
        notes.append(f"the {what} table shows {rows} of {len(frame)} rows")
        frame = frame.head(rows)
    return frame.reset_index(drop=True)
