"""``crowdlearn aggregate``: infer task labels from crowd annotations with any strategy."""

from __future__ import annotations

import contextlib
import inspect
import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from crowdlearn._atomic import atomic_open
from crowdlearn._json import jsonable as _jsonable
from crowdlearn._lazy import lazy_module
from crowdlearn.cli._app import cli, note, without_timings
from crowdlearn.cli._kinds import kind_options
from crowdlearn.cli._numbers import number
from crowdlearn.cli._output import Outputs, require_input, write_table
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


def _parse_params(pairs: tuple[str, ...]) -> dict[str, str]:
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CrowdDataError(f"--param expects k=v, got {pair!r}")
        params[key.strip()] = value.strip()
    return params


def _read_gold(path: str) -> pd.Series:
    """Gold labels from a CSV with columns task and label (or truth)."""
    try:
        frame = pd.read_csv(path)
    except (ValueError, UnicodeDecodeError) as error:  # pandas' parser errors name no file
        raise CrowdDataError(f"--gold {path}: not a readable CSV ({error})") from None
    column = "label" if "label" in frame.columns else "truth"
    if "task" not in frame.columns or column not in frame.columns:
        raise CrowdDataError(
            f"--gold {path}: the gold file needs columns task and label, "
            f"it has {', '.join(map(str, frame.columns))}"
        )
    return frame.set_index("task")[column]


def _write_back(
    platforms: tuple[str, ...],
    folder: Path,
    data: str,
    task_ids: Any,
    labels: Any,
    scores: Any,
) -> list[str]:
    """The labels in the platforms' import files (see ``crowdlearn.io.platforms.write``)."""
    from crowdlearn import datasets
    from crowdlearn.io.platforms import _cached_export, recognise
    from crowdlearn.io.platforms import write as back

    if not platforms:
        return []
    export = None
    if data not in datasets.list() and recognise(data) is not None:
        export = _cached_export(data)
    written = []
    labels, scores = list(labels), [float(s) for s in scores]
    if "labelstudio" in platforms:
        from_name, to_name = back.label_studio_names(export)
        items = export.items if export is not None and export.platform == "labelstudio" else None
        tasks = back.label_studio_predictions(
            list(task_ids), labels, scores, from_name=from_name, to_name=to_name, items=items
        )
        back.write_label_studio_predictions(folder / "labelstudio-predictions.json", tasks)
        written.append("labelstudio-predictions.json")
    if "toloka" in platforms:
        table = back.toloka_results(list(task_ids), labels, scores, export=export)
        with atomic_open(folder / "toloka-results.tsv") as handle:
            table.to_csv(handle, sep="\t", index=False)
        written.append("toloka-results.tsv")
    return written


def _export_gold(data: str) -> pd.Series | None:
    """The known answers a platform export marks (Toloka's GOLDEN:, Label Studio's
    ground_truth, CrowdFlower's *_gold), or None."""
    from crowdlearn import datasets
    from crowdlearn.io.platforms import export_gold

    if data in datasets.list():
        return None
    return export_gold(data)


def _write_table(frame: pd.DataFrame, path: Path, output_format: str) -> Path:
    target = path.with_suffix(f".{output_format}")
    write_table(frame, target, output_format)
    return target


def _worker_document(model: Any, crowd: Any) -> dict[str, dict[str, Any]]:
    """The learned per-worker parameters, keyed by parameter name, then worker id."""
    return {
        attribute.rstrip("_"): {
            str(worker): _jsonable(value)
            for worker, value in zip(
                crowd.worker_ids.tolist(), getattr(model, attribute), strict=True
            )
        }
        for attribute in model.worker_attributes
        if hasattr(model, attribute)
    }


def _summary(model: Any, crowd: Any, **extra: Any) -> dict[str, Any]:
    """summary.json: the strategy, its parameters, the data's sizes and the fit's state."""
    summary = {
        "strategy": type(model).__name__,
        "params": {k: _jsonable(v) for k, v in model.get_params().items()},
        "classes": [_jsonable(c) for c in crowd.classes],
        "n_tasks": crowd.n_tasks,
        "n_workers": crowd.n_workers,
        "n_annotations": crowd.n_annotations,
        **extra,
    }
    for attribute in ("priors_", "n_iter_", "converged_"):
        if hasattr(model, attribute):
            summary[attribute.rstrip("_")] = _jsonable(getattr(model, attribute))
    return summary


