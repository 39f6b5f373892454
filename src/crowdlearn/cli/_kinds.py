"""The answer kinds on the command line: reading, strategies and the tables written.

``crowdlearn aggregate --kind multilabel|rating|comparison`` (or a file whose columns say
comparisons) goes through :func:`aggregate_kind`: the kind's data type is read by
:func:`crowdlearn.io.read_kind`, its strategy made from the kind's registry
(``crowdlearn.aggregation.<kind>``, default :data:`DEFAULT_STRATEGY` of that package),
and its tables written all-or-nothing by the caller's :class:`~crowdlearn.cli._output.Outputs`.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from crowdlearn._json import jsonable as _jsonable
from crowdlearn._lazy import lazy_module
from crowdlearn.cli._app import note
from crowdlearn.cli._output import require_input
from crowdlearn.data import CrowdDataError

np = lazy_module("numpy")
pd = lazy_module("pandas")

#: The aggregation package of each kind (``class`` is ``crowdlearn.aggregation`` itself).
PACKAGES = {
    "multilabel": "crowdlearn.aggregation.label_sets",
    "rating": "crowdlearn.aggregation.ratings",
    "comparison": "crowdlearn.aggregation.comparisons",
    "text": "crowdlearn.aggregation.texts",
    "box": "crowdlearn.aggregation.boxes",
    "mask": "crowdlearn.aggregation.masks",
}

#: What each kind is called in notes.
NOUNS = {
    "class": "one class per answer",
    "multilabel": "label sets",
    "rating": "ratings",
    "comparison": "pairwise comparisons",
    "text": "free texts",
    "box": "bounding boxes",
    "mask": "segmentation masks",
    "spans": "spans (sequence tags)",
}

#: The categorical default: Dawid-Skene with its prior, the best mean accuracy over the
#: 12 real datasets in ``python -m benchmarks aggregation-defaults``.
CLASS_DEFAULT = "ds"


def package(kind: str) -> Any:
    """The aggregation package of ``kind``."""
    if kind == "class":
        return importlib.import_module("crowdlearn.aggregation")
    return importlib.import_module(PACKAGES[kind])


def default_strategy(kind: str) -> str:
    if kind == "spans":
        from crowdlearn.aggregation.spans._make import default_strategy as spans_default

        return spans_default()
    return CLASS_DEFAULT if kind == "class" else package(kind).DEFAULT_STRATEGY


def strategies(kind: str) -> dict[str, Any]:
    if kind == "spans":  # SPAN_STRATEGIES: name -> class
        from types import SimpleNamespace

        from crowdlearn.aggregation.spans._make import description
        from crowdlearn.aggregation.spans._make import strategies as _strategies

        return {
            name: SimpleNamespace(description=description(estimator))
            for name, estimator in _strategies().items()
        }
    return package(kind).STRATEGIES


def make(kind: str, spec: str, params: dict[str, str]) -> Any:
    """The estimator of ``spec`` in ``kind``'s registry; an unknown name lists the kind's."""
    registry = strategies(kind)
    name = spec.split("[")[0].strip().lower()
    if name not in registry:
        # the kinds whose registry holds the name (class first: mv is a class strategy
        # before it is a masks one)
        other = [k for k in ("class", *PACKAGES) if k != kind and name in strategies(k)]
        hint = (
            " (it is a " + ", and a ".join(f"{NOUNS[k]} strategy: --kind {k}" for k in other) + ")"
            if other
            else ""
        )
        raise CrowdDataError(
            f"unknown {NOUNS[kind]} strategy {spec!r}{hint}; choose one of "
            f"{', '.join(sorted(registry))}"
        )
    return package(kind).make_aggregator(spec, **params)


def _workers(model: Any, data: Any) -> dict[str, dict[str, Any]]:
    """workers.json: each worker attribute by worker id, in strict JSON (a number that is
    not finite, e.g. the variance of a worker rating in units near 1e308, is null)."""
    ids = [str(w) for w in data.worker_ids.tolist()]
    return {
        attribute.rstrip("_"): dict(
            zip(ids, _finite_or_null(_jsonable(getattr(model, attribute))), strict=True)
        )
        for attribute in getattr(model, "worker_attributes", ())
        if hasattr(model, attribute)
    }


def _finite_or_null(value: Any) -> Any:
    """``value`` (nested lists of numbers) with every NaN or infinite float as None."""
    if isinstance(value, list):
        return [_finite_or_null(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def tables(kind: str, model: Any, data: Any) -> dict[str, Any]:
    """The tables (DataFrames, by file stem) and documents (dicts) of a fitted model."""
    summary: dict[str, Any] = {
        "kind": kind,
        "strategy": type(model).__name__,
        "params": {k: _jsonable(v) for k, v in model.get_params().items()},
        "n_workers": data.n_workers,
        "n_annotations": data.n_annotations,
    }
    for attribute in ("n_iter_", "converged_"):
        if hasattr(model, attribute):
            summary[attribute.rstrip("_")] = _jsonable(getattr(model, attribute))
    out: dict[str, Any] = {"workers": _workers(model, data), "summary": summary}
    if kind == "comparison":
        summary["n_items"] = data.n_items
        scores = pd.DataFrame({"item": data.item_ids, "score": np.asarray(model.scores_)})
        out["scores"] = scores.sort_values("score", ascending=False, kind="stable")
        return out
    summary["n_tasks"] = data.n_tasks
    if kind == "box":
        boxes = model.boxes_
        summary["classes"] = [_jsonable(c) for c in data.classes]
        summary["n_boxes"] = len(boxes)
        out["boxes"] = pd.DataFrame(
            {
                "task": data.task_ids[boxes["task"].to_numpy(np.int64)],
                "class": data.classes[boxes["class"].to_numpy(np.int64)],
                **{c: boxes[c].to_numpy(np.float64) for c in ("x_min", "y_min", "x_max", "y_max")},
                "score": boxes["score"].to_numpy(np.float64),
            }
        )
        return out
    if kind == "mask":
        # the masks themselves are written one per task by the caller (write_masks)
        summary["mask_format"] = data.mask_format
        out["labels"] = pd.DataFrame(
            {"task": data.task_ids, "agreement": np.asarray(model.agreement_, dtype=np.float64)}
        )
        return out
    if kind == "text":
        columns_text: dict[str, Any] = {"task": data.task_ids, "text": np.asarray(model.texts_)}
        if getattr(model, "confidence_", None) is not None:
            columns_text["confidence"] = np.asarray(model.confidence_, dtype=np.float64)
        out["labels"] = pd.DataFrame(columns_text)
        return out
    task = pd.Series(data.task_ids, name="task")
    if kind == "multilabel":
        names = [str(c) for c in data.classes]
        summary["classes"] = [_jsonable(c) for c in data.classes]
        labels = pd.DataFrame(np.asarray(model.labels_, dtype=np.int8), columns=names)
        probas = pd.DataFrame(np.asarray(model.probas_, dtype=np.float64), columns=names)
        out["labels"] = pd.concat([task, labels], axis=1)
        out["probas"] = pd.concat([task, probas], axis=1)
        return out
    columns: dict[str, Any] = {"task": data.task_ids}
    values = np.asarray(model.values_, dtype=np.float64)
    if data.levels is not None:
        summary["order"] = [_jsonable(v) for v in data.levels]
        ranks = getattr(model, "labels_", None)
        if ranks is None:
            ranks = np.clip(np.rint(values), 0, len(data.levels) - 1)
        columns["label"] = data.levels[np.asarray(ranks, dtype=np.int64)]
    spread = getattr(model, "spread_", None)
    spread = None if spread is None else np.asarray(spread, dtype=np.float64)
    if data.levels is not None and data.levels.dtype.kind in "iuf":
        # numeric categories (1..5 stars): the value on their scale, not the rank
        levels = data.levels.astype(np.float64)
        values = np.interp(values, np.arange(len(levels)), levels)
        if spread is not None:
            spread = spread * (levels[-1] - levels[0]) / max(len(levels) - 1, 1)
    elif data.levels is not None:
        summary["value"] = "rank in the order, 0 = lowest"
    columns["value"] = values
    if spread is not None:
        columns["spread"] = spread
    out["labels"] = pd.DataFrame(columns)
    return out


def write_masks(model: Any, data: Any, folder: Path) -> int:
    """Each task's aggregated mask as ``folder/TASK.npy`` (or ``.png`` when the input's
    masks are PNG), one task in memory at a time; returns the number written."""
    from crowdlearn.data.masks import write_mask

    folder.mkdir(parents=True, exist_ok=True)
    suffix = "." + data.mask_format
    count = 0
    for t, mask in model.iter_masks():
        write_mask(folder / f"{data.task_ids[t]}{suffix}", mask)
        count += 1
    return count


def parse_order(text: str | None) -> list[Any] | None:
    """``--order 1,2,3,4,5`` or ``--order bad,fair,good`` as a list (numbers as numbers)."""
    if text is None:
        return None
    items = [item.strip() for item in text.split(",")]
    if len(items) < 2 or any(not item for item in items):
        raise CrowdDataError(
            f"--order expects at least two comma-separated categories, lowest first; got {text!r}"
        )
    try:
        numbers = [int(item) for item in items]
    except ValueError:
        try:
            return [float(item) for item in items]
        except ValueError:
            return items
    return numbers


def kind_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--kind``, ``--sep``, ``--order`` and ``--tie`` (passed as keyword arguments)."""
    options = [
        click.option(
            "--kind",
            type=click.Choice(
                ["class", "multilabel", "rating", "comparison", "text", "box", "mask", "spans"]
            ),
            help="What one answer is: a class, a set of classes (multilabel), a number or "
            "ordered category (rating), a choice between two items (comparison), a free "
            "text (text), bounding boxes (box: columns task, worker, label, x_min, y_min, "
            "x_max, y_max, one row per box, or a COCO JSON whose annotations name an "
            "annotator), a binary segmentation mask (mask: DATA is a folder "
            "DATA/TASK/WORKER.npy or .png) or spans in a text (spans: named entities and "
            "the like; DATA e.g. a folder of per-worker CoNLL files as NER-MTurk ships "
            "them). Default: comparison when the file has left and "
            "right columns, text for a platform export of free-text answers, else class.",
        ),
        click.option(
            "--sep",
            metavar="TEXT",
            help="--kind multilabel: the separator between classes in a label cell (JSON "
            "lists and CrowdFlower's [A]/[B] lines need none).",
        ),
        click.option(
            "--order",
            metavar="A,B,...",
            help="--kind rating: the ordered categories, lowest first (e.g. 1,2,3,4,5 or "
            "bad,fair,good); without it ratings are numbers.",
        ),
        click.option(
            "--tie", metavar="VALUE", help="--kind comparison: the label that declares a tie."
        ),
    ]
    for option in reversed(options):
        command = option(command)
    from crowdlearn.cli._span_inputs import span_inputs

    return span_inputs(command)  # --texts, --tokens, --scheme of --kind spans


