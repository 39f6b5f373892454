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


#: The environment variable naming the datasets' folder (``crowdlearn.datasets`` reads
#: it; spelled here so that the command group does not import the registry).
DATA_ENV = "CROWDLEARN_DATA"
#: ``ctx.meta`` key under which ``--data-root`` is kept for ``crowdlearn datasets path``.
DATA_ROOT_META = "crowdlearn.data_root"


def _use_data_root(ctx: click.Context, data_root: str | None) -> None:
    """Make ``--data-root`` the datasets' folder of every command of this invocation.

    It is set as ``CROWDLEARN_DATA`` for the process (so that every loader, and child
    processes such as benchmarks, use it) and put back as it was when the command ends.
    """
    if data_root is None:
        return
    # Absolute, so that child processes started in another folder find it too.
    data_root = os.path.abspath(os.path.expanduser(data_root))
    previous = os.environ.get(DATA_ENV)
    os.environ[DATA_ENV] = data_root
    ctx.meta[DATA_ROOT_META] = data_root

    def restore() -> None:
        if previous is None:
            os.environ.pop(DATA_ENV, None)
        else:
            os.environ[DATA_ENV] = previous

    ctx.call_on_close(restore)


@click.group(cls=CrowdGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="crowdlearn", prog_name="crowdlearn")
@click.option(
    "--data-root",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help=f"Folder of the real datasets (default: ${DATA_ENV}, else the user cache "
    "directory; `crowdlearn datasets path` prints it).",
)
@click.pass_context
def cli(ctx: click.Context, data_root: str | None) -> None:
    """Learning from crowds: aggregate noisy crowd labels and learn from them.

    Every command reads and writes the same formats (long CSV/Parquet with columns
    task, worker, label; the peerannot answers.json folder; the -1 answer matrix),
    keeps the user's task/worker/class ids, and writes its outputs atomically.

    Real datasets (labelme, music, ...): `crowdlearn datasets fetch NAME` downloads one
    into the data root; --data-root DIR or CROWDLEARN_DATA=DIR chooses that folder.
    """
    _use_data_root(ctx, data_root)