def aggregation_outputs(model: Any, data: CrowdData) -> dict[str, Any]:
    """The tables and documents the command writes, keyed by file stem."""
    task_index = pd.Index(data.task_ids, name="task")
    labels = pd.DataFrame(
        {"label": data.classes[model.labels_], "probability": model.probas_.max(axis=1)},
        index=task_index,
    )
    for name in model.task_attributes:
        labels[name.rstrip("_")] = getattr(model, name)
    probas = pd.DataFrame(model.probas_, index=task_index, columns=[str(c) for c in data.classes])
    return {
        "labels": labels.reset_index(),
        "probas": probas.reset_index(),
        "workers": _worker_document(model, data),
        "summary": _summary(model, data),
        "history": without_timings(getattr(model, "history_", None)),
    }


@cli.command()
@reading_options
@click.argument("data", required=False, type=click.Path())
@click.option(
    "-s",
    "--strategy",
    help="Strategy, e.g. ds, glad, 'DSWC[L=5]' (see --list); default: the kind's default "
    "(ds for classes).",
)
@kind_options
@click.option(
    "--write-back",
    "write_back",
    type=click.Choice(["labelstudio", "toloka"]),
    multiple=True,
    help="Also write the labels for the platform to import (repeatable): "
    "labelstudio-predictions.json (Label Studio tasks with predictions) or "
    "toloka-results.tsv (INPUT:, OUTPUT:, CONFIDENCE: columns).",
)
@click.option(
    "--param",
    "params",
    multiple=True,
    metavar="K=V",
    help="A parameter of the strategy (repeatable), e.g. --param max_iter=50.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False),
    help="Output folder: labels, probas, workers.json, history, summary.json.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["csv", "parquet"]),
    default="csv",
    show_default=True,
    help="Format of the tables.",
)
@click.option(
    "--gold",
    type=click.Path(exists=True, dir_okay=False),
    help="CSV of known labels (columns task, label) for strategies that take gold.",
)
@click.option(
    "--duplicates",
    type=click.Choice(["error", "keep", "first", "last"]),
    default="error",
    show_default=True,
    help="What to do with repeated (task, worker) pairs.",
)
@click.option(
    "--truth",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[FILE]",
    help="--kind spans: print the strict span precision, recall and F1 of the result "
    "against the data's truth (NER-MTurk's ground_truth folder), or against FILE (CoNLL: "
    "-DOCSTART- TASK lines, then TOKEN TAG lines, as tags.conll); also in summary.json.",
)
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--overwrite", is_flag=True, help="Replace an existing output folder (as a whole).")
@click.option(
    "--list", "list_", is_flag=True, help="List the strategies (of --kind, else of every kind)."
)
@click.option(
    "--engine",
    type=click.Choice(["memory", "dask", "stream"]),
    default="memory",
    show_default=True,
    help="In-memory engine, Dask (DATA: a Parquet file or directory; strategies "
    "ds, onecoin-ds, mv, naivesoft, glad), or stream: out of core on one machine (DATA: "
    "Parquet sorted by task; strategies ds, fast-ds).",
)
@click.option(
    "--state",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Aggregate annotations as they arrive: DATA holds only the annotations since "
    "the last call; FILE (created by the first call, then updated in place, only when "
    "everything succeeded) keeps the model and every earlier annotation, and the outputs "
    "describe all of them. Classes only; strategies ds, fast-ds, onecoin-ds, glad, mv, "
    "naivesoft, wawa, twothird (default: the state's).",
)
@click.option(
    "--new-classes",
    is_flag=True,
    help="With --state: accept classes that the state does not know yet.",
)
@click.option(
    "--refresh",
    type=number("--refresh"),
    default=None,
    metavar="N",
    help="With --state: full E-step passes over all annotations after an update "
    "(partial_fit's refresh; default 1). 0 recomputes only the tasks whose label the "
    "update could change (the labels are still those of a full E-step), the fastest; "
    "2 or more add full EM iterations.",
)
@click.option("--scheduler", metavar="ADDRESS", help="Dask scheduler to connect to.")
@click.option(
    "--local-workers",
    type=number("--local-workers"),
    default=2,
    show_default=True,
    help="Without --scheduler: worker processes of a LocalCluster.",
)
@click.option(
    "--worker-memory",
    default="4GB",
    show_default=True,
    help="Without --scheduler: memory limit of each local worker.",
)
def aggregate(
    data: str | None,
    strategy: str | None,
    kind: str | None,
    sep: str | None,
    order: str | None,
    tie: str | None,
    write_back: tuple[str, ...],
    params: tuple[str, ...],
    output: str | None,
    output_format: str,
    gold: str | None,
    duplicates: str,
    truth: str | None,
    quiet: bool,
    overwrite: bool,
    list_: bool,
    engine: str,
    state: str | None,
    new_classes: bool,
    refresh: int | None,
    scheduler: str | None,
    local_workers: int,
    worker_memory: str,
) -> None:
    """Aggregate the answers in DATA (any supported format) with one strategy.

    For classes (the default kind), writes to the output folder: labels (task, label,
    probability of that label, and per-task parameters such as GLAD's beta), probas
    (one column per class), the learned worker parameters (workers.json, keyed by
    worker id), the iteration history and summary.json, all keyed by your ids.
    Label sets (--kind multilabel): labels (task, one 0/1 column per class) and probas.
    Ratings (--kind rating): labels (task, value, spread where the strategy has one;
    label for ordered categories). Comparisons (a worker, left, right, label file):
    scores (item, score; most preferred first). Masks (--kind mask, DATA a folder
    DATA/TASK/WORKER.npy or .png): labels (task, agreement = mean IoU of the workers'
    masks with the result) and masks/TASK.npy (or .png), one aggregated mask per task.
    Spans (--kind spans, DATA e.g. a folder of per-worker CoNLL files): spans.csv (task,
    start, end, label, score, text; token indices, end exclusive, or character offsets
    for text input) and tags.conll (-DOCSTART- TASK, then TOKEN TAG lines); --truth
    prints the strict span P/R/F1.

    As annotations arrive (classes): crowdlearn aggregate NEW.csv --state FILE -o OUT.
    The first call creates FILE; each later call adds NEW.csv (only the annotations
    since the last call) to the model in FILE without a refit from scratch
    (partial_fit), writes the outputs for all annotations so far and updates FILE.
    A state of another method or dataset, a class the state does not know (without
    --new-classes) or a (task, worker) pair it already holds: an error, nothing
    written. --refresh 0: the fastest update, with the labels of a full E-step.
    """
    import crowdlearn.cli._kinds as _kinds
    from crowdlearn.aggregation import make_aggregator
    from crowdlearn.cli.identify import load_crowd

    if list_:
        _list_strategies(kind)
        return
    if data is None and truth:
        raise click.UsageError(
            f"--truth took {truth!r} as its FILE and DATA is missing; put --truth after DATA "
            "(--truth alone scores against the data's own truth)"
        )
    if data is None or output is None:
        raise click.UsageError("DATA and --output are required (or use --list)")
    if engine == "stream":
        from crowdlearn.cli._stream import aggregate_stream

        unsupported = [(state, "--state"), (gold, "--gold"), (write_back, "--write-back")]
        unsupported += [(new_classes, "--new-classes"), (refresh is not None, "--refresh")]
        aggregate_stream(
            data, strategy, kind, _parse_params(params), output, output_format, quiet,
            overwrite, unsupported, _write_dask_outputs,
        )  # fmt: skip
        return
    if kind is None:
        kind = _kinds.detected_kind(data, engine)
    _kinds.check_kind_options(kind, sep, order, tie)
    if truth is not None and kind != "spans":
        raise click.UsageError(f"--truth applies to --kind spans, not to {kind}")
    if state is not None:
        _check_state_options(kind, engine, gold, write_back)
        from crowdlearn.cli._state import aggregate_with_state

        aggregate_with_state(
            data,
            state,
            strategy,
            _parse_params(params),
            output,
            output_format,
            overwrite,
            duplicates,
            new_classes,
            quiet,
            aggregation_outputs,
            _write_table,
            refresh=1 if refresh is None else refresh,
        )
        return
    if new_classes:
        raise CrowdDataError("--new-classes goes with --state")
    if refresh is not None:
        raise CrowdDataError("--refresh goes with --state")
    if kind == "spans":
        _check_spans_options(engine, gold, write_back)
        from crowdlearn.cli._spans import aggregate_spans

        aggregate_spans(
            data, strategy, _parse_params(params), output, output_format, duplicates,
            overwrite, truth,
        )  # fmt: skip
        return
    if strategy is None and kind == "comparison" and engine == "dask":
        strategy = "bt"  # the one comparison strategy of the Dask engine
        note("crowdlearn: note: strategy bt (the Dask engine's for pairwise comparisons)")
    elif strategy is None:
        strategy = _kinds.default_strategy(kind)
        note(f"crowdlearn: note: strategy {strategy} (the default for {_kinds.NOUNS[kind]})")
    if kind == "comparison" and engine == "dask":
        _comparisons_dask(
            data, strategy, params, output, overwrite, output_format, tie, scheduler,
            local_workers, worker_memory,
        )  # fmt: skip
        return
    if kind != "class":
        _aggregate_kind(
            data,
            kind,
            strategy,
            params,
            output,
            output_format,
            gold,
            engine,
            duplicates,
            overwrite,
            sep,
            order,
            tie,
            write_back,
        )
        return
    model = make_aggregator(strategy, **_parse_params(params))
    if engine == "dask":
        require_input(data)
    outputs = Outputs(overwrite, reads=[*input_paths(data), gold])
    if engine == "dask":
        if gold is not None:
            raise CrowdDataError("--gold is not supported with --engine dask")
        _aggregate_dask(
            data,
            strategy,
            model,
            outputs,
            output,
            quiet,
            scheduler,
            local_workers,
            worker_memory,
            output_format,
        )
        return
    if "progress" in model.get_params():
        model.set_params(progress=False if quiet else "auto")
    out = outputs.folder(output)
    fit_options = {}
    if gold is not None:
        if "gold" not in inspect.signature(model.fit).parameters:
            raise CrowdDataError(f"strategy {strategy!r} does not take gold labels")
        fit_options["gold"] = _read_gold(gold)
    crowd = load_crowd(data, duplicates=duplicates)
    if gold is None and "gold" in inspect.signature(model.fit).parameters:
        known = _export_gold(data)
        if known is not None:
            fit_options["gold"] = known
            note(f"crowdlearn: note: gold: the export's known answers of {len(known)} task(s)")
    model.fit(crowd, **fit_options)
    from crowdlearn.cli._relabelled import note_relabelled

    note_relabelled(crowd, model.probas_)
    tables = aggregation_outputs(model, crowd)
    names = ["labels", "probas"] + (["history"] if tables["history"] is not None else [])
    with outputs:
        for name in names:
            _write_table(tables[name], out.staged / name, output_format)
        for name in ("workers", "summary"):
            with atomic_open(out.staged / f"{name}.json") as handle:
                json.dump(tables[name], handle, indent=1)
        back = _write_back(
            write_back,
            out.staged,
            data,
            crowd.task_ids,
            crowd.classes[model.labels_],
            model.probas_.max(axis=1),
        )
    written = [f"{name}.{output_format}" for name in names] + ["workers.json", "summary.json"]
    click.echo(f"{strategy}: {crowd} -> {output}: {', '.join(written + back)}")


