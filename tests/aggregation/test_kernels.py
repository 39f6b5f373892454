"""The fused EM kernels (issue 46 item 1) give the NumPy path's results.

Each estimator is fitted twice on the same random crowd: with the kernels forced on
(``MIN_ANNOTATIONS = 0``) and with the NumPy path (``CROWDLEARN_NO_NUMBA=1``); the
posteriors, parameters and objective must agree to 1e-10. Crowds: K = 2 and K = 10,
tasks with one label (lone labels) and without any, gold classes, hard EM.
The kernels compile once per machine (``cache=True``); these are the only tests of
the default run that compile them.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crowdlearn import CrowdData
from crowdlearn.aggregation import (
    GLAD,
    DawidSkene,
    MajorityVote,
    NaiveSoft,
    OneCoinDawidSkene,
    Wawa,
    _kernels,
)
from crowdlearn.aggregation._blocks import BlockReader, CodesDesign, block_design
from crowdlearn.aggregation._design import log_confusion_table
from crowdlearn.aggregation.dawid_skene import confusion_statistics, posterior_block

pytest.importorskip("numba")

TOL = 1e-10


def random_crowd(seed: int, k: int, n_tasks: int = 300, n_workers: int = 25) -> CrowdData:
    """Tasks with 0 to 6 labels (about a sixth with one: lone labels), shuffled rows."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, k, n_tasks)
    skill = rng.uniform(0.3, 0.95, n_workers)
    rows = []
    for task in range(n_tasks):
        n_labels = int(rng.choice([0, 1, 1, 2, 3, 4, 6]))
        for worker in rng.choice(n_workers, size=n_labels, replace=False):
            right = rng.random() < skill[worker]
            label = truth[task] if right else rng.integers(0, k)
            rows.append((task, worker, label))
    task, worker, label = (np.array(column) for column in zip(*rows, strict=True))
    order = rng.permutation(len(task))
    return CrowdData(
        task[order],
        worker[order],
        label[order],
        n_tasks=n_tasks,
        n_workers=n_workers,
        n_classes=k,
        truth=truth,
    )


def fit_both(monkeypatch: pytest.MonkeyPatch, make, data: CrowdData, **fit_params):
    """The estimator fitted on the NumPy path, then on the kernels."""
    with monkeypatch.context() as patch:
        patch.setenv("CROWDLEARN_NO_NUMBA", "1")
        reference = make().fit(data, **fit_params)
    with monkeypatch.context() as patch:
        patch.setattr(_kernels, "MIN_ANNOTATIONS", 0)
        assert _kernels.active(data.n_annotations)
        fused = make().fit(data, **fit_params)
    return reference, fused


def assert_same(reference, fused, *attributes: str) -> None:
    for name in ("probas_", *attributes):
        np.testing.assert_allclose(
            getattr(fused, name), getattr(reference, name), rtol=0, atol=TOL, err_msg=name
        )
    if hasattr(reference, "history_"):
        objective = reference.history_.columns[1]
        np.testing.assert_allclose(
            fused.history_[objective], reference.history_[objective], rtol=TOL, atol=TOL
        )
    np.testing.assert_array_equal(fused.labels_, reference.labels_)


FAST = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))


@FAST
@given(
    seed=st.integers(0, 10_000),
    k=st.sampled_from([2, 10]),
    gold_share=st.sampled_from([0.0, 0.2]),
    hard=st.booleans(),
    lone_labels=st.sampled_from(["vote", "em"]),
)
def test_dawid_skene_kernels_equal_the_numpy_path(seed, k, gold_share, hard, lone_labels):
    data = random_crowd(seed, k)
    rng = np.random.default_rng(seed + 1)
    gold = np.where(rng.random(data.n_tasks) < gold_share, data.truth, -1)
    with pytest.MonkeyPatch.context() as patch:
        reference, fused = fit_both(
            patch,
            lambda: DawidSkene(
                max_iter=8, tol=0, progress=False, hard=hard, lone_labels=lone_labels
            ),
            data,
            gold=gold if gold_share else None,
        )
    assert_same(reference, fused, "confusions_", "priors_")


