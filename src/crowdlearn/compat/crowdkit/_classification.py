"""crowd-kit's classification aggregators (and BinaryRelevance) on crowdlearn's engines."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pandas as pd

from crowdlearn.compat.crowdkit._common import (
    _accuracy,
    _Classification,
    _code,
    _Coded,
    _confusions_from_errors,
    _errors,
    _is_empty,
    _labels,
    _m_step_confusions,
    _per_worker,
    _probas,
    _skill_weights,
    _vote,
)
from crowdlearn.data import CrowdData

# ---------------------------------------------------------------- majority votes


class MajorityVote(_Classification):
    """crowd-kit's ``MajorityVote``: vote shares, optionally weighted by worker skills.

    ``probas_`` holds each label's share of the (skill-weighted) votes; ``skills_`` is
    each worker's agreement with the result; ties go to the first label in sorted order.
    Built on :func:`crowdlearn.aggregation.weighted_vote.weighted_scores`, the engine of
    :class:`~crowdlearn.aggregation.WeightedMajorityVote`.
    """

    def __init__(
        self, default_skill: float | None = None, on_missing_skill: str = "error"
    ) -> None:
        self.default_skill = default_skill
        self.on_missing_skill = on_missing_skill
        self.labels_ = None
        self.probas_ = None
        self.skills_: pd.Series | None = None

    def fit(self, data: pd.DataFrame, skills: pd.Series | None = None) -> MajorityVote:
        """Vote; ``skills`` (a Series indexed by worker) weights the votes."""
        if skills is not None and self.on_missing_skill == "ignore":
            data = data[data["worker"].isin(skills.index)]  # drop unknown workers' rows
            if len(data) == 0:
                raise ValueError("no assignment of a worker with a known skill")
        coded = _code(data)
        weights = _skill_weights(coded, skills, self.on_missing_skill, self.default_skill)
        probas = _vote(coded, weights)
        labels = probas.argmax(axis=1)
        self.probas_ = _probas(coded, probas)
        self.labels_ = _labels(coded, labels)
        self.skills_ = _accuracy(coded, labels)
        return self

    def fit_predict(self, data: pd.DataFrame, skills: pd.Series | None = None) -> pd.Series:  # type: ignore[override]
        """Fit and return ``labels_``."""
        return self.fit(data, skills).labels_

    def fit_predict_proba(  # type: ignore[override]
        self, data: pd.DataFrame, skills: pd.Series | None = None
    ) -> pd.DataFrame:
        """Fit and return ``probas_``."""
        return self.fit(data, skills).probas_


class _SkillVote(_Classification):
    """Aggregators that learn ``skills_`` in ``fit`` and vote with them in ``predict``."""

    skills_: pd.Series | None

    def _apply(self, data: pd.DataFrame) -> None:
        if self.skills_ is None:
            raise RuntimeError(f"{type(self).__name__} is not fitted: call fit first")
        coded = _code(data)
        weights = _skill_weights(coded, self.skills_, "error", None)
        probas = _vote(coded, weights)
        self.probas_ = _probas(coded, probas)
        self.labels_ = _labels(coded, probas.argmax(axis=1))

    def predict(self, data: pd.DataFrame) -> pd.Series:
        """Labels of the tasks of ``data`` by the skill-weighted vote."""
        self._apply(data)
        return self.labels_

    def predict_proba(self, data: pd.DataFrame) -> pd.DataFrame:
        """Weighted vote shares of the tasks of ``data``."""
        self._apply(data)
        return self.probas_

    def fit_predict(self, data: pd.DataFrame) -> pd.Series:
        """Fit and predict on the same data."""
        return self.fit(data).predict(data)  # type: ignore[attr-defined]

    def fit_predict_proba(self, data: pd.DataFrame) -> pd.DataFrame:
        """Fit and predict probabilities on the same data."""
        return self.fit(data).predict_proba(data)  # type: ignore[attr-defined]


class Wawa(_SkillVote):
    """crowd-kit's ``Wawa``: skills are agreement with the majority vote (crowdlearn's
    :class:`~crowdlearn.aggregation.Wawa`); labels are the skill-weighted vote."""

    def __init__(self) -> None:
        self.labels_ = None
        self.probas_ = None
        self.skills_ = None

    def fit(self, data: pd.DataFrame) -> Wawa:
        """Learn the skills."""
        from crowdlearn.aggregation import Wawa as Native

        coded = _code(data)
        model = Native(tie_break="lowest").fit(coded.crowd)
        self.skills_ = _per_worker(coded, model.skills_, "skill")
        return self


class ZeroBasedSkill(_SkillVote):
    """crowd-kit's ``ZeroBasedSkill`` on :class:`~crowdlearn.aggregation.ZeroBasedSkill`."""

    def __init__(
        self,
        n_iter: int = 100,
        lr_init: float = 1.0,
        lr_steps_to_reduce: int = 20,
        lr_reduce_factor: float = 0.5,
        eps: float = 1e-5,
    ) -> None:
        self.n_iter = n_iter
        self.lr_init = lr_init
        self.lr_steps_to_reduce = lr_steps_to_reduce
        self.lr_reduce_factor = lr_reduce_factor
        self.eps = eps
        self.labels_ = None
        self.probas_ = None
        self.skills_ = None

    def fit(self, data: pd.DataFrame) -> ZeroBasedSkill:
        """Learn the skills."""
        from crowdlearn.aggregation import ZeroBasedSkill as Native

        coded = _code(data)
        model = Native(
            max_iter=self.n_iter,
            lr_init=self.lr_init,
            lr_steps_to_reduce=self.lr_steps_to_reduce,
            lr_reduce_factor=self.lr_reduce_factor,
            eps=self.eps,
            tie_break="lowest",
        ).fit(coded.crowd)
        self.skills_ = _per_worker(coded, model.skills_, "skill")
        return self