def _check_state_options(
    kind: str, engine: str, gold: str | None, write_back: tuple[str, ...]
) -> None:
    """--state aggregates classes in memory, without gold or write-back."""
    import crowdlearn.cli._kinds as _kinds

    if kind != "class":
        raise CrowdDataError(f"--state aggregates classes, not {_kinds.NOUNS[kind]}")
    unsupported = (
        (engine == "dask", "--engine dask"),
        (gold, "--gold"),
        (write_back, "--write-back"),
    )
    for given, option in unsupported:
        if given:
            raise CrowdDataError(f"{option} is not supported with --state")


def _check_spans_options(engine: str, gold: str | None, write_back: tuple[str, ...]) -> None:
    """--kind spans aggregates in memory, without --gold or --write-back."""
    for given, option in ((engine == "dask", "--engine dask"), (gold, "--gold"),
                          (write_back, "--write-back")):  # fmt: skip
        if given:
            raise CrowdDataError(f"{option} is not supported for spans (--kind spans)")


def _list_strategies(kind: str | None) -> None:
    import crowdlearn.cli._kinds as _kinds

    kinds = [kind] if kind is not None else ["class", *_kinds.PACKAGES, "spans"]
    for one in kinds:
        if kind is None:
            click.echo(
                f"--kind {one} ({_kinds.NOUNS[one]}; default {_kinds.default_strategy(one)}):"
            )
        for name, entry in sorted(_kinds.strategies(one).items()):
            click.echo(f"{'  ' if kind is None else ''}{name:14s} {entry.description}")


