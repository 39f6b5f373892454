"""Options shared by the commands that read long files: ``--columns`` and ``--truth-column``.

:func:`reading_options` adds both options to a command and runs its body inside
:func:`crowdlearn.io.default_columns`, so every :func:`crowdlearn.io.read` of the
command uses the user's column names without the body passing them along. It also
prints the note of :class:`~crowdlearn.data.ColumnsRecognizedWarning` (columns taken
from common header spellings) as one ``crowdlearn: note:`` line on stderr.
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import click

from crowdlearn.cli._app import note


def input_paths(data: str, root: str | None = None) -> list[str]:
    """The files a command reads for DATA: the files of a registry dataset (``labelme``)
    that are present, the files of a glob or folder of batches, nothing for ``-``
    (standard input), else DATA itself (declared with :meth:`Outputs.reads`, so that no
    output may replace them)."""
    from crowdlearn import datasets
    from crowdlearn.io._files import batch_files, is_batch_source

    if data == "-":
        return []
    if data in datasets.list():
        base = datasets.data_root(root)
        present = (base / rel for rel in datasets.info(data).files)
        return [str(path) for path in present if path.exists()]
    if is_batch_source(data):  # a glob or a folder of batches: the files it reads
        return [str(path) for path in batch_files(data)]
    return [data]


#: The roles ``--columns`` names (the keys of ``columns=`` in the Python API).
_ROLES = ("task", "worker", "label", "truth", "left", "right")


def parse_columns(
    ctx: click.Context | None, param: click.Parameter | None, value: str | None
) -> dict[str, str] | None:
    """``task=question,worker=worker,label=answer`` as a role -> column mapping."""
    if value is None:
        return None
    mapping: dict[str, str] = {}
    for item in value.split(","):
        role, sep, name = (part.strip() for part in item.partition("="))
        if not sep or not role or not name:
            raise click.BadParameter(
                f"expected ROLE=COLUMN pairs separated by commas, e.g. "
                f"task=question,worker=worker,label=answer; got {item!r}",
                ctx=ctx,
                param=param,
            )
        if role not in _ROLES:
            raise click.BadParameter(
                f"unknown role {role!r}; the roles are {', '.join(_ROLES)}", ctx=ctx, param=param
            )
        if role in mapping:
            raise click.BadParameter(f"role {role!r} is named twice", ctx=ctx, param=param)
        mapping[role] = name
    return mapping


@contextlib.contextmanager
def notes_on_stderr() -> Iterator[None]:
    """Print recognised-columns warnings as ``crowdlearn: note: using columns ...`` and
    data warnings (ids that differ only by spaces, ``1`` and ``1.0`` as two classes) as
    one ``crowdlearn: warning: ...`` line; other warnings go to the usual handler."""
    from crowdlearn.data import ColumnsRecognizedWarning, CrowdDataWarning
    from crowdlearn.io._files import ReadNoteWarning

    with warnings.catch_warnings():
        # "always": a note per read, even when the same code read before in this process.
        warnings.simplefilter("always", ColumnsRecognizedWarning)
        warnings.simplefilter("always", ReadNoteWarning)
        previous = warnings.showwarning

        def show(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
            if isinstance(message, ColumnsRecognizedWarning):
                described = ", ".join(f"{r}={n}" for r, n in message.columns.items())
                note(f"crowdlearn: note: using columns {described}")
                return
            if isinstance(message, ReadNoteWarning):
                note(f"crowdlearn: note: {message}")
                return
            if isinstance(message, CrowdDataWarning):
                text = " ".join(str(message).split())
                note(f"crowdlearn: warning: {text}")
                return
            previous(message, category, *args, **kwargs)

        warnings.showwarning = show
        yield


#: ``--duplicates``, shared by every command that reads crowd answers.
duplicates_option = click.option(
    "--duplicates",
    type=click.Choice(["error", "keep", "first", "last"]),
    default="error",
    show_default=True,
    help="What to do with repeated (task, worker) pairs.",
)


def reading_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--columns`` and ``--truth-column`` to a click command callback.

    Put it right under ``@cli.command()``; the callback does not receive the options.
    """

    @click.option(
        "--columns",
        metavar="ROLE=COLUMN,...",
        callback=parse_columns,
        help="Columns of a long CSV/Parquet file, e.g. task=question,worker=worker,label=answer "
        "(roles task, worker, label, truth). Without it, the columns task, worker, label "
        "are used, else common spellings (question/item, annotator/user, answer/response, "
        "...) with a note.",
    )
    @click.option(
        "--truth-column",
        metavar="COLUMN",
        help="Column of a long file holding each task's true label (default: 'truth' when "
        "present).",
    )
    @click.option(
        "--answer",
        metavar="COLUMN",
        help="A platform export's answer column (field) when it has several, e.g. "
        "Answer.category (MTurk), OUTPUT:result (Toloka), a CrowdFlower job field.",
    )
    @click.option(
        "--task-field",
        metavar="COLUMN",
        help="A platform export's column that identifies the task (e.g. Input.image_url "
        "instead of MTurk's HITId).",
    )
    @click.option(
        "--keep-rejected",
        is_flag=True,
        help="Keep a platform export's rejected assignments (MTurk, Toloka) and tainted "
        "judgments (CrowdFlower), left out by default.",
    )
    @functools.wraps(command)
    def wrapper(
        *args: Any,
        columns: dict[str, str] | None,
        truth_column: str | None,
        answer: str | None,
        task_field: str | None,
        keep_rejected: bool,
        **kwargs: Any,
    ) -> Any:
        from crowdlearn.io import default_columns
        from crowdlearn.io._source import reading_session
        from crowdlearn.io.platforms import platform_options

        # The Dask engine reads Parquet with dask itself, not crowdlearn.io.read.
        if kwargs.get("engine") == "dask" and (columns or truth_column):
            raise click.UsageError(
                "--columns and --truth-column are not supported with --engine dask; "
                "name the Parquet columns task, worker, label"
            )
        with (
            default_columns(columns, truth_column),
            platform_options(answer, task_field, keep_rejected),
            notes_on_stderr(),
            reading_session(),
        ):
            return command(*args, **kwargs)

    return wrapper
