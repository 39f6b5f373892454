"""Catalogue of bad inputs to the Python API and the readers.

Each case gives one bad input and asserts the exception type and that the message
says what was expected (and names the file, for file inputs). Together with the CLI
catalogue (tests/reliability/test_cli_catalogue.py) this is issue 13's list of cases.
"""

from __future__ import annotations

import datetime
import json
import os
import resource
import subprocess
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crowdlearn import CrowdData, io
from crowdlearn.aggregation import DawidSkene, MajorityVote
from crowdlearn.data import CrowdDataError, CrowdDataWarning, CrowdMemoryError
from crowdlearn.data._memory import MEMORY_LIMIT_ENV, check_allocation, format_bytes
from crowdlearn.identify.agreement import coincidences
from crowdlearn.simulate import independent_confusion

#: The 50-byte answers.json of issue 13 that used to exhaust memory.
BIG_CODE_ANSWERS = '{"t1":{"w1":1000000000,"w2":0},"t2":{"w1":1}}'


@dataclass(frozen=True)
class Case:
    """One bad input: ``make(tmp_path)`` writes what it needs and returns the call."""

    name: str
    make: Callable[[Path], Callable[[], Any]]
    error: type[BaseException]
    says: tuple[str, ...]
    #: The message must name the file the call reads (its path as given).
    names_file: bool = False


def _learn_on(features: np.ndarray) -> Any:
    """Fit a learner on a two-task crowd with these features."""
    from crowdlearn.learning import TwoStage

    data = CrowdData.from_arrays([0, 1], [0, 0], [0, 1]).with_features(features)
    return TwoStage(max_epochs=1, progress=False).fit(data)


