"""Self-Crowd: self-training of a Crowd Layer with class-balanced pseudo-annotations.

Shi, Li & Huang, "Learning from Crowds with Sparse and Imbalanced Annotations"
(../shared/papers/self-crowd.md). The base model is the Crowd Layer (eq. 1-2): a
classifier ``f(x)`` followed by one matrix ``W_r`` per worker, annotations predicted as
``softmax(f(x) W_r)`` and trained by the cross-entropy of the observed annotations.
Self-Crowd (Algorithm 1) then repeats rounds:

1. predict a pseudo-annotation for every (worker, task) pair the worker has not
   annotated: the most probable label of ``softmax(f(x) W_r)`` (eq. 1);
2. score each by the entropy of that distribution (eq. 3; lower is more confident);
3. per-class quotas ``M_c = t_c M`` with ``t_c`` proportional to ``1 / N'_c``, ``N'_c``
   the number of class-``c`` pseudo-annotations among all those generated (eq. 4-5);
4. add the ``M_c`` most confident pseudo-annotations of each class to the training
   data, never a pair already observed or selected (without replacement);
5. retrain the Crowd Layer on the observed and selected annotations.

Choices the paper leaves open (each a parameter):

* quotas are whole numbers: ``t_c M`` rounded by largest remainder so that they sum to
  ``M``; a class with no candidate gets no quota, and a class with fewer candidates
  than its quota gives all it has, the remainder is *not* moved to other classes
  (``M_c`` is a per-class cap, as in the paper's resampling);
* ties in entropy are broken at random (seeded);
* each round retrains the Crowd Layer from a fresh initialisation
  (``retrain="scratch"``, the paper's "retrain"), or continues from the previous
  round's weights (``retrain="continue"``, cheaper);
* stopping: a fixed number of rounds (``stopping="rounds"``, the paper's Fig. 3 runs
  14), or validation accuracy (``stopping="valid"``: keep the round with the best
  validation accuracy, stop after ``round_patience`` rounds without improvement);
* pseudo-annotations and observed annotations weigh the same in the loss (eq. 2 over
  the combined set).

The baselines of the paper are the same procedure with another ``selection``:
``"confidence"`` (Self-Crowd_c: the ``M`` lowest entropies whatever their class) and
``"random"`` (Self-Crowd_r: ``M`` candidates drawn uniformly).

What eq. 5 implies: the selected shares are the reciprocals of the candidate shares
--------------------------------------------------------------------------------------
Write ``N' = sum_k N'_k`` and ``pi_c = N'_c / N'`` for the share of class ``c`` among the
candidates. Eq. 4-5 give ``M_c = M (1 / N'_c) / sum_k (1 / N'_k)``, so as long as no
class runs out of candidates (``M_c <= N'_c``) and up to rounding, the share of class
``c`` among the pseudo-annotations selected in a round is

    s_c = M_c / M = (1 / pi_c) / sum_k (1 / pi_k),

the reciprocal of its candidate share, renormalised; equivalently ``M_c N'_c`` is the
same for every class. The selected set is balanced only when the candidates are: the
rule *reverses* the imbalance (the class predicted least often gets the largest
share) rather than removing it. Its R (eq. 6) is ``(1/pi_min - 1/pi_max) / sum_k
(1/pi_k)``, which can be above or below the R of random selection (``pi_max -
pi_min`` in expectation): with two classes the two are equal (shares (0.9, 0.1) give
(0.1, 0.9)); with three, shares (0.5, 0.25, 0.25) give (0.2, 0.4, 0.4), a lower R
(0.2 against 0.25), but (0.4, 0.4, 0.2) give (0.25, 0.25, 0.5), a higher one (0.25
against 0.2). So eq. 5 alone does not make the selected pseudo-annotations more
balanced than random selection's (the paper's Fig. 3b); what it does is add most to
the classes the model predicts least, which rebalances the *combined* annotations
when the model's rare predictions are the observed annotations' rare classes.

``quota="uniform"`` (NOT the paper's rule, a control) replaces eq. 5 by ``t_c = 1 /
K'`` over the ``K'`` classes that have candidates: every class gets ``M / K'`` (capped
by its candidates), so the selected set has R = 0 whenever no cap binds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import torch

from crowdlearn._progress import format_postfix, progress_bar, progress_scope
from crowdlearn.data import CrowdData, CrowdDataError
from crowdlearn.learning._base import TRAINING_PARAMS, training_inputs
from crowdlearn.learning._trainer import predict_in_batches, resolve_device
from crowdlearn.learning.crowd_layer import CrowdLayer, Variant
from crowdlearn.metrics import self_crowd_r

Selection = Literal["balanced", "confidence", "random"]
SELECTIONS = ("balanced", "confidence", "random")
Quota = Literal["inverse", "uniform"]
#: ``"inverse"`` is the paper's eq. 5; ``"uniform"`` is a NON-PAPER control.
QUOTAS = ("inverse", "uniform")

#: Candidate (task, worker) pairs scored per forward pass of the crowd layer.
PAIR_CHUNK = 262_144


def class_quotas(candidate_counts: Any, n_select: int, quota: Quota = "inverse") -> np.ndarray:
    """Per-class selection numbers ``M_c = t_c M`` with ``t_c`` proportional to
    ``1 / N'_c`` (Self-Crowd, eq. 4-5), or equal (``quota="uniform"``, not the paper's).

    With ``"inverse"`` and no cap binding, ``M_c / M = (1 / N'_c) / sum_k (1 / N'_k)``:
    the selected class shares are the reciprocals of the candidate shares (see the
    module docstring).

    Parameters
    ----------
    candidate_counts : array of int (K,)
        ``N'_c``: the number of generated pseudo-annotations of each class.
    n_select : int
        ``M``: pseudo-annotations to select in the round.
    quota : {"inverse", "uniform"}, default "inverse"
        ``t_c`` proportional to ``1 / N'_c`` (eq. 5), or the same for every class that
        has candidates (NON-PAPER control).

    Returns
    -------
    ndarray of int (K,)
        Quotas summing to ``M`` (rounded by largest remainder, ties to the rarer
        class), each capped at ``N'_c``; classes with ``N'_c = 0`` get 0.

    Examples
    --------
    >>> class_quotas([300, 100, 0], 8).tolist()
    [2, 6, 0]
    >>> class_quotas([1, 1000], 100).tolist()  # the rare class has only one candidate
    [1, 0]
    >>> class_quotas([300, 100, 0], 8, quota="uniform").tolist()
    [4, 4, 0]
    """
    counts = np.asarray(candidate_counts, dtype=np.int64)
    if counts.ndim != 1 or (counts < 0).any():
        raise ValueError("candidate_counts must be a 1-D array of non-negative counts")
    if n_select < 0:
        raise ValueError(f"n_select must be >= 0, got {n_select}")
    _check_quota(quota)
    quotas = np.zeros(len(counts), dtype=np.int64)
    present = counts > 0
    if not present.any() or n_select == 0:
        return quotas
    weights = np.zeros(len(counts))
    # eq. 5; the uniform control gives every class with candidates the same weight
    weights[present] = 1.0 / counts[present] if quota == "inverse" else 1.0
    exact = weights / weights.sum() * n_select
    quotas = np.floor(exact).astype(np.int64)
    remainder = n_select - int(quotas.sum())
    if remainder:
        # largest fractional parts first; among equal parts the class with fewer candidates
        order = np.lexsort((counts, -(exact - quotas)))
        order = order[present[order]]
        quotas[order[:remainder]] += 1
    return np.minimum(quotas, counts)


def _check_quota(quota: Any) -> None:
    if quota not in QUOTAS:
        raise ValueError(
            f"quota must be 'inverse' (the paper's eq. 5) or 'uniform' (a non-paper "
            f"control), got {quota!r}"
        )


def select_pseudo(
    labels: np.ndarray,
    entropy: np.ndarray,
    n_select: int,
    n_classes: int,
    selection: Selection,
    rng: np.random.Generator,
    quota: Quota = "inverse",
) -> np.ndarray:
    """Indices of the candidates chosen by a selection rule (see :class:`SelfCrowd`).

    ``labels`` and ``entropy`` describe the candidates; the result has no repeats, and
    for ``"balanced"`` holds the :func:`class_quotas` (with ``quota``) most confident
    of each class.
    """
    n = len(labels)
    if selection == "random":
        return rng.choice(n, size=min(n_select, n), replace=False)
    tiebreak = rng.random(n)
    if selection == "confidence":
        return np.lexsort((tiebreak, entropy))[: min(n_select, n)]
    if selection != "balanced":
        raise ValueError(f"selection must be one of {SELECTIONS}, got {selection!r}")
    quotas = class_quotas(np.bincount(labels, minlength=n_classes), n_select, quota)
    order = np.lexsort((tiebreak, entropy, labels))  # by class, then most confident
    starts = np.searchsorted(labels[order], np.arange(n_classes))
    picked = [order[starts[c] : starts[c] + quotas[c]] for c in range(n_classes)]
    return np.concatenate(picked).astype(np.int64)


class SelfCrowd(CrowdLayer):
    """Self-Crowd (Shi, Li & Huang): Crowd Layer self-training with balanced pseudo-labels.

    Parameters
    ----------
    n_per_round : int, default 1000
        ``M``, the pseudo-annotations added per round (the paper adds 10,000 per round
        with LabelMe's 59 workers and 1000 images; scale it to the number of
        unannotated pairs).
    n_rounds : int, default 5
        Self-training rounds after the initial Crowd Layer (the paper shows 14).
    selection : {"balanced", "confidence", "random"}, default "balanced"
        Self-Crowd (per-class quotas, eq. 4-5), Self-Crowd_c (lowest entropy) or
        Self-Crowd_r (uniform draw).
    quota : {"inverse", "uniform"}, default "inverse"
        The quotas of ``selection="balanced"``: ``t_c`` proportional to ``1 / N'_c``
        (eq. 5, the paper's), whose selected class shares are the reciprocals of the
        candidate shares (module docstring), or ``"uniform"`` (NON-PAPER control: ``M /
        K'`` per class, a balanced selected set). Ignored by the other rules.
    stopping : {"rounds", "valid"}, default "rounds"
        Run every round and keep the last model, or keep the round with the best
        validation accuracy and stop after ``round_patience`` rounds without
        improvement (needs ``valid`` in :meth:`fit`).
    round_patience : int, default 2
    retrain : {"scratch", "continue"}, default "scratch"
        Each round trains a fresh Crowd Layer, or continues from the last round's.
    keep_round_models : bool, default False
        Keep every round's classifier in ``round_models_`` (e.g. to score each round
        on a test split after training, as the paper's Fig. 3a does).
    variant, on, trainable
        The Crowd Layer (see :class:`~crowdlearn.learning.CrowdLayer`); the paper
        uses ``MW`` on the classifier's probabilities.
    **training
        The shared training parameters (see :class:`BaseLearner`), used for every
        round's training. With ``checkpoint_dir``, round ``t`` checkpoints into
        ``checkpoint_dir/round-t`` (``resume`` then continues the interrupted round;
        finished rounds are replayed from their checkpoints).

    Attributes
    ----------
    history_ : DataFrame
        One row per round (round 0 = the Crowd Layer on the observed annotations):
        ``round``, ``n_candidates`` and ``n_candidates_per_class`` (the pairs scored
        this round and their predicted classes, ``N'_c``), ``n_selected`` (this round),
        ``n_selected_per_class`` (list, this round), ``n_pseudo`` (selected so far),
        ``R_selected`` (eq. 6 on the pseudo-annotations selected so far; NaN at round
        0), ``R_combined`` (observed + selected), ``train_loss`` (last epoch),
        ``valid_acc`` (NaN without validation data), ``seconds``.
    round_histories_ : list of DataFrame
        The per-epoch history of each round's training.
    round_models_ : list of nn.Module
        With ``keep_round_models``, the classifier of each round (round order); use
        :meth:`predict_proba_round` to score them.
    pseudo_ : DataFrame
        The selected pseudo-annotations as codes: ``task``, ``worker``, ``label``,
        ``entropy``, ``round``.
    R_observed_ : float
        Eq. 6 on the observed annotations.
    best_round_ : int
        The round whose model is kept.
    confusions_, module_, classes_, best_epoch_
        As for :class:`CrowdLayer` (of the kept round).

    Examples
    --------
    >>> import numpy as np
    >>> from crowdlearn.simulate import crowd_on_features
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 4)); y = (X[:, 0] > 0.5).astype(int)
    >>> crowd = crowd_on_features(X, y, n_workers=6, labels_per_task=2, seed=0)
    >>> model = SelfCrowd(n_per_round=100, n_rounds=2, max_epochs=3).fit(crowd)
    >>> model.history_.loc[model.history_["fold"] == 0, "n_pseudo"].tolist()  # each fold's
    [0, 100, 200]
    """

    def __init__(
        self,
        n_per_round: int = 1000,
        n_rounds: int = 5,
        selection: Selection = "balanced",
        quota: Quota = "inverse",
        stopping: Literal["rounds", "valid"] = "rounds",
        round_patience: int = 2,
        retrain: Literal["scratch", "continue"] = "scratch",
        keep_round_models: bool = False,
        variant: Variant = "MW",
        on: Literal["probabilities", "logits"] = "probabilities",
        trainable: bool = True,
        **training: Any,
    ) -> None:
        self.n_per_round = n_per_round
        self.n_rounds = n_rounds
        self.selection = selection
        self.quota = quota
        self.stopping = stopping
        self.round_patience = round_patience
        self.retrain = retrain
        self.keep_round_models = keep_round_models
        super().__init__(variant=variant, on=on, trainable=trainable, **training)

    # ------------------------------------------------------------------ public API

    _refit_supported = False  # rounds of pseudo-labelling: their epochs do not add up

    def _fit(self, data: CrowdData, valid: Any) -> None:
        """Train the Crowd Layer, then run the self-training rounds (see the class doc)."""
        self._check_parameters(data, valid)
        # one bar over the rounds; each round's Crowd Layer epochs nest under it
        with progress_scope(self.progress) as show:
            self._fit_rounds(data, valid, show)

    def _fit_rounds(self, data: CrowdData, valid: Any, show: bool) -> SelfCrowd:
        inputs = training_inputs(data)
        rng = np.random.default_rng(self.random_state)
        n_pairs = data.n_tasks * data.n_workers
        taken = np.zeros(n_pairs, dtype=bool)
        taken[data.task.astype(np.int64) * data.n_workers + data.worker] = True
        pseudo = {name: [] for name in ("task", "worker", "label", "entropy", "round")}
        rows, histories, round_models = [], [], []
        best: tuple[float, int, dict[str, Any]] | None = None
        previous: CrowdLayer | None = None
        self.R_observed_ = self_crowd_r(data.label, data.n_classes)
        bar = progress_bar(
            range(self.n_rounds + 1), progress=show, desc=type(self).__name__, unit="round"
        )
        for round_ in bar:
            start = _clock()
            chosen_now = np.zeros(data.n_classes, dtype=np.int64)
            offered = np.zeros(data.n_classes, dtype=np.int64)
            if round_ > 0:
                candidates = self._candidates(previous, data, inputs, taken)
                offered = np.bincount(candidates["label"], minlength=data.n_classes)
                picked = select_pseudo(
                    candidates["label"],
                    candidates["entropy"],
                    self.n_per_round,
                    data.n_classes,
                    self.selection,
                    rng,
                    self.quota,
                )
                for name in ("task", "worker", "label", "entropy"):
                    pseudo[name].append(candidates[name][picked])
                pseudo["round"].append(np.full(len(picked), round_, dtype=np.int64))
                taken[
                    candidates["task"][picked] * data.n_workers + candidates["worker"][picked]
                ] = True
                chosen_now = np.bincount(candidates["label"][picked], minlength=data.n_classes)
            combined = _combined(data, pseudo)
            model = self._round_model(round_, previous)
            model.fit(combined, valid)
            previous = model
            histories.append(model.history_)
            if self.keep_round_models:
                round_models.append(model.module_["classifier"])
            selected = np.concatenate(pseudo["label"]) if pseudo["label"] else np.zeros(0, int)
            valid_acc = np.nan
            if valid is not None:
                device = next(model.module_.parameters()).device
                valid_acc = valid.score(valid.evaluate(model, model.module_, device), model)
            rows.append(
                {
                    "round": round_,
                    "n_candidates": int(offered.sum()),
                    "n_candidates_per_class": offered.tolist(),
                    "n_selected": int(chosen_now.sum()),
                    "n_selected_per_class": chosen_now.tolist(),
                    "n_pseudo": len(selected),
                    "R_selected": (
                        self_crowd_r(selected, data.n_classes) if len(selected) else np.nan
                    ),
                    "R_combined": self_crowd_r(combined.label, data.n_classes),
                    "train_loss": float(model.history_["train_loss"].iloc[-1])
                    if len(model.history_)
                    else np.nan,
                    "valid_acc": valid_acc,
                    "seconds": _clock() - start,
                }
            )
            bar.set_postfix(
                format_postfix({k: rows[-1][k] for k in ("n_pseudo", "train_loss", "valid_acc")})
            )
            if self.stopping == "rounds":
                best = (0.0, round_, _snapshot(model))
            elif best is None or valid_acc > best[0]:
                best = (valid_acc, round_, _snapshot(model))
            elif round_ - best[1] >= self.round_patience:
                break
        bar.close()
        assert best is not None
        score, self.best_round_, kept = best
        self.valid_score_ = None if valid is None or self.stopping == "rounds" else score
        self.module_ = kept["module"]
        self._shape_ = kept["shape"]
        self.classes_ = data.classes
        self.best_epoch_ = kept["best_epoch"]
        self.history_ = pd.DataFrame(rows)
        self.round_histories_ = histories
        self.round_models_ = round_models
        self.pseudo_ = pd.DataFrame(
            {
                name: np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)
                for (name, parts), dtype in zip(
                    pseudo.items(),
                    (np.int64, np.int64, np.int64, np.float64, np.int64),
                    strict=True,
                )
            }
        )
        return self

    def predict_proba_round(self, X: Any, round_: int) -> np.ndarray:
        """Class probabilities of new instances from the classifier of round ``round_``
        (needs ``keep_round_models=True``)."""
        self._check_fitted()
        if not self.round_models_:
            raise ValueError("fit with keep_round_models=True to score every round")
        if not 0 <= round_ < len(self.round_models_):
            raise ValueError(f"round_ must be in 0..{len(self.round_models_) - 1}, got {round_}")
        inputs = self._user_inputs(X)
        classifier = self.round_models_[round_]
        device = next(classifier.parameters()).device
        return predict_in_batches(
            classifier, inputs, np.arange(len(inputs)), 4 * self.batch_size, device
        ).astype(np.float64)

    # ------------------------------------------------------------------ internals

    def _check_parameters(self, data: CrowdData, valid: Any) -> None:
        if not isinstance(data, CrowdData):
            raise TypeError(f"fit expects a CrowdData, got {type(data).__name__}")
        if data.is_anonymous:
            raise CrowdDataError(
                "SelfCrowd predicts each worker's annotations: it needs worker ids"
            )
        if self.selection not in SELECTIONS:
            raise ValueError(f"selection must be one of {SELECTIONS}, got {self.selection!r}")
        _check_quota(self.quota)
        if self.stopping not in ("rounds", "valid"):
            raise ValueError(f"stopping must be 'rounds' or 'valid', got {self.stopping!r}")
        if self.stopping == "valid" and valid is None:
            raise ValueError("stopping='valid' needs validation data: fit(data, valid=(X, y))")
        if self.retrain not in ("scratch", "continue"):
            raise ValueError(f"retrain must be 'scratch' or 'continue', got {self.retrain!r}")
        for name in ("n_per_round", "n_rounds", "round_patience"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < (
                1 if name == "round_patience" else 0
            ):
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}")

    def _round_model(self, round_: int, previous: CrowdLayer | None) -> CrowdLayer:
        training = {name: getattr(self, name) for name in TRAINING_PARAMS}
        if self.checkpoint_dir is not None:
            training["checkpoint_dir"] = str(Path(self.checkpoint_dir) / f"round-{round_}")
        model = _RoundCrowdLayer(self.variant, self.on, self.trainable, **training)
        model._progress_desc = f"CrowdLayer round {round_}"  # the epoch bar's name
        if self.retrain == "continue" and previous is not None:
            state = previous.module_.state_dict()
            model._warm_state = {k: v.detach().clone() for k, v in state.items()}
        return model

    def _candidates(
        self, model: CrowdLayer, data: CrowdData, inputs: Any, taken: np.ndarray
    ) -> dict[str, np.ndarray]:
        """Every pair not observed or selected yet, with its predicted label and entropy."""
        module = model.module_
        device = next(module.parameters()).device
        outputs = _classifier_outputs(module["classifier"], inputs, data.n_tasks, self, device)
        free = np.flatnonzero(~taken)
        task = free // data.n_workers
        worker = free % data.n_workers
        labels = np.empty(len(free), dtype=np.int64)
        entropy = np.empty(len(free), dtype=np.float64)
        noise = module["noise"]
        noise.eval()
        with torch.no_grad():
            for start in range(0, len(free), PAIR_CHUNK):
                part = slice(start, start + PAIR_CHUNK)
                t = torch.as_tensor(task[part], device=device)
                w = torch.as_tensor(worker[part], device=device)
                log_p = torch.log_softmax(noise(outputs[t], w), dim=1)
                labels[part] = log_p.argmax(dim=1).cpu().numpy()
                entropy[part] = (-(log_p.exp() * log_p).sum(dim=1)).double().cpu().numpy()
        return {"task": task, "worker": worker, "label": labels, "entropy": entropy}


def _combined(data: CrowdData, pseudo: dict[str, list[np.ndarray]]) -> CrowdData:
    """The observed annotations followed by the selected pseudo-annotations."""
    if not pseudo["task"]:
        return data
    return data._replace(
        task=np.concatenate([data.task, *[p.astype(data.task.dtype) for p in pseudo["task"]]]),
        worker=np.concatenate(
            [data.worker, *[p.astype(data.worker.dtype) for p in pseudo["worker"]]]
        ),
        label=np.concatenate([data.label, *[p.astype(data.label.dtype) for p in pseudo["label"]]]),
    )


def _classifier_outputs(
    classifier: torch.nn.Module, inputs: Any, n_tasks: int, learner: SelfCrowd, device: Any
) -> torch.Tensor:
    """What the crowd layer receives for every task: the classifier's probabilities or
    logits (``learner.on``), in evaluation mode."""
    was_training = classifier.training
    classifier.eval()
    chunks = []
    step = 4 * learner.batch_size
    with torch.no_grad():
        for start in range(0, n_tasks, step):
            rows = np.arange(start, min(start + step, n_tasks))
            logits = classifier(torch.as_tensor(inputs.take(rows), device=device)).float()
            chunks.append(
                torch.softmax(logits, dim=1) if learner.on == "probabilities" else logits
            )
    classifier.train(was_training)
    return torch.cat(chunks)


class _RoundCrowdLayer(CrowdLayer):
    """The Crowd Layer of one round, optionally starting from given weights."""

    _warm_state: dict[str, torch.Tensor] | None = None
    _progress_desc: str | None = None

    def _build_module(self, *shape: Any) -> torch.nn.ModuleDict:
        module = super()._build_module(*shape)
        if self._warm_state is not None:
            module.load_state_dict(self._warm_state)
        return module


def _snapshot(model: CrowdLayer) -> dict[str, Any]:
    return {"module": model.module_, "shape": model._shape_, "best_epoch": model.best_epoch_}


def _accuracy(model: CrowdLayer, inputs: Any, labels: np.ndarray) -> float:
    device = resolve_device(model.device)
    probas = predict_in_batches(
        model.module_["classifier"], inputs, np.arange(len(inputs)), 4 * model.batch_size, device
    )
    return float(np.mean(probas.argmax(axis=1) == labels))


def _clock() -> float:
    import time

    return time.perf_counter()
