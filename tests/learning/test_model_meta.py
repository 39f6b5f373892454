"""The model file's metadata: written by ``save``, read by ``model_info``/``load_model``,
and the files of another format, or not model files at all, refused in one message."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from text_toys import text_crowd

import crowdlearn
from crowdlearn.data import CrowdData, CrowdDataError
from crowdlearn.learning import (
    MODEL_FORMAT,
    BaseLearner,
    CrowdLayer,
    Ensemble,
    ModelFileError,
    TextFeaturizer,
    TwoStage,
    fit_on_items,
    load_model,
    make_learner,
    model_info,
)
from crowdlearn.learning.persistence import check_features

QUICK = {"max_epochs": 2, "progress": False, "crowd_folds": 1, "hidden": (8,)}


def pets(n_tasks: int = 40, n_features: int = 5, seed: int = 0) -> CrowdData:
    """Two classes named cat and dog, three workers per task, on features."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, size=n_tasks)
    X = rng.normal(size=(n_tasks, n_features)) + 2.0 * truth[:, None]
    task, worker, label = [], [], []
    for t, c in enumerate(truth):
        for w in range(3):
            task.append(f"t{t}")
            worker.append(f"w{w}")
            label.append(["cat", "dog"][c if rng.random() < 0.8 else 1 - c])
    data = CrowdData.from_arrays(task, worker, label, task_ids=[f"t{t}" for t in range(n_tasks)])
    return data.with_features(X.astype(np.float32))


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A CrowdLayer made from a spec, fitted on cat/dog data and saved."""
    data = pets()
    model = make_learner("crowdlayer[variant=VW]", **QUICK).fit(data, valid=None)
    path = tmp_path_factory.mktemp("meta") / "model.pt"
    model.save(path)
    return model, path, data


def test_save_writes_the_metadata(saved):
    _, path, _ = saved
    meta = model_info(path)
    assert meta["format"] == MODEL_FORMAT == 2
    assert meta["crowdlearn"] == crowdlearn.__version__
    assert meta["method"] == "crowdlayer" and meta["spec"] == "crowdlayer[variant=VW]"
    assert meta["class"] == "crowdlearn.learning.crowd_layer.CrowdLayer"
    assert meta["classes"] == ["cat", "dog"]
    assert all(type(c) is str for c in meta["classes"])  # plain Python, not numpy
    assert meta["input_shape"] == [5] and meta["n_features"] == 5
    assert meta["featurizer"] is None
    training = meta["training"]
    assert {k: training[k] for k in ("n_tasks", "n_workers", "n_annotations", "n_classes")} == {
        "n_tasks": 40,
        "n_workers": 3,
        "n_annotations": 120,
        "n_classes": 2,
    }
    assert training["source"] is None  # the Python API knows no file
    assert "date" not in training  # two runs of the same fit write the same bytes


def test_fit_sets_the_training_summary_with_the_data_sizes():
    data = pets(n_tasks=30)
    model = TwoStage(**QUICK).fit(data, valid=None)
    assert model.training_summary_["n_tasks"] == 30
    assert model.training_summary_["n_annotations"] == 90


def test_load_model_predicts_as_the_saved_learner_and_keeps_the_metadata(saved):
    model, path, _ = saved
    loaded = load_model(path)
    X = np.random.default_rng(1).normal(size=(7, 5)).astype(np.float32)
    np.testing.assert_allclose(loaded.predict_proba(X), model.predict_proba(X), rtol=1e-6)
    assert loaded.meta_ == model_info(path)
    assert loaded.training_summary_["n_tasks"] == 40
    assert loaded.classes_.tolist() == ["cat", "dog"]


def test_a_learner_made_without_a_spec_is_named_by_the_registry(tmp_path):
    model = CrowdLayer("MW", **QUICK).fit(pets(), valid=None)
    model.save(tmp_path / "m.pt")
    meta = model_info(tmp_path / "m.pt")
    assert meta["method"] == "crowdlayer" and meta["spec"] is None


def test_an_ensemble_records_its_members_input_shape(tmp_path):
    members = {"members": ("mv+nn", "crowdlayer"), "n_seeds": 1}
    model = Ensemble(**members, **QUICK).fit(pets(n_features=4), valid=None)
    model.save(tmp_path / "e.pt")
    meta = model_info(tmp_path / "e.pt")
    assert meta["method"] == "ensemble" and meta["input_shape"] == [4]
    assert meta["training"]["n_tasks"] == 40
    assert load_model(tmp_path / "e.pt").meta_["classes"] == ["cat", "dog"]


def test_a_text_model_records_its_featurizer_kind_and_dimension(tmp_path):
    crowd, train, test, _ = text_crowd(n_train=60, n_test=5)
    featurizer = TextFeaturizer(max_features=40, svd_components=6)
    model = fit_on_items(TwoStage(**QUICK), crowd, train, featurizer, valid=None)
    model.save(tmp_path / "t.pt")
    meta = model_info(tmp_path / "t.pt")
    assert meta["featurizer"] == "tfidf" and meta["input_shape"] == [6]
    loaded = load_model(tmp_path / "t.pt")
    np.testing.assert_allclose(loaded.predict_proba(test), model.predict_proba(test), rtol=1e-6)


# ------------------------------------------------------------------ files refused


def rewrite(path, target, change):
    """Copy the model file at ``path`` to ``target`` with ``change`` applied to its JSON
    document (as another crowdlearn version would have written it)."""
    import json

    import safetensors
    import safetensors.torch

    with safetensors.safe_open(path, framework="pt") as handle:
        metadata = dict(handle.metadata())
    document = json.loads(metadata["crowdlearn-model"])
    change(document)
    metadata["crowdlearn-model"] = json.dumps(document)
    safetensors.torch.save_file(safetensors.torch.load_file(path), target, metadata=metadata)
    return target


def test_a_file_without_metadata_is_from_an_older_crowdlearn(saved, tmp_path):
    _, path, _ = saved
    old = rewrite(path, tmp_path / "old.pt", lambda p: p.pop("meta"))
    older = r"old\.pt: saved by an older crowdlearn.*retrain"
    for read in (model_info, load_model, BaseLearner.load):
        with pytest.raises(ModelFileError, match=older):
            read(old)


def test_a_file_of_a_newer_format_names_the_version_that_saved_it(saved, tmp_path):
    _, path, _ = saved

    def newer(payload):
        payload["meta"].update(format=MODEL_FORMAT + 1, crowdlearn="9.0.0")

    new = rewrite(path, tmp_path / "new.pt", newer)
    newer_one = rf"saved by crowdlearn 9\.0\.0 \(model format {MODEL_FORMAT + 1}\), newer than"
    with pytest.raises(ModelFileError, match=newer_one):
        load_model(new)


def test_a_file_of_an_older_format_number_is_refused(saved, tmp_path):
    _, path, _ = saved
    old = rewrite(path, tmp_path / "zero.pt", lambda p: p["meta"].update(format=0))
    with pytest.raises(ModelFileError, match=r"older crowdlearn.*model format 0"):
        model_info(old)


@pytest.mark.parametrize(
    "content",
    [b"", b"task,worker,label\n1,2,3\n", bytes(range(256)) * 4],
    ids=["empty", "csv", "binary"],
)
def test_a_file_that_is_no_model_is_refused(tmp_path, content):
    path = tmp_path / "model.pt"
    path.write_bytes(content)
    with pytest.raises(ModelFileError, match=r"model\.pt: not a crowdlearn model file"):
        load_model(path)


def test_a_truncated_model_file_is_refused(saved, tmp_path):
    _, path, _ = saved
    content = path.read_bytes()
    (tmp_path / "cut.pt").write_bytes(content[: len(content) // 2])
    with pytest.raises(ModelFileError, match="not a crowdlearn model file, or a damaged one"):
        model_info(tmp_path / "cut.pt")


def test_a_torch_file_is_refused_as_a_pickle_without_unpickling_it(tmp_path):
    torch.save({"weights": torch.zeros(3)}, tmp_path / "other.pt")
    with pytest.raises(ModelFileError, match=r"other\.pt: a PyTorch pickle \(torch\.save\)"):
        load_model(tmp_path / "other.pt")


def test_a_safetensors_file_without_crowdlearn_metadata_is_refused(tmp_path):
    import safetensors.torch

    safetensors.torch.save_file({"weight": torch.zeros(3)}, tmp_path / "w.safetensors")
    for read in (model_info, load_model):
        with pytest.raises(ModelFileError, match="without crowdlearn's model metadata"):
            read(tmp_path / "w.safetensors")


def test_model_file_errors_are_crowd_data_errors():
    assert issubclass(ModelFileError, CrowdDataError)


def test_a_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        model_info(tmp_path / "nowhere.pt")


# ------------------------------------------------------------------ inputs checked


def test_features_of_another_dimension_are_refused(saved):
    _, path, _ = saved
    meta = model_info(path)
    check_features(meta, np.zeros((3, 5)), "X.npy")  # the right one passes
    with pytest.raises(ModelFileError, match=r"the model takes 5 features, X\.npy has 12"):
        check_features(meta, np.zeros((3, 12)), "X.npy")
    with pytest.raises(ModelFileError, match="one row per item of 5 features"):
        check_features(meta, np.zeros(5), "x.npy")


def test_features_with_missing_values_are_refused(saved):
    _, path, _ = saved
    X = np.zeros((4, 5))
    X[2, 1] = np.nan
    with pytest.raises(ModelFileError, match="infinite values at row"):
        check_features(model_info(path), X, "X.npy")


def test_the_same_fit_writes_the_same_bytes(tmp_path):
    for name in ("a.pt", "b.pt"):
        TwoStage(**QUICK).fit(pets(), valid=None).save(tmp_path / name)
    assert (tmp_path / "a.pt").read_bytes() == (tmp_path / "b.pt").read_bytes()
