"""Property: for every format, ``read(write(x)) == x`` on any data the format can hold."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn import CrowdData
from crowdlearn.io import read, write

SETTINGS = settings(max_examples=40, deadline=None)

#: Any Unicode text that UTF-8 can encode (no lone surrogates), control characters,
#: quotes, separators and newlines included.
TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=5)
#: Floats that stay floats as ids (integral floats become int ids in CrowdData).
FRACTIONAL = st.floats(allow_nan=False).filter(lambda x: math.isinf(x) or x % 1 != 0)


def id_lists(n: int, csv: bool) -> st.SearchStrategy[list]:
    """``n`` distinct ids of one kind: ints, floats or text."""
    # In CSV every cell is text typed back by a rule, so a text id must not read as
    # a number or a bool, and cannot be empty: prefix it with a letter.
    text = TEXT.map("k".__add__) if csv else TEXT
    kinds = [st.integers(-(2**62), 2**62), FRACTIONAL, text]
    return st.one_of(*(st.lists(k, min_size=n, max_size=n, unique=True) for k in kinds))


@st.composite
def crowds(
    draw: st.DrawFn,
    *,
    csv: bool = False,
    anonymous: bool = False,
    features: bool = False,
    matrix: bool = False,
) -> CrowdData:
    """Valid CrowdData, declared-but-unused tasks, workers and classes included."""
    n_tasks, n_workers, n_classes = (draw(st.integers(1, n)) for n in (6, 5, 4))
    if anonymous:
        tasks = draw(st.lists(st.integers(0, n_tasks - 1), min_size=1, max_size=15))
        workers = None
    else:
        cell = st.tuples(st.integers(0, n_tasks - 1), st.integers(0, n_workers - 1))
        pairs = draw(st.lists(cell, min_size=1, max_size=15, unique=True))
        tasks, workers = (list(column) for column in zip(*pairs, strict=True))
    n = len(tasks)
    labels = draw(st.lists(st.integers(0, n_classes - 1), min_size=n, max_size=n))
    if matrix:
        # The matrix format has no ids and no truth: ids are the numbers 0..n-1.
        return CrowdData(
            tasks, workers, labels, n_tasks=n_tasks, n_workers=n_workers, n_classes=n_classes
        )
    truth = draw(
        st.none() | st.lists(st.integers(-1, n_classes - 1), min_size=n_tasks, max_size=n_tasks)
    )
    task_ids, worker_ids, classes = (
        draw(id_lists(n, csv)) for n in (n_tasks, 0 if anonymous else n_workers, n_classes)
    )
    if csv:
        # CSV can only hold what its rows show: every task and worker has an
        # annotation, every class is used by a label or a truth, and ids are in
        # sorted order. from_arrays builds exactly such data from the rows.
        annotated = set(tasks)
        known = {} if truth is None else {t: c for t, c in enumerate(truth) if c >= 0}
        return CrowdData.from_arrays(
            [task_ids[t] for t in tasks],
            None if anonymous else [worker_ids[w] for w in workers],
            [classes[c] for c in labels],
            truth={task_ids[t]: classes[c] for t, c in known.items() if t in annotated} or None,
        )
    rows = draw(st.integers(0, 3))
    return CrowdData(
        tasks,
        workers,
        labels,
        task_ids=task_ids,
        worker_ids=None if anonymous else worker_ids,
        classes=classes,
        truth=truth,
        features=np.arange(n_tasks * rows, dtype=np.float64).reshape(n_tasks, rows)
        if features and rows
        else None,
    )


def round_trip(data: CrowdData, name: str, **read_options: object) -> CrowdData:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        write(data, path)
        return read(path, **read_options)


@SETTINGS
@given(st.booleans().flatmap(lambda anonymous: crowds(csv=True, anonymous=anonymous)))
def test_csv_round_trip(data):
    assert round_trip(data, "a.csv", worker=None if data.is_anonymous else "worker") == data


@SETTINGS
@given(st.booleans().flatmap(lambda anonymous: crowds(anonymous=anonymous, features=True)))
def test_parquet_round_trip(data):
    assert round_trip(data, "a.parquet") == data


@SETTINGS
@given(crowds(features=True))
def test_peerannot_round_trip(data):
    assert round_trip(data, "answers.json") == data


@SETTINGS
@given(crowds(matrix=True))
def test_matrix_round_trip(data):
    assert round_trip(data, "answers.txt", n_classes=data.n_classes) == data


@SETTINGS
@given(st.booleans().flatmap(lambda anonymous: crowds(csv=True, anonymous=anonymous)))
def test_crowdkit_dataframe_round_trip(data):
    """crowd-kit's layout: a (task, worker, label) DataFrame, truth as a column."""
    frame = data.to_frame(truth=data.has_truth)
    options = {
        "worker": None if data.is_anonymous else "worker",
        "truth": "truth" if data.has_truth else None,
    }
    assert CrowdData.from_frame(frame, **options) == data
    assert read(frame, **options) == data  # read() dispatches DataFrames to from_frame
