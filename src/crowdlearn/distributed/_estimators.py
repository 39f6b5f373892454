"""Dask versions of the aggregation methods: the in-memory estimators' EM loop, with
each step a map over partitions and a reduce of sufficient statistics.

Per iteration (Dawid-Skene; one-coin is the same with its own statistics):

1. map: on each partition, :func:`~crowdlearn.aggregation.dawid_skene.confusion_statistics`
   of the partition's task block and its current posteriors (a future on the worker);
2. reduce: the statistics are summed (one small task) and brought to the client,
   which sets the parameters with the in-memory estimator's own ``_set_parameters``;
3. map: :func:`~crowdlearn.aggregation.dawid_skene.posterior_block` on each partition
   with the broadcast parameters gives the new posteriors (kept on the workers) and
   the partition's log-likelihood (summed on the client for the stopping rule).

The per-task posteriors never leave the workers during the fit; ``predict_proba``
collects them, ``write_parquet`` writes them from the workers, keyed by task id.
"""

from __future__ import annotations

import asyncio
import contextlib
import operator
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from crowdlearn._atomic import atomic_directory
from crowdlearn.aggregation import dawid_skene, glad, majority_vote, one_coin, wawa
from crowdlearn.aggregation._base import (
    IterativeAggregator,
    _as_crowd_data,
    break_ties,
    float_dtype,
)
from crowdlearn.aggregation._blocks import block_design, block_vote_counts, frequencies
from crowdlearn.aggregation._correctness import correctness_scores
from crowdlearn.aggregation._design import log_confusion_table, normalise_log, normalise_rows
from crowdlearn.aggregation._frames import id_index, present, restore_arrays
from crowdlearn.aggregation.dawid_skene import sum_statistics
from crowdlearn.aggregation.weighted_vote import vote_shares
from crowdlearn.distributed._partitions import (
    DistributedCrowd,
    Partition,
    distribute,
    is_dask_frame,
)


class DistributedFitError(RuntimeError):
    """A distributed fit failed (a worker died, the cluster restarted): no result."""


# ------------------------------------------------------------------ tasks on workers


def _initial_posteriors(part: Partition, k: int, dtype: str, hard: bool) -> np.ndarray:
    return frequencies(block_vote_counts(part.block, k), np.dtype(dtype), hard)


def _ds_statistics(
    part: Partition, probas: np.ndarray, n_workers: int, k: int, lone_labels: str = "em"
) -> tuple:
    design = block_design(part.block, n_workers, k, probas.dtype)
    return dawid_skene.confusion_statistics(
        design,
        part.block,
        probas,
        lone_labels,  # type: ignore[arg-type]
    )


def _ds_posteriors(part: Partition, params: tuple, n_workers: int, k: int, hard: bool) -> tuple:
    table, log_prior = params
    design = block_design(part.block, n_workers, k, table.dtype)
    return dawid_skene.posterior_block(design, table, log_prior, None, hard)


def _one_coin_statistics(part: Partition, probas: np.ndarray, n_workers: int) -> tuple:
    return one_coin.skill_statistics(part.block, probas, n_workers)


def _one_coin_posteriors(part: Partition, params: tuple) -> tuple:
    skills, priors = params
    return one_coin.one_coin_posterior_block(part.block, skills, priors)


def _reduce(*parts: tuple) -> tuple:
    return sum_statistics(parts)


def _write_part(
    part: Partition,
    state: np.ndarray,
    counts: bool,
    tie_break: str,
    seed: int | None,
    classes: np.ndarray,
    path: str,
) -> int:
    labels = break_ties(state, tie_break, seed)  # type: ignore[arg-type]
    probas = np.eye(len(classes))[labels] if counts else state
    frame = pd.DataFrame({"task": part.task_ids, "label": classes[labels]})
    for code, name in enumerate(classes):
        frame[f"proba_{name}"] = probas[:, code]
    frame.to_parquet(path, index=False)
    return len(frame)


# ------------------------------------------------------------------ estimators


