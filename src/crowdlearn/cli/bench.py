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
@click.option("--list", "list_", is_flag=True, help="List the benchmarks and exit.")
def bench(name: str | None, quick: bool, seeds: int, out: str, list_: bool) -> None:
    """Run benchmark NAME, writing NAME.csv (raw results) and NAME.md (table) to --out."""
    from crowdlearn.bench import BENCHMARKS, run

    if list_ or name is None:
        for benchmark in BENCHMARKS.values():
            click.echo(f"{benchmark.name:20s} {benchmark.description}")
        return
    report = run(name, out, quick=quick, seeds=seeds)
    click.echo(report.read_text())
    click.echo(f"written: {report} and {report.with_suffix('.csv')}")
