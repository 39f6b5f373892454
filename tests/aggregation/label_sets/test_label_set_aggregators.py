"""Label-set aggregators: the mixture against a by-hand E-step and against Dawid-Skene
per class, parity with crowd-kit 1.4.2's BinaryRelevance, and properties every
strategy must have (probabilities in [0, 1], relabelling, unanimity, unused classes)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn import CrowdDataError
from crowdlearn.aggregation.label_sets import (
    DEFAULT_STRATEGY,
    STRATEGIES,
    BinaryReduction,
    MultiLabelMixture,
    make_aggregator,
)
from crowdlearn.data import CrowdData, LabelSets
from crowdlearn.simulate.label_sets import simulate_label_sets

#: Every registered strategy; "binary" is "binary-ds" under another name.
SPECS = sorted(set(STRATEGIES) - {"binary"})


def fitted(spec: str, data: LabelSets):
    model = make_aggregator(spec)
    if "progress" in model.get_params():
        model.set_params(progress=False)
    return model.fit(data)


# ------------------------------------------------------------------ the mixture's steps


def test_one_cluster_mixture_is_dawid_skene_per_class():
    """With one cluster the mixture's q(z) update is exact and its parameters are a
    binary Dawid-Skene's with the same prior per class: same posteriors, same rates."""
    data = simulate_label_sets(n_tasks=200, n_workers=15, random_state=3)
    for iterations in (1, 7):
        mixture = MultiLabelMixture(
            n_clusters=1, cluster_smoothing=1e-12, tol=0, max_iter=iterations, progress=False
        ).fit(data)
        reduction = BinaryReduction(base=f"ds[tol=0,max_iter={iterations}]").fit(data)
        np.testing.assert_allclose(mixture.probas_, reduction.probas_, atol=1e-8)
        np.testing.assert_allclose(mixture.sensitivity_, reduction.sensitivity_, atol=1e-8)
        np.testing.assert_allclose(mixture.specificity_, reduction.specificity_, atol=1e-8)


def test_mixture_posteriors_by_hand():
    """One E-step recomputed with explicit sums over the annotations: q(z_ik) from the
    parameters and the previous q(c) (a fit one iteration shorter, the fits being
    deterministic), then q(c_i) from the new q(z)."""
    data = simulate_label_sets(
        n_tasks=12, n_workers=5, n_classes=3, labels_per_task=3, random_state=4
    )
    previous = MultiLabelMixture(n_clusters=3, max_iter=4, tol=0, progress=False).fit(data)
    model = MultiLabelMixture(n_clusters=3, max_iter=5, tol=0, progress=False).fit(data)
    s, p = model.sensitivity_, model.specificity_
    tau, pi, r = model.prototypes_, model.cluster_priors_, previous.cluster_probas_
    clusters = range(model.n_clusters_)
    for i in range(data.n_tasks):
        mu = np.empty(data.n_classes)
        for k in range(data.n_classes):
            yes = sum(r[i, c] * np.log(tau[c, k]) for c in clusters)
            no = sum(r[i, c] * np.log(1 - tau[c, k]) for c in clusters)
            for a in np.flatnonzero(data.task == i):
                j, y = data.worker[a], data.answers[a, k]
                yes += np.log(s[j, k] if y else 1 - s[j, k])
                no += np.log(1 - p[j, k] if y else p[j, k])
            mu[k] = 1 / (1 + np.exp(no - yes))
        np.testing.assert_allclose(model.probas_[i], mu, atol=1e-10)
        scores = np.array(
            [
                np.log(pi[c]) + np.sum(mu * np.log(tau[c]) + (1 - mu) * np.log(1 - tau[c]))
                for c in clusters
            ]
        )
        expected = np.exp(scores - scores.max())
        np.testing.assert_allclose(model.cluster_probas_[i], expected / expected.sum(), atol=1e-10)


def test_mixture_beats_binary_reduction_on_correlated_sets():
    """The clusters carry the classes' correlation: fewer wrong cells than one DS per
    class, on each of three simulated crowds."""
    for seed in range(3):
        data = simulate_label_sets(n_tasks=600, n_workers=30, random_state=seed)
        mixture = fitted("ml-mixture", data).labels_
        reduction = fitted("binary-ds", data).labels_
        assert np.mean(mixture != data.truth) < np.mean(reduction != data.truth)