def _file(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def _reads(name: str, content: str | bytes, reader: Callable[..., Any] = io.read, **kw: Any):
    """A case maker: write ``content`` to ``name`` and read it with ``reader``."""

    def make(tmp_path: Path) -> Callable[[], Any]:
        path = _file(tmp_path, name, content)
        return lambda: reader(path, **kw)

    return make


def _parquet(name: str, table: pa.Table):
    def make(tmp_path: Path) -> Callable[[], Any]:
        path = tmp_path / name
        pq.write_table(table, path)
        return lambda: io.read_parquet(path)

    return make


def _npy(name: str, array: np.ndarray):
    def make(tmp_path: Path) -> Callable[[], Any]:
        path = tmp_path / name
        np.save(path, array)
        return lambda: io.read_matrix(path)

    return make


def _npy_header(shape: tuple[int, ...]) -> bytes:
    """The header of an int64 .npy file of ``shape`` (the data are up to the caller)."""
    buffer = BytesIO()
    np.lib.format.write_array_header_1_0(
        buffer, {"descr": "<i8", "fortran_order": False, "shape": shape}
    )
    return buffer.getvalue()


def _call(function: Callable[..., Any], *args: Any, **kwargs: Any):
    """A case maker for a call that needs no file."""
    return lambda tmp_path: lambda: function(*args, **kwargs)


def _labels(values: list) -> pa.Table:
    return pa.table({"task": ["a", "b"], "worker": ["w", "w"], "label": values})


def _peerannot_with(meta: dict | None, answers: str, **files: bytes):
    def make(tmp_path: Path) -> Callable[[], Any]:
        folder = tmp_path / "ds"
        _file(folder, "answers.json", answers)
        if meta is not None:
            _file(folder, "metadata.json", json.dumps(meta))
        for name, content in files.items():
            _file(folder, name.replace("_npy", ".npy"), content)
        return lambda: io.read_peerannot(folder)

    return make


def _small() -> CrowdData:
    return CrowdData.from_arrays(["a", "a", "b"], ["w1", "w2", "w1"], [0, 1, 1])


def _write_frame_to(tmp_path: Path) -> Callable[[], Any]:
    frame = pd.DataFrame({"task": [1], "worker": [1], "label": [1]})
    return lambda: io.write(frame, tmp_path / "out.csv")


def _memory_limited(function: Callable[[], Any]) -> Callable[[Path], Callable[[], Any]]:
    """Run under a 1 GiB memory budget (the CROWDLEARN_MEMORY_LIMIT override)."""

    def make(tmp_path: Path) -> Callable[[], Any]:
        def run() -> Any:
            old = os.environ.get(MEMORY_LIMIT_ENV)
            os.environ[MEMORY_LIMIT_ENV] = str(2**30)
            try:
                return function()
            finally:
                if old is None:
                    del os.environ[MEMORY_LIMIT_ENV]
                else:
                    os.environ[MEMORY_LIMIT_ENV] = old

        return run

    return make


def _declared_classes(n: int) -> CrowdData:
    return CrowdData.from_matrix(np.array([[0, 1], [1, -1]]), n_classes=n)


CASES = [
    # ---- paths and types given to io
    Case("read-int", _call(io.read, 42), TypeError, ("expected a path", "got int")),
    Case("read-none", _call(io.read, None), TypeError, ("expected a path", "NoneType")),
    Case("read_csv-int", _call(io.read_csv, 3.5), TypeError, ("expected a path", "float")),
    Case(
        "read-missing",
        lambda tmp: lambda: io.read(tmp / "nope.csv"),
        CrowdDataError,
        ("no such file",),
    ),
    Case("write-frame", _write_frame_to, TypeError, ("CrowdData", "DataFrame", "from_frame")),
    Case(
        "write-path-first",
        lambda tmp: lambda: io.write_csv(str(tmp / "x.csv"), _small()),
        TypeError,
        ("expects a CrowdData", "data come first"),
    ),
    Case(
        "write-bad-dest",
        lambda tmp: lambda: io.write(_small(), 42),
        TypeError,
        ("expected a path", "int"),
    ),
    Case(
        "write-unknown-format",
        lambda tmp: lambda: io.write(_small(), tmp / "x.xlsx"),
        CrowdDataError,
        ("cannot tell the format", ".xlsx"),
    ),
    Case("to_matrix-frame", _call(io.to_matrix, pd.DataFrame()), TypeError, ("CrowdData",)),
    # ---- CrowdData constructors
    Case(
        "from_arrays-scalar-task",
        _call(CrowdData.from_arrays, task=1, worker=[1], label=[1]),
        CrowdDataError,
        ("task", "1-D array-like"),
    ),
    Case(
        "from_arrays-string-label",
        _call(CrowdData.from_arrays, task=[1, 2], worker=[1, 1], label="ab"),
        CrowdDataError,
        ("label", "1-D array-like"),
    ),
    Case(
        "from_arrays-2d-array",
        _call(CrowdData.from_arrays, np.zeros((2, 2)), [1, 2], [1, 2]),
        CrowdDataError,
        ("task", "one-dimensional", "(2, 2)"),
    ),
    Case(
        "from_arrays-nested-list",
        _call(CrowdData.from_arrays, [[1, 2], [3, 4]], [1, 2], [1, 2]),
        CrowdDataError,
        ("task", "one-dimensional", "entry 0"),
    ),
    Case(
        "from_arrays-huge-label",
        _call(CrowdData.from_arrays, [1], [1], [10**30]),
        CrowdDataError,
        ("label", "int64", "strings"),
    ),
    Case(
        "from_arrays-mismatched",
        _call(CrowdData.from_arrays, [1, 2], [1], [1, 2]),
        CrowdDataError,
        ("mismatched", "task has 2", "worker has 1"),
    ),
    Case(
        "from_arrays-empty",
        _call(CrowdData.from_arrays, [], [], []),
        CrowdDataError,
        ("empty data",),
    ),
    Case(
        "from_arrays-nan-label",
        _call(CrowdData.from_arrays, [1, 2], [1, 1], [1.0, float("nan")]),
        CrowdDataError,
        ("label", "missing", "rows [1]"),
    ),
    Case(
        "from_arrays-mixed-ids",
        _call(CrowdData.from_arrays, [1, "a"], [1, 1], [0, 1]),
        CrowdDataError,
        ("task ids mix types",),
    ),
    Case(
        "from_frame-not-frame",
        _call(CrowdData.from_frame, {"task": [1]}),
        CrowdDataError,
        ("expected a pandas DataFrame", "dict"),
    ),
    Case(
        "from_frame-missing-column",
        _call(CrowdData.from_frame, pd.DataFrame({"task": [1], "label": [1]})),
        CrowdDataError,
        ("missing column", "worker"),
    ),
    Case(
        "codes-big-class-code",
        _call(CrowdData, [0, 1], [0, 0], [0, 10**9]),
        CrowdDataError,
        ("1000000001 classes", "n_classes="),
    ),
    Case(
        "from_matrix-big-class-code",
        _call(CrowdData.from_matrix, np.array([[1, 10**9], [0, -1]])),
        CrowdDataError,
        ("largest class code is 1000000000", "n_classes="),
    ),
    Case(
        "from_matrix-inf",
        _call(CrowdData.from_matrix, np.array([[np.inf, 1.0]])),
        CrowdDataError,
        ("infinite", "(0, 0)"),
    ),
    Case(
        "from_matrix-beyond-int32",
        _call(CrowdData.from_matrix, np.array([[1e300, 1.0]]), n_classes=3),
        CrowdDataError,
        ("int32",),
    ),
    Case(
        "from_matrix-1d",
        _call(CrowdData.from_matrix, [1, 2, 3]),
        CrowdDataError,
        ("2-D", "(3,)"),
    ),
    Case(
        "from_matrix-text",
        _call(CrowdData.from_matrix, np.array([["a", "b"]])),
        CrowdDataError,
        ("numeric",),
    ),
    # ---- memory guards (under a 1 GiB budget, so they do not depend on the machine)
    Case(
        "declared-classes-too-many",
        _memory_limited(lambda: _declared_classes(10**12)),
        CrowdMemoryError,
        ("1000000000000 classes", "available"),
    ),
    Case(
        "aggregate-too-wide",
        _memory_limited(lambda: DawidSkene().fit(_declared_classes(20_000))),
        CrowdMemoryError,
        ("DawidSkene", "20000 classes", "available"),
    ),
    Case(
        "majority-vote-too-wide",
        _memory_limited(lambda: MajorityVote().fit(_declared_classes(100_000_000))),
        MemoryError,
        ("MajorityVote", "100000000 classes"),
    ),
    Case(
        "coincidences-too-wide",
        _memory_limited(lambda: coincidences(_declared_classes(100_000))),
        CrowdMemoryError,
        ("100000 x 100000 coincidence matrix",),
    ),
    Case(
        "from_counts-too-many-votes",
        _call(CrowdData.from_counts, [[10**15, 1]]),
        CrowdMemoryError,
        ("annotations (one per vote)", "available"),
    ),
    Case(
        "simulate-million-classes",
        _call(independent_confusion, n_classes=1_000_000),
        CrowdMemoryError,
        ("confusion matrices", "1000000 x 1000000"),
    ),
    # ---- CSV files
    Case(
        "csv-ragged-row",
        _reads("r.csv", "task,worker,label\na,b,c\nd,e\n"),
        CrowdDataError,
        ("cannot parse", "line 3"),
        names_file=True,
    ),
    Case(
        "csv-binary",
        _reads("bin.csv", b"\x00\xff\xfe\x01garbage"),
        CrowdDataError,
        ("not UTF-8",),
        names_file=True,
    ),
    Case("csv-empty", _reads("e.csv", ""), CrowdDataError, ("empty",), names_file=True),
    Case(
        "csv-header-only",
        _reads("h.csv", "task,worker,label\n"),
        CrowdDataError,
        ("no annotation rows",),
        names_file=True,
    ),
    Case(
        "csv-missing-columns",
        _reads("n.csv", "a,b\n1,2\n"),
        CrowdDataError,
        ("missing column", "the columns are ['a', 'b']"),
        names_file=True,
    ),
    Case(
        "csv-repeated-column",
        _reads("d.csv", "task,task,worker,label\n1,2,3,4\n"),
        CrowdDataError,
        ("'task'", "more than once"),
        names_file=True,
    ),
    Case(
        "csv-empty-label",
        _reads("el.csv", "task,worker,label\na,w,\n"),
        CrowdDataError,
        ("'label'", "empty", "rows [0]"),
        names_file=True,
    ),
    # ---- Parquet files
    Case(
        "parquet-list-label",
        _parquet("list.parquet", _labels([[1], [2]])),
        CrowdDataError,
        ("column 'label'", "list", "integers, strings"),
        names_file=True,
    ),
    Case(
        "parquet-datetime-label",
        _parquet("dt.parquet", _labels([datetime.datetime(2020, 1, 1)] * 2)),
        CrowdDataError,
        ("column 'label'", "timestamp"),
        names_file=True,
    ),
    Case(
        "parquet-bytes-label",
        _parquet("bytes.parquet", _labels([b"x", b"y"])),
        CrowdDataError,
        ("column 'label'", "binary"),
        names_file=True,
    ),
    Case(
        "parquet-struct-task",
        _parquet(
            "struct.parquet",
            pa.table({"task": [{"a": 1}, {"a": 2}], "worker": ["w", "w"], "label": [0, 1]}),
        ),
        CrowdDataError,
        ("column 'task'", "struct"),
        names_file=True,
    ),
    Case(
        "parquet-garbage",
        _reads("bad.parquet", b"PAR1garbagePAR1"),
        CrowdDataError,
        ("cannot read the file as Parquet",),
        names_file=True,
    ),
    # ---- peerannot folders
    Case(
        "answers-big-class-code",
        _reads("b/answers.json", BIG_CODE_ANSWERS),
        CrowdDataError,
        ("1000000001 classes", '"n_classes" in', "metadata.json"),
        names_file=True,
    ),
    Case(
        "answers-huge-label",
        _reads("h/answers.json", '{"t1": {"w1": 1000000000000000000000000000000}}'),
        CrowdDataError,
        ("not an integer class code",),
        names_file=True,
    ),
    Case(
        "answers-truncated",
        _reads("t/answers.json", '{"t1": '),
        CrowdDataError,
        ("truncated JSON", "line 1"),
        names_file=True,
    ),
    Case(
        "answers-deeply-nested",
        _reads("deep/answers.json", "[" * 100_000 + "]" * 100_000),
        CrowdDataError,
        ("nested too deeply",),
        names_file=True,
    ),
    Case(
        "answers-array",
        _reads("a/answers.json", "[1, 2]"),
        CrowdDataError,
        ("top level must be an object",),
        names_file=True,
    ),
    Case(
        "answers-string-label",
        _reads("s/answers.json", '{"t1": {"w1": "cat"}}'),
        CrowdDataError,
        ("'cat'", "not an integer class code"),
        names_file=True,
    ),
    Case(
        "answers-negative-label",
        _reads("n/answers.json", '{"t1": {"w1": -3}}'),
        CrowdDataError,
        ("negative", "-3"),
        names_file=True,
    ),
    Case(
        "metadata-huge-n_task",
        _peerannot_with({"n_task": 10**12, "n_classes": 2}, '{"0": {"0": 0}}'),
        CrowdMemoryError,
        ("1000000000000 tasks", "available"),
    ),
    Case(
        "metadata-bad-n_classes",
        _peerannot_with({"n_classes": "x"}, '{"0": {"0": 0}}'),
        CrowdDataError,
        ("metadata.json", "'n_classes'", "non-negative integer"),
    ),
    Case(
        "ground-truth-json-huge",
        _peerannot_with(
            None, '{"0": {"0": 0}}', **{"ground_truth.json": b'{"0": 10000000000000}'}
        ),
        CrowdDataError,
        ("ground_truth.json", "10000000000000", "not an integer class code"),
    ),
    Case(
        "ground-truth-garbage",
        _peerannot_with(None, '{"0": {"0": 0}}', ground_truth_npy=b"xx"),
        CrowdDataError,
        ("ground_truth.npy", "not a .npy file"),
    ),
    # ---- answer matrices
    Case(
        "matrix-big-class-code",
        _reads("mb.txt", "1 1000000000\n0 -1\n"),
        CrowdDataError,
        ("1000000001 classes", "n_classes="),
        names_file=True,
    ),
    Case(
        "matrix-text",
        _reads("m.txt", "a b\n1 2\n"),
        CrowdDataError,
        ("numeric", "row 0"),
        names_file=True,
    ),
    Case(
        "matrix-ragged",
        _reads("mr.txt", "1 2\n1\n"),
        CrowdDataError,
        ("number of columns", "row 2"),
        names_file=True,
    ),
    Case(
        "matrix-fraction",
        _reads("mf.txt", "1.5 2\n"),
        CrowdDataError,
        ("non-integer", "(0, 0)"),
        names_file=True,
    ),
    Case("matrix-empty", _reads("me.txt", ""), CrowdDataError, ("no answers",), names_file=True),
    Case(
        "npy-garbage",
        _reads("bad.npy", b"garbage"),
        CrowdDataError,
        ("not a .npy file",),
        names_file=True,
    ),
    Case(
        "npy-header-promises-too-much",
        _reads("big.npy", _npy_header((10**6, 10**6)) + bytes(64)),
        CrowdDataError,
        ("(1000000, 1000000)", "truncated"),
        names_file=True,
    ),
    Case(
        "npy-3d",
        _npy("n3.npy", np.zeros((2, 2, 2))),
        CrowdDataError,
        ("2-D", "(2, 2, 2)"),
        names_file=True,
    ),
    # ---- the sweep of issue 32
    Case(
        "frame-multiindex-columns",
        lambda tmp: (
            lambda: CrowdData.from_frame(
                pd.DataFrame(
                    [["t1", "w1", 0], ["t2", "w1", 1]],
                    columns=pd.MultiIndex.from_tuples(
                        [("task", "x"), ("worker", "y"), ("label", "z")]
                    ),
                )
            )
        ),
        CrowdDataError,
        ("MultiIndex", "flatten"),
    ),
    Case(
        "frame-repeated-label-column",
        lambda tmp: (
            lambda: CrowdData.from_frame(
                pd.DataFrame([["t1", "w1", 0, 1]], columns=["task", "worker", "label", "label"])
            )
        ),
        CrowdDataError,
        ("'label'", "more than once"),
    ),
    Case(
        "arrays-dict-of-ids",
        lambda tmp: lambda: CrowdData.from_arrays({"t1": 1, "t2": 2}, ["w1", "w2"], [0, 1]),
        CrowdDataError,
        ("task", "a dict"),
    ),
    Case(
        "arrays-set-of-workers",
        lambda tmp: lambda: CrowdData.from_arrays(["t1", "t2"], {"w1", "w2"}, [0, 1]),
        CrowdDataError,
        ("worker", "a set"),
    ),
    Case(
        "ds-max-iter-string",
        lambda tmp: lambda: DawidSkene(max_iter="10").fit(CrowdData.from_arrays([0], [0], [0])),
        TypeError,
        ("DawidSkene", "max_iter", "integer", "'10'"),
    ),
    Case(
        "ds-tol-nan",
        lambda tmp: lambda: DawidSkene(tol=float("nan")).fit(CrowdData.from_arrays([0], [0], [0])),
        ValueError,
        ("DawidSkene", "tol", "nan"),
    ),
    Case(
        "features-without-columns",
        lambda tmp: lambda: _learn_on(np.zeros((2, 0))),
        CrowdDataError,
        ("no feature columns", "(2, 0)"),
    ),
    Case(
        "features-beyond-float32",
        lambda tmp: lambda: _learn_on(np.array([[1.0], [1e300]])),
        CrowdDataError,
        ("float32", "1e+300", "rows [1]"),
    ),
    # ---- issue 43: ds (initial confusions with a row of zeros; lone_labels' values)
    Case(
        "ds-initial-confusions-all-zero",
        lambda tmp: (
            lambda: DawidSkene().fit(
                CrowdData.from_arrays([0, 0], ["a", "b"], [0, 1]),
                initial_confusions=np.zeros((2, 2, 2)),
            )
        ),
        CrowdDataError,
        ("initial_confusions", "worker 'a'", "true class 0", "positive sum"),
    ),
    Case(
        "ds-lone-labels-unknown",
        lambda tmp: (
            lambda: DawidSkene(lone_labels="drop").fit(CrowdData.from_arrays([0], [0], [0]))
        ),
        ValueError,
        ("lone_labels", "'vote'", "'em'", "'drop'"),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_bad_input_raises_a_clear_error(case: Case, tmp_path: Path) -> None:
    call = case.make(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CrowdDataWarning)
        with pytest.raises(case.error) as caught:
            call()
    message = str(caught.value)
    for fragment in case.says:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    if case.names_file:
        assert str(tmp_path) in message, f"the file is not named in {message!r}"
    # One line: the CLI prints it as is.
    assert "\n" not in message


def test_there_are_at_least_forty_cases() -> None:
    assert len(CASES) >= 40
    assert len({case.name for case in CASES}) == len(CASES)


# ---------------------------------------------------------------------- memory guard


def test_check_allocation_message_names_what_and_sizes(monkeypatch) -> None:
    monkeypatch.setenv(MEMORY_LIMIT_ENV, str(2**20))
    with pytest.raises(CrowdMemoryError, match=r"the table would need 2\.0 MiB .* 1\.0 MiB"):
        check_allocation(2**21, "the table")
    check_allocation(2**19, "the table")  # fits: no error


def test_memory_error_is_both_kinds() -> None:
    error = CrowdMemoryError("x")
    assert isinstance(error, CrowdDataError)
    assert isinstance(error, MemoryError)


@pytest.mark.parametrize(
    ("n", "text"),
    [(0, "0 bytes"), (1023, "1023 bytes"), (1536, "1.5 KiB"), (3 * 2**30, "3.0 GiB")],
)
def test_format_bytes(n: int, text: str) -> None:
    assert format_bytes(n) == text


def test_declared_classes_within_budget_are_accepted() -> None:
    data = CrowdData.from_matrix(np.array([[0, 5000]]), n_classes=5001)
    assert data.n_classes == 5001


def test_few_classes_with_a_gap_are_accepted() -> None:
    # 1000 implied classes is below the limit: codes may leave gaps.
    data = CrowdData.from_matrix(np.array([[0, 999]]))
    assert data.n_classes == 1000


# ---------------------------------------------------------------------- warnings and truth


@pytest.mark.parametrize(
    ("task", "label", "named"),
    [
        ([" t1", "t1", "t1 "], ["a", "a", "a"], "' t1', 't1', 't1 '"),
        (["t1", "t2", "t3"], ["1", "1.0", "2"], "'1', '1.0'"),
        (["t1", "t2", "t3"], ["cat", "cat ", "dog"], "'cat', 'cat '"),
    ],
)
def test_confusable_ids_warn_and_stay_distinct(task, label, named) -> None:
    with pytest.warns(CrowdDataWarning, match=named):
        data = CrowdData.from_arrays(task, ["w"] * 3, label)
    assert data.n_tasks == len(set(task))
    assert data.n_classes == len(set(label))


def test_confusable_ids_in_a_csv_warn(tmp_path: Path) -> None:
    path = _file(tmp_path, "ws.csv", "task,worker,label\n t1,w1,1\nt1,w2,1.0\n")
    with pytest.warns(CrowdDataWarning) as record:
        data = io.read_csv(path)
    messages = " ".join(str(w.message) for w in record)
    assert "' t1', 't1'" in messages and "'1', '1.0'" in messages
    assert data.n_tasks == 2 and data.n_classes == 2


def test_plain_ids_do_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", CrowdDataWarning)
        CrowdData.from_arrays(["t1", "t2"], ["w1", "w1"], ["1", "2"])


def test_from_frame_keeps_a_truth_column() -> None:
    frame = pd.DataFrame(
        {
            "task": ["a", "a", "b"],
            "worker": [1, 2, 1],
            "label": ["x", "y", "y"],
            "truth": ["x", "x", None],
        }
    )
    data = CrowdData.from_frame(frame)
    assert data.truth_series().to_dict() == {"a": "x"}
    assert CrowdData.from_frame(frame, truth=None).truth is None


# ---------------------------------------------------------------------- memory ceiling


def _limit_address_space() -> None:
    limit = 2 * 2**30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS is enforced on Linux")
def test_fifty_byte_input_fails_cleanly_under_a_memory_ceiling(tmp_path: Path) -> None:
    """Issue 13's reproducer, run by the CLI in a child limited to 2 GiB."""
    folder = tmp_path / "b"
    _file(folder, "answers.json", BIG_CODE_ANSWERS)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    env.pop("CROWDLEARN_DEBUG", None)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "crowdlearn",
            "aggregate",
            str(folder),
            "-s",
            "ds",
            "-o",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        preexec_fn=_limit_address_space,
        timeout=300,
    )
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("crowdlearn: error:"), result.stderr
    assert "n_classes" in lines[0]
    assert not (tmp_path / "out").exists()
