"""One description of each input (crowdlearn.io._source): read once, ``-`` as standard
input, compressed input under the memory guard."""

from __future__ import annotations

import builtins
import gzip
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

import crowdlearn.io._source as source_module
from crowdlearn.cli import cli
from crowdlearn.data.errors import CrowdMemoryError
from crowdlearn.io import read
from crowdlearn.io._source import describe, reading_session

FILES = Path(__file__).parent / "platform_files"
CSV = "task,worker,label\nt1,w1,a\nt1,w2,b\nt1,w3,a\nt2,w1,b\nt2,w2,b\nt2,w3,a\n"
SRC = str(Path(__file__).resolve().parents[2] / "src")


def _crowdlearn(args: list[str], stdin: bytes, **env: str) -> subprocess.CompletedProcess:
    """The command line in a child process, ``stdin`` piped into it."""
    environment = {**os.environ, "PYTHONPATH": SRC, **env}
    return subprocess.run(
        [sys.executable, "-m", "crowdlearn", *args],
        input=stdin,
        capture_output=True,
        env=environment,
        timeout=120,
        check=False,
    )


def _folder(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


def test_standard_input_aggregates_like_the_file(tmp_path):
    crowd = tmp_path / "crowd.csv"
    crowd.write_text(CSV)
    by_file = _crowdlearn(["aggregate", str(crowd), "-s", "mv", "-o", str(tmp_path / "a")], b"")
    piped = _crowdlearn(["aggregate", "-", "-s", "mv", "-o", str(tmp_path / "b")], CSV.encode())
    assert by_file.returncode == 0, by_file.stderr
    assert piped.returncode == 0, piped.stderr
    assert _folder(tmp_path / "a") == _folder(tmp_path / "b")


def test_a_gzipped_stream_on_standard_input_is_decompressed(tmp_path):
    crowd = tmp_path / "crowd.csv"
    crowd.write_text(CSV)
    by_file = _crowdlearn(["aggregate", str(crowd), "-s", "ds", "-o", str(tmp_path / "a")], b"")
    piped = _crowdlearn(
        ["aggregate", "-", "-s", "ds", "-o", str(tmp_path / "b")], gzip.compress(CSV.encode())
    )
    assert by_file.returncode == 0, by_file.stderr
    assert piped.returncode == 0, piped.stderr
    assert _folder(tmp_path / "a") == _folder(tmp_path / "b")


def test_a_platform_export_on_standard_input_is_recognised():
    text = (FILES / "toloka.tsv").read_bytes()
    result = CliRunner().invoke(cli, ["inspect", "-"], input=text)
    assert result.exit_code == 0, result.output
    assert "Toloka" in result.output


@pytest.mark.parametrize("name", ["crowd.csv", "crowd.csv.gz", "toloka.tsv"])
def test_aggregate_opens_its_input_once(tmp_path, monkeypatch, name):
    path = tmp_path / name
    if name == "toloka.tsv":
        path.write_bytes((FILES / name).read_bytes())
    elif name.endswith(".gz"):
        path.write_bytes(gzip.compress(CSV.encode()))
    else:
        path.write_text(CSV)
    opened: list[str] = []
    opener = source_module._open_raw

    def spy(target):
        opened.append(str(target))
        return opener(target)

    monkeypatch.setattr(source_module, "_open_raw", spy)
    # any other way of opening it counts too (it used to be opened 11 times)
    other: list[str] = []
    builtin_open, arrow_open = builtins.open, pa.input_stream

    def counted(opener):
        def wrapper(target, *args, **kwargs):
            if str(target) == str(path):
                other.append(opener.__name__)
            return opener(target, *args, **kwargs)

        return wrapper

    monkeypatch.setattr(builtins, "open", counted(builtin_open))
    monkeypatch.setattr(pa, "input_stream", counted(arrow_open))
    result = CliRunner().invoke(
        cli, ["aggregate", str(path), "-s", "ds", "-o", str(tmp_path / "o")]
    )
    assert result.exit_code == 0, result.output
    assert opened == [str(path)]
    assert other == ["open"]  # the one open, by _open_raw


def test_the_description_is_made_once_in_a_session(tmp_path):
    path = tmp_path / "crowd.csv"
    path.write_text(CSV.replace(",", ";"))
    with reading_session():
        first = describe(path)
        assert describe(path) is first
        assert first.delimiter == ";"
        assert first.header == ("task", "worker", "label")
        assert first.platform is None


def _bomb(path: Path, inflated: int) -> None:
    """A .gz of valid rows, written in chunks, that inflates to about ``inflated`` bytes."""
    rows = b"".join(b"t%d,w%d,a\n" % (i, i % 7) for i in range(10_000))
    with gzip.open(path, "wb") as handle:
        handle.write(b"task,worker,label\n")
        for _ in range(inflated // len(rows) + 1):
            handle.write(rows)


def _long_line(path: Path, inflated: int) -> None:
    """A .gz of one line (no line end) of about ``inflated`` bytes, written in chunks."""
    with gzip.open(path, "wb") as handle:
        handle.write(b"task,worker,label\n")
        for _ in range(inflated // 100_000 + 1):
            handle.write(b"x" * 100_000)


@pytest.mark.parametrize("make", [_bomb, _long_line])
def test_a_compression_bomb_stops_at_the_memory_guard(tmp_path, monkeypatch, make):
    path = tmp_path / "bomb.csv.gz"
    make(path, 8_000_000)
    monkeypatch.setenv("CROWDLEARN_MEMORY_LIMIT", str(8_000_000))
    with pytest.raises(CrowdMemoryError, match=r"bomb\.csv\.gz: the gzip-compressed content"):
        read(path)
    result = _crowdlearn(
        ["aggregate", "-", "-s", "mv", "-o", str(tmp_path / "o")],
        path.read_bytes(),
        CROWDLEARN_MEMORY_LIMIT="8000000",
    )
    lines = result.stderr.decode().splitlines()
    assert result.returncode == 2
    assert len(lines) == 1 and lines[0].startswith("crowdlearn: error: not enough memory")
    assert "<stdin>" in lines[0]
    assert not (tmp_path / "o").exists()


def test_a_compressed_file_under_the_guard_reads_in_full(tmp_path, monkeypatch):
    path = tmp_path / "crowd.csv.gz"
    _bomb(path, 1_000_000)
    monkeypatch.setenv("CROWDLEARN_MEMORY_LIMIT", str(200_000_000))
    assert read(path, duplicates="first").n_tasks == 10_000


@pytest.mark.parametrize(
    "args",
    [
        ["identify", "-", "-o", "{out}"],
        ["report", "-", "-o", "{out}"],
        ["next", "-", "--budget", "1", "-o", "{out}.csv"],
        ["aggregate", "-", "--state", "{out}.state", "-o", "{out}"],
        ["convert", "-", "-o", "{out}.parquet"],
    ],
    ids=lambda args: args[0] + ("-state" if "--state" in args else ""),
)
def test_every_command_reading_a_file_reads_standard_input(tmp_path, args):
    out = str(tmp_path / "out")
    result = CliRunner().invoke(
        cli, [a.format(out=out) for a in args], input=gzip.compress(CSV.encode())
    )
    assert result.exit_code == 0, result.output
    assert any(p.name.startswith("out") for p in tmp_path.iterdir())


def test_a_semicolon_stream_is_read_with_a_note_naming_stdin():
    result = CliRunner().invoke(cli, ["inspect", "-"], input=CSV.replace(",", ";").encode())
    assert result.exit_code == 0, result.output
    assert "<stdin>: fields are separated by semicolons" in result.stderr
    assert "standard input" in result.output


def test_a_file_replaced_within_a_session_is_described_again(tmp_path):
    path = tmp_path / "crowd.csv"
    path.write_text(CSV)
    with reading_session():
        first = read(path)
        replaced = tmp_path / "new.csv"
        replaced.write_text(CSV.replace("t2", "t3"))
        replaced.replace(path)
        again = read(path)
        assert again != first
        assert again.task_ids.tolist() == ["t1", "t3"]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            b"\x93NUMPY\x01\x00v\x00{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }",
            "answer matrices are read from files",
        ),
        (b"PK\x03\x04 a workbook", "an Excel workbook is read from a file"),
        (b"", "<stdin>: the file is empty"),
        (gzip.compress(CSV.encode())[:-12], "<stdin>: cannot read the input"),
    ],
    ids=["npy", "xlsx", "empty", "truncated-gzip"],
)
def test_what_standard_input_cannot_be_is_one_line(tmp_path, content, expected):
    result = CliRunner().invoke(cli, ["aggregate", "-", "-o", str(tmp_path / "o")], input=content)
    lines = result.stderr.splitlines()
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("crowdlearn: error: ")
    assert expected in lines[0]
    assert not (tmp_path / "o").exists()


def test_a_row_past_arrows_capacity_is_one_clear_error(tmp_path, monkeypatch):
    """A 3 GB line makes Arrow raise ArrowCapacityError (exit 70 before); a test cannot
    build one, so Arrow's reader raises it here as it does on such a line."""
    import pyarrow as pa

    import crowdlearn.io.longform as longform
    from crowdlearn.data import CrowdDataError

    def too_long(*args, **kwargs):
        raise pa.ArrowCapacityError("array cannot contain more than 2147483646 bytes")

    monkeypatch.setattr(longform, "_arrow_csv_stream", too_long)
    path = tmp_path / "crowd.csv.gz"
    path.write_bytes(gzip.compress(CSV.encode()))
    with pytest.raises(CrowdDataError, match=r"crowd\.csv\.gz: a row is longer than"):
        read(path)
