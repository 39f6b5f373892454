"""DSWC: Dawid-Skene with worker clusters (Imamura, Sato & Sugiyama, ICML 2018)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from crowdlearn import CrowdData, CrowdDataError
from crowdlearn.aggregation.dawid_skene import DawidSkene
from crowdlearn.aggregation.dswc import DSWC, _nuclear_norm_groups
from crowdlearn.simulate import independent_confusion, student_teacher

FLOOR = 1e-10


def _rows(counts: np.ndarray) -> np.ndarray:
    counts = np.maximum(counts, FLOOR)
    return counts / counts.sum(axis=-1, keepdims=True)


def _softmax(log_scores: np.ndarray) -> np.ndarray:
    shifted = np.exp(log_scores - log_scores.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def dense_reference(data: CrowdData, n_clusters: int, n_iter: int) -> tuple[np.ndarray, ...]:
    """The paper's updates written out on the dense task x worker x class tensor, for a
    tiny crowd: initialisation, then (E-step, M-step) x n_iter and a last E-step."""
    n, m, k = data.n_tasks, data.n_workers, data.n_classes
    x = np.zeros((n, m, k))
    x[data.task, data.worker, data.label] = 1.0
    annotated, active = x.sum(axis=(1, 2)) > 0, x.sum(axis=(0, 2)) > 0
    votes = x.sum(axis=1)
    theta = np.where(annotated[:, None], votes / np.maximum(votes.sum(1, keepdims=True), 1), 1 / k)
    own = _rows(np.einsum("ik,ijm->jkm", theta, x))
    norms = np.array([np.linalg.norm(matrix, ord="nuc") for matrix in own])
    order = sorted(range(m), key=lambda j: -norms[j])  # stable: ties in worker order
    groups = np.empty(m, dtype=int)
    for position, j in enumerate(order):
        groups[j] = next(g for g in range(n_clusters) if position < m * (g + 1) // n_clusters)
    phi = np.eye(n_clusters)[groups]
    lam = np.array([own[groups == g].mean(axis=0) for g in range(n_clusters)])

    def m_step(theta, phi):
        rho = _rows(theta[annotated].sum(axis=0))
        tau = _rows(phi[active].sum(axis=0))
        return rho, tau

    def elbo(theta, phi, lam, rho, tau):
        safe_log = lambda p: np.log(np.where(p > 0, p, 1.0))  # noqa: E731
        return (
            np.einsum("ik,jl,ijm,lkm->", theta, phi, x, np.log(lam))
            + np.sum(theta * np.log(rho))
            + np.sum(phi * np.log(tau))
            - np.sum(theta * safe_log(theta))
            - np.sum(phi * safe_log(phi))
        )

    rho, tau = m_step(theta, phi)
    elbos = []
    for iteration in range(n_iter + 1):
        log_lam = np.log(lam)
        new_theta = _softmax(np.log(rho) + np.einsum("ijm,jl,lkm->ik", x, phi, log_lam))
        new_phi = _softmax(np.log(tau) + np.einsum("ijm,ik,lkm->jl", x, theta, log_lam))
        theta, phi = new_theta, new_phi
        if iteration > 0:
            elbos.append(elbo(theta, phi, lam, rho, tau))
        if iteration < n_iter:
            lam = _rows(np.einsum("ik,jl,ijm->lkm", theta, phi, x))
            rho, tau = m_step(theta, phi)
    return theta, phi, lam, rho, tau, np.array(elbos)


def test_matches_the_dense_equations_on_a_tiny_crowd():
    data = independent_confusion(n_worker=7, n_task=25, n_classes=3, feedback=3, seed=11)
    for n_clusters in (1, 2, 3):
        model = DSWC(n_clusters=n_clusters, max_iter=6, tol=0.0).fit(data)
        theta, phi, lam, rho, tau, elbos = dense_reference(data, n_clusters, 6)
        np.testing.assert_allclose(model.probas_, theta, atol=1e-10)
        np.testing.assert_allclose(model.memberships_, phi, atol=1e-10)
        np.testing.assert_allclose(model.cluster_confusions_, lam, atol=1e-10)
        np.testing.assert_allclose(model.priors_, rho, atol=1e-10)
        np.testing.assert_allclose(model.cluster_priors_, tau, atol=1e-10)
        objective = model.history_["objective"].to_numpy() * data.n_annotations
        np.testing.assert_allclose(objective, elbos, rtol=1e-9)
        assert model.n_iter_ == 6 and not model.converged_


def test_initial_groups_follow_the_nuclear_norm():
    eye, flat = np.eye(3), np.full((3, 3), 1 / 3)
    middle = 0.5 * eye + 0.5 * flat
    # nuclear norms: identity 3, flat 1, middle 2; equal norms keep the worker order
    groups = _nuclear_norm_groups(np.array([flat, eye, middle, flat, eye]), 2)
    # sorted: eye(1), eye(4), middle(2) | flat(0), flat(3); cut at 5 * 1 // 2 = 2
    np.testing.assert_array_equal(groups, [1, 0, 1, 1, 0])
    np.testing.assert_array_equal(
        _nuclear_norm_groups(np.array([eye, flat, middle]), 3), [0, 2, 1]
    )


def test_workers_of_one_teacher_share_a_cluster():
    for seed in range(3):
        data, info = student_teacher(
            n_worker=30,
            n_task=400,
            n_classes=4,
            ratio=0.9,
            feedback=6,
            seed=seed,
            return_info=True,
        )
        teacher = np.array(
            [
                j if g == "teacher" else int(g.rsplit("_", 1)[1])
                for j, g in enumerate(info.worker_group)
            ]
        )
        model = DSWC(n_clusters=3).fit(data)
        cluster = model.memberships_.argmax(axis=1)
        same_teacher = teacher[:, None] == teacher[None, :]
        pairs = ~np.eye(data.n_workers, dtype=bool)
        together = cluster[:, None] == cluster[None, :]
        assert together[same_teacher & pairs].mean() > 0.5
        assert together[same_teacher & pairs].mean() > together[~same_teacher].mean() + 0.3
        accuracy = np.mean(model.labels_ == data.truth)
        assert accuracy >= np.mean(DawidSkene().fit(data).labels_ == data.truth) - 0.02
        np.testing.assert_allclose(model.confusions_, model.cluster_confusions_[cluster])


def test_elbo_history_and_attributes():
    data = independent_confusion(n_worker=15, n_task=200, n_classes=3, feedback=4, seed=12)
    model = DSWC(n_clusters=3).fit(data)
    assert model.converged_ and model.n_restarts_ == 0
    assert np.all(np.isfinite(model.history_["objective"]))
    assert model.memberships_.shape == (15, 3) and model.confusions_.shape == (15, 3, 3)
    np.testing.assert_allclose(model.memberships_.sum(axis=1), 1.0)
    np.testing.assert_allclose(model.cluster_confusions_.sum(axis=2), 1.0)
    np.testing.assert_allclose([model.priors_.sum(), model.cluster_priors_.sum()], 1.0)
    single = DSWC(n_clusters=1).fit(data)
    np.testing.assert_allclose(single.memberships_, 1.0)
    np.testing.assert_allclose(single.confusions_, single.cluster_confusions_[[0] * 15])


def test_float32_follows_float64():
    data = independent_confusion(n_worker=15, n_task=200, n_classes=3, feedback=4, seed=13)
    single = DSWC(dtype="float32").fit(data)
    double = DSWC().fit(data)
    assert single.probas_.dtype == np.float32
    assert np.mean(single.labels_ == double.labels_) > 0.98


def test_restarts_are_seeded_and_bounded(monkeypatch):
    data = independent_confusion(n_worker=10, n_task=80, n_classes=3, feedback=3, seed=14)
    monkeypatch.setattr(DSWC, "_in_one_class", lambda self: True)  # force the chance rate
    with pytest.warns(ConvergenceWarning, match="one class after 2 restarts"):
        first = DSWC(max_restarts=2, random_state=5).fit(data)
    assert first.n_restarts_ == 2 and np.all(np.isfinite(first.probas_))
    with pytest.warns(ConvergenceWarning):
        again = DSWC(max_restarts=2, random_state=5).fit(data)
    np.testing.assert_array_equal(first.probas_, again.probas_)
    with pytest.warns(ConvergenceWarning):
        other = DSWC(max_restarts=2, random_state=6).fit(data)
    assert not np.array_equal(first.probas_, other.probas_)


def test_no_restart_when_every_annotation_has_one_label():
    data = CrowdData.from_arrays([0, 1, 2, 2], [0, 1, 0, 1], ["a"] * 4, classes=["a", "b"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = DSWC().fit(data)
    assert model.n_restarts_ == 0
    np.testing.assert_array_equal(model.labels_, [0, 0, 0])


def test_rejects_bad_parameters():
    data = independent_confusion(n_worker=4, n_task=20, n_classes=2, feedback=2, seed=15)
    for n_clusters in (0, 1.5, True):
        with pytest.raises(ValueError, match="n_clusters"):
            DSWC(n_clusters=n_clusters).fit(data)
    # more clusters than workers: one cluster per worker at most, with a warning
    with pytest.warns(UserWarning, match="using 4 clusters"):
        model = DSWC(n_clusters=5).fit(data)
    assert model.memberships_.shape == (4, 4)
    with pytest.raises(ValueError, match="max_restarts"):
        DSWC(max_restarts=-1).fit(data)
    with pytest.raises(ValueError, match="dtype"):
        DSWC(dtype="int8").fit(data)
    with pytest.raises(CrowdDataError, match="anonymous"):
        DSWC().fit(data.anonymous())
