"""Fuzzing every reader: whatever the bytes, the outcome is a valid CrowdData or a
CrowdDataError (a ValueError) that names the file, never another exception."""

from __future__ import annotations

import json
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from crowdlearn import CrowdData, io
from crowdlearn.data import CrowdDataError, CrowdDataWarning

FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _outcome(read: Callable[[Path], Any], path: Path) -> CrowdData | None:
    """Read ``path``; a CrowdDataError naming the file is fine, anything else fails."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CrowdDataWarning)
        try:
            data = read(path)
        except CrowdDataError as error:
            assert str(path.parent) in str(error), f"the file is not named: {error}"
            event("refused")
            return None
    event("read")
    assert isinstance(data, CrowdData)
    _check_valid(data)
    return data


def _check_valid(data: CrowdData) -> None:
    """The invariants every CrowdData keeps: codes in range, aligned ids."""
    assert data.n_annotations > 0
    for codes, n in ((data.task, data.n_tasks), (data.label, data.n_classes)):
        assert codes.min() >= 0 and codes.max() < n
    if data.worker is not None:
        assert data.worker.min() >= 0 and data.worker.max() < data.n_workers
    if data.truth is not None:
        assert len(data.truth) == data.n_tasks
        assert data.truth.max() < data.n_classes


def _in_folder(name: str, content: bytes, read: Callable[[Path], Any]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        _outcome(read, path)


# ---------------------------------------------------------------------- random bytes

SUFFIXES = ["x.csv", "x.tsv", "x.parquet", "d/answers.json", "x.txt", "x.npy"]


@FUZZ
@given(name=st.sampled_from(SUFFIXES), content=st.binary(max_size=300))
def test_random_bytes_through_io_read(name: str, content: bytes) -> None:
    _in_folder(name, content, io.read)


@FUZZ
@given(
    name=st.sampled_from(SUFFIXES),
    head=st.sampled_from([b"PAR1", b"\x93NUMPY\x01\x00v\x00", b"task,worker,label\n", b"{"]),
    content=st.binary(max_size=200),
)
def test_random_bytes_after_a_plausible_header(name: str, head: bytes, content: bytes) -> None:
    _in_folder(name, head + content, io.read)


# ---------------------------------------------------------------------- random CSV cells

cells = st.one_of(
    st.sampled_from(["a", "b", "0", "1", "2", "w1", "w2"]),
    st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=6),
    st.integers(-3, 10**20).map(str),
    st.sampled_from(["", " ", "1.0", "nan", "True", "-1", "1e400", '"', "a,b", "\r", "0"]),
)


headers = st.one_of(
    st.just(["task", "worker", "label"]),
    st.just(["task", "worker", "label", "truth"]),
    st.lists(st.sampled_from(["task", "worker", "label", "truth", "x"]), min_size=1, max_size=5),
)
# Mostly rows as wide as the header, sometimes ragged ones.
csv_tables = headers.flatmap(
    lambda header: st.tuples(
        st.just(header),
        st.lists(
            st.lists(cells, min_size=len(header), max_size=len(header))
            | st.lists(cells, max_size=6),
            max_size=8,
        ),
    )
)


@FUZZ
@given(table=csv_tables, sep=st.sampled_from([",", "\t"]))
def test_random_csv_cells(table: tuple[list[str], list[list[str]]], sep: str) -> None:
    header, rows = table
    lines = [sep.join(header)] + [sep.join(row) for row in rows]
    name = "x.tsv" if sep == "\t" else "x.csv"
    _in_folder(name, "\n".join(lines).encode("utf-8", "surrogatepass"), io.read_csv)


# ---------------------------------------------------------------------- random JSON trees

json_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
)
json_trees = st.recursive(
    json_leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(max_size=4), children, max_size=4),
    ),
    max_leaves=20,
)
keys = st.sampled_from(["0", "1", "2", "t", "w"]) | st.text(max_size=4)
answers_like = st.dictionaries(
    keys,
    st.one_of(
        st.dictionaries(keys, st.integers(0, 4), min_size=1, max_size=4),
        st.dictionaries(keys, json_leaves, max_size=4),
        json_trees,
    ),
    max_size=5,
)
metadata_like = st.one_of(
    json_trees,
    st.fixed_dictionaries(
        {},
        optional={
            "n_classes": st.integers(0, 6) | json_leaves,
            "n_task": st.integers(0, 6) | json_leaves,
            "n_workers": st.integers(0, 6) | json_leaves,
            "classes": json_trees,
            "task_ids": json_trees,
        },
    ),
)


@FUZZ
@given(
    answers=st.one_of(answers_like, answers_like, json_trees),
    metadata=st.one_of(st.none(), st.none(), metadata_like),
    truth=st.one_of(st.none(), st.dictionaries(keys, json_leaves, max_size=3), json_trees),
    as_folder=st.booleans(),
)
def test_random_json_trees_as_a_peerannot_folder(
    answers: Any, metadata: Any, truth: Any, as_folder: bool
) -> None:
    with tempfile.TemporaryDirectory() as root:
        folder = Path(root) / "ds"
        folder.mkdir()
        (folder / "answers.json").write_text(json.dumps(answers))
        if metadata is not None:
            (folder / "metadata.json").write_text(json.dumps(metadata))
        if truth is not None:
            (folder / "ground_truth.json").write_text(json.dumps(truth))
        if as_folder:
            _outcome(io.read_peerannot, folder)
        else:
            _outcome(io.read_answers_json, folder / "answers.json")


# ---------------------------------------------------------------------- random Parquet

id_columns = st.one_of(
    st.lists(st.integers(0, 3), min_size=1, max_size=6),
    st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=6),
    st.lists(st.integers(-(2**63), 2**63 - 1) | st.none(), min_size=1, max_size=6),
    st.lists(st.text(max_size=4) | st.none(), min_size=1, max_size=6),
    st.lists(st.floats() | st.none(), min_size=1, max_size=6),
    st.lists(st.booleans(), min_size=1, max_size=6),
    st.lists(st.lists(st.integers(0, 3), max_size=2), min_size=1, max_size=6),
    st.lists(st.binary(max_size=3), min_size=1, max_size=6),
)


# Documents shaped like write_parquet's metadata, with random values.
parquet_documents = st.fixed_dictionaries(
    {"classes": st.lists(st.integers(0, 3) | st.text(max_size=2), max_size=4) | json_trees},
    optional={
        "version": st.just(1) | json_leaves,
        "n_tasks": st.integers(0, 4) | json_leaves,
        "n_workers": st.integers(0, 4) | json_leaves,
        "anonymous": st.booleans() | json_leaves,
        "task_ids": st.lists(st.integers(0, 3) | st.text(max_size=2), max_size=4) | json_trees,
        "worker_ids": st.lists(st.integers(0, 3) | st.text(max_size=2), max_size=4),
        "unannotated_truth": st.lists(
            st.lists(st.integers(-(2**40), 2**40), min_size=2, max_size=2), max_size=3
        )
        | json_trees,
    },
)


@FUZZ
@given(
    columns=st.one_of(
        st.fixed_dictionaries(
            {"task": id_columns, "worker": id_columns, "label": id_columns},
            optional={"truth": id_columns},
        ),
        st.dictionaries(
            st.sampled_from(["task", "worker", "label", "truth", "x"]), id_columns, max_size=5
        ),
    ),
    metadata=st.one_of(
        st.none(),
        st.binary(max_size=40),
        json_trees.map(lambda tree: json.dumps(tree).encode()),
        parquet_documents.map(lambda document: json.dumps(document).encode()),
    ),
)
def test_random_parquet_tables(columns: dict[str, list], metadata: bytes | None) -> None:
    if columns:
        length = min(len(values) for values in columns.values())
        table = pa.table({name: values[:length] for name, values in columns.items()})
    else:
        table = pa.table({"x": [1]})
    if metadata is not None:
        table = table.replace_schema_metadata({b"crowdlearn": metadata})
    with tempfile.TemporaryDirectory() as root:
        path = Path(root) / "x.parquet"
        pq.write_table(table, path)
        _outcome(io.read_parquet, path)


# ---------------------------------------------------------------------- random matrices

numbers = st.one_of(
    st.integers(-3, 10**12).map(str),
    st.floats().map(repr),
    st.sampled_from(["-1", "0", "1", "2", "nan", "x", ""]),
)


@FUZZ
@given(rows=st.lists(st.lists(numbers, min_size=1, max_size=5), min_size=0, max_size=5))
def test_random_matrix_text(rows: list[list[str]]) -> None:
    text = "\n".join(" ".join(row) for row in rows)
    _in_folder("m.txt", text.encode(), io.read_matrix)


@FUZZ
@given(
    array=st.sampled_from(["i8", "f8", "u1", "i4", "bool", "U2"]).flatmap(
        lambda dtype: st.lists(
            st.lists(st.integers(-2, 10**10), min_size=1, max_size=4), min_size=1, max_size=4
        ).map(lambda rows: _rectangle(rows, dtype))
    )
)
def test_random_npy_matrices(array: np.ndarray) -> None:
    with tempfile.TemporaryDirectory() as root:
        path = Path(root) / "m.npy"
        np.save(path, array)
        _outcome(io.read_matrix, path)


def _rectangle(rows: list[list[int]], dtype: str) -> np.ndarray:
    width = min(len(row) for row in rows)
    values = np.array([row[:width] for row in rows], dtype=np.int64)
    if dtype in ("u1", "bool"):
        values = np.abs(values) % 3
    if dtype == "i4":
        values = values % 2**31
    return values.astype(dtype)
