"""``crowdlearn identify``: task difficulty, worker reliability and agreement scores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

import crowdlearn.cli._kinds as _kinds
from crowdlearn._atomic import atomic_open
from crowdlearn._lazy import lazy_module
from crowdlearn.cli._app import cli
from crowdlearn.cli._kinds import kind_options
from crowdlearn.cli._numbers import number
from crowdlearn.cli._output import Outputs, inside, require_input
from crowdlearn.cli._reading import duplicates_option, input_paths, reading_options
from crowdlearn.data import CrowdDataError

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from crowdlearn.data import CrowdData
else:
    # imported on first use: `crowdlearn --help` must not load them
    np = lazy_module("numpy")
    pd = lazy_module("pandas")


def load_crowd(data: str, root: str | None = None, duplicates: str = "error") -> CrowdData:
    """A registry dataset's training crowd (e.g. ``labelme``) or a file in any format."""
    from crowdlearn import datasets
    from crowdlearn.io import detect_format, read

    if data in datasets.list():
        crowd = datasets.load(data, root=root).train
        if crowd is None:
            raise CrowdDataError(f"dataset {data!r} has no crowd annotations")
        return crowd
    from crowdlearn.io._files import is_batch_source

    if not is_batch_source(data):
        require_input(data)
    try:
        matrix = detect_format(data) == "matrix"
    except CrowdDataError:  # a platform export (.jsonl), or a batch: read() tells
        matrix = False
    return read(data, **({} if matrix else {"duplicates": duplicates}))


def _parse_prune(pairs: tuple[str, ...]) -> dict[str, float]:
    prune = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        try:
            fraction = float(value)
        except ValueError:
            fraction = -1.0
        if not sep or not 0 <= fraction < 1:
            raise CrowdDataError(
                f"--prune expects SCORE=FRACTION with 0 <= FRACTION < 1, got {pair!r}"
            )
        if name.strip() in prune:
            raise CrowdDataError(
                f"--prune {name.strip()} is given twice ({prune[name.strip()]:g} and "
                f"{fraction:g}); give each score once"
            )
        prune[name.strip()] = fraction
    return prune


def pruned_copy(data: CrowdData, frames: dict[str, Any], prune: dict[str, float]) -> CrowdData:
    """``data`` without the worst ``fraction`` of tasks / workers under each named score.

    Fractions apply to the original tasks and workers, each score on its own; task and
    worker codes are renumbered (ids are kept).
    """
    from crowdlearn.identify import SCORES, worst_codes

    keep = {"task": np.ones(data.n_tasks, bool), "worker": np.ones(data.n_workers, bool)}
    for name, fraction in prune.items():
        score = SCORES[name]
        values = frames[score.axis][name].to_numpy(dtype=np.float64)
        keep[score.axis][worst_codes(values, score.worst, fraction)] = False
    kept = data
    if not keep["worker"].all():
        kept = kept.restrict_to_workers(data.worker_ids[keep["worker"]])
    if not keep["task"].all():
        kept = kept.select_tasks(np.flatnonzero(keep["task"]))
    return kept


def _identify_kind(
    data: str,
    kind: str,
    output: str,
    overwrite: bool,
    sep: str | None,
    order: str | None,
    tie: str | None,
    duplicates: str,
) -> None:
    """Worker and task (item) scores of label sets, ratings or comparisons."""
    import importlib

    outputs = Outputs(overwrite, reads=[data])
    out = outputs.folder(output)
    answers = _kinds.read_answers(data, kind, sep, order, tie, duplicates)
    module = importlib.import_module(_kinds.PACKAGES[kind].replace(".aggregation.", ".identify."))
    workers = pd.DataFrame({"worker": answers.worker_ids, **module.worker_scores(answers)})
    tables = {"workers": workers}
    if kind == "comparison":
        item_scores = getattr(module, "item_scores", None)
        if item_scores is not None:
            tables["items"] = pd.DataFrame({"item": answers.item_ids, **item_scores(answers)})
    else:
        tables["tasks"] = pd.DataFrame({"task": answers.task_ids, **module.task_scores(answers)})
    summary = {
        "kind": kind,
        "n_workers": answers.n_workers,
        "n_annotations": answers.n_annotations,
        "worker_scores": [c for c in workers.columns if c != "worker"],
    }
    with outputs:
        for name, frame in tables.items():
            with atomic_open(out.staged / f"{name}.csv") as handle:
                frame.to_csv(handle, index=False)
        with atomic_open(out.staged / "summary.json") as handle:
            json.dump(summary, handle, indent=1)
    written = [f"{name}.csv" for name in tables] + ["summary.json"]
    click.echo(f"{_kinds.NOUNS[kind]}: {answers} -> {output}: {', '.join(written)}")