@FAST
@given(seed=st.integers(0, 10_000), k=st.sampled_from([2, 10]))
def test_one_coin_and_glad_kernels_equal_the_numpy_path(seed, k):
    data = random_crowd(seed, k)
    with pytest.MonkeyPatch.context() as patch:
        reference, fused = fit_both(
            patch, lambda: OneCoinDawidSkene(max_iter=8, tol=0, progress=False), data
        )
        assert_same(reference, fused, "skills_", "priors_")
        reference, fused = fit_both(
            patch, lambda: GLAD(max_iter=5, tol=0, progress=False, class_prior="learn"), data
        )
        assert fused._fused is not None
        assert_same(reference, fused, "alphas_", "betas_", "priors_")


@pytest.mark.parametrize("k", [2, 10])
@pytest.mark.parametrize("by_task", [False, True])
def test_vote_kernels_equal_the_numpy_path(monkeypatch, k, by_task):
    data = random_crowd(3, k)
    if by_task:  # sorted by task: the parallel pass
        order = np.argsort(data.task, kind="stable")
        data = CrowdData(
            data.task[order], data.worker[order], data.label[order], n_classes=k,
            n_tasks=data.n_tasks, n_workers=data.n_workers,
        )  # fmt: skip
    for make in (MajorityVote, NaiveSoft, Wawa):
        reference, fused = fit_both(monkeypatch, make, data)
        data.__dict__.pop("vote_counts", None)
        assert_same(reference, fused)
        if hasattr(reference, "vote_counts_"):
            assert fused.vote_counts_.dtype == reference.vote_counts_.dtype
            np.testing.assert_array_equal(fused.vote_counts_, reference.vote_counts_)


def test_per_block_functions_take_either_design(monkeypatch):
    """The per-block steps other drivers call (chunks, Dask, streaming) give the same
    statistics and posteriors from the kernels' design and from SciPy's."""
    data = random_crowd(5, 4)
    model = DawidSkene(max_iter=3, progress=False).fit(data)
    table, log_prior = log_confusion_table(model.confusions_), np.log(model.priors_)
    gold = np.where(np.arange(data.n_tasks) % 7 == 0, data.truth, -1)
    for block in BlockReader(data, chunk_size=200):
        probas = model.probas_[block.start : block.stop]
        sparse = block_design(block, data.n_workers, 4, np.float64)
        monkeypatch.setattr(_kernels, "MIN_ANNOTATIONS", 0)
        codes = block_design(block, data.n_workers, 4, np.float64)
        monkeypatch.setattr(_kernels, "MIN_ANNOTATIONS", 1 << 62)
        assert isinstance(codes, CodesDesign) and not isinstance(sparse, CodesDesign)
        block_gold = gold[block.start : block.stop]
        for rule in ("vote", "em"):
            for got, want in zip(
                confusion_statistics(codes, block, probas, rule, block_gold),
                confusion_statistics(sparse, block, probas, rule, block_gold),
                strict=True,
            ):
                np.testing.assert_allclose(got, want, rtol=0, atol=TOL)
        got = posterior_block(codes, table, log_prior, block_gold, False)
        want = posterior_block(sparse, table, log_prior, block_gold, False)
        np.testing.assert_allclose(got[0], want[0], rtol=0, atol=TOL)
        assert got[1] == pytest.approx(want[1], rel=TOL)
        np.testing.assert_allclose(codes @ table, sparse @ table, rtol=0, atol=TOL)
        np.testing.assert_allclose(codes.T @ probas, sparse.T @ probas, rtol=0, atol=TOL)


def test_vectorised_exp_matches_numpy():
    from crowdlearn.aggregation._numba_kernels import _exp_inplace

    rng = np.random.default_rng(0)
    values = np.concatenate(
        [-rng.random(20_000) * 40, -rng.random(2_000) * 800, [0.0, -745.0, -746.0, -np.inf]]
    )
    got = values.copy()
    scratch = np.empty(len(values), dtype=np.int64), np.empty(len(values), dtype=np.int64)
    _exp_inplace(got, *scratch)
    want = np.exp(values)
    normal = want > 1e-300
    assert np.max(np.abs(got[normal] - want[normal]) / want[normal]) < 3e-16
    assert np.max(np.abs(got[~normal] - want[~normal])) < 1e-300


