"""``crowdlearn predict``: class predictions of new items from a model saved by
``crowdlearn learn``, and the model's metadata (``--info``).

The items come the way the model was trained: feature vectors (``--features``), or the
raw texts or images its featuriser reads (``--texts``, ``--images``). The model file's
metadata (:mod:`crowdlearn.learning._model_file`) is checked against them first: a file
of another model format, or features of another dimension, are one error line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from crowdlearn._lazy import lazy_module
from crowdlearn.cli._app import cli
from crowdlearn.cli._output import Outputs, write_table
from crowdlearn.data import CrowdDataError

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
else:
    # imported on first use: `crowdlearn --help` must not load them
    np = lazy_module("numpy")
    pd = lazy_module("pandas")

#: What the featuriser kind of a model reads, and the option that gives it.
RAW_INPUT = {
    "tfidf": ("texts", "--texts"),
    "sentence-transformer": ("texts", "--texts"),
    "image": ("images", "--images"),
}


@cli.command()
@click.argument("model", type=click.Path())
@click.option(
    "--features",
    type=click.Path(exists=True, dir_okay=False),
    help="The items' features: .npy/.npz/.txt/.csv array (one row per item), or a "
    "CSV/Parquet table with a header (its id column: --id-column, else task or item).",
)
@click.option(
    "--texts",
    type=click.Path(exists=True, dir_okay=False),
    help="For a model trained on texts: a CSV/Parquet table of texts (column text, or "
    "--text-column; an id column id/task/item or --id-column), or a .txt file, one text "
    "per line.",
)
@click.option("--text-column", metavar="COLUMN", help="The column of --texts holding the texts.")
@click.option(
    "--images",
    type=click.Path(exists=True),
    help="For a model trained on images: a folder of images (every .png/.jpg... in it), "
    "or a CSV/Parquet table of image paths relative to its folder (--image-column).",
)
@click.option(
    "--image-column",
    metavar="COLUMN",
    help="The column of an --images table holding the paths (default image).",
)
@click.option("--id-column", metavar="COLUMN", help="The column of the items' ids (item column).")
@click.option(
    "-o",
    "--output",
    type=click.Path(),
    help="Output file: item, label, probability (and proba_<class> with --probas).",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["csv", "parquet"]),
    help="Output format (default: from the file ending, else csv).",
)
@click.option("--probas", is_flag=True, help="Add every class's probability, proba_<class>.")
@click.option("--device", help="auto, cpu, cuda, cuda:1... (default cpu).")
@click.option("--info", is_flag=True, help="Show the model's metadata and exit.")
@click.option("--json", "as_json", is_flag=True, help="With --info: the metadata as JSON.")
@click.option("--overwrite", is_flag=True, help="Replace an existing output file.")
def predict(
    model: str,
    features: str | None,
    texts: str | None,
    text_column: str | None,
    images: str | None,
    image_column: str | None,
    id_column: str | None,
    output: str | None,
    output_format: str | None,
    probas: bool,
    device: str | None,
    info: bool,
    as_json: bool,
    overwrite: bool,
) -> None:
    """Predict the class of new items with MODEL, a model saved by `crowdlearn learn`
    (OUT/model.pt, or the folder OUT).

    The items are given as the model was trained: features (--features) or, for a
    model trained on raw items, texts (--texts) or images (--images). Each gets its
    most probable class, in the training data's class names, and its probability.
    --info shows what the model is: method, classes, input, training data.
    """
    from crowdlearn.learning.persistence import model_info

    path = _model_path(model)
    given = {
        "--features": features,
        "--texts": texts,
        "--images": images,
        "-o": output,
        "--text-column": text_column,
        "--image-column": image_column,
        "--id-column": id_column,
    }
    if info:
        extra = [option for option, value in given.items() if value is not None]
        if extra or probas:
            named = ", ".join(extra + (["--probas"] if probas else []))
            raise click.UsageError(f"--info shows the model's metadata; it takes no {named}")
        Outputs(reads=[path])
        meta = model_info(path)
        if as_json:
            click.echo(json.dumps(meta, indent=1))
        else:
            click.echo(describe_model(path, meta))
        return
    if as_json:
        raise click.UsageError("--json goes with --info")
    sources = {o: v for o, v in given.items() if o in ("--features", "--texts", "--images") and v}
    if len(sources) != 1:
        raise click.UsageError(
            "give the items one way: --features FILE, --texts FILE or --images PATH"
            if sources
            else "give the items (--features, --texts or --images), or use --info"
        )
    if output is None:
        raise click.UsageError("-o FILE is required (or use --info)")
    option, source = next(iter(sources.items()))
    if text_column is not None and option != "--texts":
        raise CrowdDataError("--text-column goes with --texts")
    if image_column is not None and option != "--images":
        raise CrowdDataError("--image-column goes with --images")
    if Path(path).is_file() and _is_tagger(path):
        from crowdlearn.cli.learn import _check_device
        from crowdlearn.cli.learn_spans import predict_spans

        if option != "--texts":
            raise CrowdDataError(
                f"{path} is a span tagger: give --texts FILE (one token a line, a blank line "
                f"between sentences), not {option}"
            )
        _check_device(device)
        extra = [
            name
            for name, value in (
                ("--text-column", text_column), ("--id-column", id_column),
                ("--probas", probas), ("--format", output_format),
            )
            if value
        ]  # fmt: skip
        predict_spans(path, model_info(path), source, output, overwrite, device, extra)
        return
    fmt = _output_format(output, output_format)
    from crowdlearn.cli.learn import _check_device

    _check_device(device)
    outputs = Outputs(overwrite, reads=[path, source])
    target = outputs.file(output)

    meta = model_info(path)  # checked before any item is read or the network built
    _check_source(path, meta, option)
    if option == "--features":
        ids, items = _read_features(source, id_column, meta)
    elif option == "--texts":
        ids, items = _read_texts(source, text_column, id_column)
    else:
        ids, items = _read_images(source, image_column, id_column)

    from crowdlearn.learning.persistence import load_model

    learner = load_model(path, device="cpu" if device is None else device)
    scores = learner.predict_proba(items) if len(items) else np.zeros((0, len(meta["classes"])))
    table = prediction_table(scores, meta["classes"], ids, probas)
    with outputs:
        write_table(table, target.staged, fmt)
    click.echo(f"{meta['spec'] or meta['method']}: {len(table)} items of {source} -> {output}")


def _is_tagger(path: str) -> bool:
    """Whether the model file at ``path`` is a span tagger (from its metadata). A file
    that is no model file is not: the classifier path checks the output first and then
    refuses the file with its own message."""
    from crowdlearn.data import CrowdDataError
    from crowdlearn.learning.persistence import model_info

    try:
        return model_info(path).get("kind") == "spans"
    except CrowdDataError:
        return False


def _model_path(model: str) -> str:
    """MODEL, or ``MODEL/model.pt`` when MODEL is the folder ``crowdlearn learn`` wrote."""
    folder = Path(model)
    if folder.is_dir():
        if not (folder / "model.pt").is_file():
            raise CrowdDataError(f"{model}: a folder without model.pt; give the model file")
        return str(folder / "model.pt")
    return model


def _output_format(output: str, chosen: str | None) -> str:
    """csv or parquet, from --format or the file ending; the two must agree."""
    ending = Path(output).suffix.lower()
    implied = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}.get(ending)
    if chosen is not None and implied is not None and chosen != implied:
        raise CrowdDataError(f"-o {output}: a .{implied} name, but --format {chosen}")
    return chosen or implied or "csv"


def _check_source(path: str, meta: dict[str, Any], option: str) -> None:
    """Refuse items of another kind than the model's training instances."""
    kind = meta.get("featurizer")
    if kind is None:
        if option != "--features":
            raise CrowdDataError(
                f"{path} was trained on features ({_input(meta)}), not on raw items; give "
                "--features FILE"
            )
        return
    what, wanted = RAW_INPUT.get(kind, ("raw items", "--texts or --images"))
    if option != wanted:
        raise CrowdDataError(
            f"{path} was trained on {what} (its {kind} featuriser makes the features); "
            f"give {wanted}, not {option}"
        )


