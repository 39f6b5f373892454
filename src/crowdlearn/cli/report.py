"""``crowdlearn report``: one self-contained HTML file describing a crowd."""

from __future__ import annotations

import click

import crowdlearn.cli._kinds as _kinds
from crowdlearn.cli._app import cli
from crowdlearn.cli._kinds import kind_options
from crowdlearn.cli._numbers import number
from crowdlearn.cli._output import Outputs
from crowdlearn.cli._reading import duplicates_option, input_paths, reading_options


def _strategy_names(values: tuple[str, ...]) -> tuple[str, ...]:
    names = [name.strip() for value in values for name in value.split(",") if name.strip()]
    return tuple(dict.fromkeys(names))


@cli.command()
@reading_options
@click.argument("data", type=click.Path())
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False),
    help="The HTML file to write (e.g. report.html).",
)
@click.option(
    "--truth",
    "use_truth",
    is_flag=True,
    help="Use the known truth in DATA: accuracies of workers and strategies, true classes.",
)
@click.option(
    "-s",
    "--strategies",
    multiple=True,
    metavar="NAMES",
    help="Aggregation strategies to compare, comma-separated or repeated "
    "(default: mv,naivesoft,ds,glad).",
)
@click.option("--title", help="Page title (default: the DATA argument).")
@click.option(
    "--max-worker-rows",
    type=number("--max-worker-rows"),
    default=200,
    show_default=True,
    help="Cap of the worker table.",
)
@click.option(
    "--max-task-rows",
    type=number("--max-task-rows"),
    default=50,
    show_default=True,
    help="Rows of hardest tasks.",
)
@click.option(
    "--max-plot-points",
    type=number("--max-plot-points"),
    default=3000,
    show_default=True,
    help="Points per scatter plot (random subsample).",
)
@click.option(
    "--seed", type=number("--seed"), default=0, show_default=True, help="Seed of the subsampling."
)
@click.option("--root", type=click.Path(), help="Datasets directory (registry names).")
@duplicates_option
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--overwrite", is_flag=True, help="Replace an existing output file.")
@kind_options
def report(
    data: str,
    output: str,
    use_truth: bool,
    strategies: tuple[str, ...],
    title: str | None,
    max_worker_rows: int,
    max_task_rows: int,
    max_plot_points: int,
    seed: int,
    root: str | None,
    duplicates: str,
    quiet: bool,
    overwrite: bool,
    kind: str | None,
    sep: str | None,
    order: str | None,
    tie: str | None,
) -> None:
    """Write an HTML report on DATA (a file or a dataset name such as labelme).

    The page is one self-contained file (images inlined, no network request): dataset
    summary, workload and feedback-effort histograms, worker table with suspected
    spammers flagged, hardest tasks, comparison of aggregation strategies and confusion
    matrices. Large crowds get capped tables and subsampled plots, said on the page.
    Spans (--kind spans): the least-agreeing documents (lowest mean pairwise span F1
    between their workers), each worker's spans under the aggregated ones (and the
    true ones with --truth), the document and worker tables.
    """
    import numpy as np

    from crowdlearn.aggregation import KOS, make_aggregator
    from crowdlearn.cli.identify import load_crowd
    from crowdlearn.data import CrowdDataError
    from crowdlearn.report import DEFAULT_STRATEGIES, ReportLimits, write_report

    if kind is None:
        kind = _kinds.detected_kind(data, "memory")
    _kinds.check_kind_options(kind, sep, order, tie)
    if kind == "spans":
        _report_spans(
            data, output, strategies, use_truth, title, max_worker_rows, max_task_rows,
            max_plot_points, duplicates, overwrite,
        )  # fmt: skip
        return
    if kind != "class":
        if len(_strategy_names(strategies)) > 1 or use_truth:
            raise CrowdDataError(
                f"a report on {_kinds.NOUNS[kind]} shows one strategy (-s NAME) and no --truth"
            )
        named = _strategy_names(strategies)
        strategy = named[0] if named else None
        if strategy is not None:
            _kinds.make(kind, strategy, {})  # an unknown name fails before any reading
        outputs = Outputs(overwrite, reads=[data])
        out = outputs.file(output)
        answers = _kinds.read_answers(data, kind, sep, order, tie, duplicates)
        limits = ReportLimits(
            worker_rows=max_worker_rows, task_rows=max_task_rows, plot_points=max_plot_points
        )
        with outputs:
            write_report(
                answers,
                out.staged,
                title=title or f"crowdlearn report: {data}",
                limits=limits,
                strategy=strategy,
            )
        click.echo(f"report: {answers} -> {output}")
        return
    chosen = _strategy_names(strategies) or DEFAULT_STRATEGIES
    models = {name: make_aggregator(name) for name in _strategy_names(strategies)}
    outputs = Outputs(overwrite, reads=input_paths(data, root))
    out = outputs.file(output)
    crowd = load_crowd(data, root, duplicates)
    if use_truth and (crowd.truth is None or not np.any(crowd.truth >= 0)):
        raise CrowdDataError(
            f"--truth: {data} has no known truth (a truth column, or ground_truth.npy "
            "in a peerannot folder); leave out --truth"
        )
    for name, model in models.items():
        # Strategies the user named must fit the data, as `aggregate` requires; the
        # default list adapts (the report notes a strategy it skipped).
        if isinstance(model, KOS) and crowd.n_classes != 2:
            raise CrowdDataError(
                f"-s {name}: KOS handles binary labels only, but {data} has "
                f"{crowd.n_classes} classes"
            )
    limits = ReportLimits(
        worker_rows=max_worker_rows, task_rows=max_task_rows, plot_points=max_plot_points
    )
    with outputs:
        write_report(
            crowd,
            out.staged,
            title=title or f"crowdlearn report: {data}",
            use_truth=use_truth,
            strategies=chosen,
            limits=limits,
            progress=False if quiet else "auto",
            seed=seed,
        )
    click.echo(f"report: {crowd} -> {output}")


def _report_spans(
    data: str,
    output: str,
    strategies: tuple[str, ...],
    use_truth: bool,
    title: str | None,
    max_worker_rows: int,
    max_task_rows: int,
    max_plot_points: int,
    duplicates: str,
    overwrite: bool,
) -> None:
    """The report on spans: one span aggregator (-s NAME), --truth where DATA carry it."""
    from crowdlearn.aggregation.spans._make import make_span_aggregator
    from crowdlearn.cli._spans import read_spans
    from crowdlearn.data import CrowdDataError
    from crowdlearn.report import ReportLimits, write_report

    named = _strategy_names(strategies)
    if len(named) > 1:
        raise CrowdDataError("a report on spans shows one strategy (-s NAME)")
    strategy = named[0] if named else None
    if strategy is not None:
        make_span_aggregator(strategy)  # an unknown name fails before any reading
    outputs = Outputs(overwrite, reads=[data])
    out = outputs.file(output)
    answers = read_spans(data, duplicates)
    if use_truth and answers.truth is None:
        raise CrowdDataError(
            f"--truth: {data} carries no truth (the NER-MTurk layout's ground_truth folder); "
            "leave out --truth"
        )
    limits = ReportLimits(
        worker_rows=max_worker_rows, task_rows=max_task_rows, plot_points=max_plot_points
    )
    with outputs:
        write_report(
            answers,
            out.staged,
            title=title or f"crowdlearn report: {data}",
            limits=limits,
            strategy=strategy,
            use_truth=use_truth,
        )
    click.echo(f"report: {answers} -> {output}")
