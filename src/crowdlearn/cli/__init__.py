"""Command-line interface: a thin layer over the Python API (``crowdlearn --help``)."""

import sys

try:
    from crowdlearn.cli import (  # noqa: F401  (importing registers the commands)
        aggregate,
        bench,
        convert,
        datasets,
        demo,
        identify,
        inspect,
        learn,
        next,
        predict,
        report,
        simulate,
    )
    from crowdlearn.cli._app import cli
except KeyboardInterrupt:
    # Ctrl-C while the console script imports the commands: one line and exit 130, not
    # a traceback. Only when running as the ``crowdlearn`` script; a Python session
    # importing this module gets its KeyboardInterrupt back.
    from crowdlearn.cli._app import debugging, fail

    if not sys.argv or not sys.argv[0].endswith("crowdlearn") or debugging():
        raise

    fail(KeyboardInterrupt())


def main() -> None:
    """Entry point of the ``crowdlearn`` console script.

    Ctrl-C is caught around everything (the command imports above included), so it
    always ends with one line and exit 130.
    """
    from crowdlearn._progress import latch_interrupts
    from crowdlearn.cli._app import debugging, fail

    latch_interrupts()
    try:
        cli(prog_name="crowdlearn")
    except KeyboardInterrupt as error:
        if debugging():
            raise
        fail(error)


__all__ = ["cli", "main"]
