"""``crowdlearn bench``: run a named experiment and write its tables."""

from __future__ import annotations

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
@click.option("--list", "list_", is_flag=True, help="List the benchmarks and exit.")
@click.option("--quiet", is_flag=True, help="No progress bars.")
def bench(
    name: str | None,
    quick: bool,
    seeds: int,
    out: str,
    benchmarks_md: str | None,
    list_: bool,
    quiet: bool,
) -> None:
    """Run benchmark NAME, writing NAME.csv (raw results) and NAME.md (table) to --out."""
    from crowdlearn._progress import progress_scope
    from crowdlearn.bench import BENCHMARKS, run

    if list_ or name is None:
        for benchmark in BENCHMARKS.values():
            click.echo(f"{benchmark.name:20s} {benchmark.description}")
        return
    with progress_scope(False if quiet else "auto"):  # the bench's bars and its fits'
        report = run(name, out, quick=quick, seeds=seeds, benchmarks_md=benchmarks_md)
    click.echo(report.read_text())
    click.echo(f"written: {report} and {report.with_suffix('.csv')}")