def test_mixture_objective_rises_and_converges():
    data = simulate_label_sets(n_tasks=300, n_workers=20, random_state=5)
    model = MultiLabelMixture(progress=False).fit(data)
    objective = model.history_["objective"].to_numpy()
    assert model.converged_
    assert np.all(np.diff(objective) > -1e-6)


def test_worker_rates_find_the_groups():
    data, info = simulate_label_sets(n_tasks=800, n_workers=30, random_state=6, return_info=True)
    for spec in ("ml-mixture", "binary-ds"):
        model = fitted(spec, data)
        sensitivity = model.sensitivity_.mean(axis=1)
        reliable = sensitivity[info.group == "reliable"]
        careless = sensitivity[info.group == "careless"]
        assert reliable.min() > careless.max()
        assert np.corrcoef(model.sensitivity_.ravel(), info.sensitivity.ravel())[0, 1] > 0.8


# ----------------------------------------------------------------------- crowd-kit parity


def crowdkit_labels(aggregator, data: LabelSets) -> np.ndarray:
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sets = crowdkit.BinaryRelevance(aggregator).fit_predict(data.to_frame())
    classes = list(data.classes)
    labels = np.zeros((data.n_tasks, data.n_classes), dtype=bool)
    for task, chosen in sets.items():
        labels[list(data.task_ids).index(task), [classes.index(c) for c in chosen]] = True
    return labels


def test_binary_mv_equals_crowdkit_binary_relevance_mv():
    """An odd number of workers per task: no tie, so the labels are the same."""
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    data = simulate_label_sets(n_tasks=300, n_workers=20, random_state=3)
    ours = fitted("binary-mv", data).labels_
    np.testing.assert_array_equal(ours, crowdkit_labels(crowdkit.MajorityVote(), data))


def test_binary_ds_agrees_with_crowdkit_binary_relevance_ds():
    """crowd-kit's DS has no prior: ours without it agrees on >= 99% of the cells."""
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    # crowd-kit's DS costs ~10 ms an iteration per class: 30 iterations, 4 classes
    data = simulate_label_sets(n_tasks=150, n_workers=15, n_classes=4, random_state=3)
    ours = fitted("binary[base=ds[smoothing=0,diagonal_prior=0,tol=1e-9,max_iter=30]]", data)
    theirs = crowdkit_labels(crowdkit.DawidSkene(n_iter=30, tol=1e-9), data)
    assert np.mean(ours.labels_ == theirs) >= 0.99


# ------------------------------------------------------------------------- properties


@st.composite
def label_sets(draw):
    n_tasks = draw(st.integers(1, 6))
    n_workers = draw(st.integers(1, 4))
    n_classes = draw(st.integers(2, 4))
    pairs = draw(
        st.lists(
            st.tuples(st.integers(0, n_tasks - 1), st.integers(0, n_workers - 1)),
            min_size=1,
            max_size=16,
            unique=True,
        )
    )
    answers = draw(
        st.lists(
            st.lists(st.booleans(), min_size=n_classes, max_size=n_classes),
            min_size=len(pairs),
            max_size=len(pairs),
        )
    )
    task, worker = np.array(pairs).T
    return LabelSets(
        task, worker, np.array(answers, dtype=bool), n_tasks=n_tasks, classes=np.arange(n_classes)
    )


@settings(max_examples=15, deadline=None)
@given(data=label_sets(), seed=st.integers(0, 2**16))
def test_relabelling_permutes_the_results(data, seed):
    rng = np.random.default_rng(seed)
    tasks = rng.permutation(data.n_tasks)
    workers = rng.permutation(data.n_workers)
    classes = rng.permutation(data.n_classes)
    renamed = LabelSets(
        tasks[data.task],
        workers[data.worker],
        data.answers[:, np.argsort(classes)],
        n_tasks=data.n_tasks,
        worker_ids=np.arange(data.n_workers),
        classes=np.arange(data.n_classes),
    )
    for spec in [*SPECS, "ml-mixture[C=1]"]:
        before, after = fitted(spec, data), fitted(spec, renamed)
        assert np.all((before.probas_ >= 0) & (before.probas_ <= 1)), spec
        if spec == "binary-mace":
            continue  # MACE's random restarts draw per worker code: not relabelling-free
        if spec == "ml-mixture":
            # its random seeds are drawn over rows whose order depends on the classes'
            # (module docstring): tasks and workers only
            again = fitted(
                spec,
                LabelSets(
                    tasks[data.task],
                    workers[data.worker],
                    data.answers,
                    n_tasks=data.n_tasks,
                    worker_ids=np.arange(data.n_workers),
                    classes=np.arange(data.n_classes),
                ),
            )
            np.testing.assert_allclose(again.probas_[tasks], before.probas_, atol=1e-8)
            np.testing.assert_allclose(again.sensitivity_[workers], before.sensitivity_, atol=1e-8)
            continue
        np.testing.assert_allclose(
            after.probas_[np.ix_(tasks, classes)], before.probas_, atol=1e-8, err_msg=spec
        )
        np.testing.assert_allclose(
            after.sensitivity_[np.ix_(workers, classes)], before.sensitivity_, atol=1e-8
        )


