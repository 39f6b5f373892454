"""``crowdlearn inspect``: how a file would be read, without writing anything."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import click

import crowdlearn.cli._kinds as _kinds
from crowdlearn.cli._app import cli
from crowdlearn.cli._kinds import kind_options
from crowdlearn.cli._reading import duplicates_option, reading_options

#: The format line of spans (the layouts are listed in docs/spans.md and docs/formats.md).
SPANS_FORMAT = "spans, read by the span readers of crowdlearn.io"


def _container(data: str) -> str:
    """What DATA is on disk: a file (and its compression), a folder or a batch."""
    from crowdlearn.io._files import batch_files, compression, is_batch_source

    if data == "-":
        codec = compression(data)
        return f"standard input, {codec}-compressed" if codec else "standard input"
    if is_batch_source(data):
        files = batch_files(data)
        return f"a batch of {len(files)} files ({files[0].name} ... {files[-1].name})"
    path = Path(data)
    if path.is_dir():
        return "a folder"
    codec = compression(path)
    return f"a {codec}-compressed file" if codec else "a file"


def _format(data: str) -> str:
    from crowdlearn.data import CrowdDataError
    from crowdlearn.io import detect_format
    from crowdlearn.io._files import is_batch_source, sniff_delimiter
    from crowdlearn.io.platforms import _NAMES, _cached_export, recognise

    platform = recognise(data)
    if platform is not None:
        return _NAMES[_cached_export(data).platform]
    if is_batch_source(data):
        return "long CSV/TSV tables"
    try:
        fmt = detect_format(data)
    except CrowdDataError as error:
        return f"not recognised ({error})"
    if fmt == "csv":
        names = {",": "commas", ";": "semicolons", "\t": "tabs", "|": "pipes"}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return f"a long CSV/TSV table (fields separated by {names[sniff_delimiter(data)]})"
    return {
        "parquet": "a long Parquet table",
        "peerannot": "a peerannot folder (answers.json)",
        "matrix": "an answer matrix",
    }[fmt]


def _plain_columns(data: str, kind: str) -> str | None:
    """The roles of a plain long table's columns (None for other formats)."""
    from crowdlearn.data import CrowdDataError
    from crowdlearn.data._headers import resolve_columns
    from crowdlearn.io._dispatch import _with_default_columns
    from crowdlearn.io.kinds import _header

    try:
        header = _header(Path(data))
    except (CrowdDataError, OSError):
        return None
    if not header:
        return None
    if kind == "comparison":
        return "worker, left, right, label (crowd-kit's layout)"
    options = _with_default_columns({})
    mapping = {
        k: v for k, v in (options.get("columns") or {}).items() if k not in ("left", "right")
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = resolve_columns(
            header, mapping, truth="truth", truth_column=options.get("truth_column")
        )
    return found.describe()


def _counts(answers: Any) -> list[str]:
    import numpy as np

    lines = [f"annotations: {answers.n_annotations}", f"workers: {answers.n_workers}"]
    if getattr(answers, "kind", "class") == "comparison":
        lines.insert(0, f"items: {answers.n_items}")
        return lines
    lines.insert(0, f"tasks: {answers.n_tasks}")
    if hasattr(answers, "classes"):
        shown = ", ".join(map(str, answers.classes[:10].tolist()))
        more = f" ... ({len(answers.classes)} in all)" if len(answers.classes) > 10 else ""
        lines.append(f"classes: {shown}{more}")
    if getattr(answers, "kind", None) == "spans":
        marked = int((answers.label >= 0).sum())
        lines += [f"labels: {', '.join(map(str, answers.labels.tolist()))}",
                  f"tokens: {int(answers.n_tokens.sum())}", f"spans marked: {marked}"]  # fmt: skip
        if answers.truth is not None:
            lines.append(f"true spans: {int((answers.truth['label'] >= 0).sum())}")
        return lines
    if getattr(answers, "levels", None) is not None:
        lines.append(f"order: {', '.join(map(str, answers.levels.tolist()))}")
    truth = getattr(answers, "truth", None)
    if truth is not None:
        known = np.isfinite(truth).all(axis=-1) if truth.dtype.kind == "f" else truth >= 0
        if known.ndim > 1:
            known = known.all(axis=1)
        lines.append(f"tasks with a known truth: {int(np.sum(known))}")
    return lines


@cli.command()
@reading_options
@click.argument("data", type=click.Path())
@duplicates_option
@kind_options
def inspect(
    data: str,
    duplicates: str,
    kind: str | None,
    sep: str | None,
    order: str | None,
    tie: str | None,
) -> None:
    """Say how DATA would be read: the format recognised (a platform's export, a long
    table and its delimiter, compression, batches), which columns play which role, the
    kind of answer, the counts, and what is left out and why. Writes nothing."""
    from crowdlearn.io._files import ReadNoteWarning, is_batch_source
    from crowdlearn.io.platforms import _cached_export, recognise

    if not is_batch_source(data):
        _kinds.require_input(data)
    click.echo(f"{data}: {_container(data)}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ReadNoteWarning)
        if kind is None:
            kind = _kinds.detected_kind(data, "memory")
        # spans have readers of their own (a Label Studio NER export is no export of
        # choices): their format is the kind's
        click.echo(f"format: {_format(data) if kind != 'spans' else SPANS_FORMAT}")
        _kinds.check_kind_options(kind, sep, order, tie)
        if kind == "class":
            from crowdlearn.cli.identify import load_crowd

            answers = load_crowd(data, duplicates=duplicates)
        elif kind == "spans":
            from crowdlearn.cli._spans import read_spans

            answers = read_spans(data, duplicates)
        else:
            answers = _kinds.read_answers(data, kind, sep, order, tie, duplicates)
    click.echo(f"kind: {kind} ({_kinds.NOUNS[kind]})")
    if kind != "spans" and recognise(data) is not None:
        export = _cached_export(data)
        click.echo("columns: " + ", ".join(f"{r}={c}" for r, c in export.roles.items()))
        gold = export.gold
        if gold is not None:
            click.echo(f"gold: known answers of {len(gold)} task(s)")
        for why, n in export.left_out.items():
            click.echo(f"left out: {n} {why}")
    else:
        columns = _plain_columns(data, kind)
        if columns:
            click.echo(f"columns: {columns}")
    for line in _counts(answers):
        click.echo(line)
    for message in dict.fromkeys(str(w.message) for w in caught):
        if "read as" not in message:
            click.echo(f"note: {message}")