@cli.command()
@reading_options
@click.argument("data", type=click.Path(), required=False)
@click.option(
    "-s",
    "--score",
    "scores",
    multiple=True,
    help="Score to compute (repeatable); see --list.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False),
    help="Output folder: tasks.csv, workers.csv, agreement.json (and pruned data).",
)
@click.option(
    "--confusions",
    "confusion_model",
    type=click.Choice(["ds", "crowdlayer", "conal", "cmm"]),
    default="ds",
    show_default=True,
    help="Worker confusion model behind trace, spammer and waum.",
)
@click.option(
    "--prune",
    multiple=True,
    metavar="SCORE=FRACTION",
    help="Drop the worst FRACTION of tasks/workers under SCORE (repeatable), e.g. waum=0.1.",
)
@click.option(
    "--pruned-output",
    type=click.Path(dir_okay=False),
    help="Where to write the pruned data (any format by extension; default OUT/pruned.csv).",
)
@click.option(
    "--max-epochs",
    type=number("--max-epochs"),
    default=None,
    help="Epochs of the AUM/WAUM classifier.",
)
@click.option("--seed", type=number("--seed"), default=0, show_default=True, help="Random state.")
@click.option("--root", type=click.Path(), help="Datasets directory (registry names).")
@duplicates_option
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace an existing output folder and --pruned-output (each as a whole).",
)
@click.option(
    "--decision-margin",
    type=number("--decision-margin"),
    default=0.1,
    show_default=True,
    help="Classes: how much better than a constant answer a worker must be. The decision "
    "column of workers.csv is stop when the accuracy interval's upper end is below chance "
    "+ margin, keep when its lower end is at least that, else review.",
)
@click.option(
    "--decision-level",
    type=number("--decision-level"),
    default=0.95,
    show_default=True,
    help="Classes: confidence level of the workers' accuracy intervals.",
)
@click.option("--list", "list_", is_flag=True, help="List the scores and exit.")
@click.option("--quiet", is_flag=True, help="No progress bars.")
@click.option(
    "--consensus",
    metavar="NAME",
    help="--kind spans: the span aggregator whose spans the workers are scored against "
    "(default: the default span strategy).",
)
@kind_options
def identify(
    data: str | None,
    scores: tuple[str, ...],
    output: str | None,
    confusion_model: str,
    prune: tuple[str, ...],
    pruned_output: str | None,
    max_epochs: int | None,
    seed: int,
    root: str | None,
    duplicates: str,
    overwrite: bool,
    decision_margin: float,
    decision_level: float,
    list_: bool,
    quiet: bool,
    consensus: str | None,
    kind: str | None,
    sep: str | None,
    order: str | None,
    tie: str | None,
) -> None:
    """Score the tasks and workers of DATA (a file or a dataset name such as labelme).

    Label sets, ratings and comparisons (--kind, or a file with left and right columns)
    get their kind's worker scores in workers.csv and task (item) scores in tasks.csv
    (items.csv), with a summary.json; -s, --prune and --confusions are for classes.
    Spans (--kind spans): per worker the tasks, spans, and span precision, recall and F1
    against the consensus (--consensus NAME's spans) and against the truth where the
    data carry it, plus the aggregator's own worker scores (columns named model_SCORE); per task
    the workers' mean pairwise span F1 (agreement).

    Writes tasks.csv (task scores, keyed by task id), workers.csv (worker scores, keyed
    by worker id, with a keep/review/stop decision per worker and the counts behind it:
    labels, expected correct labels under Dawid-Skene, the accuracy and its interval,
    the chance level) and agreement.json (Krippendorff's alpha and per-class agreement). With
    --prune, also writes a copy of the data without the worst-scored tasks or workers
    (low WAUM/AUM/trace/spammer score..., high entropy or GLAD difficulty).
    """
    from crowdlearn._progress import progress_scope
    from crowdlearn.identify import (
        SCORES,
        class_agreement,
        compute,
        decision_counts,
        krippendorff_alpha,
        worker_decisions,
    )
    from crowdlearn.io import detect_format, write

    if list_:
        for name, score in SCORES.items():
            click.echo(f"{name:16s} {score.axis:6s} worst={score.worst:4s} {score.description}")
        return
    if data is None or output is None:
        raise click.UsageError("DATA and --output are required (or use --list)")
    if kind is None:
        kind = _kinds.detected_kind(data, "memory")
    _kinds.check_kind_options(kind, sep, order, tie)
    if consensus is not None and kind != "spans":
        raise click.UsageError(f"--consensus applies to --kind spans, not to {kind}")
    if kind != "class":
        if scores or prune or pruned_output:
            raise CrowdDataError(
                f"-s, --prune and --pruned-output apply to classes; {_kinds.NOUNS[kind]} get "
                "their kind's scores without options"
            )
        if kind == "spans":
            from crowdlearn.cli._spans import identify_spans

            identify_spans(data, output, overwrite, duplicates, consensus)
            return
        _identify_kind(data, kind, output, overwrite, sep, order, tie, duplicates)
        return
    prune_fractions = _parse_prune(prune)
    unknown = sorted(set(prune_fractions) - set(SCORES))
    if unknown:
        raise CrowdDataError(f"--prune: unknown score(s) {unknown}; known: {sorted(SCORES)}")
    unknown = sorted(set(scores) - set(SCORES))
    if unknown:
        raise CrowdDataError(f"-s: unknown score(s) {unknown}; known: {sorted(SCORES)}")
    names = list(dict.fromkeys([*scores, *prune_fractions]))
    if pruned_output is not None and not prune_fractions:
        raise CrowdDataError("--pruned-output needs --prune SCORE=FRACTION")
    outputs = Outputs(overwrite, reads=input_paths(data, root))
    out = outputs.folder(output)
    pruned_target = None
    if prune_fractions and pruned_output is not None:
        try:
            pruned_format = detect_format(pruned_output)  # refuse an unknown ending now
        except CrowdDataError as error:
            raise CrowdDataError(f"--pruned-output {error}") from None
        if inside(Path(pruned_output), Path(output)):
            pruned_target = Path(pruned_output).absolute().relative_to(Path(output).absolute())
        elif pruned_format == "peerannot":
            raise CrowdDataError(
                "--pruned-output: a peerannot folder cannot be a pruned output outside -o; "
                "give a .csv, .parquet, .txt or .npy file"
            )
        else:
            pruned_file = outputs.file(pruned_output, "--pruned-output")
    training: dict[str, Any] = {"random_state": seed}
    if max_epochs is not None:
        training["max_epochs"] = max_epochs
    crowd = load_crowd(data, root, duplicates)
    with progress_scope(False if quiet else "auto"):  # every fit inside follows it
        frames = compute(crowd, names, confusion_model=confusion_model, training=training)
    counts = None
    if not crowd.is_anonymous:
        decisions = worker_decisions(crowd, margin=decision_margin, level=decision_level)
        counts = decision_counts(decisions)
        workers = frames.get("worker")
        frames["worker"] = decisions if workers is None else workers.join(decisions)
    agreement = {
        "krippendorff_alpha": krippendorff_alpha(crowd),
        "class_agreement": {
            str(c): (None if np.isnan(v) else float(v))
            for c, v in zip(crowd.classes.tolist(), class_agreement(crowd), strict=True)
        },
        "n_tasks": crowd.n_tasks,
        "n_workers": crowd.n_workers,
        "n_annotations": crowd.n_annotations,
    }
    if counts is not None:
        agreement["worker_decisions"] = {
            **counts,
            "margin": decision_margin,
            "level": decision_level,
            "chance": float(frames["worker"]["chance"].iloc[0]),
        }
    if np.isnan(agreement["krippendorff_alpha"]):
        agreement["krippendorff_alpha"] = None
    kept = pruned_copy(crowd, frames, prune_fractions) if prune_fractions else None
    written = []
    # Everything is computed: write all outputs or none.
    with outputs:
        folder = out.staged
        for axis, frame in frames.items():
            with atomic_open(folder / f"{axis}s.csv") as handle:
                frame.reset_index().to_csv(handle, index=False)
            written.append(str(Path(output) / f"{axis}s.csv"))
        with atomic_open(folder / "agreement.json") as handle:
            json.dump(agreement, handle, indent=1)
        written.append(str(Path(output) / "agreement.json"))
        if kept is not None:
            if pruned_output is None:
                write(kept, folder / "pruned.csv")
                written.append(str(Path(output) / "pruned.csv"))
            elif pruned_target is not None:
                write(kept, folder / pruned_target)
                written.append(pruned_output)
            else:
                write(kept, pruned_file.staged)
                written.append(pruned_output)
    if kept is not None:
        click.echo(
            f"pruned: kept {kept.n_annotations} of {crowd.n_annotations} annotations "
            f"({len(np.unique(kept.task))} of {crowd.n_tasks} tasks)"
        )
    if counts is not None:
        click.echo("workers: " + ", ".join(f"{n} {name}" for name, n in counts.items()))
    computed = ", ".join(names) or "worker decisions"
    click.echo(f"{computed}: {crowd} -> {', '.join(str(p) for p in written)}")
