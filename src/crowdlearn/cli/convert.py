"""``crowdlearn convert``: read crowd data in one format, write it in another."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

import crowdlearn.cli._kinds as _kinds
from crowdlearn.cli._app import cli, note
from crowdlearn.cli._output import Outputs
from crowdlearn.cli._reading import duplicates_option, reading_options

FORMAT_CHOICE = click.Choice(["csv", "parquet", "peerannot", "matrix"])


@cli.command()
@reading_options
@click.argument("source", type=click.Path())
@click.option("-o", "--output", required=True, type=click.Path(), help="Destination path.")
@click.option(
    "--from",
    "source_format",
    type=FORMAT_CHOICE,
    help="Format of SOURCE (default: from its name).",
)
@click.option(
    "--to",
    "target_format",
    type=FORMAT_CHOICE,
    help="Format of the output (default: from its name).",
)
@duplicates_option
@click.option("--overwrite", is_flag=True, help="Replace an existing OUTPUT (as a whole).")
def convert(
    source: str,
    output: str,
    source_format: str | None,
    target_format: str | None,
    duplicates: str,
    overwrite: bool,
) -> None:
    """Convert crowd data SOURCE to OUTPUT (long CSV/Parquet, peerannot folder, matrix)."""
    from crowdlearn.data import CrowdDataError
    from crowdlearn.io import detect_format, read
    from crowdlearn.io.platforms import export_gold

    outputs = Outputs(overwrite, reads=[source])
    if source_format is None and _kinds.platform_kind(source) == "multilabel":
        _convert_label_sets(source, output, target_format, duplicates, outputs)
        return
    write_to = declare_data_output(outputs, output, target_format, "--to")
    try:
        matrix = (source_format or detect_format(source)) == "matrix"
    except CrowdDataError:  # a platform export (.jsonl) or a batch: read() tells
        matrix = False
    options = {} if matrix else {"duplicates": duplicates}  # a matrix has no repeated pair
    data = read(source, format=source_format, **options)
    gold = None if source_format is not None else export_gold(source)
    if gold is not None and write_to.format != "csv":  # type: ignore[attr-defined]
        note(
            f"crowdlearn: note: the known answers of {len(gold)} task(s) are not kept in the "
            f"{write_to.format} format; convert to CSV to keep them (a known_answer column)"  # type: ignore[attr-defined]
        )
        gold = None
    with outputs:
        write_to(data, **({} if gold is None else {"gold": gold}))
    click.echo(f"{data} -> {output}")


def _convert_label_sets(
    source: str, output: str, target_format: str | None, duplicates: str, outputs: Outputs
) -> None:
    """A platform export of label sets as a long CSV: task, worker, label (a JSON list),
    which ``--kind multilabel`` reads back (compressed by the output's ending)."""
    from crowdlearn._atomic import atomic_open
    from crowdlearn.data import CrowdDataError
    from crowdlearn.io._files import compressing, logical_suffix

    if (target_format or logical_suffix(output).lstrip(".")) not in ("csv", "tsv"):
        raise CrowdDataError(
            f"{source} holds label sets, written as a long CSV file (task, worker, label as a "
            "JSON list); give an output ending in .csv"
        )
    file = outputs.file(output)
    answers = _kinds.read_answers(source, "multilabel", None, None, None, duplicates)
    frame = answers.to_frame()
    frame["label"] = [json.dumps(list(map(_plain, labels))) for labels in frame["label"]]
    sep = "\t" if logical_suffix(output) == ".tsv" else ","
    with outputs, atomic_open(file.staged, "wb") as raw, compressing(raw, output) as packed:
        frame.to_csv(packed, index=False, sep=sep, encoding="utf-8")
    click.echo(f"{answers} -> {output}")


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def declare_data_output(
    outputs: Outputs, output: str, target_format: str | None, format_flag: str
) -> Callable[[Any], None]:
    """Declare OUTPUT (a file, or a folder for peerannot) and return the writer of it.

    The format is told now, from ``target_format`` or the name, so a bad ending is
    refused before the input is read.
    """
    from pathlib import Path

    from crowdlearn.data import CrowdDataError
    from crowdlearn.io import write
    from crowdlearn.io._files import COMPRESSIONS, logical_suffix

    path = Path(output)
    packed = path.suffix.lower() in COMPRESSIONS
    if packed and (
        target_format not in (None, "csv") or logical_suffix(path) not in (".csv", ".tsv")
    ):
        raise CrowdDataError(
            f"{output}: crowdlearn writes compressed CSV/TSV files only (e.g. crowd.csv"
            f"{path.suffix}); give an output ending in .csv{path.suffix} or .tsv{path.suffix}, "
            f"or one without {path.suffix}"
        )
    if target_format is not None:
        fmt = target_format
    elif path.suffix == "" and not path.is_file():
        raise CrowdDataError(
            f"{output}: cannot tell the output format without a file ending; pass "
            f"{format_flag} (csv, parquet, peerannot or matrix)"
        )
    else:
        from crowdlearn.io import detect_format

        fmt = detect_format(output)
    if fmt == "peerannot":
        if path.suffix.lower() == ".json":
            if path.name != "answers.json":
                raise CrowdDataError(
                    f"{output}: a peerannot dataset is a folder holding answers.json; give "
                    "the folder (or a path ending in answers.json)"
                )
            path = path.parent
        folder = outputs.folder(str(path))
        return _writer(lambda data: write(data, folder.staged, format="peerannot"), fmt)
    file = outputs.file(output)
    if fmt != "parquet":
        return _writer(
            lambda data, **options: write(data, file.staged, format=fmt, **options), fmt
        )
    # Parquet keeps the features in a file beside it: a second output of the command.
    from crowdlearn.io.longform import features_path

    companion = outputs.file(str(features_path(path)), optional=True)

    def write_parquet(data: Any) -> None:
        write(data, file.staged, format=fmt)
        written = features_path(file.staged)
        if written.exists():
            written.replace(companion.staged)

    return _writer(write_parquet, fmt)


def _writer(function: Callable[..., None], fmt: str) -> Callable[..., None]:
    """``function`` with the format it writes as its ``format`` attribute."""
    function.format = fmt  # type: ignore[attr-defined]
    return function
