"""The faster MultiLabelMixture (issue 46, item 3) against the initialisation and
E-step it replaced, kept here verbatim as the reference: the same fits to 1e-10 on
simulated crowds."""

from __future__ import annotations

import numpy as np
import pytest

from crowdlearn.aggregation._design import normalise_log
from crowdlearn.aggregation.label_sets import MultiLabelMixture
from crowdlearn.aggregation.label_sets._base import SetDesign, vote_shares
from crowdlearn.aggregation.label_sets.mixture import squared_distances, unique_rows
from crowdlearn.data import LabelSets
from crowdlearn.simulate.label_sets import simulate_label_sets


def former_kmeans_plus_plus(points, n, random_state):
    """The former k-means++ seeding (distinct rows by np.unique), unchanged."""
    rng = np.random.default_rng(random_state)
    rows, copies = np.unique(points, axis=0, return_counts=True)
    seeds = [rows[rng.choice(len(rows), p=copies / copies.sum())]]
    nearest = squared_distances(rows, seeds[0][None, :])[:, 0]
    while len(seeds) < n:
        weight = copies * np.maximum(nearest, 0)
        total = weight.sum()
        if total <= 1e-12:
            break
        seeds.append(rows[rng.choice(len(rows), p=weight / total)])
        nearest = np.minimum(nearest, squared_distances(rows, seeds[-1][None, :])[:, 0])
    return np.array(seeds)


class ReferenceMixture(MultiLabelMixture):
    """MultiLabelMixture with the initialisation and E-step as they were before the
    speed-up."""

    def _initialize(self, data):  # the former code, unchanged
        self._design = SetDesign.of(data)
        self.probas_ = vote_shares(data)
        seeds = former_kmeans_plus_plus(self.probas_, self.n_clusters, self.random_state)
        self.n_clusters_ = len(seeds)
        distances = squared_distances(self.probas_, seeds)
        self.cluster_probas_ = np.eye(self.n_clusters_)[distances.argmin(axis=1)]

    def _e_step(self, data):  # the former code, unchanged
        present, absent = self._worker_evidence(data)
        log_tau, log_not_tau = np.log(self.prototypes_), np.log1p(-self.prototypes_)
        c1, c0 = self.cluster_probas_ @ log_tau, self.cluster_probas_ @ log_not_tau
        present += c1
        absent += c0
        logit = present - absent
        small = np.exp(-np.abs(logit))
        mu = np.where(logit >= 0, 1.0, small) / (1.0 + small)
        softplus = np.maximum(logit, 0.0) + np.log1p(small)
        scores = np.log(self.cluster_priors_) + mu @ log_tau.T + (1 - mu) @ log_not_tau.T
        self.cluster_probas_, log_norm = normalise_log(scores)
        self.probas_ = mu
        own = absent + softplus - mu * c1 - (1 - mu) * c0
        return float(log_norm.sum() + own.sum())

    def _worker_evidence(self, data):
        log_s, log_miss = np.log(self.sensitivity_), np.log1p(-self.sensitivity_)
        log_p, log_false = np.log(self.specificity_), np.log1p(-self.specificity_)
        present = self._design.task_sums(log_miss, log_s)
        absent = self._design.task_sums(log_p, log_false)
        return present, absent


CROWDS = [
    {"n_tasks": 300, "n_workers": 12, "n_classes": 5, "random_state": 0},
    {"n_tasks": 1000, "n_workers": 40, "n_classes": 8, "labels_per_task": 3, "random_state": 1},
    {"n_tasks": 150, "n_workers": 7, "n_classes": 3, "labels_per_task": 1, "random_state": 2},
]


@pytest.mark.parametrize("crowd", CROWDS)
@pytest.mark.parametrize("params", [{}, {"n_clusters": 1}, {"n_clusters": 6, "max_iter": 7}])
def test_vectorised_e_step_equals_the_former_one(crowd: dict, params: dict) -> None:
    data = simulate_label_sets(**crowd)
    if crowd["random_state"] == 1:  # annotations in shuffled order, not by task
        order = np.random.default_rng(5).permutation(data.n_annotations)
        data = LabelSets(
            data.task[order],
            data.worker[order],
            data.answers[order],
            n_tasks=data.n_tasks,
        )
    new = MultiLabelMixture(progress=False, **params).fit(data)
    old = ReferenceMixture(progress=False, **params).fit(data)
    assert new.n_iter_ == old.n_iter_ and new.converged_ == old.converged_
    np.testing.assert_allclose(new.history_["objective"], old.history_["objective"], rtol=1e-10)
    # "change" is a difference of two objectives (cancellation): compared in absolute
    np.testing.assert_allclose(new.history_["change"], old.history_["change"], atol=1e-12)
    for name in (
        "probas_",
        "sensitivity_",
        "specificity_",
        "cluster_probas_",
        "cluster_priors_",
        "prototypes_",
    ):
        np.testing.assert_allclose(getattr(new, name), getattr(old, name), rtol=0, atol=1e-10)
    assert np.array_equal(new.labels_, old.labels_)


def test_unique_rows_equals_numpy_unique_on_rows() -> None:
    rng = np.random.default_rng(0)
    for points in (
        rng.integers(0, 3, size=(500, 4)) / 2.0,  # many repeats
        rng.random((50, 3)),  # all distinct
        np.zeros((7, 2)),  # one row
        rng.integers(0, 2, size=(1, 5)).astype(float),
    ):
        rows, copies = unique_rows(points)
        expected_rows, expected_copies = np.unique(points, axis=0, return_counts=True)
        assert np.array_equal(rows, expected_rows)
        assert np.array_equal(copies, expected_copies)