def _aggregate_kind(
    data: str,
    kind: str,
    strategy: str,
    params: tuple[str, ...],
    output: str,
    output_format: str,
    gold: str | None,
    engine: str,
    duplicates: str,
    overwrite: bool,
    sep: str | None,
    order: str | None,
    tie: str | None,
    write_back: tuple[str, ...] = (),
) -> None:
    """Label sets, ratings or comparisons: read, fit the kind's strategy, write its tables."""
    import crowdlearn.cli._kinds as _kinds

    if engine == "dask":
        raise CrowdDataError(f"--engine dask aggregates classes only, not {_kinds.NOUNS[kind]}")
    if gold is not None:
        raise CrowdDataError(f"--gold is not supported for {_kinds.NOUNS[kind]}")
    if write_back and kind != "multilabel":
        raise CrowdDataError(
            f"--write-back writes classes and label sets, not {_kinds.NOUNS[kind]}"
        )
    model = _kinds.make(kind, strategy, _parse_params(params))
    outputs = Outputs(overwrite, reads=[data])
    out = outputs.folder(output)
    answers = _kinds.read_answers(data, kind, sep, order, tie, duplicates)
    model.fit(answers)
    tables = _kinds.tables(kind, model, answers)
    names = [name for name in ("labels", "probas", "scores", "boxes") if name in tables]
    back: list[str] = []
    with outputs:
        for name in names:
            _write_table(tables[name], out.staged / name, output_format)
        for name in ("workers", "summary"):
            with atomic_open(out.staged / f"{name}.json") as handle:
                json.dump(tables[name], handle, indent=1)
        if kind == "mask":
            _kinds.write_masks(model, answers, out.staged / "masks")
        if write_back:
            probas = np.asarray(model.probas_, dtype=np.float64)
            chosen = np.asarray(model.labels_, dtype=bool)
            sets = [answers.classes[row].tolist() for row in chosen]
            # a set's confidence: the mean over classes of the probability of its decision
            confidence = np.where(chosen, probas, 1 - probas).mean(axis=1)
            back = _write_back(write_back, out.staged, data, answers.task_ids, sets, confidence)
    written = [f"{name}.{output_format}" for name in names] + ["workers.json", "summary.json"]
    if kind == "mask":
        written.append(f"masks/ ({answers.n_tasks} .{answers.mask_format} files)")
    click.echo(f"{strategy}: {answers} -> {output}: {', '.join(written + back)}")