class _DistributedMixin:
    """Fit on a cluster and hand back results: shared by the Dask estimators.

    After ``fit``: ``posteriors_`` (one future per partition, on the workers),
    ``crowd_`` (the :class:`DistributedCrowd`), ``classes_`` and ``worker_ids_``.
    ``predict_proba()``/``predict()``/``task_ids_`` collect the posteriors to the
    client (sorted by task id); ``write_parquet(path)`` writes them from the workers.

    Results follow the input, as in memory (``BaseAggregator._present``): fitted on a
    pandas or Dask DataFrame, the per-worker attributes and ``priors_`` become pandas
    objects keyed by id at the end of the fit, and ``predict_proba()``/``probas_``,
    ``predict()``/``labels_`` (and GLAD's ``betas_``) are keyed by task id when they
    are collected; fitted on a CrowdData, a Parquet path or a DistributedCrowd, arrays.
    """

    tie_break: str
    random_state: int | None
    #: Whether the workers hold vote counts (MV) rather than posteriors.
    _holds_counts = False

    def fit(self, data: Any, client: Any = None, npartitions: int | None = None) -> Any:
        """Fit on a cluster.

        Parameters
        ----------
        data : CrowdData, DataFrame, dask DataFrame or Parquet path
            A CrowdData, a pandas or Dask DataFrame with columns ``task``, ``worker``
            and ``label`` (the results are then pandas objects keyed by id), a Parquet
            file or directory of such a table, or a :class:`DistributedCrowd`.
        client : distributed.Client, optional
            Default: the current client.
        npartitions : int, optional
            Partitions of a CrowdData or pandas DataFrame (default: the cluster's
            threads), or of a shuffled Dask DataFrame.

        Returns
        -------
        self

        Raises
        ------
        DistributedFitError
            When a worker dies or the cluster restarts during the fit (no partial
            result is kept).
        """
        as_frames = isinstance(data, pd.DataFrame) or is_dask_frame(data)
        if isinstance(data, pd.DataFrame):
            data = _as_crowd_data(data, type(self).__name__)  # the in-memory reading
        restore_arrays(self)  # a refit starts from arrays, whatever the last fit had
        self._collected = None
        crowd = distribute(data, client=client, npartitions=npartitions)
        self.crowd_ = crowd
        self.classes_ = crowd.classes
        self.worker_ids_ = crowd.worker_ids
        self._fit_crowd(crowd)
        self._present(as_frames)
        return self

    def _fit_crowd(self, crowd: DistributedCrowd) -> None:
        """The fit proper on the distributed annotations (sets ``posteriors_``)."""
        raise NotImplementedError

    def _present(self, as_frames: bool) -> None:
        """The in-memory convention's pandas forms of the client-side results (the
        per-task ones are keyed when collected)."""
        present(self, self._parameter_forms() if as_frames else {}, as_frames)  # type: ignore[attr-defined]

    def fit_predict(self, data: Any, client: Any = None, npartitions: int | None = None) -> Any:
        """Fit and return ``labels_`` (class codes; for a DataFrame, a Series of class
        ids indexed by task id, name ``label``). Collects the results to the client."""
        return self.fit(data, client=client, npartitions=npartitions).labels_

    def fit_predict_proba(
        self, data: Any, client: Any = None, npartitions: int | None = None
    ) -> Any:
        """Fit and return ``probas_`` (for a DataFrame, a DataFrame indexed by task id
        with one column per class id). Collects the results to the client."""
        return self.fit(data, client=client, npartitions=npartitions).probas_

    def _gather(self, futures: list) -> list:
        with self._failing_cleanly():
            return self.crowd_.client.gather(futures)

    @contextlib.contextmanager
    def _failing_cleanly(self) -> Iterator[None]:
        """Turn any failure of the cluster (a dead worker, a restart: lost or cancelled
        futures) into a :class:`DistributedFitError` and drop the partial result."""
        try:
            yield
        except DistributedFitError:
            self.posteriors_ = []
            raise
        except (Exception, asyncio.CancelledError) as exc:
            self.posteriors_ = []
            self._collected = None
            raise DistributedFitError(
                f"{type(self).__name__}: the distributed computation failed "
                f"({type(exc).__name__}: {exc}); no result was kept"
            ) from exc

    def _map(self, function: Any, *args: Any) -> list:
        client = self.crowd_.client
        return [client.submit(function, part, *args, pure=False) for part in self.crowd_.parts]

    def _map_with(self, function: Any, states: list, *args: Any) -> list:
        client = self.crowd_.client
        return [
            client.submit(function, part, state, *args, pure=False)
            for part, state in zip(self.crowd_.parts, states, strict=True)
        ]

    def _reduce(self, futures: list) -> tuple:
        client = self.crowd_.client
        return self._gather(client.submit(_reduce, *futures, pure=False))

    def _collect(self) -> tuple[np.ndarray, np.ndarray]:
        if getattr(self, "_collected", None) is None:
            if not hasattr(self, "posteriors_"):
                from sklearn.exceptions import NotFittedError

                raise NotFittedError(f"{type(self).__name__} is not fitted yet; call fit(data)")
            client = self.crowd_.client
            ids = self._gather(
                [client.submit(_task_ids, p, pure=False) for p in self.crowd_.parts]
            )
            probas = self._gather(self.posteriors_)
            task_ids = np.concatenate(ids)
            order = np.argsort(task_ids, kind="stable")
            self._collected = (task_ids[order], self._output(np.concatenate(probas)[order]))
        return self._collected

    def _output(self, probas: np.ndarray) -> np.ndarray:
        """Posteriors as returned by ``predict_proba`` (MV turns counts into one-hots)."""
        return probas

    @property
    def task_ids_(self) -> np.ndarray:
        """Task ids, sorted, in the order of ``predict_proba()`` (collects)."""
        return self._collect()[0]

    def predict_proba(self) -> Any:
        """Posterior class probabilities (n_tasks, K), rows in ``task_ids_`` order (after
        a DataFrame fit: a DataFrame indexed by task id, one column per class id).

        This brings every posterior to the client; for results larger than its memory,
        use :meth:`write_parquet`.
        """
        return self._derived("probas_", self._collect()[1], "task")  # type: ignore[attr-defined]

    def predict(self) -> Any:
        """Class codes (rows in ``task_ids_`` order), ties broken as in memory (after a
        DataFrame fit: a Series of class ids indexed by task id, name ``label``)."""
        task_ids, probas = self._collect()
        codes = break_ties(probas, self.tie_break, self.random_state)  # type: ignore[arg-type]
        if "_fitted_arrays" not in self.__dict__:
            return codes
        return self._keyed_labels(codes, id_index(task_ids, "task"))  # type: ignore[attr-defined]

    @property
    def probas_(self) -> Any:
        """Same as :meth:`predict_proba` (collects)."""
        return self.predict_proba()

    @property
    def labels_(self) -> Any:
        """Same as :meth:`predict` (collects)."""
        return self.predict()

    def write_parquet(self, path: str | Path) -> Path:
        """Write the posteriors from the workers: a directory with one file per partition
        and columns ``task`` (id), ``label`` (class id) and ``proba_<class>``.

        The directory appears only complete (written under a temporary name, then
        renamed); the workers must see the same filesystem as the client. Labels break
        ties with ``tie_break``; a random tie-break is seeded per partition here
        (``random_state + partition``), so tied tasks may get other labels than
        :meth:`predict`.
        """
        if not hasattr(self, "posteriors_") or not self.posteriors_:
            raise DistributedFitError(f"{type(self).__name__} has no result to write")
        client = self.crowd_.client
        target = Path(path).resolve()
        with self._failing_cleanly(), atomic_directory(target) as tmp:
            writes = []
            for index, (part, state) in enumerate(
                zip(self.crowd_.parts, self.posteriors_, strict=True)
            ):
                seed = None if self.random_state is None else self.random_state + index
                file = str(tmp / f"part-{index:05d}.parquet")
                writes.append(
                    client.submit(
                        _write_part,
                        part,
                        state,
                        self._holds_counts,
                        self.tie_break,
                        seed,
                        self.classes_,
                        file,
                        pure=False,
                    )
                )
            self._gather(writes)
        return target


