"""The ``crowdlearn`` command group and the error boundary every command shares.

Every expected failure becomes exactly one line on stderr, ``crowdlearn: error: ...``:

==============================================  ==================================  ========
exception                                       line                                exit
==============================================  ==================================  ========
CrowdDataError, ValueError, TypeError           the message, API advice as flags    2
FileNotFoundError on an input                   ``no such file or directory: PATH``  2
OSError while writing an output                 ``cannot write PATH: reason``       2
other OSError                                   ``PATH: reason``                    2
MemoryError                                     ``not enough memory to ...``        2
KeyboardInterrupt (Ctrl-C), also at start-up    ``interrupted``                     130
SIGTERM, SIGHUP (handled like Ctrl-C)           ``terminated by SIGTERM``           143, 129
BrokenPipeError (``crowdlearn ... | head``)      no line (as click does)             1
anything else (a bug)                           ``internal error, please report``   70
==============================================  ==================================  ========

``crowdlearn --debug ...`` or ``CROWDLEARN_DEBUG=1`` re-raises instead, traceback and all.
TypeError counts as bad input because the library raises it on purpose for arguments
of the wrong type (it is how the API says "expected a path, got 42").

This module imports only click and the standard library (``crowdlearn --help`` is fast).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import warnings
from collections.abc import Iterator
from typing import Any, NoReturn

import click

#: Exit status for bad input (invalid data, unknown dataset, bad option values, an
#: output that may not be written), the same status click uses for usage errors.
EXIT_BAD_INPUT = 2
#: Exit status for an unexpected exception (a bug): EX_SOFTWARE of sysexits.h.
EXIT_INTERNAL = 70
#: Exit status after Ctrl-C: 128 + SIGINT, as shells report it.
EXIT_INTERRUPTED = 130

#: Set this environment variable to see the traceback instead of the one-line error.
DEBUG_ENV = "CROWDLEARN_DEBUG"

PREFIX = "crowdlearn: error: "

#: API advice in library messages -> what a CLI user types instead. Each entry is
#: (pattern, replacement, commands it applies to or None for all). Kept in one table so
#: a new library message needs one new line here, not a patch in every command.
CLI_HINTS: list[tuple[str, str, tuple[str, ...] | None]] = [
    (
        r"pass duplicates='keep', 'first' or 'last'",
        "pass --duplicates keep, first or last",
        None,
    ),
    (
        r"build the data with duplicates='first' or 'last', or use CSV or Parquet",
        "read it with --duplicates first or last, or write CSV or Parquet",
        None,
    ),
    (
        r"for anonymous annotations \(no worker column\) pass worker=None",
        "the file needs the columns task, worker and label",
        None,
    ),
    (
        r"pass drop_ids=True to write the codes instead",
        "write CSV or Parquet instead, which keep the ids",
        None,
    ),
    (r"pass format= \(", "pass --from or --to (", ("convert",)),
    (r"pass format= \(", "pass --format (", ("datasets",)),
    (r"pass format= \(one of [^)]*\) or use", "rename it to", None),
    (r"; pass format= \(one of [^)]*\)", "", None),
    (r"pass root= \(or set", "pass --root (or set", None),
    (
        r"pass random_state=0 or tie_break='lowest'",
        "pass --param random_state=0 or --param tie_break=lowest",
        None,
    ),
    (r"use setting='global'", "pass --param setting=global", None),
    (r"the learning rate lr \(now", "the learning rate --lr (now", None),
    (r"pass valid=None to silence this", "pass --valid none to silence this", None),
    (r"\(valid_share=([^)]*)\)", r"(--valid-share \1)", None),
    (r"\(crowd_folds=([^)]*)\)", r"(--crowd-folds \1)", None),
    (r"n_clusters=(\d+) but", r"n_clusters (L) = \1 but", None),
]


#: How torch says an allocation failed (CPU: "DefaultCPUAllocator: can't allocate
#: memory: you tried to allocate N bytes", CUDA: "CUDA out of memory. Tried to ...").
_ALLOCATION_FAILED = re.compile(
    r"(you tried to allocate \d+ bytes|can't allocate memory|CUDA out of memory)"
)


#: Columns of the estimators' ``history_`` that hold wall-clock times.
TIMING_COLUMNS = ("seconds",)


def without_timings(history: Any) -> Any:
    """``history`` (a DataFrame, or None) without its wall-clock columns: the files a
    command writes define a result, and the same command run twice must write the same
    bytes (``history_`` in Python keeps the timings)."""
    if history is None:
        return None
    return history.drop(columns=[c for c in TIMING_COLUMNS if c in history.columns])


def cli_message(message: str, command: str | None = None) -> str:
    """``message`` with the API advice it gives rewritten as CLI flags (see CLI_HINTS)."""
    for pattern, replacement, commands in CLI_HINTS:
        if commands is None or command in commands:
            message = re.sub(pattern, replacement, message)
    return message


def _one_line(text: str) -> str:
    """Messages may span lines (pandas'); the contract is one line."""
    return " ".join(text.split())


def describe(error: BaseException, command: str | None = None) -> tuple[str, int]:
    """The one-line message (without the prefix) and the exit status for ``error``."""
    from crowdlearn.cli._output import OutputError

    if isinstance(error, KeyboardInterrupt):
        signum = getattr(error, "signum", None)  # crowdlearn._progress.Terminated
        if signum is not None:
            return f"terminated by {_signal_name(signum)}", 128 + signum
        return "interrupted", EXIT_INTERRUPTED
    if isinstance(error, MemoryError):
        detail = f": {error}" if str(error) else ""
        where = f"run {command!r}" if command else "run this command"
        return f"not enough memory to {where}{detail}", EXIT_BAD_INPUT
    if isinstance(error, OutputError):
        return f"cannot write {error.target}: {error.strerror}", EXIT_BAD_INPUT
    if isinstance(error, FileNotFoundError) and error.filename is not None:
        return f"no such file or directory: {error.filename}", EXIT_BAD_INPUT
    if isinstance(error, OSError):
        reason = error.strerror or str(error)
        if error.filename is not None:
            return f"{error.filename}: {reason}", EXIT_BAD_INPUT
        return reason, EXIT_BAD_INPUT
    if isinstance(error, (ValueError, TypeError)):
        return cli_message(str(error), command), EXIT_BAD_INPUT
    if isinstance(error, RuntimeError) and _ALLOCATION_FAILED.search(str(error)):
        # torch's allocators raise RuntimeError (CPU) or OutOfMemoryError (CUDA)
        where = f"run {command!r}" if command else "run this command"
        detail = _ALLOCATION_FAILED.search(str(error)).group(0)  # type: ignore[union-attr]
        return f"not enough memory to {where} ({detail})", EXIT_BAD_INPUT
    return (
        f"internal error, please report: {type(error).__name__}: {error}",
        EXIT_INTERNAL,
    )


def _signal_name(signum: int) -> str:
    import signal

    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def fail(error: BaseException, command: str | None = None) -> NoReturn:
    """Print ``error`` as one ``crowdlearn: error:`` line and exit with its status."""
    message, status = describe(error, command)
    _close_progress_bars()
    click.echo(PREFIX + _one_line(message), err=True)
    sys.exit(status)


def _close_progress_bars() -> None:
    """End the progress bars an interrupted command left open, so the error line starts
    on a line of its own (not after a half-drawn bar)."""
    tqdm_module = sys.modules.get("tqdm")  # only if a command used one: never import it
    if tqdm_module is None:
        return
    from crowdlearn._progress import open_bars

    broken = False
    for bar in list(getattr(tqdm_module.tqdm, "_instances", ())):
        try:
            bar.close()
        except Exception:  # a bar interrupted while it was being built cannot close
            broken = True
    # a bar interrupted while it drew itself may be gone from tqdm's (weak) list, but
    # not from our count: its line is still unfinished
    if broken or open_bars() > 0:
        click.echo("", err=True)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's last flush cannot fail again
    (the recipe of Python's signal docs for SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # a stream without a file descriptor (tests)
        pass


#: The notes of the running command, printed when it succeeds (see warnings_as_notes).
_pending_notes: list[str] | None = None


def note(line: str) -> None:
    """Show ``line`` (``crowdlearn: note: ...`` or ``crowdlearn: warning: ...``) on
    stderr once the running command succeeds; printed at once outside a command."""
    if _pending_notes is None:
        click.echo(line, err=True)
    elif line not in _pending_notes:
        _pending_notes.append(line)


@contextlib.contextmanager
def warnings_as_notes(command: str | None) -> Iterator[None]:
    """Show every Python warning raised while a command runs as one line,
    ``crowdlearn: warning: ...``, in the CLI's words (:data:`CLI_HINTS`), without the
    source path and line that Python's default display adds.

    The notes are printed when the command ends without error, each distinct one once.
    A command that fails prints its one error line and nothing else: a note printed
    before it (``using columns ...``) would be a second line about a run that wrote
    nothing.
    """
    global _pending_notes
    outer, _pending_notes = _pending_notes, []
    succeeded = False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")

            def show(message: Any, category: Any, *args: Any, **kwargs: Any) -> None:
                note(f"crowdlearn: warning: {_one_line(cli_message(str(message), command))}")

            warnings.showwarning = show
            yield
        succeeded = True
    finally:
        lines, _pending_notes = _pending_notes, outer
        if succeeded:
            for line in lines:
                note(line)


def debugging(ctx: click.Context | None = None) -> bool:
    """Whether ``--debug`` or ``CROWDLEARN_DEBUG`` asks for tracebacks."""
    if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
        return True
    return bool(ctx is not None and ctx.params.get("debug"))


class CrowdGroup(click.Group):
    """A click group whose commands fail with one line on stderr (see the module doc)."""

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        """Run the group; click's own usage errors become one line too.

        Click prints a usage error as three lines (usage, hint, error); the contract
        is one line, so it runs click non-standalone and prints the error itself,
        pointing at ``--help`` for the usage.
        """
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        try:
            status = super().main(*args, standalone_mode=False, **kwargs)
        except click.ClickException as error:
            message = error.format_message()
            if isinstance(error, click.UsageError) and error.ctx is not None:
                message += f" (see '{error.ctx.command_path} --help')"
            click.echo(PREFIX + _one_line(message), err=True)
            sys.exit(error.exit_code)
        except click.exceptions.Abort:  # Ctrl-C while click parsed the command line
            click.echo(PREFIX + "interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        sys.exit(status if isinstance(status, int) else 0)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with warnings_as_notes(ctx.invoked_subcommand):
                return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.exceptions.Abort):
            raise  # click's own, handled by main()
        except SystemExit:
            raise
        except BaseException as error:
            if debugging(ctx):
                raise
            if isinstance(error, BrokenPipeError):
                # `crowdlearn ... | head`: the reader left; no error line (as click does).
                _silence_stdout()
                sys.exit(1)
            fail(error, ctx.invoked_subcommand)


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
@click.option(
    "--debug",
    is_flag=True,
    help="Show the traceback of an error (same as CROWDLEARN_DEBUG=1).",
)
@click.pass_context
def cli(ctx: click.Context, data_root: str | None, debug: bool) -> None:
    """Learning from crowds: aggregate noisy crowd labels and learn from them.

    Every command reads and writes the same formats (long CSV/Parquet with columns
    task, worker, label; the peerannot answers.json folder; the -1 answer matrix),
    keeps the user's task/worker/class ids, and writes its outputs all-or-nothing:
    an existing output is replaced only with --overwrite.

    Real datasets (labelme, music, ...): `crowdlearn datasets fetch NAME` downloads one
    into the data root; --data-root DIR or CROWDLEARN_DATA=DIR chooses that folder.
    """
    _use_data_root(ctx, data_root)