def _comparisons_dask(
    data: str,
    strategy: str,
    params: tuple[str, ...],
    output: str,
    overwrite: bool,
    output_format: str,
    tie: str | None,
    scheduler: str | None,
    local_workers: int,
    worker_memory: str,
) -> None:
    """Bradley-Terry on the Dask engine (a Parquet file or folder of comparisons)."""
    import crowdlearn.cli._kinds as _kinds

    if strategy.split("[")[0].strip().lower() != "bt":
        raise CrowdDataError(
            f"--engine dask fits comparisons with bt (Bradley-Terry) only, not {strategy!r}"
        )
    require_input(data)
    _check_dask_input(data)
    memory_model = _kinds.make("comparison", strategy, _parse_params(params))
    outputs = Outputs(overwrite, reads=[data])
    out = outputs.folder(output)
    from crowdlearn.distributed.comparisons import BradleyTerry

    model = BradleyTerry(**memory_model.get_params())
    if scheduler is None:
        _check_worker_memory(worker_memory)
    with _dask_client(scheduler, local_workers, worker_memory) as client:
        model.fit(data, client=client, tie=tie)
    scores = pd.DataFrame({"item": model.item_ids_, "score": model.scores_})
    scores = scores.sort_values("score", ascending=False, kind="stable")
    summary = {
        "kind": "comparison",
        "strategy": "BradleyTerry (dask)",
        "params": {k: v for k, v in model.get_params().items()},
        "n_items": len(model.item_ids_),
        "n_iter": model.n_iter_,
        "converged": model.converged_,
    }
    with outputs:
        _write_table(scores, out.staged / "scores", output_format)
        with atomic_open(out.staged / "summary.json") as handle:
            json.dump(summary, handle, indent=1, default=str)
    click.echo(f"{strategy} (dask): {data} -> {output}: scores.{output_format}, summary.json")


