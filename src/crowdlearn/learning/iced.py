"""ICED: learning from imbalanced crowdsourced labeled data.

Wang, Thekinen, Liu, Liu & Tang, "Learning from Imbalanced Crowdsourced Labeled Data"
(arXiv 2021). A classifier ``F`` (a feature extractor ``G`` followed by a linear layer)
is trained on the crowd's inferred labels while a synthetic-data module balances the
training set. Which part of the paper each piece implements:

* :func:`certainty_groups` and the warm-up stages: the label certainty score ``S`` of
  eq. (2.4) (:func:`crowdlearn.metrics.label_certainty`) and the warm-up strategy of
  sec. 2.5 (Algorithm 2): majority-vote labels, the low-certainty group dropped, ``F``
  trained on the third-highest group, then with the second-highest added, then with
  the highest added. The strategies of the paper's Table 3 are the ``warmup``
  parameter: ``"iced"`` (ICED-w), ``"trad-1"`` (every task at once) and ``"trad-2"``
  (the ICED-w tasks at once), all for the same number of epochs.
* :meth:`ICED._synthesize`: the synthetic data generation of sec. 2.4. Embeddings
  ``z = G(x)`` of the tasks whose inferred label is a minority class are interpolated
  towards one of their ``k`` nearest same-class neighbours, ``z' = z + delta (z^r - z)``
  (eq. 2.3, :func:`smote_interpolate`), with ``delta`` from the certainty scores of the
  two tasks (eq. 2.5, :func:`interpolation_weights`); each synthetic embedding gets
  crowd labels by simulating every worker from its labels on the ``k`` nearest real
  tasks (:func:`synthetic_crowd_labels`); a decoder ``Q`` maps it back to input space.
* Dawid-Skene truth inference on the real and synthetic crowd labels (sec. 2.3,
  eq. 2.1-2.2; :class:`crowdlearn.aggregation.DawidSkene`), and ``F`` trained on real
  and synthetic samples with the inferred labels: one round of Algorithm 1.

Choices where the paper is open (each is a constructor parameter):

* **Classes.** The paper treats two classes. With ``K`` classes every class whose
  inferred size ``n_c`` is below the largest one ``n_max`` is oversampled to
  ``ceil(oversample_to * n_max)`` samples (``oversample_to=1``: a balanced set), with
  SMOTE neighbours found among the tasks inferred to be of that class. A class no task
  is inferred to belong to gets no synthetic sample. For two classes this is the
  paper's procedure.
* **Certainty groups.** The paper does not say how the four groups are cut. Its
  Table 3 (103 of 734 USPS-Syn tasks in the three upper groups, with 9 workers) fits
  groups made of the distinct score *levels*: the highest group holds the tasks with
  the highest score (unanimous tasks), the second-highest the next distinct value, the
  third-highest the next; every lower score is the low-certainty group. Tasks without
  annotations are left out of the warm-up.
* **Interpolation weight.** Eq. (2.5) as printed, ``delta = S(x_i) / (S(x_i) +
  S(x_i^r)) + eta``, puts ``z'`` *closer to the less certain* of the two tasks,
  whereas the text says that ``z'`` should be close to the one with the higher
  certainty. ``interpolation="towards-certain"`` (default) follows the text:
  ``delta = S(x_i^r) / (S(x_i) + S(x_i^r)) + eta``; ``"as-printed"`` uses the printed
  formula. ``eta ~ U(-eta, eta)`` (the paper: "a uniform distribution") and ``delta``
  is clipped to [0, 1], so ``z'`` lies on the segment from ``z_i`` to ``z_i^r``.
* **Certainty constant.** ``S = 1 / (variance + certainty_eps)``; the paper's "small
  constant" is not given. With 1e-6 a unanimous task gets all the weight of eq. (2.5)
  and synthetic points collapse onto it; the default 0.1 keeps the weights graded
  (unanimous: 10; 8 of 9 agreeing: 3.4; a 5-4 split: 1.7).
* **Number of synthetic samples.** The paper repeats step (ii) ``R`` times per
  candidate; here the candidates of a class are used in turn (a random permutation,
  cycled) until the class reaches its target size, so each is used ``R`` or ``R + 1``
  times.
* **Synthetic crowd labels.** For a synthetic embedding, worker ``u`` answers with
  probability equal to the share of the ``k`` nearest real tasks it labelled (1 when
  every worker labels every task, as in the paper), and its answer is one of its
  labels on those tasks drawn uniformly; a synthetic sample always gets at least one
  label (one of its neighbours' annotations picked at random otherwise).
* **Decoder.** ``Q`` is the decoder of an autoencoder whose encoder is ``G``: an MLP
  (``decoder_hidden``) trained with the mean squared error to reconstruct the training
  inputs. The paper calls ``Q`` "a pre-trained decoder" and says no more.
  ``decoder_pretrain=True`` reads this literally: before the warm-up, ``G`` and ``Q``
  are trained together as an autoencoder on the training inputs for
  ``decoder_epochs`` epochs (``G``'s weights then start the classifier's training),
  and ``Q`` stays frozen afterwards, although ``G`` keeps changing.
  ``decoder_pretrain=False`` (default) trains ``Q`` on the current, frozen embeddings
  instead: ``decoder_epochs`` epochs at the first round and ``decoder_refit_epochs``
  more at every later round, so that it follows ``G``. It is kept in
  ``module_["decoder"]``.
* **M-step.** The paper's M-step (sec. 2.3) counts the tasks whose current estimated
  label is ``c``: hard-count ("classification") EM. ``hard_em=True`` sets ``hard=True``
  on the aggregator (the default :class:`~crowdlearn.aggregation.DawidSkene` or a given
  one that has this parameter); ``hard_em=False`` (default) keeps the aggregator as
  given (the default Dawid-Skene uses the posteriors, soft counts).
  :func:`paper_dawid_skene` builds the paper's Dawid-Skene (hard counts, no
  pseudo-counts, and optionally a uniform class prior, the "uniformity assumption"
  the paper blames for Dawid-Skene's failure on imbalanced crowds).
* **Controls of the synthesis** (not in the paper; they separate what synthesis does
  to truth inference from the mere re-running of EM on a larger crowd):
  ``synthetic_labels="knn"`` (default) is the paper's simulation from the ``k``
  nearest real tasks; ``"duplicate"`` gives each synthetic sample the crowd labels of
  its SMOTE origin (random oversampling of the inferred minority tasks, labels and
  all); ``"random"`` keeps who labels each synthetic sample but draws every label
  uniformly from the ``K`` classes (labels carrying no information on the class).
* **Equal warm-up steps.** The paper's Table 3 gives every strategy the same number
  of epochs, so Trad-I (every task) makes more Adam steps than Trad-II and ICED-w
  (fewer tasks). ``warmup_steps`` (not None) makes every warm-up epoch exactly that
  many mini-batches, whatever the stage's number of tasks (its tasks in a new random
  order, cycled or cut, at every epoch), so that every strategy makes
  ``3 * warmup_epochs * warmup_steps`` steps.
* **Rounds.** After the warm-up (``3 * warmup_epochs`` epochs), each round
  regenerates the synthetic samples (they do not accumulate), runs Dawid-Skene on the
  real and synthetic labels, and trains ``F`` for ``epochs_per_round`` epochs on
  hard labels (the paper trains on "determinate labels"). Training stops after
  ``n_rounds`` rounds or at ``max_epochs`` epochs (Algorithm 1's "maximum epoch"),
  whichever comes first; ``n_rounds=None`` runs rounds until ``max_epochs``. The
  synthetic samples of a round are made from the labels inferred at the previous one
  (Dawid-Skene on the real labels alone for the first round).

The classifier ``F`` is the usual backbone of the learners (an MLP by default). ``G``
is everything before its last ``nn.Linear`` module (in registration order), whose
input is the embedding; that layer must output the ``K`` logits. ICED holds the
training inputs in memory, since it adds synthetic inputs to them.

This module holds the estimator (the warm-up, the schedule of rounds, the truth
inference, the checks) and the certainty groups and scores; the synthetic-data module
(``G`` and ``Q``, the SMOTE steps, the synthetic crowd labels, a round's synthesis) is
in :mod:`crowdlearn.learning._iced_synthesis`, whose public names are importable from
here.
"""

