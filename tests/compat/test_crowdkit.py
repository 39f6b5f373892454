"""crowdlearn.compat.crowdkit against the installed crowd-kit, on our own crowds.

Names, signatures and attribute layouts must be crowd-kit's; numbers must equal
crowd-kit's where the layer reproduces it (Dawid-Skene, majority vote, gold skills,
KOS). crowd-kit's own tests are run against the layer by
benchmarks/compat/crowdkit_oracle.py (docs/migration-from-crowd-kit.md).
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pandas as pd
import pytest

from crowdlearn.compat import crowdkit as cl
from crowdlearn.simulate import independent_confusion

ck = pytest.importorskip("crowdkit.aggregation")

CLASSIFICATION = [
    "MajorityVote",
    "Wawa",
    "ZeroBasedSkill",
    "GLAD",
    "DawidSkene",
    "OneCoinDawidSkene",
    "GoldMajorityVote",
    "MACE",
    "KOS",
    "MMSR",
    "BinaryRelevance",
]


def crowd(seed: int, n_classes: int = 3, feedback: int = 5, n_task: int = 150) -> pd.DataFrame:
    data = independent_confusion(
        n_worker=12, n_task=n_task, n_classes=n_classes, feedback=feedback, seed=seed
    )
    return pd.DataFrame(
        {
            "worker": np.char.add("w", data.worker.astype(str)),
            "task": np.char.add("t", data.task.astype(str)),
            "label": np.char.add("c", data.label.astype(str)),
        }
    )


def crowdkit_fit(cls_name: str, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(ck, cls_name)(**kwargs).fit(*args)


def _plain_default(value) -> bool:
    return value is None or isinstance(value, (int, float, str, bool))


# ------------------------------------------------------------------ names, signatures


def test_every_classification_class_is_provided():
    assert set(CLASSIFICATION) <= set(cl.__all__)
    for name in CLASSIFICATION:
        assert hasattr(ck, name), name


@pytest.mark.parametrize("name", CLASSIFICATION)
def test_constructor_signature_is_crowdkits(name):
    ours = inspect.signature(getattr(cl, name)).parameters
    theirs = inspect.signature(getattr(ck, name)).parameters
    assert list(ours) == list(theirs)
    for param, spec in theirs.items():
        if spec.default is inspect.Parameter.empty:
            assert ours[param].default is inspect.Parameter.empty, param
        elif _plain_default(spec.default):
            assert ours[param].default == spec.default, param


@pytest.mark.parametrize("name", CLASSIFICATION)
def test_methods_take_crowdkits_arguments(name):
    ours, theirs = getattr(cl, name), getattr(ck, name)
    for method in (
        "fit",
        "fit_predict",
        "fit_predict_proba",
        "predict",
        "predict_proba",
        "predict_score",
        "fit_predict_score",
    ):
        if not hasattr(theirs, method):
            continue
        assert hasattr(ours, method), f"{name}.{method}"
        mine = list(inspect.signature(getattr(ours, method)).parameters)
        expected = list(inspect.signature(getattr(theirs, method)).parameters)
        assert mine == expected, f"{name}.{method}: {mine} != {expected}"


# ------------------------------------------------------------------------- layouts


def test_fitted_attributes_have_crowdkits_layout():
    df = crowd(0)
    ds = cl.DawidSkene().fit(df)
    assert ds.labels_.name == "agg_label" and ds.labels_.index.name == "task"
    assert ds.probas_.index.name == "task" and ds.probas_.columns.name == "label"
    assert ds.priors_.name == "prior" and ds.priors_.index.name == "label"
    assert list(ds.errors_.index.names) == ["worker", "label"]
    assert sorted(ds.errors_.columns) == sorted(df["label"].unique())
    mv = cl.MajorityVote().fit(df)
    assert mv.skills_.name == "skill" and mv.skills_.index.name == "worker"
    glad = cl.GLAD(n_iter=5).fit(df)
    assert glad.alphas_.name == "alpha" and glad.alphas_.index.name == "worker"
    assert glad.betas_.name == "beta" and glad.betas_.index.name == "task"
    mmsr = cl.MMSR().fit(df)
    assert mmsr.predict_score(df).index.name == "task"
    assert mmsr.skills_.name == "skill"
    layout = crowdkit_fit("DawidSkene", df)
    for ours, theirs in [(ds.labels_, layout.labels_), (ds.priors_, layout.priors_)]:
        assert ours.name == theirs.name and ours.index.names == theirs.index.names
    assert ds.errors_.index.names == layout.errors_.index.names
    assert ds.probas_.columns.name == layout.probas_.columns.name


def test_missing_columns_raise_keyerror_and_empty_frames_give_empty_results():
    for name in ("MajorityVote", "DawidSkene", "GLAD", "KOS"):
        with pytest.raises(KeyError):
            getattr(cl, name)().fit(pd.DataFrame({"task": ["t"], "worker": ["w"]}))
    empty = pd.DataFrame([], columns=["task", "worker", "label"])
    ds = cl.DawidSkene(10).fit(empty)
    assert ds.probas_.empty and ds.errors_.empty and ds.labels_.empty
    assert ds.priors_.name == "prior"
    assert cl.KOS().fit(empty).labels_.empty


# ------------------------------------------------------------ numbers = crowd-kit's


@pytest.mark.parametrize("seed", [0, 1])
def test_dawid_skene_equals_crowdkit(seed):
    df = crowd(seed)
    theirs = crowdkit_fit("DawidSkene", df)
    ours = cl.DawidSkene().fit(df)
    assert len(ours.loss_history_) == len(theirs.loss_history_)
    np.testing.assert_allclose(ours.loss_history_, theirs.loss_history_, atol=1e-8)
    pd.testing.assert_frame_equal(
        ours.probas_.sort_index(), theirs.probas_.sort_index(), check_like=True, atol=1e-8
    )
    pd.testing.assert_frame_equal(
        ours.errors_.sort_index(), theirs.errors_.sort_index(), check_like=True, atol=1e-8
    )
    pd.testing.assert_series_equal(
        ours.priors_.sort_index(), theirs.priors_.sort_index(), atol=1e-8
    )
    pd.testing.assert_series_equal(ours.labels_.sort_index(), theirs.labels_.sort_index())


@pytest.mark.parametrize("n_iter", [0, 1, 3])
def test_dawid_skene_with_gold_and_few_iterations_equals_crowdkit(n_iter):
    df = crowd(2)
    gold = df.drop_duplicates("task").set_index("task")["label"].iloc[:20]
    theirs = crowdkit_fit("DawidSkene", df, gold, n_iter=n_iter, tol=0.0)
    ours = cl.DawidSkene(n_iter=n_iter, tol=0.0).fit(df, gold)
    pd.testing.assert_frame_equal(
        ours.probas_.sort_index(), theirs.probas_.sort_index(), check_like=True, atol=1e-8
    )
    pd.testing.assert_frame_equal(
        ours.errors_.sort_index(), theirs.errors_.sort_index(), check_like=True, atol=1e-8
    )


@pytest.mark.parametrize("strategy", ["assign", "addition"])
def test_dawid_skene_initial_error_equals_crowdkit(strategy):
    df = crowd(3, n_classes=2)
    rng = np.random.default_rng(0)
    index = pd.MultiIndex.from_product(
        [sorted(df["worker"].unique()), ["c0", "c1"]], names=["worker", "label"]
    )
    initial = pd.DataFrame(
        rng.integers(1, 20, size=(len(index), 2)).astype(float), index=index, columns=["c0", "c1"]
    )
    kwargs = {"n_iter": 5, "tol": 0.0, "initial_error_strategy": strategy}
    theirs = crowdkit_fit("DawidSkene", df, None, initial, **kwargs)
    ours = cl.DawidSkene(**kwargs).fit(df, None, initial)
    pd.testing.assert_frame_equal(
        ours.probas_.sort_index(), theirs.probas_.sort_index(), check_like=True, atol=1e-8
    )


@pytest.mark.parametrize("seed", [0, 1])
def test_majority_vote_equals_crowdkit(seed):
    df = crowd(seed, n_classes=2, feedback=5)  # odd votes, two classes: no ties
    skills = pd.Series(np.linspace(0.5, 1.0, 12), index=[f"w{i}" for i in range(12)])
    for args in [(), (skills,)]:
        theirs = crowdkit_fit("MajorityVote", df, *args)
        ours = cl.MajorityVote().fit(df, *args)
        pd.testing.assert_frame_equal(
            ours.probas_.sort_index(), theirs.probas_.sort_index(), check_like=True
        )
        pd.testing.assert_series_equal(ours.labels_.sort_index(), theirs.labels_.sort_index())
        pd.testing.assert_series_equal(ours.skills_.sort_index(), theirs.skills_.sort_index())


def test_gold_majority_vote_skills_equal_crowdkit():
    df = crowd(4)
    gold = df.drop_duplicates("task").set_index("task")["label"].iloc[:40]
    theirs = crowdkit_fit("GoldMajorityVote", df, gold)
    ours = cl.GoldMajorityVote().fit(df, gold)
    pd.testing.assert_series_equal(ours.skills_.sort_index(), theirs.skills_.sort_index())
    labels = ours.predict(df)
    assert labels.name == "agg_label" and len(labels) == df["task"].nunique()


def test_kos_labels_equal_crowdkit():
    df = crowd(5, n_classes=2, feedback=5)
    theirs = crowdkit_fit("KOS", df)
    ours = cl.KOS().fit(df)
    pd.testing.assert_series_equal(ours.labels_.sort_index(), theirs.labels_.sort_index())


def test_binary_relevance_gives_label_lists():
    frame = pd.DataFrame(
        {
            "task": ["t1", "t1", "t1", "t2", "t2", "t2"],
            "worker": ["a", "b", "c", "a", "b", "c"],
            "label": [["x", "y"], ["x"], ["x", "y"], ["y"], ["y"], []],
        }
    )
    labels = cl.BinaryRelevance(cl.DawidSkene(n_iter=5)).fit_predict(frame)
    assert labels.name == "agg_label"
    assert sorted(labels["t1"]) == ["x", "y"] and labels["t2"] == ["y"]


# --------------------------------------------------------- pairwise and segmentation

OTHER_KINDS = [
    "BradleyTerry",
    "NoisyBradleyTerry",
    "SegmentationMajorityVote",
    "SegmentationRASA",
    "SegmentationEM",
]


@pytest.mark.parametrize("name", OTHER_KINDS)
def test_other_kinds_have_crowdkits_signatures(name):
    ours = inspect.signature(getattr(cl, name)).parameters
    theirs = inspect.signature(getattr(ck, name)).parameters
    assert list(ours) == list(theirs)
    for param, spec in theirs.items():
        if spec.default is not inspect.Parameter.empty and _plain_default(spec.default):
            assert ours[param].default == spec.default, param
    for method in ("fit", "fit_predict"):
        mine = list(inspect.signature(getattr(getattr(cl, name), method)).parameters)
        expected = list(inspect.signature(getattr(getattr(ck, name), method)).parameters)
        assert mine == expected, f"{name}.{method}"


def comparisons(rows):
    return pd.DataFrame(rows, columns=["worker", "left", "right", "label"])


TRANSITIVE = comparisons([["w1", "a", "b", "a"], ["w1", "b", "c", "b"], ["w1", "c", "a", "a"]])
CYCLE = comparisons([["w1", "a", "b", "a"], ["w1", "b", "c", "b"], ["w1", "c", "a", "c"]])


def test_bradley_terry_departure_finite_scores_on_a_transitive_triple():
    """Departure: a never loses, so the unregularised MLE does not exist and crowd-kit's
    scores drift to (1, 0, 0) as it iterates; the layer's virtual-item prior keeps a
    finite estimate, the same at 10 and 100 iterations, with a > b > c > 0."""
    ten = cl.BradleyTerry(n_iter=10, tol=0).fit(TRANSITIVE).scores_
    hundred = cl.BradleyTerry(n_iter=100, tol=0).fit(TRANSITIVE).scores_
    assert ten.name == "agg_score" and ten.sum() == pytest.approx(1.0)
    assert ten["a"] > ten["b"] > ten["c"] > 0.01
    np.testing.assert_allclose(ten.to_numpy(), hundred.to_numpy(), atol=1e-3)
    theirs = crowdkit_fit("BradleyTerry", TRANSITIVE, n_iter=100, tol=0).scores_
    assert theirs["c"] < 1e-3  # crowd-kit's drift, the reason for the departure


def test_noisy_bradley_terry_departure_orders_a_transitive_triple():
    """Departure: crowd-kit ties a with b (both 1.0) on a > b > c; the data say a > b."""
    model = cl.NoisyBradleyTerry().fit(TRANSITIVE)
    assert model.scores_["a"] > model.scores_["b"] > model.scores_["c"]
    assert model.skills_.name == "skill" and model.biases_.name == "bias"


@pytest.mark.parametrize("name", ["BradleyTerry", "NoisyBradleyTerry"])
def test_a_perfect_cycle_gives_equal_scores(name):
    """Departure for NoisyBradleyTerry (crowd-kit: 0.672, 0.646, 0.633): a perfect
    three-way cycle is symmetric, so the three scores are equal."""
    scores = getattr(cl, name)(n_iter=100).fit(CYCLE).scores_
    np.testing.assert_allclose(scores.to_numpy(), scores.iloc[0], atol=1e-6)


def segmentations(seed: int, n_tasks: int = 4, n_workers: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(n_tasks):
        truth = rng.random((6, 7)) < 0.4
        for w in range(n_workers):
            noise = rng.random((6, 7)) < (0.05 if w < 3 else 0.4)
            rows.append((t, f"w{w}", truth ^ noise))
    return pd.DataFrame(rows, columns=["task", "worker", "segmentation"])


@pytest.mark.parametrize(
    "name", ["SegmentationMajorityVote", "SegmentationRASA", "SegmentationEM"]
)
def test_segmentations_equal_crowdkit(name):
    frame = segmentations(0)
    theirs = crowdkit_fit(name, frame).segmentations_
    ours = getattr(cl, name)().fit(frame).segmentations_
    assert ours.name == theirs.name == "agg_segmentation"
    assert list(ours.index) == list(theirs.index)
    for task in ours.index:
        np.testing.assert_array_equal(ours[task], theirs[task])


def test_segmentation_vote_with_skills_equals_crowdkit():
    frame = segmentations(1)
    skills = pd.Series([0.9, 0.8, 0.7, 0.2, 0.1], index=[f"w{i}" for i in range(5)])
    theirs = ck.SegmentationMajorityVote().fit(frame, skills).segmentations_
    ours = cl.SegmentationMajorityVote().fit(frame, skills).segmentations_
    for task in ours.index:
        np.testing.assert_array_equal(ours[task], theirs[task])


def test_rover_equals_crowdkit_with_the_users_tokenizer():
    frame = pd.DataFrame(
        {
            "task": ["t1", "t1", "t1", "t2", "t2", "t2"],
            "worker": ["w1", "w2", "w3", "w1", "w2", "w3"],
            "text": [
                "the cat sat",
                "the bat sat down",
                "a cat sat down",
                "hi there",
                "hi",
                "hey there",
            ],
        }
    )
    assert list(inspect.signature(cl.ROVER).parameters) == list(
        inspect.signature(ck.ROVER).parameters
    )
    for tokenizer, detokenizer in [
        (lambda s: s.split(" "), lambda t: " ".join(t)),
        (lambda s: [w + " ." for w in s.split(" ")], lambda t: "|".join(t)),  # spaces in tokens
    ]:
        theirs = ck.ROVER(tokenizer=tokenizer, detokenizer=detokenizer).fit_predict(frame)
        ours = cl.ROVER(tokenizer=tokenizer, detokenizer=detokenizer).fit_predict(frame)
        pd.testing.assert_series_equal(ours, theirs)


@pytest.mark.parametrize(("seed", "n_classes"), [(0, 2), (1, 3)])
def test_one_coin_dawid_skene_equals_crowdkit(seed, n_classes):
    df = crowd(seed, n_classes=n_classes)
    theirs = crowdkit_fit("OneCoinDawidSkene", df)
    ours = cl.OneCoinDawidSkene().fit(df)
    assert len(ours.loss_history_) == len(theirs.loss_history_)
    pd.testing.assert_frame_equal(
        ours.probas_.sort_index(), theirs.probas_.sort_index(), check_like=True, atol=1e-8
    )
    pd.testing.assert_series_equal(
        ours.skills_.sort_index(), theirs.skills_.sort_index(), atol=1e-8
    )
    pd.testing.assert_frame_equal(
        ours.errors_.sort_index(), theirs.errors_.sort_index(), check_like=True, atol=1e-8
    )