class GoldMajorityVote(_SkillVote):
    """crowd-kit's ``GoldMajorityVote``: skills are accuracies on the gold tasks
    (:class:`crowdlearn.aggregation.GoldMajorityVote`), labels the weighted vote."""

    def __init__(self) -> None:
        self.labels_ = None
        self.probas_ = None
        self.skills_ = None

    def fit(self, data: pd.DataFrame, true_labels: pd.Series) -> GoldMajorityVote:  # type: ignore[override]
        """Measure each worker on the tasks of ``true_labels`` (indexed by task)."""
        from crowdlearn.aggregation.gold_majority_vote import gold_accuracy

        if isinstance(true_labels, pd.DataFrame):
            raise KeyError("true_labels must be a Series of labels indexed by task")
        coded = _code(data)
        gold = pd.Series(true_labels).reindex(coded.tasks)
        gold_codes = coded.classes.get_indexer(gold)
        skills = _per_worker(coded, gold_accuracy(coded.crowd, gold_codes), "skill")
        self.skills_ = skills.dropna()
        return self

    def fit_predict(self, data: pd.DataFrame, true_labels: pd.Series) -> pd.Series:  # type: ignore[override]
        """Fit on the gold tasks and label every task of ``data``."""
        return self.fit(data, true_labels).predict(data)

    def fit_predict_proba(  # type: ignore[override]
        self, data: pd.DataFrame, true_labels: pd.Series
    ) -> pd.DataFrame:
        """Fit on the gold tasks and return the vote shares of every task."""
        return self.fit(data, true_labels).predict_proba(data)


# --------------------------------------------------------------- Dawid-Skene family

_STRATEGIES = {None: "assign", "assign": "assign", "addition": "add"}
_EPS = 1e-10