def test_vectorised_log1p_matches_numpy():
    from crowdlearn.aggregation._numba_kernels import _log1p_inplace

    values = np.concatenate([np.random.default_rng(1).random(20_000), np.logspace(-300, 0, 500)])
    got = values.copy()
    _log1p_inplace(got)
    want = np.log1p(values)
    assert np.max(np.abs(got - want) / want) < 5e-16


def test_environment_variable_forces_the_numpy_path(monkeypatch):
    data = random_crowd(1, 3)
    monkeypatch.setattr(_kernels, "MIN_ANNOTATIONS", 0)
    monkeypatch.setenv("CROWDLEARN_NO_NUMBA", "1")
    assert not _kernels.available() and not _kernels.active(10**9)
    block = next(iter(BlockReader(data, None)))
    assert not isinstance(block_design(block, data.n_workers, 3, np.float64), CodesDesign)
    monkeypatch.setenv("CROWDLEARN_NO_NUMBA", "0")
    assert _kernels.active(1)


def test_the_size_threshold_falls_with_the_methods_cost_per_annotation(monkeypatch):
    """Before numba is loaded, GLAD (whose NumPy iterations cost most per annotation)
    takes the kernels from 200k annotations, Dawid-Skene and one-coin from 2M x 2 / K,
    the votes from 2M."""
    monkeypatch.setattr(_kernels, "_STATE", {"kernels": None, "failed": False, "noted": False})
    monkeypatch.setattr(_kernels, "available", lambda: True)
    assert not _kernels.active(500_000)
    assert not _kernels.active(500_000, _kernels.weight("ds"))
    assert not _kernels.active(500_000, _kernels.weight("onecoin", 4))
    assert _kernels.active(500_000, _kernels.weight("ds", 10))  # K=10: from 400k
    assert _kernels.active(1_000_000, _kernels.weight("onecoin", 4))  # K=4: from 1M
    assert _kernels.active(500_000, _kernels.weight("glad"))
    assert _kernels.active(200_000, _kernels.weight("glad"))
    assert not _kernels.active(100_000, _kernels.weight("glad"))
    assert _kernels.active(_kernels.MIN_ANNOTATIONS)
    # once loaded, every method takes them from MIN_LOADED annotations
    monkeypatch.setitem(_kernels._STATE, "kernels", object())
    assert _kernels.active(_kernels.MIN_LOADED) and not _kernels.active(_kernels.MIN_LOADED - 1)


def test_a_glad_fit_of_a_quarter_million_runs_on_the_kernels(monkeypatch):
    """GLAD's fit builds the fused CSR block from 200k annotations (numba not yet
    loaded in the fit's view) and gives the NumPy path's posteriors."""
    if not _kernels.available():
        pytest.skip("numba unavailable")
    rng = np.random.default_rng(0)
    n_tasks, per_task = 50_000, 5
    task = np.repeat(np.arange(n_tasks), per_task)
    data = CrowdData(
        task=task,
        worker=(task * 7 + np.tile(np.arange(per_task), n_tasks)) % 500,
        label=rng.integers(0, 2, task.size),
        n_classes=2,
    )
    monkeypatch.setattr(_kernels, "_STATE", {**_kernels._STATE, "kernels": None})
    answers = []
    active = _kernels.active

    def recorded(n, weight=1.0):
        answers.append((n, weight, active(n, weight)))
        return answers[-1][2]

    monkeypatch.setattr(_kernels, "active", recorded)
    fused = GLAD(max_iter=3, tol=0, progress=False).fit(data)
    assert answers[0] == (data.n_annotations, _kernels.GLAD_WEIGHT, True)
    monkeypatch.setenv("CROWDLEARN_NO_NUMBA", "1")
    plain = GLAD(max_iter=3, tol=0, progress=False).fit(data)
    assert answers[-1][2] is False
    np.testing.assert_allclose(fused.probas_, plain.probas_, rtol=0, atol=1e-10)


