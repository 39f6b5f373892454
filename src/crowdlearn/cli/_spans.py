"""Spans (``--kind spans``) on the command line: reading, aggregating, scoring, reporting.

``crowdlearn aggregate DATA --kind spans [-s NAME] -o OUT`` writes, all-or-nothing:

- ``OUT/spans.csv`` (or ``.parquet`` with ``--format parquet``): one row per aggregated
  span, columns ``task``, ``start``, ``end``, ``label``, ``score`` (the aggregator's
  confidence in the span, in [0, 1]) and ``text`` (the span's tokens joined by a space,
  or the span's characters for text input). For token input ``start`` and ``end`` are
  token indices into the task's reference tokens, end exclusive; for text input (a
  :class:`~crowdlearn.data.Spans` with character offsets) they are character offsets
  into the task's text, end exclusive (:func:`char_span`);
- ``OUT/tags.conll``: each task as a ``-DOCSTART- TASK`` line followed by one
  ``TOKEN TAG`` line per reference token (BIO tags of the aggregated spans; a blank line
  before each further sentence where the data keep sentence starts) and a blank line
  after the task;
- ``OUT/workers.json`` (the aggregator's own worker scores where it has them, see
  :func:`crowdlearn.identify.spans.model_worker_scores`) and ``OUT/summary.json``.

``--truth`` scores the aggregated spans against the data's truth (the gold folder of
the NER-MTurk layout) and ``--truth FILE`` against a CoNLL file in the layout of
``tags.conll`` (:func:`read_truth_conll`): strict span precision, recall and F1
(:func:`crowdlearn.metrics.span_scores`), printed and kept in summary.json.

The aggregators are the classes of
:data:`crowdlearn.aggregation.spans.SPAN_STRATEGIES` (name -> class; ``-s`` accepts
its names, with ``NAME[k=v]`` or ``--param k=v`` for constructor parameters), the
default :data:`crowdlearn.aggregation.spans.DEFAULT_SPAN_STRATEGY`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from crowdlearn._atomic import atomic_open
from crowdlearn._json import jsonable
from crowdlearn._lazy import lazy_module
from crowdlearn.cli._app import note
from crowdlearn.cli._output import Outputs, require_input, write_table
from crowdlearn.data import CrowdDataError

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from crowdlearn.data.spans import Spans
else:
    np = lazy_module("numpy")
    pd = lazy_module("pandas")

#: The header line of each task in tags.conll and in a --truth file.
DOCSTART = "-DOCSTART-"


# ---------------------------------------------------------------------------- reading
def read_spans(data: str, duplicates: str = "error") -> Spans:
    """DATA read as spans, through ``crowdlearn.io.read_kind(DATA, "spans")`` (every
    layout :mod:`crowdlearn.io.spans` reads)."""
    from crowdlearn.data.spans import Spans
    from crowdlearn.io import kinds as io_kinds

    require_input(data)
    answers = io_kinds.read_kind(data, "spans", duplicates=duplicates)
    if not isinstance(answers, Spans):
        raise CrowdDataError(f"{data}: holds {type(answers).__name__}, not spans")
    return answers


# ---------------------------------------------------------------------------- outputs
def char_span(data: Spans, task: int, start: int, end: int) -> tuple[int, int] | None:
    """Character offsets ``(start, end)`` (end exclusive) of the token span
    ``[start, end)`` of task code ``task``, or None for token input.

    The hook for text input: a :class:`~crowdlearn.data.Spans` whose ``offsets`` is not
    None (per task an ``(n_tokens, 2)`` array of each token's character start and end)
    has character offsets; its method ``char_spans(task, start, end)`` is used where it
    has one, else the offsets of the span's first and last tokens.
    """
    offsets = getattr(data, "offsets", None)
    if offsets is None or offsets[task] is None:
        return None
    method = getattr(data, "char_spans", None)
    if callable(method):
        begin, stop = method(task, start, end)
        return int(begin), int(stop)
    table = np.asarray(offsets[task])
    return int(table[start, 0]), int(table[end - 1, 1])


def has_offsets(data: Spans) -> bool:
    """Whether the data were given as text with character offsets."""
    offsets = getattr(data, "offsets", None)
    return offsets is not None and any(o is not None for o in offsets)


def _task_text(data: Spans, task: int) -> str | None:
    texts = getattr(data, "texts", None)
    if texts is None:
        return None
    return str(texts[task])


def span_table(spans: pd.DataFrame, data: Spans) -> pd.DataFrame:
    """spans.csv: the aggregated ``spans`` (task and label ids, token indices) with
    character offsets for text input and each span's text."""
    codes = pd.Index(data.task_ids).get_indexer(spans["task"].to_numpy())
    starts, ends, texts = [], [], []
    for task, start, end in zip(
        codes.tolist(), spans["start"].tolist(), spans["end"].tolist(), strict=True
    ):
        chars = char_span(data, task, start, end)
        if chars is None:
            starts.append(start)
            ends.append(end)
            texts.append(" ".join(data.tokens[task][start:end]))
        else:
            starts.append(chars[0])
            ends.append(chars[1])
            text = _task_text(data, task)
            texts.append(
                text[chars[0] : chars[1]]
                if text is not None
                else " ".join(data.tokens[task][start:end])
            )
    score = spans["score"] if "score" in spans.columns else np.full(len(spans), np.nan)
    return pd.DataFrame(
        {
            "task": spans["task"].to_numpy(),
            "start": np.asarray(starts, dtype=np.int64),
            "end": np.asarray(ends, dtype=np.int64),
            "label": spans["label"].to_numpy(),
            "score": np.asarray(score, dtype=np.float64),
            "text": np.asarray(texts, dtype=object),
        }
    )


def _token_cell(token: str) -> str:
    """A token as one CoNLL field (whitespace inside it would split the line)."""
    return re.sub(r"\s", "_", token)


def conll_text(spans: pd.DataFrame, data: Spans) -> str:
    """tags.conll: per task a ``-DOCSTART- TASK`` line, one ``TOKEN TAG`` line per
    reference token (BIO tags of ``spans``), a blank line before each further sentence
    (where the data keep sentence starts: the optional per-task ``breaks``) and a blank
    line after the task."""
    from crowdlearn.data.spans import spans_to_bio

    by_task: dict[Any, list[tuple[int, int, str]]] = {}
    for task, start, end, label in spans.loc[:, ["task", "start", "end", "label"]].itertuples(
        index=False, name=None
    ):
        by_task.setdefault(task, []).append((int(start), int(end), str(label)))
    breaks = getattr(data, "breaks", None)
    lines: list[str] = []
    for code, (task, tokens) in enumerate(zip(data.task_ids.tolist(), data.tokens, strict=True)):
        tags = spans_to_bio(by_task.get(task, []), len(tokens))
        starts = set() if breaks is None or breaks[code] is None else set(breaks[code]) - {0}
        lines.append(f"{DOCSTART} {task}")
        for i, (token, tag) in enumerate(zip(tokens, tags, strict=True)):
            if i in starts:
                lines.append("")
            lines.append(f"{_token_cell(token)} {tag}")
        lines.append("")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- truth
_TAG = re.compile(r"^(O|[BI]-\S+)$")


def read_truth_conll(path: str, data: Spans) -> pd.DataFrame:
    """The true spans (ids; token indices into each task's reference tokens) of a CoNLL
    file in the layout of ``tags.conll``.

    Each task opens with a ``-DOCSTART- TASK`` line (it may be left out when the data
    hold one task), then one ``TOKEN TAG`` line per token (BIO tags; the tag is the last
    field), blank lines between sentences. Tokens that differ from the task's reference
    tokens are aligned to them as worker files are
    (:func:`crowdlearn.io.conll_folders.align_tags`). Tasks the file leaves out are left
    out of the scores (the returned frame's attribute ``attrs["tasks"]`` lists the
    covered ones); a task the data do not hold, an unknown tag or an empty task is an
    error naming the file and line.
    """
    from crowdlearn.data.spans import tags_to_spans
    from crowdlearn.io.conll_folders import align_tags

    require_input(path, "--truth")
    if Path(path).is_dir():
        raise CrowdDataError(f"--truth {path}: a folder; --truth FILE takes one CoNLL file")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise CrowdDataError(f"--truth {path}: not a UTF-8 text file") from None
    by_id = {str(t): code for code, t in enumerate(data.task_ids.tolist())}
    documents: dict[int, tuple[int, list[str], list[str]]] = {}
    current: tuple[int, list[str], list[str]] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        where = f"--truth {path}, line {number}"
        if fields[0] == DOCSTART:
            task = " ".join(fields[1:])
            if task not in by_id:
                raise CrowdDataError(
                    f"{where}: task {task!r} is not in the data"
                    + ("" if task else f" (write {DOCSTART} TASK)")
                )
            if by_id[task] in documents:
                raise CrowdDataError(f"{where}: task {task!r} appears twice")
            current = (number, [], [])
            documents[by_id[task]] = current
            continue
        if current is None:
            if data.n_tasks != 1:
                raise CrowdDataError(
                    f"{where}: a token before any '{DOCSTART} TASK' line (the data hold "
                    f"{data.n_tasks} tasks)"
                )
            current = (number, [], [])
            documents[0] = current
        if len(fields) < 2 and not line[0].isspace():
            raise CrowdDataError(f"{where}: expected 'TOKEN TAG', got {line!r}")
        tag = fields[-1]
        if not _TAG.match(tag):
            raise CrowdDataError(f"{where}: unknown tag {tag!r} (BIO tags: O, B-LABEL or I-LABEL)")
        current[1].append(fields[0] if len(fields) > 1 else "")
        current[2].append(tag)
    if not documents:
        raise CrowdDataError(f"--truth {path}: no tokens")
    rows: dict[str, list[Any]] = {"task": [], "start": [], "end": [], "label": []}
    unaligned = repaired = 0
    for code, (number, tokens, tags) in sorted(documents.items()):
        task = data.task_ids[code]
        if not tokens:
            raise CrowdDataError(f"--truth {path}, line {number}: task {task!r} has no tokens")
        aligned, missed = align_tags(tokens, tags, list(data.tokens[code]))
        unaligned += missed
        spans, n = tags_to_spans(aligned, "bio", where=f"--truth {path}, task {task!r}")
        repaired += n
        for start, end, label in spans:
            rows["task"].append(task)
            rows["start"].append(start)
            rows["end"].append(end)
            rows["label"].append(label)
    if unaligned:
        note(
            f"crowdlearn: note: --truth {path}: {unaligned} reference token(s) faced no token "
            "of the file and count as O"
        )
    if repaired:
        note(
            f"crowdlearn: note: --truth {path}: {repaired} I- tag(s) did not continue a span "
            "of their type and were read as the start of a new span"
        )
    frame = pd.DataFrame(rows)
    frame.attrs["tasks"] = [data.task_ids[code] for code in sorted(documents)]
    return frame


def _truth_for(truth: str | None, data: Spans, source: str) -> tuple[pd.DataFrame, Any, str]:
    """(true spans, the tasks scored (None: all), where the truth comes from)."""
    if truth == "":
        from crowdlearn.identify.spans import data_truth

        frame = data_truth(data)
        if frame is None:
            raise CrowdDataError(
                f"--truth: {source} carries no truth (the NER-MTurk layout's ground_truth "
                "folder); give --truth FILE (a CoNLL file: -DOCSTART- TASK, then TOKEN TAG lines)"
            )
        return frame, None, "the data's truth"
    assert truth is not None
    frame = read_truth_conll(truth, data)
    return frame, frame.attrs["tasks"], truth


def score_line(scores: dict[str, Any], where: str, n_tasks: int | None, total: int) -> str:
    """The line printed for --truth."""
    covered = "" if n_tasks is None else f" on {n_tasks} of {total} tasks"
    return (
        f"strict span scores against {where}{covered}: precision {scores['precision']:.4f}, "
        f"recall {scores['recall']:.4f}, F1 {scores['f1']:.4f} ({scores['n_correct']} "
        f"correct of {scores['n_predicted']} predicted, {scores['n_true']} true spans)"
    )


# ---------------------------------------------------------------------------- aggregate
def aggregate_spans(
    data: str,
    strategy: str | None,
    params: dict[str, str],
    output: str,
    output_format: str,
    duplicates: str,
    overwrite: bool,
    truth: str | None,
) -> None:
    """``crowdlearn aggregate DATA --kind spans``: fit, then write spans, tags.conll,
    workers.json and summary.json all-or-nothing (see the module docstring)."""
    from crowdlearn.aggregation.spans._make import (
        aggregator_params,
        default_strategy,
        make_span_aggregator,
    )
    from crowdlearn.identify.spans import model_worker_scores, truth_scores

    if strategy is None:
        strategy = default_strategy()
        note(f"crowdlearn: note: strategy {strategy} (the default for spans)")
    name, model = make_span_aggregator(strategy, **params)
    reads = [data] + ([truth] if truth else [])
    outputs = Outputs(overwrite, reads=reads)
    out = outputs.folder(output)
    answers = read_spans(data, duplicates)
    scored = _truth_for(truth, answers, data) if truth is not None else None
    model.fit(answers)
    predicted = model.predict() if hasattr(model, "predict") else model.labels_
    table = span_table(predicted, answers)
    summary: dict[str, Any] = {
        "kind": "spans",
        "strategy": type(model).__name__,
        "name": name,
        "params": {k: jsonable(v) for k, v in aggregator_params(model).items()},
        "unit": "character" if has_offsets(answers) else "token",
        "n_tasks": answers.n_tasks,
        "n_workers": answers.n_workers,
        "n_annotations": answers.n_annotations,
        "n_spans": len(table),
        "labels": [jsonable(label) for label in answers.labels.tolist()],
    }
    line = None
    if scored is not None:
        true, tasks, where = scored
        scores = truth_scores(predicted, true, tasks)
        summary["truth"] = {
            "source": where,
            "tasks": None if tasks is None else len(tasks),
            **scores,
        }
        line = score_line(scores, where, None if tasks is None else len(tasks), answers.n_tasks)
    workers = model_worker_scores(model)
    workers_doc = (
        {}
        if workers is None
        else {
            column: dict(
                zip(
                    map(str, workers["worker"].tolist()),
                    jsonable(workers[column].tolist()),
                    strict=True,
                )
            )
            for column in workers.columns
            if column != "worker"
        }
    )
    with outputs:
        target = out.staged / f"spans.{output_format}"
        write_table(table, target, output_format)
        with atomic_open(out.staged / "tags.conll") as handle:
            handle.write(conll_text(predicted, answers))
        for stem, document in (("workers", workers_doc), ("summary", summary)):
            with atomic_open(out.staged / f"{stem}.json") as handle:
                json.dump(document, handle, indent=1)
    written = [f"spans.{output_format}", "tags.conll", "workers.json", "summary.json"]
    click.echo(f"{name}: {answers} -> {output}: {', '.join(written)}")
    if line is not None:
        click.echo(line)


# ---------------------------------------------------------------------------- identify
def identify_spans(
    data: str, output: str, overwrite: bool, duplicates: str, consensus: str | None
) -> None:
    """``crowdlearn identify DATA --kind spans``: workers.csv, tasks.csv, summary.json."""
    from crowdlearn.aggregation.spans._make import default_strategy, make_span_aggregator
    from crowdlearn.identify.spans import task_frame, worker_frame

    name, model = make_span_aggregator(consensus or default_strategy())
    outputs = Outputs(overwrite, reads=[data])
    out = outputs.folder(output)
    answers = read_spans(data, duplicates)
    model.fit(answers)
    predicted = model.predict() if hasattr(model, "predict") else model.labels_
    workers = worker_frame(answers, model, predicted)
    tasks = task_frame(answers, predicted)
    summary = {
        "kind": "spans",
        "consensus": name,
        "n_tasks": answers.n_tasks,
        "n_workers": answers.n_workers,
        "n_annotations": answers.n_annotations,
        "worker_scores": [c for c in workers.columns if c != "worker"],
        "task_scores": [c for c in tasks.columns if c != "task"],
        "mean_agreement": jsonable(float(np.nanmean(tasks["agreement"])))
        if tasks["agreement"].notna().any()
        else None,
    }
    with outputs:
        for stem, frame in (("workers", workers), ("tasks", tasks)):
            with atomic_open(out.staged / f"{stem}.csv") as handle:
                frame.to_csv(handle, index=False)
        with atomic_open(out.staged / "summary.json") as handle:
            json.dump(summary, handle, indent=1)
    click.echo(
        f"spans (consensus {name}): {answers} -> {output}: workers.csv, tasks.csv, summary.json"
    )