def read_answers(
    data: str,
    kind: str,
    sep: str | None,
    order: str | None,
    tie: str | None,
    duplicates: str = "error",
) -> Any:
    """DATA read as ``kind`` (not ``class``) with the kind's options."""
    from crowdlearn.io import read_kind

    require_input(data)
    return read_kind(data, kind, sep=sep, order=parse_order(order), tie=tie, duplicates=duplicates)


def detected_kind(data: str, engine: str) -> str:
    """The kind DATA holds, as its description in ``crowdlearn.io`` says (a platform
    export's kind, comparisons for a left/right pair), with a note for comparisons."""
    from crowdlearn import datasets
    from crowdlearn.io._dispatch import _with_default_columns
    from crowdlearn.io._files import is_batch_source
    from crowdlearn.io.kinds import source_kind

    if data in datasets.list():
        return "class"
    if not is_batch_source(data):
        require_input(data)
    kind = source_kind(data, _with_default_columns({}).get("columns"))
    if kind == "comparison":
        note(
            "crowdlearn: note: reading pairwise comparisons (the file has left and right "
            "columns; --kind chooses another kind)"
        )
    return kind


def platform_kind(data: str) -> str:
    """The kind of a platform export (label sets when its answers hold several choices),
    or ``class`` for a batch of plain tables."""
    from crowdlearn.io.platforms import _cached_export, recognise

    if recognise(data) is None:
        return "class"
    return _cached_export(data).kind


def check_kind_options(kind: str, sep: str | None, order: str | None, tie: str | None) -> None:
    for option, value, owner in (
        ("--sep", sep, "multilabel"),
        ("--order", order, "rating"),
        ("--tie", tie, "comparison"),
    ):
        if value is not None and kind != owner:
            raise click.UsageError(f"{option} applies to --kind {owner}, not to {kind}")
    from crowdlearn.cli._span_inputs import given

    if kind != "spans" and given():
        raise click.UsageError(f"{given()[0]} applies to --kind spans, not to {kind}")
