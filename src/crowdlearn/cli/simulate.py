"""``crowdlearn simulate``: reproducible simulated crowds written to disk."""

from __future__ import annotations

import functools
import inspect
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from crowdlearn._atomic import atomic_open, atomic_path
from crowdlearn._lazy import lazy_module
from crowdlearn.cli._app import cli
from crowdlearn.cli._numbers import number
from crowdlearn.cli._output import Outputs
from crowdlearn.data import CrowdDataError

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
else:
    # imported on first use: `crowdlearn --help` must not load them
    np = lazy_module("numpy")
    pd = lazy_module("pandas")

FEATURE_STRATEGY = "crowd-on-features"
STRATEGY_NAMES = (
    "independent-confusion",
    "hammer-spammer",
    "student-teacher",
    "discrete-difficulty",
    "cmm-gaussians",
    FEATURE_STRATEGY,
    "label-sets",
    "ratings",
    "comparisons",
    "spans",
)
#: Options of the spans simulator only (``crowdlearn simulate spans``), by parameter.
SPAN_OPTIONS = ("miss", "boundary", "type_confusion", "false_spans")
#: The simulators of the other answer kinds, and the long file each writes.
KIND_FILES = {
    "label-sets": "label_sets.csv",
    "ratings": "ratings.csv",
    "comparisons": "comparisons.csv",
}
OUTPUT_FILES = {"parquet": "annotations.parquet", "csv": "annotations.csv"}
#: --n-worker is the number of workers everywhere; some simulators name it differently.
WORKER_OPTION_NAMES = {
    "cmm-gaussians": {"n_worker": "n_annotators"},
    FEATURE_STRATEGY: {"n_worker": "n_workers"},
}


def _parse_groups(text: str | None) -> dict[str, float] | None:
    """``expert=0.2,spammer=0.8`` -> {"expert": 0.2, "spammer": 0.8}."""
    if text is None:
        return None
    groups = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        try:
            groups[name.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep:
            raise CrowdDataError(f"--groups expects name=proportion pairs, got {part!r}")
    return groups


def _feature_source(name: str, root: str | None) -> tuple[np.ndarray, np.ndarray]:
    """Features and labels to simulate a crowd on: sklearn's digits or a registry dataset."""
    if name == "digits":
        from sklearn.datasets import load_digits

        return load_digits(return_X_y=True)
    from crowdlearn import datasets as registry

    dataset = registry.load(name, root=root)
    if dataset.pool is not None:
        return dataset.pool
    if dataset.train is None or dataset.train.features is None or dataset.train.truth is None:
        raise CrowdDataError(f"dataset {name!r} has no features with known labels")
    return dataset.train.features, dataset.train.truth


def _call_with(function: Any, options: dict[str, Any], strategy: str) -> Any:
    """Call a simulator with the options the user set, refusing ones it does not take."""
    accepted = inspect.signature(function).parameters
    given = {k: v for k, v in options.items() if v is not None}
    unknown = [k for k in given if k not in accepted]
    if unknown:
        flags = ", ".join("--" + k.replace("_", "-") for k in unknown)
        raise CrowdDataError(f"{flags}: not an option of strategy {strategy!r}")
    return function(**given, return_info=True)


def _write_outputs(data: Any, info: Any, folder: Path, output_format: str, strategy: str) -> None:
    from crowdlearn.io import write

    if output_format == "peerannot":
        write(data, folder, format="peerannot")
    else:
        write(data, folder / OUTPUT_FILES[output_format], format=output_format)
    if output_format == "csv" and data.features is not None:
        click.echo(
            "crowdlearn: note: CSV holds no features; use --format parquet or peerannot "
            "to keep them",
            err=True,
        )
    with atomic_path(folder / "matrices.npy") as tmp, open(tmp, "wb") as handle:
        np.save(handle, info.confusions)
    details = {
        "strategy": strategy,
        "params": {k: v for k, v in info.params.items() if _is_json(v)},
        "worker_group": None if info.worker_group is None else list(map(str, info.worker_group)),
        "task_difficulty": None
        if info.task_difficulty is None
        else list(map(str, info.task_difficulty)),
    }
    with atomic_open(folder / "simulation.json") as handle:
        json.dump(details, handle, indent=1)


def _simulate_kind(strategy: str, seed: int, options: dict[str, Any]) -> Any:
    """A simulated crowd of label sets, ratings or comparisons from the shared options."""
    from crowdlearn import simulate as simulators

    given = {k: v for k, v in options.items() if v is not None}
    n_tasks, n_workers = given.get("n_task"), given.get("n_worker")
    if strategy == "label-sets":
        kwargs = {"n_tasks": n_tasks, "n_workers": n_workers, "n_classes": given.get("n_classes"),
                  "labels_per_task": given.get("feedback")}  # fmt: skip
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        return simulators.simulate_label_sets(**kwargs, random_state=seed)
    if strategy == "ratings":
        kwargs = {"n_tasks": n_tasks, "n_workers": n_workers, "per_task": given.get("feedback"),
                  "levels": given.get("n_classes")}  # fmt: skip
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        return simulators.simulate_ratings(**kwargs, random_state=seed)
    n_items = n_tasks or 100
    scores = np.random.default_rng(seed).normal(size=n_items)
    return simulators.simulate_comparisons(
        scores, given.get("n_comparisons", 20 * n_items), n_workers or 20, random_state=seed
    )


def _simulate_spans(
    outputs: Outputs, out: Any, output: str, seed: int, options: dict[str, Any]
) -> None:
    """``simulate spans``: a span crowd written as per-worker CoNLL folders."""
    from crowdlearn.io.conll_writer import write_conll_folders
    from crowdlearn.simulate.spans import simulate_spans

    names = {"n_task": "n_tasks", "n_worker": "n_workers", "feedback": "per_task",
             "n_classes": "n_labels", "ratio": "poor", **{k: k for k in SPAN_OPTIONS}}  # fmt: skip
    given = {k: v for k, v in options.items() if v is not None}
    unknown = [k for k in given if k not in names]
    if unknown:
        flags = ", ".join("--" + k.replace("_", "-") for k in unknown)
        raise CrowdDataError(f"{flags}: not an option of strategy 'spans'")
    kwargs = {names[k]: v for k, v in given.items()}
    if kwargs.get("per_task", 5) > kwargs.get("n_workers", 20):
        raise CrowdDataError(
            f"--feedback {kwargs.get('per_task', 5)} exceeds --n-worker "
            f"{kwargs.get('n_workers', 20)}: a document's workers are distinct"
        )
    try:
        data, info = simulate_spans(**kwargs, random_state=seed, return_info=True)
    except ValueError as error:  # named by the command line's flags
        message = str(error)
        for flag, name in names.items():
            message = message.replace(name, "--" + flag.replace("_", "-"))
        raise CrowdDataError(message) from None
    details = {
        "strategy": "spans",
        "params": {**kwargs, "seed": seed},
        "workers": {
            str(w): {k: _plain(info[k][i]) for k in (*SPAN_OPTIONS, "poor")}
            for i, w in enumerate(data.worker_ids.tolist())
        },
    }
    with outputs:
        write_conll_folders(data, out.staged, breaks=info["sentence_starts"])
        with atomic_open(out.staged / "simulation.json") as handle:
            json.dump(details, handle, indent=1)
    click.echo(f"spans: {data} -> {output}: mturk_train_data/, ground_truth/, simulation.json")


def _kind_frame(data: Any) -> Any:
    """The long table of a simulated kind, with its truth (a column, or truth.csv's)."""
    frame = data.to_frame()
    if data.kind == "comparison":
        return frame
    if data.kind == "multilabel":
        frame["label"] = [json.dumps([_plain(c) for c in s]) for s in frame["label"]]
        truth = [json.dumps([_plain(c) for c in data.classes[row == 1]]) for row in data.truth]
    else:
        truth = data.truth if data.levels is None else data.levels[data.truth.astype(int)]
    frame["truth"] = np.asarray(truth, dtype=object)[data.task]
    return frame


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value)
    except TypeError:
        return False
    return True