from __future__ import annotations

import warnings
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from sklearn.base import clone
from torch import nn

from crowdlearn.aggregation import BaseAggregator, DawidSkene, MajorityVote
from crowdlearn.data import CrowdData, CrowdDataError, TaskInputs
from crowdlearn.data.inputs import ArrayInputs
from crowdlearn.learning._base import BaseLearner, training_inputs
from crowdlearn.learning._batches import TaskBatch, TaskBatcher
from crowdlearn.learning._iced_synthesis import (
    INTERPOLATIONS,
    SYNTHETIC_LABELS,
    Interpolation,
    SyntheticLabels,
    _augmented_crowd,
    _ICEDSynthesis,
    _no_synthetic,
    build_decoder,
    embed,
    interpolation_weights,
    output_layer,
    same_class_neighbours,
    smote_interpolate,
    synthetic_crowd_labels,
)
from crowdlearn.learning._trainer import EpochContext
from crowdlearn.metrics import label_certainty

# with the public names of the method's private module
__all__ = [
    "HIGHEST",
    "ICED",
    "INTERPOLATIONS",
    "LOW",
    "SECOND",
    "SYNTHETIC_LABELS",
    "THIRD",
    "UNIFORM_PRIOR_SMOOTHING",
    "WARMUPS",
    "Interpolation",
    "SyntheticLabels",
    "Warmup",
    "build_decoder",
    "certainty_groups",
    "embed",
    "inference_scores",
    "interpolation_weights",
    "output_layer",
    "paper_dawid_skene",
    "same_class_neighbours",
    "smote_interpolate",
    "synthetic_crowd_labels",
]

