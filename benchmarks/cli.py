"""The benchmark runner's command line: ``python -m benchmarks NAME [options]``.

``crowdlearn bench`` run from a checkout calls the same :data:`command` (as
``crowdlearn bench``), so both take the same options and fail the same way: bad input is
one ``crowdlearn: error: ...`` line and exit status 2 (the library's error boundary,
:mod:`crowdlearn.cli._app`). This module imports only click and the standard library;
the registry, and with it every benchmark, is imported when a command runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from crowdlearn.cli._app import EXIT_INTERRUPTED, PREFIX, debugging, fail
from crowdlearn.cli._numbers import number

#: The runner's name in usage lines and error hints.
PROG = "python -m benchmarks"


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("name", required=False)
@click.option("--quick", is_flag=True, help="A small, fast version of the same experiment.")
@click.option(
    "--seeds",
    type=number("--seeds"),
    default=1,
    show_default=True,
    help="Repeats (seeds) to average over.",
)
@click.option(
    "--out",
    "out",
    default="bench-out",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Directory for the CSV/markdown outputs.",
)
@click.option(
    "--pages",
    type=click.Path(file_okay=False),
    help="Also write the table into the benchmark's topic page in this folder (e.g. "
    "benchmarks/pages), replacing the section the benchmark wrote there before.",
)
@click.option(
    "--benchmarks-md",
    type=click.Path(dir_okay=False),
    help="Also write the table into this one file, replacing the section the benchmark "
    "wrote there before.",
)
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace this benchmark's earlier NAME.csv / NAME.md in --out.",
)
@click.option(
    "--protocol",
    type=click.Choice(["valid", "no-truth", "no-truth-share"]),
    default="valid",
    show_default=True,
    help="no-truth: every learner with its defaults and no truth for model selection "
    "(labelme, music); writes NAME-no-truth.csv/md. no-truth-share: the same with one "
    "held-out share and a refit (crowd_folds=1); writes NAME-no-truth-share.csv/md.",
)
@click.option("--list", "list_", is_flag=True, help="List the benchmarks and exit.")
@click.option("--quiet", is_flag=True, help="No progress bars.")
def command(
    name: str | None,
    quick: bool,
    seeds: int,
    out: str,
    pages: str | None,
    benchmarks_md: str | None,
    overwrite: bool,
    protocol: str,
    list_: bool,
    quiet: bool,
) -> None:
    """Run benchmark NAME, writing NAME.csv (raw results) and NAME.md (table) to --out.

    --out collects the results of several benchmarks (and the partial results a
    resumed run continues from), so it may exist; this benchmark's own NAME.csv and
    NAME.md in it are replaced only with --overwrite. --pages and --benchmarks-md name
    files that are updated in place (this benchmark's section), by design.
    """
    from benchmarks import BENCHMARKS, run
    from benchmarks._registry import page_of, protocol_name
    from crowdlearn._progress import progress_scope
    from crowdlearn.cli._output import Outputs
    from crowdlearn.data import CrowdDataError

    if list_ or name is None:
        for benchmark in BENCHMARKS.values():
            click.echo(f"{benchmark.name:20s} {benchmark.description}")
        return
    if name not in BENCHMARKS:
        raise CrowdDataError(f"unknown benchmark {name!r}; known: {sorted(BENCHMARKS)}")
    given, name = name, protocol_name(name, protocol)
    # Check the targets before a run that may take hours; run() writes each file
    # atomically itself (the folder is shared, so it is not staged as a whole).
    checks = Outputs(overwrite)
    if not Path(out).is_dir():
        checks.folder(out, "--out")
    for suffix in (".csv", ".md"):
        checks.file(str(Path(out) / f"{name}{suffix}"), "--out")
    updated = [] if benchmarks_md is None else [(benchmarks_md, "--benchmarks-md")]
    if pages is not None:
        updated.append((str(Path(pages) / f"{page_of(name)}.md"), "--pages"))
    for target, option in updated:
        if Path(target).exists():
            Outputs(overwrite=True).file(target, option)
    with progress_scope(False if quiet else "auto"):  # the bench's bars and its fits'
        report = run(
            given,
            out,
            quick=quick,
            seeds=seeds,
            benchmarks_md=benchmarks_md,
            protocol=protocol,
            pages=pages,
        )
    click.echo(report.read_text())
    click.echo(f"written: {report} and {report.with_suffix('.csv')}")


def main(args: list[str] | None = None, prog_name: str = PROG) -> None:
    """Run :data:`command` as a program: every expected failure is one line on stderr
    (``crowdlearn: error: ...``), exit status 2 for bad input, 130 after Ctrl-C, 70 for
    a bug; ``CROWDLEARN_DEBUG=1`` shows the traceback instead."""
    from crowdlearn._progress import latch_interrupts

    latch_interrupts()
    try:
        status = command.main(args, prog_name=prog_name, standalone_mode=False)
    except click.ClickException as error:
        message = error.format_message()
        if isinstance(error, click.UsageError) and error.ctx is not None:
            message += f" (see '{error.ctx.command_path} --help')"
        click.echo(PREFIX + " ".join(message.split()), err=True)
        sys.exit(error.exit_code)
    except click.exceptions.Abort:  # Ctrl-C while click parsed the command line
        click.echo(PREFIX + "interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except SystemExit:
        raise
    except BaseException as error:
        if debugging():
            raise
        if isinstance(error, BrokenPipeError):
            sys.exit(1)
        fail(error, "bench")
    sys.exit(status if isinstance(status, int) else 0)
