"""The catalogue of bad CLI inputs: one entry per case, shared by the test and the docs.

Each case runs ``crowdlearn ARGS`` in an empty working directory holding the input
files below (and, where ``target`` says so, an output that already exists). The
test (test_cli_catalogue.py) asserts the exit status, exactly one stderr line
``crowdlearn: error: ...``, no traceback, the pre-existing target byte-identical
afterwards and no new file or folder. ``docs/reliability.md`` lists every case id
(test_reliability_doc.py checks it; ``python tests/reliability/cli_cases.py`` prints
the table).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field

import numpy as np

#: Input files every case finds in its working directory.
CSV_3 = (
    "task,worker,label\n"
    "t1,w1,a\nt1,w2,b\nt1,w3,a\n"
    "t2,w1,b\nt2,w2,b\nt2,w3,c\n"
    "t3,w1,c\nt3,w2,c\nt3,w3,c\n"
    "t4,w1,a\nt4,w2,a\nt4,w3,b\n"
)
CSV_2_TRUTH = (
    "task,worker,label,truth\nt1,w1,0,0\nt1,w2,1,0\nt2,w1,1,1\nt2,w2,1,1\nt3,w1,0,0\nt3,w2,0,0\n"
)


def _npy(array: np.ndarray) -> bytes:
    import io

    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _gzip(content: bytes) -> bytes:
    import gzip

    return gzip.compress(content, mtime=0)


def _parquet(columns: dict) -> bytes:
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(pa.table(columns), buffer)
    return buffer.getvalue()


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG whose IHDR declares ``width x height`` 1-bit pixels, with 64 bytes of image
    data: a decompression bomb of 69 bytes."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00" * 64))
        + chunk(b"IEND", b"")
    )


def _npy_header_only(shape: tuple[int, ...]) -> bytes:
    """A .npy header declaring a bool array of ``shape``, followed by 64 bytes."""
    import io

    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buffer, {"descr": "|b1", "fortran_order": False, "shape": shape}
    )
    return buffer.getvalue() + b"\x00" * 64


def input_files() -> dict[str, bytes | None]:
    """Name -> content of the inputs (None: an empty folder)."""
    import datetime as dt

    return {
        "crowd.csv": CSV_3.encode(),
        "binary.csv": CSV_2_TRUTH.encode(),
        "dup.csv": (CSV_3 + "t1,w1,b\n").encode(),
        "noworker.csv": b"task,label\nt1,a\nt2,b\n",
        "wrongcols.csv": b"a,b\n1,2\n",
        "empty.csv": b"",
        "binary.bin": bytes(range(256)) * 4,
        "data.xyz": CSV_3.encode(),
        "gold.csv": b"task,label\nt1,a\nt2,b\n",
        "badgold.csv": b"id,value\nt1,a\n",
        "brokengold.csv": b'task,label\n"t1,a\n\x00\x81\n',
        "feats.npy": _npy(np.arange(8, dtype=np.float64).reshape(4, 2)),
        "testX.npy": _npy(np.zeros((3, 2))),
        "testy.txt": b"0\n1\n7\n",
        "badjson/answers.json": b'{"t1": {"w1": 0,',
        "emptydir": None,
        "huge/answers.json": b'{"t1":{"w1":1000000000,"w2":0},"t2":{"w1":1}}',
        "huge.txt": b"0 1000000000\n1 -1\n",
        "listlabels.parquet": _parquet(
            {"task": ["t1", "t2"], "worker": ["w1", "w1"], "label": [[1, 2], [3]]}
        ),
        "datelabels.parquet": _parquet(
            {
                "task": ["t1", "t2"],
                "worker": ["w1", "w1"],
                "label": [dt.datetime(2020, 1, 1), dt.datetime(2021, 1, 1)],
            }
        ),
        "ids.json": json.dumps({"t1": {"w1": 0}}).encode(),
        # the sweep of issue 32
        "proj/crowd.csv": CSV_3.encode(),
        "proj/gold.csv": b"task,label\nt1,a\n",
        "proj/feats.npy": _npy(np.arange(8, dtype=np.float64).reshape(4, 2)),
        "one-task.csv": b"task,worker,label\nt1,w1,0\nt1,w2,1\nt1,w3,1\n",
        "one-worker.csv": b"task,worker,label\nt1,w1,0\nt2,w1,1\nt3,w1,1\nt4,w1,0\n",
        "zerofeats.npy": _npy(np.zeros((4, 0))),
        "hugefeats.npy": _npy(np.array([[1.0, 2.0], [1e300, 0.0], [0.0, 1.0], [1.0, 1.0]])),
        "notzip.npz": b"PK garbage",
        "crowd.csv.gz": CSV_3.encode(),
        "spaces.csv": b"task,worker,label\nt1,w1,a\nt1 ,w2,a\n1,w1,b\n1.0,w2,b\n",
        "crowd.parquet": _parquet(
            {"task": ["t1", "t1", "t2"], "worker": ["w1", "w2", "w1"], "label": ["a", "b", "a"]}
        ),
        # ---- issue 43: platform exports
        "ls-annotations-object.json": json.dumps(
            [{"id": 1, "annotations": {"completed_by": 1, "result": []}}]
        ).encode(),
        "ls-choices-object.json": json.dumps(
            [
                {
                    "id": 1,
                    "annotations": [
                        {"completed_by": 1, "result": [{"value": {"choices": {"cat": True}}}]}
                    ],
                }
            ]
        ).encode(),
        "ls-min-sets.json": json.dumps(
            [
                {"id": 1, "annotator": 1, "tags": ["a", "b"]},
                {"id": 1, "annotator": 2, "tags": ["a"]},
            ]
        ).encode(),
        "prodigy-null.jsonl": (
            json.dumps(
                {"_input_hash": 1, "accept": ["X"], "answer": "accept", "_annotator_id": "a"}
            )
            + "\nnull\n"
        ).encode(),
        "prodigy-maybe.jsonl": (
            json.dumps(
                {"_input_hash": 1, "accept": ["X"], "answer": "maybe", "_annotator_id": "a"}
            )
            + "\n"
        ).encode(),
        "mturk-typo.csv": (
            b"HITId,WorkerId,AssignmentStatus,Answer.c\nH1,W1,Approved,cat\nH1,W2,Rejectd,dog\n"
        ),
        "mturk-anonymous.csv": (
            b"HITId,WorkerId,AssignmentStatus,Answer.c\nH1,,Approved,cat\nH2, ,Approved,dog\n"
        ),
        "crowdflower-tainted.csv": (
            b"_unit_id,_worker_id,_tainted,c,t\n1,w1,false,a,s\n1,w2,?,b,s\n"
        ),
        # ---- issue 43: state files and outputs
        "s.state": _state_bytes(),
        "late.csv": b"task,worker,label\nt1,w9,a\nt2,w9,b\n",
        "labels/round0.csv": CSV_3.encode(),
        # ---- issue 43: answer kinds
        "pairs.csv": b"worker,left,right,label\nw1,a,b,a\nw2,a,b,tie\nw1,b,c,b\n",
        "bomb/t1/w1.png": _png_header_only(40_000, 40_000),
        "bomb/t1/w2.png": _png_header_only(40_000, 40_000),
        "npybomb/t1/w1.npy": _npy_header_only((400_000, 400_000)),
        # ---- issue 43: io
        "lines.jsonl": b'null\n{"task": "t1", "worker": "w1", "label": "a"}\n',
        "cut.csv.gz": _gzip(CSV_3.encode() * 50)[:-40],
        "packed.csv.gz": _gzip(CSV_3.encode()),
        # ---- issue 43: model files (a file that ran would leave MARKER behind)
        "crafted-model.pt": _crafted_torch_file(),
        "pickled/model.pt": _crafted_pickle(),
        "ckpt/checkpoint.pt": _crafted_torch_file(),
        "truncated-model.pt": _data_only_model("crowdlearn.learning.crowd_layer.CrowdLayer")[:-7],
        "foreign-class-model.pt": _data_only_model("os.system"),
        "weights.safetensors": _data_only_model(None),
        # ---- issue 45: spans in the CLI (a crowd in the NER-MTurk folder layout)
        "spans-ner/ground_truth/d1.txt": b"Ada B-PER\nLovelace I-PER\nwrote O\n",
        "spans-ner/mturk_train_data/w1/d1.txt": b"Ada B-PER\nLovelace I-PER\nwrote O\n",
        "spans-ner/mturk_train_data/w2/d1.txt": b"Ada B-PER\nLovelace O\nwrote O\n",
        "spans-badtag.conll": b"-DOCSTART- d1\nAda B-PER\nLovelace X-PER\nwrote O\n",
        "spans-otherdoc.conll": b"-DOCSTART- d7\nAda B-PER\n",
        "spans-nodoc.conll": b"Ada B-PER\n\n-DOCSTART- d1\nAda O\n",
        # ---- issue 45: span readers (Label Studio, Prodigy, CoNLL columns, long CSV + texts)
        "spansio-past-end.json": json.dumps(
            [
                {
                    "id": 1,
                    "data": {"text": "Ada wrote."},
                    "annotations": [
                        {
                            "id": 4,
                            "completed_by": 1,
                            "result": [
                                {
                                    "type": "labels",
                                    "value": {"start": 0, "end": 40, "labels": ["PER"]},
                                }
                            ],
                        }
                    ],
                }
            ]
        ).encode(),
        "spansio-notext.json": json.dumps(
            [
                {
                    "id": 1,
                    "data": {"image": "x.png"},
                    "annotations": [
                        {
                            "id": 4,
                            "completed_by": 1,
                            "result": [
                                {
                                    "type": "labels",
                                    "value": {"start": 0, "end": 3, "labels": ["PER"]},
                                }
                            ],
                        }
                    ],
                }
            ]
        ).encode(),
        "spansio-notext.jsonl": b'{"_input_hash": 1, "_annotator_id": "a", "answer": "accept", '
        b'"spans": [{"start": 0, "end": 3, "label": "PER"}]}\n',
        "spansio-crowd.csv": b"task,worker,start,end,label\nd1,a,0,3,PER\nd1,b,7,4,PER\n",
        "spansio-texts.csv": b"task,text\nd1,Ada wrote.\n",
        "spansio-badtag.conll": b"TOKEN w1 w2\n-DOCSTART- d1\nAda B-PER B-PER\nwrote O X-PER\n",
        "spansio-emptydoc.conll": b"-DOCSTART- d1\n-DOCSTART- d2\nAda B-PER\n",
        "spansio-tokens.conll": b"-DOCSTART- 1\nqqq\nzzz\n",
        "spansio-ls.json": json.dumps(
            [
                {
                    "id": 1,
                    "data": {"text": "Ada wrote."},
                    "annotations": [
                        {
                            "id": 4,
                            "completed_by": 1,
                            "result": [
                                {
                                    "type": "labels",
                                    "value": {"start": 0, "end": 3, "labels": ["PER"]},
                                }
                            ],
                        }
                    ],
                }
            ]
        ).encode(),
        # ---- issue 46: out-of-core engine (--engine stream)
        "unsorted.parquet": _parquet(
            {"task": ["t2", "t1", "t2"], "worker": ["w1", "w1", "w2"], "label": ["a", "b", "a"]}
        ),
        "nullworker.parquet": _parquet(
            {"task": ["t1", "t1", "t2"], "worker": ["w1", None, "w1"], "label": ["a", "b", "a"]}
        ),
        # ---- issue 45: learning from spans (a tagger, and token files for predict --texts)
        "tagger.pt": _tagger_model(),
        "tokens-empty.txt": b"",
        "tokens-blank.txt": b"\n  \n\n",
        "tokens.txt": b"Ada\nvisited\nOslo\n.\n",
    }


@functools.lru_cache(maxsize=1)
def _tagger_model() -> bytes:
    """The model file of a tiny span tagger (``crowdlearn learn --kind spans``)."""
    import tempfile
    from pathlib import Path

    from crowdlearn.data import Spans
    from crowdlearn.learning.spans import make_span_learner

    crowd = Spans.from_tags(
        ["d1", "d1"], ["w1", "w2"], [["B-PER", "O", "B-LOC", "O"], ["B-PER", "O", "O", "O"]],
        tokens={"d1": ["Ada", "visited", "Oslo", "."]},
    )  # fmt: skip
    tiny = {"max_epochs": 1, "hidden": 4, "word_dim": 4, "char_filters": 4}
    model = make_span_learner("crowdlayer", **tiny).fit(crowd)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "tagger.pt"
        model.save(path)
        return path.read_bytes()


@functools.lru_cache(maxsize=1)
def _state_bytes() -> bytes:
    """A state file of ``crowdlearn aggregate crowd.csv --state s.state -s mv``."""
    import tempfile
    from pathlib import Path

    from crowdlearn import CrowdData
    from crowdlearn.aggregation import MajorityVote, save_state

    rows = [line.split(",") for line in CSV_3.strip().splitlines()[1:]]
    crowd = CrowdData.from_arrays(*map(list, zip(*rows, strict=True)))
    model = MajorityVote().partial_fit(crowd)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.state"
        save_state(model, path, {"kind": "class", "columns": {}, "strategy": "mv"})
        return path.read_bytes()


class _TouchesMarker:
    """Unpickling it runs ``touch MARKER`` in the working directory."""

    def __reduce__(self) -> tuple:
        import os

        return (os.system, ("touch MARKER",))


def _crafted_torch_file() -> bytes:
    """A ``torch.save`` file (zip with data.pkl) that runs a command when unpickled."""
    import io

    import torch

    buffer = io.BytesIO()
    torch.save({"class": "x", "meta": _TouchesMarker()}, buffer)
    return buffer.getvalue()


def _crafted_pickle() -> bytes:
    """A bare pickle that runs a command when unpickled."""
    import pickle

    return pickle.dumps(_TouchesMarker(), protocol=4)


def _data_only_model(class_name: str | None) -> bytes:
    """A file in the data-only layout whose learner is ``class_name`` (None: a
    safetensors file without crowdlearn's metadata), taking 2 features."""
    import safetensors.torch
    import torch

    from crowdlearn.learning._model_file import MODEL_FORMAT

    tensors = {"t0": torch.zeros(4, 2)}
    if class_name is None:
        return safetensors.torch.save(tensors)
    meta = {
        "format": MODEL_FORMAT,
        "crowdlearn": "0.1.0",
        "method": "crowdlayer",
        "spec": None,
        "class": class_name,
        "classes": ["a", "b"],
        "input_shape": [2],
        "n_features": 2,
        "featurizer": None,
        "training": None,
    }
    document = {"class": class_name, "meta": meta, "module": {"w": {"$tensor": "t0"}}}
    metadata = {"crowdlearn-model": json.dumps(document)}
    return safetensors.torch.save(tensors, metadata=metadata)


@dataclass
class Case:
    """One bad input and what the CLI must do with it."""

    id: str
    args: list[str]
    expect: str  # a fragment of the error line
    exit: int = 2
    #: an output that exists before the run: (path, "file" | "folder"); it must be
    #: byte-identical afterwards
    target: tuple[str, str] | None = None
    #: a fault injected by the test (see test_cli_catalogue.FAULTS)
    fault: str | None = None
    #: why the case may still fail in this branch (fixed by another change)
    xfail: str | None = None
    #: run in a child process under an address-space limit (inputs that ask for
    #: huge allocations must not take the test machine's memory)
    child: bool = False
    skip_if: str | None = None
    notes: str = field(default="")

    @property
    def command(self) -> str:
        return "crowdlearn " + " ".join(self.args)


OVER = "--overwrite"

CASES: list[Case] = [
    # ---------------------------------------------------------------- the command line
    Case("unknown-command", ["nosuch"], "No such command"),
    Case("unknown-global-option", ["--bogus"], "No such option"),
    Case("aggregate-missing-args", ["aggregate", "crowd.csv"], "are required"),
    Case(
        "aggregate-bad-format-choice",
        ["aggregate", "crowd.csv", "-s", "mv", "-o", "out", "--format", "xls"],
        "'--format'",
    ),
    Case(
        "convert-bad-from-choice",
        ["convert", "crowd.csv", "-o", "o.csv", "--from", "xls"],
        "'--from'",
    ),
    # ---------------------------------------------------------------- inputs
    Case(
        "aggregate-nonexistent",
        ["aggregate", "nonexistent", "-s", "mv", "-o", "out"],
        "no such file or directory: nonexistent",
    ),
    Case(
        "aggregate-unknown-ending",
        ["aggregate", "data.xyz", "-s", "mv", "-o", "out"],
        "cannot tell the format",
    ),
    Case("aggregate-empty-csv", ["aggregate", "empty.csv", "-s", "mv", "-o", "out"], "empty.csv"),
    Case(
        "aggregate-binary-garbage",
        ["aggregate", "binary.bin", "-s", "mv", "-o", "out"],
        "binary.bin",
    ),
    Case(
        "aggregate-wrong-columns",
        ["aggregate", "wrongcols.csv", "-s", "mv", "-o", "out"],
        "missing column",
    ),
    Case(
        "aggregate-no-worker-column",
        ["aggregate", "noworker.csv", "-s", "mv", "-o", "out"],
        "task, worker and label",
    ),
    Case(
        "aggregate-duplicates",
        ["aggregate", "dup.csv", "-s", "mv", "-o", "out"],
        "--duplicates keep",
    ),
    Case(
        "aggregate-empty-folder",
        ["aggregate", "emptydir", "-s", "mv", "-o", "out"],
        "holds neither",
    ),
    Case(
        "aggregate-broken-answers-json",
        ["aggregate", "badjson", "-s", "mv", "-o", "out"],
        "answers.json",
    ),
    Case(
        "aggregate-50-byte-json-huge-code",
        ["aggregate", "huge", "-s", "ds", "-o", "out"],
        "",
        child=True,
        notes="under a 3 GiB address-space limit; the io size guard refuses it without one",
    ),
    Case(
        "aggregate-matrix-huge-code",
        ["aggregate", "huge.txt", "-s", "ds", "-o", "out"],
        "",
        child=True,
        notes="under a 3 GiB address-space limit; the io size guard refuses it without one",
    ),
    Case(
        "aggregate-parquet-list-labels",
        ["aggregate", "listlabels.parquet", "-s", "mv", "-o", "out"],
        "label",
    ),
    Case(
        "aggregate-parquet-datetime-labels",
        ["aggregate", "datelabels.parquet", "-s", "mv", "-o", "out"],
        "label",
    ),
    # ---------------------------------------------------------------- options
    Case(
        "aggregate-unknown-strategy",
        ["aggregate", "crowd.csv", "-s", "nosuch", "-o", "out"],
        "nosuch",
    ),
    Case(
        "aggregate-param-without-equals",
        ["aggregate", "crowd.csv", "-s", "mv", "--param", "foo", "-o", "out"],
        "k=v",
    ),
    Case(
        "aggregate-unknown-param",
        ["aggregate", "crowd.csv", "-s", "mv", "--param", "nosuch=1", "-o", "out"],
        "nosuch",
    ),
    Case(
        "aggregate-bad-param-value",
        ["aggregate", "crowd.csv", "-s", "ds", "--param", "max_iter=-3", "-o", "out"],
        "max_iter",
    ),
    Case(
        "aggregate-kos-multiclass", ["aggregate", "crowd.csv", "-s", "kos", "-o", "out"], "binary"
    ),
    Case(
        "aggregate-gold-missing-file",
        ["aggregate", "crowd.csv", "-s", "ds", "--gold", "nope.csv", "-o", "out"],
        "nope.csv",
    ),
    Case(
        "aggregate-gold-bad-columns",
        ["aggregate", "crowd.csv", "-s", "ds", "--gold", "badgold.csv", "-o", "out"],
        "--gold badgold.csv",
    ),
    Case(
        "aggregate-gold-unparsable",
        ["aggregate", "crowd.csv", "-s", "ds", "--gold", "brokengold.csv", "-o", "out"],
        "brokengold.csv",
    ),
    Case(
        "aggregate-gold-not-taken",
        ["aggregate", "crowd.csv", "-s", "mv", "--gold", "gold.csv", "-o", "out"],
        "does not take gold",
    ),
    Case(
        "aggregate-dask-gold",
        [
            "aggregate",
            "crowd.csv",
            "-s",
            "ds",
            "--engine",
            "dask",
            "--gold",
            "gold.csv",
            "-o",
            "out",
        ],
        "--engine dask",
    ),
    Case(
        "aggregate-dask-no-engine-for-strategy",
        ["aggregate", "crowd.csv", "-s", "kos", "--engine", "dask", "-o", "out"],
        "no Dask engine",
        skip_if="distributed",
    ),
    Case(
        "aggregate-local-workers-0",
        [
            "aggregate",
            "crowd.csv",
            "-s",
            "ds",
            "--engine",
            "dask",
            "--local-workers",
            "0",
            "-o",
            "out",
        ],
        "--local-workers",
    ),
    # ---------------------------------------------------------------- outputs
    Case(
        "aggregate-existing-folder",
        ["aggregate", "crowd.csv", "-s", "mv", "-o", "out"],
        OVER,
        target=("out", "folder"),
    ),
    Case(
        "aggregate-existing-file",
        ["aggregate", "crowd.csv", "-s", "mv", "-o", "out"],
        "is a file",
        target=("out", "file"),
    ),
    Case(
        "aggregate-dev-null",
        ["aggregate", "crowd.csv", "-s", "mv", "-o", "/dev/null"],
        "character device",
    ),
    Case(
        "aggregate-fifo",
        ["aggregate", "crowd.csv", "-s", "mv", "-o", "fifo"],
        "FIFO",
        target=("fifo", "fifo"),
    ),
    Case(
        "aggregate-into-current-folder",
        ["aggregate", "crowd.csv", "-s", "mv", "-o", ".", OVER],
        "holds the input crowd.csv",
    ),
    Case(
        "aggregate-folder-named-as-a-file",
        ["aggregate", "crowd.csv", "-s", "mv", "-o", "labels.csv"],
        "this output is a folder of several files, not one .csv file",
    ),
    Case(
        "identify-folder-named-as-a-file",
        ["identify", "crowd.csv", "-o", "scores.parquet"],
        "not one .parquet file",
    ),
    Case(
        "aggregate-through-a-file",
        ["aggregate", "crowd.csv", "-s", "mv", "-o", "crowd.csv/out"],
        "cannot write crowd.csv/out: Not a directory",
    ),
    Case(
        "aggregate-read-only",
        ["aggregate", "crowd.csv", "-s", "mv", "-o", "new/out"],
        "cannot write new/out: Read-only file system",
        fault="read-only",
    ),
    Case(
        "aggregate-read-only-at-write",
        ["aggregate", "crowd.csv", "-s", "mv", "-o", "new/out"],
        "cannot write new/out: Read-only file system",
        fault="read-only-late",
    ),
    Case(
        "aggregate-disk-full",
        ["aggregate", "crowd.csv", "-s", "mv", "-o", "new/out"],
        "cannot write new/out: No space left on device",
        fault="disk-full",
    ),
    Case(
        "aggregate-disk-full-overwrite",
        ["aggregate", "crowd.csv", "-s", "mv", "-o", "out", OVER],
        "cannot write out: No space left on device",
        fault="disk-full",
        target=("out", "ours"),
    ),
    Case(
        "aggregate-rename-fails",
        ["aggregate", "crowd.csv", "-s", "mv", "-o", "out", OVER],
        "cannot write out",
        fault="rename",
        target=("out", "ours"),
    ),
    Case(
        "aggregate-memory-error",
        ["aggregate", "crowd.csv", "-s", "mv", "-o", "out"],
        "not enough memory",
        fault="memory",
    ),
    Case(
        "aggregate-ctrl-c",
        ["aggregate", "crowd.csv", "-s", "mv", "-o", "out"],
        "interrupted",
        exit=130,
        fault="interrupt",
    ),
    Case(
        "aggregate-ctrl-c-overwrite",
        ["aggregate", "crowd.csv", "-s", "mv", "-o", "out", OVER],
        "interrupted",
        exit=130,
        fault="interrupt",
        target=("out", "ours"),
    ),
    Case(
        "aggregate-bug",
        ["aggregate", "crowd.csv", "-s", "mv", "-o", "out"],
        "internal error, please report: RuntimeError",
        exit=70,
        fault="bug",
    ),
    Case(
        "aggregate-permission-error-on-input",
        ["aggregate", "crowd.csv", "-s", "mv", "-o", "out"],
        "crowd.csv: Permission denied",
        fault="unreadable",
    ),
    # ---------------------------------------------------------------- convert
    Case(
        "convert-nonexistent",
        ["convert", "nonexistent.csv", "-o", "o.csv"],
        "no such file or directory",
    ),
    Case(
        "convert-existing-file",
        ["convert", "crowd.csv", "-o", "precious.csv"],
        OVER,
        target=("precious.csv", "file"),
    ),
    Case("convert-onto-itself", ["convert", "crowd.csv", "-o", "crowd.csv"], "is the input"),
    Case(
        "convert-onto-itself-overwrite",
        ["convert", "crowd.csv", "-o", "crowd.csv", OVER],
        "is the input crowd.csv",
    ),
    Case(
        "convert-into-folder",
        ["convert", "crowd.csv", "-o", "dir", "--to", "csv"],
        "is a folder",
        target=("dir", "folder"),
    ),
    Case(
        "convert-into-folder-overwrite",
        ["convert", "crowd.csv", "-o", "dir", "--to", "csv", OVER],
        "is a folder",
        target=("dir", "folder"),
    ),
    Case(
        "convert-existing-peerannot",
        ["convert", "crowd.csv", "-o", "oldsim", "--to", "peerannot"],
        OVER,
        target=("oldsim", "folder"),
    ),
    Case(
        "convert-dev-null",
        ["convert", "crowd.csv", "-o", "/dev/null", "--to", "csv"],
        "character device",
    ),
    Case(
        "convert-fifo",
        ["convert", "crowd.csv", "-o", "fifo", "--to", "csv"],
        "FIFO",
        target=("fifo", "fifo"),
    ),
    Case("convert-no-ending", ["convert", "crowd.csv", "-o", "out"], "--to"),
    Case("convert-unknown-ending", ["convert", "crowd.csv", "-o", "out.xyz"], "--from or --to"),
    Case("convert-unknown-input-ending", ["convert", "data.xyz", "-o", "o.csv"], "--from or --to"),
    Case("convert-json-not-answers", ["convert", "crowd.csv", "-o", "x.json"], "answers.json"),
    Case(
        "convert-matrix-with-ids",
        ["convert", "crowd.csv", "-o", "m.txt"],
        "write CSV or Parquet instead",
    ),
    Case(
        "convert-peerannot-duplicates",
        ["convert", "dup.csv", "--duplicates", "keep", "-o", "p", "--to", "peerannot"],
        "--duplicates first or last",
    ),
    Case("convert-duplicates", ["convert", "dup.csv", "-o", "o.csv"], "--duplicates keep"),
    Case(
        "convert-disk-full",
        ["convert", "crowd.csv", "-o", "o.parquet"],
        "cannot write o.parquet: No space left on device",
        fault="disk-full-io",
    ),
    # ---------------------------------------------------------------- learn
    Case(
        "learn-hidden-0",
        [
            "learn",
            "crowd.csv",
            "-s",
            "crowdlayer",
            "--features",
            "feats.npy",
            "--hidden",
            "0",
            "-o",
            "out",
        ],
        "'--hidden': must be an integer >= 1, got 0",
    ),
    Case(
        "learn-epochs-0",
        [
            "learn",
            "crowd.csv",
            "-s",
            "crowdlayer",
            "--features",
            "feats.npy",
            "--epochs",
            "0",
            "-o",
            "out",
        ],
        "--epochs",
    ),
    Case(
        "learn-device-banana",
        [
            "learn",
            "crowd.csv",
            "-s",
            "crowdlayer",
            "--features",
            "feats.npy",
            "--device",
            "banana",
            "-o",
            "out",
        ],
        "--device banana",
    ),
    Case(
        "learn-device-cuda-missing",
        [
            "learn",
            "crowd.csv",
            "-s",
            "crowdlayer",
            "--features",
            "feats.npy",
            "--device",
            "cuda:99",
            "-o",
            "out",
        ],
        "--device cuda:99",
    ),
    Case(
        "learn-test-labels-unknown-class",
        [
            "learn",
            "crowd.csv",
            "-s",
            "crowdlayer",
            "--features",
            "feats.npy",
            "--test-features",
            "testX.npy",
            "--test-labels",
            "testy.txt",
            "--epochs",
            "1",
            "-o",
            "out",
        ],
        "class code(s) 7",
    ),
    Case(
        "learn-test-labels-without-features",
        [
            "learn",
            "crowd.csv",
            "-s",
            "crowdlayer",
            "--features",
            "feats.npy",
            "--test-labels",
            "testy.txt",
            "-o",
            "out",
        ],
        "--test-features",
    ),
    Case("learn-unknown-method", ["learn", "crowd.csv", "-s", "nosuch", "-o", "out"], "nosuch"),
    Case(
        "learn-nonexistent",
        ["learn", "nonexistent.csv", "-s", "crowdlayer", "-o", "out"],
        "no such file or directory",
    ),
    Case(
        "learn-existing-folder",
        ["learn", "crowd.csv", "-s", "crowdlayer", "--features", "feats.npy", "-o", "out"],
        OVER,
        target=("out", "folder"),
    ),
    Case("learn-no-features", ["learn", "crowd.csv", "-s", "crowdlayer", "-o", "out"], "feature"),
    Case(
        "learn-bad-features",
        ["learn", "crowd.csv", "-s", "crowdlayer", "--features", "testy.txt", "-o", "out"],
        "",
    ),
    Case(
        "learn-valid-bogus",
        [
            "learn",
            "crowd.csv",
            "-s",
            "crowdlayer",
            "--features",
            "feats.npy",
            "--valid",
            "bogus",
            "-o",
            "out",
        ],
        "--valid bogus",
    ),
    Case(
        "learn-valid-split-on-a-file",
        [
            "learn",
            "crowd.csv",
            "-s",
            "crowdlayer",
            "--features",
            "feats.npy",
            "--valid",
            "split",
            "-o",
            "out",
        ],
        "--valid split needs a registry dataset",
    ),
    Case(
        "learn-valid-conflict",
        [
            "learn",
            "crowd.csv",
            "-s",
            "crowdlayer",
            "--features",
            "feats.npy",
            "--valid",
            "testX.npy",
            "--valid-features",
            "feats.npy",
            "--valid-labels",
            "testy.txt",
            "-o",
            "out",
        ],
        "conflicts with --valid-features",
    ),
    Case(
        "learn-search-unknown-param",
        [
            "learn",
            "crowd.csv",
            "-s",
            "crowdlayer",
            "--features",
            "feats.npy",
            "--search",
            "nosuch=1,2",
            "-o",
            "out",
        ],
        "--search nosuch",
    ),
    Case(
        "learn-search-without-validation",
        [
            "learn",
            "crowd.csv",
            "-s",
            "crowdlayer",
            "--features",
            "feats.npy",
            "--search",
            "lr=0.1,0.01",
            "--valid",
            "none",
            "-o",
            "out",
        ],
        "selection criterion",
    ),
    # ---------------------------------------------------------------- predict
    Case(
        "predict-not-a-model",
        ["predict", "binary.bin", "--features", "feats.npy", "-o", "p.csv"],
        "not a crowdlearn model file",
    ),
    Case("predict-info-not-a-model", ["predict", "crowd.csv", "--info"], "not a crowdlearn model"),
    Case(
        "predict-nonexistent-model",
        ["predict", "nonexistent.pt", "--features", "feats.npy", "-o", "p.csv"],
        "no such file or directory",
    ),
    Case(
        "predict-no-items",
        ["predict", "binary.bin", "-o", "p.csv"],
        "give the items",
    ),
    Case(
        "predict-existing-output",
        ["predict", "binary.bin", "--features", "feats.npy", "-o", "p.csv"],
        OVER,
        target=("p.csv", "file"),
    ),
    # ---------------------------------------------------------------- report
    Case(
        "report-truth-without-truth", ["report", "crowd.csv", "--truth", "-o", "r.html"], "--truth"
    ),
    Case("report-kos-multiclass", ["report", "crowd.csv", "-s", "kos", "-o", "r.html"], "binary"),
    Case(
        "report-unknown-strategy",
        ["report", "crowd.csv", "-s", "nosuch", "-o", "r.html"],
        "nosuch",
    ),
    Case(
        "report-existing-file",
        ["report", "binary.csv", "-o", "r.html"],
        OVER,
        target=("r.html", "file"),
    ),
    Case(
        "report-onto-folder",
        ["report", "binary.csv", "-o", "dir"],
        "is a directory",
        target=("dir", "folder"),
    ),
    Case("report-dev-null", ["report", "binary.csv", "-o", "/dev/null"], "character device"),
    Case(
        "report-max-rows-1",
        ["report", "binary.csv", "--max-worker-rows", "1", "-o", "r.html"],
        "'--max-worker-rows': must be an integer >= 2",
    ),
    Case(
        "report-nonexistent",
        ["report", "nonexistent.csv", "-o", "r.html"],
        "no such file or directory",
    ),
    Case(
        "report-dataset-not-fetched",
        ["report", "labelme", "--root", "emptydir", "-o", "r.html"],
        "--data-root",
    ),
    # ---------------------------------------------------------------- identify
    Case(
        "identify-pruned-output-bad-ending",
        [
            "identify",
            "crowd.csv",
            "-o",
            "out",
            "--prune",
            "entropy=0.1",
            "--pruned-output",
            "x.dat",
        ],
        "--pruned-output x.dat",
    ),
    Case(
        "identify-existing-folder",
        ["identify", "crowd.csv", "-o", "out"],
        OVER,
        target=("out", "folder"),
    ),
    Case(
        "identify-existing-pruned-output",
        [
            "identify",
            "crowd.csv",
            "-o",
            "out",
            "--prune",
            "entropy=0.1",
            "--pruned-output",
            "p.csv",
        ],
        OVER,
        target=("p.csv", "file"),
    ),
    Case(
        "identify-pruned-output-is-output",
        ["identify", "crowd.csv", "-o", "out", "--prune", "entropy=0.1", "--pruned-output", "out"],
        "cannot tell the format",
    ),
    Case(
        "identify-pruned-without-prune",
        ["identify", "crowd.csv", "-o", "out", "--pruned-output", "p.csv"],
        "--prune",
    ),
    Case(
        "identify-bad-fraction",
        ["identify", "crowd.csv", "-o", "out", "--prune", "entropy=2"],
        "FRACTION",
    ),
    Case(
        "identify-unknown-prune-score",
        ["identify", "crowd.csv", "-o", "out", "--prune", "nosuch=0.1"],
        "nosuch",
    ),
    Case(
        "identify-unknown-score", ["identify", "crowd.csv", "-o", "out", "-s", "nosuch"], "nosuch"
    ),
    Case(
        "identify-disk-full-second-output",
        [
            "identify",
            "crowd.csv",
            "-o",
            "out",
            "--prune",
            "entropy=0.1",
            "--pruned-output",
            "p.csv",
        ],
        "No space left on device",
        fault="disk-full-io",
    ),
    # ---------------------------------------------------------------- simulate
    Case(
        "simulate-existing-folder",
        ["simulate", "independent-confusion", "--n-task", "5", "-o", "out"],
        OVER,
        target=("out", "folder"),
    ),
    Case(
        "simulate-foreign-option",
        ["simulate", "independent-confusion", "--ratio", "0.5", "-o", "out"],
        "--ratio",
    ),
    Case(
        "simulate-bad-groups",
        ["simulate", "crowd-on-features", "--groups", "expert", "-o", "out"],
        "--groups",
    ),
    Case(
        "simulate-dev-null",
        ["simulate", "independent-confusion", "-o", "/dev/null"],
        "character device",
    ),
    Case(
        "simulate-million-classes",
        ["simulate", "independent-confusion", "--n-classes", "1000000", "-o", "out"],
        "",
        child=True,
        notes="under a 3 GiB address-space limit; the io size guard refuses it without one",
    ),
    Case(
        "simulate-negative-tasks",
        ["simulate", "independent-confusion", "--n-task", "-5", "-o", "out"],
        "'--n-task'",
    ),
    # ---------------------------------------------------------------- datasets, bench
    Case("datasets-info-unknown", ["datasets", "info", "nosuch"], "nosuch"),
    Case("datasets-export-unknown", ["datasets", "export", "nosuch", "-o", "o.csv"], "nosuch"),
    Case(
        "datasets-export-existing",
        ["datasets", "export", "labelme", "--root", "emptydir", "-o", "o.csv"],
        OVER,
        target=("o.csv", "file"),
    ),
    Case(
        "datasets-export-dev-null",
        [
            "datasets",
            "export",
            "labelme",
            "--root",
            "emptydir",
            "-o",
            "/dev/null",
            "--format",
            "csv",
        ],
        "character device",
    ),
    Case(
        "datasets-export-not-fetched",
        ["datasets", "export", "labelme", "--root", "emptydir", "-o", "o.csv"],
        "--data-root",
    ),
    # ---------------------------------------------------------------- issue 32's sweep
    # 1. --overwrite never removes an input, nor a file crowdlearn did not write
    Case(
        "aggregate-overwrite-folder-holding-the-input",
        ["aggregate", "proj/crowd.csv", "-s", "mv", "-o", "proj", OVER],
        "holds the input proj/crowd.csv",
    ),
    Case(
        "identify-overwrite-folder-holding-the-input",
        ["identify", "proj/crowd.csv", "-o", "proj", OVER],
        "holds the input proj/crowd.csv",
    ),
    Case(
        "aggregate-overwrite-folder-holding-the-gold",
        ["aggregate", "crowd.csv", "-s", "ds", "--gold", "proj/gold.csv", "-o", "proj", OVER],
        "holds the input proj/gold.csv",
    ),
    Case(
        "learn-overwrite-folder-holding-the-features",
        ["learn", "crowd.csv", "-s", "mv+nn", "--features", "proj/feats.npy", "-o", "proj", OVER],
        "holds the input proj/feats.npy",
    ),
    Case(
        "report-onto-its-input",
        ["report", "crowd.csv", "-o", "crowd.csv", OVER],
        "is the input crowd.csv",
    ),
    Case(
        "aggregate-overwrite-a-folder-not-ours",
        ["aggregate", "crowd.csv", "-s", "mv", "-o", "out", OVER],
        "crowdlearn did not write this folder",
        target=("out", "folder"),
    ),
    Case(
        "aggregate-overwrite-ours-with-a-file-added",
        ["aggregate", "crowd.csv", "-s", "mv", "-o", "out", OVER],
        "does not list",
        target=("out", "ours-plus"),
    ),
    # 2-4. numbers out of range, non-finite training
    Case(
        "learn-lr-inf",
        [
            "learn",
            "crowd.csv",
            "-s",
            "mv+nn",
            "--features",
            "feats.npy",
            "-o",
            "out",
            "--lr",
            "inf",
        ],
        "'--lr'",
    ),
    Case(
        "learn-param-lr-inf",
        [
            "learn",
            "crowd.csv",
            "-s",
            "mv+nn",
            "--features",
            "feats.npy",
            "-o",
            "out",
            "--param",
            "lr=inf",
        ],
        "lr must be a finite number >= 0",
    ),
    Case(
        "learn-diverges",
        [
            "learn",
            "crowd.csv",
            "-s",
            "mv+nn",
            "--features",
            "feats.npy",
            "-o",
            "out",
            "--lr",
            "1e30",
            "--epochs",
            "3",
            "--valid",
            "none",
        ],
        "training diverged in epoch",
    ),
    Case(
        "learn-zero-feature-columns",
        ["learn", "crowd.csv", "-s", "mv+nn", "--features", "zerofeats.npy", "-o", "out"],
        "no feature columns",
    ),
    Case(
        "learn-features-beyond-float32",
        ["learn", "crowd.csv", "-s", "mv+nn", "--features", "hugefeats.npy", "-o", "out"],
        "beyond float32's range",
    ),
    Case(
        "learn-dropout-negative",
        [
            "learn",
            "crowd.csv",
            "-s",
            "mv+nn",
            "--features",
            "feats.npy",
            "-o",
            "o",
            "--dropout",
            "-0.1",
        ],
        "'--dropout'",
    ),
    Case(
        "learn-dropout-one",
        [
            "learn",
            "crowd.csv",
            "-s",
            "mv+nn",
            "--features",
            "feats.npy",
            "-o",
            "o",
            "--dropout",
            "1",
        ],
        "[0, 1)",
    ),
    Case(
        "learn-seed-negative",
        [
            "learn",
            "crowd.csv",
            "-s",
            "mv+nn",
            "--features",
            "feats.npy",
            "-o",
            "o",
            "--seed",
            "-1",
        ],
        "'--seed'",
    ),
    Case(
        "learn-seed-20-digits",
        [
            "learn",
            "crowd.csv",
            "-s",
            "mv+nn",
            "--features",
            "feats.npy",
            "-o",
            "o",
            "--seed",
            "9" * 20,
        ],
        "'--seed'",
    ),
    Case(
        "report-max-task-rows-1",
        ["report", "crowd.csv", "-o", "r.html", "--max-task-rows", "1"],
        "'--max-task-rows'",
    ),
    Case(
        "simulate-ratio-nan",
        ["simulate", "hammer-spammer", "--ratio", "nan", "-o", "out"],
        "'--ratio'",
    ),
    # 5. degenerate crowds
    Case(
        "aggregate-mmsr-one-task",
        ["aggregate", "one-task.csv", "-s", "mmsr", "-o", "out"],
        "MMSR needs at least two annotated tasks",
    ),
    Case(
        "aggregate-kos-one-task",
        ["aggregate", "one-task.csv", "-s", "kos", "-o", "out"],
        "KOS needs at least two workers",
    ),
    Case(
        "aggregate-kos-one-worker",
        ["aggregate", "one-worker.csv", "-s", "kos", "-o", "out"],
        "1 worker(s)",
    ),
    # 7. links
    Case(
        "aggregate-dangling-symlink-output",
        ["aggregate", "crowd.csv", "-s", "mv", "-o", "link"],
        "a symbolic link to a missing path",
        target=("link", "dangling"),
    ),
    # 8. SIGTERM while the outputs are written
    Case(
        "aggregate-sigterm-while-writing",
        ["aggregate", "crowd.csv", "-s", "mv", "-o", "out", OVER],
        "terminated by SIGTERM",
        exit=143,
        fault="sigterm",
        target=("out", "ours"),
    ),
    # 9-10. memory and disk
    Case(
        "learn-hidden-huge",
        [
            "learn",
            "crowd.csv",
            "-s",
            "mv+nn",
            "--features",
            "feats.npy",
            "-o",
            "out",
            "--hidden",
            "1000000000000",
        ],
        "not enough memory",
    ),
    Case(
        "learn-disk-full-saving-the-model",
        [
            "learn",
            "crowd.csv",
            "-s",
            "mv+nn",
            "--features",
            "feats.npy",
            "-o",
            "out",
            "--epochs",
            "1",
        ],
        "cannot write out: No space left on device",
        fault="model-disk-full",
    ),
    # 11. Dask options
    Case(
        "aggregate-dask-negative-worker-memory",
        [
            "aggregate",
            "crowd.parquet",
            "-s",
            "ds",
            "--engine",
            "dask",
            "--worker-memory",
            "-5GB",
            "-o",
            "out",
        ],
        "--worker-memory -5GB",
        skip_if="distributed",
    ),
    Case(
        "aggregate-dask-100000-local-workers",
        [
            "aggregate",
            "crowd.parquet",
            "-s",
            "ds",
            "--engine",
            "dask",
            "--local-workers",
            "100000",
            "-o",
            "out",
        ],
        "'--local-workers'",
    ),
    Case(
        "aggregate-dask-on-a-csv",
        ["aggregate", "crowd.csv", "-s", "ds", "--engine", "dask", "-o", "out"],
        "reads Parquet",
        skip_if="distributed",
    ),
    # 12. inputs that are not regular files
    Case(
        "aggregate-fifo-input",
        ["aggregate", "pipe", "-s", "mv", "-o", "out"],
        "a FIFO",
        target=("pipe", "fifo"),
    ),
    Case(
        "aggregate-dev-zero-input",
        ["aggregate", "zero.csv", "-s", "mv", "-o", "out"],
        "a character device",
        target=("zero.csv", "zero-link"),
    ),
    Case(
        "learn-fifo-features",
        ["learn", "crowd.csv", "-s", "mv+nn", "--features", "pipe", "-o", "out"],
        "pipe: a FIFO",
        target=("pipe", "fifo"),
    ),
    Case(
        "aggregate-symlink-loop-input",
        ["aggregate", "loop.csv", "-s", "mv", "-o", "out"],
        "a loop of symbolic links",
        target=("loop.csv", "loop"),
    ),
    # 14-15. one line, advice that can be followed
    Case(
        "convert-warnings-then-error",
        ["convert", "spaces.csv", "-o", "m.txt"],
        "write CSV or Parquet",
    ),
    Case(
        "learn-duplicates-advice",
        ["learn", "dup.csv", "-s", "mv+nn", "--features", "feats.npy", "-o", "out"],
        "--duplicates keep",
    ),
    Case(
        # compressed files are read (tests/io/test_platforms.py); this one only has the name
        "aggregate-gz-name-without-gzip",
        ["aggregate", "crowd.csv.gz", "-s", "mv", "-o", "out"],
        "crowd.csv.gz: cannot read the file as gzip-compressed",
    ),
    Case(
        "aggregate-registry-name-not-fetched",
        ["--data-root", "emptydir", "aggregate", "labelme", "-s", "mv", "-o", "out"],
        "datasets fetch labelme",
    ),
    Case(
        "learn-npz-not-readable",
        ["learn", "crowd.csv", "-s", "mv+nn", "--features", "notzip.npz", "-o", "out"],
        "not a readable .npz file",
    ),
    # 17. repeated options
    Case(
        "identify-prune-twice",
        ["identify", "crowd.csv", "-o", "out", "--prune", "entropy=0.1", "--prune", "entropy=0.2"],
        "given twice",
    ),
    Case("bench-unknown", ["bench", "nosuch"], "unknown benchmark"),
    Case(
        "bench-existing-results",
        ["bench", "labelme", "--out", "res"],
        OVER,
        target=("res/labelme.csv", "file"),
    ),
    Case(
        "bench-out-is-a-file", ["bench", "labelme", "--out", "res"], "res", target=("res", "file")
    ),
    # ---- issue 43: platform exports
    Case(
        "labelstudio-annotations-object",
        ["aggregate", "ls-annotations-object.json", "-s", "mv", "-o", "out"],
        "ls-annotations-object.json: task 1: 'annotations' is a JSON object, not a list",
    ),
    Case(
        "labelstudio-choices-object",
        ["aggregate", "ls-choices-object.json", "-s", "mv", "-o", "out"],
        "task 1: 'choices' is a JSON object",
    ),
    Case(
        "labelstudio-label-sets-class-strategy",
        ["aggregate", "ls-min-sets.json", "-s", "mv", "-o", "out"],
        "it is a one class per answer strategy: --kind class",
    ),
    Case(
        "prodigy-null-line",
        ["aggregate", "prodigy-null.jsonl", "-s", "mv", "-o", "out"],
        "prodigy-null.jsonl: line 2 is null, not a JSON object",
    ),
    Case(
        "prodigy-unknown-answer",
        ["aggregate", "prodigy-maybe.jsonl", "-s", "mv", "-o", "out"],
        "line 1: 'answer' is the text 'maybe', not accept, reject or ignore",
    ),
    Case(
        "mturk-unknown-status",
        ["aggregate", "mturk-typo.csv", "-s", "mv", "-o", "out"],
        "mturk-typo.csv row 1: AssignmentStatus 'Rejectd' is not one of",
    ),
    Case(
        "crowdflower-unknown-tainted",
        ["aggregate", "crowdflower-tainted.csv", "-s", "mv", "-o", "out"],
        "crowdflower-tainted.csv row 1: _tainted '?' is not one of",
    ),
    Case(
        "mturk-no-worker-ids",
        ["aggregate", "mturk-anonymous.csv", "-s", "mv", "-o", "out"],
        "no answer is left to read",
    ),
    # ---- issue 43: state files and outputs
    Case(
        "aggregate-state-dangling-link",
        ["aggregate", "late.csv", "--state", "link.state", "-o", "out"],
        "a symbolic link to a missing path",
        target=("link.state", "dangling"),
    ),
    Case(
        "aggregate-state-cannot-be-replaced",
        ["aggregate", "late.csv", "--state", "s.state", "-o", "out", OVER],
        "cannot write s.state: Operation not permitted",
        fault="state-immutable",
        target=("out", "ours"),
        notes="the outputs are rolled back: they and the state change together or not at all",
    ),
    Case(
        "aggregate-state-read-only-folder",
        ["aggregate", "late.csv", "--state", "s.state", "-o", "out"],
        "cannot write s.state: Permission denied",
        fault="state-folder-read-only",
    ),
    Case(
        "aggregate-state-busy",
        ["aggregate", "late.csv", "--state", "s.state", "-o", "out"],
        "another crowdlearn update of this state is running",
        fault="state-locked",
    ),
    Case(
        "aggregate-state-changed-during-update",
        ["aggregate", "late.csv", "--state", "s.state", "-o", "out"],
        "changed while this update ran",
        fault="state-changed",
    ),
    Case(
        "replay-seen-batch-as-output",
        ["replay", "crowd.csv", "--seen", "labels", "-o", "labels/round0.csv", OVER],
        "is the input labels/round0.csv",
    ),
    Case(
        "next-output-in-the-folder-it-reads",
        ["next", "labels", "--budget", "1", "-o", "labels/next.csv"],
        "reads as batches",
    ),
    # ---- issue 43: answer kinds
    Case(
        "aggregate-tie-label-is-an-item",
        ["aggregate", "pairs.csv", "--tie", "a", "-o", "out"],
        "the tie label 'a' is also an item",
    ),
    Case(
        "aggregate-mask-png-decompression-bomb",
        ["aggregate", "bomb", "--kind", "mask", "-o", "out"],
        "bomb/t1/w1.png: the image declares 40000 x 40000 pixels",
        skip_if="PIL",
    ),
    Case(
        "aggregate-mask-npy-declaring-too-much",
        ["aggregate", "npybomb", "--kind", "mask", "-o", "out"],
        "npybomb/t1/w1.npy: the array declares shape (400000, 400000)",
    ),
    # ---- issue 43: io (one description of each input, stdin, compressed files, convert)
    Case(
        "io-stdin-empty", ["aggregate", "-", "-s", "mv", "-o", "out"], "<stdin>: the file is empty"
    ),
    Case(
        "io-convert-compressed-parquet",
        ["convert", "crowd.csv", "-o", "out.parquet.gz"],
        "compressed CSV/TSV files only",
    ),
    Case(
        "io-convert-compressed-without-format",
        ["convert", "crowd.csv", "-o", "out.gz", "--to", "csv"],
        "compressed CSV/TSV files only",
    ),
    Case(
        "io-convert-compressed-json",
        ["convert", "crowd.csv", "-o", "out.json.xz"],
        "compressed CSV/TSV files only",
    ),
    Case(
        "io-jsonl-not-an-export",
        ["aggregate", "lines.jsonl", "-s", "mv", "-o", "out"],
        "lines.jsonl: line 1 is null, not a JSON object",
    ),
    Case(
        "io-gz-truncated-mid-row",
        ["aggregate", "cut.csv.gz", "-s", "mv", "-o", "out"],
        "cut.csv.gz",
    ),
    Case(
        "io-stdin-dask",
        ["aggregate", "-", "--engine", "dask", "-s", "mv", "-o", "out"],
        "not standard input",
        skip_if="dask",
    ),
    Case(
        "io-convert-compressed-output-is-input",
        ["convert", "packed.csv.gz", "-o", "packed.csv.gz", OVER],
        "is the input",
    ),
    # ---- issue 43: model files (never unpickled: the crafted ones would touch MARKER)
    Case(
        "predict-info-crafted-torch-model",
        ["predict", "crafted-model.pt", "--info"],
        "crafted-model.pt: a PyTorch pickle (torch.save), the model format of crowdlearn before",
    ),
    Case(
        "predict-crafted-torch-model",
        ["predict", "crafted-model.pt", "--features", "feats.npy", "-o", "p.csv"],
        "not read because reading a pickle can run code from it",
    ),
    Case(
        "predict-plain-pickle-model",
        ["predict", "pickled/model.pt", "--features", "feats.npy", "-o", "p.csv"],
        "pickled/model.pt: a Python pickle",
    ),
    Case(
        "predict-info-plain-pickle-folder",
        ["predict", "pickled", "--info"],
        "a Python pickle",
    ),
    Case(
        "predict-truncated-model",
        ["predict", "truncated-model.pt", "--features", "feats.npy", "-o", "p.csv"],
        "truncated-model.pt: not a crowdlearn model file, or a damaged one",
    ),
    Case(
        "predict-info-truncated-model",
        ["predict", "truncated-model.pt", "--info"],
        "(truncated?)",
    ),
    Case(
        "predict-model-of-a-class-outside-the-registry",
        ["predict", "foreign-class-model.pt", "--features", "feats.npy", "-o", "p.csv"],
        "holds a learner of class 'os.system', which is not a registered crowdlearn learner",
    ),
    Case(
        "predict-info-safetensors-not-crowdlearn",
        ["predict", "weights.safetensors", "--info"],
        "not a crowdlearn model file (a safetensors file without crowdlearn's model metadata)",
    ),
    Case(
        "learn-resume-tampered-checkpoint",
        [
            "learn",
            "crowd.csv",
            "-s",
            "mv+nn",
            "--features",
            "feats.npy",
            "--checkpoint-dir",
            "ckpt",
            "--resume",
            "-o",
            "out",
            "--epochs",
            "1",
        ],
        "ckpt/checkpoint.pt: a PyTorch pickle (torch.save), the checkpoint format",
    ),
    # ---- issue 45: span simulator (crowdlearn simulate spans)
    Case(
        "simulate-spans-existing-folder",
        ["simulate", "spans", "--n-task", "5", "-o", "out"],
        OVER,
        target=("out", "folder"),
    ),
    Case(
        "simulate-spans-feedback-over-workers",
        ["simulate", "spans", "--feedback", "30", "-o", "out"],
        "--feedback 30 exceeds --n-worker 20",
    ),
    Case(
        "simulate-spans-foreign-option",
        ["simulate", "spans", "--workerload", "3", "-o", "out"],
        "--workerload: not an option of strategy 'spans'",
    ),
    Case(
        "simulate-spans-option-elsewhere",
        ["simulate", "ratings", "--miss", "0.2", "-o", "out"],
        "--miss: not an option of strategy 'ratings'",
    ),
    Case(
        "simulate-spans-miss-above-one",
        ["simulate", "spans", "--miss", "1.5", "-o", "out"],
        "'--miss'",
    ),
    Case(
        "simulate-spans-million-types",
        ["simulate", "spans", "--n-classes", "1000000", "-o", "out"],
        "--n-classes must be at most 1000",
    ),
    # ---- issue 45: spans in the CLI
    Case(
        "spans-unknown-strategy",
        ["aggregate", "spans-ner", "--kind", "spans", "-s", "nosuch", "-o", "out"],
        "unknown span strategy 'nosuch'; choose one of",
    ),
    Case(
        "spans-unknown-parameter",
        ["aggregate", "spans-ner", "--kind", "spans", "-s", "mv[depth=2]", "-o", "out"],
        "span strategy 'mv' has no parameter 'depth'",
    ),
    Case(
        "spans-kind-on-a-class-file",
        ["aggregate", "crowd.csv", "--kind", "spans", "-o", "out"],
        "crowd.csv",
        notes="the message is the spans reader's (crowdlearn.io); it names the file",
    ),
    Case(
        "spans-truth-bad-tag",
        [
            "aggregate",
            "spans-ner",
            "--kind",
            "spans",
            "-o",
            "out",
            "--truth",
            "spans-badtag.conll",
        ],
        "--truth spans-badtag.conll, line 3: unknown tag 'X-PER'",
    ),
    Case(
        "spans-truth-unknown-task",
        [
            "aggregate",
            "spans-ner",
            "--kind",
            "spans",
            "-o",
            "out",
            "--truth",
            "spans-otherdoc.conll",
        ],
        "--truth spans-otherdoc.conll, line 1: task 'd7' is not in the data",
    ),
    Case(
        "spans-truth-task-twice",
        ["aggregate", "spans-ner", "--kind", "spans", "-o", "out", "--truth", "spans-nodoc.conll"],
        "--truth spans-nodoc.conll, line 3: task 'd1' appears twice",
        notes="the tokens before any header are the one task's (the crowd holds d1 only)",
    ),
    Case(
        "spans-truth-missing-file",
        ["aggregate", "spans-ner", "--kind", "spans", "-o", "out", "--truth", "nosuch.conll"],
        "no such file or directory: nosuch.conll",
    ),
    Case(
        "spans-truth-on-classes",
        ["aggregate", "crowd.csv", "-s", "mv", "-o", "out", "--truth"],
        "--truth applies to --kind spans, not to class",
    ),
    Case(
        "spans-gold",
        ["aggregate", "spans-ner", "--kind", "spans", "-o", "out", "--gold", "gold.csv"],
        "--gold is not supported for spans",
    ),
    Case(
        "spans-existing-folder",
        ["aggregate", "spans-ner", "--kind", "spans", "-o", "out"],
        OVER,
        target=("out", "folder"),
    ),
    Case(
        "spans-rename-fails",
        ["aggregate", "spans-ner", "--kind", "spans", "-o", "out", OVER],
        "cannot write out",
        fault="rename",
        target=("out", "ours"),
    ),
    Case(
        "identify-spans-unknown-consensus",
        ["identify", "spans-ner", "--kind", "spans", "--consensus", "nosuch", "-o", "out"],
        "unknown span strategy 'nosuch'",
    ),
    Case(
        "identify-spans-class-scores",
        ["identify", "spans-ner", "--kind", "spans", "-s", "waum", "-o", "out"],
        "-s, --prune and --pruned-output apply to classes",
    ),
    Case(
        "report-spans-two-strategies",
        ["report", "spans-ner", "--kind", "spans", "-s", "mv,ds", "-o", "r.html"],
        "a report on spans shows one strategy",
    ),
    # ---- issue 45: span readers (Label Studio, Prodigy, CoNLL columns, long CSV + texts)
    # --kind spans reaches the readers through the spans CLI (crowdlearn.cli._spans, branch
    # n-scli); until it is merged these cases are skipped (skip_if)
    Case(
        "spans-io-past-end-of-text",
        ["aggregate", "spansio-past-end.json", "--kind", "spans", "-o", "out"],
        "spansio-past-end.json: task 1, annotation 4: the span [0, 40) reaches past the end "
        "of its text (10 characters)",
        skip_if="crowdlearn.cli._spans",
    ),
    Case(
        "spans-io-end-before-start",
        [
            "aggregate",
            "spansio-crowd.csv",
            "--kind",
            "spans",
            "--texts",
            "spansio-texts.csv",
            "-o",
            "out",
        ],
        "spansio-crowd.csv: line 3: the span [7, 4) ends before or where it starts",
        skip_if="crowdlearn.cli._spans",
    ),
    Case(
        "spans-io-unknown-tag",
        ["aggregate", "spansio-badtag.conll", "--kind", "spans", "-o", "out"],
        "spansio-badtag.conll: line 4, column 'w2': unknown tag 'X-PER' for scheme 'bio'",
        skip_if="crowdlearn.cli._spans",
    ),
    Case(
        "spans-io-unknown-scheme",
        ["aggregate", "spansio-badtag.conll", "--kind", "spans", "--scheme", "bilou", "-o", "out"],
        "'--scheme'",
        skip_if="crowdlearn.cli._spans",
    ),
    Case(
        "spans-io-tokens-cannot-be-aligned",
        [
            "aggregate",
            "spansio-ls.json",
            "--kind",
            "spans",
            "--tokens",
            "spansio-tokens.conll",
            "-o",
            "out",
        ],
        "its tokens cannot be aligned to the task's reference tokens",
        notes="the Label Studio text 'Ada wrote.' against reference tokens 'qqq zzz'",
        skip_if="crowdlearn.cli._spans",
    ),
    Case(
        "spans-io-answer-without-text-label-studio",
        ["aggregate", "spansio-notext.json", "--kind", "spans", "-o", "out"],
        "spansio-notext.json: task 1: task 1 has no text",
        skip_if="crowdlearn.cli._spans",
    ),
    Case(
        "spans-io-answer-without-text-prodigy",
        ["aggregate", "spansio-notext.jsonl", "--kind", "spans", "-o", "out"],
        "spansio-notext.jsonl: line 1: task 1 has no text",
        skip_if="crowdlearn.cli._spans",
    ),
    Case(
        "spans-io-empty-document",
        ["aggregate", "spansio-emptydoc.conll", "--kind", "spans", "-o", "out"],
        "spansio-emptydoc.conll: line 1: the document is empty (no tokens)",
        skip_if="crowdlearn.cli._spans",
    ),
    Case(
        "spans-io-csv-without-texts",
        ["aggregate", "spansio-crowd.csv", "--kind", "spans", "-o", "out"],
        "spansio-crowd.csv: a long table of spans needs the texts",
        skip_if="crowdlearn.cli._spans",
    ),
    Case(
        "spans-io-texts-on-classes",
        ["aggregate", "crowd.csv", "--texts", "spansio-texts.csv", "-o", "out"],
        "--texts applies to --kind spans, not to class",
    ),
    # ---- issue 46: out-of-core engine (--engine stream)
    Case(
        "aggregate-stream-unsorted-tasks",
        ["aggregate", "unsorted.parquet", "--engine", "stream", "-o", "out"],
        "the task column is not sorted",
    ),
    Case(
        "aggregate-stream-null-worker",
        ["aggregate", "nullworker.parquet", "--engine", "stream", "-o", "out"],
        "column 'worker' has null ids (row 1 overall)",
    ),
    Case(
        "aggregate-stream-not-ds",
        ["aggregate", "crowd.parquet", "--engine", "stream", "-s", "glad", "-o", "out"],
        "--engine stream fits Dawid-Skene only",
    ),
    Case(
        "aggregate-stream-on-a-csv",
        ["aggregate", "crowd.csv", "--engine", "stream", "-o", "out"],
        "--engine stream reads Parquet",
    ),
    Case(
        "aggregate-stream-gold",
        ["aggregate", "crowd.parquet", "--engine", "stream", "--gold", "gold.csv", "-o", "out"],
        "--gold is not supported with --engine stream",
    ),
    Case(
        "aggregate-stream-state",
        ["aggregate", "crowd.parquet", "--engine", "stream", "--state", "s.json", "-o", "out"],
        "--state is not supported with --engine stream",
    ),
    Case(
        "aggregate-stream-label-sets",
        ["aggregate", "crowd.parquet", "--engine", "stream", "--kind", "multilabel", "-o", "out"],
        "--engine stream aggregates classes only",
    ),
    Case(
        "aggregate-stream-existing-output",
        ["aggregate", "crowd.parquet", "--engine", "stream", "-o", "out"],
        OVER,
        target=("out", "folder"),
    ),
    # ---- issue 45: learning from spans (learn --kind spans, predict with a tagger)
    Case(
        "predict-tagger-empty-texts",
        ["predict", "tagger.pt", "--texts", "tokens-empty.txt", "-o", "t.txt"],
        "--texts tokens-empty.txt: no token in it",
    ),
    Case(
        "predict-tagger-blank-texts",
        ["predict", "tagger.pt", "--texts", "tokens-blank.txt", "-o", "t.txt"],
        "--texts tokens-blank.txt: no token in it",
    ),
    Case(
        "predict-tagger-binary-texts",
        ["predict", "tagger.pt", "--texts", "binary.bin", "-o", "t.txt"],
        "--texts binary.bin: not UTF-8 text",
    ),
    Case(
        "predict-tagger-features",
        ["predict", "tagger.pt", "--features", "feats.npy", "-o", "t.txt"],
        "tagger.pt is a span tagger: give --texts FILE",
    ),
    Case(
        "predict-tagger-probas",
        ["predict", "tagger.pt", "--texts", "tokens.txt", "--probas", "-o", "t.txt"],
        "--probas do not apply",
    ),
    Case(
        "predict-tagger-existing-output",
        ["predict", "tagger.pt", "--texts", "tokens.txt", "-o", "t.txt"],
        OVER,
        target=("t.txt", "file"),
    ),
    Case(
        "learn-spans-class-method",
        ["learn", "emptydir", "--kind", "spans", "-s", "ds+nn", "-o", "out"],
        "unknown span method 'ds+nn'",
    ),
    Case(
        "learn-spans-features",
        [
            "learn",
            "emptydir",
            "--kind",
            "spans",
            "-s",
            "conal",
            "--features",
            "feats.npy",
            "-o",
            "out",
        ],
        "--features: not used by --kind spans",
    ),
]

IDS = [case.id for case in CASES]
assert len(IDS) == len(set(IDS)), "case ids must be unique"


def markdown_table() -> str:
    """The table of docs/reliability.md: case id, command, expected outcome."""
    rows = ["| case | command | expected |", "|---|---|---|"]
    for case in CASES:
        outcome = f"exit {case.exit}, one line" + (f" with `{case.expect}`" if case.expect else "")
        if case.target:
            outcome += f"; existing `{case.target[0]}` unchanged"
        if case.fault:
            outcome += f" (injected fault: {case.fault})"
        if case.xfail:
            outcome += " (needs the reader/size-guard fixes)"
        command = case.command.replace("|", "\\|")
        rows.append(f"| `{case.id}` | `{command}` | {outcome} |")
    return "\n".join(rows)


BEGIN, END = "<!-- cli-catalogue:begin -->", "<!-- cli-catalogue:end -->"


def with_table(document: str) -> str:
    """``document`` with the text between the catalogue markers replaced by the table."""
    head, rest = document.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{markdown_table()}\n{END}{tail}"


if __name__ == "__main__":
    # python tests/reliability/cli_cases.py [docs/reliability.md]: print the table, or
    # rewrite it in the given document.
    import sys
    from pathlib import Path

    if len(sys.argv) > 1:
        path = Path(sys.argv[1])
        path.write_text(with_table(path.read_text()))
    else:
        print(markdown_table())
