"""``crowdlearn bench``: run a named experiment and write its tables."""

from __future__ import annotations

from pathlib import Path

import click

from crowdlearn.cli._app import cli


@cli.command()
@click.argument("name", required=False)
@click.option("--quick", is_flag=True, help="A small, fast version of the same experiment.")
@click.option("--seeds", default=1, show_default=True, help="Repeats (seeds) to average over.")
@click.option(
    "--out",
    "out",
    default="bench-out",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Directory for the CSV/markdown outputs.",
)
@click.option(
    "--benchmarks-md",
    type=click.Path(dir_okay=False),
    help="Also write the table into this file (e.g. BENCHMARKS.md), replacing the "
    "section the benchmark wrote there before.",
)
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace this benchmark's earlier NAME.csv / NAME.md in --out.",
)
@click.option(
    "--protocol",
    type=click.Choice(["valid", "no-truth", "no-truth-share"]),
    default="valid",
    show_default=True,
    help="no-truth: every learner with its defaults and no truth for model selection "
    "(labelme, music); writes NAME-no-truth.csv/md. no-truth-share: the same with one "
    "held-out share and a refit (crowd_folds=1); writes NAME-no-truth-share.csv/md.",
)
@click.option("--list", "list_", is_flag=True, help="List the benchmarks and exit.")
@click.option("--quiet", is_flag=True, help="No progress bars.")
def bench(
    name: str | None,
    quick: bool,
    seeds: int,
    out: str,
    benchmarks_md: str | None,
    overwrite: bool,
    protocol: str,
    list_: bool,
    quiet: bool,
) -> None:
    """Run benchmark NAME, writing NAME.csv (raw results) and NAME.md (table) to --out.

    --out collects the results of several benchmarks (and the partial results a
    resumed run continues from), so it may exist; this benchmark's own NAME.csv and
    NAME.md in it are replaced only with --overwrite. --benchmarks-md is a file that
    is updated in place (this benchmark's section), by design.
    """
    from crowdlearn._progress import progress_scope
    from crowdlearn.bench import BENCHMARKS, run
    from crowdlearn.bench._registry import protocol_name
    from crowdlearn.cli._output import Outputs
    from crowdlearn.data import CrowdDataError

    if list_ or name is None:
        for benchmark in BENCHMARKS.values():
            click.echo(f"{benchmark.name:20s} {benchmark.description}")
        return
    if name not in BENCHMARKS:
        raise CrowdDataError(f"unknown benchmark {name!r}; known: {sorted(BENCHMARKS)}")
    given, name = name, protocol_name(name, protocol)
    # Check the targets before a run that may take hours; bench.run writes each file
    # atomically itself (the folder is shared, so it is not staged as a whole).
    checks = Outputs(overwrite)
    if not Path(out).is_dir():
        checks.folder(out, "--out")
    for suffix in (".csv", ".md"):
        checks.file(str(Path(out) / f"{name}{suffix}"), "--out")
    if benchmarks_md is not None and Path(benchmarks_md).exists():
        Outputs(overwrite=True).file(benchmarks_md, "--benchmarks-md")
    with progress_scope(False if quiet else "auto"):  # the bench's bars and its fits'
        report = run(
            given, out, quick=quick, seeds=seeds, benchmarks_md=benchmarks_md, protocol=protocol
        )
    click.echo(report.read_text())
    click.echo(f"written: {report} and {report.with_suffix('.csv')}")