def _read_features(source: str, id_column: str | None, meta: dict[str, Any]) -> tuple[Any, Any]:
    """Item ids (None: row numbers) and features from an array file or a table, checked
    against the model's input shape."""
    from crowdlearn.cli.learn import _load_array
    from crowdlearn.learning.persistence import check_features

    file = Path(source)
    name = file.name
    if _is_table(file):
        table = _read_table(source)
        column = _id_column(table, id_column, source, ("task", "item", "id"))
        ids = None
        if column is not None:
            ids = table[column].to_numpy()
            table = table.drop(columns=[column])
        text = [str(c) for c in table.columns if table[c].dtype.kind not in "biuf"]
        if text:
            shown = ", ".join(text[:3]) + (f" and {len(text) - 3} more" if len(text) > 3 else "")
            raise CrowdDataError(
                f"{source}: column(s) {shown} are not numbers; features are numeric (name "
                "an id column with --id-column)"
            )
        X = table.to_numpy(dtype=np.float64)
    else:
        if id_column is not None:
            raise CrowdDataError(
                f"--id-column {id_column}: {source} is an array without column names; "
                "ids come from a CSV/Parquet table with a header"
            )
        ids, X = None, _load_array(source)
    check_features(meta, X, name)
    return ids, X


def _is_table(file: Path) -> bool:
    """A Parquet file, or a CSV/TSV file whose first line is a header (not numbers)."""
    suffix = file.suffix.lower()
    if suffix in (".parquet", ".pq"):
        return True
    if suffix not in (".csv", ".tsv"):
        return False
    with open(file, encoding="utf-8", errors="replace") as handle:
        first = handle.readline()
    cells = [c.strip() for c in first.replace("\t", ",").split(",") if c.strip()]
    for cell in cells:
        try:
            float(cell)
        except ValueError:
            return True
    return False