def test_the_codes_design_times_a_vector_stays_on_the_kernels(monkeypatch):
    """``design @ vector`` and ``design.T @ vector`` (the incremental update's bound
    takes them) equal SciPy's, with no fallback note: the kernels took only tables,
    and a vector made them fail to compile and switched the process to NumPy."""
    if not _kernels.available():
        pytest.skip("numba unavailable")
    monkeypatch.setattr(_kernels, "MIN_ANNOTATIONS", 0)
    data = random_crowd(4, 3)
    block = next(iter(BlockReader(data, None)))
    design = block_design(block, data.n_workers, 3, np.float64)
    assert isinstance(design, CodesDesign)
    rng = np.random.default_rng(0)
    columns, tasks = rng.random(design.shape[1]), rng.random(design.shape[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(design @ columns, design.to_sparse() @ columns, rtol=1e-12)
        np.testing.assert_allclose(design.T @ tasks, design.to_sparse().T @ tasks, rtol=1e-12)
    assert _kernels.available()


def test_numpy_fallback_with_one_note_when_numba_cannot_load(monkeypatch):
    data = random_crowd(2, 3)
    reference = DawidSkene(max_iter=5, tol=0, progress=False).fit(data)  # NumPy: small data
    monkeypatch.setattr(_kernels, "MIN_ANNOTATIONS", 0)
    monkeypatch.setattr(_kernels, "_STATE", {"kernels": None, "failed": False, "noted": False})
    monkeypatch.setitem(sys.modules, "crowdlearn.aggregation._numba_kernels", None)
    with pytest.warns(RuntimeWarning, match="NumPy path"):
        first = DawidSkene(max_iter=5, tol=0, progress=False).fit(data)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the note is given once
        second = OneCoinDawidSkene(max_iter=5, tol=0, progress=False).fit(data)
    assert not _kernels.available()
    np.testing.assert_allclose(first.probas_, reference.probas_, rtol=0, atol=0)
    assert second.probas_.shape == reference.probas_.shape


@pytest.mark.parametrize("k", [2, 10])
def test_tie_break_kernel_equals_the_numpy_path(monkeypatch, k):
    """Labels from a table with many exact ties (vote counts) and near ties (within
    1e-12): the same classes and the same random draws, with keys drawn in slices."""
    from crowdlearn.aggregation._base import break_ties

    rng = np.random.default_rng(k)
    scores = rng.integers(0, 3, size=(5_000, k)).astype(np.float64)
    scores[::7, 0] += 1e-13  # within the tolerance: still a tie
    monkeypatch.setattr(_kernels, "KEY_ROWS", 333)
    assert _kernels.available()  # loads the kernels: the tie-break uses them once loaded
    for tie_break, seed in (("random", 0), ("random", 5), ("lowest", 0)):
        monkeypatch.setenv("CROWDLEARN_NO_NUMBA", "1")
        want = break_ties(scores, tie_break, seed)
        monkeypatch.setenv("CROWDLEARN_NO_NUMBA", "0")
        monkeypatch.setattr(_kernels, "MIN_ANNOTATIONS", 0)
        assert _kernels.ready(scores.size)
        np.testing.assert_array_equal(break_ties(scores, tie_break, seed), want)
        monkeypatch.setattr(_kernels, "MIN_ANNOTATIONS", 1 << 62)


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_kernels_run_in_a_forked_child():
    """A child forked after the pool exists (multiprocessing's fork, data loaders)
    gets a pool of its own instead of waiting on the parent's threads."""
    import multiprocessing

    assert _kernels.available()
    parts = _kernels.run_ranges("sorted_range", np.array([0, 5, 10]), (np.arange(10),))
    assert parts == [True, True]
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as pool:
        result = pool.apply_async(_sorted_in_child).get(timeout=60)
    assert result == [True, True]


def _sorted_in_child() -> list:
    return _kernels.run_ranges("sorted_range", np.array([0, 5, 10]), (np.arange(10),))


def test_steps_called_from_another_thread_run_on_that_thread():
    """Dask's workers (threads) already run partitions in parallel: a step called from
    a thread other than the main one takes no more threads."""
    from concurrent.futures import ThreadPoolExecutor

    assert _kernels.available()
    with ThreadPoolExecutor(1) as outside:
        assert outside.submit(_kernels.n_threads).result() == 1
    data = random_crowd(4, 3)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_kernels, "MIN_ANNOTATIONS", 0)
        with ThreadPoolExecutor(1) as outside:
            threaded = outside.submit(
                lambda: DawidSkene(max_iter=4, tol=0, progress=False).fit(data)
            ).result()
        main = DawidSkene(max_iter=4, tol=0, progress=False).fit(data)
    np.testing.assert_allclose(threaded.probas_, main.probas_, rtol=0, atol=TOL)


# ---- issue 46: one pass for Dawid-Skene's E-step and the next M-step; majority vote


@pytest.mark.parametrize("k", [2, 10])
@pytest.mark.parametrize("lone_labels", ["vote", "em"])
def test_fused_dawid_skene_step_gives_the_next_m_steps_sums(k, lone_labels):
    """ds_em_step writes the E-step's posteriors and returns the M-step sums of those
    posteriors: the same as posterior_block, then confusion_statistics."""
    data = random_crowd(6, k)
    model = DawidSkene(max_iter=3, progress=False).fit(data)
    table, log_prior = log_confusion_table(model.confusions_), np.log(model.priors_)
    gold = np.where(np.arange(data.n_tasks) % 5 == 0, data.truth, -1)
    for hard in (False, True):
        for block in BlockReader(data, chunk_size=300):
            design = block_design(block, data.n_workers, k, np.float64)
            sparse = design if not isinstance(design, CodesDesign) else design.to_sparse()
            block_gold = gold[block.start : block.stop]
            want, want_likelihood = posterior_block(sparse, table, log_prior, block_gold, hard)
            want_counts, want_totals = confusion_statistics(
                sparse, block, want, lone_labels, block_gold
            )
            out = np.empty((block.n_tasks, k))
            got = _kernels.ds_em_step(
                block.indptr, block.worker.astype(np.int32) * k + block.label, table,
                log_prior, block_gold, hard, lone_labels == "vote", data.n_workers * k, out,
            )  # fmt: skip
            assert got is not None
            np.testing.assert_allclose(out, want, rtol=0, atol=TOL)
            assert got[0] == pytest.approx(want_likelihood, rel=TOL)
            np.testing.assert_allclose(got[1], want_counts, rtol=0, atol=TOL)
            np.testing.assert_allclose(got[2], want_totals, rtol=0, atol=TOL)


@pytest.mark.parametrize("chunk_size", [None, 150])
def test_dawid_skene_fused_pass_equals_the_numpy_path_in_blocks(monkeypatch, chunk_size):
    """Fits whose M-steps use the sums of the previous E-step's pass (one block, or
    several: their sums added) equal the NumPy path's, and the held sums are not kept
    after the fit."""
    data = random_crowd(8, 3, n_tasks=600)
    reference, fused = fit_both(
        monkeypatch,
        lambda: DawidSkene(max_iter=6, tol=0, progress=False, chunk_size=chunk_size),
        data,
    )
    assert_same(reference, fused, "confusions_", "priors_")
    assert fused.__dict__.get("_ahead") is None


def test_pcg64_jumps_reproduce_numpys_draws():
    """The draws computed by jump-ahead are NumPy's: draw n of default_rng(seed)."""
    from numba import njit

    from crowdlearn.aggregation._numba_votes import _advance, _affine, _draw

    @njit
    def draw_at(powers, cells, start, n):
        high, low = _advance(powers, start[0], start[1], n)
        high, low = _affine(cells[0], high, low)
        return _draw(high, low)

    for seed in (0, 7, 2**40 + 3):
        start, powers, cells, _ = _kernels.pcg64_maps(seed, 4)
        want = np.random.default_rng(seed).random(5_000)
        for n in (0, 1, 2, 3, 63, 64, 999, 4_999):
            assert draw_at(powers, cells, start, n) == want[n]
    assert _kernels.pcg64_maps(np.random.default_rng(0), 2) is None  # a Generator: NumPy's


def sorted_crowd(seed: int, k: int, n_tasks: int = 400) -> CrowdData:
    data = random_crowd(seed, k, n_tasks=n_tasks)
    order = np.argsort(data.task, kind="stable")
    return CrowdData(
        data.task[order], data.worker[order], data.label[order], n_classes=k,
        n_tasks=data.n_tasks, n_workers=data.n_workers,
    )  # fmt: skip


@pytest.mark.parametrize("k", [2, 3, 10])
@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("n_tasks", [400, 5000])
def test_majority_vote_pass_equals_the_numpy_path(monkeypatch, k, threads, n_tasks):
    """The one-pass majority vote (counts, the same tie-break and random keys, one-hot
    rows, labels) equals the NumPy path's, on one range or several, in one tile of
    tasks or several (5000 tasks: ties listed per tile, then broken), with tasks
    without annotations (ties of all classes); unsorted annotations go the NumPy way."""
    monkeypatch.setattr(_kernels, "n_threads", lambda: threads)
    data = sorted_crowd(k, k, n_tasks=n_tasks)
    for params in ({}, {"random_state": 11}, {"tie_break": "lowest"}):
        reference, fused = _majority_both_ways(data, params, monkeypatch)
        np.testing.assert_array_equal(fused.labels_, reference.labels_)
        np.testing.assert_array_equal(fused.vote_counts_, reference.vote_counts_)
        np.testing.assert_array_equal(fused.probas_, reference.probas_)
        assert "_fit_labels" not in fused.__dict__
    shuffled = random_crowd(k, k, n_tasks=400)  # rows not sorted by task
    assert _kernels.majority_vote(shuffled.task, shuffled.label, 400, k, "random", 0) is None


def _counting(calls: list, run):
    def counted(name, *args):
        calls.append(name)
        return run(name, *args)

    return counted


def test_glad_beta_step_from_the_alpha_trials_sums_equals_its_own():
    """The log beta step started from the per-task sums written by a trial of the
    alphas (glad_alpha_sums with task_sums) is the step computed from scratch."""
    data = sorted_crowd(9, 4, n_tasks=500)
    block = next(iter(BlockReader(data, None)))
    rng = np.random.default_rng(0)
    alphas = rng.uniform(0.2, 2.0, data.n_workers)
    log_betas = rng.normal(0.0, 0.5, data.n_tasks)
    probas = rng.dirichlet(np.ones(4), data.n_tasks)
    codes = (block.indptr, block.worker, block.label, probas)
    task_sums = np.full((data.n_tasks, 4), np.nan)
    k1 = float(np.log(3))
    with_sums = _kernels.glad_alpha_sums(*codes, alphas, log_betas, k1, False, task_sums)
    without = _kernels.glad_alpha_sums(*codes, alphas, log_betas, k1, False)
    np.testing.assert_array_equal(with_sums, without)
    assert np.isfinite(task_sums).all()
    given, scratch = log_betas.copy(), log_betas.copy()
    step = _kernels.glad_beta_newton(*codes, alphas, given, k1, 0.0, task_sums=task_sums)
    want = _kernels.glad_beta_newton(*codes, alphas, scratch, k1, 0.0)
    assert step == want
    np.testing.assert_array_equal(given, scratch)


def _random_codes(seed: int, k: int, n_workers: int = 30, long_task: int = 0):
    """A CSR block of 200 tasks with 0 to 6 annotations (codes ``worker * K + label``),
    and, with ``long_task``, a last task with that many."""
    rng = np.random.default_rng(seed)
    counts = rng.choice([0, 1, 1, 2, 3, 5, 6], size=200)
    if long_task:
        counts = np.append(counts, long_task)
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    columns = rng.integers(0, n_workers, indptr[-1]) * k + rng.integers(0, k, indptr[-1])
    return indptr, columns.astype(np.int32), n_workers


def _e_step_both(monkeypatch, indptr, columns, table, log_prior, gold):
    """:func:`_kernels.ds_e_step` on the products' kernel and on the log path: the
    posteriors and log-likelihoods, and the kernels the first one called."""
    calls: list = []
    got = np.empty((len(indptr) - 1, table.shape[1]))
    with monkeypatch.context() as patch:
        patch.setattr(_kernels, "run_ranges", _counting(calls, _kernels.run_ranges))
        got_likelihood = _kernels.ds_e_step(indptr, columns, table, log_prior, gold, False, got)
    want = np.empty_like(got)
    with monkeypatch.context() as patch:
        patch.setattr(_kernels, "PRODUCT_CLASSES", range(0))
        want_likelihood = _kernels.ds_e_step(indptr, columns, table, log_prior, gold, False, want)
    return got, got_likelihood, want, want_likelihood, calls


@pytest.mark.parametrize("k", [3, 5, 10, 16])
@pytest.mark.parametrize("with_gold", [False, True])
def test_dawid_skene_e_step_from_products_equals_the_log_path(monkeypatch, k, with_gold):
    """The E-step from products of probabilities (3-16 classes) gives the log path's
    posteriors and log-likelihood, with gold tasks, tasks without annotations, a zero
    confusion and a class of prior zero."""
    indptr, columns, n_workers = _random_codes(k, k)
    rng = np.random.default_rng(k)
    confusions = rng.dirichlet(np.full(k, 0.7), (n_workers, k))
    confusions[0, 0, 1] = 0.0  # a zero confusion: log -inf, product 0
    with np.errstate(divide="ignore"):
        table = log_confusion_table(confusions)
        log_prior = np.log(np.r_[0.0, rng.dirichlet(np.ones(k - 1))])
    gold = None
    if with_gold:
        gold = np.where(rng.random(len(indptr) - 1) < 0.2, rng.integers(0, k, len(indptr) - 1), -1)
        gold[np.flatnonzero(gold == 0)] = 1  # a gold class of prior zero has no likelihood
    got, got_likelihood, want, want_likelihood, calls = _e_step_both(
        monkeypatch, indptr, columns, table, log_prior, gold
    )
    assert set(calls) == {"ds_e_product_range"}
    np.testing.assert_allclose(got, want, rtol=0, atol=TOL)
    assert got_likelihood == pytest.approx(want_likelihood, rel=TOL)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=0, atol=TOL)


