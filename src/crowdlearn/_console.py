"""The ``crowdlearn`` console script's entry point.

It imports the command-line interface inside a ``try``, so that Ctrl-C pressed while
the commands are being imported also ends with one line and exit status 130 (the
console script would otherwise import ``crowdlearn.cli`` before any handler runs).
"""

from __future__ import annotations

import sys

#: Exit status after Ctrl-C (128 + SIGINT), as shells report it.
EXIT_INTERRUPTED = 130


def main() -> None:
    """Run ``crowdlearn``: import the CLI, then hand over to its own error boundary."""
    try:
        from crowdlearn.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("crowdlearn: error: interrupted\n")
        sys.exit(EXIT_INTERRUPTED)
    cli_main()
