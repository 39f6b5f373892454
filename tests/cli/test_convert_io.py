"""``crowdlearn convert``: compressed outputs by their ending, a Toloka export's golden
answers kept, standard input as SOURCE."""

from __future__ import annotations

import gzip
import lzma

import pandas as pd
import pyarrow as pa
import pytest
from click.testing import CliRunner

from crowdlearn.cli import cli
from crowdlearn.io import read

CSV = "task,worker,label\nt1,w1,a\nt1,w2,b\nt1,w3,a\nt2,w1,b\nt2,w2,b\nt2,w3,a\n"

#: A Toloka export where the golden answer of t1 goes against the majority of t1, so
#: that Dawid-Skene with the gold gives other probabilities than without it.
TOLOKA = (
    "INPUT:id\tOUTPUT:result\tGOLDEN:result\tASSIGNMENT:worker_id\tASSIGNMENT:status\n"
    "t1\tcat\tdog\tw1\tACCEPTED\n"
    "t1\tcat\tdog\tw2\tACCEPTED\n"
    "t1\tdog\tdog\tw3\tACCEPTED\n"
    "t2\tcat\t\tw1\tACCEPTED\n"
    "t2\tdog\t\tw2\tACCEPTED\n"
    "t2\tdog\t\tw3\tACCEPTED\n"
    "t3\tdog\t\tw1\tACCEPTED\n"
    "t3\tcat\t\tw2\tACCEPTED\n"
    "t3\tcat\t\tw3\tACCEPTED\n"
)


def run(*args: object, input: bytes | None = None):
    return CliRunner().invoke(cli, list(map(str, args)), input=input)


MAGIC = {"gz": b"\x1f\x8b", "bz2": b"BZh", "xz": b"\xfd7zXZ\x00", "zst": b"\x28\xb5\x2f\xfd"}


@pytest.mark.parametrize("ending", ["gz", "bz2", "xz", "zst"])
def test_convert_writes_compressed_by_the_ending_and_reads_back(tmp_path, ending):
    source = tmp_path / "x.csv.gz"
    source.write_bytes(gzip.compress(CSV.encode()))
    target = tmp_path / f"out.csv.{ending}"
    result = run("convert", source, "-o", target)
    assert result.exit_code == 0, result.output
    assert target.read_bytes().startswith(MAGIC[ending])
    assert read(target) == read(source)


@pytest.mark.parametrize("name", ["out.parquet.gz", "out.json.xz", "out.gz"])
def test_convert_refuses_a_compressed_ending_it_cannot_write(tmp_path, name):
    source = tmp_path / "x.csv"
    source.write_text(CSV)
    result = run("convert", source, "-o", tmp_path / name)
    assert result.exit_code == 2
    assert result.output.startswith("crowdlearn: error: ")
    assert "compressed CSV/TSV files only" in result.output
    assert not (tmp_path / name).exists()


def test_convert_keeps_the_golden_answers_of_a_toloka_export(tmp_path):
    export = tmp_path / "toloka.tsv"
    export.write_text(TOLOKA)
    converted = tmp_path / "converted.csv"
    assert run("convert", export, "-o", converted).exit_code == 0
    assert "known_answer" in pd.read_csv(converted).columns
    for name, source in (("original", export), ("converted", converted)):
        result = run("aggregate", source, "-s", "ds", "-o", tmp_path / name)
        assert result.exit_code == 0, result.output
    original = pd.read_csv(tmp_path / "original" / "probas.csv")
    again = pd.read_csv(tmp_path / "converted" / "probas.csv")
    pd.testing.assert_frame_equal(original, again)
    # the gold matters here: without it, Dawid-Skene gives other probabilities
    pd.read_csv(converted).drop(columns="known_answer").to_csv(
        tmp_path / "nogold.csv", index=False
    )
    assert (
        run("aggregate", tmp_path / "nogold.csv", "-s", "ds", "-o", tmp_path / "n").exit_code == 0
    )
    without = pd.read_csv(tmp_path / "n" / "probas.csv")
    assert not original.equals(without)


def test_convert_reads_standard_input(tmp_path):
    target = tmp_path / "out.csv.xz"
    result = run("convert", "-", "-o", target, input=gzip.compress(CSV.encode()))
    assert result.exit_code == 0, result.output
    source = tmp_path / "x.csv"
    source.write_text(CSV)
    assert lzma.decompress(target.read_bytes()).replace(b"\r\n", b"\n") == CSV.encode()
    assert read(target) == read(source)


def test_a_zstd_file_written_by_arrow_converts(tmp_path):
    source = tmp_path / "x.tsv.zst"
    with pa.output_stream(str(source), compression="zstd") as out:
        out.write(CSV.replace(",", "\t").encode())
    result = run("convert", source, "-o", tmp_path / "y.csv")
    assert result.exit_code == 0, result.output
    assert read(tmp_path / "y.csv").n_annotations == 6


def test_label_sets_convert_to_a_compressed_csv_that_reads_back(tmp_path):
    from pathlib import Path

    from crowdlearn.io import read_kind

    batches = Path(__file__).parents[1] / "io" / "platform_files" / "crowdflower"
    for name in ("sets.csv", "sets.csv.bz2"):
        result = run("convert", batches, "-o", tmp_path / name)
        assert result.exit_code == 0, result.output
    assert (tmp_path / "sets.csv.bz2").read_bytes().startswith(MAGIC["bz2"])
    plain = read_kind(tmp_path / "sets.csv", "multilabel")
    packed = read_kind(tmp_path / "sets.csv.bz2", "multilabel")
    assert packed.to_frame().equals(plain.to_frame())
