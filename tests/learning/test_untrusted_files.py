"""Model files and checkpoints hold data only, and reading one runs no code from it
(issue 43, item 1): the Python loading API on crafted files, every registered learner's
round trip through the data-only format, and a guard over the sources."""

from __future__ import annotations

import json
import os
import pickle
import re
import shlex
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import safetensors
import safetensors.torch
import torch

from crowdlearn.data import CrowdData, CrowdDataError
from crowdlearn.learning import (
    LEARNERS,
    BaseLearner,
    CrowdLayer,
    ModelFileError,
    TwoStage,
    load_model,
    make_learner,
    model_info,
)

QUICK = {"max_epochs": 2, "progress": False, "crowd_folds": 1, "hidden": (8,)}
SOURCES = Path(__file__).resolve().parents[2] / "src" / "crowdlearn"


class Payload:
    """Unpickling it runs ``touch MARKER``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {shlex.quote(str(self.marker))}",))


def crowd(n_tasks: int = 30, n_features: int = 4, seed: int = 0) -> CrowdData:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, size=n_tasks)
    X = rng.normal(size=(n_tasks, n_features)) + 2.0 * truth[:, None]
    task, worker, label = [], [], []
    for t, c in enumerate(truth):
        for w in range(3):
            task.append(t)
            worker.append(f"w{w}")
            label.append(["a", "b", "c"][c if rng.random() < 0.7 else (c + 1) % 3])
    names = [["a", "b", "c"][c] for c in truth]
    data = CrowdData.from_arrays(task, worker, label, truth=names)
    return data.with_features(X.astype(np.float32))


def crafted(kind: str, path: Path, marker: Path) -> Path:
    if kind == "torch-save":
        torch.save({"class": "x", "meta": {"format": 2}, "params": Payload(marker)}, path)
    else:
        path.write_bytes(pickle.dumps({"class": Payload(marker)}, protocol=2))
    return path


@pytest.mark.parametrize("kind", ["torch-save", "plain-pickle"])
@pytest.mark.parametrize("read", [model_info, load_model, BaseLearner.load, CrowdLayer.load])
def test_the_loading_api_runs_nothing_from_a_crafted_file(tmp_path, kind, read):
    marker = tmp_path / "MARKER"
    path = crafted(kind, tmp_path / "model.pt", marker)
    with pytest.raises(
        ModelFileError, match=r"model\.pt: a (PyTorch|Python) pickle.*can run code"
    ):
        read(path)
    assert not marker.exists()


@pytest.mark.parametrize("kind", ["torch-save", "plain-pickle"])
def test_resuming_a_tampered_checkpoint_runs_nothing(tmp_path, kind):
    data = crowd()
    TwoStage(**QUICK, checkpoint_dir=tmp_path).fit(data, valid=None)
    marker = tmp_path / "MARKER"
    crafted(kind, tmp_path / "checkpoint.pt", marker)
    with pytest.raises(CrowdDataError, match=r"checkpoint\.pt: a (PyTorch|Python) pickle"):
        TwoStage(**QUICK, checkpoint_dir=tmp_path, resume=True).fit(data, valid=None)
    assert not marker.exists()


def edited(source: Path, target: Path, change) -> Path:
    """A copy of a data-only file with ``change`` applied to its JSON document."""
    with safetensors.safe_open(source, framework="pt") as handle:
        metadata = dict(handle.metadata())
    document = json.loads(metadata["crowdlearn-model"])
    change(document)
    metadata["crowdlearn-model"] = json.dumps(document)
    safetensors.torch.save_file(safetensors.torch.load_file(source), target, metadata=metadata)
    return target


@pytest.fixture(scope="module")
def ds_model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ds")
    model = make_learner("ds+nn", **QUICK).fit(crowd(), valid=None)
    model.save(folder / "model.pt")
    return model, folder / "model.pt"


def test_an_estimator_of_a_class_outside_the_registries_is_refused(ds_model, tmp_path):
    _, path = ds_model

    def smuggle(document):
        document["params"]["aggregator"]["$estimator"] = "subprocess.Popen"

    bad = edited(path, tmp_path / "m.pt", smuggle)
    with pytest.raises(
        ModelFileError, match=r"an estimator of an unknown class 'subprocess\.Popen'"
    ):
        load_model(bad)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["module"].update({"$tensor": "t999"}), "no tensor 't999'"),
        (lambda d: d.update(history={"$pickle": "x"}), "unknown entry '\\$pickle'"),
        (lambda d: d["params"].update(hidden={"$tuple": 5}), "a list expected"),
        (lambda d: d.update(scaler={"$array": "t0", "dtype": "|O"}), "a dtype '\\|O'"),
    ],
    ids=["missing-tensor", "unknown-tag", "bad-tuple", "object-dtype"],
)
def test_a_tampered_document_is_refused_in_one_message(ds_model, tmp_path, change, message):
    _, path = ds_model
    bad = edited(path, tmp_path / "m.pt", change)
    with pytest.raises(
        ModelFileError, match=f"not a crowdlearn model file, or a damaged one.*{message}"
    ):
        load_model(bad)


def test_a_custom_backbone_is_refused_at_save_and_nothing_is_written(tmp_path):
    backbone = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4, 3))
    model = CrowdLayer(backbone=backbone, **QUICK).fit(crowd(), valid=None)
    with pytest.raises(ModelFileError, match=r"cannot save this learner.*custom backbone"):
        model.save(tmp_path / "model.pt")
    assert list(tmp_path.iterdir()) == []


def test_a_saved_aggregator_keeps_its_parameters_and_results(ds_model):
    model, path = ds_model
    loaded = load_model(path)
    assert type(loaded.aggregator_) is type(model.aggregator_)
    assert loaded.aggregator_.get_params() == model.aggregator_.get_params()
    np.testing.assert_array_equal(loaded.aggregator_.probas_, model.aggregator_.probas_)
    np.testing.assert_array_equal(loaded.targets_, model.targets_)


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_every_registered_learner_round_trips_through_the_data_only_file(name, tmp_path):
    data = crowd(n_tasks=40)
    model = make_learner(name, **QUICK).fit(data, valid=None)
    model.save(tmp_path / "m.pt")
    assert (tmp_path / "m.pt").read_bytes()[8:9] == b"{"  # the safetensors layout
    loaded = load_model(tmp_path / "m.pt")
    assert type(loaded) is type(model)
    saved, read = model.get_params(deep=False), loaded.get_params(deep=False)
    assert read.keys() == saved.keys()
    for key, value in saved.items():  # tuples stay tuples, estimators their class
        assert type(read[key]) is type(value) and repr(read[key]) == repr(value), key
    X = np.random.default_rng(1).normal(size=(6, 4)).astype(np.float32)
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
    assert loaded.classes_.tolist() == model.classes_.tolist()
    history = model.history_.drop(columns=["seconds"], errors="ignore")
    pd.testing.assert_frame_equal(
        loaded.history_.reset_index(drop=True), history.reset_index(drop=True), check_dtype=False
    )


# ---------------------------------------------------------------------- guard

UNSAFE = re.compile(
    r"(?<![\w.])torch\.(load|save)\(|pickle\.loads?\(|weights_only\s*=\s*False"
    r"|allow_pickle\s*=\s*True|import\s+pickle|from\s+pickle\s+import"
)


def test_no_source_unpickles_or_writes_pickles():
    """A guard beside the real tests above: no code path in the package calls
    ``torch.load``/``pickle.load`` (or writes ``torch.save`` pickles)."""
    found = [
        f"{path.relative_to(SOURCES)}:{number}: {line.strip()}"
        for path in sorted(SOURCES.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if UNSAFE.search(line) and not line.lstrip().startswith("#")
    ]
    assert found == []


# ---------------------------------------------------------------------- tampering


def _paths(value, prefix=()):
    """Every path (tuple of keys/indices) into a JSON document."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


