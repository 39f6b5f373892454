"""Aggregated labels written back in the files the platforms import.

* :func:`label_studio_predictions`: Label Studio's task import format with one
  prediction per task (``predictions[].result[].value.choices`` and a ``score``), so
  the labels show up as pre-annotations in the project they came from.
* :func:`toloka_results`: a Toloka-style results table, ``INPUT:<task field>``,
  ``OUTPUT:<answer field>`` and ``CONFIDENCE:<answer field>`` (tab-separated).

Both take the task ids, each task's label (a class, or a list of classes for label
sets) and its probability, and the export the answers came from when there is one (its
field names are reused).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from typing import Any

import pandas as pd

from crowdlearn._atomic import atomic_open
from crowdlearn.io.platforms._export import PlatformExport

#: The Label Studio control and object names used when the answers did not come from
#: Label Studio (the project's labelling config names them; pass yours).
DEFAULT_FROM_NAME = "label"
DEFAULT_TO_NAME = "item"


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def label_studio_names(export: PlatformExport | None) -> tuple[str, str]:
    """The (from_name, to_name) of the export's choices control, else the defaults."""
    names = (export.roles.get("from_name"), export.roles.get("to_name")) if export else ()
    if export is not None and all(names):
        return names[0], names[1]  # type: ignore[return-value]
    return DEFAULT_FROM_NAME, DEFAULT_TO_NAME


def label_studio_predictions(
    task_ids: Sequence[Any],
    labels: Sequence[Any],
    scores: Sequence[float],
    *,
    from_name: str = DEFAULT_FROM_NAME,
    to_name: str = DEFAULT_TO_NAME,
    model_version: str = "crowdlearn",
    items: pd.DataFrame | None = None,
) -> list[dict[str, Any]]:
    """One Label Studio task per aggregated task, with its label as a prediction.

    Parameters
    ----------
    task_ids, labels, scores : sequences of the same length
        A label is a class or a list of classes (label sets); a score in [0, 1].
    from_name, to_name : str
        The names of the choices control and of the object it labels in the project's
        labelling config.
    items : DataFrame, optional
        Each task's data fields (indexed by task id), written as the task's ``data``;
        without them ``data`` holds ``{"task": id}``.

    Examples
    --------
    >>> label_studio_predictions(["t1"], ["cat"], [0.9])[0]["predictions"][0]["result"][0]
    {'from_name': 'label', 'to_name': 'item', 'type': 'choices', 'value': {'choices': ['cat']}}
    """
    tasks = []
    for task, label, score in zip(task_ids, labels, scores, strict=True):
        choices = (
            [_plain(c) for c in label] if isinstance(label, (list, tuple)) else [_plain(label)]
        )
        if items is not None and task in items.index:
            data = {k: _plain(v) for k, v in items.loc[task].items()}
        else:
            data = {"task": _plain(task)}
        tasks.append(
            {
                "id": _plain(task),
                "data": data,
                "predictions": [
                    {
                        "model_version": model_version,
                        "score": None if math.isnan(score) else float(score),
                        "result": [
                            {
                                "from_name": from_name,
                                "to_name": to_name,
                                "type": "choices",
                                "value": {"choices": choices},
                            }
                        ],
                    }
                ],
            }
        )
    return tasks


def write_label_studio_predictions(path: str | os.PathLike[str], tasks: list[dict]) -> None:
    """Write :func:`label_studio_predictions`'s list as a JSON file (atomically)."""
    with atomic_open(path) as handle:
        json.dump(tasks, handle, indent=1, ensure_ascii=False)


def toloka_results(
    task_ids: Sequence[Any],
    labels: Sequence[Any],
    scores: Sequence[float],
    *,
    export: PlatformExport | None = None,
) -> pd.DataFrame:
    """A Toloka-style results table: ``INPUT:<task field>``, ``OUTPUT:<answer field>``
    and ``CONFIDENCE:<answer field>``, with the export's field names when it is a
    Toloka export (``INPUT:task`` and ``OUTPUT:result`` otherwise). Label sets are
    written as JSON lists.
    """
    task_name, answer_name = "INPUT:task", "OUTPUT:result"
    if export is not None and export.platform == "toloka":
        if export.roles["task"].startswith("INPUT:") and "+" not in export.roles["task"]:
            task_name = export.roles["task"]
        answer_name = export.roles["label"]
    confidence = "CONFIDENCE:" + answer_name.split(":", 1)[1]
    cells = [
        json.dumps([_plain(c) for c in label]) if isinstance(label, (list, tuple)) else label
        for label in labels
    ]
    return pd.DataFrame({task_name: list(task_ids), answer_name: cells, confidence: list(scores)})