class _CrowdKitLoop:
    """crowd-kit's EM loop over a crowdlearn engine's steps (a mixin).

    crowd-kit runs E-step, M-step, then its stopping rule on the evidence lower bound
    per annotation, ``ELBO(posteriors, parameters of their M-step)``, stopping when it
    rises by less than ``tol``; its fitted parameters are the last M-step's. The
    engines' own loop (M-step, E-step, log-likelihood) takes the same steps but stops
    elsewhere, so the subclasses keep the engine's steps and replace the loop. Each
    bound is computed from the M-step's statistics and the posteriors: nothing per
    annotation.
    """

    max_iter: int
    tol: float
    probas_: np.ndarray

    def _fit(self, data: CrowdData, **fit_params: Any) -> None:
        if self.max_iter < 0:
            raise ValueError(f"max_iter must be at least 0, got {self.max_iter}")
        self._initialize(data, **fit_params)  # type: ignore[attr-defined]
        self._m_step(data)  # type: ignore[attr-defined]
        history: list[float] = []
        previous = -np.inf
        self.converged_ = False
        for _ in range(int(self.max_iter)):
            self._e_step(data)  # type: ignore[attr-defined]
            self._m_step(data)  # type: ignore[attr-defined]
            bound = (self._joint(data) + _entropy(self.probas_)) / data.n_annotations
            history.append(bound)
            if bound - previous < self.tol:
                self.converged_ = True
                break
            previous = bound
        self.n_iter_ = len(history)
        self.history_ = pd.DataFrame(
            {"iteration": np.arange(1, len(history) + 1), "objective": history}
        )

    def _joint(self, data: CrowdData) -> float:
        raise NotImplementedError


def _entropy(probas: np.ndarray) -> float:
    return -float(np.sum(probas * np.log(np.maximum(probas, _EPS))))


def _crowdkit_engines() -> tuple[type, type]:
    """Dawid-Skene and one-coin Dawid-Skene under crowd-kit's loop (built on first use)."""
    global _ENGINES
    if _ENGINES is not None:
        return _ENGINES
    from crowdlearn.aggregation import DawidSkene as NativeDS
    from crowdlearn.aggregation import OneCoinDawidSkene as NativeOneCoin

    class CrowdKitLoopDawidSkene(_CrowdKitLoop, NativeDS):
        def _joint(self, data: CrowdData) -> float:
            k = data.n_classes
            counts = self._statistics[0].reshape(data.n_workers, k, k)  # [j, l, k]
            log_conf = np.log(np.maximum(self.confusions_, _EPS)).transpose(0, 2, 1)
            joint = float(np.sum(counts * log_conf))
            return joint + float(np.log(np.maximum(self.priors_, _EPS)) @ counts.sum(axis=(0, 1)))

    class CrowdKitLoopOneCoin(_CrowdKitLoop, NativeOneCoin):
        def _joint(self, data: CrowdData) -> float:
            # per worker: A right-label mass (the skill's numerator) of N labels
            right, totals = self._statistics[0], self._statistics[1]
            k = data.n_classes
            skill = np.clip(self.skills_, _EPS, 1 - _EPS)
            wrong = np.clip((1 - self.skills_) / max(k - 1, 1), _EPS, 1 - _EPS)
            joint = float(right @ np.log(skill) + (totals - right) @ np.log(wrong))
            labels_per_task = np.bincount(data.task, minlength=data.n_tasks)
            mass = labels_per_task @ self.probas_  # posterior mass per class, by annotation
            return joint + float(np.log(np.maximum(self.priors_, _EPS)) @ mass)

    _ENGINES = (CrowdKitLoopDawidSkene, CrowdKitLoopOneCoin)
    return _ENGINES


_ENGINES: tuple[type, type] | None = None