def _aggregate_dask(
    data: str,
    strategy: str,
    memory_model: Any,
    outputs: Outputs,
    output: str,
    quiet: bool,
    scheduler: str | None,
    local_workers: int,
    worker_memory: str,
    output_format: str,
) -> None:
    """Fit the Dask version of ``memory_model`` (same parameters) and write its outputs."""
    from crowdlearn import distributed as dist

    name = strategy.split("[")[0].strip().lower()
    if name not in dist.STRATEGIES:
        raise CrowdDataError(
            f"strategy {strategy!r} has no Dask engine; choose one of {sorted(dist.STRATEGIES)}"
        )
    model = dist.STRATEGIES[name](**memory_model.get_params())
    out = outputs.folder(output)
    _check_dask_input(data)
    if scheduler is None:
        _check_worker_memory(worker_memory)
    if "progress" in model.get_params():
        model.set_params(progress=False if quiet else "auto")
    with _dask_client(scheduler, local_workers, worker_memory) as client:
        model.fit(data, client=client)
        with outputs:
            written = _write_dask_outputs(model, out.staged, output_format)
    click.echo(f"{strategy} (dask): {data} -> {output}: {', '.join(written)}")


@contextlib.contextmanager
def _dask_client(scheduler: str | None, local_workers: int, worker_memory: str) -> Iterator[Any]:
    """A client of the scheduler at ``scheduler``, else of a LocalCluster of
    ``local_workers`` single-thread worker processes; closed (cluster too) on exit."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise CrowdDataError("--engine dask needs dask: pip install 'crowdlearn[dask]'") from None
    if scheduler is not None:
        with Client(scheduler) as client:
            yield client
        return
    with (
        LocalCluster(
            n_workers=local_workers,
            threads_per_worker=1,
            processes=True,
            memory_limit=worker_memory,
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


def _check_dask_input(data: str) -> None:
    """The Dask engine reads Parquet only (a file, or a folder of Parquet files)."""
    from crowdlearn.io import detect_format

    if data == "-":
        raise CrowdDataError(
            "--engine dask reads Parquet files by their path, not standard input; save the "
            "input to a .parquet file first"
        )
    try:
        fmt = detect_format(data)
    except CrowdDataError:
        fmt = None
    if fmt != "parquet" and not (Path(data).is_dir() and any(Path(data).glob("*.parquet"))):
        raise CrowdDataError(
            f"--engine dask reads Parquet (a file or a folder of .parquet files), and {data} "
            f"is {'a ' + fmt + ' file' if fmt else 'not Parquet'}; convert it first: "
            f"crowdlearn convert {data} -o {Path(data).stem}.parquet"
        )


def _check_worker_memory(value: str) -> None:
    """``--worker-memory``: 'auto' or a positive size such as 4GB (Dask's spelling)."""
    if value.strip().lower() == "auto":
        return
    from dask.utils import parse_bytes

    try:
        size = parse_bytes(value)
    except (ValueError, TypeError):
        size = None
    if size is None or size <= 0:
        raise CrowdDataError(
            f"--worker-memory {value}: expected a positive size such as 4GB or 512MiB, or auto"
        )


def _write_dask_outputs(
    model: Any, folder: Path, output_format: str, engine: str = "dask"
) -> list[str]:
    """Write a fitted Dask (or stream) model's posteriors, history and JSON documents
    into ``folder``."""
    written = [model.write_parquet(folder / "posteriors").name]
    if hasattr(model, "history_"):
        history = without_timings(model.history_)
        written.append(_write_table(history, folder / "history", output_format).name)
    crowd = model.crowd_
    workers = _worker_document(model, crowd)
    extra = {"npartitions": crowd.npartitions} if engine == "dask" else {}
    summary = _summary(model, crowd, engine=engine, **extra)
    for stem, document in (("workers", workers), ("summary", summary)):
        with atomic_open(folder / f"{stem}.json") as handle:
            json.dump(document, handle, indent=1)
        written.append(f"{stem}.json")
    return written
