"""Command-line interface: a thin layer over the Python API (``crowdlearn --help``)."""

from crowdlearn.cli import (  # noqa: F401  (importing registers the commands)
    aggregate,
    bench,
    convert,
    datasets,
    demo,
    identify,
    learn,
    report,
    simulate,
)
from crowdlearn.cli._app import cli


def main() -> None:
    """Entry point of the ``crowdlearn`` console script."""
    cli()


__all__ = ["cli", "main"]