JUNK = [None, -1, 2**70, "x", [], {}, {"$tensor": "zz"}, {"$tuple": {}}, 1.5, True, [[1]]]


def test_random_tampering_gives_a_model_or_one_model_file_error(ds_model, tmp_path):
    """Junk put anywhere in the document: every read either works or raises a
    ModelFileError (a CrowdDataError, one line on the command line), never another
    exception."""
    from click.testing import CliRunner

    from crowdlearn.cli import cli

    _, path = ds_model
    with safetensors.safe_open(path, framework="pt") as handle:
        document = json.loads(handle.metadata()["crowdlearn-model"])
    paths = [p for p in _paths(document) if p]
    rng = np.random.default_rng(43)
    X = np.zeros((2, 4), dtype=np.float32)
    for trial in range(60):
        where = paths[rng.integers(len(paths))]
        junk = JUNK[rng.integers(len(JUNK))]

        def change(doc, where=where, junk=junk):
            node = doc
            for key in where[:-1]:
                node = node[key]
            node[where[-1]] = junk

        bad = edited(path, tmp_path / f"m{trial}.pt", change)
        for read in (model_info, lambda p: load_model(p).predict_proba(X)):
            try:
                read(bad)
            except ModelFileError:
                pass
        result = CliRunner().invoke(cli, ["predict", str(bad), "--info"])
        assert result.exit_code in (0, 2), (where, junk, result.output)
        if result.exit_code == 2:
            assert len(result.stderr.strip().splitlines()) == 1, (where, junk, result.stderr)


