"""``crowdlearn learn``: train a classifier from crowd annotations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from crowdlearn._atomic import atomic_open
from crowdlearn._lazy import lazy_module
from crowdlearn.cli._app import cli, without_timings
from crowdlearn.cli._numbers import number
from crowdlearn.cli._output import Outputs
from crowdlearn.cli._raw_items import check_combination, chosen_source, make_featurizer, raw_items
from crowdlearn.cli._reading import input_paths, reading_options
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
    if file.suffix == ".npz":
        return _load_npz(file)
    delimiter = "," if file.suffix == ".csv" else None
    try:
        return np.loadtxt(file, delimiter=delimiter, ndmin=1)
    except ValueError as error:
        raise CrowdDataError(f"{path}: not a numeric array ({error})") from None


def _load_npz(file: Path) -> np.ndarray:
    """A scipy sparse matrix saved with ``scipy.sparse.save_npz`` (made dense: the
    learners take dense features), or the one array of an ``np.savez`` archive."""
    import zipfile

    import scipy.sparse as sp

    from crowdlearn.data._memory import array_bytes, check_allocation

    try:
        with np.load(file, allow_pickle=False) as archive:
            names = list(archive.files)
            if "format" in names and "shape" in names:  # scipy.sparse.save_npz
                shape = tuple(int(n) for n in archive["shape"])
                check_allocation(array_bytes(shape, 4), f"dense features of shape {shape}")
                return sp.load_npz(file).toarray().astype(np.float32, copy=False)
            if len(names) != 1:
                raise CrowdDataError(
                    f"{file}: an .npz archive of {len(names)} arrays ({', '.join(names)}); "
                    "save the features as one array (.npy, or np.savez with one array)"
                )
            return archive[names[0]]
    except (zipfile.BadZipFile, ValueError, OSError) as error:
        if isinstance(error, CrowdDataError):
            raise
        raise CrowdDataError(f"{file}: not a readable .npz file ({error})") from None


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


def _source(
    data: str, root: str | None, features: str | None, duplicates: str = "error"
) -> tuple[CrowdData, Any, Any]:
    """Training data, validation pair and test pair from a registry name or a file."""
    from crowdlearn import datasets
    from crowdlearn.io import detect_format, read

    if data in datasets.list():
        dataset = datasets.load(data, root=root)
        if dataset.train is None:
            raise CrowdDataError(f"dataset {data!r} has no crowd annotations to learn from")
        train = dataset.train if features is None else _with_features(dataset.train, features)
        return train, dataset.valid, dataset.test
    options = {} if detect_format(data) == "matrix" else {"duplicates": duplicates}
    crowd = read(data, **options)
    if features is not None:
        crowd = _with_features(crowd, features)
    return crowd, None, None


def _registry_names() -> list[str]:
    from crowdlearn import datasets

    return datasets.list()


def _pair(features: str | None, labels: str | None, what: str) -> tuple[Any, Any] | None:
    if features is None:
        if labels is not None:
            raise CrowdDataError(f"--{what}-labels needs --{what}-features")
        return None
    X = _load_array(features)
    y = None if labels is None else _load_array(labels).astype(np.int64)
    return X, y


#: The keywords of ``--valid`` (anything else is a features file).
VALID_MODES = ("crowd", "none", "split")


def _valid_mode(valid: str | None, valid_features: str | None, valid_labels: str | None) -> str:
    """``crowd``, ``none``, ``split`` or the path of a validation features file, from
    ``--valid`` and its older spelling ``--valid-features`` (checked, before any data
    is read)."""
    if valid_features is not None:
        if valid is not None and valid != valid_features:
            raise CrowdDataError(
                f"--valid {valid} conflicts with --valid-features {valid_features}: "
                "give one of them (--valid FILE is the same as --valid-features FILE)"
            )
        valid = valid_features
    mode = "crowd" if valid is None else valid
    if mode in VALID_MODES:
        if valid_labels is not None:
            raise CrowdDataError(
                f"--valid-labels needs --valid FILE (or --valid-features FILE), not --valid {mode}"
            )
        return mode
    if not Path(mode).is_file():
        raise CrowdDataError(
            f"--valid {mode}: use crowd, none, split or an existing validation features file"
        )
    if valid_labels is None:
        raise CrowdDataError(f"--valid {mode}: validation instances need --valid-labels")
    return mode


def _parse_search(specs: tuple[str, ...]) -> dict[str, list[str]]:
    """``--search "lr=1e-3,1e-2"`` options as a grid: name -> values (text, converted
    like ``--param`` when the learner is built)."""
    grid: dict[str, list[str]] = {}
    for spec in specs:
        key, sep, values = spec.partition("=")
        key = key.strip()
        options = [v.strip() for v in values.split(",")]
        if not sep or not key or not all(options):
            raise CrowdDataError(
                f"--search expects NAME=V1,V2,..., got {spec!r} (a tuple value is written 128/64)"
            )
        if key in grid:
            raise CrowdDataError(f"--search {key}: given twice; list its values once")
        grid[key] = options
    return grid


def _check_device(device: str | None) -> None:
    """Refuse a device string torch does not know, or a device this machine lacks,
    before any data is read (torch would fail only when the model is built)."""
    if device is None or device == "auto":
        return
    import torch

    try:
        parsed = torch.device(device)
    except (RuntimeError, ValueError):
        raise CrowdDataError(
            f"--device {device}: not a device name; use auto, cpu, cuda or cuda:N"
        ) from None
    if parsed.type == "cuda":
        if not torch.cuda.is_available():
            raise CrowdDataError(
                f"--device {device}: no CUDA GPU is available here; use --device cpu or auto"
            )
        if parsed.index is not None and parsed.index >= torch.cuda.device_count():
            raise CrowdDataError(
                f"--device {device}: this machine has {torch.cuda.device_count()} CUDA "
                "device(s), numbered from 0"
            )
    elif parsed.type == "mps":
        if not torch.backends.mps.is_available():
            raise CrowdDataError(f"--device {device}: MPS is not available here")
    elif parsed.type != "cpu":
        raise CrowdDataError(f"--device {device}: use auto, cpu, cuda or cuda:N")


def _check_codes(y: Any, n_classes: int, option: str) -> None:
    """Refuse label codes outside the classes the training data has."""
    if y is None:
        return
    bad = np.unique(y[(y < 0) | (y >= n_classes)])
    if len(bad):
        shown = ", ".join(str(v) for v in bad[:5].tolist())
        raise CrowdDataError(
            f"{option}: class code(s) {shown} not among the training data's {n_classes} "
            f"classes (codes 0..{n_classes - 1})"
        )


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
            "validation": getattr(model, "validation_", "none"),
            "selected_epoch": _int_or_none(getattr(model, "selected_epoch_", None)),
            "fold_epochs": getattr(model, "fold_epochs_", None),
            "selection_score": _float_or_none(getattr(model, "selection_score_", None)),
            "temperature": float(getattr(model, "temperature_", 1.0)),
            "temperatures": getattr(model, "temperatures_", None),
            "standardized": getattr(model, "scaler_", None) is not None,
            "featurizer": repr(getattr(model, "featurizer_", None)),
        },
        "history": without_timings(model.history_),
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


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)


@cli.command()
@reading_options
@click.argument("data", required=False)
@click.option(
    "-s",
    "-m",
    "--method",
    help="Method, e.g. crowdlayer, 'crowdlayer[variant=VW]', "
    "ds+nn, 'twostage[aggregator=glad,soft=true]' (see --list; --kind spans --list for "
    "the taggers).",
)
@click.option(
    "--kind",
    type=click.Choice(["class", "spans"]),
    default="class",
    show_default=True,
    help="What one answer is: a class, or spans in a text (spans: a BiLSTM-CRF tagger "
    "trained on the crowd's tags; DATA e.g. a folder of per-worker CoNLL files).",
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
    help="Output folder: model.pt, history.csv, summary.json, confusions.json, "
    "predictions.csv (and search.csv with --search).",
)
@click.option("--backbone", type=click.Choice(["mlp", "cnn"]), help="Classifier network.")
@click.option(
    "--hidden", type=number("--hidden"), multiple=True, help="Hidden units (repeat for layers)."
)
@click.option(
    "--epochs", type=number("--epochs"), help="Training epochs (EM iterations for EM methods)."
)
@click.option("--batch-size", type=number("--batch-size"), help="Tasks per mini-batch.")
@click.option("--lr", type=number("--lr"), help="Learning rate.")
@click.option("--weight-decay", type=number("--weight-decay"), help="Weight decay.")
@click.option("--dropout", type=number("--dropout"), help="Dropout rate.")
@click.option("--device", help="auto, cpu, cuda, cuda:1...")
@click.option("--seed", type=number("--seed"), help="Random seed.")
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
@click.option(
    "--text-column",
    metavar="COLUMN",
    help="Train on raw texts: the column of DATA (a long file) holding each task's text "
    "(the rows of a task must agree); featurised by TF-IDF, saved with the model.",
)
@click.option(
    "--texts",
    type=click.Path(exists=True, dir_okay=False),
    help="Train on raw texts from a CSV/Parquet table of task id and text (columns "
    "task,text, else the first two).",
)
@click.option(
    "--image-column",
    metavar="COLUMN",
    help="Train on images: the column of DATA holding each task's image path, relative "
    "to DATA's folder (read in batches; backbone cnn unless --backbone).",
)
@click.option(
    "--images",
    type=click.Path(exists=True, file_okay=False),
    help="Train on images: a folder with one image per task, named by the task id "
    "(FOLDER/<task>.png, .jpg...).",
)
@click.option(
    "--max-features",
    type=number("--max-features"),
    help="With texts: TF-IDF vocabulary size (default 5000; word uni- and bigrams).",
)
@click.option(
    "--svd-components",
    type=number("--svd-components"),
    help="With texts: reduce the TF-IDF vectors to this many dimensions (truncated SVD).",
)
@click.option(
    "--text-model",
    metavar="NAME",
    help="With texts: embed them with this sentence-transformers model instead of TF-IDF "
    "(needs the optional extra: pip install 'crowdlearn[text]').",
)
@click.option(
    "--image-size",
    type=number("--image-size"),
    help="With images: resize every image to SIZE x SIZE pixels (default 32).",
)
@click.option(
    "--valid",
    metavar="crowd|none|split|FILE",
    help="How the epoch is chosen. crowd (the default, as in the Python API): on "
    "held-out annotated tasks (each of --crowd-folds folds in turn), by the classifier's "
    "agreement with Dawid-Skene there, no truth needed; none: keep the last epoch; "
    "split: the registry dataset's validation split (no longer used unless asked for); "
    "FILE: validation features, labelled by --valid-labels.",
)
@click.option(
    "--valid-features",
    type=click.Path(exists=True, dir_okay=False),
    help="Same as --valid FILE.",
)
@click.option(
    "--valid-labels",
    type=click.Path(exists=True, dir_okay=False),
    help="Class codes of the validation instances of --valid FILE.",
)
@click.option(
    "--valid-share",
    type=number("--valid-share"),
    help="With --valid crowd and --crowd-folds 1: the share of the annotated tasks held "
    "out (default 0.2).",
)
@click.option(
    "--crowd-folds",
    type=number("--crowd-folds"),
    help="With --valid crowd: cross-fit K classifiers, each trained on the other folds "
    "of the annotated tasks with its epoch chosen on its own fold, and average them "
    "(default 5; 1: one held-out share, --valid-share, then a refit).",
)
@click.option(
    "--refit/--no-refit",
    default=None,
    help="With --valid crowd and --crowd-folds 1: train again on every task for the "
    "selected number of epochs (default: the method's default).",
)
@click.option(
    "--calibrate/--no-calibrate",
    default=None,
    help="Temperature scaling of the probabilities on the validation data (default: on).",
)
@click.option(
    "--standardize",
    type=click.Choice(["auto", "yes", "no"]),
    help="Standardise the features (auto: flat feature vectors, not images).",
)
@click.option(
    "--search",
    "search_specs",
    multiple=True,
    metavar="K=V1,V2",
    help="Grid search (repeatable): fit every combination, keep the best by the "
    "validation score and write search.csv; values are read like --param "
    "(e.g. --search lr=1e-3,1e-2 --search weight_decay=0,1e-4).",
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
@click.option(
    "--duplicates",
    type=click.Choice(["error", "keep", "first", "last"]),
    default="error",
    show_default=True,
    help="What to do with repeated (task, worker) pairs in DATA.",
)
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--overwrite", is_flag=True, help="Replace an existing output folder (as a whole).")
@click.option("--list", "list_", is_flag=True, help="List the methods and exit.")
def learn(
    data: str | None,
    method: str | None,
    params: tuple[str, ...],
    output: str | None,
    root: str | None,
    features: str | None,
    valid: str | None,
    valid_features: str | None,
    valid_labels: str | None,
    search_specs: tuple[str, ...],
    test_features: str | None,
    test_labels: str | None,
    duplicates: str,
    quiet: bool,
    overwrite: bool,
    list_: bool,
    text_column: str | None,
    texts: str | None,
    image_column: str | None,
    images: str | None,
    max_features: int | None,
    svd_components: int | None,
    text_model: str | None,
    image_size: int | None,
    kind: str = "class",
    **training: Any,
) -> None:
    """Train a classifier from the crowd annotations in DATA.

    DATA is a registry dataset name (e.g. labelme: its test split is scored) or a crowd
    data file in any supported format whose tasks have features (features.npy of a
    peerannot folder, or --features), or raw items: each task's text (--text-column,
    --texts) or image (--image-column, --images), featurised and saved with the model.

    The epoch is chosen without ground truth by default (--valid crowd); a registry
    dataset's validation split is used only with --valid split.
    """
    from crowdlearn.cli.aggregate import _parse_params
    from crowdlearn.learning import LEARNERS, make_learner

    if list_:
        if kind == "spans":
            from crowdlearn.cli.learn_spans import list_span_methods

            list_span_methods()
            return
        for name, entry in sorted(LEARNERS.items()):
            click.echo(f"{name:14s} {entry.description}")
        return
    if data is None or method is None or output is None:
        raise click.UsageError("DATA, --method and --output are required (or use --list)")
    if kind == "spans":
        from crowdlearn.cli.learn_spans import TRAINING_NAMES, learn_spans

        ignored = {
            f"--{k.replace('_', '-')}": v for k, v in training.items() if k not in TRAINING_NAMES
        }
        ignored.update({
            "--features": features, "--valid": valid, "--valid-features": valid_features,
            "--valid-labels": valid_labels, "--search": search_specs,
            "--test-features": test_features, "--test-labels": test_labels,
            "--text-column": text_column, "--texts": texts, "--image-column": image_column,
            "--images": images, "--max-features": max_features,
            "--svd-components": svd_components, "--text-model": text_model,
            "--image-size": image_size, "--root": root,
        })  # fmt: skip
        _check_device(training.get("device"))
        learn_spans(
            data, method, params, output, overwrite, duplicates,
            {k: v for k, v in training.items() if k in TRAINING_NAMES}, ignored,
        )  # fmt: skip
        return
    _check_device(training.get("device"))
    raw = chosen_source(features, text_column, texts, image_column, images)
    raw_value = {
        "--text-column": text_column,
        "--texts": texts,
        "--image-column": image_column,
        "--images": images,
    }.get(raw or "")
    featurizer = None
    if raw is not None:
        featurizer = make_featurizer(
            raw, max_features, svd_components, text_model, image_size, training.get("seed")
        )
        if raw in ("--image-column", "--images") and training.get("backbone") is None:
            training["backbone"] = "cnn"
    elif (max_features, svd_components, text_model, image_size) != (None,) * 4:
        raise CrowdDataError(
            "--max-features, --svd-components, --text-model and --image-size need raw items "
            "(--text-column, --texts, --image-column or --images)"
        )
    names = {"epochs": "max_epochs", "seed": "random_state"}
    overrides = {names.get(k, k): v for k, v in training.items() if v not in (None, ())}
    if "hidden" in overrides:
        overrides["hidden"] = tuple(overrides["hidden"])
    if "standardize" in overrides:
        overrides["standardize"] = {"yes": True, "no": False}.get(
            overrides["standardize"], overrides["standardize"]
        )
    fixed = {**_parse_params(params), **overrides}
    model = make_learner(method, **fixed)
    model.set_params(progress=False if quiet else "auto")
    if valid_labels is not None and valid is None and valid_features is None:
        raise CrowdDataError("--valid-labels needs --valid FILE (or --valid-features FILE)")
    mode = _valid_mode(valid, valid_features, valid_labels)
    grid = _parse_search(search_specs)
    if grid:
        _check_grid(method, grid, fixed, mode)
    registry = data in _registry_names()
    if raw is not None:
        check_combination(raw, data, registry, mode, test_features)
    reads = [
        *(input_paths(data, root) if registry else [data]),
        features,
        texts,
        images,
        None if mode in VALID_MODES else mode,
        valid_labels,
        test_features,
        test_labels,
        training.get("checkpoint_dir") if training.get("resume") else None,
    ]
    outputs = Outputs(overwrite, reads=reads)
    out = outputs.folder(output)
    if test_labels is not None and test_features is None:
        raise CrowdDataError("--test-labels needs --test-features")
    if mode == "split" and not registry:
        raise CrowdDataError(
            f"--valid split needs a registry dataset with a validation split; {data} is a "
            "file (use --valid crowd, or --valid FILE --valid-labels LABELS)"
        )
    crowd, split, test = _source(data, root, features, duplicates)
    if raw is not None:
        items = raw_items(raw, raw_value, data, crowd)
        featurizer.fit(items)
        made = featurizer.transform(items)
        crowd = (
            crowd.with_features(made) if isinstance(made, np.ndarray) else crowd.with_inputs(made)
        )
    test = _pair(test_features, test_labels, "test") or test
    chosen: Any
    if mode == "split":
        if split is None:
            raise CrowdDataError(
                f"--valid split: dataset {data!r} has no validation split (use --valid crowd)"
            )
        chosen = split
    elif mode in VALID_MODES:
        chosen = None if mode == "none" else mode
    else:
        chosen = _pair(mode, valid_labels, "valid")
        _check_codes(chosen[1], crowd.n_classes, f"--valid-labels {valid_labels}")
    if test_labels is not None:
        _check_codes(test[1], crowd.n_classes, f"--test-labels {test_labels}")
    found = None
    if grid:
        from crowdlearn.learning import search

        found = search(
            method, grid, crowd, valid=chosen, progress=False if quiet else "auto", **fixed
        )
        model = found.best_learner
    else:
        model.fit(crowd, valid=chosen)
    if featurizer is not None:
        model.featurizer_ = featurizer
    from crowdlearn.learning._model_file import training_summary

    summary = getattr(model, "training_summary_", None) or training_summary(crowd)
    source = _source_name(data, registry, features, raw, raw_value)
    model.training_summary_ = {**summary, "source": source}
    results = learning_outputs(model, crowd, test)
    with outputs:
        folder = out.staged
        model.save(folder / "model.pt")
        with atomic_open(folder / "history.csv") as handle:
            results["history"].to_csv(handle, index=False)
        if found is not None:
            with atomic_open(folder / "search.csv") as handle:
                without_timings(found.results).to_csv(handle, index=False)
        if "predictions" in results:
            with atomic_open(folder / "predictions.csv") as handle:
                results["predictions"].to_csv(handle, index=False)
        for name in ("summary", "confusions"):
            if name in results:
                with atomic_open(folder / f"{name}.json") as handle:
                    json.dump(results[name], handle, indent=1)
    folder = Path(output)
    summary = results["summary"]
    scores = "".join(
        f", {key} {summary[key]:.4f}"
        for key in ("test_accuracy", "test_macro_f1")
        if key in summary
    )
    if found is not None:
        best = ", ".join(f"{k}={v}" for k, v in found.best_params.items())
        scores = f", best of {len(found.results)}: {best}" + scores
    click.echo(f"{method}: {crowd} -> {folder} (best epoch {summary['best_epoch']}{scores})")


def _source_name(
    data: str, registry: bool, features: str | None, raw: str | None, raw_value: str | None
) -> str:
    """The training data as the model file's metadata names it: the registry dataset or
    the file's name, with the features or raw items' file where they came apart."""
    name = data if registry else Path(data).name
    if features is not None:
        return f"{name} (features {Path(features).name})"
    if raw in ("--texts", "--images"):
        return f"{name} ({raw[2:]} {Path(str(raw_value)).name})"
    if raw is not None:
        return f"{name} ({raw[2:]} {raw_value})"
    return name


def _check_grid(method: str, grid: dict[str, list[str]], fixed: dict[str, Any], mode: str) -> None:
    """Refuse a --search that cannot run, before any data is read: no selection
    criterion, a parameter also fixed, or a parameter or value the method refuses."""
    from crowdlearn.learning import make_learner
    from crowdlearn.learning.search import RESERVED, SPLIT_PARAMS, expand_grid

    if mode == "none":
        raise CrowdDataError(
            "--search needs a selection criterion: --valid crowd, split or FILE, not none"
        )
    for name in grid:
        if name in fixed:
            raise CrowdDataError(f"--search {name}: also given as a fixed parameter")
        if name in RESERVED or (mode == "crowd" and name in SPLIT_PARAMS):
            raise CrowdDataError(
                f"--search {name}: not searchable here (refit applies to the best model; "
                "with --valid crowd the seed and share choose the held-out tasks)"
            )
    for name, values in grid.items():  # name the option of a bad parameter or value
        for value in values:
            try:
                make_learner(method, **fixed, **{name: value})
            except CrowdDataError as error:
                raise CrowdDataError(f"--search {name}: {error}") from None
    for point in expand_grid(grid):  # combinations the method refuses
        make_learner(method, **fixed, **point)