def test_a_task_whose_products_would_underflow_is_computed_from_logarithms(monkeypatch):
    """A task of 600 annotations from uniform confusion rows (each class's product
    0.2^600, below the smallest double) gets the log path's posteriors (not 0/0)."""
    k = 5
    indptr, columns, n_workers = _random_codes(2, k, long_task=600)
    confusions = np.random.default_rng(2).dirichlet(np.ones(k), (n_workers, k))
    confusions[:] = np.where(np.arange(n_workers)[:, None, None] < 15, confusions, 1.0 / k)
    columns[indptr[-2] :] = (np.arange(600) % 15 + 15) * k  # workers 15-29: uniform rows
    from crowdlearn.aggregation._numba_products import PRODUCT_FLOOR

    assert (1.0 / k) ** 600 < PRODUCT_FLOOR
    table, log_prior = log_confusion_table(confusions), np.log(np.full(k, 1.0 / k))
    got, got_likelihood, want, want_likelihood, _ = _e_step_both(
        monkeypatch, indptr, columns, table, log_prior, None
    )
    np.testing.assert_allclose(got, want, rtol=0, atol=TOL)
    np.testing.assert_allclose(got[-1], 1.0 / k, rtol=0, atol=TOL)
    assert got_likelihood == pytest.approx(want_likelihood, rel=TOL)


