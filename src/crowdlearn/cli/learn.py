"""``crowdlearn learn``: train a classifier from crowd annotations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from crowdlearn._atomic import atomic_open
from crowdlearn._lazy import lazy_module
from crowdlearn.cli._app import cli
from crowdlearn.cli._reading import reading_options
from crowdlearn.data import CrowdDataError

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from crowdlearn.data import CrowdData
else:
    # imported on first use: `crowdlearn --help` must not load them
    np = lazy_module("numpy")
    pd = lazy_module("pandas")


def _load_array(path: str) -> np.ndarray:
    """A feature matrix or label vector from .npy, or from a text/CSV file of numbers."""
    file = Path(path)
    if file.suffix == ".npy":
        return np.load(file, allow_pickle=False)
    delimiter = "," if file.suffix == ".csv" else None
    try:
        return np.loadtxt(file, delimiter=delimiter, ndmin=1)
    except ValueError as error:
        raise CrowdDataError(f"{path}: not a numeric array ({error})") from None


def _with_features(data: CrowdData, path: str) -> CrowdData:
    """Features from a .npy/.txt array aligned with the task codes, or from a CSV/Parquet
    table with a ``task`` column (aligned by task id)."""
    if Path(path).suffix in (".parquet", ".pq") or (
        Path(path).suffix == ".csv" and "task" in pd.read_csv(path, nrows=0).columns
    ):
        table = pd.read_parquet(path) if path.endswith(("parquet", "pq")) else pd.read_csv(path)
        if "task" not in table.columns:
            raise CrowdDataError(f"{path}: a feature table needs a 'task' column")
        return data.with_features(table.set_index("task"))
    return data.with_features(_load_array(path))


def _source(data: str, root: str | None, features: str | None) -> tuple[CrowdData, Any, Any]:
    """Training data, validation pair and test pair from a registry name or a file."""
    from crowdlearn import datasets
    from crowdlearn.io import read

    if data in datasets.list():
        dataset = datasets.load(data, root=root)
        if dataset.train is None:
            raise CrowdDataError(f"dataset {data!r} has no crowd annotations to learn from")
        train = dataset.train if features is None else _with_features(dataset.train, features)
        return train, dataset.valid, dataset.test
    crowd = read(data)
    if features is not None:
        crowd = _with_features(crowd, features)
    return crowd, None, None


def _pair(features: str | None, labels: str | None, what: str) -> tuple[Any, Any] | None:
    if features is None:
        if labels is not None:
            raise CrowdDataError(f"--{what}-labels needs --{what}-features")
        return None
    X = _load_array(features)
    y = None if labels is None else _load_array(labels).astype(np.int64)
    return X, y


def learning_outputs(model: Any, data: CrowdData, test: Any) -> dict[str, Any]:
    """Tables and documents ``crowdlearn learn`` writes."""
    from crowdlearn.metrics import accuracy, macro_f1

    outputs: dict[str, Any] = {
        "summary": {
            "method": type(model).__name__,
            "params": {k: repr(v) for k, v in model.get_params().items()},
            "classes": [c.item() if hasattr(c, "item") else c for c in data.classes],
            "n_tasks": data.n_tasks,
            "n_workers": data.n_workers,
            "n_annotations": data.n_annotations,
            "best_epoch": int(model.best_epoch_),
            "epochs_run": len(model.history_),
        },
        "history": model.history_,
    }
    if hasattr(model, "confusions_") and data.n_workers:
        outputs["confusions"] = {
            str(worker): matrix.tolist()
            for worker, matrix in zip(data.worker_ids.tolist(), model.confusions_, strict=True)
        }
    if test is not None:
        X, y = test
        probas = model.predict_proba(X)
        labels = probas.argmax(axis=1)
        table = pd.DataFrame(probas, columns=[str(c) for c in data.classes])
        table.insert(0, "label", data.classes[labels])
        table.insert(0, "instance", np.arange(len(table)))
        outputs["predictions"] = table
        if y is not None:
            outputs["summary"]["test_accuracy"] = accuracy(y, labels)
            outputs["summary"]["test_macro_f1"] = macro_f1(y, labels, data.n_classes)
    return outputs


@cli.command()
@reading_options
@click.argument("data", required=False)
@click.option(
    "-s",
    "--method",
    help="Method, e.g. crowdlayer, 'crowdlayer[variant=VW]', "
    "ds+nn, 'twostage[aggregator=glad,soft=true]' (see --list).",
)
@click.option(
    "--param",
    "params",
    multiple=True,
    metavar="K=V",
    help="A parameter of the method (repeatable), e.g. --param variant=VW.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False),
    help="Output folder: model.pt, history.csv, summary.json, confusions.json, predictions.csv.",
)
@click.option("--backbone", type=click.Choice(["mlp", "cnn"]), help="Classifier network.")
@click.option("--hidden", type=int, multiple=True, help="Hidden units (repeat for layers).")
@click.option("--epochs", type=int, help="Training epochs (EM iterations for EM methods).")
@click.option("--batch-size", type=int, help="Tasks per mini-batch.")
@click.option("--lr", type=float, help="Learning rate.")
@click.option("--weight-decay", type=float, help="Weight decay.")
@click.option("--dropout", type=float, help="Dropout rate.")
@click.option("--device", help="auto, cpu, cuda, cuda:1...")
@click.option("--seed", type=int, help="Random seed.")
@click.option(
    "--root",
    type=click.Path(file_okay=False),
    help="Dataset directory when DATA is a registry name.",
)
@click.option(
    "--features",
    type=click.Path(exists=True, dir_okay=False),
    help="Task features: .npy/.txt aligned with task codes, or a CSV/Parquet table "
    "with a task column.",
)
@click.option("--valid-features", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--valid-labels",
    type=click.Path(exists=True, dir_okay=False),
    help="Class codes of the validation instances.",
)
@click.option("--test-features", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--test-labels",
    type=click.Path(exists=True, dir_okay=False),
    help="Class codes of the test instances (to report test metrics).",
)
@click.option(
    "--checkpoint-dir",
    type=click.Path(file_okay=False),
    help="Write a checkpoint after every epoch.",
)
@click.option("--resume", is_flag=True, help="Continue from the checkpoint in --checkpoint-dir.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--list", "list_", is_flag=True, help="List the methods and exit.")
def learn(
    data: str | None,
    method: str | None,
    params: tuple[str, ...],
    output: str | None,
    root: str | None,
    features: str | None,
    valid_features: str | None,
    valid_labels: str | None,
    test_features: str | None,
    test_labels: str | None,
    quiet: bool,
    list_: bool,
    **training: Any,
) -> None:
    """Train a classifier from the crowd annotations in DATA.

    DATA is a registry dataset name (e.g. labelme: its valid and test splits are used)
    or a crowd data file in any supported format whose tasks have features
    (features.npy of a peerannot folder, or --features).
    """
    from crowdlearn.cli.aggregate import _parse_params
    from crowdlearn.learning import LEARNERS, make_learner

    if list_:
        for name, entry in sorted(LEARNERS.items()):
            click.echo(f"{name:14s} {entry.description}")
        return
    if data is None or method is None or output is None:
        raise click.UsageError("DATA, --method and --output are required (or use --list)")
    names = {"epochs": "max_epochs", "seed": "random_state"}
    overrides = {names.get(k, k): v for k, v in training.items() if v not in (None, ())}
    if "hidden" in overrides:
        overrides["hidden"] = tuple(overrides["hidden"])
    model = make_learner(method, **_parse_params(params), **overrides)
    model.set_params(progress=False if quiet else "auto")
    crowd, valid, test = _source(data, root, features)
    valid = _pair(valid_features, valid_labels, "valid") or valid
    test = _pair(test_features, test_labels, "test") or test
    if valid is not None and valid[1] is None:
        raise CrowdDataError("validation needs labels: pass --valid-labels")
    model.fit(crowd, valid=valid)
    folder = Path(output)
    folder.mkdir(parents=True, exist_ok=True)
    model.save(folder / "model.pt")
    outputs = learning_outputs(model, crowd, test)
    with atomic_open(folder / "history.csv") as handle:
        outputs["history"].to_csv(handle, index=False)
    if "predictions" in outputs:
        with atomic_open(folder / "predictions.csv") as handle:
            outputs["predictions"].to_csv(handle, index=False)
    for name in ("summary", "confusions"):
        if name in outputs:
            with atomic_open(folder / f"{name}.json") as handle:
                json.dump(outputs[name], handle, indent=1)
    summary = outputs["summary"]
    scores = "".join(
        f", {key} {summary[key]:.4f}"
        for key in ("test_accuracy", "test_macro_f1")
        if key in summary
    )
    click.echo(f"{method}: {crowd} -> {folder} (best epoch {summary['best_epoch']}{scores})")
