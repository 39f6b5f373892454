"""``crowdlearn convert``: read crowd data in one format, write it in another."""

from __future__ import annotations

import click

from crowdlearn.cli._app import cli
from crowdlearn.cli._reading import reading_options

FORMAT_CHOICE = click.Choice(["csv", "parquet", "peerannot", "matrix"])


@cli.command()
@reading_options
@click.argument("source", type=click.Path())
@click.option("-o", "--output", required=True, type=click.Path(), help="Destination path.")
@click.option(
    "--from",
    "source_format",
    type=FORMAT_CHOICE,
    help="Format of SOURCE (default: from its name).",
)
@click.option(
    "--to",
    "target_format",
    type=FORMAT_CHOICE,
    help="Format of the output (default: from its name).",
)
@click.option(
    "--duplicates",
    type=click.Choice(["error", "keep", "first", "last"]),
    default="error",
    show_default=True,
    help="What to do with repeated (task, worker) pairs.",
)
def convert(
    source: str, output: str, source_format: str | None, target_format: str | None, duplicates: str
) -> None:
    """Convert crowd data SOURCE to OUTPUT (long CSV/Parquet, peerannot folder, matrix)."""
    from crowdlearn.io import detect_format, read, write

    options = (
        {} if (source_format or detect_format(source)) == "matrix" else {"duplicates": duplicates}
    )  # an answer matrix cannot hold a pair twice
    data = read(source, format=source_format, **options)
    write(data, output, format=target_format)
    click.echo(f"{data} -> {output}")