class DawidSkene(_Classification):
    """crowd-kit's ``DawidSkene``: the maximum-likelihood EM of Dawid and Skene (1979).

    Runs :class:`crowdlearn.aggregation.DawidSkene` in crowd-kit's mode: no Dirichlet
    prior (``smoothing=0, diagonal_prior=0``), every label counted in the M-step
    (``lone_labels="em"``), ties to the first label. ``true_labels`` pins the gold
    tasks' posteriors; ``initial_error`` (crowd-kit's ``errors_`` layout, counts or
    probabilities) replaces (``"assign"``) or adds to (``"addition"``) the first
    M-step's confusions. ``n_iter=0`` gives the majority-vote initialisation alone;
    ``tol=0`` runs ``n_iter`` iterations.
    """

    def __init__(
        self,
        n_iter: int = 100,
        tol: float = 1e-5,
        initial_error_strategy: Literal["assign", "addition"] | None = None,
    ) -> None:
        self.n_iter = n_iter
        self.tol = tol
        self.initial_error_strategy = initial_error_strategy
        self.labels_ = None
        self.probas_ = None
        self.priors_: pd.Series | None = None
        self.errors_: pd.DataFrame | None = None
        self.loss_history_: list[float] = []

    def _native(self) -> Any:
        Native = _crowdkit_engines()[0]

        if self.initial_error_strategy not in _STRATEGIES:
            raise ValueError(
                "initial_error_strategy must be 'assign', 'addition' or None, got "
                f"{self.initial_error_strategy!r}"
            )
        return Native(
            max_iter=self.n_iter,
            tol=self.tol,
            smoothing=0.0,
            diagonal_prior=0.0,
            lone_labels="em",
            initial_confusion_strategy=_STRATEGIES[self.initial_error_strategy],  # type: ignore[arg-type]
            tie_break="lowest",
            progress=False,
        )

    def fit(
        self,
        data: pd.DataFrame,
        true_labels: pd.Series | None = None,
        initial_error: pd.DataFrame | None = None,
    ) -> DawidSkene:
        """Fit by EM; see the class docstring for ``true_labels`` and ``initial_error``."""
        if _is_empty(data):
            self._set_empty()
            return self
        coded = _code(data)
        gold = None if true_labels is None else pd.Series(true_labels).reindex(coded.tasks)
        confusions = None
        if initial_error is not None and self.initial_error_strategy is not None:
            # crowd-kit ignores initial_error without a strategy
            confusions = _confusions_from_errors(coded, initial_error, self.initial_error_strategy)
        model = self._native().fit(
            coded.crowd,
            gold=None if gold is None else gold.to_numpy(),
            initial_confusions=confusions,
        )
        self._set(coded, model)
        if confusions is not None and self.n_iter == 0:
            # the initialisation alone: crowd-kit's errors_ are its first M-step's
            if self.initial_error_strategy == "assign":
                table = initial_error.clip(lower=1e-10)
                self.errors_ = table / table.groupby(level="worker", sort=False).transform("sum")
            else:
                probas = np.asarray(model.probas_, dtype=np.float64)
                self.errors_ = _errors(coded, _m_step_confusions(coded.crowd, probas, confusions))
        return self

    def _set_empty(self) -> None:
        self.probas_ = pd.DataFrame()
        self.priors_ = pd.Series(dtype=float, name="prior")
        self.errors_ = pd.DataFrame()
        self.labels_ = pd.Series(dtype=float, name="agg_label")
        self.loss_history_ = []

    def _set(self, coded: _Coded, model: Any) -> None:
        self.probas_ = _probas(coded, model.probas_)
        self.labels_ = _labels(coded, model.labels_)
        # crowd-kit's loop ends with an M-step: priors_ and errors_ are the parameters
        # of the final posteriors (the engine above ran that M-step)
        self.priors_ = pd.Series(
            np.asarray(model.priors_, dtype=np.float64), index=coded.classes, name="prior"
        )
        self.errors_ = _errors(coded, model.confusions_)
        self.loss_history_ = [float(x) for x in model.history_["objective"]]

    def fit_predict(  # type: ignore[override]
        self,
        data: pd.DataFrame,
        true_labels: pd.Series | None = None,
        initial_error: pd.DataFrame | None = None,
    ) -> pd.Series:
        """Fit and return ``labels_``."""
        return self.fit(data, true_labels, initial_error).labels_

    def fit_predict_proba(  # type: ignore[override]
        self,
        data: pd.DataFrame,
        true_labels: pd.Series | None = None,
        initial_error: pd.DataFrame | None = None,
    ) -> pd.DataFrame:
        """Fit and return ``probas_``."""
        return self.fit(data, true_labels, initial_error).probas_