@settings(max_examples=25, deadline=None)
@given(data=label_sets())
def test_a_class_nobody_selects_is_left_out(data):
    answers = data.answers.copy()
    answers[:, 0] = False
    unused = LabelSets(data.task, data.worker, answers, n_tasks=data.n_tasks, classes=data.classes)
    seen = np.unique(data.task)
    for spec in SPECS:
        model = fitted(spec, unused)
        assert np.all(model.probas_[seen, 0] < 0.5), spec
        assert not model.labels_[:, 0].any(), spec


@settings(max_examples=12, deadline=None)
@given(data=label_sets(), truth_seed=st.integers(0, 2**16))
def test_unanimous_workers_are_reproduced(data, truth_seed):
    truth = np.random.default_rng(truth_seed).random((data.n_tasks, data.n_classes)) < 0.5
    unanimous = LabelSets(
        data.task, data.worker, truth[data.task], n_tasks=data.n_tasks, classes=data.classes
    )
    seen = np.unique(data.task)
    # A task answered once is not evidence enough for the worker models: on a class that
    # one worker selects once and every other answer leaves out, Dawid-Skene's EM can
    # settle on "that worker's yes is a false positive" (class prior near 0), a maximum
    # of its likelihood. Majority vote follows any unanimous answer; the models follow
    # every task that two or more workers answered alike.
    twice = seen[np.bincount(data.task, minlength=data.n_tasks)[seen] >= 2]
    for spec in SPECS:
        model = fitted(spec, unanimous)
        checked = seen if spec == "binary-mv" else twice
        np.testing.assert_array_equal(model.labels_[checked], truth[checked], err_msg=spec)


# ------------------------------------------------------------------------ the contract


def test_registry_and_default():
    assert DEFAULT_STRATEGY in STRATEGIES
    assert make_aggregator("binary[base=glad]").base == "glad"
    assert make_aggregator("ml-mixture[C=3]").n_clusters == 3
    assert make_aggregator("binary-mace").base == "mace"
    with pytest.raises(CrowdDataError, match="unknown label-set strategy"):
        make_aggregator("nope")


def test_wrong_type_and_bad_parameters():
    crowd = CrowdData.from_arrays([0, 0], [0, 1], [0, 1])
    for spec in ("binary-ds", "ml-mixture"):
        with pytest.raises(TypeError, match=r"expects a crowdlearn\.data\.LabelSets"):
            make_aggregator(spec).fit(crowd)
    data = simulate_label_sets(n_tasks=20, n_workers=5, random_state=0)
    with pytest.raises(ValueError, match="max_iter"):
        MultiLabelMixture(max_iter=-1).fit(data)
    with pytest.raises(ValueError, match="n_clusters"):
        MultiLabelMixture(n_clusters=0).fit(data)
    with pytest.raises(CrowdDataError, match="unknown strategy"):
        BinaryReduction(base="nope").fit(data)
    with pytest.raises(TypeError, match="base must be"):
        BinaryReduction(base=3).fit(data)


def test_one_worker_one_task():
    data = LabelSets.from_arrays(["t"], ["w"], [["a", "b"]], classes=["a", "b", "c"])
    for spec in SPECS:
        model = fitted(spec, data)
        assert np.all(np.isfinite(model.probas_)), spec
        np.testing.assert_array_equal(model.labels_, [[True, True, False]], err_msg=spec)