def _read_table(source: str) -> Any:
    from crowdlearn.io.kinds import read_table

    return read_table(source)


def _id_column(
    table: Any, chosen: str | None, source: str, defaults: tuple[str, ...]
) -> str | None:
    """The id column: --id-column (which must exist), else the first default present."""
    names = [str(c) for c in table.columns]
    if chosen is not None:
        if chosen not in names:
            raise CrowdDataError(
                f"--id-column {chosen}: {source} has no such column (its columns: "
                f"{', '.join(names)})"
            )
        return chosen
    return next((name for name in defaults if name in names), None)


def _read_texts(
    source: str, text_column: str | None, id_column: str | None
) -> tuple[Any, list[str]]:
    """Item ids (None: row numbers) and texts from a table or a .txt file."""
    from crowdlearn.data.errors import show

    if Path(source).suffix.lower() == ".txt":
        if text_column is not None or id_column is not None:
            raise CrowdDataError(f"{source}: a .txt file holds one text per line, without columns")
        texts = Path(source).read_text(encoding="utf-8").splitlines()
        if not texts:
            raise CrowdDataError(f"--texts {source}: no text in it")
        return None, texts
    table = _read_table(source)
    names = [str(c) for c in table.columns]
    column = text_column
    if column is not None and column not in names:
        raise CrowdDataError(
            f"--text-column {column}: {source} has no such column (its columns: "
            f"{', '.join(names)})"
        )
    ids_column = _id_column(table, id_column, source, ("id", "task", "item"))
    if column is None:
        if "text" in names:
            column = "text"
        else:
            others = [name for name in names if name != ids_column]
            if ids_column is None and len(names) == 2:  # learn's --texts: task id, text
                ids_column, others = names[0], [names[1]]
            if len(others) != 1:
                raise CrowdDataError(
                    f"--texts {source}: which column holds the texts? Name it with "
                    f"--text-column (its columns: {', '.join(names)})"
                )
            column = others[0]
    values = table[column]
    missing = values.isna().to_numpy()
    if missing.any():
        raise CrowdDataError(
            f"--texts {source}: no text in row(s) {show(np.flatnonzero(missing))} of column "
            f"{column}"
        )
    ids = None if ids_column is None else table[ids_column].to_numpy()
    return ids, values.astype(str).tolist()