class OneCoinDawidSkene(DawidSkene):
    """crowd-kit's ``OneCoinDawidSkene``: one accuracy per worker
    (:class:`crowdlearn.aggregation.OneCoinDawidSkene`); ``skills_`` holds them."""

    def __init__(
        self,
        n_iter: int = 100,
        tol: float = 1e-5,
        initial_error_strategy: Literal["assign", "addition"] | None = None,
    ) -> None:
        super().__init__(n_iter, tol, initial_error_strategy)
        self.skills_: pd.Series | None = None

    def fit(self, data: pd.DataFrame) -> OneCoinDawidSkene:  # type: ignore[override]
        """Fit by EM."""
        Native = _crowdkit_engines()[1]

        coded = _code(data)
        model = Native(max_iter=self.n_iter, tol=self.tol, tie_break="lowest", progress=False)
        model.fit(coded.crowd)
        self._set(coded, model)
        self.skills_ = _per_worker(coded, model.skills_, "skill")
        return self

    def fit_predict(self, data: pd.DataFrame) -> pd.Series:  # type: ignore[override]
        """Fit and return ``labels_``."""
        return self.fit(data).labels_

    def fit_predict_proba(self, data: pd.DataFrame) -> pd.DataFrame:  # type: ignore[override]
        """Fit and return ``probas_``."""
        return self.fit(data).probas_


# ---------------------------------------------------------------- other classifiers


class GLAD(_Classification):
    """crowd-kit's ``GLAD`` on :class:`crowdlearn.aggregation.GLAD`: ``alphas_``
    (worker abilities, indexed by worker), ``betas_`` (task easiness, indexed by task)."""

    def __init__(
        self,
        n_iter: int = 100,
        tol: float = 1e-5,
        silent: bool = True,
        labels_priors: pd.Series | None = None,
        alphas_priors_mean: pd.Series | None = None,
        betas_priors_mean: pd.Series | None = None,
        m_step_max_iter: int = 25,
        m_step_tol: float = 1e-2,
    ) -> None:
        self.n_iter = n_iter
        self.tol = tol
        self.silent = silent
        self.labels_priors = labels_priors
        self.alphas_priors_mean = alphas_priors_mean
        self.betas_priors_mean = betas_priors_mean
        self.m_step_max_iter = m_step_max_iter
        self.m_step_tol = m_step_tol
        self.labels_ = None
        self.probas_ = None
        self.alphas_: pd.Series | None = None
        self.betas_: pd.Series | None = None
        self.loss_history_: list[float] = []

    def fit(self, data: pd.DataFrame) -> GLAD:
        """Fit by EM."""
        from crowdlearn.aggregation import GLAD as Native

        for name in ("labels_priors", "alphas_priors_mean", "betas_priors_mean"):
            if getattr(self, name) is not None:
                raise NotImplementedError(
                    f"GLAD({name}=...) is not supported by the compatibility layer; "
                    "use crowdlearn.aggregation.GLAD's alpha_prior_mean/log_beta_prior_mean"
                )
        coded = _code(data)
        model = Native(
            max_iter=self.n_iter,
            tol=self.tol,
            m_step_max_iter=self.m_step_max_iter,
            tie_break="lowest",
            progress=not self.silent,
        ).fit(coded.crowd)
        self.probas_ = _probas(coded, model.probas_)
        self.labels_ = _labels(coded, model.labels_)
        self.alphas_ = _per_worker(coded, model.alphas_, "alpha")
        self.betas_ = pd.Series(
            np.asarray(model.betas_, dtype=np.float64), index=coded.tasks, name="beta"
        )
        self.loss_history_ = [float(x) for x in model.history_["objective"]]
        return self


