"""``crowdlearn bench``: the benchmark runner of a checkout (``python -m benchmarks``).

The named experiments live in the repository's top-level ``benchmarks/`` folder, which
is not installed with the package; ``crowdlearn bench ARGS`` runs the same command as
``python -m benchmarks ARGS`` when that package is importable.
"""

from __future__ import annotations

import click

from crowdlearn.cli._app import cli


@cli.command(
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
    add_help_option=False,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def bench(args: tuple[str, ...]) -> None:
    """Run a named experiment: the same as `python -m benchmarks ARGS` in a checkout."""
    from benchmarks.cli import command

    command.main(list(args), prog_name="crowdlearn bench", standalone_mode=False)