def _read_images(
    source: str, image_column: str | None, id_column: str | None
) -> tuple[Any, list[str]]:
    """Item ids (the paths, unless an id column) and image paths from a folder or a
    table of paths relative to the table's folder."""
    from crowdlearn.data.inputs import IMAGE_SUFFIXES

    place = Path(source)
    if place.is_dir():
        if id_column is not None or image_column is not None:
            raise CrowdDataError(
                f"--images {source}: a folder; --id-column and --image-column name columns "
                "of an --images table"
            )
        paths = sorted(
            str(entry)
            for entry in place.iterdir()
            if entry.suffix.lower() in IMAGE_SUFFIXES and entry.is_file()
        )
        if not paths:
            raise CrowdDataError(f"--images {source}: no image file in this folder")
        return np.array(paths, dtype=object), paths
    table = _read_table(source)
    names = [str(c) for c in table.columns]
    column = image_column or "image"
    if column not in names:
        raise CrowdDataError(
            f"--images {source}: no column {column} (its columns: {', '.join(names)}); "
            "name the paths' column with --image-column"
        )
    written = table[column].astype(str).tolist()
    paths = [str(place.parent / item) for item in written]
    missing = [item for item in paths if not Path(item).is_file()]
    if missing:
        shown = ", ".join(missing[:3]) + (
            f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        )
        raise CrowdDataError(f"--images {source}: image file(s) not found: {shown}")
    ids_column = _id_column(table, id_column, source, ("id", "task", "item"))
    ids = np.array(written, dtype=object) if ids_column is None else table[ids_column].to_numpy()
    return ids, paths


def prediction_table(probas: Any, classes: list[Any], ids: Any, with_probas: bool) -> Any:
    """The output table: ``item``, ``label`` (a class name), ``probability`` and, with
    ``with_probas``, one ``proba_<class>`` column per class."""
    best = probas.argmax(axis=1) if len(probas) else np.zeros(0, dtype=int)
    names = np.empty(len(classes), dtype=object)
    names[:] = classes
    table = pd.DataFrame(
        {
            "item": np.arange(len(probas)) if ids is None else ids,
            "label": names[best],
            "probability": probas[np.arange(len(probas)), best] if len(probas) else [],
        }
    )
    if with_probas:
        for k, name in enumerate(classes):
            table[f"proba_{name}"] = probas[:, k]
    return table


def _input(meta: dict[str, Any]) -> str:
    shape = meta.get("input_shape")
    if shape is None:
        return "input shape unknown"
    if len(shape) == 1:
        return f"{shape[0]} features per item"
    return f"items of shape {tuple(shape)}"


def describe_model(path: str, meta: dict[str, Any]) -> str:
    """The model's metadata as lines of text (``crowdlearn predict MODEL --info``)."""
    classes = meta.get("classes") or []
    shown = ", ".join(map(str, classes[:20])) + (" ..." if len(classes) > 20 else "")
    method = meta.get("spec") or meta.get("method")
    kind = meta.get("featurizer")
    items = _input(meta)
    if kind is not None:
        what = RAW_INPUT.get(kind, ("raw items", ""))[0]
        items = f"{what}, through a {kind} featuriser ({items})"
    lines = [
        ("model", path),
        ("format", f"{meta.get('format')} (saved by crowdlearn {meta.get('crowdlearn')})"),
        ("method", f"{method} ({meta.get('class')})"),
        ("classes", f"{len(classes)}: {shown}"),
        ("input", items),
    ]
    if meta.get("kind") == "spans":  # a tagger: tags, and tokens in
        from crowdlearn.cli.learn_spans import describe_tagger

        lines = [line for line in lines if line[0] != "input"] + describe_tagger(meta)
    training = meta.get("training")
    if training:
        lines.append(
            (
                "training",
                f"{training.get('n_tasks')} tasks, {training.get('n_workers')} workers, "
                f"{training.get('n_annotations')} annotations, "
                f"{training.get('n_classes')} classes",
            )
        )
        if training.get("source"):
            lines.append(("source", str(training["source"])))
    return "\n".join(f"{name:9s} {value}" for name, value in lines)