class MACE(_Classification):
    """crowd-kit's ``MACE`` on :class:`crowdlearn.aggregation.MACE` (variational Bayes
    or EM, ``n_restarts`` random starts, ``n_iter`` iterations each)."""

    def __init__(
        self,
        n_restarts: int = 10,
        n_iter: int = 50,
        method: str = "vb",
        smoothing: float = 0.1,
        default_noise: float = 0.5,
        alpha: float = 0.5,
        beta: float = 0.5,
        random_state: int = 0,
        verbose: int = 0,
    ) -> None:
        self.n_restarts = n_restarts
        self.n_iter = n_iter
        self.method = method
        self.smoothing = smoothing
        self.default_noise = default_noise
        self.alpha = alpha
        self.beta = beta
        self.random_state = random_state
        self.verbose = verbose
        self.labels_ = None
        self.probas_ = None

    def fit(self, data: pd.DataFrame) -> MACE:
        """Fit by restarts of EM/VB."""
        from crowdlearn.aggregation import MACE as Native

        coded = _code(data)
        model = Native(
            method=self.method,  # type: ignore[arg-type]
            n_restarts=self.n_restarts,
            max_iter=self.n_iter,
            tol=0.0,
            alpha=self.alpha,
            beta=self.beta,
            default_noise=self.default_noise,
            random_state=self.random_state,
            tie_break="lowest",
            progress=bool(self.verbose),
        ).fit(coded.crowd)
        self.probas_ = _probas(coded, model.probas_, columns=None)
        self.labels_ = _labels(coded, model.labels_)
        self.spamming_ = np.asarray(model.spamming_)
        self.thetas_ = np.asarray(model.thetas_)
        self.smoothing_ = float(model._smoothing)
        return self


class KOS(_Classification):
    """crowd-kit's ``KOS`` (binary labels) on :class:`crowdlearn.aggregation.KOS`."""

    def __init__(self, n_iter: int = 100, random_state: int = 0) -> None:
        self.n_iter = n_iter
        self.random_state = random_state
        self.labels_ = None

    def fit(self, data: pd.DataFrame) -> KOS:
        """Fit by message passing."""
        from crowdlearn.aggregation import KOS as Native

        if _is_empty(data):
            self.labels_ = pd.Series([], dtype="O", name="agg_label")
            return self

        coded = _code(data)
        model = Native(
            max_iter=self.n_iter, random_state=self.random_state, tie_break="lowest"
        ).fit(coded.crowd)
        self.labels_ = _labels(coded, model.labels_)
        return self


class MMSR(_Classification):
    """crowd-kit's ``MMSR`` on :class:`crowdlearn.aggregation.MMSR`: ``skills_`` by
    worker, ``scores_`` (tasks x labels) and ``labels_``.

    The trailing parameters are crowd-kit's internal state (its attrs fields); they are
    accepted for signature compatibility and ignored.
    """

    def __init__(
        self,
        n_iter: int = 10000,
        tol: float = 1e-10,
        random_state: int | None = 0,
        observation_matrix: np.ndarray | None = None,
        covariation_matrix: np.ndarray | None = None,
        n_common_tasks: np.ndarray | None = None,
        n_workers: int = 0,
        n_tasks: int = 0,
        n_labels: int = 0,
        labels_mapping: dict[Any, int] | None = None,
        workers_mapping: dict[Any, int] | None = None,
        tasks_mapping: dict[Any, int] | None = None,
    ) -> None:
        self.n_iter = n_iter
        self.tol = tol
        self.random_state = random_state
        self.observation_matrix = observation_matrix
        self.covariation_matrix = covariation_matrix
        self.n_common_tasks = n_common_tasks
        self.n_workers = n_workers
        self.n_tasks = n_tasks
        self.n_labels = n_labels
        self.labels_mapping = labels_mapping
        self.workers_mapping = workers_mapping
        self.tasks_mapping = tasks_mapping
        self.labels_ = None
        self.skills_: pd.Series | None = None
        self.scores_: pd.DataFrame | None = None
        self.loss_history_: list[float] = []

    def fit(self, data: pd.DataFrame) -> MMSR:
        """Estimate the worker skills."""
        from crowdlearn.aggregation import MMSR as Engine

        class Native(Engine):
            """crowd-kit's random start: ``random_state``'s legacy uniform draw."""

            def _initial_vector(self, n_workers: int) -> np.ndarray:
                return np.random.RandomState(self.random_state).random_sample(n_workers)

        coded = _code(data)
        model = Native(
            max_iter=self.n_iter,
            tol=self.tol,
            random_state=self.random_state,
            tie_break="lowest",
        ).fit(coded.crowd)
        self.skills_ = _per_worker(coded, model.skills_, "skill")
        if "change" in model.history_:
            self.loss_history_ = [float(x) for x in model.history_["change"]]
        return self

    def _apply(self, data: pd.DataFrame) -> None:
        if self.skills_ is None:
            raise RuntimeError("MMSR is not fitted: call fit first")
        from crowdlearn.aggregation.weighted_vote import weighted_scores

        coded = _code(data)
        weights = _skill_weights(coded, self.skills_, "error", None)
        totals = weighted_scores(coded.crowd, weights)
        scores = totals / totals.sum(axis=1, keepdims=True)  # crowd-kit: scores / row sum
        self.scores_ = _probas(coded, scores)
        self.labels_ = _labels(coded, scores.argmax(axis=1))

    def predict(self, data: pd.DataFrame) -> pd.Series:
        """Labels by the skill-weighted vote."""
        self._apply(data)
        return self.labels_

    def predict_score(self, data: pd.DataFrame) -> pd.DataFrame:
        """Skill-weighted vote totals (tasks x labels)."""
        self._apply(data)
        return self.scores_

    def fit_predict(self, data: pd.DataFrame) -> pd.Series:
        """Fit and predict on the same data."""
        return self.fit(data).predict(data)

    def fit_predict_score(self, data: pd.DataFrame) -> pd.DataFrame:
        """Fit and return the scores on the same data."""
        return self.fit(data).predict_score(data)