# ---------------------------------------------------------------------- the codec


def test_the_codec_round_trips_every_kind_of_value_it_accepts(tmp_path):
    from collections import Counter

    from crowdlearn.learning._safe_file import (
        decode,
        document_of,
        load_tensors,
        read_header,
        write_file,
    )

    objects = np.empty(3, dtype=object)
    objects[:] = ["a", None, 2]
    pairs = np.empty(2, dtype=object)
    pairs[0], pairs[1] = (1, 2), (3, 4)
    value = {
        "numbers": [0, -1, 2**100, 1.5, float("nan"), float("inf"), -0.0, True, None],
        "tuple": (1, ("x", 2.0)),
        "int keys": {1: "a", (2, 3): "b", "$x": 1},
        "counter": Counter({50: 1, 75: 1}),
        "arrays": [
            np.arange(6, dtype=np.float16).reshape(2, 3),
            np.array([True, False]),
            np.array([2**63], dtype=np.uint64),
            np.array([["ab", "c"]]),
            np.array([b"x", b"yz"]),
            objects,
            pairs,
            np.zeros((0, 4), dtype=np.int32),
        ],
        "scalars": [np.float32(1.25), np.int64(-3), np.str_("id"), np.bool_(True)],
        "tensor": torch.arange(4, dtype=torch.bfloat16),
        "frame": pd.DataFrame({"epoch": [1, 2], "stage": ["a", None], "loss": [0.5, np.nan]}),
        "series": pd.Series([1.0, 2.0], index=["a", "b"], name="s"),
    }
    write_file(tmp_path / "f", "test", value)
    data = (tmp_path / "f").read_bytes()
    header, size = read_header(tmp_path / "f", data)
    back = decode(document_of(header, "test"), load_tensors(data[:size]), {})
    assert back["numbers"][:4] == value["numbers"][:4] and np.isnan(back["numbers"][4])
    assert back["numbers"][5:] == value["numbers"][5:]
    assert str(back["numbers"][6]) == "-0.0"
    assert back["tuple"] == value["tuple"] and back["int keys"] == value["int keys"]
    assert type(back["counter"]) is Counter and back["counter"] == value["counter"]
    for got, expected in zip(back["arrays"], value["arrays"], strict=True):
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert got.tolist() == expected.tolist()
    for got, expected in zip(back["scalars"], value["scalars"], strict=True):
        assert type(got) is type(expected) and got == expected
    assert torch.equal(back["tensor"], value["tensor"])
    pd.testing.assert_frame_equal(back["frame"], value["frame"])
    pd.testing.assert_series_equal(back["series"], value["series"])


@pytest.mark.parametrize(
    "value",
    [lambda x: x, object(), {"set": {1, 2}}, np.array(["2020-01-01"], dtype="datetime64[D]")],
    ids=["callable", "object", "set", "datetime"],
)
def test_the_codec_refuses_what_it_cannot_read_back_and_writes_nothing(tmp_path, value):
    from crowdlearn.learning._safe_file import UnsupportedValue, write_file

    with pytest.raises(UnsupportedValue, match="cannot hold"):
        write_file(tmp_path / "f", "test", {"value": value})
    assert list(tmp_path.iterdir()) == []


class _Mine(TwoStage):
    """A learner of the user's own (a subclass of a registered one)."""


def test_a_learner_of_the_users_own_is_saved_and_loaded_once_registered(tmp_path):
    from crowdlearn.learning import register_learner
    from crowdlearn.learning._registry import LEARNERS as REGISTERED

    model = _Mine(**QUICK).fit(crowd(), valid=None)
    with pytest.raises(ModelFileError, match=r"not a registered learner.*register_learner"):
        model.save(tmp_path / "m.pt")
    assert not (tmp_path / "m.pt").exists()
    register_learner("mine-43", _Mine, "a test learner")
    try:
        model.save(tmp_path / "m.pt")
        assert type(load_model(tmp_path / "m.pt")) is _Mine
    finally:
        REGISTERED.pop("mine-43")
        from crowdlearn.learning._model_file import METHOD_NAMES

        METHOD_NAMES.pop(_Mine)
