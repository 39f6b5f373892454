"""``crowdlearn next``: which tasks need another label; ``crowdlearn replay``: answer
those requests from answers already collected (dry runs of a campaign)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from crowdlearn._lazy import lazy_module
from crowdlearn.cli._app import cli, note
from crowdlearn.cli._numbers import number
from crowdlearn.cli._output import Outputs, write_table
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


def _require_classes(data: str, what: str) -> None:
    """Refuse DATA in one line (``what``; DATA holds ...) unless it holds one class per
    answer: the campaign commands rank and answer class tasks only."""
    import crowdlearn.cli._kinds as _kinds

    kind = _kinds.detected_kind(data, "memory")
    if kind != "class":
        raise CrowdDataError(f"{what}; {data} holds {_kinds.NOUNS[kind]}")


def _check_table_path(path: str, option: str) -> None:
    if Path(path).suffix.lower() not in (".csv", ".parquet"):
        raise CrowdDataError(f"{option} {path}: give a .csv or .parquet file")


def learner_predictions(crowd: CrowdData, probas: np.ndarray, features: str, seed: int) -> Any:
    """Out-of-fold class probabilities of a logistic regression on ``features``,
    trained on the aggregated labels of the annotated tasks (5 folds)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from crowdlearn.cli.learn import _load_array

    matrix = np.asarray(_load_array(features), dtype=np.float64)
    if matrix.ndim != 2 or len(matrix) != crowd.n_tasks:
        raise CrowdDataError(
            f"--features {features}: expected one row per task ({crowd.n_tasks} rows, in task "
            f"order), got shape {matrix.shape}"
        )
    labels = probas.argmax(axis=1)
    annotated = np.bincount(crowd.task, minlength=crowd.n_tasks) > 0
    present = np.unique(labels[annotated])
    out = np.full(probas.shape, 1.0 / probas.shape[1])
    counts = np.bincount(labels[annotated], minlength=probas.shape[1])[present]
    if len(present) < 2 or counts.min() < 2:
        note("crowdlearn: note: --features: too few tasks per class to train a classifier yet")
        return out
    folds = max(2, min(5, int(counts.min())))
    classifier = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    cv = StratifiedKFold(folds, shuffle=True, random_state=seed)
    predicted = cross_val_predict(
        classifier, matrix[annotated], labels[annotated], cv=cv, method="predict_proba"
    )
    out[np.ix_(annotated, present)] = predicted
    classifier.fit(matrix[annotated], labels[annotated])
    if (~annotated).any():
        out[np.ix_(~annotated, present)] = classifier.predict_proba(matrix[~annotated])
    return out


