"""``--texts``, ``--tokens`` and ``--scheme``: the inputs of ``--kind spans`` beside DATA.

The options are added to every command that takes ``--kind`` (:func:`span_inputs`)
without reaching the command's parameters: each one's value is kept in
:func:`crowdlearn.io.spans.span_options`' context (``crowdlearn.io._span_options``,
which loads no numpy or pandas) for this invocation, where
:func:`crowdlearn.io.spans.read_spans` finds it (the command reads DATA as it reads
every kind). :func:`given` says which were given, for the error when the kind is not
spans.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

#: Option -> help.
OPTIONS = {
    "--texts": "--kind spans, DATA a long CSV (task, worker, start, end, label): the texts "
    "of its tasks, a CSV with columns task and text or a folder of TASK.txt files; start "
    "and end are then character offsets (end exclusive).",
    "--tokens": "--kind spans: reference tokens, a CoNLL file ('-DOCSTART- TASK', then one "
    "token a line) or a folder of TASK.txt CoNLL files; for a long CSV, start and end are "
    "then token indices; Label Studio and Prodigy answers are aligned to these tokens.",
    "--scheme": "--kind spans, CoNLL input: the tag scheme (bio, iob1, bioes, io; default bio).",
}


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    from crowdlearn.io import _span_options as spans

    current = dict(spans._OPTIONS.get() or {})
    current[param.name] = value
    spans._OPTIONS.set(current)
    return value


def span_inputs(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--texts``, ``--tokens`` and ``--scheme`` (kept for the span readers)."""
    for name, text in reversed(OPTIONS.items()):
        command = click.option(
            name,
            metavar="FILE" if name != "--scheme" else "NAME",
            type=click.Choice(["bio", "iob1", "bioes", "io"]) if name == "--scheme" else str,
            expose_value=False,
            callback=_remember,
            help=text,
        )(command)
    return command


def given() -> list[str]:
    """The span input options given to this invocation."""
    from crowdlearn.io import _span_options as spans

    current = spans._OPTIONS.get() or {}
    return [f"--{name}" for name in ("texts", "tokens", "scheme") if current.get(name) is not None]