Warmup = Literal["iced", "trad-1", "trad-2"]
WARMUPS = ("iced", "trad-1", "trad-2")
#: ``prior_smoothing`` that makes Dawid-Skene's class prior uniform to within 1e-8
#: for up to ~10^4 tasks (the prior's counts become negligible against it).
UNIFORM_PRIOR_SMOOTHING = 1e12
#: Certainty groups of :func:`certainty_groups`.
HIGHEST, SECOND, THIRD, LOW = 0, 1, 2, 3
#: Decimals to which certainty scores are rounded before their distinct levels are taken.
_LEVEL_DECIMALS = 9


# ---------------------------------------------------------------------- building blocks


def certainty_groups(scores: np.ndarray) -> np.ndarray:
    """Warm-up group of each task from its label certainty score (sec. 2.5).

    Parameters
    ----------
    scores : ndarray of shape (n_tasks,)
        Label certainty scores (eq. 2.4); NaN for tasks without annotations.

    Returns
    -------
    ndarray of int of shape (n_tasks,)
        :data:`HIGHEST` (0) for the tasks with the highest distinct score,
        :data:`SECOND` (1) and :data:`THIRD` (2) for the next two distinct scores,
        :data:`LOW` (3) for every lower score and for NaN.

    Examples
    --------
    >>> certainty_groups(np.array([9.0, 1.0, 9.0, 3.0, 2.0, np.nan, 2.0]))
    array([0, 3, 0, 1, 2, 3, 2])
    """
    scores = np.asarray(scores, dtype=np.float64)
    groups = np.full(scores.shape, LOW, dtype=np.int64)
    finite = np.isfinite(scores)
    rounded = np.round(scores[finite], _LEVEL_DECIMALS)
    levels = np.unique(rounded)[::-1][:3]  # the three highest distinct values
    rank = np.searchsorted(-levels, -rounded)  # position among the descending levels
    found = (rank < len(levels)) & (levels[np.minimum(rank, len(levels) - 1)] == rounded)
    groups[np.flatnonzero(finite)[found]] = rank[found]
    return groups


def inference_scores(
    truth: np.ndarray | None, labels: np.ndarray, tasks: np.ndarray
) -> tuple[float, float]:
    """Accuracy of inferred ``labels`` on ``tasks`` with a known truth, and the mean
    recall of the minority classes (every class with fewer true tasks than the largest);
    NaN when there is no truth (recall: or no minority class)."""
    if truth is None:
        return np.nan, np.nan
    tasks = tasks[truth[tasks] >= 0]
    if len(tasks) == 0:
        return np.nan, np.nan
    true, inferred = truth[tasks].astype(np.int64), labels[tasks]
    counts = np.bincount(true)
    minority = np.flatnonzero((counts > 0) & (counts < counts.max()))
    hits = np.bincount(true[inferred == true], minlength=len(counts))
    recall = float(np.mean(hits[minority] / counts[minority])) if len(minority) else np.nan
    return float(np.mean(inferred == true)), recall


def paper_dawid_skene(uniform_prior: bool = True, hard: bool = True) -> DawidSkene:
    """Dawid-Skene as sec. 2.3 of the ICED paper describes it.

    The M-step counts the tasks whose estimated label is each class (``hard=True``:
    hard-count EM), with no pseudo-counts (``smoothing=0``, ``diagonal_prior=0``).
    ``uniform_prior=True`` keeps the class prior uniform (``prior_smoothing`` of
    :data:`UNIFORM_PRIOR_SMOOTHING`): the "uniform label distribution" that the
    paper says makes Dawid-Skene fail on imbalanced crowds; ``False`` re-estimates it
    from the counts as the paper's formula for ``Phi`` does.

    Parameters
    ----------
    uniform_prior : bool, default True
    hard : bool, default True

    Returns
    -------
    DawidSkene
    """
    return DawidSkene(
        smoothing=0.0,
        diagonal_prior=0.0,
        prior_smoothing=UNIFORM_PRIOR_SMOOTHING if uniform_prior else 0.0,
        hard=hard,
        lone_labels="em",  # the paper's M-step counts every label (issue 43's rule off)
    )