@cli.command("next")
@reading_options
@click.argument("data", type=click.Path(), required=False)
@click.option(
    "--state",
    type=click.Path(dir_okay=False),
    help="Rank from the model in a state file of `crowdlearn aggregate --state` (all the "
    "labels so far, no refit) instead of DATA.",
)
@click.option(
    "--budget",
    type=number("--budget"),
    required=True,
    help="How many labels to ask for now (one per task; the most valuable open tasks).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    required=True,
    help="Where to write the tasks to label (.csv or .parquet): task, label, confidence, "
    "score, n_labels, done (and to_target with --target-confidence, workers with --route).",
)
@click.option(
    "-s",
    "--strategy",
    help="The crowd model behind the values: ds (the default), onecoin-ds, glad, or any "
    "strategy with probabilities (see `crowdlearn aggregate --list`); with --state, the "
    "state's.",
)
@click.option(
    "--score",
    type=click.Choice(["decision", "entropy", "accuracy"]),
    default="decision",
    show_default=True,
    help="Value of one more label: the information it brings about whether the task's "
    "current label is right (decision), about its true class (entropy; the same with two "
    "classes), or its expected gain in the probability that the label is right (accuracy).",
)
@click.option(
    "--target-confidence",
    type=number("--target-confidence"),
    help="Tasks whose label has at least this posterior probability are done (e.g. 0.95); "
    "each open task then gets to_target, the labels it is expected to still need. The "
    "posterior is the model's own belief: with few labels per worker it runs above the "
    "accuracy (see benchmarks/pages/campaign.md).",
)
@click.option(
    "--min-labels",
    type=number("--min-labels"),
    default=2,
    show_default=True,
    help="Labels a task needs before --target-confidence can mark it done (a lone label "
    "is checked against nothing).",
)
@click.option(
    "--route",
    type=number("--route"),
    default=0,
    help="Suggest up to this many workers per task: those most likely to be right on it, "
    "who have not answered it and whom `crowdlearn identify` would not stop.",
)
@click.option(
    "--features",
    type=click.Path(dir_okay=False),
    help="Features of the tasks (.npy/.npz/.csv, one row per task in task order): a "
    "classifier's out-of-fold predictions are mixed with the crowd's posteriors, "
    "CROWDLAB-style.",
)
@click.option(
    "--leave-one-out/--in-sample",
    default=True,
    show_default=True,
    help="Score each task on its posterior under a worker model fitted without it (ds and "
    "onecoin-ds; a task's labels then do not vouch for their own workers), or on the "
    "model's posterior as fitted.",
)
@click.option(
    "--all", "all_tasks", is_flag=True, help="Write every task (done ones last), not --budget."
)
@click.option("--seed", type=number("--seed"), default=0, show_default=True, help="Random state.")
@duplicates_option
@click.option("--overwrite", is_flag=True, help="Replace an existing output file.")
def next_command(
    data: str | None,
    state: str | None,
    budget: int,
    output: str,
    strategy: str | None,
    score: str,
    target_confidence: float | None,
    min_labels: int,
    route: int,
    features: str | None,
    leave_one_out: bool,
    all_tasks: bool,
    seed: int,
    duplicates: str,
    overwrite: bool,
) -> None:
    """Rank the tasks of DATA (the labels so far) by the value of one more label.

    Writes the --budget most valuable open tasks, most valuable first: the task id, its
    current label and confidence, the score and how many labels it has. A task is done
    once its confidence reaches --target-confidence. Ask the crowd for one label on each
    row, add the answers to DATA (a folder or glob of batches is read as one dataset)
    and run again; or keep a state file with `crowdlearn aggregate NEW --state FILE` and
    rank from it with --state FILE. The same as crowdlearn.campaign.next_labels in
    Python.
    """
    from crowdlearn.campaign import fitted_model, rank_tasks
    from crowdlearn.campaign.ranking import TARGET_CAP
    from crowdlearn.cli._relabelled import note_relabelled
    from crowdlearn.cli.identify import load_crowd
    from crowdlearn.identify import worker_decisions

    _check_table_path(output, "-o")
    if (data is None) == (state is None):
        raise click.UsageError("give DATA (the labels so far) or --state FILE, not both")
    reads = [state] if state is not None else input_paths(str(data))
    outputs = Outputs(overwrite, reads=[*reads, features])
    if data is not None:  # -o in the folder of batches: the next run would read it
        outputs.reads_batches(str(data))
    target = outputs.file(output)
    if state is not None:
        crowd, model = _from_state(state, strategy)
    else:
        _require_classes(str(data), "crowdlearn next ranks tasks answered with one class")
        crowd = load_crowd(str(data), duplicates=duplicates)
        model = fitted_model(crowd, strategy or "ds", seed)
    learner = None
    if features is not None:
        learner = learner_predictions(crowd, np.asarray(model.probas_), features, seed)
    stopped: list[Any] = []
    if route:
        decisions = worker_decisions(crowd, model.probas_)
        stopped = decisions.index[decisions["decision"] == "stop"].tolist()
    table = rank_tasks(
        crowd,
        model,
        score=score,  # type: ignore[arg-type]
        target_confidence=target_confidence,
        min_labels=min_labels,
        learner_probas=learner,
        route=route,
        stopped_workers=stopped,
        route_first=None if all_tasks else budget,
        leave_one_out=leave_one_out,
        random_state=seed,
    )
    n_done = int(table["done"].sum())
    n_open = len(table) - n_done
    chosen = table if all_tasks else table[~table["done"]].head(budget)
    with outputs:
        write_table(chosen, target.staged)
    if not all_tasks and n_open < budget:
        note(f"crowdlearn: note: only {n_open} open task(s), fewer than --budget {budget}")
    note_relabelled(crowd, model.probas_)
    done_text = f", {n_done} done at confidence >= {target_confidence:g}" if n_done else ""
    stop_text = f"; {len(stopped)} worker(s) to stop left out of --route" if stopped else ""
    click.echo(
        f"next: {len(chosen)} task(s) of {crowd.n_tasks} ({n_open} open{done_text}){stop_text} "
        f"-> {output}"
    )
    if target_confidence is not None and n_open:
        click.echo(
            f"next: about {table['to_target'].sum():.0f} more label(s) expected to bring the "
            f"{n_open} open task(s) to confidence {target_confidence:g} (under the model's "
            f"average worker; at most {TARGET_CAP} a task; column to_target)"
        )


def _from_state(state: str, strategy: str | None) -> tuple[CrowdData, Any]:
    """The labels and the fitted model of a state file; ``-s`` must name its method."""
    from crowdlearn.aggregation import load_state, make_aggregator
    from crowdlearn.cli._output import require_input

    require_input(state, "--state")
    model = load_state(state)
    if strategy is not None and type(make_aggregator(strategy)) is not type(model):
        raise CrowdDataError(
            f"--state {state} holds a {type(model).__name__} model, not {strategy!r}; leave "
            "-s out to use it"
        )
    return model.crowd_, model