def _task_ids(part: Partition) -> np.ndarray:
    return part.task_ids


class _IterativeMixin(_DistributedMixin, IterativeAggregator):
    """The in-memory EM loop (history, tolerance, progress) over a DistributedCrowd."""

    def _fit_crowd(self, crowd: DistributedCrowd) -> None:
        """Run EM on the cluster (see :meth:`_DistributedMixin.fit`)."""
        with self._failing_cleanly():
            self._fit(crowd)  # IterativeAggregator's loop: _initialize, then _m_step/_e_step

    def _initialize(self, crowd: DistributedCrowd, **_: Any) -> None:
        self._dtype = float_dtype(self.dtype)
        hard = getattr(self, "init", "naive_soft") == "majority_vote"
        self.posteriors_ = self._map(_initial_posteriors, crowd.n_classes, self._dtype.name, hard)
        self._initial = None

    def _posterior_step(self, function: Any, params: tuple, *args: Any) -> float:
        client = self.crowd_.client
        [shared] = client.scatter([params], broadcast=True, hash=False)
        results = self._map(function, shared, *args)
        self.posteriors_ = [client.submit(operator.itemgetter(0), r, pure=False) for r in results]
        likelihoods = self._gather(
            [client.submit(operator.itemgetter(1), r, pure=False) for r in results]
        )
        return float(sum(likelihoods))


