"""``crowdlearn learn`` on raw items: each task's text or image instead of features.

The options ``--text-column COLUMN`` (the long file's column holding each task's text),
``--texts FILE`` (a table of task id and text), ``--image-column COLUMN`` (image paths,
relative to the data file's folder) and ``--images FOLDER`` (``<FOLDER>/<task id>.png``)
give every task its raw item; :func:`raw_items` reads them in task-code order and
:func:`make_featurizer` builds the featuriser the learner is trained through (see
:mod:`crowdlearn.learning.featurizers`). Every problem is a CrowdDataError: one
``crowdlearn: error:`` line, exit status 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from crowdlearn.data import CrowdDataError

if TYPE_CHECKING:
    from crowdlearn.data import CrowdData

#: The options that give raw items, and what each one reads.
RAW_OPTIONS = ("--text-column", "--texts", "--image-column", "--images")


def chosen_source(
    features: str | None,
    text_column: str | None,
    texts: str | None,
    image_column: str | None,
    images: str | None,
) -> str | None:
    """The one raw-item option given (None for none); two sources of instances, or
    features mixed with raw items, are refused before any data is read."""
    given = {
        option: value
        for option, value in zip(
            ("--features", *RAW_OPTIONS),
            (features, text_column, texts, image_column, images),
            strict=True,
        )
        if value is not None
    }
    if len(given) > 1:
        named = " and ".join(f"{option} {value}" for option, value in given.items())
        raise CrowdDataError(
            f"{named}: give the tasks' instances one way (features, texts or images)"
        )
    option = next(iter(given), None)
    return None if option in (None, "--features") else option


def check_combination(option: str, data: str, registry: bool, valid_mode: str, test: Any) -> None:
    """Refuse what cannot go with raw items: a registry dataset (its validation and
    test splits are features), validation or test features (they would not pass
    through the featuriser)."""
    if registry:
        raise CrowdDataError(
            f"{option}: raw items go with a crowd data file; {data} is a registry dataset, "
            "whose tasks already have features"
        )
    if valid_mode not in ("crowd", "none"):
        raise CrowdDataError(
            f"--valid {valid_mode}: validation features cannot go with {option} (the "
            "featuriser makes the features); use --valid crowd or none"
        )
    if test is not None:
        raise CrowdDataError(
            f"--test-features cannot go with {option} (the featuriser makes the "
            "features); score raw test items with crowdlearn predict MODEL --texts or --images"
        )


def raw_items(option: str, value: str, data_path: str, crowd: CrowdData) -> list[Any]:
    """The raw item of every task, in task-code order (texts, or image paths)."""
    from crowdlearn.learning.featurizers import images_by_task

    if option == "--images":
        return [str(path) for path in images_by_task(value, crowd.task_ids)]
    if option == "--texts":
        table, task, column = _texts_table(value)
        where = value
    else:
        table, task = _data_table(data_path)
        column, where = value, data_path
        if column not in table.columns:
            raise CrowdDataError(
                f"{option} {column}: {data_path} has no such column (its columns: "
                f"{', '.join(map(str, table.columns))})"
            )
    items = _one_per_task(table, task, column, option, where, crowd)
    if option == "--image-column":
        base = Path(data_path).parent
        items = [str(base / item) for item in items]
        missing = [item for item in items if not Path(item).is_file()]
        if missing:
            shown = ", ".join(missing[:3]) + (
                f" and {len(missing) - 3} more" if len(missing) > 3 else ""
            )
            raise CrowdDataError(f"{option} {column}: image file(s) not found: {shown}")
    return items


def _data_table(path: str) -> tuple[Any, str]:
    """Every column of the long data file and the name of its task column (as the
    reader resolved it, ``--columns`` included)."""
    from crowdlearn.data._headers import resolve_columns
    from crowdlearn.io._dispatch import _with_default_columns, detect_format
    from crowdlearn.io.kinds import read_table
    from crowdlearn.io.platforms import _cached_export, recognise

    if recognise(path) is not None:
        return _export_items(_cached_export(path), path), "task"
    if detect_format(path) not in ("csv", "parquet"):
        raise CrowdDataError(
            f"{path}: --text-column and --image-column read a long CSV/TSV or Parquet "
            f"file, not the {detect_format(path)} format (use --texts FILE or --images FOLDER)"
        )
    table = read_table(path)
    columns = _with_default_columns({}).get("columns")
    found = resolve_columns(list(map(str, table.columns)), columns, truth=None)
    return table, found.task


def _export_items(export: Any, path: str) -> Any:
    """A platform export's task contents (Label Studio's ``data``, MTurk's ``Input.*``,
    Toloka's ``INPUT:*``, CrowdFlower's constant fields), one row per task, with the
    task ids typed as the answers' are."""
    import pyarrow as pa

    from crowdlearn.io._common import typed_column

    if export.items is None:
        raise CrowdDataError(f"{path}: the export holds no task contents to learn from")
    table = export.items.copy()
    ids = pa.chunked_array([pa.array([str(t) for t in table.index], pa.string())])
    table.insert(0, "task", typed_column(ids).to_numpy())
    return table.reset_index(drop=True)


