"""``crowdlearn aggregate DATA --engine stream``: Dawid-Skene out of core.

DATA is a Parquet file or folder sorted by task (what ``write_synthetic_parquet``
writes), or a code store made by :func:`crowdlearn.stream.convert_parquet`. A Parquet
input is converted into a temporary code store in the system's temporary folder
(``TMPDIR``; about 3 bytes per annotation plus 8 per task), removed at the end. The
outputs are the Dask engine's: ``posteriors/`` (Parquet), history, workers.json and
summary.json.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from crowdlearn.cli._app import note
from crowdlearn.cli._output import Outputs, require_input
from crowdlearn.data import CrowdDataError

#: The strategies the stream engine fits (Dawid-Skene, soft or hard EM).
STREAM_STRATEGIES = ("ds", "fast-ds")


def aggregate_stream(
    data: str,
    strategy: str | None,
    kind: str | None,
    params: dict[str, str],
    output: str,
    output_format: str,
    quiet: bool,
    overwrite: bool,
    unsupported: Sequence[tuple[Any, str]],
    write_outputs: Callable[..., list[str]],
) -> None:
    """Fit ``strategy`` (a Dawid-Skene) out of core on ``data`` and write the outputs.

    ``unsupported``: (value, option) pairs of the options this engine refuses when
    given; ``write_outputs(model, folder, output_format, engine)`` writes the tables.
    """
    for given, option in unsupported:
        if given:
            raise CrowdDataError(f"{option} is not supported with --engine stream")
    if kind not in (None, "class"):
        raise CrowdDataError(f"--engine stream aggregates classes only, not --kind {kind}")
    if strategy is None:
        strategy = "ds"
        note("crowdlearn: note: strategy ds (the stream engine's default)")
    from crowdlearn.aggregation import DawidSkene, make_aggregator

    memory_model = make_aggregator(strategy, **params)
    if type(memory_model) is not DawidSkene:
        raise CrowdDataError(
            f"--engine stream fits Dawid-Skene only ({', '.join(STREAM_STRATEGIES)}), "
            f"not {strategy!r}"
        )
    if data == "-":
        raise CrowdDataError(
            "--engine stream reads Parquet files by their path, not standard input"
        )
    require_input(data)
    _check_stream_input(Path(data))
    from crowdlearn import stream

    model = stream.DawidSkene(**memory_model.get_params())
    model.set_params(progress=False if quiet else "auto")
    outputs = Outputs(overwrite, reads=[data])
    out = outputs.folder(output)
    model.fit(data)
    with outputs:
        written = write_outputs(model, out.staged, output_format, "stream")
    click.echo(f"{strategy} (stream): {data} -> {output}: {', '.join(written)}")


def _check_stream_input(path: Path) -> None:
    """A Parquet file, a folder of Parquet files, or a code store."""
    from crowdlearn.stream import is_store

    if is_store(path):
        return
    parquet = (".parquet", ".pq")
    if path.is_file() and path.suffix.lower() in parquet:
        return
    if path.is_dir() and any(p.suffix.lower() in parquet for p in path.iterdir()):
        return
    raise CrowdDataError(
        f"--engine stream reads Parquet (a file or a folder of .parquet files sorted by "
        f"task) or a code store, and {path} is neither; convert it first: crowdlearn "
        f"convert {path} -o {path.stem}.parquet"
    )