class DawidSkene(_IterativeMixin, dawid_skene.DawidSkene):
    """Dawid-Skene on a Dask cluster: same parameters and results as
    :class:`crowdlearn.aggregation.DawidSkene` (posteriors equal to rounding).

    ``fit(data, client=None, npartitions=None)`` takes a CrowdData, a pandas or Dask
    DataFrame of (task, worker, label) or a Parquet path. Each partition is one task
    block: ``chunk_size`` is not used (the partition size bounds a worker's memory),
    and ``gold`` / ``initial_confusions`` are not supported. Attributes as in memory
    (``confusions_``, ``priors_``, ``history_``, ``n_iter_``, ``converged_``; after a
    fit on a pandas or Dask DataFrame, keyed by id as in memory), plus
    ``posteriors_`` (futures), ``task_ids_`` and :meth:`write_parquet`.
    """

    def _m_step(self, crowd: DistributedCrowd) -> None:
        stats = self._map_with(
            _ds_statistics, self.posteriors_, crowd.n_workers, crowd.n_classes, self.lone_labels
        )
        counts, totals = self._reduce(stats)
        self._set_parameters(counts, totals, crowd.n_workers)

    def _e_step(self, crowd: DistributedCrowd) -> float:
        params = (
            log_confusion_table(self.confusions_),
            np.log(self.priors_),
        )
        return self._posterior_step(
            _ds_posteriors, params, crowd.n_workers, crowd.n_classes, self.hard
        )


class OneCoinDawidSkene(_IterativeMixin, one_coin.OneCoinDawidSkene):
    """One-coin Dawid-Skene on a Dask cluster; see :class:`DawidSkene` (distributed)
    and :class:`crowdlearn.aggregation.OneCoinDawidSkene`."""

    def _m_step(self, crowd: DistributedCrowd) -> None:
        stats = self._map_with(_one_coin_statistics, self.posteriors_, crowd.n_workers)
        self._set_parameters(*self._reduce(stats))

    def _e_step(self, crowd: DistributedCrowd) -> float:
        return self._posterior_step(_one_coin_posteriors, (self.skills_, self.priors_))


class NaiveSoft(_DistributedMixin, majority_vote.NaiveSoft):
    """Vote frequencies on a Dask cluster (one map, no reduce)."""

    def _fit_crowd(self, crowd: DistributedCrowd) -> None:
        """Count the votes of each partition's tasks."""
        self.posteriors_ = self._map(_initial_posteriors, crowd.n_classes, "float64", False)


def _vote_counts(part: Partition, k: int) -> np.ndarray:
    return block_vote_counts(part.block, k)


class MajorityVote(_DistributedMixin, majority_vote.MajorityVote):
    """Majority vote on a Dask cluster. The workers keep vote counts;
    ``predict_proba()`` collects them and breaks ties exactly as in memory (so the
    results are equal, random tie-break included); :meth:`write_parquet` breaks ties
    per partition."""

    _holds_counts = True

    def _fit_crowd(self, crowd: DistributedCrowd) -> None:
        """Count the votes of each partition's tasks."""
        self.posteriors_ = self._map(_vote_counts, crowd.n_classes)

    def _output(self, probas: np.ndarray) -> np.ndarray:
        majority = break_ties(probas, self.tie_break, self.random_state)
        return np.eye(probas.shape[1])[majority]


# ------------------------------------------------------------------ Wawa


def _wawa_agreement(part: Partition, k: int, n_workers: int) -> tuple:
    """Per worker, the number of its annotations that equal the majority vote (ties to
    the lowest class code, as in memory) and its number of annotations."""
    block = part.block
    majority = block_vote_counts(block, k).argmax(axis=1)
    right = block.label == majority[block.task]
    return (
        np.bincount(block.worker, weights=right, minlength=n_workers),
        np.bincount(block.worker, minlength=n_workers).astype(np.float64),
    )


def _wawa_posteriors(part: Partition, skills: np.ndarray, k: int) -> np.ndarray:
    """The skill-weighted vote shares of one partition's tasks."""
    block = part.block
    cells = block.task.astype(np.int64) * k + block.label
    scores = np.bincount(cells, weights=skills[block.worker], minlength=block.n_tasks * k)
    return vote_shares(scores.reshape(block.n_tasks, k))