def _read_long(path: str, own_columns: bool = False) -> pd.DataFrame:
    """The task, worker and label columns of ``path``. The command's reading options
    (``--columns``, ``--answer``, ...) apply unless ``own_columns``: then the file is
    read as replay writes its batches (task, worker, label), or as any format that
    needs no options."""
    from contextlib import ExitStack

    from crowdlearn.cli._reading import notes_on_stderr
    from crowdlearn.io import default_columns, read
    from crowdlearn.io.platforms import platform_options

    with ExitStack() as stack:
        if own_columns:
            stack.enter_context(default_columns())
            stack.enter_context(platform_options(None, None, False))
        stack.enter_context(notes_on_stderr())
        crowd = read(path)
    return crowd.to_frame()[["task", "worker", "label"]]


@cli.command("replay")
@reading_options
@click.argument("pool", type=click.Path())
@click.option(
    "--requests",
    type=click.Path(dir_okay=False),
    help="The tasks to answer (the output of `crowdlearn next`: a task column, and a "
    "workers column with --route). Without it, every task gets --per-task answers.",
)
@click.option(
    "--seen",
    help="The answers already given (a file, folder or glob of batches); they are not "
    "given again. Read as replay writes them (task, worker, label): --columns and the "
    "platform options describe POOL only.",
)
@click.option(
    "--per-task",
    type=number("--per-task"),
    default=1,
    show_default=True,
    help="Answers per requested task.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    required=True,
    help="Where to write the new answers (.csv or .parquet: task, worker, label).",
)
@click.option(
    "--seed",
    type=number("--seed"),
    default=0,
    show_default=True,
    help="The order in which each task's answers in POOL are given.",
)
@click.option("--overwrite", is_flag=True, help="Replace an existing output file.")
def replay(
    pool: str,
    requests: str | None,
    seen: str | None,
    per_task: int,
    output: str,
    seed: int,
    overwrite: bool,
) -> None:
    """Answer label requests from POOL, answers already collected (real or simulated).

    For a dry run of a campaign on a finished one: each requested task gets its next
    unseen answers from POOL, in a fixed random order of its answers (--seed); when the
    request names workers (`crowdlearn next --route`), their answers come first. Tasks
    with no answer left are skipped, with a note. POOL can be a platform's export or a
    table with its own column names (--columns, --answer, ...); the answers are written
    as task, worker, label with POOL's ids, which `crowdlearn next` and `crowdlearn
    aggregate` read without options.
    """
    _check_table_path(output, "-o")
    seen_files = input_paths(seen) if seen is not None else []
    # the batches already collected are inputs: -o may not replace one of them
    outputs = Outputs(overwrite, reads=[*input_paths(pool), requests, *seen_files])
    target = outputs.file(output)
    _require_classes(
        pool,
        "crowdlearn replay answers requests for tasks answered with one class "
        "(those of `crowdlearn next`)",
    )
    answers = _read_long(pool)
    rng = np.random.default_rng(seed)
    answers = answers.iloc[rng.permutation(len(answers))].reset_index(drop=True)
    answers["rank"] = np.arange(len(answers))
    if seen is not None:
        given = _read_long(seen, own_columns=True)
        key = ["task", "worker"]
        marked = (
            answers[key]
            .astype(str)
            .merge(given[key].astype(str).drop_duplicates(), how="left", on=key, indicator=True)
        )
        answers = answers[(marked["_merge"] == "left_only").to_numpy()]
    if requests is None:
        wanted = pd.DataFrame({"task": pd.unique(answers["task"].astype(str))})
        wanted["workers"] = ""
    else:
        wanted = pd.read_csv(requests, dtype=str, keep_default_na=False)
        if "task" not in wanted.columns:
            raise CrowdDataError(f"--requests {requests}: no task column")
        if "workers" not in wanted.columns:
            wanted["workers"] = ""
    answers = answers.assign(task_key=answers["task"].astype(str))
    # only the requested tasks' answers are grouped (the pool may hold millions)
    answers = answers[answers["task_key"].isin(set(wanted["task"].astype(str)))]
    answers = answers.assign(worker_key=answers["worker"].astype(str))
    by_task = dict(tuple(answers.groupby("task_key", sort=False)))
    rows = []
    missing = 0
    for task, workers in zip(wanted["task"].astype(str), wanted["workers"], strict=True):
        left = by_task.get(task)
        if left is None or left.empty:
            missing += 1
            continue
        routed = [w for w in str(workers).split(";") if w]
        preference = left["worker_key"].map({w: i for i, w in enumerate(routed)})
        order = left.assign(_p=preference.fillna(len(routed))).sort_values(["_p", "rank"])
        rows.append(order.head(per_task))
    new = (
        pd.concat(rows)[["task", "worker", "label"]]
        if rows
        else pd.DataFrame(columns=["task", "worker", "label"])
    )
    with outputs:
        write_table(new, target.staged)
    if missing:
        note(f"crowdlearn: note: {missing} requested task(s) have no answer left in {pool}")
    click.echo(f"replay: {len(new)} answer(s) for {len(rows)} task(s) -> {output}")