def test_products_are_not_used_for_hard_em_two_classes_or_float32():
    table32 = np.zeros((6, 3), dtype=np.float32)
    out = np.empty((2, 3))
    assert _kernels.use_products(np.zeros((6, 3)), out, hard=False)
    assert not _kernels.use_products(np.zeros((6, 3)), out, hard=True)
    assert not _kernels.use_products(np.zeros((4, 2)), np.empty((2, 2)), hard=False)
    assert not _kernels.use_products(np.zeros((34, 17)), np.empty((2, 17)), hard=False)
    assert not _kernels.use_products(table32, out.astype(np.float32), hard=False)


@pytest.mark.parametrize("k", [3, 10])
@pytest.mark.parametrize("lone_vote", [False, True])
def test_dawid_skene_m_sums_from_registers_equal_the_row_path(monkeypatch, k, lone_vote):
    """The M-step sums with each task's posteriors in registers (3-16 classes) equal
    the row path's, from partial tables left empty (the kernel zeroes them)."""
    indptr, columns, n_workers = _random_codes(k + 1, k)
    rng = np.random.default_rng(k)
    probas = rng.dirichlet(np.ones(k), len(indptr) - 1)
    gold = np.where(rng.random(len(indptr) - 1) < 0.2, rng.integers(0, k, len(indptr) - 1), -1)
    calls: list = []
    partial_table = _kernels._partial_table

    def dirty(n_columns, k, dtype, zeroed=True):  # what np.empty may hand out
        table = partial_table(n_columns, k, dtype, zeroed)
        return table if zeroed else np.full_like(table, np.nan)

    with monkeypatch.context() as patch:
        patch.setattr(_kernels, "run_ranges", _counting(calls, _kernels.run_ranges))
        patch.setattr(_kernels, "_partial_table", dirty)
        got = _kernels.ds_m_step(indptr, columns, probas, gold, lone_vote, n_workers * k)
    with monkeypatch.context() as patch:
        patch.setattr(_kernels, "PRODUCT_CLASSES", range(0))
        want = _kernels.ds_m_step(indptr, columns, probas, gold, lone_vote, n_workers * k)
    assert calls == ["ds_m_tuple_range"]
    for got_part, want_part in zip(got, want, strict=True):
        np.testing.assert_allclose(got_part, want_part, rtol=0, atol=TOL)