# ---------------------------------------------------------------------- the learner


class ICED(_ICEDSynthesis, BaseLearner):
    """ICED: learning from imbalanced crowd labels with synthetic minority samples.

    Wang, Thekinen, Liu, Liu & Tang, "Learning from Imbalanced Crowdsourced Labeled
    Data", 2021. See the module docstring for the algorithm and for how the choices the
    paper leaves open are made.

    Parameters
    ----------
    aggregator : aggregation estimator, default DawidSkene()
        The truth-inference module (sec. 2.3); cloned and fitted at every round on the
        real and synthetic crowd labels.
    warmup : {"iced", "trad-1", "trad-2"}, default "iced"
        Warm-up strategy (Table 3): ICED-w (certainty groups fed in turn), Trad-I
        (every task at once) or Trad-II (the ICED-w tasks at once). Every strategy
        trains for ``3 * warmup_epochs`` epochs on majority-vote labels.
    warmup_epochs : int, default 2
        Epochs per warm-up group (the paper: 2 on USPS-Syn and GSAD-Syn, 5 on Gisette).
    n_rounds : int or None, default None
        Rounds of Algorithm 1 after the warm-up; None runs rounds until ``max_epochs``.
    epochs_per_round : int, default 1
        Classifier epochs per round (the paper regenerates the data every epoch).
    k : int, default 5
        Neighbours for the SMOTE interpolation and for the synthetic crowd labels.
    oversample_to : float in (0, 1], default 1.0
        Every class below the largest inferred class is oversampled to
        ``ceil(oversample_to * n_max)`` samples.
    eta : float, default 0.1
        Half-width of the uniform noise added to ``delta`` (eq. 2.5).
    interpolation : {"towards-certain", "as-printed"}, default "towards-certain"
        How eq. (2.5) weighs the two certainty scores: ``"as-printed"`` is the formula
        as printed, ``delta = S(x) / (S(x) + S(x^r)) + eta`` (the synthetic point lands
        nearer the *less* certain task); ``"towards-certain"`` is the paper's text
        ("close to the candidate embedding which has a higher label certainty
        score"), ``delta = S(x^r) / (S(x) + S(x^r)) + eta``.
    certainty_eps : float, default 0.1
        The constant of eq. (2.4).
    decoder_hidden : tuple of int, default (256,)
        Hidden layers of the decoder ``Q``.
    decoder_epochs : int, default 50
        Decoder epochs at the first round.
    decoder_refit_epochs : int, default 5
        Decoder epochs at every later round (it is warm-started).
    decoder_lr : float, default 1e-3
        Adam learning rate of the decoder.
    decoder_pretrain : bool, default False
        Pre-train ``G`` and ``Q`` together as an autoencoder before the warm-up
        (``decoder_epochs`` epochs) and keep ``Q`` frozen afterwards (the paper's "a
        pre-trained decoder"); False: fit ``Q`` on the current embeddings at the
        rounds.
    hard_em : bool, default False
        Set ``hard=True`` on the aggregator: hard-count EM as in the paper's M-step.
        False keeps the aggregator as given (the default Dawid-Skene: soft counts).
    synthetic_labels : {"knn", "duplicate", "random"}, default "knn"
        Crowd labels of the synthetic samples: the paper's simulation from the ``k``
        nearest real tasks, or one of two controls (the module docstring).
    warmup_steps : int or None, default None
        Mini-batches per warm-up epoch for every strategy (equal Adam steps); None:
        one pass over the stage's tasks.
    **training
        The shared training parameters (see :class:`BaseLearner`); ``max_epochs``
        counts every classifier epoch, warm-up included.

    Attributes
    ----------
    module_ : nn.ModuleDict
        ``classifier`` (``F``, used by :meth:`predict_proba`) and ``decoder`` (``Q``).
    history_ : DataFrame
        One row per round: ``round`` (0 = the end of the warm-up), ``epoch``,
        ``n_synthetic``, ``ds_accuracy_real`` and ``ds_minority_recall`` (accuracy and
        mean minority-class recall of the inferred labels on the real tasks with a
        known truth, NaN without truth; round 0: the aggregator on the real labels
        only), ``train_loss`` and ``valid_acc`` (NaN without validation data).
    epoch_history_ : DataFrame
        The trainer's per-epoch history, with ``stage`` (``warmup-1`` ... or
        ``round``), ``round``, ``n_synthetic`` and ``n_training_tasks`` (real and
        synthetic samples the epoch trained on) columns.
    certainty_ : ndarray (n_tasks,)
        Label certainty scores (eq. 2.4).
    certainty_groups_ : ndarray (n_tasks,)
        Warm-up groups (see :func:`certainty_groups`).
    warmup_labels_ : ndarray (n_tasks,)
        Majority-vote labels used in the warm-up.
    labels_ : ndarray (n_tasks,)
        Labels of the real tasks inferred at the last round.
    labels_before_ : ndarray (n_tasks,)
        Labels the aggregator infers from the real crowd labels alone (before any
        synthesis).
    label_probas_ : ndarray (n_tasks, K)
        The aggregator's posteriors of the real tasks at the last round.
    mv_accuracy_ : float
        Accuracy of the majority vote on the real tasks (NaN without truth).
    ds_accuracy_before_, ds_accuracy_first_, ds_accuracy_final_ : float
        Accuracy of truth inference on the real tasks before any synthesis, after the
        first synthesis and after the last (the paper's Fig. 2; NaN without truth or
        when no round ran).
    ds_minority_recall_before_, ds_minority_recall_first_, ds_minority_recall_final_
        The same for the mean minority-class recall.
    synthetic_inputs_ : ndarray (n_synthetic, ...)
        Decoded synthetic inputs of the last round.
    synthetic_classes_ : ndarray (n_synthetic,)
        The class each of them was generated for.
    synthetic_inferred_ : ndarray (n_synthetic,)
        The class the aggregator inferred for each of them (from their crowd labels).
    classes_, best_epoch_
        See :class:`BaseLearner`.

    Examples
    --------
    >>> from crowdlearn.simulate import crowd_on_features
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = (rng.random(300) < 0.15).astype(int)
    >>> X = (rng.normal(size=(300, 4)) + 1.5 * y[:, None]).astype(np.float32)
    >>> crowd = crowd_on_features(X, y, n_workers=6, labels_per_task=6, seed=0)
    >>> model = ICED(n_rounds=2, max_epochs=10, decoder_epochs=5).fit(crowd)
    >>> model.history_.loc[model.history_["fold"] == 0, "round"].tolist()  # each fold's
    [0, 1, 2]
    >>> model.predict_proba(X[:2]).shape
    (2, 2)
    """

    _refit_supported = False  # rounds or stages: their epochs do not add up

    needs_workers: ClassVar[bool] = True

    def __init__(
        self,
        aggregator: BaseAggregator | None = None,
        warmup: Warmup = "iced",
        warmup_epochs: int = 2,
        n_rounds: int | None = None,
        epochs_per_round: int = 1,
        k: int = 5,
        oversample_to: float = 1.0,
        eta: float = 0.1,
        interpolation: Interpolation = "towards-certain",
        certainty_eps: float = 0.1,
        decoder_hidden: tuple[int, ...] = (256,),
        decoder_epochs: int = 50,
        decoder_refit_epochs: int = 5,
        decoder_lr: float = 1e-3,
        decoder_pretrain: bool = False,
        hard_em: bool = False,
        synthetic_labels: SyntheticLabels = "knn",
        warmup_steps: int | None = None,
        **training: Any,
    ) -> None:
        self.aggregator = aggregator
        self.warmup = warmup
        self.warmup_epochs = warmup_epochs
        self.n_rounds = n_rounds
        self.epochs_per_round = epochs_per_round
        self.k = k
        self.oversample_to = oversample_to
        self.eta = eta
        self.interpolation = interpolation
        self.certainty_eps = certainty_eps
        self.decoder_hidden = decoder_hidden
        self.decoder_epochs = decoder_epochs
        self.decoder_refit_epochs = decoder_refit_epochs
        self.decoder_lr = decoder_lr
        self.decoder_pretrain = decoder_pretrain
        self.hard_em = hard_em
        self.synthetic_labels = synthetic_labels
        self.warmup_steps = warmup_steps
        super().__init__(**training)

    # ------------------------------------------------------------------ public API

    def _fit(self, data: CrowdData, valid: Any) -> None:
        """Warm up, then run rounds of synthesis, truth inference and training.

        With validation (see :meth:`BaseLearner.fit`) the classifier keeps the weights
        of its best validation epoch (possibly a warm-up epoch), while ``labels_`` and
        the scores are those of the last round.
        """
        self._check_params()
        if isinstance(data, CrowdData):
            if data.n_classes < 2:
                raise CrowdDataError(f"ICED needs at least 2 classes, got {data.n_classes}")
            training_inputs(data)  # a clear error when the data have no features
            self._check_schedule()
        super()._fit(data, valid)
        self.epoch_history_ = self.history_
        self.history_ = _rounds_table(self.epoch_history_)

    # ------------------------------------------------------------------ trainer hooks

    def _build_module(
        self, item_shape: tuple[int, ...], n_classes: int, n_workers: int
    ) -> nn.ModuleDict:
        module = super()._build_module(item_shape, n_classes, n_workers)
        head = output_layer(module["classifier"])
        if head.out_features != n_classes:
            raise ValueError(
                f"ICED takes the classifier's last nn.Linear layer as its output layer, but "
                f"it has {head.out_features} outputs for {n_classes} classes"
            )
        module["decoder"] = build_decoder(
            head.in_features, tuple(item_shape), tuple(self.decoder_hidden)
        )
        return module

    def _prepare(self, data: CrowdData, inputs: TaskInputs) -> None:
        self._rng = np.random.default_rng([self.random_state, 1405])
        annotated = data.feedback_effort > 0
        self.certainty_ = label_certainty(data, eps=self.certainty_eps)
        self.certainty_groups_ = certainty_groups(self.certainty_)
        majority = MajorityVote(tie_break="random", random_state=self.random_state)
        self.warmup_labels_ = majority.fit(data).predict()
        tasks = np.flatnonzero(annotated)
        self.mv_accuracy_, _ = inference_scores(data.truth, self.warmup_labels_, tasks)
        self._infer(data)  # the aggregator on the real labels alone
        self.labels_before_ = self.labels_.copy()
        scores = inference_scores(data.truth, self.labels_, tasks)
        self.ds_accuracy_before_, self.ds_minority_recall_before_ = scores
        self.ds_accuracy_first_ = self.ds_minority_recall_first_ = np.nan
        self.ds_accuracy_final_ = self.ds_minority_recall_final_ = np.nan
        self._round_scores = scores
        self._synthetic: dict[str, np.ndarray] = _no_synthetic(inputs.item_shape)
        self.synthetic_inputs_ = self._synthetic["inputs"]
        self.synthetic_classes_ = self._synthetic["classes"]
        self.synthetic_inferred_ = self._synthetic["labels"]
        self._stage_key: tuple[str, int] | None = None
        self._pretrained = False

    def _epoch_start(self, context: EpochContext) -> None:
        stage, index, first = self._phase(context.epoch)
        if self.decoder_pretrain and not getattr(self, "_pretrained", False):
            self._pretrain_autoencoder(context)
        if stage == "round" and first:
            self._run_round(context, index)
        if stage == "warmup" and self.warmup_steps is not None:
            self._stage_key = None  # a new draw of warmup_steps batches every epoch
        if self._stage_key != (stage, index):  # a new stage, or a resumed run
            context.batcher = self._stage_batcher(context, stage, index)
            self._stage_key = (stage, index)

    def _loss(self, batch: TaskBatch, logits: torch.Tensor, noise: nn.Module | None) -> Any:
        targets = torch.as_tensor(self._targets[batch.tasks], device=logits.device)
        return F.cross_entropy(logits, targets)

    def _epoch_end(self, context: EpochContext) -> dict[str, Any]:
        stage, index, _ = self._phase(context.epoch)
        if self.n_rounds is not None and context.epoch + 1 >= self._schedule_epochs():
            context.stop = True
        accuracy, recall = self._round_scores
        return {
            "stage": stage if stage == "round" else f"warmup-{index + 1}",
            "round": index if stage == "round" else 0,
            "n_synthetic": len(self._synthetic["classes"]),
            "n_training_tasks": len(context.batcher.tasks),
            "ds_accuracy_real": accuracy,
            "ds_minority_recall": recall,
        }

    def _method_state(self) -> dict[str, Any]:
        state = {
            name: getattr(self, name)
            for name in (
                "certainty_",
                "certainty_groups_",
                "warmup_labels_",
                "labels_",
                "label_probas_",
                "labels_before_",
                "mv_accuracy_",
                "ds_accuracy_before_",
                "ds_accuracy_first_",
                "ds_accuracy_final_",
                "ds_minority_recall_before_",
                "ds_minority_recall_first_",
                "ds_minority_recall_final_",
                "synthetic_inputs_",
                "synthetic_classes_",
            )
        }
        state["synthetic_inferred_"] = getattr(self, "synthetic_inferred_", None)
        state["_round_scores"] = self._round_scores
        state["_synthetic"] = self._synthetic
        state["_pretrained"] = getattr(self, "_pretrained", False)
        state["_rng_state"] = self._rng.bit_generator.state
        if hasattr(self, "epoch_history_"):
            state["epoch_history_"] = self.epoch_history_
        return state

    def _load_method_state(self, state: dict[str, Any]) -> None:
        state = dict(state)
        self._rng = np.random.default_rng()
        self._rng.bit_generator.state = state.pop("_rng_state")
        self._stage_key = None
        super()._load_method_state(state)

    # ------------------------------------------------------------------ schedule

    def _phase(self, epoch: int) -> tuple[str, int, bool]:
        """(stage, index, first epoch of it) of a trainer epoch: ``("warmup", s, ...)``
        for warm-up stage ``s``, ``("round", r, ...)`` for round ``r`` (from 1)."""
        if epoch < 3 * self.warmup_epochs:
            if self.warmup == "iced":
                return "warmup", epoch // self.warmup_epochs, epoch % self.warmup_epochs == 0
            return "warmup", 0, epoch == 0
        offset = epoch - 3 * self.warmup_epochs
        return "round", offset // self.epochs_per_round + 1, offset % self.epochs_per_round == 0

    def _schedule_epochs(self) -> int:
        """Epochs of the warm-up and of ``n_rounds`` rounds (``n_rounds`` not None)."""
        return 3 * self.warmup_epochs + (self.n_rounds or 0) * self.epochs_per_round

    def _stage_batcher(self, context: EpochContext, stage: str, index: int) -> TaskBatcher:
        """Mini-batches of a stage: warm-up tasks with majority-vote labels, or the real
        and synthetic samples of a round with their inferred labels."""
        data, learner = context.data, context.learner
        annotated = data.feedback_effort > 0
        if stage == "warmup":
            self._targets = self.warmup_labels_.astype(np.int64)
            tasks = np.flatnonzero(annotated & self._warmup_mask(index))
            if self.warmup_steps is not None and len(tasks):
                # equal Adam steps per strategy: the tasks in a new order, cycled or cut
                size = self.warmup_steps * learner.batch_size
                tasks = np.resize(self._rng.permutation(tasks), size)
            return TaskBatcher(data, context.inputs, tasks, learner.batch_size, context.device)
        synthetic = self._synthetic
        augmented = _augmented_crowd(data, synthetic)
        inputs = ArrayInputs(np.concatenate([self._real_inputs(context), synthetic["inputs"]]))
        self._targets = np.concatenate([self.labels_, synthetic["labels"]]).astype(np.int64)
        tasks = np.r_[
            np.flatnonzero(annotated), data.n_tasks + np.arange(len(synthetic["labels"]))
        ]
        return TaskBatcher(augmented, inputs, tasks, learner.batch_size, context.device)

    def _warmup_mask(self, stage: int) -> np.ndarray:
        groups = self.certainty_groups_
        if self.warmup == "trad-1":
            return np.ones(len(groups), dtype=bool)
        if self.warmup == "trad-2":
            return groups <= THIRD
        # ICED-w: the third-highest group, then with the second, then with the highest
        return (groups <= THIRD) & (groups >= THIRD - stage)

    # ------------------------------------------------------------------ one round

    def _run_round(self, context: EpochContext, round_index: int) -> None:
        """Synthesize minority samples from the current labels, then infer the labels of
        the real and synthetic samples (sec. 2.4 then 2.3)."""
        data = context.data
        self._synthetic = self._synthesize(context, round_index)
        augmented = _augmented_crowd(data, self._synthetic)
        self._infer(augmented, n_real=data.n_tasks)
        self._synthetic["labels"] = self._inferred_synthetic
        self.synthetic_inputs_ = self._synthetic["inputs"]
        self.synthetic_classes_ = self._synthetic["classes"]
        self.synthetic_inferred_ = self._synthetic["labels"]
        tasks = np.flatnonzero(data.feedback_effort > 0)
        self._round_scores = inference_scores(data.truth, self.labels_, tasks)
        if round_index == 1:
            self.ds_accuracy_first_, self.ds_minority_recall_first_ = self._round_scores
        self.ds_accuracy_final_, self.ds_minority_recall_final_ = self._round_scores
        self._stage_key = None

    def _infer(self, crowd: CrowdData, n_real: int | None = None) -> None:
        """Truth inference; sets ``labels_`` / ``label_probas_`` of the real tasks (the
        first ``n_real`` tasks of ``crowd``) and the labels of the synthetic ones."""
        aggregator = DawidSkene() if self.aggregator is None else clone(self.aggregator)
        if "random_state" in aggregator.get_params():
            aggregator.set_params(random_state=self.random_state)
        if self.hard_em:
            aggregator.set_params(hard=True)  # hard-count EM (checked in _check_params)
        aggregator.fit(crowd)
        n_real = crowd.n_tasks if n_real is None else n_real
        probas, labels = aggregator.predict_proba(), aggregator.predict()
        self.label_probas_ = np.asarray(probas[:n_real], dtype=np.float64)
        self.labels_ = np.asarray(labels[:n_real], dtype=np.int64)
        self._inferred_synthetic = np.asarray(labels[n_real:], dtype=np.int64)

    # ------------------------------------------------------------------ checks

    def _check_params(self) -> None:
        if self.warmup not in WARMUPS:
            raise ValueError(f"warmup must be one of {WARMUPS}, got {self.warmup!r}")
        if self.interpolation not in INTERPOLATIONS:
            raise ValueError(
                f"interpolation must be one of {INTERPOLATIONS}, got {self.interpolation!r}"
            )
        if self.synthetic_labels not in SYNTHETIC_LABELS:
            raise ValueError(
                f"synthetic_labels must be one of {SYNTHETIC_LABELS}, got "
                f"{self.synthetic_labels!r}"
            )
        for name in ("decoder_pretrain", "hard_em"):
            if not isinstance(getattr(self, name), bool | np.bool_):
                raise ValueError(f"{name} must be a bool, got {getattr(self, name)!r}")
        if self.warmup_steps is not None:
            _check_int("warmup_steps", self.warmup_steps, 1)
        _check_int("warmup_epochs", self.warmup_epochs, 0)
        _check_int("epochs_per_round", self.epochs_per_round, 1)
        _check_int("k", self.k, 1)
        _check_int("decoder_epochs", self.decoder_epochs, 0)
        _check_int("decoder_refit_epochs", self.decoder_refit_epochs, 0)
        if self.n_rounds is not None:
            _check_int("n_rounds", self.n_rounds, 0)
        if not (isinstance(self.oversample_to, int | float) and 0 < self.oversample_to <= 1):
            raise ValueError(f"oversample_to must be in (0, 1], got {self.oversample_to!r}")
        for name in ("eta", "certainty_eps", "decoder_lr"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not np.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a non-negative number, got {value!r}")
        if self.certainty_eps <= 0 or self.decoder_lr <= 0:
            raise ValueError("certainty_eps and decoder_lr must be positive")
        hidden = self.decoder_hidden
        if not all(isinstance(units, int | np.integer) and units > 0 for units in hidden):
            raise ValueError(f"decoder_hidden must be positive ints, got {hidden!r}")
        if self.aggregator is not None and not isinstance(self.aggregator, BaseAggregator):
            raise ValueError(
                f"aggregator must be an aggregation estimator, got {type(self.aggregator)}"
            )
        if self.hard_em and self.aggregator is not None:
            if "hard" not in self.aggregator.get_params():
                raise ValueError(
                    f"hard_em=True needs an aggregator with a 'hard' parameter; "
                    f"{type(self.aggregator).__name__} has none"
                )

    def _check_schedule(self) -> None:
        if self.n_rounds is None:
            return
        if self._schedule_epochs() == 0:
            raise ValueError("warmup_epochs=0 and n_rounds=0 leave nothing to train")
        if self.max_epochs < self._schedule_epochs():
            warnings.warn(
                f"max_epochs={self.max_epochs} ends training before the "
                f"{self._schedule_epochs()} epochs of the warm-up and n_rounds={self.n_rounds} "
                "rounds; raise max_epochs to run them all",
                stacklevel=3,
            )


# ---------------------------------------------------------------------- helpers


def _check_int(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def _rounds_table(epochs: pd.DataFrame) -> pd.DataFrame:
    """One row per round (its last epoch) from the per-epoch history."""
    columns = [
        "round",
        "epoch",
        "n_synthetic",
        "ds_accuracy_real",
        "ds_minority_recall",
        "train_loss",
        "valid_acc",
    ]
    if epochs.empty:
        return pd.DataFrame(columns=columns)
    last = epochs.groupby("round", sort=True).tail(1)
    table = last.assign(valid_acc=last["valid_accuracy"] if "valid_accuracy" in last else np.nan)
    return table[columns].reset_index(drop=True)
