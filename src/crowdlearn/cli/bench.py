"""``crowdlearn bench``: a launcher for the benchmark runner of a checkout.

The named experiments live in the repository's top-level ``benchmarks/`` folder, which
is not installed with the package; they run with ``python -m benchmarks NAME`` from a
checkout. ``crowdlearn bench ARGS`` runs that same runner when it can find it (the
``benchmarks`` package importable, the current folder a checkout, or the checkout this
``crowdlearn`` is installed from in development mode), and otherwise says where the
experiments are, in one line and with exit status 2.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from types import ModuleType

import click

from crowdlearn.cli._app import EXIT_BAD_INPUT, cli

#: What the launcher says when no checkout is found.
NOT_FOUND = (
    "the benchmarks are not installed with crowdlearn: they live in the benchmarks/ "
    "folder of the crowdlearn repository and run with `python -m benchmarks NAME` from "
    "a checkout (`python -m benchmarks --list` lists them)"
)


class BenchmarksNotFound(click.ClickException):
    """No benchmark runner here: one line, exit status 2."""

    exit_code = EXIT_BAD_INPUT


def checkout_candidates() -> list[Path]:
    """Folders that may be a checkout holding ``benchmarks/``: the current folder, then
    the one this ``crowdlearn`` was imported from (``src/crowdlearn`` of an editable
    install)."""
    import crowdlearn

    return [Path.cwd(), Path(crowdlearn.__file__).resolve().parents[2]]


def _runner_of(module: ModuleType) -> click.Command | None:
    command = getattr(module, "command", None)
    return command if isinstance(command, click.Command) else None


def find_runner() -> click.Command | None:
    """The click command of the checkout's ``benchmarks.cli``, or None."""
    try:
        return _runner_of(importlib.import_module("benchmarks.cli"))
    except ImportError:
        pass
    if sys.modules.get("benchmarks") is not None:
        # another project's "benchmarks" (or a folder of that name) answered: forget it
        del sys.modules["benchmarks"]
    for root in checkout_candidates():
        if not (root / "benchmarks" / "cli.py").is_file():
            continue
        if not (root / "src" / "crowdlearn").is_dir():
            continue  # a benchmarks/ folder of another project
        sys.path.insert(0, os.fspath(root))
        try:
            return _runner_of(importlib.import_module("benchmarks.cli"))
        except ImportError:
            sys.path.remove(os.fspath(root))
    return None


@cli.command(
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
    add_help_option=False,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def bench(args: tuple[str, ...]) -> None:
    """Run a named experiment: the same as `python -m benchmarks ARGS` in a checkout.

    The experiments are not installed with the package; they live in the repository's
    benchmarks/ folder. From a checkout (or with crowdlearn installed from one with
    `pip install -e .`), `crowdlearn bench --help` shows the runner's options and
    `crowdlearn bench --list` lists the benchmarks.
    """
    runner = find_runner()
    if runner is None:
        if any(arg in ("-h", "--help") for arg in args):
            context = click.get_current_context()
            click.echo(context.get_help())
            return
        raise BenchmarksNotFound(NOT_FOUND)
    runner.main(list(args), prog_name="crowdlearn bench", standalone_mode=False)