@pytest.mark.parametrize("k", [3, 10, 17])
def test_majority_vote_pass_counts_tasks_of_more_than_15_annotations(monkeypatch, k):
    """Counts packed 4 bits a class in a register (up to 16 classes) hold up to 15
    votes: a task with more annotations (here 40, at least 33 for class 1) is counted
    in memory; counts, labels and one-hot rows equal the NumPy path's."""
    rng = np.random.default_rng(k)
    sizes = rng.choice([0, 1, 3, 5, 40], size=300)
    task = np.repeat(np.arange(300), sizes)
    worker = np.concatenate([np.arange(size) for size in sizes])  # one label a worker
    label = rng.integers(0, k, len(task))
    label[(np.repeat(sizes, sizes) == 40) & (worker < 33)] = 1
    data = CrowdData(task, worker, label, n_classes=k, n_tasks=300, n_workers=40)
    for params in ({}, {"tie_break": "lowest"}):
        reference, fused = _majority_both_ways(data, params, monkeypatch)
        assert fused.vote_counts_.max() >= 33  # more than 4 bits hold
        np.testing.assert_array_equal(fused.vote_counts_, reference.vote_counts_)
        np.testing.assert_array_equal(fused.labels_, reference.labels_)
        np.testing.assert_array_equal(fused.probas_, reference.probas_)