class Wawa(_DistributedMixin, wawa.Wawa):
    """Wawa on a Dask cluster; see :class:`crowdlearn.aggregation.Wawa`.

    One map-reduce counts, per worker, the annotations that agree with their task's
    majority vote (a task never spans partitions, so each partition votes on its own);
    the client sets ``skills_``, broadcasts them, and a map computes each partition's
    skill-weighted vote shares (kept on the workers). ``chunk_size`` is not used.
    """

    def _fit_crowd(self, crowd: DistributedCrowd) -> None:
        """Worker skills from one map-reduce, then the weighted votes (one map)."""
        k, n_workers = crowd.n_classes, crowd.n_workers
        agree, totals = self._reduce(self._map(_wawa_agreement, k, n_workers))
        self.skills_ = np.divide(agree, totals, out=np.zeros(n_workers), where=totals > 0)
        [shared] = crowd.client.scatter([self.skills_], broadcast=True, hash=False)
        self.posteriors_ = self._map(_wawa_posteriors, shared, k)


# ------------------------------------------------------------------ GLAD


def _glad_log_betas(part: Partition, mean: float) -> np.ndarray:
    return np.full(part.block.n_tasks, float(mean))


def _glad_posteriors(
    part: Partition, log_betas: np.ndarray, params: tuple, log_k_minus_1: float, dtype: str
) -> tuple:
    """GLAD's E-step on one partition (the in-memory ``GLAD._e_step`` on its block):
    posteriors, log-likelihood, and the partition's sum of squared ``b_i - mean``."""
    alphas, priors, mean = params
    block = part.block
    x = alphas[block.worker] * np.exp(log_betas[block.task])
    log_correct = glad.log_sigmoid(x)
    log_wrong = (log_correct - x - log_k_minus_1).astype(dtype)
    log_correct = log_correct.astype(dtype)
    log_scores = correctness_scores(
        block.task,
        block.label,
        block.n_tasks,
        len(priors),
        log_correct,
        log_wrong,
        np.log(priors),
    )
    probas, log_norm = normalise_log(log_scores)
    return probas, float(log_norm.sum()), float(np.sum((log_betas - mean) ** 2))


def _glad_right(part: Partition, probas: np.ndarray) -> np.ndarray:
    return probas[part.block.task, part.block.label].astype(np.float64)


def _glad_alpha_sums(
    part: Partition,
    right: np.ndarray,
    log_betas: np.ndarray,
    alphas: np.ndarray,
    derivatives: bool,
    n_workers: int,
    log_k_minus_1: float,
) -> list:
    """Per-worker sums of GLAD's Q terms (and derivatives) in ``alpha`` on one partition."""
    block = part.block
    beta = np.exp(log_betas)[block.task]
    terms = glad._QTerms(right, log_k_minus_1)
    return [
        np.bincount(block.worker, weights=weights, minlength=n_workers)
        for weights in terms.by_alpha(alphas[block.worker], beta, derivatives)
    ]


def _glad_beta_step(
    part: Partition,
    right: np.ndarray,
    log_betas: np.ndarray,
    alphas: np.ndarray,
    mean: float,
    log_k_minus_1: float,
) -> tuple:
    """The in-memory Newton step on the ``b_i`` of one partition's tasks (local: a task
    never spans partitions). Returns the new ``b`` and the largest step."""
    block = part.block
    log_betas = log_betas.copy()
    alpha = alphas[block.worker]
    terms = glad._QTerms(right, log_k_minus_1)
    step = glad._safeguarded_step(
        log_betas,
        mean,
        block.task,
        lambda values, derivatives=True: terms.by_log_beta(
            alpha, np.exp(values)[block.task], derivatives
        ),
    )
    return log_betas, step


def _class_mass(part: Partition, probas: np.ndarray) -> np.ndarray:
    return part.block.annotated.astype(probas.dtype) @ probas


def _exp(values: np.ndarray) -> np.ndarray:
    return np.exp(values)


