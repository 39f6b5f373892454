"""Command-line interface: a thin layer over the Python API (``crowdlearn --help``)."""

from crowdlearn.cli import bench, convert, datasets, demo, simulate  # noqa: F401  (registers)
from crowdlearn.cli._app import cli


def main() -> None:
    """Entry point of the ``crowdlearn`` console script."""
    cli()


__all__ = ["cli", "main"]