def test_confusions_in_one_pass_equal_the_numpy_steps():
    """``ds_confusions`` (the M-step's matrices from the sums, one pass) gives the
    NumPy steps' rows: the transpose, the pseudo-counts, the floor, the division; a
    NaN stays NaN. Large tables only, once the kernels are loaded (None otherwise)."""
    from crowdlearn.aggregation._design import FLOOR, normalise_rows

    n_workers, k = 1100, 10  # 110,000 cells: at least MIN_LOADED
    rng = np.random.default_rng(0)
    counts = rng.gamma(0.3, 5.0, (n_workers * k, k))
    counts[1, 2] = -5.0  # cell (worker 0, class 2, label 1): below the floor
    counts[5, 3] = np.nan
    pseudo = 0.1 + 4.0 * np.eye(k)
    assert _kernels.available()
    got = _kernels.ds_confusions(counts, pseudo, FLOOR)
    want = normalise_rows(counts.reshape(n_workers, k, k).transpose(0, 2, 1) + pseudo)
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)
    assert np.isnan(got[0, 3]).all() and not np.isnan(got[1]).any()
    row = np.maximum(counts[:k, 2] + pseudo[2], FLOOR)  # worker 0, true class 2
    assert got[0, 2, 1] == pytest.approx(FLOOR / row.sum(), rel=1e-14)
    assert _kernels.ds_confusions(counts[: 10 * k], pseudo, FLOOR) is None  # small


def _majority_both_ways(data, params, monkeypatch):
    """MajorityVote(**params) fitted on ``data`` on the NumPy path, then on the one-pass
    kernel (checked to have run), each from fresh vote counts."""
    data.__dict__.pop("vote_counts", None)
    with monkeypatch.context() as patch:
        patch.setenv("CROWDLEARN_NO_NUMBA", "1")
        reference = MajorityVote(**params).fit(data)
    data.__dict__.pop("vote_counts", None)
    with monkeypatch.context() as patch:
        patch.setattr(_kernels, "MIN_ANNOTATIONS", 0)
        calls: list[str] = []
        patch.setattr(_kernels, "run_ranges_each", _counting(calls, _kernels.run_ranges_each))
        fused = MajorityVote(**params).fit(data)
    assert calls == ["majority_range"], "the one-pass kernel did not run"
    return reference, fused