# -------------------------------------------------------------------- multilabel


class BinaryRelevance:
    """crowd-kit's ``BinaryRelevance``: one binary aggregation per label.

    ``data`` has a ``label`` column of label lists (or sets/tuples); each label becomes
    a yes/no question answered by every worker who labelled the task, aggregated by a
    copy of ``base_aggregator`` (any classification class of this module). ``labels_``
    is a Series of label lists, indexed by task.
    """

    def __init__(self, base_aggregator: Any = None) -> None:
        self.base_aggregator = MajorityVote() if base_aggregator is None else base_aggregator
        self.labels_: pd.Series | None = None
        self.aggregators_: dict[Any, Any] = {}

    def fit(self, data: pd.DataFrame) -> BinaryRelevance:
        """Fit one aggregator per label."""
        import copy

        if _is_empty(data):
            self.labels_ = pd.Series(dtype=float, name="agg_label")
            return self

        frame = data[["task", "worker", "label"]]
        exploded = frame.explode("label").dropna(subset=["label"])
        classes = pd.Index(pd.unique(exploded["label"]))
        pairs = frame[["task", "worker"]].reset_index(drop=True)
        chosen = exploded.assign(_row=exploded.index)
        results: dict[Any, pd.Series] = {}
        self.aggregators_ = {}
        for cls in classes:  # one vectorised pass per label, not per row
            rows = chosen.loc[chosen["label"] == cls, "_row"]
            answer = frame.index.isin(rows)
            binary = pairs.assign(label=answer)
            aggregator = copy.deepcopy(self.base_aggregator)
            results[cls] = aggregator.fit_predict(binary)
            self.aggregators_[cls] = aggregator
        table = pd.DataFrame(results).fillna(False).astype(bool)
        stacked = table.stack()
        positive = stacked[stacked]
        lists = (
            positive.reset_index()
            .groupby(table.index.name or "level_0", sort=True)["level_1"]
            .agg(list)
        )
        labels = lists.reindex(table.index)
        labels = labels.apply(lambda x: x if isinstance(x, list) else [])
        labels.index.name = "task"
        labels.name = "agg_label"
        self.labels_ = labels
        return self

    def fit_predict(self, data: pd.DataFrame) -> pd.Series:
        """Fit and return ``labels_``."""
        self.fit(data)
        return self.labels_