class GLAD(_IterativeMixin, glad.GLAD):
    """GLAD on a Dask cluster; see :class:`DawidSkene` (distributed) and
    :class:`crowdlearn.aggregation.GLAD`.

    The task parameters ``b_i`` live with their partition (a task never spans
    partitions), so their Newton steps run locally with the in-memory
    ``_safeguarded_step``; each worker-ability step (and each of its step halvings) is
    a map-reduce of per-worker sums fed to the in-memory ``newton_step``.
    ``betas_`` collects the task parameters (rows in ``task_ids_`` order).
    """

    def _initialize(self, crowd: DistributedCrowd, **_: Any) -> None:
        if self.class_prior not in ("uniform", "learn"):
            raise ValueError(f"class_prior must be 'uniform' or 'learn', got {self.class_prior!r}")
        self._dtype = float_dtype(self.dtype)
        self._log_k_minus_1 = float(np.log(max(crowd.n_classes - 1, 1)))
        self.alphas_ = np.full(crowd.n_workers, float(self.alpha_prior_mean))
        self.priors_ = np.full(crowd.n_classes, 1.0 / crowd.n_classes)
        self._log_beta_parts = self._map(_glad_log_betas, self.log_beta_prior_mean)
        self._e_step(crowd)

    def _e_step(self, crowd: DistributedCrowd) -> float:
        client = self.crowd_.client
        params = (self.alphas_, self.priors_, float(self.log_beta_prior_mean))
        [shared] = client.scatter([params], broadcast=True, hash=False)
        results = self._map_with(
            _glad_posteriors,
            self._log_beta_parts,
            shared,
            self._log_k_minus_1,
            self._dtype.name,
        )
        self.posteriors_ = [client.submit(operator.itemgetter(0), r, pure=False) for r in results]
        likelihoods = self._gather(
            [client.submit(operator.itemgetter(1, 2), r, pure=False) for r in results]
        )
        log_likelihood = sum(value for value, _ in likelihoods)
        squares = np.sum((self.alphas_ - self.alpha_prior_mean) ** 2)
        squares += sum(square for _, square in likelihoods)
        return float(log_likelihood) - 0.5 * float(squares)

    def _m_step(self, crowd: DistributedCrowd) -> None:
        client = self.crowd_.client
        rights = self._map_with(_glad_right, self.posteriors_)
        log_betas = self._log_beta_parts

        def sums(alphas: np.ndarray, derivatives: bool = True) -> list:
            [shared] = client.scatter([alphas.copy()], broadcast=True, hash=False)
            parts = [
                client.submit(
                    _glad_alpha_sums,
                    part,
                    right,
                    betas,
                    shared,
                    derivatives,
                    crowd.n_workers,
                    self._log_k_minus_1,
                    pure=False,
                )
                for part, right, betas in zip(crowd.parts, rights, log_betas, strict=True)
            ]
            return list(self._reduce(parts))

        for _ in range(self.m_step_max_iter):
            alpha_step = glad.newton_step(self.alphas_, self.alpha_prior_mean, sums)
            [shared] = client.scatter([self.alphas_.copy()], broadcast=True, hash=False)
            steps = [
                client.submit(
                    _glad_beta_step,
                    part,
                    right,
                    betas,
                    shared,
                    float(self.log_beta_prior_mean),
                    self._log_k_minus_1,
                    pure=False,
                )
                for part, right, betas in zip(crowd.parts, rights, log_betas, strict=True)
            ]
            log_betas = [client.submit(operator.itemgetter(0), s, pure=False) for s in steps]
            beta_step = max(
                self._gather([client.submit(operator.itemgetter(1), s, pure=False) for s in steps])
            )
            if max(alpha_step, beta_step) < 1e-6:
                break
        self._log_beta_parts = log_betas
        if self.class_prior == "learn":
            (mass,) = self._reduce(
                [
                    client.submit(
                        _tuple_of, client.submit(_class_mass, p, q, pure=False), pure=False
                    )
                    for p, q in zip(crowd.parts, self.posteriors_, strict=True)
                ]
            )
            self.priors_ = normalise_rows(mass)

    @property
    def betas_(self) -> Any:
        """Task inverse difficulties ``exp(b_i)``, rows in ``task_ids_`` order (collects;
        a Series indexed by task id after a DataFrame fit)."""
        client = self.crowd_.client
        ids = self._gather([client.submit(_task_ids, p, pure=False) for p in self.crowd_.parts])
        values = self._gather([client.submit(_exp, b, pure=False) for b in self._log_beta_parts])
        order = np.argsort(np.concatenate(ids), kind="stable")
        return self._derived("betas_", np.concatenate(values)[order], "task")


def _tuple_of(value: np.ndarray) -> tuple:
    return (value,)