@cli.command()
@click.argument("strategy", type=click.Choice(STRATEGY_NAMES))
@click.option(
    "-o", "--output", required=True, type=click.Path(file_okay=False), help="Output folder."
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["peerannot", "parquet", "csv"]),
    default="peerannot",
    show_default=True,
    help="peerannot: answers.json + metadata.json + ground_truth.npy; parquet/csv: "
    "annotations.parquet/.csv with a truth column.",
)
@click.option("--seed", type=number("--seed"), default=0, show_default=True, help="Random seed.")
@click.option("--n-worker", type=number("--n-worker"), help="Number of workers (annotators).")
@click.option("--n-task", type=number("--n-task"), help="Number of tasks.")
@click.option("--n-classes", "-K", type=number("--n-classes"), help="Number of classes.")
@click.option("--feedback", type=number("--feedback"), help="Labels per task.")
@click.option("--workerload", type=number("--workerload"), help="Upper bound on tasks per worker.")
@click.option(
    "--imbalance-votes",
    is_flag=True,
    default=None,
    help="Draw each task's number of labels uniformly in 1..feedback.",
)
@click.option(
    "--ratio",
    type=number("--ratio"),
    help="Share of spammers (hammer-spammer), students (student-teacher) or good "
    "workers (discrete-difficulty).",
)
@click.option(
    "--ratio-diff",
    type=number("--ratio-diff"),
    help="Ratio of easy to hard tasks (discrete-difficulty).",
)
@click.option(
    "--random",
    type=number("--random"),
    help="Probability of an unanswerable task (discrete-difficulty).",
)
@click.option(
    "--n-per-class", type=number("--n-per-class"), help="Points per class (cmm-gaussians)."
)
@click.option(
    "--mean-labels", type=number("--mean-labels"), help="Mean labels per point (cmm-gaussians)."
)
@click.option(
    "--dataset",
    default="digits",
    show_default=True,
    help="Features to label (crowd-on-features): 'digits' or a registry dataset with features.",
)
@click.option("--root", type=click.Path(file_okay=False), help="Dataset directory for --dataset.")
@click.option(
    "--groups",
    help="Worker groups and shares (crowd-on-features), e.g. expert=0.2,inexpert=0.5,spammer=0.3.",
)
@click.option(
    "--labels-per-task",
    type=number("--labels-per-task"),
    help="Labels per task (crowd-on-features).",
)
@click.option("--poisson", is_flag=True, help="Labels per task are 1 + Poisson(mean - 1).")
@click.option("--load-skew", type=number("--load-skew"), help="Power-law exponent of worker load.")
@click.option(
    "--imbalance-ratio",
    type=number("--imbalance-ratio"),
    help="Subsample classes to this largest/smallest size ratio.",
)
@click.option(
    "--n-comparisons",
    type=number("--n-comparisons"),
    help="comparisons: how many pairs to judge (default 20 per item).",
)
@click.option("--miss", type=number("--miss"), help="spans: every worker's miss rate.")
@click.option(
    "--boundary", type=number("--boundary"), help="spans: every worker's boundary error rate."
)
@click.option(
    "--type-confusion",
    type=number("--type-confusion"),
    help="spans: every worker's type confusion rate.",
)
@click.option(
    "--false-spans",
    type=number("--false-spans"),
    help="spans: every worker's mean false spans per sentence.",
)
@click.option("--overwrite", is_flag=True, help="Replace an existing output folder (as a whole).")
def simulate(
    strategy: str,
    output: str,
    output_format: str,
    seed: int,
    dataset: str,
    root: str | None,
    groups: str | None,
    poisson: bool,
    overwrite: bool,
    **options: Any,
) -> None:
    """Simulate a crowd with STRATEGY and write it to the output folder.

    Strategies follow peerannot (independent-confusion, hammer-spammer, student-teacher,
    discrete-difficulty) and the CMM paper's Setup (1) (cmm-gaussians);
    crowd-on-features labels real features with groups of simulated workers. Also
    written: matrices.npy (the confusion matrix of each worker) and simulation.json
    (parameters, worker groups, task difficulties).

    The other answer kinds write one long CSV file with a truth column: label-sets
    (label_sets.csv, sets as JSON lists; see crowdlearn.simulate.simulate_label_sets),
    ratings (ratings.csv; simulate_ratings) and comparisons (comparisons.csv in
    crowd-kit's layout, --n-task items with standard normal true scores, truth.csv; see
    simulate_comparisons for the worker mix).

    spans writes per-worker CoNLL folders (mturk_train_data/WORKER/DOC.txt and the true
    tags in ground_truth/DOC.txt, NER-MTurk's layout, read back by --kind spans) and
    simulation.json (each worker's rates): --n-task documents, --n-worker workers,
    --feedback workers per document, --n-classes entity types, --ratio the share of poor
    workers; --miss, --boundary, --type-confusion and --false-spans fix a rate for every
    worker (poor workers' times 3) instead of drawing it (see
    crowdlearn.simulate.simulate_spans).
    """
    from crowdlearn import simulate as simulators

    span_options = {k: options.pop(k) for k in SPAN_OPTIONS}
    if strategy != "spans":
        given = [k for k, v in span_options.items() if v is not None]
        if given:
            flags = ", ".join("--" + k.replace("_", "-") for k in given)
            raise CrowdDataError(f"{flags}: not an option of strategy {strategy!r}")
    outputs = Outputs(overwrite)
    out = outputs.folder(output)
    if strategy == "spans":
        _simulate_spans(outputs, out, output, seed, {**options, **span_options})
        return
    if strategy in KIND_FILES:
        data = _simulate_kind(strategy, seed, options)
        written = [KIND_FILES[strategy]]
        with outputs:
            with atomic_open(out.staged / KIND_FILES[strategy]) as handle:
                _kind_frame(data).to_csv(handle, index=False)
            if strategy == "comparisons":
                truth = pd.DataFrame({"item": data.item_ids, "score": data.truth})
                with atomic_open(out.staged / "truth.csv") as handle:
                    truth.to_csv(handle, index=False)
                written.append("truth.csv")
        click.echo(f"{strategy}: {data} -> {output}: {', '.join(written)}")
        return
    options.pop("n_comparisons", None)
    options["seed"] = seed
    for old, new in WORKER_OPTION_NAMES.get(strategy, {}).items():
        options[new] = options.pop(old)
    if strategy == FEATURE_STRATEGY:
        features, labels = _feature_source(dataset, root)
        options["groups"] = _parse_groups(groups)
        options["labels_per_task_dist"] = "poisson" if poisson else None
        function = functools.partial(simulators.crowd_on_features, features, labels)
    else:
        function = simulators.STRATEGIES[strategy]
    data, info = _call_with(function, options, strategy)
    with outputs:
        _write_outputs(data, info, out.staged, output_format, strategy)
    click.echo(f"{strategy}: {data} -> {output}")