def _texts_table(path: str) -> tuple[Any, str, str]:
    """A ``--texts`` table: columns ``task`` and ``text``, else its first two columns."""
    from crowdlearn.io.kinds import read_table

    table = read_table(path)
    names = list(map(str, table.columns))
    if {"task", "text"} <= set(names):
        return table, "task", "text"
    if len(names) < 2:
        raise CrowdDataError(
            f"--texts {path}: expected two columns, task id and text (header task,text)"
        )
    return table, names[0], names[1]


def _one_per_task(
    table: Any, task: str, column: str, option: str, where: str, crowd: CrowdData
) -> list[Any]:
    """The column's value of each task; several different values of one task, or a
    task without any, are refused naming the tasks."""
    import pandas as pd

    from crowdlearn.data.errors import show

    rows = table[[task, column]].dropna(subset=[column])
    values = rows[column].astype(str)
    distinct = values.groupby(rows[task]).nunique()
    conflicting = distinct.index[distinct.to_numpy() > 1]
    if len(conflicting):
        raise CrowdDataError(
            f"{option} {column}: the rows of task(s) {show(list(conflicting))} in {where} "
            "hold different values; each task needs one"
        )
    first = values.groupby(rows[task]).first()
    present = pd.Index(crowd.task_ids).isin(first.index)
    if not present.all():
        raise CrowdDataError(
            f"{option} {column}: no value for task(s) {show(crowd.task_ids[~present])} in {where}"
        )
    return first.loc[crowd.task_ids].tolist()


def make_featurizer(
    option: str,
    max_features: int | None,
    svd_components: int | None,
    text_model: str | None,
    image_size: int | None,
    seed: int | None,
) -> Any:
    """The featuriser of the raw items of ``option`` from the command's options."""
    from crowdlearn.learning.featurizers import (
        ImageFeaturizer,
        SentenceTransformerFeaturizer,
        TextFeaturizer,
    )

    if option in ("--image-column", "--images"):
        for name, value in (
            ("--max-features", max_features),
            ("--svd-components", svd_components),
            ("--text-model", text_model),
        ):
            if value is not None:
                raise CrowdDataError(f"{name} applies to texts, not to {option}")
        size = 32 if image_size is None else int(image_size)
        return ImageFeaturizer(size=(size, size))
    if image_size is not None:
        raise CrowdDataError(f"--image-size applies to images, not to {option}")
    if text_model is not None:
        if max_features is not None or svd_components is not None:
            raise CrowdDataError(
                "--text-model embeds texts with a pretrained model; --max-features and "
                "--svd-components apply to the TF-IDF featuriser"
            )
        import importlib.util

        from crowdlearn.learning.featurizers import TEXT_EXTRA

        if importlib.util.find_spec("sentence_transformers") is None:
            raise CrowdDataError(
                f"--text-model {text_model} needs the optional package sentence-transformers: "
                f"{TEXT_EXTRA}"
            )
        return SentenceTransformerFeaturizer(text_model)
    return TextFeaturizer(
        max_features=5000 if max_features is None else int(max_features),
        svd_components=None if svd_components is None else int(svd_components),
        random_state=0 if seed is None else int(seed),
    )
