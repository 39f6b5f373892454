"""The ``crowdlearn`` command group and the error handling every command shares."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

#: Exit status for bad input (invalid data, unknown dataset, bad option values),
#: the same status click uses for usage errors.
EXIT_BAD_INPUT = 2


#: Set this environment variable to see the traceback instead of the one-line error.
DEBUG_ENV = "CROWDLEARN_DEBUG"


class CrowdGroup(click.Group):
    """A click group that turns invalid input into one line on stderr and exit 2.

    Invalid data raise :class:`CrowdDataError`; invalid parameter values raise
    ``ValueError`` (scikit-learn's convention), of which CrowdDataError is a subclass.
    """

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ValueError as error:
            if os.environ.get(DEBUG_ENV):
                raise
            click.echo(f"crowdlearn: error: {error}", err=True)
            sys.exit(EXIT_BAD_INPUT)


@click.group(cls=CrowdGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="crowdlearn", prog_name="crowdlearn")
def cli() -> None:
    """Learning from crowds: aggregate noisy crowd labels and learn from them.

    Every command reads and writes the same formats (long CSV/Parquet with columns
    task, worker, label; the peerannot answers.json folder; the -1 answer matrix),
    keeps the user's task/worker/class ids, and writes its outputs atomically.
    """
